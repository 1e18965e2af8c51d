// SPDX-License-Identifier: Apache-2.0
// Concretization of dynamic reshapes for given inputs (see concretize.h).
#include "loom/segmenter/concretize.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"
#include "loom/ir/verifier.h"
#include "loom/support/strings.h"
#include "loom/ir/logical_map.h"

namespace loom::segmenter {
namespace {

using ir::IrBuilder;
using ir::IterDomain;
using ir::IterType;
using ir::TensorDomain;
using ir::TensorView;

std::vector<ir::ReshapeOp*> dynamicReshapes(const ir::Fusion& fusion) {
  std::vector<ir::ReshapeOp*> out;
  for (ir::Expr* e : fusion.exprs()) {
    if (auto* r = e->dynCast<ir::ReshapeOp>(); r != nullptr && r->isDynamic()) out.push_back(r);
  }
  return out;
}

std::string shapeText(const std::vector<int64_t>& shape) { return "[" + join(shape) + "]"; }

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// The decision for one dynamic reshape at the sizes `ee` is bound to.
ReshapeConcretization decide(const ir::ReshapeOp* r, eval::ExpressionEvaluator& ee) {
  std::vector<int64_t> in = ee.logicalSizes(r->in());
  std::vector<int64_t> out = ee.logicalSizes(r->out());
  for (size_t d = 0; d < out.size(); ++d) {
    LOOM_CHECK(out[d] >= 0, "reshape: size ", out[d], " at dimension ", d,
               " of the requested shape ", shapeText(out), " for ", r->in()->toString(), " ",
               shapeText(in), " is negative");
  }
  LOOM_CHECK(product(in) == product(out), "reshape: cannot reshape ", r->in()->toString(),
             " of shape ", shapeText(in), " (", product(in), " elements) to shape ", shapeText(out),
             " (", product(out),
             " elements): Total element counts across view operation must match");
  ReshapeConcretization c;
  for (int64_t s : out) c.broadcast.push_back(s == 1);
  if (product(in) == 0) {
    c.empty = true;
    return c;
  }
  std::vector<int64_t> core_in, core_out;
  for (int64_t s : in) {
    c.squeezed.push_back(s == 1);
    if (s != 1) core_in.push_back(s);
  }
  for (int64_t s : out) {
    if (s != 1) core_out.push_back(s);
  }
  c.groups = ops::reshapeGroups(core_in, core_out);
  return c;
}

// A new serial ID like `id` (start, extents, type), no definition, not an rFactor product.
IterDomain* copyId(const IterDomain* id) {
  return IrBuilder::create<IterDomain>(id->start(), id->extent(), id->iterType(),
                                       ir::ParallelType::Serial,
                                       id->isBroadcast() ? id->expandedExtent() : nullptr, false);
}

TensorView* newTensor(std::vector<IterDomain*> ids, DataType dtype) {
  return IrBuilder::create<TensorView>(IrBuilder::create<TensorDomain>(std::move(ids)), dtype);
}

// The static replacement of dynamic reshape `r` (see concretize.h).
TensorView* rebuild(const ir::ReshapeOp* r, const ReshapeConcretization& c) {
  TensorView* x = r->in();
  auto out_ids = TensorDomain::noReductions(r->out()->logical());
  if (c.empty) {
    std::vector<IterDomain*> ids;
    for (size_t d = 0; d < out_ids.size(); ++d) {
      ids.push_back(c.broadcast[d] ? IterDomain::create(IrBuilder::index(1), IterType::Broadcast)
                                   : IterDomain::create(out_ids[d]->logicalExtent()));
    }
    TensorView* zeros = newTensor(std::move(ids), x->dtype());
    IrBuilder::create<ir::FullOp>(zeros,
                                  IrBuilder::constant(ir::ScalarValue(int64_t(0)), x->dtype()));
    return zeros;
  }
  TensorView* core = x;
  if (std::find(c.squeezed.begin(), c.squeezed.end(), true) != c.squeezed.end()) {
    auto in_ids = TensorDomain::noReductions(x->logical());
    std::vector<IterDomain*> kept;
    for (size_t d = 0; d < in_ids.size(); ++d) {
      if (!c.squeezed[d]) kept.push_back(copyId(in_ids[d]));
    }
    core = newTensor(std::move(kept), x->dtype());
    IrBuilder::create<ir::SqueezeOp>(core, x, c.squeezed);
  }
  bool one_to_one = std::all_of(c.groups.begin(), c.groups.end(), [](const ops::ReshapeGroup& g) {
    return g.in_end - g.in_begin == 1 && g.out_end - g.out_begin == 1;
  });
  if (!one_to_one) {
    std::vector<ir::Scalar*> factors;
    for (size_t d = 0; d < out_ids.size(); ++d) {
      if (!c.broadcast[d]) factors.push_back(out_ids[d]->logicalExtent());
    }
    core = ops::reshapeByGroups(core, c.groups, factors);
  }
  if (std::find(c.broadcast.begin(), c.broadcast.end(), true) != c.broadcast.end()) {
    core = ops::broadcast(core, c.broadcast);
  }
  return core == x ? ops::set(x) : core;
}

// Resolves the Symbolic IDs of the tensors downstream of the rebuilt reshapes (see concretize.h).
class SymbolicResolver {
 public:
  explicit SymbolicResolver(eval::ExpressionEvaluator& ee) : ee_(ee) {}

  /// Resolves the Symbolic IDs of tv's root (or logical) domain from its producers.
  void resolve(TensorView* tv) {
    ir::Expr* def = tv->definition();
    // Producer IDs each of tv's root (or logical) IDs maps to.
    std::unordered_map<const IterDomain*, std::vector<std::pair<IterDomain*, TensorView*>>> from;
    if (def != nullptr) {
      std::vector<TensorView*> producers;
      for (ir::Val* v : def->inputs()) {
        auto* p = v->dynCast<TensorView>();
        if (p == nullptr || std::find(producers.begin(), producers.end(), p) != producers.end()) {
          continue;
        }
        producers.push_back(p);
        for (auto [pid, cid] : ir::pairwiseLogicalMap(p, tv, {.map_broadcast = true})) {
          from[cid].emplace_back(pid, p);
        }
      }
    }
    bool changed_type = false;
    for (IterDomain* id : tv->domain()->maybeRoot()) {
      const auto& mapped = from[id];
      if (id->isSymbolic()) {
        resolveId(tv, def, id, mapped);
        changed_type = true;
        continue;
      }
      if (id->isBroadcast()) continue;
      // An ID that copied the extent of a producer ID whose extent concretization replaced.
      for (auto [pid, p] : mapped) {
        if (replaced_.count(pid) == 0 || pid->isBroadcast()) continue;
        int64_t mine = ee_.extentOf(id, tv);
        int64_t theirs = ee_.extentOf(pid, p);
        LOOM_CHECK(mine == theirs, "concretization: ", tv->toString(), " takes extent ",
                   id->logicalExtent()->toString(), " = ", mine, " from ", p->toString(),
                   ", whose dimension there has size ", theirs,
                   " (a dimension of a dynamic reshape that is 1 at run time broadcasts against "
                   "a larger one before ",
                   def->toString(), "; this is not supported by concretization yet)");
      }
    }
    // Logical IDs derived from the root keep their types; any Symbolic one left (derived by a
    // Split/Merge from a Symbolic root ID) is an ordinary dim.
    for (IterDomain* id : tv->logical()) {
      if (id->isSymbolic()) {
        id->concretizeSymbolic(IterType::Iteration, id->extent());
        changed_type = true;
      }
    }
    if (changed_type) fixContiguity(tv);
  }

 private:
  void resolveId(TensorView* tv, const ir::Expr* def, IterDomain* id,
                 const std::vector<std::pair<IterDomain*, TensorView*>>& mapped) {
    const IterDomain* iteration = nullptr;
    const TensorView* iteration_tv = nullptr;
    for (auto [pid, p] : mapped) {
      if (!pid->isBroadcast()) {
        iteration = pid;
        iteration_tv = p;
        break;
      }
    }
    if (iteration == nullptr && !mapped.empty()) {
      // Every producer is a broadcast: so is this ID, expanded when an expand gave it a size.
      int64_t size = ee_.extentOf(id, tv);
      ir::Scalar* expanded =
          size != 1 && def != nullptr && def->isA<ir::ExpandOp>() ? id->logicalExtent() : nullptr;
      id->concretizeSymbolic(IterType::Broadcast, IrBuilder::index(1), expanded);
      return;
    }
    if (iteration == nullptr) {  // no producer (a fusion input, a factory)
      id->concretizeSymbolic(IterType::Iteration, id->extent());
      return;
    }
    int64_t mine = ee_.extentOf(id, tv);
    int64_t theirs = ee_.extentOf(iteration, iteration_tv);
    if (mine == theirs) {
      id->concretizeSymbolic(IterType::Iteration, id->extent());
      return;
    }
    LOOM_CHECK(def == nullptr || !def->isA<ir::ExpandOp>(), "expand: dimension of ",
               iteration_tv->toString(), " with size ", theirs,
               " is not a broadcast; it cannot be expanded to ", mine, " (", def->toString(), ")");
    // The extent came from an operand that is 1 at run time and broadcasts: take the size of
    // the operand that does not.
    id->concretizeSymbolic(IterType::Iteration, iteration->logicalExtent());
    replaced_.insert(id);
    for (ir::Expr* use : id->uses()) {
      LOOM_CHECK(!use->isA<ir::Resize>(), "concretization: ", tv->toString(),
                 " is sliced or padded along a dimension whose size comes from a dynamic "
                 "reshape dimension that is 1 at run time and broadcasts to ",
                 theirs, "; this is not supported by concretization yet");
    }
  }

  static void fixContiguity(TensorView* tv) {
    const auto& ids = tv->domain()->maybeAllocation();
    ir::Contiguity contig = tv->domain()->contiguity();
    for (size_t i = 0; i < ids.size(); ++i) {
      bool none = ids[i]->isBroadcast() || ids[i]->isReduction();
      if (none) {
        contig[i] = std::nullopt;
      } else if (!contig[i].has_value()) {
        contig[i] = true;
      }
    }
    tv->domain()->setContiguity(std::move(contig));
  }

  eval::ExpressionEvaluator& ee_;
  std::unordered_set<const IterDomain*> replaced_;
};

}  // namespace

std::string Concretization::toString() const {
  if (reshapes.empty()) return "static";
  auto flags = [](const std::vector<bool>& v) {
    std::vector<std::string> out;
    for (bool b : v) out.push_back(b ? "t" : "f");
    return "[" + join(out) + "]";
  };
  std::ostringstream os;
  for (size_t i = 0; i < reshapes.size(); ++i) {
    const ReshapeConcretization& r = reshapes[i];
    if (i > 0) os << "; ";
    os << "reshape " << i << ":";
    if (r.empty) {
      os << " empty broadcast " << flags(r.broadcast);
      continue;
    }
    std::vector<std::string> groups;
    for (const ops::ReshapeGroup& g : r.groups) {
      groups.push_back(std::to_string(g.in_begin) + ":" + std::to_string(g.in_end) + "->" +
                       std::to_string(g.out_begin) + ":" + std::to_string(g.out_end));
    }
    os << " squeeze " << flags(r.squeezed) << " groups [" << join(groups) << "] broadcast "
       << flags(r.broadcast);
  }
  return os.str();
}

bool hasDynamicReshape(const ir::Fusion& fusion) { return !dynamicReshapes(fusion).empty(); }

bool sizesDependOnScalarInputs(const ir::Fusion& fusion) {
  std::unordered_set<const ir::Val*> seen;
  std::vector<const ir::Val*> work;
  auto push = [&](const ir::Val* v) {
    if (v != nullptr && seen.insert(v).second) work.push_back(v);
  };
  for (const TensorView* tv : fusion.allTvs()) {
    const TensorDomain* td = tv->domain();
    for (const auto* ids : {&td->root(), &td->logical(), &td->allocation(), &td->loop()}) {
      for (const IterDomain* id : *ids) push(id);
    }
  }
  while (!work.empty()) {
    const ir::Val* v = work.back();
    work.pop_back();
    if (v->isA<IterDomain>()) {
      const auto* id = v->as<IterDomain>();
      push(id->start());
      push(id->extent());
      push(id->expandedExtent());
    } else if (fusion.isInput(v)) {
      return true;  // a scalar input
    }
    if (ir::Expr* def = v->definition()) {
      for (ir::Val* in : def->inputs()) push(in);
      for (ir::Val* a : def->attributeVals()) push(a);
    }
  }
  return false;
}

Concretization concretizationFor(const ir::Fusion& fusion, std::span<const eval::Argument> args) {
  Concretization c;
  auto reshapes = dynamicReshapes(fusion);
  if (reshapes.empty()) return c;
  eval::ExpressionEvaluator ee;
  ee.bindInputs(fusion, args);
  for (const ir::ReshapeOp* r : reshapes) c.reshapes.push_back(decide(r, ee));
  return c;
}

Concretization concretizeFusion(ir::Fusion& fusion, std::span<const eval::Argument> args) {
  Concretization c;
  auto reshapes = dynamicReshapes(fusion);
  if (reshapes.empty()) return c;
  ir::FusionGuard guard(&fusion);
  eval::ExpressionEvaluator ee;
  ee.bindInputs(fusion, args);
  for (const ir::ReshapeOp* r : reshapes) c.reshapes.push_back(decide(r, ee));

  // Producers first: a reshape's input is resolved before it is rebuilt, so the rebuilt IDs
  // (copies of the input's) are never Symbolic; other tensors resolve from their producers.
  SymbolicResolver resolver(ee);
  for (ir::Val* in : fusion.inputs()) {
    if (auto* tv = in->dynCast<TensorView>()) resolver.resolve(tv);
  }
  size_t next = 0;
  for (ir::Expr* e : fusion.exprs()) {
    if (next < reshapes.size() && e == reshapes[next]) {
      TensorView* old = reshapes[next]->out();
      fusion.replaceAllUses(old, rebuild(reshapes[next], c.reshapes[next]));
      ++next;
      continue;
    }
    for (ir::Val* out : e->outputs()) {
      if (auto* tv = out->dynCast<TensorView>()) resolver.resolve(tv);
    }
  }
  LOOM_ASSERT(next == reshapes.size(), "concretization missed a dynamic reshape");
  fusion.removeDeadCode();
  ir::verify(fusion);
  return c;
}

}  // namespace loom::segmenter
