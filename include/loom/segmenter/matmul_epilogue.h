// SPDX-License-Identifier: Apache-2.0
// Which pointwise consumers of a matmul or linear its GEMM applies in its epilogue (cuBLASLt's
// CUBLASLT_EPILOGUE_* and D type; the host GEMM does the same), so that they join the matmul
// segment instead of running as a Loom kernel of their own.
//
// The chain after the product `mm` (operands of dtype T), each link taken only when the tensor
// before it has no other use (and is no fusion output):
//
//   relu(mm) | gelu_tanh(mm)       T = f32 (or a relu UnaryOp on a bf16 / f16 product)
//   cast(relu(cast(mm, f32)), T)   T = bf16 / f16: read in f32, relu, cast back (all or none)
//
// relu is the UnaryOp; gelu_tanh the composite ops::gelu(x, Tanh) builds (operands of each add
// and mul in either order, its constants equal as f32); the erf gelu is not taken. The GEMM
// writes T. Not taken: a gelu of a bf16 / f16 product (the fused GEMM skips the product's 16-bit
// rounding, which a gelu does not commute with; relu does, so it is exact), a 16-bit product
// returned in f32 (the same rounding shows), and a cast of an f32 product to bf16 (no D type
// cuBLASLt writes: its CUBLAS_COMPUTE_32F table has f32 A/B with f32 C/D only).
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
