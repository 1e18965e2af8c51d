// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's random numbers: Philox4x32-10 and the rules that turn its words into
// the samples of an RngOp (the oracle the kernels' runtime/random.cuh is checked against).
//
// Element i of an RngOp's output (i its row-major linear logical index) is a function of
// (seed, offset, i) only:
// * words = Philox4x32-10 with key (lo32(seed), hi32(seed)) and counter
//   (lo32(i), hi32(i), lo32(offset), hi32(offset)); one block of four words per element.
// * uniform(low, high): u = the top d bits of the words scaled by 2^-d, d the significand
//   digits of the dtype (f64: 53 from words 0 and 1; f32: 24, f16: 11, bf16: 8 from word 0), so
//   u is exact in the dtype and lies in [0, 1); the value is fma(high - low, u, low) in double,
//   rounded once to the dtype. Bit-exact on every backend.
// * normal(mean, std): Box-Muller in double, z = sqrt(-2 log u1) cos(2 pi u2) with u1 in (0, 1]
//   and u2 in [0, 1) (f64: 53 bits each from words 0-1 and 2-3; other dtypes: 32 bits from words
//   0 and 1); the value is fma(std, z, mean), rounded once to the dtype. log and cos are the
//   platform's, so a GPU kernel may differ from the host by the libraries' few ulps of double:
//   after rounding to f32 or narrower the results are equal except within that distance of a
//   rounding boundary (one ulp of the dtype at most).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "loom/ir/exprs.h"
#include "loom/tensor/data_type.h"

namespace loom::eval {

/// The Philox4x32-10 block of `counter` under `key` (Salmon et al., SC'11).
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// The sample of an RngOp of `type` and output `dtype` at linear index `index`, before rounding
/// to dtype (the rules above); `param0`/`param1` are low/high or mean/std.
double rngSample(ir::RngOpType type, DataType dtype, uint64_t seed, uint64_t offset, uint64_t index,
                 double param0, double param1);

/// The linear index i above of element `local` (its row-major index in `shape`) of an RngOp
/// output that is a block of a larger draw (RngOp::indexOffsets): sum_d (i_d + offsets_d) *
/// prod_{d' > d} global_d', with the block's multi-index i_d read from `local` in `shape`.
uint64_t rngBlockIndex(std::span<const int64_t> shape, std::span<const int64_t> offsets,
                       std::span<const int64_t> global, uint64_t local);

}  // namespace loom::eval
