// SPDX-License-Identifier: Apache-2.0
// mustFinishWithin: a step that used to hang fails its test in seconds, not at ctest's timeout.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <thread>

namespace loom::test {

/// Runs `f` on a thread and waits up to `limit`. When it has not returned by then, prints
/// "FAIL: <what> did not finish within N s" and ends the process with status 1: a thread stuck in
/// a system call (an open of a FIFO, a flock) cannot be stopped any other way. An exception `f`
/// throws is rethrown here.
template <typename F>
void mustFinishWithin(std::chrono::seconds limit, const char* what, F&& f) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread worker([&] {
    try {
      f();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(limit) != std::future_status::ready) {
    // To both streams: a test may be capturing stderr at the time.
    for (FILE* out : {stdout, stderr}) {
      std::fprintf(out, "FAIL: %s did not finish within %lld s (a hang)\n", what,
                   static_cast<long long>(limit.count()));
      std::fflush(out);
    }
    std::_Exit(1);
  }
  worker.join();
  finished.get();
}

}  // namespace loom::test
