// SPDX-License-Identifier: Apache-2.0
// The sort scheduler: a kernel of one argsort or topk. A row that fits in shared memory (and is
// longer than kMaxThreadRow) is sorted by one block, its threads together (the rows on BIDx, the
// sort dim split [serial, TIDx], which lowering turns into one block-wide row call); other rows
// one thread each (the sort dim is the innermost, serial loop; every other dim merges into
// [BIDx, TIDx]). The input is a fusion input of the segment; producers and consumers of the sort
// run in kernels of their own. See docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

/// Rows of at most this many elements are sorted one thread each: a block's barriers and shared
/// memory cost more than such a row's heapsort.
inline constexpr int64_t kMaxThreadRow = 16;

struct SortParams final : ParamsOf<SortParams> {
  SortParams() : ParamsOf(SchedulerType::Sort) {}

  /// Threads per block: each thread sorts one row, or with block_row the block sorts one.
  int64_t bdimx = 128;
  /// 0: one thread per row. Otherwise one block per row, sorting this many keys (a power of two
  /// at least the row's length) in shared memory.
  int64_t block_row = 0;

  static constexpr std::string_view kName = "Sort";
  static constexpr auto fields() {
    return std::tuple{field("bdimx", &SortParams::bdimx),
                      field("block_row", &SortParams::block_row)};
  }
  std::string summary() const { return ""; }
};

/// Bytes of shared memory a block-wide sort of `capacity` keys of `dtype` takes (keys and int
/// indices, each rounded up to 16 bytes).
int64_t blockSortBytes(DataType dtype, int64_t capacity);

std::unique_ptr<Scheduler> makeSortScheduler();

}  // namespace loom::scheduler
