// SPDX-License-Identifier: Apache-2.0
// Random numbers (RngOp) and the composites built on them: bernoulli and dropout.
#include "loom/ops/random.h"

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ops/arith.h"
#include "loom/ops/scalar_arith.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::RngOpType;

// Seed and offset: integers (their 64-bit patterns), never a float that would be truncated.
Scalar* keyOperand(const Operand& v, std::string_view op, std::string_view what) {
  LOOM_CHECK(v.isScalar() && isIntegralType(v.val()->dtype()), op, ": ", what,
             " must be an integer or an integer Scalar, got ", v.val()->toString(), " (",
             v.val()->dtype(), ")");
  return detail::scalarOperand(v.val(), DataType::Int64, op, what);
}

TensorView* rng(RngOpType type, const SizeList& shape, Operand p0, Operand p1, Operand seed,
                Operand offset, DataType dtype) {
  const std::string op(ir::rngOpTypeName(type));
  const bool normal = type == RngOpType::Normal;
  LOOM_CHECK(isFloatingType(dtype) && !isFloat8Type(dtype), op, ": dtype ", dtype,
             " is not supported (a floating type is: f64, f32, f16, bf16; torch draws no 8-bit "
             "floats either: draw f32 and cast). Random distributions only create floating "
             "point types");
  Scalar* a = detail::scalarOperand(p0.val(), DataType::Float64, op, normal ? "mean" : "low");
  Scalar* b = detail::scalarOperand(p1.val(), DataType::Float64, op, normal ? "std" : "high");
  auto ca = a->constDouble();
  auto cb = b->constDouble();
  if (normal && cb) LOOM_CHECK(*cb >= 0.0, "normal: std must be >= 0, got ", *cb);
  if (!normal && ca && cb) {
    LOOM_CHECK(*ca <= *cb, "uniform: low must be <= high, got low=", *ca, " and high=", *cb);
  }
  Scalar* s = keyOperand(seed, op, "seed");
  Scalar* o = keyOperand(offset, op, "offset");
  std::vector<ir::IterDomain*> ids;
  for (size_t d = 0; d < shape.size(); ++d) ids.push_back(detail::sizedId(shape[d], op, d, &shape));
  TensorView* out = detail::newTensor(std::move(ids), dtype);
  ir::IrBuilder::create<ir::RngOp>(out, type, s, o, a, b);
  return out;
}

// The sizes users see of `like` (an expanded dim at its expanded size).
SizeList sizesOf(const TensorView* like) {
  std::vector<Size> sizes;
  for (const ir::IterDomain* id : detail::dims(like)) {
    if (id->isBroadcast() && !id->hasExpandedExtent()) {
      sizes.emplace_back(int64_t(1));
    } else {
      sizes.emplace_back(id->logicalExtent());
    }
  }
  return SizeList(std::move(sizes));
}

}  // namespace

TensorView* uniform(const SizeList& shape, Operand low, Operand high, Operand seed, Operand offset,
                    DataType dtype) {
  return rng(RngOpType::Uniform, shape, low, high, seed, offset, dtype);
}

TensorView* normal(const SizeList& shape, Operand mean, Operand std, Operand seed, Operand offset,
                   DataType dtype) {
  return rng(RngOpType::Normal, shape, mean, std, seed, offset, dtype);
}

TensorView* rand(const SizeList& shape, Operand seed, Operand offset, DataType dtype) {
  return uniform(shape, 0.0, 1.0, seed, offset, dtype);
}

TensorView* randn(const SizeList& shape, Operand seed, Operand offset, DataType dtype) {
  return normal(shape, 0.0, 1.0, seed, offset, dtype);
}

TensorView* randLike(TensorView* like, Operand seed, Operand offset) {
  LOOM_CHECK(isFloatingType(like->dtype()), "rand_like: ", like->toString(), " is ", like->dtype(),
             "; a floating tensor is needed");
  return rand(sizesOf(like), seed, offset, like->dtype());
}

TensorView* randnLike(TensorView* like, Operand seed, Operand offset) {
  LOOM_CHECK(isFloatingType(like->dtype()), "randn_like: ", like->toString(), " is ", like->dtype(),
             "; a floating tensor is needed");
  return randn(sizesOf(like), seed, offset, like->dtype());
}

TensorView* bernoulli(TensorView* p, Operand seed, Operand offset) {
  LOOM_CHECK(isFloatingType(p->dtype()), "bernoulli: the probabilities ", p->toString(), " are ",
             p->dtype(), "; a floating tensor is needed");
  TensorView* r = rand(sizesOf(p), seed, offset, DataType::Float32);
  return cast(lt(r, p), p->dtype());
}

DropoutResult dropout(TensorView* x, Operand p, Operand seed, Operand offset) {
  LOOM_CHECK(isFloatingType(x->dtype()), "dropout: ", x->toString(), " is ", x->dtype(),
             "; a floating tensor is needed");
  Scalar* prob = detail::scalarOperand(p.val(), DataType::Float64, "dropout", "p");
  if (auto c = prob->constDouble()) {
    LOOM_CHECK(*c >= 0.0 && *c <= 1.0, "dropout: p must be in [0, 1], got ", *c);
  }
  Scalar* keep = scalarBinary(ir::BinaryOpType::Sub, 1.0, prob);
  TensorView* r = rand(sizesOf(x), seed, offset, DataType::Float32);
  TensorView* mask = lt(r, keep);
  // Kept elements scale by 1 / keep; where() leaves dropped ones exactly 0 (also for p = 1,
  // where the scale is infinite and nothing is kept).
  const DataType compute = x->dtype() == DataType::Float64 ? DataType::Float64 : DataType::Float32;
  TensorView* xc = x->dtype() == compute ? x : cast(x, compute);
  TensorView* scaled = mul(xc, scalarBinary(ir::BinaryOpType::Div, 1.0, keep));
  TensorView* out = where(mask, scaled, 0.0);
  return {out->dtype() == x->dtype() ? out : cast(out, x->dtype()), mask};
}

}  // namespace loom::ops
