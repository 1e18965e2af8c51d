// SPDX-License-Identifier: Apache-2.0
// TransformReplay: copies a schedule (the Split/Merge history from logical to loop, and optionally
// to allocation) from one tensor to another through a map between their logical domains.
//
//   selfReplay(from, to)      same logical shape (siblings of a multi-output op, a rewritten
//                             tensor): loop, allocation, contiguity and every parallel type.
//   replayPasC(p, c, pos)     producer as consumer: p's loop gets c's loop[0, pos) history.
//   replayCasP(c, p, pos)     consumer as producer: c's loop gets p's loop[0, pos) history.
//
// Replay reuses a Split/Merge the target already has on the same inputs (so replaying twice is
// a no-op and a sharded allocation keeps sharing IDs with the loop). A Merge whose one input has
// no counterpart on the target (a broadcast the other side lacks, a reduction) is forwarded: its
// output maps to the other input's counterpart.
//
// Partial replays (pos below the full loop) keep the target's own schedule: the target's loop
// becomes the replayed prefix, then the IDs the replay left over, each replaced by the target's
// former loop IDs derived from it when all of those are still reachable (not consumed by the
// replay), those in their former order.
//
// Reshape targets (replayCasP onto a tensor whose logical is derived from its root): a producer
// transform that equals a reshape transform (same split factor, same merge inputs) is reused; any
// other transform of a reshaped root ID is applied to its loop-side equivalent (a piece of a
// reshape merge is split back out of the merged logical ID by the inner extent; a reshape-split
// ID is the merge of its logical pieces), so e.g. a producer merge of [4, 6] replays onto a
// reshape to [2, 12] as merge(2, 12), and a producer split of 24 by 4 onto a reshape to [4, 6] as
// split(merge(4, 6), 4).
#pragma once

#include <cstdint>

#include "loom/ir/tensor_view.h"

namespace loom::transform {

using ir::TensorDomain;
using ir::TensorView;

/// Which parallel types a replay copies onto the target's IDs.
enum class ParallelCopy : uint8_t {
  None,
  DeviceOnly,  ///< DIDx/y/z only: sharding follows the schedule, kernel parallelization does not
  All,
};

struct ReplayOptions {
  /// Also rebuild the target's allocation domain from the source's.
  bool replay_allocation = false;
  /// Unless None, a target without a device mesh also gets the source's mesh.
  ParallelCopy parallel = ParallelCopy::DeviceOnly;
};

class TransformReplay {
 public:
  /// Copies from's logical->loop and logical->allocation transforms, contiguity and all parallel
  /// types onto `to`. The logical domains must match 1:1 with compatible IterTypes (Symbolic
  /// matches anything); the only allowed difference is extra reduction IDs on one side, which
  /// then go first in `to`'s loop and allocation. UserError otherwise.
  static void selfReplay(const TensorDomain* from, TensorDomain* to);
  /// Also gives `to` from's device mesh when it has none.
  static void selfReplay(const TensorView* from, TensorView* to);

  /// Replays consumer's loop[0, consumer_pos) history (-1: the whole loop) onto producer, whose
  /// remaining IDs keep their own schedule where reachable (see above). Returns the matching
  /// producer position.
  static int64_t replayPasC(TensorView* producer, const TensorView* consumer,
                            int64_t consumer_pos = -1, ReplayOptions options = {});
  /// Replays producer's loop[0, producer_pos) history onto consumer (through a reshape's
  /// root->logical transforms, see above). Returns the matching consumer position.
  static int64_t replayCasP(TensorView* consumer, const TensorView* producer,
                            int64_t producer_pos = -1, ReplayOptions options = {});
};

}  // namespace loom::transform
