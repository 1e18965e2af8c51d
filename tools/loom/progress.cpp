// SPDX-License-Identifier: Apache-2.0
// Progress (progress.h): one watcher thread per step, woken early when the step ends.
#include "tools/loom/progress.h"

#include <fmt/format.h>

#include <iostream>

namespace loom::tools {

Progress::Step::Step(Progress& progress, std::string what)
    : progress_(progress), what_(std::move(what)), start_(std::chrono::steady_clock::now()) {
  if (progress_.after_.count() < 0) return;
  if (progress_.after_.count() == 0) {
    // Reported at once, before the step can end (a threshold of 0 reports every step).
    progress_.print(fmt::format("loom: {} ...\n", what_));
    reported_ = true;
  }
  watcher_ = std::thread([this] { watch(); });
}

void Progress::Step::watch() {
  std::unique_lock lock(mutex_);
  auto next = start_ + (reported_ ? progress_.every_ : progress_.after_);
  while (!wake_.wait_until(lock, next, [this] { return done_; })) {
    const double so_far =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    progress_.print(reported_ ? fmt::format("loom: {}: {:.0f} s so far\n", what_, so_far)
                              : fmt::format("loom: {} ...\n", what_));
    reported_ = true;
    next += progress_.every_;
  }
}

double Progress::Step::end() {
  {
    std::lock_guard lock(mutex_);
    if (done_) return seconds_;
    done_ = true;
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  if (reported_) progress_.print(fmt::format("loom: {}: done in {:.1f} s\n", what_, seconds_));
  return seconds_;
}

void Progress::print(const std::string& line) {
  std::lock_guard lock(print_mutex_);
  std::cout.flush();
  *out_ << line << std::flush;
}

}  // namespace loom::tools
