// SPDX-License-Identifier: Apache-2.0
// Parsing of LOOM_DUMP, LOOM_DEBUG and LOOM_DISABLE, their help, and per-thread scopes.
#include "loom/support/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom {
namespace {

// What LOOM_DUMP may name, in DumpOption order, with the line `loom --help` and README.md show.
struct NamedOption {
  std::string_view name;
  std::string_view arguments;  // what may go in parentheses; empty when nothing
  std::string_view description;
};

constexpr std::array<NamedOption, static_cast<size_t>(DumpOption::kCount)> kDumpOptions = {{
    {"fusion_ir", "input|pass",
     "the fusion before the pre-segmentation passes and after each that changed it; "
     "(input) or pass names pick some"},
    {"fusion_ir_scheduled", "", "each segment's fusion after its scheduler transformed it"},
    {"scheduler_params", "", "each segment's heuristic parameters (the names --params tunes)"},
    {"segments", "", "how the fusion was split into kernels and communications"},
    {"kernel_ir", "pass",
     "the kernel IR after each lowering pass that changed it; pass names pick some"},
    {"cuda_kernel", "", "the CUDA C++ generated for each kernel"},
    {"ptxas", "", "registers, spills and stack of each kernel, from the CUDA compiler"},
    {"host_compile", "", "the host backend's compiler command line for each kernel"},
    {"launch_params", "", "grid, block and dynamic shared memory of each kernel launch"},
    {"compile_time", "", "wall time of each step of a cache miss (segment, schedule, lower, ...)"},
    {"resharding", "", "each resharding expression: why, and the communication it becomes"},
    {"host_program", "", "what a runtime runs, in order, per device: kernels and communications"},
    {"scheduler_choice", "",
     "each fusion offered to the scheduler registry: the scheduler chosen and why each other one "
     "rejected it"},
}};

constexpr std::array<std::string_view, kDumpOptions.size()> dumpNames() {
  std::array<std::string_view, kDumpOptions.size()> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kDumpOptions[i].name;
  return names;
}
constexpr std::array<std::string_view, kDumpOptions.size()> kDumpOptionNames = dumpNames();

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

std::string_view dumpOptionArguments(DumpOption option) {
  return kDumpOptions.at(static_cast<size_t>(option)).arguments;
}

std::string_view dumpOptionDescription(DumpOption option) {
  return kDumpOptions.at(static_cast<size_t>(option)).description;
}

DumpOptions DumpOptions::parse(std::string_view spec, bool* help) {
  DumpOptions options;
  if (help != nullptr) *help = false;
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
    if (help != nullptr && name == "help" && args.empty()) {
      *help = true;
      continue;
    }
    auto option = lookup(name);
    LOOM_CHECK(option.has_value(), "LOOM_DUMP: unknown option '", name,
               "'; valid options are: ", join(kDumpOptionNames),
               " (LOOM_DUMP=help says what each prints)");
    options.enable(*option, std::move(args));
  }
  return options;
}

void DumpOptions::merge(const DumpOptions& other) {
  for (const auto& [option, args] : other.enabled_) {
    auto it = enabled_.find(option);
    if (it == enabled_.end()) {
      enabled_[option] = args;
    } else if (it->second.empty() || args.empty()) {
      it->second.clear();  // no arguments: every pass
    } else {
      for (const std::string& a : args) {
        if (std::find(it->second.begin(), it->second.end(), a) == it->second.end()) {
          it->second.push_back(a);
        }
      }
    }
  }
}

std::string dumpOptionsHelp() {
  std::string out;
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    const auto o = DumpOption(i);
    std::string name(dumpOptionName(o));
    if (!dumpOptionArguments(o).empty()) name += fmt::format("({})", dumpOptionArguments(o));
    out += fmt::format("  {:<23} {}\n", name, dumpOptionDescription(o));
  }
  return out;
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

constexpr std::array<NamedOption, static_cast<size_t>(DebugOption::kCount)> kDebugOptions = {{
    {"verify_kernel_ir", "", "runs the kernel-IR verifier after every lowering pass"},
    {"verify_ir", "", "runs ir::verify on every fusion a scheduler scheduled"},
}};

constexpr std::array<std::string_view, kDebugOptions.size()> debugNames() {
  std::array<std::string_view, kDebugOptions.size()> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kDebugOptions[i].name;
  return names;
}
constexpr std::array<std::string_view, kDebugOptions.size()> kDebugOptionNames = debugNames();

}  // namespace

std::string_view debugOptionName(DebugOption option) {
  return kDebugOptionNames.at(static_cast<size_t>(option));
}

std::string_view debugOptionDescription(DebugOption option) {
  return kDebugOptions.at(static_cast<size_t>(option)).description;
}

DebugOptions DebugOptions::parse(std::string_view spec, bool* help) {
  DebugOptions options;
  if (help != nullptr) *help = false;
  for (auto& raw : split(spec, ',')) {
    std::string_view name = trim(raw);
    if (name.empty()) continue;
    if (help != nullptr && name == "help") {
      *help = true;
      continue;
    }
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

std::string debugOptionsHelp() {
  std::string out;
  for (size_t i = 0; i < size_t(DebugOption::kCount); ++i) {
    const auto o = DebugOption(i);
    out += fmt::format("  {:<23} {}\n", debugOptionName(o), debugOptionDescription(o));
  }
  return out;
}

struct ScopedOptions::Frame {
  DumpOptions dump;
  DebugOptions debug;
  std::unordered_set<std::string> disabled;
  const Frame* previous = nullptr;
};

namespace {

// The innermost ScopedOptions of this thread, or null.
thread_local const ScopedOptions::Frame* tl_scope = nullptr;

// The environment's options, read once; LOOM_DUMP=help and LOOM_DEBUG=help list the names on
// the dump sink then (where a program's dumps go, so an embedding program shows them too).
const DumpOptions& environmentDumps() {
  static const DumpOptions options = [] {
    bool help = false;
    DumpOptions o = DumpOptions::parse(getEnv("LOOM_DUMP").value_or(""), &help);
    if (help) {
      dumpSink() << "LOOM_DUMP names (LOOM_DUMP=a,b(arg),...):\n" << dumpOptionsHelp();
    }
    return o;
  }();
  return options;
}

const DebugOptions& environmentDebug() {
  static const DebugOptions options = [] {
    bool help = false;
    DebugOptions o = DebugOptions::parse(getEnv("LOOM_DEBUG").value_or(""), &help);
    if (help) dumpSink() << "LOOM_DEBUG names (LOOM_DEBUG=a,b):\n" << debugOptionsHelp();
    return o;
  }();
  return options;
}

const std::unordered_set<std::string>& environmentDisabled() {
  static const std::unordered_set<std::string> names =
      parseDisabledPasses(getEnv("LOOM_DISABLE").value_or(""));
  return names;
}

}  // namespace

const DumpOptions& DumpOptions::fromEnvironment() {
  return tl_scope != nullptr ? tl_scope->dump : environmentDumps();
}

const DebugOptions& DebugOptions::fromEnvironment() {
  return tl_scope != nullptr ? tl_scope->debug : environmentDebug();
}

ScopedOptions::ScopedOptions(const DumpOptions& dump, const DebugOptions& debug,
                             const std::unordered_set<std::string>& disabled)
    : frame_(std::make_unique<Frame>()) {
  frame_->dump = DumpOptions::fromEnvironment();
  frame_->dump.merge(dump);
  frame_->debug = DebugOptions::fromEnvironment();
  frame_->debug.merge(debug);
  frame_->disabled = disabledPassesFromEnvironment();
  frame_->disabled.insert(disabled.begin(), disabled.end());
  frame_->previous = tl_scope;
  tl_scope = frame_.get();
}

ScopedOptions::~ScopedOptions() { tl_scope = frame_->previous; }

std::optional<std::string> getEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::unordered_set<std::string> parseDisabledPasses(std::string_view spec) {
  std::unordered_set<std::string> names;
  for (const std::string& piece : split(spec, ',')) {
    std::string_view name = trim(piece);
    if (!name.empty()) names.emplace(name);
  }
  return names;
}

const std::unordered_set<std::string>& disabledPassesFromEnvironment() {
  return tl_scope != nullptr ? tl_scope->disabled : environmentDisabled();
}

}  // namespace loom
