// SPDX-License-Identifier: Apache-2.0
// Where an in-place output (ir::Fusion::aliasOutputToInput, nvFuser's add_output(alias_input=))
// is written: straight into its input's memory by the segment that computes it, or into a buffer
// of its own that the runtime copies into the input after the last segment.
//
// The rule. Output O (segment s computes it) is stored into input I's memory only when no read of
// I that should see I's old value can see O's new one:
//   1. no segment after s reads I, and the fusion does not return I itself (segments run in
//      order, so every earlier reader is done);
//   2. s is a kernel of the pointwise scheduler (reduction and normalization kernels read an
//      element in other threads, or after other threads wrote theirs);
//   3. in s, every expr that depends on I is elementwise (unary, binary, ternary, a copy that
//      does not permute) and every tensor that depends on I has O's dims, broadcast where O's
//      are: element k of O is computed from element k of I alone, never from a broadcast of I;
//   4. no tensor of s has a dim that O lacks (the kernel iterates O's elements, each once: no
//      thread recomputes O's element k from I's after another stored it);
//   5. in s, every expr that reads I is one that O depends on: the thread that stores element k
//      of O has read element k of I for every use before (the kernel emits producers before
//      consumers), and no other thread reads it.
// Otherwise the write goes through a copy, and InPlaceWrite::why says which rule failed
// (LOOM_DUMP=segments and host_program print it). The layout (the input holds O exactly as O is
// allocated) and distinct memory are the runtime's checks (exec/in_place.h).
#pragma once

#include <vector>

#include "loom/segmenter/segmented_fusion.h"

namespace loom::segmenter {

/// Decides, for each in-place output of `segmented.original()`, whether its segment stores it in
/// place (the rule above).
std::vector<InPlaceWrite> planInPlaceWrites(const SegmentedFusion& segmented);

}  // namespace loom::segmenter
