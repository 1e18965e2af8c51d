// SPDX-License-Identifier: Apache-2.0
// Wall-time budgets for tests that guard against super-linear algorithms, widened under sanitizers.
#pragma once

namespace loom::test {

/// How much slower the sanitizer builds run this code than a release build: ASan's checks and
/// TSan's shadow stores. A budget exists to catch quadratic growth (minutes or hours at these
/// depths), so a constant factor is the right widening.
#if defined(__SANITIZE_THREAD__)
inline constexpr double kSanitizerSlowdown = 10.0;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr double kSanitizerSlowdown = 4.0;
#else
inline constexpr double kSanitizerSlowdown = 1.0;
#endif

/// `seconds` of a release build on a loaded 2-core machine, in this build's terms.
inline double timeBudget(double seconds) { return seconds * kSanitizerSlowdown; }

}  // namespace loom::test
