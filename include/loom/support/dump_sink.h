// SPDX-License-Identifier: Apache-2.0
// The dump sink: the one stream every LOOM_DUMP output of library code goes to (std::cout unless
// the embedding program sets another), so a framework can route Loom's dumps into its own log.
//
//   std::ostringstream log;
//   loom::ScopedDumpSink into(log);     // dumps of this scope go to `log`
//   cache.run(args);                   // with LOOM_DUMP=segments, the segmentation is in `log`
//
// The sink is process-wide, like LOOM_DUMP itself. Each dump is written with one insertion of a
// whole text where it can be, so lines of several threads interleave by lines at worst.
#pragma once

#include <ostream>

namespace loom {

/// The stream dumps are written to now.
std::ostream& dumpSink();
/// Sends later dumps to `sink` (not owned; it must outlive them); null restores std::cout.
/// Returns the previous sink.
std::ostream* setDumpSink(std::ostream* sink);

/// Sets the sink for its lifetime and restores the previous one after.
class ScopedDumpSink {
 public:
  explicit ScopedDumpSink(std::ostream& sink) : previous_(setDumpSink(&sink)) {}
  ~ScopedDumpSink() { setDumpSink(previous_); }
  ScopedDumpSink(const ScopedDumpSink&) = delete;
  ScopedDumpSink& operator=(const ScopedDumpSink&) = delete;

 private:
  std::ostream* previous_;
};

}  // namespace loom
