// SPDX-License-Identifier: Apache-2.0
// scaled_mm with per-tensor scales as a composition around one f32 matmul.
#include "loom/ops/scaled_mm.h"

#include <numeric>

#include "loom/ops/arith.h"
#include "loom/ops/matmul.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

std::string described(const TensorView* tv) {
  return tv->toString() + " " + detail::shapeString(tv);
}

void checkMatrix(const TensorView* tv, std::string_view what) {
  LOOM_CHECK(isFloat8Type(tv->dtype()), "scaled_mm: ", what, " ", described(tv), " is ",
             tv->dtype(),
             "; scaled_mm multiplies 8-bit float matrices (f8e4m3fn or f8e5m2; "
             "use matmul for other types)");
  LOOM_CHECK(detail::dims(tv).size() == 2, "scaled_mm: ", what, " ", described(tv), " must be 2-D");
}

// A one-element f32 tensor as a 0-D one (its size-1 dims squeezed).
TensorView* perTensor(TensorView* tv, std::string_view what) {
  LOOM_CHECK(tv->dtype() == DataType::Float32, "scaled_mm: ", what, " ", described(tv), " is ",
             tv->dtype(), "; it must be an f32 tensor of one element");
  const std::vector<ir::IterDomain*> d = detail::dims(tv);
  for (const ir::IterDomain* id : d) {
    const auto size = detail::constSize(id);
    LOOM_CHECK(id->isBroadcast() || (size && *size == 1), "scaled_mm: ", what, " ", described(tv),
               " is not one element; only per-tensor scales are supported (block-scaled forms, "
               "such as mxfp8 with e8m0 scales and nvfp4, are not)");
  }
  if (d.empty()) return tv;
  std::vector<int64_t> all(d.size());
  std::iota(all.begin(), all.end(), 0);
  return squeeze(tv, all, /*squeeze_expanded=*/true);
}

}  // namespace

TensorView* scaledMm(TensorView* mat1, TensorView* mat2, TensorView* scale1, TensorView* scale2,
                     TensorView* alpha, TensorView* bias, TensorView* beta, DataType dtype) {
  checkMatrix(mat1, "mat1");
  checkMatrix(mat2, "mat2");
  LOOM_CHECK(dtype == DataType::Float32 || dtype == DataType::BFloat16 ||
                 dtype == DataType::Float16 || isFloat8Type(dtype),
             "scaled_mm: the output dtype ", dtype,
             " is not supported (f32, bf16, f16, f8e4m3fn "
             "or f8e5m2)");
  TensorView* a = mul(cast(mat1, DataType::Float32), perTensor(scale1, "scale1"));
  TensorView* b = mul(cast(mat2, DataType::Float32), perTensor(scale2, "scale2"));
  TensorView* out = matmul(a, b);  // checks the contracted sizes
  if (alpha != nullptr) out = mul(out, perTensor(alpha, "alpha"));
  if (bias != nullptr) {
    LOOM_CHECK(isFloatingType(bias->dtype()), "scaled_mm: bias ", described(bias), " is ",
               bias->dtype(), "; it must be a floating tensor");
    const auto bd = detail::dims(bias);
    LOOM_CHECK(bd.size() <= 1, "scaled_mm: bias ", described(bias), " must be [n] or 0-D");
    TensorView* b32 = cast(bias, DataType::Float32);
    if (beta != nullptr) b32 = mul(b32, perTensor(beta, "beta"));
    out = add(out, b32);  // [n] broadcasts over the rows (sizes checked as add does)
  } else {
    LOOM_CHECK(beta == nullptr, "scaled_mm: beta is given without a bias");
  }
  return cast(out, dtype);
}

}  // namespace loom::ops
