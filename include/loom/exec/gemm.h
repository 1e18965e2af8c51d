// SPDX-License-Identifier: Apache-2.0
// One GEMM as a device runs it: the geometry of a matmul or linear (ir/matmul_geometry.h) over
// device pointers. ComputeDevice::gemm runs it: cuBLASLt on a GPU (loaded at run time), the
// blocked host GEMM below on the host backend. runtime::MatmulSegmentExecutor builds it.
#pragma once

#include <cstdint>
#include <optional>

#include "loom/ir/matmul_activation.h"
#include "loom/ir/matmul_geometry.h"
#include "loom/tensor/data_type.h"

namespace loom::exec {

/// out = activation(a @ b (+ bias)) per the geometry; every operand and out have `dtype` (f32,
/// bf16 or f16), products accumulate in f32, the bias is added and the activation applied in
/// f32 (cuBLASLt's epilogue order), and out is rounded once. out is dense: geometry.denseOut().
struct GemmProblem {
  ir::MatmulGeometry geometry;
  DataType dtype = DataType::Float32;
  ir::MatmulActivation activation = ir::MatmulActivation::None;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;  ///< read when geometry.hasBias
  void* out = nullptr;
};

/// The activation in f32 as the host GEMM applies it (gelu_tanh in the steps of ops::gelu's
/// composite, so the host backend's fused and unfused forms compute alike).
float gemmActivation(ir::MatmulActivation activation, float x);

/// A `rows` x `cols` matrix at r * rowStride + c * colStride as a column-major BLAS operand:
/// stored `storedRows` x `storedCols` with leading dimension `ld`, read transposed or not.
struct BlasOperand {
  int64_t storedRows = 0;
  int64_t storedCols = 0;
  int64_t ld = 1;
  bool transpose = false;
};
/// The BLAS view of such a matrix, or nullopt when there is none (no unit-strided dim, or a
/// leading dimension smaller than the stored rows: a broadcast or overlapping view). Dims of
/// size 1 take any stride.
std::optional<BlasOperand> blasOperand(int64_t rows, int64_t cols, int64_t rowStride,
                                       int64_t colStride);

/// The host GEMM: cache-blocked (panels of a and b packed into f32 tiles, an f32 accumulator per
/// tile of out), the tiles split over up to `threads` threads (0: the hardware's count).
void hostGemm(const GemmProblem& problem, int threads = 0);

}  // namespace loom::exec
