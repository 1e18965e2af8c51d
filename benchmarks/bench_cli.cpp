// SPDX-License-Identifier: Apache-2.0
// Parsing of loom_bench's command line.
#include "benchmarks/bench_cli.h"

#include <charconv>
#include <memory>
#include <sstream>

#include "benchmarks/bench_cases.h"
#include "loom/support/strings.h"

namespace loom::bench {
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

void parseCommandLine(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ExtrasError&) {
    const std::vector<std::string> extras = app.remaining();
    throw UsageError("unknown argument '" + (extras.empty() ? std::string("?") : extras.front()) +
                     "' (see --help)");
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // CLI11: "--json: 1 required TEXT missing", "skip-host was given a disallowed flag override".
    if (auto at = what.find(": 1 required"); at != std::string::npos) {
      throw UsageError(what.substr(0, at) + " expects a value");
    }
    if (auto at = what.find(" was given a disallowed flag override"); at != std::string::npos) {
      throw UsageError("--" + what.substr(0, at) + " takes no value");
    }
    throw UsageError(what);
  }
}

namespace {

// The raw text of the options whose values are checked after parsing.
struct RawOptions {
  std::string cases, dtypes, reps, warmup, hostCalls, params;
  std::string sweepFamilies, sweepWidths, sweepRegimes, sweepRows, backend;
};

std::unique_ptr<CLI::App> makeApp(Options& o, RawOptions& raw) {
  auto app = std::make_unique<CLI::App>(
      "Times Loom's kernels on the cases of shared/docs/performance.md with CUDA events (L2\n"
      "flushed before each repetition), checks their outputs, measures the host overhead of a\n"
      "cached launch and the cold and warm compile time. Needs a GPU (exit status 2 without\n"
      "one). benchmarks/README.md describes the JSON.",
      "loom_bench");
  app->set_help_flag();
  app->get_formatter()->column_width(26);
  app->add_flag("-h,--help", o.help, "print this message and exit")->disable_flag_override();
  app->add_option("--json", o.jsonPath, "write the raw numbers to FILE (schema loom-bench-loom/1)")
      ->type_name("FILE");
  std::string case_names;
  for (const Case& c : allCases()) case_names += "\n  " + c.name;
  app->add_option("--cases", raw.cases, "comma-separated case names (default: all)")
      ->type_name("LIST");
  app->add_option("--dtypes", raw.dtypes, "fp32, bf16 or both (default: both)")->type_name("LIST");
  app->add_option(
         "--reps", raw.reps,
         "timed repetitions per case, at least " + std::to_string(kMinReps) + " (default 100)")
      ->type_name("N");
  app->add_option("--warmup", raw.warmup,
                  "untimed runs after the first (compiling) run (default 10)")
      ->type_name("N");
  app->add_option("--host-calls", raw.hostCalls,
                  "timed calls for the host overhead, at least " + std::to_string(kMinHostCalls) +
                      " (default 5000)")
      ->type_name("N");
  app->add_flag("--skip-host", o.skipHost, "do not measure the host overhead of a cached launch")
      ->disable_flag_override();
  app->add_flag("--skip-compile", o.skipCompile, "do not measure the cold and warm compile time")
      ->disable_flag_override();
  app->add_option("--compile-case", o.compileCase,
                  "the case (fp32) whose compile time is measured (default "
                  "layer_norm_16384x4096)")
      ->type_name("C");
  app->add_option("--params", raw.params,
                  "heuristic fields to set on every kernel, for tuning, e.g. bdimx=16,bdimy=32 "
                  "(names as LOOM_DUMP=scheduler_params prints)")
      ->type_name("LIST");
  app->add_flag("--sweep", o.sweep,
                "time the shape sweep (5 families x fp32/bf16 x widths 256..131072 and model "
                "widths x 2 regimes) instead of the cases; reps 30, warm-up 5 unless given")
      ->disable_flag_override();
  app->add_option("--sweep-families", raw.sweepFamilies,
                  "part of the sweep: layer_norm, rms_norm, softmax, var_mean, sum_dim0")
      ->type_name("LIST");
  app->add_option("--sweep-widths", raw.sweepWidths, "part of the sweep: row widths")
      ->type_name("LIST");
  app->add_option("--sweep-regimes", raw.sweepRegimes,
                  "part of the sweep: bandwidth (R x H = 2^26), latency (2^20)")
      ->type_name("LIST");
  app->add_option("--sweep-rows", raw.sweepRows,
                  "rows of every sweep shape instead of the regime's (smoke runs)")
      ->type_name("N");
  app->add_option("--list-sweep", o.listSweepPath,
                  "write the sweep's shapes to FILE as JSON and exit (no GPU needed)")
      ->type_name("FILE");
  app->add_option("--backend", raw.backend,
                  "cuda (default) or host: with --sweep, run each shape once on the host backend "
                  "and check it, no timing (no GPU needed)")
      ->type_name("B");
  // Hidden: the parent re-executes itself with it (bench_cli.h).
  app->add_flag("--compile-probe", o.compileProbe, "")->group("")->disable_flag_override();
  app->footer("Cases:" + case_names);
  return app;
}

// The sweep's options, checked against the families, regimes and the flags they need.
void parseSweepOptions(const CLI::App& app, const RawOptions& raw, Options& o) {
  if (app.count("--sweep-families") > 0) {
    for (const std::string& f : splitList(raw.sweepFamilies)) {
      std::optional<Op> op = parseFamily(f);
      if (!op) {
        throw UsageError("--sweep-families: unknown family '" + f + "' (known: " +
                         knownFamilyNames() + ")");
      }
      o.sweepSpec.families.push_back(*op);
    }
    if (o.sweepSpec.families.empty()) throw UsageError("--sweep-families expects a family");
  }
  if (app.count("--sweep-widths") > 0) {
    for (const std::string& w : splitList(raw.sweepWidths)) {
      o.sweepSpec.widths.push_back(parseCount("--sweep-widths", w, 1));
    }
    if (o.sweepSpec.widths.empty()) throw UsageError("--sweep-widths expects a width");
  }
  if (app.count("--sweep-regimes") > 0) {
    for (const std::string& r : splitList(raw.sweepRegimes)) {
      std::optional<Regime> regime = parseRegime(r);
      if (!regime) {
        throw UsageError("--sweep-regimes: unknown regime '" + r +
                         "' (expected bandwidth or latency)");
      }
      o.sweepSpec.regimes.push_back(*regime);
    }
    if (o.sweepSpec.regimes.empty()) throw UsageError("--sweep-regimes expects a regime");
  }
  if (app.count("--sweep-rows") > 0) o.sweepSpec.rows = parseCount("--sweep-rows", raw.sweepRows, 1);
  if (app.count("--backend") > 0) {
    if (raw.backend != "host" && raw.backend != "cuda") {
      throw UsageError("--backend expects host or cuda, got '" + raw.backend + "'");
    }
    o.hostBackend = raw.backend == "host";
  }
  bool sweepPart = app.count("--sweep-families") + app.count("--sweep-widths") +
                       app.count("--sweep-regimes") + app.count("--sweep-rows") > 0;
  if ((sweepPart || o.hostBackend) && !o.sweep && o.listSweepPath.empty()) {
    throw UsageError("--sweep-* options and --backend host need --sweep (or --list-sweep)");
  }
  if (o.sweep && app.count("--cases") > 0) {
    throw UsageError("--cases and --sweep cannot be combined: --sweep-* options choose a part");
  }
  if (o.sweep) {
    if (app.count("--reps") == 0) o.reps = 30;
    if (app.count("--warmup") == 0) o.warmup = 5;
    o.skipHost = true;
    o.skipCompile = true;
  }
}

}  // namespace

std::string usage() {
  Options o;
  RawOptions raw;
  return makeApp(o, raw)->help();
}

Options parseArgs(const std::vector<std::string>& args) {
  Options o;
  RawOptions raw;
  std::unique_ptr<CLI::App> app = makeApp(o, raw);
  parseCommandLine(*app, args);
  if (app->count("--json") > 0 && o.jsonPath.empty())
    throw UsageError("--json expects a file name");
  if (app->count("--cases") > 0) {
    o.cases = splitList(raw.cases);
    if (o.cases.empty()) throw UsageError("--cases expects at least one case name");
    for (const auto& name : o.cases) {
      if (findCase(name) == nullptr) {
        std::vector<std::string> names;
        for (const Case& c : allCases()) names.push_back(c.name);
        throw UsageError("--cases: unknown case '" + name + "' (known: " + join(names) + ")");
      }
    }
  }
  if (findCase(o.compileCase) == nullptr) {
    throw UsageError("--compile-case: unknown case '" + o.compileCase + "'");
  }
  if (app->count("--dtypes") > 0) {
    o.dtypes = splitList(raw.dtypes);
    if (o.dtypes.empty()) throw UsageError("--dtypes expects fp32, bf16 or both");
    for (const auto& d : o.dtypes) {
      if (d != "fp32" && d != "bf16") {
        throw UsageError("--dtypes: unknown dtype '" + d + "' (expected fp32 or bf16)");
      }
    }
  }
  if (app->count("--reps") > 0) o.reps = parseCount("--reps", raw.reps, kMinReps);
  if (app->count("--warmup") > 0) o.warmup = parseCount("--warmup", raw.warmup, 0);
  if (app->count("--host-calls") > 0) {
    o.hostCalls = parseCount("--host-calls", raw.hostCalls, kMinHostCalls);
  }
  parseSweepOptions(*app, raw, o);
  if (app->count("--params") > 0) {
    std::vector<std::string> items = splitList(raw.params);
    if (items.empty()) throw UsageError("--params expects name=value pairs such as bdimx=16");
    for (const std::string& item : items) {
      auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw UsageError("--params expects name=value pairs such as bdimx=16, got '" + item + "'");
      }
      o.params.emplace_back(item.substr(0, eq),
                            parseCount("--params " + item.substr(0, eq), item.substr(eq + 1), 0));
    }
  }
  return o;
}

}  // namespace loom::bench
