// SPDX-License-Identifier: Apache-2.0
// execute()'s _enable_options and _disable_options (call_options.h).
#include "call_options.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "loom/lower/lower.h"
#include "loom/segmenter/presegment.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::python {

namespace {

constexpr std::string_view kPoison = "poison_outputs";

// nvFuser's DisableOption names for passes Loom has as well.
const std::map<std::string, std::string>& disableAliases() {
  static const std::map<std::string, std::string> aliases = {
      {"expr_simplify", "simplify"},
      {"index_hoist", "hoist_indices"},
      {"predicate_elimination", "eliminate_predicates"},
  };
  return aliases;
}

// nvFuser's option names for things Loom does not have or always does, so turning them on or
// off changes nothing Loom computes: its own kernel and scheduler features (TMA, warp
// specialization, CUTLASS, the resize scheduler, the ID model, magic zero, kernel reuse, ...),
// its debugging aids (line info, nvtx, kernel_db), and its host IR lowering, which is how Loom
// always runs a fusion with communications. Options that change results (fma, fast_math,
// io_to_lower_precision) are not among them: Loom refuses those by name.
const std::unordered_set<std::string>& nvFuserEnableNoOps() {
  static const std::unordered_set<std::string> names = {
      "fuse_matmul", "fuse_multiple_matmuls", "id_model", "id_model_extra_validation",
      "kernel_db", "kernel_debug", "kernel_lineinfo", "kernel_profile", "memory_promotion",
      "reuse_zeroed_memory", "static_fusion_count", "warn_register_spill", "ws_normalization",
      "host_ir_lowering", "host_ir_jit", "tma_pointwise", "tma_reduction",
      "tma_inner_persistent", "infer_contiguity", "cutlass_scheduler"};
  return names;
}

const std::unordered_set<std::string>& nvFuserDisableNoOps() {
  static const std::unordered_set<std::string> names = {
      "compile_to_sass", "contig_indexing", "fallback", "grouped_grid_welford_outer_opt",
      "id_model", "magic_zero", "matmul_expr_eval", "nvtx", "parallel_compile",
      "parallel_serde", "python_inline_definitions", "kernel_reuse", "var_name_remapping",
      "welford_vectorization", "resize_scheduler", "reuse_mismatched_type_registers",
      "infer_contiguity"};
  return names;
}

std::vector<std::string> dumpNames() {
  std::vector<std::string> out;
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    out.emplace_back(dumpOptionName(DumpOption(i)));
  }
  return out;
}

std::vector<std::string> debugNames() {
  std::vector<std::string> out;
  for (size_t i = 0; i < size_t(DebugOption::kCount); ++i) {
    out.emplace_back(debugOptionName(DebugOption(i)));
  }
  return out;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

std::pair<std::vector<std::string>, std::vector<std::string>> callOptionNames() {
  std::vector<std::string> enable = dumpNames();
  for (std::string& n : debugNames()) enable.push_back(std::move(n));
  enable.emplace_back(kPoison);
  std::vector<std::string> disable = lower::pipeline().optionalNames();
  for (std::string& n : segmenter::presegmentPasses().optionalNames()) disable.push_back(n);
  for (const auto& [alias, pass] : disableAliases()) disable.push_back(alias);
  return {enable, disable};
}

CallOptions parseCallOptions(const std::vector<std::string>& enable,
                             const std::vector<std::string>& disable) {
  CallOptions out;
  const std::vector<std::string> dumps = dumpNames();
  const std::vector<std::string> debugs = debugNames();
  std::vector<std::string> key;
  for (const std::string& raw : enable) {
    const std::string item(trim(raw));
    const std::string name(trim(std::string_view(item).substr(0, item.find('('))));
    if (contains(dumps, name)) {
      out.dump.merge(DumpOptions::parse(item));
    } else if (contains(debugs, name) && name == item) {
      out.debug.merge(DebugOptions::parse(item));
    } else if (item == kPoison) {
      out.poisonOutputs = true;
    } else if (nvFuserEnableNoOps().count(item) != 0) {
      continue;  // nothing to change in Loom, nor in the kernels' cache key
    } else {
      LOOM_THROW("execute: _enable_options names '", raw,
                 "', which Loom does not have. Loom's enable options are the LOOM_DUMP names (",
                 join(dumps),
                 "; name(pass,...) picks passes where the name takes them), the "
                 "LOOM_DEBUG names (",
                 join(debugs), ") and ", kPoison, " (outputs filled with NaN before each launch)");
    }
    key.push_back("+" + item);
  }
  for (const std::string& raw : disable) {
    std::string name(trim(raw));
    if (nvFuserDisableNoOps().count(name) != 0) continue;
    if (auto it = disableAliases().find(name); it != disableAliases().end()) name = it->second;
    const std::unordered_set<std::string> one = {name};
    const bool lowering = lower::pipeline().find(name) != nullptr;
    const bool presegment = segmenter::presegmentPasses().find(name) != nullptr;
    // A pass the kernels need: the list's own error, which names the optional passes.
    if (lowering) lower::pipeline().checkDisabled(one);
    if (presegment) segmenter::presegmentPasses().checkDisabled(one);
    LOOM_CHECK(lowering || presegment, "execute: _disable_options names '", raw,
               "', which Loom does not have. Loom's disable options are the optional lowering "
               "passes (",
               join(lower::pipeline().optionalNames()), "), the optional pre-segmentation passes (",
               join(segmenter::presegmentPasses().optionalNames()),
               ") and nvFuser's names for three of them (expr_simplify, index_hoist, "
               "predicate_elimination)");
    out.disabled.insert(name);
    key.push_back("-" + name);
  }
  std::sort(key.begin(), key.end());
  key.erase(std::unique(key.begin(), key.end()), key.end());
  out.key = join(key);
  return out;
}

}  // namespace loom::python
