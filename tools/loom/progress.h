// SPDX-License-Identifier: Apache-2.0
// Progress lines for the long steps of a command (a host compile, the reference evaluation of a
// large fusion), so that a command that works for a minute does not look hung:
//
//   Progress progress(std::cerr, std::chrono::seconds(2));
//   {
//     Progress::Step step = progress.step("computing the reference outputs");
//     expected = eval::evaluateFusion(fusion, inputs);
//   }
//
// A step still running after `after` prints "loom: computing the reference outputs ..." and
// then "loom: computing the reference outputs: 12 s so far" every `every`; when such a step ends
// it prints "loom: computing the reference outputs: done in 14.2 s". A shorter step prints
// nothing. The lines go to the stream given (the CLI gives std::cerr), never to the command's
// results on stdout; stdout is flushed before each line so that a terminal shows both in order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace loom::tools {

class Progress {
 public:
  using Duration = std::chrono::milliseconds;

  /// Steps report after running for `after`, then every `every`. A negative `after` disables the
  /// lines (ranks other than 0 of a sharded run).
  explicit Progress(std::ostream& out, Duration after = std::chrono::seconds(2),
                    Duration every = std::chrono::seconds(10))
      : out_(&out), after_(after), every_(every) {}

  /// A step that stops reporting when it is destroyed (or end() is called).
  class Step {
   public:
    Step(Step&& other) = delete;
    Step& operator=(Step&&) = delete;
    ~Step() { end(); }
    /// Ends the step: stops its reports and, when it reported, prints how long it took.
    /// Returns the step's wall time in seconds.
    double end();

   private:
    friend class Progress;
    Step(Progress& progress, std::string what);
    void watch();

    Progress& progress_;
    std::string what_;
    std::chrono::steady_clock::time_point start_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    bool reported_ = false;
    double seconds_ = 0;
    std::thread watcher_;
  };

  /// Starts a step named `what` ("compiling and running on host").
  [[nodiscard]] Step step(std::string what) { return Step(*this, std::move(what)); }

 private:
  void print(const std::string& line);

  std::ostream* out_;
  Duration after_;
  Duration every_;
  std::mutex print_mutex_;
};

}  // namespace loom::tools
