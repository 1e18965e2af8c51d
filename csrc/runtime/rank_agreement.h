// SPDX-License-Identifier: Apache-2.0
// Private: the ranks' agreement on the first run of a signature of a sharded fusion
// (FusionExecutorCache). Ranks that run different fusions (another reduction, another sharded
// dim, a mesh listed in another order), plan different communications, or pass local inputs of
// different sizes (one rank the whole tensor where a shard is due) would wait for each other in
// mismatched collectives, or get silently wrong results; before the first run of new input sizes
// they compare, and every rank raises the same UserError naming the rank that differs and what
// differs.
//
// Cost: one small collective (a 64-bit digest from every rank) per new signature (the sizes of
// the inputs every rank holds); a signature the ranks agreed on once is never checked again, so
// cached runs pay nothing. Only when the
// digests differ (a disagreement, or ranks that hold different inputs: pipeline stages) do the
// ranks exchange their descriptions to compare them input by input, and only on a disagreement
// in the fusion or the plan their texts.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/multidevice/communicator.h"

namespace loom::runtime::detail {

class RankAgreement {
 public:
  /// `fusion`: the whole fusion as given; `sharded`: its sharded copy (multidevice::shardedCopy),
  /// whose communications are the plan; `worldSize`: the ranks that compare.
  RankAgreement(const ir::Fusion& fusion, const ir::Fusion& sharded, int64_t worldSize);

  /// Unless the ranks agreed on this signature before: every rank of `comm` compares its fusion,
  /// plan and local inputs with the others' (collective: every rank calls it on the same first
  /// run), and a disagreement is a UserError on every rank. `args`: the arguments this rank runs
  /// (its program's); `whole[j]`: the whole fusion's input that args[j] is (-1: a stand-in),
  /// or empty when `args` are the whole fusion's inputs. `scalarValues`: the values of scalar
  /// arguments are part of the signature (tensor sizes depend on them).
  void check(multidevice::Communicator& comm, std::span<const eval::Argument> args,
             std::span<const int64_t> whole, bool scalarValues);

 private:
  // Per input of the whole fusion: what this rank passes ("f32 [4, 8]"), or "-" when it does
  // not hold it.
  std::vector<std::string> describeInputs(std::span<const eval::Argument> args,
                                          std::span<const int64_t> whole, bool scalarValues) const;
  // The message naming what differs, or "" when nothing does (ranks holding different inputs).
  std::string compare(multidevice::Communicator& comm,
                      const std::vector<std::string>& inputs) const;

  std::string fusion_text_;
  uint64_t fusion_hash_ = 0;
  std::string plan_text_;
  uint64_t plan_hash_ = 0;
  std::vector<std::string> input_names_;            // "input 0 (T0)"
  std::vector<std::vector<int64_t>> shard_counts_;  // per input (ir::shardCounts)
  // Per input: every rank holds it, so its sizes are part of the signature (a new signature is
  // a new one on every rank at once; a pipeline stage's inputs change on their stage alone).
  std::vector<bool> every_rank_holds_;
  std::unordered_set<uint64_t> agreed_;  // digests every rank agreed on
};

}  // namespace loom::runtime::detail
