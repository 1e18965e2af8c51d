// SPDX-License-Identifier: Apache-2.0
// Interval bounds of kernel index values, for proving predicates redundant and folding / and %.
//
// Ranges are inclusive integer bounds known while a statement runs: a serial loop index lies in
// [start, stop - 1] (bounds of start and stop known); a thread/block index lies in
// [0, launch - 1], where the launch extent of a parallel type is the largest of its loops'
// extents (what the executor launches) and is known only when all of them are constants, so a
// loop narrower than the launch does not bound its index by its own extent (its ops are guarded
// by `index < extent`, which narrow() applies inside that guard). Runtime sizes are unknown.
// A value whose bounds leave the int32 range is unknown: kernels may compute indices in int, and
// a bound proven for a value that overflows would not hold.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "loom/lower/lower.h"

namespace loom::lower {

/// Inclusive bounds [lo, hi] of an integer value.
struct IndexRange {
  int64_t lo = 0;
  int64_t hi = 0;
};

class IndexRanges {
 public:
  /// Thread/block index bounds from the kernel's launch dims.
  explicit IndexRanges(const kir::Kernel& kernel);

  /// Binds the index of `loop` for its body; exitLoop unbinds it.
  void enterLoop(const kir::ForLoop* loop);
  void exitLoop(const kir::ForLoop* loop);

  /// The bounds of `v`, or nullopt when not provable (runtime sizes, non-integer values).
  std::optional<IndexRange> range(const kir::Value* v) const;

  /// True when `cond` (comparisons of index values joined by &&) holds for every value in range.
  bool provablyTrue(const kir::Value* cond) const;

  /// `cond` without its provably true conjuncts; null when all of them are (always true).
  kir::Value* dropProvable(kir::Kernel& kernel, kir::Value* cond) const;

  /// Narrows index bounds by the conjuncts `x < c` / `x == c` of `cond` (x a loop or thread
  /// index), for visiting the then-branch of `if (cond)`. Save state() before, restore after.
  void narrow(const kir::Value* cond);
  struct State {
    std::unordered_map<const kir::Var*, IndexRange> vars;
    std::unordered_map<std::string, IndexRange> named;
  };
  State state() const { return {vars_, named_}; }
  void restore(State s) {
    vars_ = std::move(s.vars);
    named_ = std::move(s.named);
    forget();
  }

 private:
  // The bounds of `v` alone, its operands' bounds in memo_.
  std::optional<IndexRange> rangeOfNode(const kir::Value* v) const;
  // narrow() for one conjunct.
  void narrowBy(const kir::Value* cond);
  // Drops memo_ (the bindings changed). A fresh map, not clear(): clearing a map that once held a
  // deep index touches all of its buckets, at every loop of the nest.
  void forget() {
    if (!memo_.empty()) decltype(memo_)().swap(memo_);
  }

  std::unordered_map<const kir::Var*, IndexRange> vars_;
  // Bounds computed under the current bindings (cleared when they change): an index is a DAG
  // that may be tens of thousands deep, walked bottom-up once instead of once per use.
  mutable std::unordered_map<const kir::Value*, std::optional<IndexRange>> memo_;
  std::unordered_map<std::string, IndexRange> named_;  ///< "threadIdx.x", "blockIdx.y", ...
  std::unordered_map<ir::ParallelType, IndexRange> launch_;
};

}  // namespace loom::lower
