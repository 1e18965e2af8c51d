// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `loom` program. Each returns the process exit code; user errors are
// thrown as loom::UserError and reported by main.
#pragma once

#include <string>
#include <vector>

namespace loom::tools {

/// `loom print FILE.fus`: parse and print.
int printCommand(const std::vector<std::string>& args);
/// `loom eval FILE.fus [--seed N] [--sizes s0=..,s1=..]`: reference evaluation on random inputs.
int evalCommand(const std::vector<std::string>& args);
/// `loom codegen FILE.fus [--arch sm_90]`: print the CUDA kernel of a scheduled fusion and compile
/// it with NVRTC (registers and spills).
int codegenCommand(const std::vector<std::string>& args);
/// `loom run FILE.fus [--backend cuda|host] [--sizes ...] [--seed N] [--bench]`: schedule
/// automatically, run, check every output against the reference evaluator, report each kernel.
int runCommand(const std::vector<std::string>& args);
/// `loom gen-examples DIR` (hidden): writes the example fusions, built with ops, to DIR.
int genExamplesCommand(const std::vector<std::string>& args);

}  // namespace loom::tools
