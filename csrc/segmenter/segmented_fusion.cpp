// SPDX-License-Identifier: Apache-2.0
// Building standalone segment fusions from sets of exprs, and printing a segmentation.
#include "loom/segmenter/segmented_fusion.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/cloner.h"
#include "loom/ir/exprs.h"
#include "loom/ir/extent_bindings.h"
#include "loom/ir/iter_domain.h"
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

// Builds one segment's standalone fusion, step by step (buildSegmentFusion).
class SegmentBuilder {
 public:
  SegmentBuilder(const ir::Fusion& original, const std::vector<ir::Expr*>& exprs,
                 const std::vector<ir::Expr*>& live)
      : original_(original), live_(live), in_set_(exprs.begin(), exprs.end()) {
    seg_.fusion = std::make_unique<ir::Fusion>();
    orderExprs(exprs.size());
  }

  SegmentFusion build() {
    ir::FusionGuard guard(seg_.fusion.get());
    ir::IrCloner cloner(seg_.fusion.get());
    collectInputs();
    addUnboundSizes();
    orderInputs();
    cloneInputsAndExprs(cloner);
    cloneRootTransforms(cloner);
    addOutputs(cloner);
    recordMapping(cloner);
    seg_.fusion->removeDeadCode();
    return std::move(seg_);
  }

 private:
  // Producers first, in the original's order.
  void orderExprs(size_t count) {
    for (ir::Expr* e : live_) {
      if (in_set_.count(e) != 0) ordered_.push_back(e);
    }
    LOOM_ASSERT(ordered_.size() == count, "segment exprs must be live math exprs");
    for (ir::Expr* e : ordered_) {
      for (ir::Val* o : e->outputs()) produced_.insert(o);
    }
  }

  void need(ir::Val* v) {
    if (produced_.count(v) != 0 || !seen_.insert(v).second) return;
    needed_.push_back(v);
  }

  // Scalar math feeding the segment is copied along (definitions before their uses, with an
  // explicit stack: a scalar chain may be long); its leaves are scalar fusion inputs.
  void collectScalar(ir::Val* root) {
    auto scalarDef = [&](ir::Val* v) -> ir::Expr* {
      ir::Expr* def = v->definition();
      if (!v->isA<ir::Scalar>() || def == nullptr || original_.isInput(v)) return nullptr;
      return scalar_seen_.insert(def).second ? def : nullptr;
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
      scalar_exprs_.push_back(def);
      stack.pop_back();
    }
  }

  // The tensors and scalars the exprs read, and the scalars the outputs' domains refer to
  // (extents, split factors, resize widths) that no tensor input binds: scalar fusion inputs (a
  // factory's size, a pad width, a reshape size) and math on them.
  void collectInputs() {
    for (ir::Expr* e : ordered_) {
      for (ir::Val* in : e->inputs()) {
        if (in->isA<ir::Scalar>() && in->definition() != nullptr && !original_.isInput(in)) {
          collectScalar(in);
          continue;
        }
        if (in->isA<ir::TensorView>() || original_.isInput(in)) need(in);
      }
    }
    for (ir::Expr* e : ordered_) {
      for (ir::Val* o : e->outputs()) {
        auto* tv = o->dynCast<ir::TensorView>();
        if (tv == nullptr) continue;
        for (ir::Val* v : domainScalars(tv)) {
          if (original_.isInput(v)) {
            need(v);
          } else {
            collectScalar(v);
          }
        }
      }
    }
    for (ir::Expr* def : scalar_exprs_) {
      for (ir::Val* in : def->inputs()) {
        if (original_.isInput(in)) need(in);
      }
    }
  }

  // Every symbolic size the segment refers to must be bound by its inputs. A fresh input's extent
  // or a resize width may be math on sizes of fusion inputs the segment does not read (a pad of a
  // slice of x, read back from memory: its extent is x's extent plus the widths); such a size
  // becomes a scalar input of the segment (FusionKernelRuntime passes the input's size).
  void addUnboundSizes() {
    std::unordered_set<const ir::Val*> bound;
    for (ir::Val* v : needed_) {
      auto* tv = v->dynCast<ir::TensorView>();
      if (tv == nullptr) {
        bound.insert(v);
        continue;
      }
      for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
        bound.insert(id->extent());
      }
      // A local shard's n / d binds n too, an expanded broadcast its expanded extent.
      for (const ir::ExtentBinding& b : ir::extentBindings(tv)) bound.insert(b.symbol);
    }
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
    for (ir::Val* v : needed_) {
      if (auto* tv = v->dynCast<ir::TensorView>(); tv != nullptr && !original_.isInput(v)) {
        for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
          collectLeaves(id->extent());
          collectLeaves(id->expandedExtent());
        }
      }
    }
    for (ir::Expr* def : scalar_exprs_) {
      for (ir::Val* in : def->inputs()) collectLeaves(in);
    }
    for (ir::Expr* e : ordered_) {
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

  // Original fusion inputs first (in their order), then intermediates (in use order).
  void orderInputs() {
    std::vector<ir::Val*> ordered_needed;
    for (ir::Val* in : original_.inputs()) {
      if (seen_.count(in) != 0) ordered_needed.push_back(in);
    }
    for (ir::Val* v : needed_) {
      if (!original_.isInput(v)) ordered_needed.push_back(v);
    }
    needed_ = std::move(ordered_needed);
  }

  // Intermediates become fresh inputs; consumers are rewired to them after cloning.
  void cloneInputsAndExprs(ir::IrCloner& cloner) {
    std::unordered_map<const ir::Val*, ir::Val*> fresh;
    for (ir::Val* v : needed_) {
      ir::Val* copy = nullptr;
      if (original_.isInput(v) || v->isA<ir::Scalar>()) {
        copy = cloner.clone(v);
      } else {
        copy = freshInput(v->as<ir::TensorView>(), cloner);
        fresh[v] = copy;
      }
      seg_.fusion->addInput(copy);
      seg_.inputs.push_back(v);
      seg_.toSegment[v] = copy;
    }
    for (ir::Expr* def : scalar_exprs_) cloner.clone(def);
    for (ir::Expr* e : ordered_) {
      auto* copy = cloner.clone(e);
      for (ir::Val* in : e->inputs()) {
        auto it = fresh.find(in);
        if (it != fresh.end()) copy->replaceInput(cloner.lookup(in), it->second);
      }
    }
  }

  // Root-to-logical transforms (reshape, slice, pad) of the copied tensors: newest first, so a
  // chain of Split/Merge/Resize exprs is found from its end.
  void cloneRootTransforms(ir::IrCloner& cloner) {
    std::vector<ir::Expr*> all = original_.allExprs();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      ir::Expr* e = *it;
      if (!e->isA<ir::Split>() && !e->isA<ir::Merge>() && !e->isA<ir::Resize>()) continue;
      bool wanted = std::any_of(e->outputs().begin(), e->outputs().end(),
                                [&](const ir::Val* o) { return cloner.lookup(o) != nullptr; });
      if (wanted) cloner.clone(e);
    }
  }

  // Outputs: what the original outputs or a live expr outside the segment reads.
  void addOutputs(ir::IrCloner& cloner) {
    std::unordered_set<const ir::Expr*> live_set(live_.begin(), live_.end());
    for (ir::Expr* e : ordered_) {
      for (ir::Val* o : e->outputs()) {
        if (!o->isA<ir::TensorView>()) continue;
        bool used_outside = original_.isOutput(o);
        for (ir::Expr* use : o->uses()) {
          if (live_set.count(use) != 0 && in_set_.count(use) == 0) used_outside = true;
        }
        if (!used_outside) continue;
        seg_.fusion->addOutput(cloner.lookup(o));
        seg_.outputs.push_back(o);
      }
    }
  }

  void recordMapping(ir::IrCloner& cloner) {
    for (ir::Expr* e : ordered_) {
      for (ir::Val* v : e->inputs()) {
        if (seg_.toSegment.count(v) == 0 && cloner.lookup(v) != nullptr) {
          seg_.toSegment[v] = cloner.lookup(v);
        }
      }
      for (ir::Val* v : e->outputs()) seg_.toSegment[v] = cloner.lookup(v);
    }
  }

  const ir::Fusion& original_;
  const std::vector<ir::Expr*>& live_;
  const std::unordered_set<const ir::Expr*> in_set_;
  SegmentFusion seg_;
  std::vector<ir::Expr*> ordered_;
  std::unordered_set<const ir::Val*> produced_;
  std::vector<ir::Val*> needed_;
  std::unordered_set<const ir::Val*> seen_;
  std::vector<ir::Expr*> scalar_exprs_;
  std::unordered_set<const ir::Expr*> scalar_seen_;
};

}  // namespace

SegmentFusion buildSegmentFusion(const ir::Fusion& original, const std::vector<ir::Expr*>& exprs,
                                 const std::vector<ir::Expr*>& live) {
  return SegmentBuilder(original, exprs, live).build();
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
    } else if (const MatmulWork* m = a.matmul()) {
      if (*m != *b.matmul()) return false;
    } else if (const AttentionWork* at = a.attention()) {
      if (*at != *b.attention()) return false;
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

std::string MatmulWork::toString() const {
  std::vector<std::string> parts;
  if (bias) parts.emplace_back("bias");
  if (activation != ir::MatmulActivation::None) {
    parts.emplace_back(ir::matmulActivationName(activation));
  }
  if (parts.empty()) return op;
  std::string out = op + " with ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : " + ") + parts[i];
  return out + " in the epilogue";
}

std::optional<MatmulWork> matmulWorkOf(const ir::Expr* e) {
  MatmulWork w;
  if (e->isA<ir::MatmulOp>()) {
    w.op = "matmul";
  } else if (const auto* l = e->dynCast<ir::LinearOp>()) {
    w.op = "linear";
    w.bias = l->hasBias();
  } else {
    return std::nullopt;
  }
  return w;
}

std::optional<AttentionWork> attentionWorkOf(const ir::Expr* e) {
  if (ir::isAttentionExpr(e)) return AttentionWork{e->opName()};
  return std::nullopt;
}

std::string_view workKindName(const SegmentWork& work) {
  if (std::holds_alternative<KernelWork>(work)) return "kernel";
  if (std::holds_alternative<AttentionWork>(work)) return "attention";
  return std::holds_alternative<MatmulWork>(work) ? "matmul" : "communication";
}

std::string Segment::what() const {
  if (const KernelWork* k = kernel()) return std::string(scheduler::schedulerTypeName(k->scheduler));
  if (const MatmulWork* m = matmul()) return m->op;
  if (const AttentionWork* a = attention()) return a->op;
  return std::string(multidevice::communicationTypeName(communication()->type));
}

std::string Segment::parameters() const {
  if (const KernelWork* k = kernel()) return k->params->toString();
  if (const MatmulWork* m = matmul()) return m->toString();
  if (const AttentionWork* a = attention()) return a->toString();
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
  for (const InPlaceWrite& w : in_place_) {
    os << "in place: " << original_->outputs().at(size_t(w.output))->toString() << " into "
       << original_->inputs().at(size_t(w.input))->toString() << ": "
       << (w.inPlace() ? "stored by segment " + std::to_string(w.segment)
                       : "computed aside, copied after the last segment (" + w.why + ")")
       << "\n";
  }
  return os.str();
}

}  // namespace loom::segmenter
