// SPDX-License-Identifier: Apache-2.0
// Sharded contractions (contraction.h): a matmul or linear over a sharded contracted dim is a sum
// over it, so it decomposes as decompose_reshardings decomposes a sum over a sharded dim.
#include "multidevice/contraction.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "loom/ir/exprs.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/arith.h"
#include "loom/ops/matmul.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "loom/support/error.h"

namespace loom::multidevice {

namespace {

bool isContraction(const ir::Expr* e) { return e->isA<ir::MatmulOp>() || e->isA<ir::LinearOp>(); }

int64_t rankOf(const ir::TensorView* tv) {
  return int64_t(ir::TensorDomain::noReductions(tv->logical()).size());
}

// The two multiplied operands: (a, b) of a matmul, (x, w) of a linear.
std::pair<ir::TensorView*, ir::TensorView*> operandsOf(const ir::Expr* e) {
  if (const auto* mm = e->dynCast<ir::MatmulOp>()) return {mm->a(), mm->b()};
  const auto* lin = e->as<ir::LinearOp>();
  return {lin->x(), lin->w()};
}

// The position of `tv`'s contracted dim among its logical dims (reductions skipped): the last,
// except for a matmul's b of 2 dims or more (its second-to-last).
int64_t contractedDim(const ir::Expr* e, const ir::TensorView* tv, bool second) {
  const int64_t r = rankOf(tv);
  return second && e->isA<ir::MatmulOp>() && r >= 2 ? r - 2 : r - 1;
}

// The sharded axis (over several devices) of `tv` along its contracted dim, if any.
std::optional<ShardedAxis> contractedAxis(const ir::Expr* e, const ir::TensorView* tv, bool second) {
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(tv->logical());
  if (ids.empty()) return std::nullopt;
  ir::IterDomain* k = ids.at(size_t(contractedDim(e, tv, second)));
  for (const ShardedAxis& a : shardedAxes(tv)) {
    if (a.devices > 1 && a.logical == k) return a;
  }
  return std::nullopt;
}

// What the user can write instead, for the forms below.
std::string where(const ir::Expr* e) { return "'" + e->toString() + "'"; }

}  // namespace

std::optional<ShardedAxis> partialContractionAxis(const ir::TensorView* tv) {
  const ir::Expr* def = tv->definition();
  if (def == nullptr || !isContraction(def) || tv->logical().empty()) return std::nullopt;
  ir::IterDomain* rk = tv->logical().back();
  std::optional<ShardedAxis> found;
  for (ir::IterDomain* id : tv->loop()) {
    if (!id->isDeviceDim() || !id->isReduction()) continue;
    const std::string_view name = ir::parallelTypeName(id->parallelType());
    LOOM_CHECK(tv->hasDeviceMesh() && tv->deviceMesh().hasAxis(id->parallelType()),
               tv->toString(), ": its contracted r{k} (", rk->toString(), ") is ", name,
               " but the tensor has no device mesh with that axis (setDeviceMesh)");
    const int64_t devices = tv->deviceMesh().size(id->parallelType());
    const auto* split = id->definition() == nullptr ? nullptr : id->definition()->dynCast<ir::Split>();
    const bool outer_piece = split != nullptr && split->in() == rk && split->outer() == id;
    std::optional<int64_t> pieces;
    if (outer_piece && !split->innerSplit()) pieces = split->factor()->constInt();
    if (outer_piece && split->innerSplit()) {
      auto n = rk->extent()->constInt();
      auto f = split->factor()->constInt();
      if (n && f && *f > 0 && *n % *f == 0) pieces = *n / *f;
    }
    LOOM_CHECK(pieces.has_value() && *pieces == devices, tv->toString(), ": ", name, " loop ID ",
               id->toString(), " marks the contracted r{k} (", rk->toString(), ") of '",
               def->toString(), "' as summed across devices, which Loom runs when it is the "
               "outer piece of outer_split(", rk->toString(), ", ", devices, ") (split(-1, ",
               devices, ", inner_split=False)): each device then holds the partial product of "
               "one block of k");
    if (devices > 1) found = ShardedAxis{id->parallelType(), id, rk, devices};
  }
  return found;
}

namespace {

// The mesh axis and size the contraction is sharded over, checked to be a form decomposition
// runs; nullopt when neither operand's contracted dim is sharded over several devices.
std::optional<ShardedAxis> shardedContraction(const ir::Expr* e) {
  if (!isContraction(e)) return std::nullopt;
  auto [a, b] = operandsOf(e);
  const std::optional<ShardedAxis> ka = contractedAxis(e, a, false);
  const std::optional<ShardedAxis> kb = contractedAxis(e, b, true);
  const auto* out = e->output(0)->as<ir::TensorView>();
  const std::optional<ShardedAxis> kout = partialContractionAxis(out);
  if (!ka && !kb && !kout) return std::nullopt;
  for (const ir::TensorView* tv : {a, b}) {
    LOOM_CHECK(rankOf(tv) >= 2, where(e), " contracts a dim sharded over several devices, and ",
               tv->toString(), " has one dim: Loom splits the contraction into per-device "
               "partial products of operands with 2 dims or more; unsqueeze ", tv->toString(),
               " to [1, k] (or [k, 1] as matmul's second operand) first");
  }
  LOOM_CHECK(a->deviceMesh() == b->deviceMesh(), where(e), " contracts a sharded dim of operands on "
             "different device meshes (", a->toString(), " on ", a->deviceMesh(), ", ",
             b->toString(), " on ", b->deviceMesh(), "); move one onto the other's mesh with a "
             "set first");
  if (ka && kb) {
    LOOM_CHECK(ka->type == kb->type && ka->devices == kb->devices, where(e), " contracts ",
               a->toString(), "'s dim sharded on ", ir::parallelTypeName(ka->type), " over ",
               ka->devices, " devices and ", b->toString(), "'s sharded on ",
               ir::parallelTypeName(kb->type), " over ", kb->devices,
               " devices; shard both contracted dims on one mesh axis (outer_split(dim, d), "
               "parallelized alike)");
  }
  if (kout) {
    // nvFuser's row-parallel form marks out's r{k} on the operands' mesh axis; operands that
    // are not sharded on k are scattered (decomposeShardedContraction).
    for (const std::optional<ShardedAxis>& k : {ka, kb}) {
      LOOM_CHECK(!k || (k->type == kout->type && k->devices == kout->devices), where(e),
                 ": its output ", out->toString(), " sums the contracted r{k} (",
                 kout->logical->toString(), ") across ", ir::parallelTypeName(kout->type),
                 " but an operand's contracted dim is sharded on ", ir::parallelTypeName(k->type),
                 "; shard the operands' contracted dims on the mesh axis of the output's r{k}");
    }
    LOOM_CHECK(out->deviceMesh() == a->deviceMesh(), where(e), ": its output ", out->toString(),
               " on device mesh ", out->deviceMesh(), " sums the contracted dim across devices "
               "but ", a->toString(), " is on ", a->deviceMesh(),
               "; put the operands and the output on one mesh");
  }
  if (ka) return ka;
  return kb ? kb : kout;
}

// `tv` copied (a set) and sharded on `a.type` along its dim `dim` too: the copy of a replicated
// operand is a Scatter, each device keeping its block locally.
ir::TensorView* scatteredCopy(ir::TensorView* tv, int64_t dim, const ShardedAxis& a) {
  ir::TensorView* copy = ops::set(tv);
  shardLike(copy, tv, /*ref_is_producer=*/true);
  ir::IterDomain* id = ir::TensorDomain::noReductions(copy->logical()).at(size_t(dim));
  const auto& loop = copy->loop();
  const int64_t at = int64_t(std::find(loop.begin(), loop.end(), id) - loop.begin());
  LOOM_ASSERT(at < int64_t(loop.size()), "the copy of ", tv->toString(), " has its dim ", dim,
              " transformed");
  copy->outerSplit(at, a.devices);
  copy->axis(at)->parallelize(a.type);
  // DID loop IDs outermost, as every sharded tensor has them.
  std::vector<int64_t> dids, rest;
  for (int64_t i = 0; i < copy->nDims(); ++i) {
    (copy->axis(i)->isDeviceDim() ? dids : rest).push_back(i);
  }
  dids.insert(dids.end(), rest.begin(), rest.end());
  copy->reorder(dids);
  return copy;
}

// `op` viewed as [d, batch.., rows, cols/d] (contracted last) or [d, batch.., rows/d, cols]
// (contracted second-to-last): the devices' blocks of the contracted dim `k` as a leading batch
// dim, sharded on the mesh axis (one block per device). `transpose` swaps the last two dims
// too (linear's weight [n, k] read as matmul's [k, n]).
ir::TensorView* devicesLeading(ir::TensorView* op, int64_t k, int64_t devices, bool transpose) {
  ir::TensorView* split = ops::splitDim(op, k, devices);  // [.., d, k/d, ..]
  shardLike(split, op, /*ref_is_producer=*/true);
  const int64_t r = rankOf(split);
  std::vector<int64_t> perm{k};
  for (int64_t i = 0; i < r; ++i) {
    if (i != k) perm.push_back(i);
  }
  if (transpose) std::swap(perm[size_t(r - 2)], perm[size_t(r - 1)]);
  ir::TensorView* out = ops::permute(split, perm);
  shardLike(out, split, /*ref_is_producer=*/true);
  return out;
}

// `tv` with `n` broadcast dims inserted after its leading devices dim (batch dims align from
// the right, so both operands need the devices dim at the same position).
ir::TensorView* padBatch(ir::TensorView* tv, int64_t n) {
  if (n == 0) return tv;
  std::vector<bool> bcast(size_t(rankOf(tv) + n), false);
  for (int64_t i = 1; i <= n; ++i) bcast[size_t(i)] = true;
  ir::TensorView* out = ops::broadcast(tv, bcast);
  shardLike(out, tv, /*ref_is_producer=*/true);
  return out;
}

// Gives `tv` (made here) `like`'s mesh and DID splits at the same positions.
ir::TensorView* shardedLike(ir::TensorView* tv, const ir::TensorView* like) {
  shardAtSamePositions(tv, like);
  return tv;
}

}  // namespace

std::string contractionReason(const ir::Expr* e) {
  const std::optional<ShardedAxis> a = shardedContraction(e);
  if (!a) return "";
  auto [x, w] = operandsOf(e);
  std::ostringstream os;
  os << where(e) << " contracts the dim of " << x->toString() << " and " << w->toString()
     << " that is sharded on " << ir::parallelTypeName(a->type) << " over " << a->devices
     << " devices: each device computes a partial product of its block, and that needs an "
        "Allreduce of the partial products (a ReduceScatter when the output is sharded on "
     << ir::parallelTypeName(a->type) << " along another dim)";
  return os.str();
}

std::vector<ir::Expr*> decomposeShardedContraction(ir::Fusion& fusion, ir::Expr* e) {
  const std::optional<ShardedAxis> axis = shardedContraction(e);
  LOOM_ASSERT(axis.has_value(), "decomposeShardedContraction of ", e->toString(),
              ", whose contraction is not sharded");
  auto [a, b] = operandsOf(e);
  const bool linear = e->isA<ir::LinearOp>();
  auto* out = e->output(0)->as<ir::TensorView>();
  // Each operand sharded along its contracted dim (a Scatter where it is not yet).
  const int64_t ka = contractedDim(e, a, false);
  const int64_t kb = linear ? 1 : contractedDim(e, b, true);
  if (!contractedAxis(e, a, false)) a = scatteredCopy(a, ka, *axis);
  if (!contractedAxis(e, b, true)) b = scatteredCopy(b, kb, *axis);
  const int64_t d = axis->devices;
  ir::TensorView* ap = devicesLeading(a, ka, d, false);   // [d, batch_a.., m, k/d]
  ir::TensorView* bp = devicesLeading(b, kb, d, linear);  // [d, batch_b.., k/d, n]
  const int64_t batch_a = rankOf(ap) - 3, batch_b = rankOf(bp) - 3;
  ap = padBatch(ap, std::max(batch_a, batch_b) - batch_a);
  bp = padBatch(bp, std::max(batch_a, batch_b) - batch_b);
  ir::TensorView* partial = ops::matmul(ap, bp);  // [d, out..]
  shardLike(partial, ap, /*ref_is_producer=*/true);
  // The partials' sum over the devices (the communication); bf16 and f16 in f32.
  ir::TensorView* result = ops::sum(partial, {0});
  shardedLike(result, out);
  std::vector<ir::Expr*> made;
  if (linear && e->as<ir::LinearOp>()->hasBias()) {
    ir::TensorView* bias = e->as<ir::LinearOp>()->bias();
    ir::TensorView* bias_acc = ops::cast(bias, result->dtype());
    if (bias_acc != bias) shardLike(bias_acc, bias, /*ref_is_producer=*/true);
    std::vector<bool> bcast(size_t(rankOf(result)), true);
    bcast.back() = false;
    ir::TensorView* row = ops::broadcast(bias_acc, bcast);
    shardLike(row, bias_acc, /*ref_is_producer=*/true);
    result = ops::add(result, row);
    shardedLike(result, out);
    made.push_back(result->definition());
  }
  if (result->dtype() != out->dtype()) result = shardedLike(ops::cast(result, out->dtype()), out);
  if (out->isFusionOutput()) fusion.replaceOutput(out, result);
  fusion.replaceAllUses(out, result);
  return made;
}

}  // namespace loom::multidevice
