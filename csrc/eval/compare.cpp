// SPDX-License-Identifier: Apache-2.0
// Tolerant comparison of tensors (see compare.h).
#include "loom/eval/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::eval {
namespace {

double epsilonOf(DataType dtype) {
  switch (dtype) {
    case DataType::Float16: return 0x1p-10;
    case DataType::BFloat16: return 0x1p-7;
    case DataType::Float8_e4m3fn: return 0x1p-3;
    case DataType::Float8_e5m2: return 0x1p-2;
    case DataType::Float32: return 0x1p-23;
    case DataType::Float64: return 0x1p-52;
    default: return 0.0;
  }
}

// Multi-index of a row-major linear index, for messages.
std::string indexString(int64_t linear, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = sizes[d] == 0 ? 0 : linear % sizes[d];
    linear = sizes[d] == 0 ? 0 : linear / sizes[d];
  }
  return "[" + join(idx) + "]";
}

bool close(double a, double e, const Tolerance& tol) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
}

}  // namespace

Tolerance defaultTolerance(DataType dtype, int64_t reduction_size) {
  // A complex value compares part by part, each as a value of the part type.
  if (isComplexType(dtype)) return defaultTolerance(complexPartType(dtype), reduction_size);
  if (!isFloatingType(dtype)) return {0.0, 0.0};
  double growth = 1.0 + std::sqrt(double(std::max<int64_t>(reduction_size, 1)));
  // Kernels compute 16-bit floats in Float32 and round once at the end: allow one 16-bit ulp on
  // top of the Float32 error.
  double compute_eps = isReducedPrecision(dtype) ? epsilonOf(DataType::Float32) : epsilonOf(dtype);
  double t = 8.0 * compute_eps * growth;
  if (isReducedPrecision(dtype)) t += 2.0 * epsilonOf(dtype);
  return {t, t};
}

std::optional<std::string> expectClose(const Tensor& actual, const Tensor& expected, Tolerance tol,
                                       std::string_view what) {
  std::ostringstream os;
  os << what << ": ";
  if (!actual.defined() || !expected.defined()) {
    os << "undefined tensor (actual " << describe(actual) << ", expected " << describe(expected)
       << ")";
    return os.str();
  }
  LOOM_CHECK(actual.device().isCpu() && expected.device().isCpu(),
             "expectClose needs host tensors, got ", describe(actual), " and ", describe(expected));
  if (actual.sizes() != expected.sizes() || actual.dtype() != expected.dtype()) {
    os << "got " << describe(actual) << ", expected " << describe(expected);
    return os.str();
  }
  int64_t n = actual.numel();
  int64_t mismatches = 0;
  int64_t first = -1;
  double first_a = 0.0, first_e = 0.0;
  const bool complex = isComplexType(actual.dtype());
  std::string first_part;
  for (int64_t i = 0; i < n; ++i) {
    const std::complex<double> a = actual.getComplexLinear(i);
    const std::complex<double> e = expected.getComplexLinear(i);
    const bool real_ok = close(a.real(), e.real(), tol);
    if (real_ok && (!complex || close(a.imag(), e.imag(), tol))) continue;
    if (mismatches++ == 0) {
      first = i;
      first_a = real_ok ? a.imag() : a.real();
      first_e = real_ok ? e.imag() : e.real();
      if (complex) first_part = real_ok ? " (imaginary part)" : " (real part)";
    }
  }
  if (mismatches == 0) return std::nullopt;
  // Values in their shortest form that reads back exactly.
  os << fmt::format("{} of {} elements differ; first at {}{}: got {}, expected {}", mismatches, n,
                    indexString(first, actual.sizes()), first_part, first_a, first_e);
  if (std::isnan(first_a) && !std::isnan(first_e)) os << " (NaN: never written or poisoned?)";
  os << fmt::format(" (rtol {}, atol {})", tol.rtol, tol.atol);
  return os.str();
}

}  // namespace loom::eval
