// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `loom` program. Each add*Command registers its subcommand, with its
// options and help text, on the CLI11 app, and returns what runs it once the command line is
// parsed; the action returns the process exit code. User errors are thrown as loom::UserError and
// reported by main (main.cpp), as are bad command lines (CLI11's errors).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "loom/ir/fusion.h"

namespace loom::tools {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// `loom print FILE.fus`: parse and print in canonical form.
Command addPrintCommand(CLI::App& loom);
/// `loom eval FILE.fus [--seed N] [--sizes s0=N,...]`: reference evaluation on random inputs.
Command addEvalCommand(CLI::App& loom);
/// `loom codegen FILE.fus [--arch sm_90] [--sms N]`: print the CUDA kernel of a scheduled fusion
/// and compile it with NVRTC (registers and spills).
Command addCodegenCommand(CLI::App& loom);
/// `loom run FILE.fus [--backend cuda|host] [--sizes ...] [--seed N] [--bench]`: schedule
/// automatically, run, check every output against the reference evaluator, report each kernel.
Command addRunCommand(CLI::App& loom);
/// `loom gen-examples DIR [--rows N]` (hidden): writes the example fusions, built with ops.
Command addGenExamplesCommand(CLI::App& loom);

/// The fusion in the .fus file `path`, parsed. A directory, a device, a socket or a FIFO nobody
/// writes to is a UserError naming it (never a wait); a pipe with a writer is read to its end.
std::unique_ptr<ir::Fusion> readFusionFile(const std::string& path);

/// What `--progress-after SECONDS` sets (eval and run): the wall time after which a step prints
/// progress lines to stderr.
struct ProgressFlag {
  double seconds = 2.0;
};
/// Adds --progress-after to `cmd`.
void addProgressOption(CLI::App& cmd, ProgressFlag& flag);
/// The flag's threshold; a UserError when it is negative.
std::chrono::milliseconds progressAfter(const ProgressFlag& flag);

/// The end of `loom --help`: exit statuses, the LOOM_DUMP and LOOM_DEBUG names and the
/// environment variables Loom reads, each with its one-line description.
std::string environmentHelp();

}  // namespace loom::tools
