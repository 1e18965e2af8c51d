// SPDX-License-Identifier: Apache-2.0
// cuBLASLt, opened at run time (like NVRTC and NCCL: the build never links it): one matmul call
// in cuBLASLt's own column-major terms. exec's GPU device turns a Loom GEMM (exec/gemm.h) into
// such calls (csrc/exec/cuda_gemm.cpp).
//
// Library: LOOM_CUBLASLT_LIBRARY first, then libcublasLt.so.13, .so.12 and .so from the loader's
// path, then CUDA_HOME / CUDA_PATH / /usr/local/cuda's lib64. A machine without it runs
// everything else; a matmul on the GPU there is a UserError naming what was tried.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/backend/cuda/driver.h"
#include "loom/tensor/data_type.h"

namespace loom::cuda {

/// One operand of a cuBLASLt matmul: a column-major `rows` x `cols` matrix with leading
/// dimension `ld` (elements between columns), used transposed when `transpose`, the next matrix
/// of a batch `batchStride` elements further (0: every batch reads the same matrix).
struct LtOperand {
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 1;
  int64_t batchStride = 0;
  bool transpose = false;
};

/// What the epilogue applies after the bias (cuBLASLt's CUBLASLT_EPILOGUE_RELU / _GELU, with
/// _BIAS: RELU_BIAS / GELU_BIAS). cuBLASLt's GELU is the tanh approximation.
enum class LtActivation : uint8_t { None, Relu, Gelu };

/// D = act(op(A) op(B) (+ bias broadcast over D's columns)), D column-major `dRows` x `dCols`,
/// `batchCount` times. A, B, D and the bias have `dtype` (f32, bf16 or f16); the compute type
/// is f32 (CUBLAS_COMPUTE_32F, scale type f32). The bias (dRows elements, packed) is added by
/// the CUBLASLT_EPILOGUE_BIAS epilogue (RELU_BIAS / GELU_BIAS with an activation, which is
/// applied in f32 before D is rounded to `dtype`).
struct LtMatmulCall {
  DataType dtype = DataType::Float32;
  LtActivation activation = LtActivation::None;
  int64_t batchCount = 1;
  LtOperand a;
  LtOperand b;
  void* d = nullptr;
  int64_t dRows = 0;
  int64_t dCols = 0;
  int64_t ldd = 1;
  int64_t dBatchStride = 0;
  const void* bias = nullptr;
  void* workspace = nullptr;
  size_t workspaceBytes = 0;
};

/// True when libcublasLt loads and has every entry point used. Never throws.
bool cublasLtAvailable() noexcept;
/// Why it does not ("" when it does). Never throws.
std::string cublasLtUnavailableReason() noexcept;

/// Queues the call on `stream` of GPU `device` (its primary context made current). UserError
/// when cuBLASLt cannot be loaded or finds no algorithm for the call, CudaError for a failing
/// cuBLASLt status.
void ltMatmul(const LtMatmulCall& call, int device, CUstream stream);

}  // namespace loom::cuda
