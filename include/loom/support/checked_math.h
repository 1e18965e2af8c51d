// SPDX-License-Identifier: Apache-2.0
// Size arithmetic that cannot overflow silently: element counts, byte sizes and extents of
// tensors are products of user-given sizes, and a product past int64 is a UserError naming what
// was being computed, never a wrapped (small) allocation.
//
//   int64_t n = checkedNumel(sizes, "tensor T3");         // UserError when it overflows
//   int64_t bytes = checkedMul(n, 4, "the bytes of T3");
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "loom/support/error.h"

namespace loom {

/// a * b for non-negative a and b; a UserError naming `what` when it does not fit in int64.
inline int64_t checkedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  LOOM_CHECK(!__builtin_mul_overflow(a, b, &r), what, " overflows 64 bits (", a, " x ", b, ")");
  return r;
}

/// a + b for non-negative a and b; a UserError naming `what` when it does not fit in int64.
inline int64_t checkedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  LOOM_CHECK(!__builtin_add_overflow(a, b, &r), what, " overflows 64 bits (", a, " + ", b, ")");
  return r;
}

/// The product of `sizes` (each non-negative); 0 as soon as one is 0, so [0, 2^40, 2^40] is
/// empty rather than an overflow. A UserError naming `what` when it does not fit in int64.
inline int64_t checkedNumel(std::span<const int64_t> sizes, std::string_view what) {
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t s : sizes) n = checkedMul(n, s, what);
  return n;
}

}  // namespace loom
