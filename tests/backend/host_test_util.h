// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the host backend tests: a persistent test cache and error capture.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "loom/backend/host_module.h"
#include "loom/support/error.h"

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

/// The message of the UserError `f` throws, or "" when it throws none.
inline std::string userErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace loom::backend::testing
