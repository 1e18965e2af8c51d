// SPDX-License-Identifier: Apache-2.0
// `loom print` and `loom eval`, and what the commands share: --progress-after and the
// environment part of `loom --help`.
#include "tools/loom/commands.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ir/verifier.h"
#include "loom/lower/lower.h"
#include "loom/segmenter/presegment.h"
#include "loom/support/env_vars.h"
#include "loom/support/input_file.h"
#include "loom/support/options.h"
#include "loom/support/strings.h"
#include "loom/tensor/tensor.h"
#include "tools/loom/progress.h"
#include "tools/loom/random_inputs.h"

namespace loom::tools {

void addProgressOption(CLI::App& cmd, ProgressFlag& flag) {
  cmd.add_option("--progress-after", flag.seconds,
                 "print progress lines to stderr for a step that runs longer than this (default "
                 "2; 0 reports every step)")
      ->type_name("SECONDS");
}

std::chrono::milliseconds progressAfter(const ProgressFlag& flag) {
  LOOM_CHECK(flag.seconds >= 0 && flag.seconds < 1e9,
             "--progress-after must be a number of seconds from 0 up, got ", flag.seconds);
  return std::chrono::milliseconds(int64_t(flag.seconds * 1e3));
}

std::unique_ptr<ir::Fusion> readFusionFile(const std::string& path) {
  return ir::parseFusion(readInputFile(path, "fusion file"), path);
}

std::string environmentHelp() {
  std::string out =
      "Exit status: 0 success, 1 an error in the input or the command line (or output that\n"
      "could not be written), 2 an internal error (a bug in Loom), 3 unavailable here (no GPU\n"
      "or driver for --backend cuda).\n"
      "\n"
      "Environment variables:\n";
  for (const EnvVar& v : environmentVariables()) {
    out += fmt::format("  {}={}\n      {}\n", v.name, v.values, v.description);
  }
  out += "\nLOOM_DUMP names (LOOM_DUMP=a,b(arg),...; LOOM_DUMP=help prints this list):\n";
  out += dumpOptionsHelp();
  out += "\nLOOM_DEBUG names (LOOM_DEBUG=a,b; LOOM_DEBUG=help prints this list):\n";
  out += debugOptionsHelp();
  out += "\nLOOM_DISABLE names (LOOM_DISABLE=a,b: optional passes not to run):\n";
  out += fmt::format("  {:<23} {}\n", "lowering", join(lower::pipeline().optionalNames()));
  out += fmt::format("  {:<23} {}\n", "pre-segmentation",
                     join(segmenter::presegmentPasses().optionalNames()));
  return out;
}

Command addPrintCommand(CLI::App& loom) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = loom.add_subcommand("print", "parse a fusion and print it in canonical form");
  cmd->add_option("FILE.fus", *file, "the fusion, in the text form (docs/text-format.md)")
      ->required()
      ->type_name("");
  cmd->footer("Example: loom print examples/softmax_fp32.fus");
  return {cmd, [file] {
            auto fusion = readFusionFile(*file);
            std::cout << ir::printFusion(*fusion);
            return 0;
          }};
}

namespace {

struct EvalArgs {
  std::string file;
  std::string seed = "0";
  std::string sizes;
  ProgressFlag progress;
};

int runEval(const EvalArgs& a) {
  const uint64_t seed = uint64_t(parseInteger(a.seed, "--seed"));
  auto fusion = readFusionFile(a.file);
  try {
    ir::verifyRunnable(*fusion);
  } catch (const InternalError& e) {
    LOOM_CHECK(false, a.file, ": cannot evaluate: ", e.reason());
  }
  const std::map<std::string, std::string> sizes = parseSizes(a.sizes);
  checkSizeNames(*fusion, sizes);
  std::vector<eval::Argument> inputs = randomInputs(*fusion, sizes, seed);
  Progress progress(std::cerr, progressAfter(a.progress));
  std::vector<Tensor> outs;
  {
    Progress::Step step = progress.step("evaluating (reference evaluator, double precision)");
    outs = eval::evaluateFusion(*fusion, inputs);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i];
    double sum = 0.0;
    double abs_sum = 0.0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      double x = t.getDoubleLinear(k);
      sum += x;
      abs_sum += std::fabs(x);
    }
    fmt::print("{:<4} [{}] {:<4} sum={:.6f} abs_sum={:.6f}\n", fusion->outputs()[i]->toString(),
               join(t.sizes()), dataTypeName(t.dtype()), sum, abs_sum);
  }
  return 0;
}

}  // namespace

Command addEvalCommand(CLI::App& loom) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = loom.add_subcommand(
      "eval", "evaluate on random inputs (reference evaluator); print each output's checksums");
  cmd->add_option("FILE.fus", a->file, "the fusion, in the text form")->required()->type_name("");
  cmd->add_option("--seed", a->seed, "seed of the random inputs (default 0)")->type_name("N");
  cmd->add_option("--sizes", a->sizes,
                  "values of the symbolic sizes and scalar inputs, e.g. s0=4,s1=8")
      ->type_name("s0=N,...");
  addProgressOption(*cmd, a->progress);
  cmd->footer("Example: loom eval examples/var_mean_small.fus --seed 1");
  return {cmd, [a] { return runEval(*a); }};
}

}  // namespace loom::tools
