// SPDX-License-Identifier: Apache-2.0
#include "loom/support/phase_timer.h"

#include <cstdio>
#include <string>

#include "loom/support/dump_sink.h"

namespace loom {

PhaseTimer::PhaseTimer(bool enabled, std::string what)
    : enabled_(enabled), what_(std::move(what)) {
  if (enabled_) last_ = std::chrono::steady_clock::now();
}

void PhaseTimer::mark(std::string_view phase) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  char value[32];
  std::snprintf(value, sizeof(value), "%.3f", ms);
  // One insertion of the whole line: lines of several threads do not interleave.
  dumpSink() << ("compile_time " + what_ + ": " + std::string(phase) + " " + value + " ms\n");
  last_ = std::chrono::steady_clock::now();  // the print itself is not part of the next phase
}

}  // namespace loom
