// SPDX-License-Identifier: Apache-2.0
// The activation a matmul segment applies in its GEMM's epilogue (after the bias, before the
// rounding to the result's dtype): the segmenter chooses it (segmenter/matmul_epilogue.h), the
// host GEMM and cuBLASLt apply it (exec/gemm.h). Shared here because both layers name it.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom::ir {

enum class MatmulActivation : uint8_t {
  None,
  /// max(x, 0): cuBLASLt's CUBLASLT_EPILOGUE_RELU.
  Relu,
  /// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), torch's gelu(approximate='tanh'):
  /// cuBLASLt's CUBLASLT_EPILOGUE_GELU (the tanh form; the erf gelu has no epilogue).
  GeluTanh,
};

/// "none", "relu", "gelu_tanh".
constexpr std::string_view matmulActivationName(MatmulActivation a) {
  switch (a) {
    case MatmulActivation::None: return "none";
    case MatmulActivation::Relu: return "relu";
    case MatmulActivation::GeluTanh: return "gelu_tanh";
  }
  return "?";
}

}  // namespace loom::ir
