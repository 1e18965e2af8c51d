// SPDX-License-Identifier: Apache-2.0
// The segment that stores an in-place output into its input, or none (in_place.h).
#include "loom/segmenter/in_place.h"

#include <algorithm>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/transform/id_graph.h"

namespace loom::segmenter {

namespace {

using ir::TensorView;

int64_t positionOf(const std::vector<ir::Val*>& vals, const ir::Val* v) {
  auto it = std::find(vals.begin(), vals.end(), v);
  return it == vals.end() ? -1 : int64_t(it - vals.begin());
}

// An expr whose output element k is computed from its inputs' elements k alone (no broadcast,
// permutation, reshape, reduction or indexing).
bool elementwise(const ir::Expr* e) {
  if (e->isA<ir::UnaryOp>() || e->isA<ir::BinaryOp>() || e->isA<ir::TernaryOp>()) return true;
  if (const auto* copy = e->dynCast<ir::LoadStoreOp>()) return !copy->out()->domain()->hasRoot();
  return false;
}

std::vector<ir::IterDomain*> dimsOf(const TensorView* tv) {
  return ir::TensorDomain::noReductions(tv->logical());
}

// True when `tv` has `ref`'s dims: the same rank, broadcast where `ref` is, and every other dim
// mapped to `ref`'s at its position.
bool sameDims(const transform::IdGraph& exact, const TensorView* tv, const TensorView* ref) {
  const std::vector<ir::IterDomain*> a = dimsOf(tv);
  const std::vector<ir::IterDomain*> b = dimsOf(ref);
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d]->isBroadcast() != b[d]->isBroadcast()) return false;
    if (!a[d]->isBroadcast() && !exact.areMapped(a[d], b[d])) return false;
  }
  return true;
}

// True when every non-broadcast dim of `tv` is one of `ref`'s.
bool withinDims(const transform::IdGraph& exact, const TensorView* tv, const TensorView* ref) {
  const std::vector<ir::IterDomain*> b = dimsOf(ref);
  for (ir::IterDomain* id : dimsOf(tv)) {
    if (id->isBroadcast()) continue;
    const bool found = std::any_of(b.begin(), b.end(), [&](const ir::IterDomain* r) {
      return !r->isBroadcast() && exact.areMapped(id, r);
    });
    if (!found) return false;
  }
  return true;
}

// Why segment `seg` cannot store its output `out` (a copy in its fusion) into its input `in`
// (nullptr when the segment does not read the input) in place: rules 2 to 5 of in_place.h, or ""
// when it can.
std::string segmentProblem(const Segment& seg, const TensorView* out, const TensorView* in) {
  const KernelWork* kernel = seg.kernel();
  if (kernel == nullptr) {
    return "a " + std::string(workKindName(seg.work)) + " segment computes it";
  }
  if (kernel->scheduler != scheduler::SchedulerType::Pointwise) {
    return "a kernel of the " + std::string(scheduler::schedulerTypeName(kernel->scheduler)) +
           " scheduler computes it, whose threads read elements other threads write";
  }
  if (in == nullptr) return "";
  const ir::Fusion& f = *seg.fusion.fusion;
  const transform::IdGraph exact(f, transform::IdMappingMode::Exact);
  if (!sameDims(exact, in, out)) {
    return in->toString() + " and " + out->toString() + " have different dims in the kernel";
  }
  for (const TensorView* tv : f.allTvs()) {
    if (!withinDims(exact, tv, out)) {
      return "the kernel iterates over a dim " + out->toString() + " lacks (in " + tv->toString() +
             ")";
    }
  }
  // The exprs and tensors that depend on the input.
  std::unordered_set<const ir::Val*> tainted{in};
  for (ir::Expr* e : f.exprs()) {
    const bool reads = std::any_of(e->inputs().begin(), e->inputs().end(),
                                   [&](const ir::Val* v) { return tainted.count(v) != 0; });
    if (!reads) continue;
    if (!elementwise(e)) {
      return in->toString() + " is read through " + e->opName() + ", not elementwise";
    }
    for (ir::Val* o : e->outputs()) {
      if (auto* tv = o->dynCast<TensorView>(); tv != nullptr && !sameDims(exact, tv, out)) {
        return tv->toString() + " depends on " + in->toString() + " but has other dims than " +
               out->toString();
      }
      tainted.insert(o);
    }
  }
  // Rule 5: every reader of the input is an expr the output depends on.
  std::unordered_set<const ir::Expr*> feeding;
  std::vector<const ir::Val*> stack{out};
  while (!stack.empty()) {
    const ir::Expr* d = stack.back()->definition();
    stack.pop_back();
    if (d == nullptr || !feeding.insert(d).second) continue;
    for (const ir::Val* v : d->inputs()) stack.push_back(v);
  }
  for (const ir::Expr* use : in->uses()) {
    if (feeding.count(use) == 0) {
      return in->toString() + " is read by " + use->opName() + " for another value than " +
             out->toString() + ", which could run after the store";
    }
  }
  return "";
}

}  // namespace

std::vector<InPlaceWrite> planInPlaceWrites(const SegmentedFusion& segmented) {
  const ir::Fusion& original = segmented.original();
  std::vector<InPlaceWrite> plan;
  for (const auto& [out, in] : original.aliases()) {
    InPlaceWrite w;
    w.output = positionOf(original.outputs(), out);
    w.input = positionOf(original.inputs(), in);
    int64_t producer = -1;
    int64_t last_reader = -1;
    for (const Segment& seg : segmented.segments()) {
      const int64_t k = positionOf(seg.fusion.outputs, out);
      if (k >= 0 && producer < 0) {
        producer = seg.id;
        w.segmentOutput = k;
      }
      if (positionOf(seg.fusion.inputs, in) >= 0) last_reader = seg.id;
    }
    if (producer < 0) {
      w.why = "no segment computes it";
    } else if (original.isOutput(in)) {
      w.why = "the fusion returns " + in->toString() + " itself too";
    } else if (last_reader > producer) {
      w.why = "segment " + std::to_string(last_reader) + " reads " + in->toString() +
              " after segment " + std::to_string(producer) + " computes it";
    } else {
      const Segment& seg = segmented.segments().at(size_t(producer));
      auto it = seg.fusion.toSegment.find(in);
      const auto* seg_in =
          it == seg.fusion.toSegment.end() ? nullptr : it->second->as<TensorView>();
      w.why = segmentProblem(seg, seg.fusion.toSegment.at(out)->as<TensorView>(), seg_in);
    }
    if (w.why.empty()) {
      w.segment = producer;
    } else {
      w.segmentOutput = -1;
    }
    plan.push_back(std::move(w));
  }
  return plan;
}

}  // namespace loom::segmenter
