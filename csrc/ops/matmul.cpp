// SPDX-License-Identifier: Apache-2.0
// matmul and linear: operand checks, then one MatmulOp or LinearOp whose output gets fresh IDs
// and, last, a Reduction ID of the contracted extent (nvFuser's r{k}).
#include "loom/ops/matmul.h"

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IterDomain;

std::string described(const TensorView* tv) {
  return tv->toString() + " " + detail::shapeString(tv);
}

// Every operand of `op` has one dtype, and it is f32, bf16 or f16.
void checkDtypes(std::string_view op, const std::vector<TensorView*>& operands) {
  const DataType d = operands.front()->dtype();
  for (const TensorView* tv : operands) {
    LOOM_CHECK(tv->dtype() == DataType::Float32 || tv->dtype() == DataType::BFloat16 ||
                   tv->dtype() == DataType::Float16,
               op, ": ", tv->toString(), " is ", tv->dtype(), "; ", op,
               " multiplies f32, bf16 or f16 tensors (cast it first)");
    LOOM_CHECK(tv->dtype() == d, op, ": ", operands.front()->toString(), " is ", d, " but ",
               tv->toString(), " is ", tv->dtype(), "; the operands need one dtype (cast one of ",
               "them)");
  }
}

// Constant contracted sizes must agree (symbolic ones are checked at run time).
void checkContracted(std::string_view op, const TensorView* a, const IterDomain* a_k,
                     const TensorView* b, const IterDomain* b_k, std::string_view b_where) {
  auto x = detail::constSize(a_k);
  auto y = detail::constSize(b_k);
  LOOM_CHECK(!x || !y || *x == *y, op, ": the contracted sizes differ: ", described(a), " has ", *x,
             " in its last dim, ", described(b), " has ", *y, " in its ", b_where);
}

// The output's trailing r{k}: the contracted dim as a Reduction ID of its user-visible extent,
// read from the operand whose k is not a broadcast (a's when both or neither are).
IterDomain* contractedId(const IterDomain* a_k, const IterDomain* b_k) {
  const IterDomain* k = a_k->isBroadcast() && !b_k->isBroadcast() ? b_k : a_k;
  return ir::IrBuilder::create<IterDomain>(k->start(), k->logicalExtent(),
                                           ir::IterType::Reduction);
}

// nvFuser's linear with a 3-D weight [g, n, k] (one [n, k] weight per leading index, the form
// its multidevice tests shard on g): out [g, ..., n] = x @ w[i]^T + bias[i] for each i. Built as
// the one linear with the stacked weight [g * n, k] (the same products, rounded once as a linear
// is) whose [..., g * n] output is viewed as [..., g, n] with g moved first; a sharded g runs as
// a sharded dim through the reshapes.
TensorView* stackedLinear(TensorView* x, TensorView* w, TensorView* bias) {
  const std::vector<IterDomain*> xd = detail::dims(x);
  const std::vector<IterDomain*> wd = detail::dims(w);
  LOOM_CHECK(!xd.empty(), "linear: the input ", described(x), " needs at least one dim");
  if (bias != nullptr) {
    LOOM_CHECK(detail::dims(bias).size() == 2, "linear: with the 3-D weight ", described(w),
               " ([groups, out_features, in_features]) the bias ", described(bias),
               " must be [groups, out_features]");
  }
  TensorView* flat_w = reshape(w, SizeList({Size(-1), Size(wd[2]->extent())}));
  TensorView* flat_b = bias == nullptr ? nullptr : reshape(bias, SizeList({Size(-1)}));
  TensorView* y = linear(x, flat_w, flat_b);  // [..., g * n]
  std::vector<Size> sizes;
  for (size_t i = 0; i + 1 < xd.size(); ++i) sizes.emplace_back(xd[i]->extent());
  sizes.emplace_back(wd[0]->extent());
  sizes.emplace_back(wd[1]->extent());
  TensorView* split = reshape(y, SizeList(sizes));  // [..., g, n]
  const auto batch = int64_t(xd.size()) - 1;
  std::vector<int64_t> order{batch};
  for (int64_t i = 0; i < batch; ++i) order.push_back(i);
  order.push_back(batch + 1);
  return permute(split, order);
}

}  // namespace

TensorView* matmul(TensorView* a, TensorView* b) {
  LOOM_CHECK(a != nullptr && b != nullptr, "matmul: an operand is null");
  const std::vector<IterDomain*> ad = detail::dims(a);
  const std::vector<IterDomain*> bd = detail::dims(b);
  LOOM_CHECK(!ad.empty() && !bd.empty(), "matmul: both operands need at least one dim, got ",
             described(a), " and ", described(b), " (a 0-D operand is a scalar: use mul)");
  checkDtypes("matmul", {a, b});
  const bool a_vector = ad.size() == 1;
  const bool b_vector = bd.size() == 1;
  checkContracted("matmul", a, ad.back(), b, b_vector ? bd.back() : bd[bd.size() - 2],
                  b_vector ? "only dim" : "second-to-last dim");
  std::vector<IterDomain*> a_batch, b_batch;
  if (!a_vector) a_batch.assign(ad.begin(), ad.end() - 2);
  if (!b_vector) b_batch.assign(bd.begin(), bd.end() - 2);
  std::vector<IterDomain*> out_ids =
      detail::broadcastOutputIds({a, b}, {a_batch, b_batch}, "matmul");
  if (!a_vector) out_ids.push_back(detail::freshId(ad[ad.size() - 2]));
  if (!b_vector) out_ids.push_back(detail::freshId(bd.back()));
  out_ids.push_back(contractedId(ad.back(), b_vector ? bd.back() : bd[bd.size() - 2]));
  TensorView* out = detail::newTensor(std::move(out_ids), a->dtype());
  ir::IrBuilder::create<ir::MatmulOp>(out, a, b);
  return out;
}

TensorView* linear(TensorView* x, TensorView* w, TensorView* bias) {
  LOOM_CHECK(x != nullptr && w != nullptr, "linear: the input or the weight is null");
  const std::vector<IterDomain*> xd = detail::dims(x);
  const std::vector<IterDomain*> wd = detail::dims(w);
  LOOM_CHECK(!xd.empty(), "linear: the input ", described(x), " needs at least one dim");
  if (wd.size() == 3) return stackedLinear(x, w, bias);
  LOOM_CHECK(wd.size() == 1 || wd.size() == 2, "linear: the weight ", described(w),
             " must be [out_features, in_features], [in_features] or [groups, out_features, "
             "in_features]");
  std::vector<TensorView*> operands{x, w};
  if (bias != nullptr) {
    const std::vector<IterDomain*> bd = detail::dims(bias);
    LOOM_CHECK(bd.size() <= 1 && (bd.empty() || wd.size() == 2), "linear: the bias ",
               described(bias), " must be ",
               wd.size() == 2 ? "[out_features] or 0-D" : "0-D for the 1-D weight ",
               wd.size() == 2 ? "" : described(w));
    if (bd.size() == 1) {
      auto n = detail::constSize(wd[0]);
      auto got = detail::constSize(bd[0]);
      LOOM_CHECK(!n || !got || *n == *got || *got == 1, "linear: the bias ", described(bias),
                 " must have one element per output feature (", *n, ", the rows of ", described(w),
                 ")");
    }
    operands.push_back(bias);
  }
  checkDtypes("linear", operands);
  checkContracted("linear", x, xd.back(), w, wd.back(),
                  "last dim (w is [out_features, "
                  "in_features])");
  std::vector<IterDomain*> out_ids;
  for (size_t i = 0; i + 1 < xd.size(); ++i) out_ids.push_back(detail::freshId(xd[i]));
  if (wd.size() == 2) out_ids.push_back(detail::freshId(wd[0]));
  out_ids.push_back(contractedId(xd.back(), wd.back()));
  TensorView* out = detail::newTensor(std::move(out_ids), x->dtype());
  ir::IrBuilder::create<ir::LinearOp>(out, x, w, bias);
  return out;
}

}  // namespace loom::ops
