// SPDX-License-Identifier: Apache-2.0
// `loom print` and `loom eval`.
#include "tools/loom/commands.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ir/verifier.h"
#include "loom/support/checked_math.h"
#include "loom/support/strings.h"
#include "loom/tensor/tensor.h"
#include "tools/loom/random_inputs.h"

namespace loom::tools {
int printCommand(const std::vector<std::string>& args) {
  LOOM_CHECK(args.size() == 1, "usage: loom print FILE.fus");
  LOOM_CHECK(args[0].empty() || args[0][0] != '-', "unknown option '", args[0], "' for print");
  auto fusion = ir::parseFusionFile(args[0]);
  std::cout << ir::printFusion(*fusion);
  return 0;
}

int evalCommand(const std::vector<std::string>& args) {
  std::string file;
  uint64_t seed = 0;
  std::map<std::string, std::string> sizes;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--seed" || a == "--sizes") {
      LOOM_CHECK(i + 1 < args.size(), a, " needs a value");
      const std::string& v = args[++i];
      if (a == "--seed") {
        seed = uint64_t(parseInteger(v, "--seed"));
      } else {
        sizes = parseSizes(v);
      }
    } else if (!a.empty() && a[0] == '-') {
      LOOM_THROW("unknown option '", a, "' for eval (expected --seed or --sizes)");
    } else {
      LOOM_CHECK(file.empty(), "eval takes one file, got '", file, "' and '", a, "'");
      file = a;
    }
  }
  LOOM_CHECK(!file.empty(), "usage: loom eval FILE.fus [--seed N] [--sizes s0=N,...]");
  auto fusion = ir::parseFusionFile(file);
  try {
    ir::verifyRunnable(*fusion);
  } catch (const InternalError& e) {
    LOOM_CHECK(false, file, ": cannot evaluate: ", e.reason());
  }

  std::vector<eval::Argument> inputs = randomInputs(*fusion, sizes, seed);

  std::vector<Tensor> outs = eval::evaluateFusion(*fusion, inputs);
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i];
    double sum = 0.0;
    double abs_sum = 0.0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      double x = t.getDoubleLinear(k);
      sum += x;
      abs_sum += std::fabs(x);
    }
    char line[256];
    std::snprintf(line, sizeof(line), "%-4s [%s] %-4s sum=%.6f abs_sum=%.6f",
                  fusion->outputs()[i]->toString().c_str(), join(t.sizes()).c_str(),
                  std::string(dataTypeName(t.dtype())).c_str(), sum, abs_sum);
    std::cout << line << "\n";
  }
  return 0;
}

}  // namespace loom::tools
