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

namespace loom::tools {
namespace {

int64_t parseInteger(const std::string& s, const std::string& what) {
  int64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  LOOM_CHECK(res.ec == std::errc() && res.ptr == s.data() + s.size(), what,
             " must be an integer, got '", s, "'");
  return v;
}

double parseNumber(const std::string& s, const std::string& what) {
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  LOOM_CHECK(res.ec == std::errc() && res.ptr == s.data() + s.size(), what,
             " must be a number, got '", s, "'");
  return v;
}

// "s0=4,s1=8" -> {s0: "4", s1: "8"}.
std::map<std::string, std::string> parseSizes(const std::string& spec) {
  std::map<std::string, std::string> out;
  for (const std::string& item : split(spec, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    LOOM_CHECK(eq != std::string::npos && eq > 0, "--sizes expects NAME=VALUE pairs such as ",
               "s0=128,s1=64, got '", item, "'");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

// The value of one extent: a constant, or a symbolic scalar bound with --sizes.
int64_t extentValue(const ir::Scalar* extent, const ir::TensorView* tv, size_t axis,
                    const std::map<std::string, std::string>& sizes) {
  if (auto c = extent->constInt()) return *c;
  auto it = sizes.find(extent->toString());
  LOOM_CHECK(it != sizes.end(), "the size of ", tv->toString(), " axis ", axis, " is ",
             extent->toString(), "; pass it with --sizes ", extent->toString(), "=N");
  return parseInteger(it->second, extent->toString());
}

}  // namespace

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

  std::vector<eval::Argument> inputs;
  for (size_t i = 0; i < fusion->inputs().size(); ++i) {
    ir::Val* in = fusion->inputs()[i];
    if (auto* tv = in->dynCast<ir::TensorView>()) {
      std::vector<int64_t> shape;
      auto ids = ir::TensorDomain::noReductions(tv->logical());
      for (size_t k = 0; k < ids.size(); ++k) {
        shape.push_back(extentValue(ids[k]->logicalExtent(), tv, k, sizes));
      }
      checkedMul(checkedNumel(shape, "the element count of input " + std::to_string(i) + " (" +
                                          tv->toString() + ")"),
                 int64_t(dataTypeSize(tv->dtype())),
                 "the byte size of input " + std::to_string(i) + " (" + tv->toString() + ")");
      Tensor t = Tensor::empty(shape, tv->dtype());
      fillRandom(t, seed * 1000003 + i);
      inputs.emplace_back(std::move(t));
      continue;
    }
    auto* s = in->as<ir::Scalar>();
    auto it = sizes.find(s->toString());
    LOOM_CHECK(it != sizes.end(), "scalar input ", s->toString(), " needs a value: pass --sizes ",
               s->toString(), "=VALUE");
    if (isFloatingType(s->dtype())) {
      inputs.emplace_back(parseNumber(it->second, s->toString()));
    } else if (isBooleanType(s->dtype())) {
      inputs.emplace_back(it->second == "true" || it->second == "1");
    } else {
      inputs.emplace_back(parseInteger(it->second, s->toString()));
    }
  }

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
