// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the runtime library tests: one compiled host module per test kernel.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "codegen/runtime_test_kernels.h"
#include "loom/backend/host_module.h"

namespace loom::codegen::testing {

/// A temp cache directory shared by test runs, so a re-run skips the compilers.
inline std::filesystem::path testCacheDir() {
  return std::filesystem::temp_directory_path() / "loom-codegen-runtime-test-cache";
}

/// The host module of `k` (runtime + kernel), compiled once per process.
inline const backend::HostModule& hostModule(const TestKernel& k) {
  static std::map<std::string, std::unique_ptr<backend::HostModule>> modules;
  auto& m = modules[k.name];
  if (!m) {
    backend::HostCompileOptions o;
    o.cacheDir = testCacheDir() / "host";
    m = backend::HostModule::load(withRuntime(k), k.name, o);
  }
  return *m;
}

}  // namespace loom::codegen::testing
