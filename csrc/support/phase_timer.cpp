// SPDX-License-Identifier: Apache-2.0
#include "loom/support/phase_timer.h"

#include <fmt/format.h>

#include <string>

#include "loom/support/dump_sink.h"

namespace loom {

PhaseTimer::PhaseTimer(bool enabled, std::string what) : enabled_(enabled), what_(std::move(what)) {
  if (enabled_) last_ = std::chrono::steady_clock::now();
}

void PhaseTimer::mark(std::string_view phase) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  // One insertion of the whole line: lines of several threads do not interleave.
  dumpSink() << fmt::format("compile_time {}: {} {:.3f} ms\n", what_, phase, ms);
  last_ = std::chrono::steady_clock::now();  // the print itself is not part of the next phase
}

}  // namespace loom
