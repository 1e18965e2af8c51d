// SPDX-License-Identifier: Apache-2.0
// rFactor of a matmul or linear output (contraction_rfactor.h): built from the ops themselves
// (operand views, a batched matmul, a sum), so every layer that runs those runs it.
#include "loom/ops/contraction_rfactor.h"

#include <algorithm>
#include <optional>
#include <string>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/transforms.h"
#include "loom/ops/arith.h"
#include "loom/ops/matmul.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IrBuilder;
using ir::IterDomain;

// The split of out's r{k} and which of its pieces is rfactored, checked to be the one form
// rFactorContraction builds.
struct KSplit {
  int64_t outer = 0;           // the outer piece's extent (splitDim's block count)
  bool rfactor_outer = false;  // the rfactored (contracted) piece is the outer one
  ir::ParallelType kept_type = ir::ParallelType::Serial;
};

KSplit checkForm(const TensorView* out, const std::vector<int64_t>& axes) {
  const ir::Expr* def = out->definition();
  const std::string what =
      "rfactor of " + out->toString() + " (the output of '" + def->opName() + "')";
  const auto& logical = out->logical();
  IterDomain* rk = logical.back();
  LOOM_ASSERT(rk->isReduction(), what, ": the contraction's output does not end with r{k}");
  LOOM_CHECK(!out->domain()->hasRoot() && !out->domain()->hasAllocation(), what,
             ": it has a root or an allocation domain; rfactor it before setting an allocation");
  LOOM_CHECK(axes.size() == 1, what, ": give one axis, a piece of the split contracted r{k} (",
             rk->toString(), "); ", axes.size(), " given");
  const auto& loop = out->loop();
  // The loop must be the logical domain with r{k} replaced by the two pieces of one split.
  const std::string form =
      ": rfactor of a matmul or linear output takes a loop domain that is "
      "its logical one with the contracted r{k} split once "
      "(split(-1, f) or split(-1, d, inner_split=False)) and nothing else "
      "transformed or parallelized; schedule the other dims after rfactor";
  LOOM_CHECK(loop.size() == logical.size() + 1, what, form, " (loop has ", loop.size(),
             " IDs, logical ", logical.size(), ")");
  for (size_t i = 0; i + 1 < logical.size(); ++i) {
    LOOM_CHECK(loop[i] == logical[i] && loop[i]->parallelType() == ir::ParallelType::Serial, what,
               form, " (loop ID ", i, " is ", loop[i]->toString(), ")");
  }
  IterDomain* o = loop[loop.size() - 2];
  IterDomain* in = loop.back();
  const auto* split = o->definition() == nullptr ? nullptr : o->definition()->dynCast<ir::Split>();
  LOOM_CHECK(split != nullptr && split->in() == rk && split->outer() == o && split->inner() == in,
             what, form, " (the last two loop IDs are not the two pieces of a split of ",
             rk->toString(), ")");
  int64_t n = out->domain()->normalizeAxis(axes[0]);
  LOOM_CHECK(n == int64_t(loop.size()) - 1 || n == int64_t(loop.size()) - 2, what, ": axis ",
             axes[0], " (", loop[size_t(n)]->toString(),
             ") is not a piece of the split contracted r{k}");
  KSplit ks;
  ks.rfactor_outer = n == int64_t(loop.size()) - 2;
  IterDomain* kept = ks.rfactor_outer ? in : o;
  IterDomain* contracted = ks.rfactor_outer ? o : in;
  LOOM_CHECK(contracted->parallelType() == ir::ParallelType::Serial, what, ": the rfactored piece ",
             contracted->toString(),
             " is parallelized; each device's partial product contracts "
             "its block of k locally, so only the kept piece may carry a DID");
  LOOM_CHECK(kept->parallelType() == ir::ParallelType::Serial || kept->isDeviceDim(), what,
             ": the kept piece ", kept->toString(),
             " is parallelized on a thread type; only a "
             "DID (the sum across devices) is taken here");
  ks.kept_type = kept->parallelType();
  const std::optional<int64_t> f = split->factor()->constInt();
  if (!split->innerSplit()) {
    LOOM_CHECK(f.has_value(), what, ": the split of ", rk->toString(),
               " has a symbolic factor; the partial products need a constant number of blocks");
    ks.outer = *f;
  } else {
    const std::optional<int64_t> k = rk->extent()->constInt();
    LOOM_CHECK(f.has_value() && k.has_value() && *f > 0 && *k % *f == 0, what, ": the inner split ",
               "of ", rk->toString(), " by ", split->factor()->toString(),
               " needs a constant k "
               "that the factor divides; split it with inner_split=False (a constant number of "
               "blocks) instead");
    ks.outer = *k / *f;
  }
  LOOM_CHECK(ks.outer > 0, what, ": the split of ", rk->toString(), " has ", ks.outer, " blocks");
  return ks;
}

// `x` with its contracted dim `k` split into [outer, inner] and permuted so that the kept piece
// leads and the contracted piece sits at `contracted_at` of the rest (rest keeps its order).
TensorView* blockView(TensorView* x, int64_t k, const KSplit& ks, bool contracted_last) {
  TensorView* split = splitDim(x, k, ks.outer);  // [.., outer, inner, ..]
  const int64_t r = int64_t(detail::dims(split).size());
  const int64_t kept = ks.rfactor_outer ? k + 1 : k;
  const int64_t contracted = ks.rfactor_outer ? k : k + 1;
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < r; ++i) {
    if (i != kept && i != contracted) rest.push_back(i);
  }
  std::vector<int64_t> perm{kept};
  if (contracted_last) {
    perm.insert(perm.end(), rest.begin(), rest.end());
    perm.push_back(contracted);
  } else {  // [kept, batch.., contracted, n]
    perm.insert(perm.end(), rest.begin(), rest.end() - 1);
    perm.push_back(contracted);
    perm.push_back(rest.back());
  }
  return permute(split, perm);
}

// `tv` with `n` broadcast dims after its leading dim (batch dims align from the right).
TensorView* padBatch(TensorView* tv, int64_t n) {
  if (n == 0) return tv;
  std::vector<bool> bcast(detail::dims(tv).size() + size_t(n), false);
  for (int64_t i = 1; i <= n; ++i) bcast[size_t(i)] = true;
  return broadcast(tv, bcast);
}

void meshLike(TensorView* tv, const TensorView* like) {
  if (like->hasDeviceMesh() && !tv->hasDeviceMesh()) tv->setDeviceMesh(like->deviceMesh());
}

}  // namespace

bool isContractionOutput(const TensorView* tv) {
  const ir::Expr* def = tv->definition();
  return def != nullptr && (def->isA<ir::MatmulOp>() || def->isA<ir::LinearOp>());
}

TensorView* rFactorContraction(TensorView* out, const std::vector<int64_t>& axes) {
  LOOM_CHECK(isContractionOutput(out), "rfactor of ", out->toString(),
             ": it is not the output of a matmul or linear");
  ir::Expr* def = out->definition();
  ir::FusionGuard guard(out->fusion());
  const KSplit ks = checkForm(out, axes);
  const bool linear = def->isA<ir::LinearOp>();
  TensorView* a = linear ? def->as<ir::LinearOp>()->x() : def->as<ir::MatmulOp>()->a();
  TensorView* b = linear ? def->as<ir::LinearOp>()->w() : def->as<ir::MatmulOp>()->b();
  const int64_t ra = int64_t(detail::dims(a).size());
  const int64_t rb = int64_t(detail::dims(b).size());
  for (const TensorView* tv : {a, b}) {
    LOOM_CHECK(int64_t(detail::dims(tv).size()) >= 2 && (!linear || rb == 2), "rfactor of ",
               out->toString(), ": its operand ", tv->toString(), " has ", detail::dims(tv).size(),
               " dims; the partial products over blocks of k are "
               "batched products of operands with 2 dims or more (linear: a 2-D weight); "
               "unsqueeze it first");
  }
  // a [kept, batch_a.., m, c]; b [kept, batch_b.., c, n] (linear's w [n, k] read transposed:
  // blockView puts its last dim, n, after the contracted piece).
  TensorView* ap = blockView(a, ra - 1, ks, /*contracted_last=*/true);
  TensorView* bp = linear ? blockView(b, 1, ks, /*contracted_last=*/false)
                          : blockView(b, rb - 2, ks, /*contracted_last=*/false);
  const int64_t batch_a = ra - 2, batch_b = linear ? 0 : rb - 2;
  ap = padBatch(ap, std::max(batch_a, batch_b) - batch_a);
  bp = padBatch(bp, std::max(batch_a, batch_b) - batch_b);
  TensorView* partial = matmul(ap, bp);  // [kept, out.., r{c}]
  const int64_t rank = int64_t(detail::dims(partial).size());
  // The kept piece summed last, as nvFuser's out [.., m, n, r{kept}].
  std::vector<int64_t> to_last;
  for (int64_t i = 1; i < rank; ++i) to_last.push_back(i);
  to_last.push_back(0);
  TensorView* moved = permute(partial, to_last);
  TensorView* result = nullptr;
  const bool bias = linear && def->as<ir::LinearOp>()->hasBias();
  if (out->dtype() == DataType::Float32 && !bias) {
    // out is the sum itself: [.., m, n, r{kept}].
    std::vector<IterDomain*> ids;
    const auto dims = detail::dims(moved);
    for (size_t i = 0; i + 1 < dims.size(); ++i) ids.push_back(detail::freshId(dims[i]));
    ids.push_back(IrBuilder::create<IterDomain>(dims.back()->start(), dims.back()->logicalExtent(),
                                                ir::IterType::Reduction));
    out->setDomain(IrBuilder::create<ir::TensorDomain>(ids));
    IrBuilder::create<ir::ReductionOp>(ir::ReductionOpType::Sum,
                                       IrBuilder::constant(ir::ScalarValue(0.0), DataType::Float32),
                                       out, moved);
  } else {
    result = sum(moved, {-1});  // f32
    if (bias) {
      TensorView* bias_acc = cast(def->as<ir::LinearOp>()->bias(), result->dtype());
      std::vector<bool> bcast(detail::dims(result).size(), true);
      bcast.back() = false;
      result = add(result, broadcast(bias_acc, bcast));
    }
    // out is the rounding of the sum: [.., m, n].
    out->setDomain(IrBuilder::create<ir::TensorDomain>(detail::freshIds(detail::dims(result))));
    if (result->dtype() == out->dtype()) {
      IrBuilder::create<ir::LoadStoreOp>(ir::LoadStoreOpType::Set, out, result);
    } else {
      IrBuilder::create<ir::UnaryOp>(ir::UnaryOpType::Cast, out, result);
    }
  }
  // The partial on out's mesh (the kept piece's DID goes on it); the tensors between take their
  // shardings from propagation, as tensors the user leaves unannotated.
  meshLike(partial, out);
  // nvFuser's loop order for the partial: [out.., kept, r{c}].
  std::vector<int64_t> order;
  for (int64_t i = 1; i < rank; ++i) order.push_back(i);
  order.push_back(0);
  order.push_back(rank);
  partial->reorder(order);
  if (ks.kept_type != ir::ParallelType::Serial) partial->axis(rank - 1)->parallelize(ks.kept_type);
  return partial;
}

}  // namespace loom::ops
