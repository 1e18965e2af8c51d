// SPDX-License-Identifier: Apache-2.0
// Which pointwise consumers of a matmul or linear its GEMM applies in its epilogue (cuBLASLt's
// CUBLASLT_EPILOGUE_* and D type; the host GEMM does the same), so that they join the matmul
// segment instead of running as a Loom kernel of their own.
//
// The chain after the product `mm` (operands of dtype T), each link taken only when the tensor
// before it has no other use (and is no fusion output):
//
//   mm                                  f32 accumulation (+ bias)
//   relu(mm) | gelu_tanh(mm)            T = f32 (or a relu UnaryOp on a bf16 / f16 product)
//   cast(gelu_tanh(cast(mm, f32)), T)   T = bf16 / f16: read in f32, the activation, cast back
//   cast(relu(cast(mm, f32)), T)        (all three or none)
//
// relu is the UnaryOp; gelu_tanh the composite ops::gelu(x, Tanh) builds (operands of each add
// and mul in either order, its constants equal as f32); the erf gelu is not taken. The GEMM
// writes T: an f32 result of a bf16 / f16 product (cuBLASLt could write one) is not taken, since
// it would show the rounding the fused GEMM skips, and a cast of an f32 product to bf16 is no
// D type cuBLASLt writes (its CUBLAS_COMPUTE_32F table: f32 A/B with f32 C/D only).
//
// Precision: the epilogue works on the f32 accumulator and rounds once. Where the fusion rounds
// a bf16 / f16 product, reads it in f32 and casts the activation back, the segment skips the
// first rounding (as torch's fused addmm + gelu); the result stays within one rounding of the
// output's dtype, and a relu commutes with the rounding (exact either way).
#pragma once

#include <functional>
#include <vector>

#include "loom/ir/base.h"
#include "loom/ir/matmul_activation.h"

namespace loom::segmenter {

struct MatmulEpilogue {
  ir::MatmulActivation activation = ir::MatmulActivation::None;
  /// The exprs taken, producers first; empty when nothing follows the product into the GEMM.
  std::vector<ir::Expr*> exprs;
};

/// The epilogue of `matmul` (a MatmulOp or LinearOp) per the chain above. Uses for which
/// `live(e)` is false are ignored; a live use for which `joinable(e)` is false (a
/// communication) is another use, which ends the chain before it.
MatmulEpilogue matchMatmulEpilogue(const ir::Expr* matmul,
                                   const std::function<bool(const ir::Expr*)>& live,
                                   const std::function<bool(const ir::Expr*)>& joinable);

}  // namespace loom::segmenter
