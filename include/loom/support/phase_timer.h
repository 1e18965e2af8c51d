// SPDX-License-Identifier: Apache-2.0
// PhaseTimer: wall time of the steps of a cache miss, printed under LOOM_DUMP=compile_time.
//
//   PhaseTimer t(dump.has(DumpOption::CompileTime), "kernel loom_kernel_ab12");
//   lower();   t.mark("lower");
//   codegen(); t.mark("codegen");
//
// prints "compile_time kernel loom_kernel_ab12: lower 0.381 ms" and so on to the dump sink
// (support/dump_sink.h), one line per mark (the time since the previous mark or the
// constructor). Disabled, it reads no clock.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace loom {

class PhaseTimer {
 public:
  PhaseTimer(bool enabled, std::string what);

  /// Prints the time since the last mark (or construction) as `phase`, and restarts.
  void mark(std::string_view phase);
  /// Changes the subject of the following lines (a kernel's name is known after codegen).
  void rename(std::string_view what) {
    if (enabled_) what_ = what;
  }
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  std::string what_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace loom
