// SPDX-License-Identifier: Apache-2.0
// `loom gen-examples DIR`: builds the example fusions with the ops layer and writes them as .fus
// files, so examples/ always holds what the current ops produce (tools/regen-examples.sh).
// `--rows N` writes the same fusions with N rows, for end-to-end runs on the host backend.
#include <charconv>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "loom/ir/ir.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"
#include "tools/loom/commands.h"

namespace loom::tools {
namespace {

using ir::TensorView;

TensorView* input(ir::Fusion& f, std::vector<int64_t> shape, DataType dtype) {
  TensorView* tv = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(tv);
  return tv;
}

struct Example {
  std::string name;
  std::string description;
  std::function<void(ir::Fusion&)> build;
};

// `rows` replaces the row counts (16384, and var_mean's 2048) and keeps the row widths, so the
// schedulers make the same kind of kernels on inputs small enough for the host backend.
std::vector<Example> examples(std::optional<int64_t> rows) {
  std::vector<Example> out;
  const int64_t kRows = rows.value_or(16384);
  const int64_t kVarRows = rows.value_or(2048);
  constexpr int64_t kCols = 4096;
  const std::string shape2 = "[" + std::to_string(kRows) + ", 4096] ";
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    std::string sfx = dt == DataType::Float32 ? "fp32" : "bf16";
    std::string tn(dataTypeName(dt));
    out.push_back({"var_mean_" + sfx,
                   "var_mean over the last dim of a [1, " + std::to_string(kVarRows) + ", 12288] " +
                       tn + " tensor (Welford)",
                   [dt, kVarRows](ir::Fusion& f) {
                     auto r = ops::varMean(input(f, {1, kVarRows, 12288}, dt), {-1});
                     f.addOutput(r.var);
                     f.addOutput(r.mean);
                   }});
    out.push_back({"layer_norm_" + sfx,
                   "layer_norm over the last dim of " + shape2 + tn + " with weight and bias",
                   [dt, kRows](ir::Fusion& f) {
                     auto* x = input(f, {kRows, kCols}, dt);
                     auto* w = input(f, {kCols}, dt);
                     auto* b = input(f, {kCols}, dt);
                     auto r = ops::layerNorm(x, 1, w, b);
                     f.addOutput(r.y);
                     f.addOutput(r.mean);
                     f.addOutput(r.rstd);
                   }});
    out.push_back({"rms_norm_" + sfx, "rms_norm over the last dim of " + shape2 + tn,
                   [dt, kRows](ir::Fusion& f) {
                     auto* x = input(f, {kRows, kCols}, dt);
                     auto* w = input(f, {kCols}, dt);
                     f.addOutput(ops::rmsNorm(x, 1, w));
                   }});
    out.push_back({"softmax_" + sfx, "softmax over the last dim of " + shape2 + tn,
                   [dt, kRows](ir::Fusion& f) {
                     f.addOutput(ops::softmax(input(f, {kRows, kCols}, dt), -1));
                   }});
    out.push_back(
        {"bias_gelu_" + sfx, "gelu_tanh(x + bias) on " + shape2 + tn, [dt, kRows](ir::Fusion& f) {
           auto* x = input(f, {kRows, kCols}, dt);
           auto* b = input(f, {kCols}, dt);
           f.addOutput(ops::biasGelu(x, b, ops::GeluApproximation::Tanh));
         }});
    out.push_back(
        {"sum_dim0_" + sfx, "sum over dim 0 of " + shape2 + tn, [dt, kRows](ir::Fusion& f) {
           f.addOutput(ops::sum(input(f, {kRows, kCols}, dt), {0}));
         }});
  }
  // An in-place update (nvFuser's add_output(alias_input=)): p is written into its own memory.
  out.push_back({"sgd_step_fp32", "p -= 0.01 * g on " + shape2 + "f32, written into p in place",
                 [kRows](ir::Fusion& f) {
                   auto* p = input(f, {kRows, kCols}, DataType::Float32);
                   auto* g = input(f, {kRows, kCols}, DataType::Float32);
                   f.aliasOutputToInput(ops::sub(p, ops::mul(g, 0.01)), p);
                 }});
  out.push_back({"var_mean_small", "var_mean over the last dim of a small [1, 64, 256] f32 tensor",
                 [](ir::Fusion& f) {
                   auto r = ops::varMean(input(f, {1, 64, 256}, DataType::Float32), {-1});
                   f.addOutput(r.var);
                   f.addOutput(r.mean);
                 }});
  return out;
}

}  // namespace

Command addGenExamplesCommand(CLI::App& loom) {
  struct Args {
    std::string dir;
    std::string rows;
    CLI::Option* rowsOption = nullptr;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = loom.add_subcommand(
      "gen-examples", "write the example fusions, built with the ops layer, as .fus files");
  cmd->group("");  // hidden: tools/regen-examples.sh and the CLI test use it
  cmd->add_option("DIR", a->dir, "where to write them")->required()->type_name("");
  a->rowsOption = cmd->add_option("--rows", a->rows,
                                  "the same fusions with N rows, for runs on the host backend")
                      ->type_name("N");
  return {cmd, [a] {
            std::optional<int64_t> rows;
            if (a->rowsOption->count() > 0) {
              int64_t n = 0;
              const std::string& r = a->rows;
              auto res = std::from_chars(r.data(), r.data() + r.size(), n);
              LOOM_CHECK(res.ec == std::errc() && res.ptr == r.data() + r.size() && n > 0,
                         "--rows must be a positive integer, got '", r, "'");
              rows = n;
            }
            for (const Example& ex : examples(rows)) {
              ir::Fusion f;
              {
                ir::FusionGuard guard(&f);
                ex.build(f);
              }
              std::string path = a->dir + "/" + ex.name + ".fus";
              std::ofstream os(path);
              LOOM_CHECK(os.good(), "cannot write '", path, "'");
              os << "# " << ex.description << ".\n"
                 << "# Generated by tools/regen-examples.sh (tools/loom/gen_examples.cpp); do not "
                    "edit.\n"
                 << ir::printFusion(f);
              std::cout << "wrote " << path << "\n";
            }
            return 0;
          }};
}

}  // namespace loom::tools
