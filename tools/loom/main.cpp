// SPDX-License-Identifier: Apache-2.0
// The `loom` command-line program: dispatches to subcommands and turns errors into exit codes
// (1 user error, 2 internal error, 3 unavailable here).
#include <iostream>
#include <string>
#include <vector>

#include "loom/support/error.h"
#include "loom/version.h"
#include "tools/loom/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: loom <command> [options]\n"
    "\n"
    "commands:\n"
    "  print FILE.fus                          parse a fusion and print it in canonical form\n"
    "  eval FILE.fus [--seed N] [--sizes s0=N,s1=M,...]\n"
    "                                          run the reference evaluator on random inputs and\n"
    "                                          print each output's shape, dtype and checksums\n"
    "  codegen FILE.fus [--arch sm_90] [--sms N]\n"
    "                                          lower a scheduled fusion, print its CUDA kernel (as\n"
    "                                          built for N SMs) and compile it with NVRTC (registers,\n"
    "                                          spills)\n"
    "  run FILE.fus [--backend cuda|host] [--sizes s0=N,...] [--seed N] [--bench]\n"
    "                                          schedule automatically, run on random inputs, check\n"
    "                                          against the reference; per kernel: scheduler,\n"
    "                                          launch, time (--bench: repeated, bandwidth)\n"
    "  version                                 print the Loom version\n"
    "  help, --help, -h                        print this message\n"
    "\n"
    "exit status: 0 success, 1 an error in the input or the command line, 2 an internal error\n"
    "(a bug in Loom), 3 unavailable here (no GPU or driver for --backend cuda)\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 1;
  }
  std::string cmd = args.front();
  args.erase(args.begin());
  try {
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (cmd == "version" || cmd == "--version") {
      std::cout << "loom " << LOOM_VERSION_STRING << "\n";
      return 0;
    }
    if (cmd == "print") return loom::tools::printCommand(args);
    if (cmd == "eval") return loom::tools::evalCommand(args);
    if (cmd == "run") return loom::tools::runCommand(args);
    if (cmd == "codegen") return loom::tools::codegenCommand(args);
    if (cmd == "gen-examples") return loom::tools::genExamplesCommand(args);
    std::cerr << "loom: unknown command '" << cmd << "'\n\n" << kUsage;
    return 1;
  } catch (const loom::UserError& e) {
    std::cerr << "loom: error: " << e.message() << "\n";
    return 1;
  } catch (const loom::UnavailableError& e) {
    // Not a bug: what was asked for needs something this machine lacks (no GPU, no driver).
    std::cerr << "loom: unavailable: " << e.message() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "loom: internal error: " << e.what() << "\n";
    return 2;
  }
}
