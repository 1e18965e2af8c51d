// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the host backend tests: a persistent test cache and error capture.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "loom/backend/host_module.h"
#include "loom/support/error.h"
#include "user_error_of.h"

namespace loom::backend::testing {

/// A cache directory that survives test runs, so re-runs skip the compiler.
inline HostCompileOptions testCompileOptions() {
  HostCompileOptions o;
  o.cacheDir = std::filesystem::temp_directory_path() / "loom-backend-test-cache";
  return o;
}

inline std::unique_ptr<HostModule> loadKernel(const std::string& source, const std::string& name) {
  return HostModule::load(source, name, testCompileOptions());
}

/// The message of the UserError a call throws, or "" when it throws none.
using loom::test::userErrorOf;

}  // namespace loom::backend::testing
