// SPDX-License-Identifier: Apache-2.0
// The pairwise producer-consumer logical-domain map.
#include "loom/ir/logical_map.h"

#include <algorithm>
#include <string>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"

namespace loom::ir {
namespace {

std::string idList(const std::vector<IterDomain*>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + ids[i]->toString();
  return s + "]";
}

}  // namespace


std::vector<std::pair<IterDomain*, IterDomain*>> pairwiseLogicalMap(const TensorView* producer,
                                                                    const TensorView* consumer,
                                                                    LogicalMapOptions options) {
  Expr* def = consumer->definition();
  LOOM_CHECK(def != nullptr, "no logical map from ", producer->toString(), " to ",
             consumer->toString(), ": ", consumer->toString(), " has no definition");
  const auto& ins = def->inputs();
  LOOM_CHECK(std::find(ins.begin(), ins.end(), producer) != ins.end(), "no logical map from ",
             producer->toString(), " to ", consumer->toString(), ": ", producer->toString(),
             " is not an input of ", def->toString());

  std::vector<IterDomain*> p_ids = TensorDomain::noReductions(producer->logical());
  std::vector<IterDomain*> c_ids = consumer->domain()->maybeRoot();
  // An operand read at computed positions lines up with no output dim.
  if (isIndexedOperand(def, producer)) return {};
  // Attention runs as a segment of its own (a fused kernel or its composite): its outputs are
  // built from fresh IDs and no pass looks through it, so no pair is claimed.
  if (isAttentionExpr(def)) return {};
  if (isSortExpr(def)) {
    // A sort moves elements along its dim (and topk keeps k of them): position i of the output
    // is no position of the input there, so only the other dims line up.
    const auto d = size_t(sortDim(def));
    std::vector<std::pair<IterDomain*, IterDomain*>> pairs;
    for (size_t i = 0; i < p_ids.size() && i < c_ids.size(); ++i) {
      if (i == d) continue;
      if (!options.map_broadcast && p_ids[i]->isBroadcast() != c_ids[i]->isBroadcast()) continue;
      pairs.emplace_back(p_ids[i], c_ids[i]);
    }
    return pairs;
  }
  if (def->isA<MatmulOp>() || def->isA<LinearOp>()) {
    // Operand and output ranks differ: each operand dim names the output dim it lines up with;
    // the contracted k (-1: every such dim of the two multiplied operands, never of the bias)
    // lines up with the output's trailing r{k}, as in nvFuser.
    std::vector<int64_t> dims = matmulOperandDims(def, producer);
    const bool multiplied = producer == def->input(0) || producer == def->input(1);
    std::vector<std::pair<IterDomain*, IterDomain*>> pairs;
    for (size_t i = 0; i < p_ids.size() && i < dims.size(); ++i) {
      if (dims[i] < 0 && !multiplied) continue;
      const size_t at = dims[i] < 0 ? c_ids.size() - 1 : size_t(dims[i]);
      LOOM_ASSERT(at < c_ids.size() && (dims[i] >= 0 || c_ids[at]->isReduction()),
                  "logical map of ", producer->toString(), " and ", consumer->toString(),
                  " through ", def->toString(), ": operand dim ", i, " has no output dim");
      IterDomain* c = c_ids[at];
      if (!options.map_broadcast && p_ids[i]->isBroadcast() != c->isBroadcast()) continue;
      pairs.emplace_back(p_ids[i], c);
    }
    return pairs;
  }
  if (auto* b = def->dynCast<BroadcastOp>()) {
    std::vector<IterDomain*> kept;
    for (size_t i = 0; i < c_ids.size(); ++i) {
      if (i >= b->isBroadcastDim().size() || !b->isBroadcastDim()[i]) kept.push_back(c_ids[i]);
    }
    c_ids = std::move(kept);
  }
  if (auto* s = def->dynCast<SqueezeOp>()) {
    std::vector<IterDomain*> kept;
    for (size_t i = 0; i < p_ids.size(); ++i) {
      if (i >= s->isSqueezedDim().size() || !s->isSqueezedDim()[i]) kept.push_back(p_ids[i]);
    }
    p_ids = std::move(kept);
  }
  LOOM_ASSERT(p_ids.size() == c_ids.size(), "logical map of ", producer->toString(), " ",
              idList(p_ids), " and ", consumer->toString(), " ", idList(c_ids),
              " through ", def->toString(), ": different ranks");
  std::vector<std::pair<IterDomain*, IterDomain*>> pairs;
  for (size_t i = 0; i < p_ids.size(); ++i) {
    if (!options.map_broadcast && p_ids[i]->isBroadcast() != c_ids[i]->isBroadcast()) continue;
    pairs.emplace_back(p_ids[i], c_ids[i]);
  }
  return pairs;
}

std::unordered_map<IterDomain*, IterDomain*> producerToConsumerMap(const TensorView* producer,
                                                                   const TensorView* consumer,
                                                                   LogicalMapOptions options) {
  std::unordered_map<IterDomain*, IterDomain*> m;
  for (auto [p, c] : pairwiseLogicalMap(producer, consumer, options)) m[p] = c;
  return m;
}

std::unordered_map<IterDomain*, IterDomain*> consumerToProducerMap(const TensorView* producer,
                                                                   const TensorView* consumer,
                                                                   LogicalMapOptions options) {
  std::unordered_map<IterDomain*, IterDomain*> m;
  for (auto [p, c] : pairwiseLogicalMap(producer, consumer, options)) m[c] = p;
  return m;
}

}  // namespace loom::ir
