// SPDX-License-Identifier: Apache-2.0
// Linked into the gpu twin of a suite built twice from one source (tests/backend_available.h,
// suiteBackend): where its backend cannot run here, the executable prints why and exits with 77,
// which ctest reports as the whole suite skipped (SKIP_RETURN_CODE), not as tests passed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "backend_available.h"

namespace {

class SuiteBackendEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(loom::test::suiteBackend())) {
      std::fprintf(stderr, "skipped: %s\n", why->c_str());
      std::exit(77);
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new SuiteBackendEnvironment);

}  // namespace
