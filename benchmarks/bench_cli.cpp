// SPDX-License-Identifier: Apache-2.0
// Parsing of loom_bench's command line.
#include "benchmarks/bench_cli.h"

#include <charconv>
#include <sstream>

#include "benchmarks/bench_cases.h"

namespace loom::bench {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

int64_t parseCount(const std::string& option, const std::string& text, int64_t minimum) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw UsageError(option + " expects a whole number, got '" + text + "'");
  }
  if (value < minimum) {
    throw UsageError(option + " must be at least " + std::to_string(minimum) + ", got " + text);
  }
  return value;
}


std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string usage() {
  std::ostringstream os;
  os << "usage: loom_bench [--json FILE] [--cases a,b] [--dtypes fp32,bf16] [--reps N]\n"
        "                  [--warmup N] [--host-calls N] [--skip-host] [--skip-compile]\n"
        "                  [--compile-case C] [--params name=value,...]\n"
        "\n"
        "Times Loom's kernels on the cases of shared/docs/performance.md with CUDA events\n"
        "(L2 flushed before each repetition), checks their outputs, measures the host overhead\n"
        "of a cached launch and the cold and warm compile time. Needs a GPU (exit status 2\n"
        "without one). benchmarks/README.md describes the JSON.\n"
        "\n"
        "  --json FILE      write the raw numbers to FILE (schema loom-bench-loom/1)\n"
        "  --cases LIST     comma-separated case names (default: all):\n";
  for (const Case& c : allCases()) os << "                     " << c.name << "\n";
  os << "  --dtypes LIST    fp32, bf16 or both (default: both)\n"
        "  --reps N         timed repetitions per case, at least "
     << kMinReps << " (default 100)\n"
        "  --warmup N       untimed runs after the first (compiling) run (default 10)\n"
        "  --host-calls N   timed calls for the host overhead, at least "
     << kMinHostCalls << " (default 5000)\n"
        "  --skip-host      do not measure the host overhead of a cached launch\n"
        "  --skip-compile   do not measure the cold and warm compile time\n"
        "  --compile-case C the case (fp32) whose compile time is measured\n"
        "                   (default layer_norm_16384x4096)\n"
        "  --params LIST    heuristic fields to set on every kernel, for tuning, e.g.\n"
        "                   bdimx=16,bdimy=32 (names as LOOM_DUMP=scheduler_params prints)\n";
  return os.str();
}

Options parseArgs(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool hasInlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInlineValue = true;
      }
    }
    auto takeValue = [&]() -> std::string {
      if (hasInlineValue) return value;
      if (i + 1 >= args.size()) throw UsageError(arg + " expects a value");
      return args[++i];
    };
    auto noValue = [&]() {
      if (hasInlineValue) throw UsageError(arg + " takes no value, got '" + value + "'");
    };
    if (arg == "-h" || arg == "--help") {
      noValue();
      o.help = true;
    } else if (arg == "--json") {
      o.jsonPath = takeValue();
      if (o.jsonPath.empty()) throw UsageError("--json expects a file name");
    } else if (arg == "--cases") {
      o.cases = splitList(takeValue());
      if (o.cases.empty()) throw UsageError("--cases expects at least one case name");
      for (const auto& name : o.cases) {
        if (findCase(name) == nullptr) {
          std::vector<std::string> names;
          for (const Case& c : allCases()) names.push_back(c.name);
          throw UsageError("--cases: unknown case '" + name + "' (known: " + joined(names) + ")");
        }
      }
    } else if (arg == "--compile-case") {
      o.compileCase = takeValue();
      if (findCase(o.compileCase) == nullptr) {
        throw UsageError("--compile-case: unknown case '" + o.compileCase + "'");
      }
    } else if (arg == "--dtypes") {
      o.dtypes = splitList(takeValue());
      if (o.dtypes.empty()) throw UsageError("--dtypes expects fp32, bf16 or both");
      for (const auto& d : o.dtypes) {
        if (d != "fp32" && d != "bf16") {
          throw UsageError("--dtypes: unknown dtype '" + d + "' (expected fp32 or bf16)");
        }
      }
    } else if (arg == "--reps") {
      o.reps = parseCount(arg, takeValue(), kMinReps);
    } else if (arg == "--warmup") {
      o.warmup = parseCount(arg, takeValue(), 0);
    } else if (arg == "--host-calls") {
      o.hostCalls = parseCount(arg, takeValue(), kMinHostCalls);
    } else if (arg == "--skip-host") {
      noValue();
      o.skipHost = true;
    } else if (arg == "--skip-compile") {
      noValue();
      o.skipCompile = true;
    } else if (arg == "--params") {
      std::vector<std::string> items = splitList(takeValue());
      if (items.empty()) throw UsageError("--params expects name=value pairs such as bdimx=16");
      for (const std::string& item : items) {
        auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0) {
          throw UsageError("--params expects name=value pairs such as bdimx=16, got '" + item + "'");
        }
        o.params.emplace_back(item.substr(0, eq),
                              parseCount("--params " + item.substr(0, eq), item.substr(eq + 1), 0));
      }
    } else if (arg == "--compile-probe") {
      noValue();
      o.compileProbe = true;
    } else {
      throw UsageError("unknown argument '" + args[i] + "' (see --help)");
    }
  }
  return o;
}

}  // namespace loom::bench
