// SPDX-License-Identifier: Apache-2.0
// Parsing of LOOM_DUMP and LOOM_DEBUG.
#include "loom/support/options.h"

#include <cstdlib>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(DumpOption::kCount)> kDumpOptionNames = {
    "fusion_ir", "fusion_ir_scheduled", "scheduler_params", "segments", "kernel_ir",
    "cuda_kernel", "ptxas", "host_compile", "launch_params",
    "compile_time", "resharding", "host_program"};

std::optional<DumpOption> lookup(std::string_view name) {
  for (size_t i = 0; i < kDumpOptionNames.size(); ++i) {
    if (kDumpOptionNames[i] == name) return static_cast<DumpOption>(i);
  }
  return std::nullopt;
}

// Splits on commas that are not inside parentheses.
std::vector<std::string_view> splitTopLevel(std::string_view spec) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < spec.size(); ++i) {
    char c = spec[i];
    if (c == '(') ++depth;
    if (c == ')') {
      LOOM_CHECK(depth > 0, "LOOM_DUMP: unbalanced ')' at column ", i + 1, " in '", spec, "'");
      --depth;
    }
    if (c == ',' && depth == 0) {
      items.push_back(spec.substr(start, i - start));
      start = i + 1;
    }
  }
  LOOM_CHECK(depth == 0, "LOOM_DUMP: missing ')' in '", spec, "'");
  items.push_back(spec.substr(start));
  return items;
}

}  // namespace

std::string_view dumpOptionName(DumpOption option) {
  return kDumpOptionNames.at(static_cast<size_t>(option));
}

DumpOptions DumpOptions::parse(std::string_view spec) {
  DumpOptions options;
  if (trim(spec).empty()) return options;
  for (std::string_view raw : splitTopLevel(spec)) {
    std::string_view item = trim(raw);
    if (item.empty()) continue;
    std::string_view name = item;
    std::vector<std::string> args;
    if (auto open = item.find('('); open != std::string_view::npos) {
      LOOM_CHECK(item.back() == ')', "LOOM_DUMP: expected ')' at the end of '", item, "'");
      name = trim(item.substr(0, open));
      for (auto& a : split(item.substr(open + 1, item.size() - open - 2), ',')) {
        auto t = trim(a);
        if (!t.empty()) args.emplace_back(t);
      }
    }
    auto option = lookup(name);
    LOOM_CHECK(option.has_value(), "LOOM_DUMP: unknown option '", name,
               "'; valid options are: ", join(kDumpOptionNames));
    options.enable(*option, std::move(args));
  }
  return options;
}

const DumpOptions& DumpOptions::fromEnvironment() {
  static const DumpOptions options = parse(getEnv("LOOM_DUMP").value_or(""));
  return options;
}

const std::vector<std::string>& DumpOptions::args(DumpOption option) const {
  static const std::vector<std::string> kNone;
  auto it = enabled_.find(option);
  return it == enabled_.end() ? kNone : it->second;
}

bool DumpOptions::hasWithArg(DumpOption option, std::string_view arg) const {
  auto it = enabled_.find(option);
  if (it == enabled_.end()) return false;
  if (it->second.empty()) return true;
  for (const auto& a : it->second) {
    if (a == arg) return true;
  }
  return false;
}

namespace {

constexpr std::array<std::string_view, static_cast<size_t>(DebugOption::kCount)>
    kDebugOptionNames = {"verify_kernel_ir", "verify_ir"};

}  // namespace

std::string_view debugOptionName(DebugOption option) {
  return kDebugOptionNames.at(static_cast<size_t>(option));
}

DebugOptions DebugOptions::parse(std::string_view spec) {
  DebugOptions options;
  for (auto& raw : split(spec, ',')) {
    std::string_view name = trim(raw);
    if (name.empty()) continue;
    LOOM_CHECK(name.find('(') == std::string_view::npos, "LOOM_DEBUG: '", name,
               "': debug options take no arguments");
    bool found = false;
    for (size_t i = 0; i < kDebugOptionNames.size(); ++i) {
      if (kDebugOptionNames[i] == name) {
        options.enable(static_cast<DebugOption>(i));
        found = true;
      }
    }
    LOOM_CHECK(found, "LOOM_DEBUG: unknown option '", name,
               "'; valid options are: ", join(kDebugOptionNames));
  }
  return options;
}

const DebugOptions& DebugOptions::fromEnvironment() {
  static const DebugOptions options = parse(getEnv("LOOM_DEBUG").value_or(""));
  return options;
}

std::optional<std::string> getEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace loom
