// SPDX-License-Identifier: Apache-2.0
// Runs a function on a thread with a small stack, for tests of deep inputs: a walk that recurses
// once per split, loop or chained op (tens of thousands of frames) overflows it, where an
// iterative walk fits. Exceptions thrown by the function are rethrown in the caller.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <stdexcept>

namespace loom::test {

/// 1 MiB: a few thousand recursive frames at most.
inline constexpr size_t kSmallStack = size_t(1) << 20;

inline void onSmallStack(const std::function<void()>& fn, size_t stack_bytes = kSmallStack) {
  struct Job {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  auto body = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      (*j->fn)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  const int rc = pthread_create(&thread, &attr, body, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("onSmallStack: pthread_create failed");
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace loom::test
