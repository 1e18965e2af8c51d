// SPDX-License-Identifier: Apache-2.0
// Checked parallelization and schedule validation.
#include "loom/transform/schedule.h"

#include <algorithm>
#include <unordered_map>

#include "loom/ir/exprs.h"
#include "loom/ir/scalar.h"
#include "loom/ir/verifier.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

void parallelize(TensorView* tv, int64_t axis, ParallelType type) {
  int64_t a = tv->domain()->normalizeAxis(axis);
  IterDomain* id = tv->axis(a);
  if (type != ParallelType::Serial && type != ParallelType::Bulk) {  // a box has several
    for (int64_t k = 0; k < tv->nDims(); ++k) {
      LOOM_CHECK(k == a || tv->axis(k)->parallelType() != type, "cannot parallelize axis ", axis,
                 " of ", tv->toString(), " with ", parallelTypeName(type), ": axis ", k, " (",
                 tv->axis(k)->toString(), ") already uses it");
    }
  }
  if (type == ParallelType::Vectorize) {
    LOOM_CHECK(a == tv->nDims() - 1, "cannot vectorize axis ", axis, " of ", tv->toString(),
               ": only the innermost loop ID (axis ", tv->nDims() - 1, ") can be vectorized");
  }
  if (isDeviceDim(type)) {
    LOOM_CHECK(tv->hasDeviceMesh(), "cannot parallelize axis ", axis, " of ", tv->toString(),
               " with ", parallelTypeName(type), ": the tensor has no device mesh");
  }
  LOOM_CHECK(a >= tv->computeAtPosition() || !isDeviceDim(type), "cannot parallelize axis ",
             axis, " of ", tv->toString(), " with ", parallelTypeName(type),
             ": it is inside the compute-at position ", tv->computeAtPosition());
  id->parallelize(type);
}

namespace {

// Each thread (and block) of a parallel reduction starts its partial at the init: an init that is
// not the identity of a sum, prod or Welford would be counted once per partial.
void checkParallelReductionInit(const TensorView* tv) {
  Expr* def = tv->definition();
  if (def == nullptr) return;
  const auto* r = def->dynCast<ReductionOp>();
  const auto* w = def->dynCast<WelfordOp>();
  if ((r == nullptr || r->hasIdentityInit()) && (w == nullptr || w->hasIdentityInit())) return;
  for (IterDomain* id : tv->loop()) {
    const ParallelType p = id->parallelType();
    if (!id->isReduction() || !isThreadOrBlockDim(p)) continue;
    LOOM_CHECK(false, def->toString(), ": its init is not the identity (",
               r != nullptr ? "0 for a sum, 1 for a prod" : "(0, 0, 0) for a Welford",
               ") and ", tv->toString(), " reduces over ", id->toString(), " in parallel (",
               parallelTypeName(p), "), so each thread would count it once; reduce from the "
               "identity and combine the init after the reduction (the automatic path does)");
  }
}

// Bulk loop IDs are the box of a bulk (TMA) copy between global and shared memory, copied in loops
// of the copy's own: the tensor is the output of a TmaCopy, and no other tensor shares those loops.
void checkBulkAxes(const TensorView* tv) {
  const auto& loop = tv->loop();
  auto first = std::find_if(loop.begin(), loop.end(), [](const IterDomain* id) {
    return id->parallelType() == ParallelType::Bulk;
  });
  if (first == loop.end()) return;
  const auto k = int64_t(first - loop.begin());
  LOOM_CHECK(isTmaCopyOutput(tv), tv->toString(), ": axis ", k, " (", (*first)->toString(),
             ") is bulk, which only the output of a TMA copy can be (cache_after / cache_before "
             "with LoadStoreOpType.tma); use serial, a thread type or unroll here");
  const auto* copy = tv->definition()->as<LoadStoreOp>();
  const MemoryType from = copy->in()->memoryType();
  const MemoryType to = tv->memoryType();
  LOOM_CHECK((from == MemoryType::Global && to == MemoryType::Shared) ||
                 (from == MemoryType::Shared && to == MemoryType::Global),
             tv->toString(), ": a TMA copy with bulk axes moves a box between global and shared "
             "memory, but it copies ", copy->in()->toString(), " (", memoryTypeName(from),
             " memory) into ", memoryTypeName(to), " memory; set_memory_type(shared) on the "
             "shared side");
  LOOM_CHECK(tv->computeAtPosition() <= k && tv->maxProducerPosition() <= k, tv->toString(),
             ": bulk axis ", k, " (", (*first)->toString(), ") is in a loop shared through "
             "inlining (compute-at position ", tv->computeAtPosition(), ", producers inlined to ",
             tv->maxProducerPosition(), "); a TMA copy's box is copied in loops of its own: "
             "inline it and its producer at most up to axis ", k);
}

}  // namespace

void validateSchedule(const Fusion& fusion) {
  for (Expr* e : fusion.exprs()) {
    std::optional<std::string> problem = ir::exprProblem(e);
    LOOM_CHECK(!problem, "lowering: ", *problem);
  }
  for (TensorView* tv : fusion.allTvs()) {
    std::unordered_map<ParallelType, int64_t> used;
    for (int64_t k = 0; k < tv->nDims(); ++k) {
      IterDomain* id = tv->axis(k);
      ParallelType p = id->parallelType();
      if (p == ParallelType::Serial || p == ParallelType::Bulk) continue;
      auto [it, fresh] = used.emplace(p, k);
      LOOM_CHECK(fresh, tv->toString(), ": parallel type ", parallelTypeName(p),
                 " is used by axes ", it->second, " and ", k, " of loop domain ",
                 detail::idList(tv->loop()));
      if (p == ParallelType::Vectorize) {
        LOOM_CHECK(k == tv->nDims() - 1, tv->toString(), ": vectorized axis ", k, " (",
                   id->toString(), ") is not the innermost loop ID");
        auto e = id->extent()->constInt();
        LOOM_CHECK(e.has_value() && *e > 0 && (*e & (*e - 1)) == 0, tv->toString(),
                   ": vectorized axis ", k, " (", id->toString(),
                   ") needs a constant power-of-two extent");
        LOOM_CHECK(k >= tv->computeAtPosition(), tv->toString(), ": vectorized axis ", k,
                   " is inside the compute-at position ", tv->computeAtPosition());
      }
      if (isDeviceDim(p) && tv->hasDeviceMesh()) {
        const DeviceMesh& mesh = tv->deviceMesh();
        LOOM_CHECK(mesh.hasAxis(p), tv->toString(), ": axis ", k, " is ", parallelTypeName(p),
                   " but its device mesh ", mesh, " has no axis for it");
        auto e = id->extent()->constInt();
        LOOM_CHECK(!e.has_value() || *e == mesh.size(p), tv->toString(), ": axis ", k, " is ",
                   parallelTypeName(p), " with extent ", *e, " but the device mesh ", mesh,
                   " has ", mesh.size(p), " devices along it");
      }
    }
    for (int64_t k = 0; k < tv->computeAtPosition() && k < tv->nDims(); ++k) {
      LOOM_CHECK(!tv->axis(k)->isReduction(), tv->toString(), ": reduction axis ", k,
                 " is inside the compute-at position ", tv->computeAtPosition());
    }
    LOOM_CHECK(tv->computeAtPosition() <= tv->nDims(), tv->toString(), ": compute-at position ",
               tv->computeAtPosition(), " exceeds its ", tv->nDims(), " loop IDs");
    checkParallelReductionInit(tv);
    checkBulkAxes(tv);
  }
}

}  // namespace loom::transform
