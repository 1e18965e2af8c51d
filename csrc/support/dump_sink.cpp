// SPDX-License-Identifier: Apache-2.0
// The dump sink (dump_sink.h).
#include "loom/support/dump_sink.h"

#include <atomic>
#include <iostream>

namespace loom {
namespace {

std::atomic<std::ostream*> sink{nullptr};  // null: std::cout

}  // namespace

std::ostream& dumpSink() {
  std::ostream* s = sink.load(std::memory_order_acquire);
  return s != nullptr ? *s : std::cout;
}

std::ostream* setDumpSink(std::ostream* s) {
  std::ostream* previous = sink.exchange(s, std::memory_order_acq_rel);
  return previous != nullptr ? previous : &std::cout;
}

}  // namespace loom
