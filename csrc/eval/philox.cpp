// SPDX-License-Identifier: Apache-2.0
// Philox4x32-10 and the sample rules of RngOp for the reference evaluator (see philox.h).
#include "loom/eval/philox.h"

#include <cmath>

namespace loom::eval {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

// 53 random bits from two words (the high word's bits first).
uint64_t bits53(uint32_t hi, uint32_t lo) { return ((uint64_t(hi) << 32) | lo) >> 11; }

int significandDigits(DataType dtype) {
  switch (dtype) {
    case DataType::Float64: return 53;
    case DataType::Float32: return 24;
    case DataType::Float16: return 11;
    case DataType::BFloat16: return 8;
    default:
      LOOM_THROW("random numbers of dtype ", dtype, " are not supported (a floating type is)");
  }
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    const uint64_t p0 = uint64_t(kMul0) * c[0];
    const uint64_t p1 = uint64_t(kMul1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1],
         uint32_t(p0)};
  }
  return c;
}

double rngSample(ir::RngOpType type, DataType dtype, uint64_t seed, uint64_t offset, uint64_t index,
                 double param0, double param1) {
  const int digits = significandDigits(dtype);
  const std::array<uint32_t, 4> w = philox4x32_10(
      {uint32_t(index), uint32_t(index >> 32), uint32_t(offset), uint32_t(offset >> 32)},
      {uint32_t(seed), uint32_t(seed >> 32)});
  if (type == ir::RngOpType::Uniform) {
    const double u = digits == 53 ? std::ldexp(double(bits53(w[0], w[1])), -53)
                                  : std::ldexp(double(w[0] >> (32 - digits)), -digits);
    return std::fma(param1 - param0, u, param0);
  }
  double u1, u2;  // u1 in (0, 1] (log(0) never), u2 in [0, 1)
  if (digits == 53) {
    u1 = std::ldexp(double(bits53(w[0], w[1]) + 1), -53);
    u2 = std::ldexp(double(bits53(w[2], w[3])), -53);
  } else {
    u1 = std::ldexp(double(w[0]) + 1.0, -32);
    u2 = std::ldexp(double(w[1]), -32);
  }
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  return std::fma(param1, z, param0);
}

uint64_t rngBlockIndex(std::span<const int64_t> shape, std::span<const int64_t> offsets,
                       std::span<const int64_t> global, uint64_t local) {
  uint64_t index = 0;
  uint64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = uint64_t(shape[d]);
    const uint64_t i = extent == 0 ? 0 : local % extent;
    local = extent == 0 ? 0 : local / extent;
    index += (i + uint64_t(offsets[d])) * stride;
    stride *= uint64_t(global[d]);
  }
  return index;
}

}  // namespace loom::eval
