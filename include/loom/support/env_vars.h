// SPDX-License-Identifier: Apache-2.0
// The environment variables Loom reads, each with the values it takes and one line saying what it
// does: `loom --help` prints this table and README.md lists it, and a unit test
// (tests/support/env_vars_test.cpp) checks that every variable the sources read is here and that
// README.md names every entry, so the list cannot fall behind the code.
#pragma once

#include <span>
#include <string_view>

namespace loom {

struct EnvVar {
  std::string_view name;         ///< "LOOM_BACKEND"
  std::string_view values;       ///< what it may be set to: "host|cuda", "DIR", ...
  std::string_view description;  ///< one line
};

/// Every environment variable Loom reads: the LOOM_* ones first, then the ones other tools own
/// that Loom also consults (CUDA_HOME, the launcher's rank variables, ...).
std::span<const EnvVar> environmentVariables();

/// The entry of `name`, or nullptr.
const EnvVar* findEnvironmentVariable(std::string_view name);

}  // namespace loom
