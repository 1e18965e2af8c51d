// SPDX-License-Identifier: Apache-2.0
// Building standalone segment fusions from sets of exprs, and printing a segmentation.
#include "loom/segmenter/segmented_fusion.h"


#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/cloner.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"

namespace loom::segmenter {
namespace {

// A fresh global input of `tv`'s logical shape without reductions and without a root: an
// intermediate read back from memory has no history inside the segment. The producing segment
// allocates it densely in its allocation order: contiguous in logical order unless `tv` has an
// allocation domain, whose order the fresh input does not keep (then no dim is promised
// contiguous).
ir::TensorView* freshInput(const ir::TensorView* tv, ir::IrCloner& cloner) {
  std::vector<ir::IterDomain*> ids;
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
    ids.push_back(ir::IrBuilder::create<ir::IterDomain>(
        cloner.clone(id->start()), cloner.clone(id->extent()), id->iterType(),
        ir::ParallelType::Serial, cloner.clone(id->expandedExtent())));
  }
  auto* td = ir::IrBuilder::create<ir::TensorDomain>(
      ids, ir::TensorDomain::defaultContiguity(ids, !tv->domain()->hasAllocation()));
  // It keeps the original's name: clones keep theirs (unique in the original fusion), and the
  // original itself is replaced here, so no other tensor of the segment is named like it. (A
  // counter name could be taken by a clone registered later: two kernel parameters or a
  // parameter and a local buffer named alike.)
  auto* out = new ir::TensorView(td, tv->dtype(), ir::MemoryType::Global);
  td->fusion()->registerStatement(out, tv->name());
  if (tv->hasDeviceMesh()) out->setDeviceMesh(tv->deviceMesh());
  return out;
}

// The scalars of tv's root and logical domains and of the transforms between them.
std::vector<ir::Val*> domainScalars(const ir::TensorView* tv) {
  std::vector<ir::Val*> out;
  std::unordered_set<const ir::IterDomain*> seen;
  std::vector<ir::IterDomain*> work(tv->logical().begin(), tv->logical().end());
  work.insert(work.end(), tv->root().begin(), tv->root().end());
  while (!work.empty()) {
    ir::IterDomain* id = work.back();
    work.pop_back();
    if (!seen.insert(id).second) continue;
    for (ir::Val* v : {static_cast<ir::Val*>(id->start()), static_cast<ir::Val*>(id->extent()),
                       static_cast<ir::Val*>(id->expandedExtent())}) {
      if (v != nullptr) out.push_back(v);
    }
    ir::Expr* def = id->definition();
    if (def == nullptr) continue;
    for (ir::Val* a : def->attributeVals()) out.push_back(a);
    for (ir::Val* in : def->inputs()) work.push_back(in->as<ir::IterDomain>());
  }
  return out;
}

}  // namespace

SegmentFusion buildSegmentFusion(const ir::Fusion& original, const std::vector<ir::Expr*>& exprs,
                                 const std::vector<ir::Expr*>& live) {
  SegmentFusion seg;
  seg.fusion = std::make_unique<ir::Fusion>();
  ir::Fusion& target = *seg.fusion;
  ir::FusionGuard guard(&target);
  ir::IrCloner cloner(&target);

  std::unordered_set<const ir::Expr*> in_set(exprs.begin(), exprs.end());
  // Producers first, in the original's order.
  std::vector<ir::Expr*> ordered;
  for (ir::Expr* e : live) {
    if (in_set.count(e) != 0) ordered.push_back(e);
  }
  LOOM_ASSERT(ordered.size() == exprs.size(), "segment exprs must be live math exprs");
  std::unordered_set<const ir::Val*> produced;
  for (ir::Expr* e : ordered) {
    for (ir::Val* o : e->outputs()) produced.insert(o);
  }

  // Inputs: original fusion inputs first (in their order), then intermediates (in use order).
  std::vector<ir::Val*> needed;
  std::unordered_set<const ir::Val*> seen;
  auto need = [&](ir::Val* v) {
    if (produced.count(v) != 0 || !seen.insert(v).second) return;
    needed.push_back(v);
  };
  // Scalar math feeding the segment is copied along; its leaves are scalar fusion inputs.
  std::vector<ir::Expr*> scalar_exprs;
  std::unordered_set<const ir::Expr*> scalar_seen;
  // Definitions before their uses, with an explicit stack (a scalar chain may be long).
  auto collectScalar = [&](ir::Val* root) {
    auto scalarDef = [&](ir::Val* v) -> ir::Expr* {
      ir::Expr* def = v->definition();
      if (!v->isA<ir::Scalar>() || def == nullptr || original.isInput(v)) return nullptr;
      return scalar_seen.insert(def).second ? def : nullptr;
    };
    std::vector<std::pair<ir::Expr*, size_t>> stack;
    if (ir::Expr* def = scalarDef(root)) stack.push_back({def, 0});
    while (!stack.empty()) {
      auto& [def, k] = stack.back();
      if (k < def->inputs().size()) {
        ir::Expr* d = scalarDef(def->input(k++));
        if (d != nullptr) stack.push_back({d, 0});
        continue;
      }
      scalar_exprs.push_back(def);
      stack.pop_back();
    }
  };
  for (ir::Expr* e : ordered) {
    for (ir::Val* in : e->inputs()) {
      if (in->isA<ir::Scalar>() && in->definition() != nullptr && !original.isInput(in)) {
        collectScalar(in);
        continue;
      }
      if (in->isA<ir::TensorView>() || original.isInput(in)) need(in);
    }
  }
  // Scalars the outputs' domains refer to (extents, split factors, resize widths) that no tensor
  // input binds: scalar fusion inputs (a factory's size, a pad width, a reshape size) and math on
  // them.
  for (ir::Expr* e : ordered) {
    for (ir::Val* o : e->outputs()) {
      auto* tv = o->dynCast<ir::TensorView>();
      if (tv == nullptr) continue;
      for (ir::Val* v : domainScalars(tv)) {
        if (original.isInput(v)) {
          need(v);
        } else {
          collectScalar(v);
        }
      }
    }
  }
  for (ir::Expr* def : scalar_exprs) {
    for (ir::Val* in : def->inputs()) {
      if (original.isInput(in)) need(in);
    }
  }
  // Every symbolic size the segment refers to must be bound by its inputs. A fresh input's extent
  // or a resize width may be math on sizes of fusion inputs the segment does not read (a pad of a
  // slice of x, read back from memory: its extent is x's extent plus the widths); such a size
  // becomes a scalar input of the segment (FusionKernelRuntime passes the input's size).
  {
    std::unordered_set<const ir::Val*> bound;
    auto bindsOf = [&](ir::Val* v) {
      auto* tv = v->dynCast<ir::TensorView>();
      if (tv == nullptr) {
        bound.insert(v);
        return;
      }
      for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
        bound.insert(id->extent());
        // A local shard's n / d binds n too (ExpressionEvaluator::bindInputs).
        int64_t factor = 0;
        if (const ir::Scalar* n = ir::scalar_math::dividedSymbol(id->extent(), &factor)) {
          bound.insert(n);
        }
        if (id->expandedExtent() != nullptr) bound.insert(id->expandedExtent());
      }
    };
    for (ir::Val* v : needed) bindsOf(v);
    std::vector<ir::Val*> leaves;
    std::unordered_set<const ir::Val*> visited;
    // Depth first with an explicit stack, leaves in the order the recursion found them.
    auto collectLeaves = [&](ir::Val* root) {
      std::vector<ir::Val*> work{root};
      while (!work.empty()) {
        ir::Val* v = work.back();
        work.pop_back();
        if (v == nullptr || !v->isA<ir::Scalar>() || !visited.insert(v).second) continue;
        if (v->as<ir::Scalar>()->isConst()) continue;
        if (v->definition() == nullptr) {
          leaves.push_back(v);
          continue;
        }
        const auto& ins = v->definition()->inputs();
        for (auto it = ins.rbegin(); it != ins.rend(); ++it) work.push_back(*it);
      }
    };
    for (ir::Val* v : needed) {
      if (auto* tv = v->dynCast<ir::TensorView>(); tv != nullptr && !original.isInput(v)) {
        for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
          collectLeaves(id->extent());
          collectLeaves(id->expandedExtent());
        }
      }
    }
    for (ir::Expr* def : scalar_exprs) {
      for (ir::Val* in : def->inputs()) collectLeaves(in);
    }
    for (ir::Expr* e : ordered) {
      for (ir::Val* in : e->inputs()) collectLeaves(in);
      for (ir::Val* o : e->outputs()) {
        if (auto* tv = o->dynCast<ir::TensorView>()) {
          for (ir::Val* v : domainScalars(tv)) collectLeaves(v);
        }
      }
    }
    for (ir::Val* leaf : leaves) {
      if (bound.count(leaf) != 0) continue;
      need(leaf);
      bound.insert(leaf);
    }
  }
  std::vector<ir::Val*> ordered_needed;
  for (ir::Val* in : original.inputs()) {
    if (seen.count(in) != 0) ordered_needed.push_back(in);
  }
  for (ir::Val* v : needed) {
    if (!original.isInput(v)) ordered_needed.push_back(v);
  }
  needed = std::move(ordered_needed);

  // Intermediates become fresh inputs; consumers are rewired to them after cloning.
  std::unordered_map<const ir::Val*, ir::Val*> fresh;
  for (ir::Val* v : needed) {
    ir::Val* copy = nullptr;
    if (original.isInput(v) || v->isA<ir::Scalar>()) {
      copy = cloner.clone(v);
    } else {
      copy = freshInput(v->as<ir::TensorView>(), cloner);
      fresh[v] = copy;
    }
    target.addInput(copy);
    seg.inputs.push_back(v);
    seg.toSegment[v] = copy;
  }
  for (ir::Expr* def : scalar_exprs) cloner.clone(def);
  for (ir::Expr* e : ordered) {
    auto* copy = cloner.clone(e);
    for (ir::Val* in : e->inputs()) {
      auto it = fresh.find(in);
      if (it != fresh.end()) copy->replaceInput(cloner.lookup(in), it->second);
    }
  }
  // Root-to-logical transforms (reshape, slice, pad) of the copied tensors: newest first, so a
  // chain of Split/Merge/Resize exprs is found from its end.
  std::vector<ir::Expr*> all = original.allExprs();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    ir::Expr* e = *it;
    if (!e->isA<ir::Split>() && !e->isA<ir::Merge>() && !e->isA<ir::Resize>()) continue;
    bool wanted = std::any_of(e->outputs().begin(), e->outputs().end(),
                              [&](const ir::Val* o) { return cloner.lookup(o) != nullptr; });
    if (wanted) cloner.clone(e);
  }

  // Outputs: what the original outputs or a live expr outside the segment reads.
  std::unordered_set<const ir::Expr*> live_set(live.begin(), live.end());
  for (ir::Expr* e : ordered) {
    for (ir::Val* o : e->outputs()) {
      if (!o->isA<ir::TensorView>()) continue;
      bool used_outside = original.isOutput(o);
      for (ir::Expr* use : o->uses()) {
        if (live_set.count(use) != 0 && in_set.count(use) == 0) used_outside = true;
      }
      if (!used_outside) continue;
      ir::Val* copy = cloner.lookup(o);
      target.addOutput(copy);
      seg.outputs.push_back(o);
    }
  }
  for (ir::Expr* e : ordered) {
    for (ir::Val* v : e->inputs()) {
      if (seg.toSegment.count(v) == 0 && cloner.lookup(v) != nullptr) {
        seg.toSegment[v] = cloner.lookup(v);
      }
    }
    for (ir::Val* v : e->outputs()) seg.toSegment[v] = cloner.lookup(v);
  }
  target.removeDeadCode();
  return seg;
}

void SegmentedFusion::adoptRewritten(std::shared_ptr<const ir::Fusion> rewritten,
                                     const ir::Fusion* source) {
  LOOM_ASSERT(rewritten != nullptr && rewritten->inputs().size() == source->inputs().size() &&
                  rewritten->outputs().size() == source->outputs().size(),
              "a rewritten fusion keeps the inputs and outputs of its source");
  owned_ = std::move(rewritten);
  original_ = owned_.get();
  source_ = source;
}

namespace {

// Positions of `exprs` in `fusion`'s expr list: rewritten copies made from one source by the
// same deterministic rewrite compare equal by position.
std::vector<size_t> exprPositions(const ir::Fusion& fusion, const std::vector<ir::Expr*>& exprs) {
  std::vector<ir::Expr*> all = fusion.exprs();
  std::vector<size_t> out;
  for (ir::Expr* e : exprs) {
    out.push_back(size_t(std::find(all.begin(), all.end(), e) - all.begin()));
  }
  return out;
}

}  // namespace

bool SegmentedFusion::sameAs(const SegmentedFusion& other) const {
  if (source_ != other.source_ || rewritten() != other.rewritten() ||
      segments_.size() != other.segments_.size()) {
    return false;
  }
  // Two rewritten copies hold different expr objects: compare where the exprs sit instead.
  const bool by_position = original_ != other.original_;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& a = segments_[i];
    const Segment& b = other.segments_[i];
    if (a.work.index() != b.work.index()) return false;
    if (by_position ? exprPositions(*original_, a.exprs) !=
                          exprPositions(*other.original_, b.exprs)
                    : a.exprs != b.exprs) {
      return false;
    }
    if (const KernelWork* k = a.kernel()) {
      const KernelWork* l = b.kernel();
      if (k->scheduler != l->scheduler || !k->params->sameAs(*l->params)) return false;
    } else if (*a.communication() != *b.communication()) {
      return false;
    }
  }
  return true;
}

KernelWork::KernelWork(const KernelWork& other)
    : scheduler(other.scheduler), params(other.params ? other.params->clone() : nullptr) {}

KernelWork& KernelWork::operator=(const KernelWork& other) {
  scheduler = other.scheduler;
  params = other.params ? other.params->clone() : nullptr;
  return *this;
}

std::string_view workKindName(const SegmentWork& work) {
  return std::holds_alternative<KernelWork>(work) ? "kernel" : "communication";
}

std::string Segment::what() const {
  if (const KernelWork* k = kernel()) return std::string(scheduler::schedulerTypeName(k->scheduler));
  return std::string(multidevice::communicationTypeName(communication()->type));
}

std::string Segment::parameters() const {
  if (const KernelWork* k = kernel()) return k->params->toString();
  return communication()->toString();
}

std::string SegmentedFusion::toString() const {
  std::ostringstream os;
  os << "segmented fusion: " << segments_.size() << " segment(s)\n";
  if (!welford_note_.empty()) os << "welford: " << welford_note_ << "\n";
  auto names = [](const std::vector<ir::Val*>& vs) {
    std::string s;
    for (const ir::Val* v : vs) s += (s.empty() ? "" : ", ") + v->toString();
    return s.empty() ? std::string("-") : s;
  };
  for (const Segment& seg : segments_) {
    os << "segment " << seg.id << " ("
       << (seg.kernel() != nullptr ? seg.what() : std::string(workKindName(seg.work)))
       << "): inputs " << names(seg.fusion.inputs) << " | outputs " << names(seg.fusion.outputs)
       << "\n";
    for (const ir::Expr* e : seg.exprs) {
      std::string text = e->toString();
      while (!text.empty() && text.back() == '\n') text.pop_back();
      os << "  " << text << "\n";
    }
    std::string text = seg.parameters();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    os << "  " << (seg.kernel() != nullptr ? "params: " : "") << text << "\n";
  }
  return os.str();
}

}  // namespace loom::segmenter
