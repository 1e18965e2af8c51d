// SPDX-License-Identifier: Apache-2.0
// Host-side conversions of the 8-bit float formats (Float8_e4m3fn, Float8_e5m2), bit-exact with
// torch's c10::Float8_e4m3fn / c10::Float8_e5m2 and with the device runtime (runtime/types.cuh).
//
// float -> fp8 rounds to nearest, ties to even, and keeps the sign (of zeros and NaNs too).
//   e4m3fn: no infinity. NaN gives NaN (0x7F | sign); every other value past the largest finite,
//           448, saturates to +-448, infinities included (torch 2.15's c10::Float8_e4m3fn, on
//           the CPU and the GPU alike, and CUDA's cvt.rn.satfinite; torch releases before that
//           saturating cast gave NaN from 480 and for what rounds there).
//   e5m2:   IEEE-like. NaN gives 0x7F | sign; |x| >= 61440 rounds to infinity (0x7C | sign);
//           57344 is the largest finite value.
// double -> fp8 rounds to float first (as torch does when a Float64 tensor is cast), then as above.
// fp8 -> float is exact.
#pragma once

#include <cstdint>

namespace loom {

uint8_t floatToFloat8E4M3FNBits(float f);
uint8_t floatToFloat8E5M2Bits(float f);
float float8E4M3FNBitsToFloat(uint8_t b);
float float8E5M2BitsToFloat(uint8_t b);

}  // namespace loom
