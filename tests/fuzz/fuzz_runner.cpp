// SPDX-License-Identifier: Apache-2.0
// The fuzzer's runner (see fuzz_runner.h): one seed through FusionExecutorCache against the
// reference evaluator, and the classes failures are grouped by.
#include "fuzz/fuzz_runner.h"

#include "fuzz/fuzz_rng.h"
#include "fuzz/text_mutations.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <typeinfo>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/printer.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/scheduler/registry.h"
#include "loom/support/error.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::fuzz {
namespace {

constexpr double kPoisonInt = -1234567.0;  // loom::poison's integer marker

// Numbers and tensor names vary between failures of one check: elide them.
std::string normalize(std::string_view text, size_t max_len) {
  std::string s(text.substr(0, text.find('\n')));
  static const std::regex hex_name("[A-Za-z_]*[0-9a-f]{12,}");
  static const std::regex tensor_name("\\b(T|i|s)[0-9]+\\b");
  s = std::regex_replace(s, hex_name, "<hash>");
  static const std::regex number("[0-9]+");
  s = std::regex_replace(s, tensor_name, "$1#");
  s = std::regex_replace(s, number, "#");
  if (s.size() > max_len) {
    // Cut at a UTF-8 character boundary (compilers quote names with multi-byte quotes).
    while (max_len > 0 && (static_cast<unsigned char>(s[max_len]) & 0xC0) == 0x80) --max_len;
    s = s.substr(0, max_len) + "...";
  }
  return s;
}

std::string exceptionKind(const std::exception& e) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (dynamic_cast<const cuda::CudaError*>(&e) != nullptr) return "CudaError";
#endif
  if (dynamic_cast<const InternalError*>(&e) != nullptr) return "InternalError";
  if (dynamic_cast<const UserError*>(&e) != nullptr) return "UserError";
  if (dynamic_cast<const UnavailableError*>(&e) != nullptr) return "UnavailableError";
  if (dynamic_cast<const Error*>(&e) != nullptr) return "Error";
  if (dynamic_cast<const GeneratorError*>(&e) != nullptr) return "GeneratorError";
  return std::string("std::exception (") + typeid(e).name() + ")";
}

// Bytes of every tensor argument's storage, to detect a kernel writing its inputs.
std::vector<std::vector<unsigned char>> snapshot(const std::vector<eval::Argument>& args) {
  std::vector<std::vector<unsigned char>> out;
  for (const eval::Argument& a : args) {
    const auto* t = std::get_if<Tensor>(&a);
    if (t == nullptr) {
      out.emplace_back();
      continue;
    }
    const auto* p = static_cast<const unsigned char*>(t->storage()->data());
    out.emplace_back(p, p + t->storage()->nbytes());
  }
  return out;
}

struct Mismatch {
  int rank = 0;  // severity: the worst kind names the seed's class
  std::string kind;
  std::string message;
};

// nullopt when `actual` matches; otherwise what kind of mismatch it is.
std::optional<Mismatch> compareOutput(const Tensor& actual, const Tensor& expected,
                                      eval::Tolerance tol, const std::string& what) {
  auto err = eval::expectClose(actual, expected, tol, what);
  if (!err) return std::nullopt;
  Mismatch m;
  m.message = *err;
  if (!actual.defined() || actual.sizes() != expected.sizes() ||
      actual.dtype() != expected.dtype()) {
    m.rank = 4;
    m.kind = "wrong shape or dtype";
    return m;
  }
  const bool floating = isFloatingType(expected.dtype());
  int64_t unwritten = 0;
  double worst = 0;  // largest error in units of the tolerance
  bool gross = false;
  for (int64_t i = 0, n = expected.numel(); i < n; ++i) {
    double a = actual.getDoubleLinear(i);
    double e = expected.getDoubleLinear(i);
    if (floating ? (std::isnan(a) && !std::isnan(e)) : (a == kPoisonInt && e != kPoisonInt)) {
      ++unwritten;
      continue;
    }
    if (std::isnan(a) && std::isnan(e)) continue;
    if (!std::isfinite(a) || !std::isfinite(e)) {
      if (a != e) gross = true;
      continue;
    }
    double allowed = tol.atol + tol.rtol * std::fabs(e);
    double diff = std::fabs(a - e);
    if (diff > allowed) {
      if (allowed == 0) {
        gross = true;
      } else {
        worst = std::max(worst, diff / allowed);
      }
    }
  }
  if (unwritten > 0) {
    m.rank = 3;
    m.kind = "unwritten elements (poison)";
  } else if (gross || worst > 8) {
    m.rank = 2;
    m.kind = "wrong values";
  } else {
    m.rank = 1;
    m.kind = "small error (under 8x the tolerance)";
  }
  return m;
}

std::string schedulersOf(runtime::FusionExecutorCache& cache, int64_t* kernels,
                         std::string* detail) {
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  if (rt == nullptr) return "";
  std::set<std::string> names;
  std::ostringstream os;
  for (const runtime::SegmentRecord& r : rt->lastRun()) {
    names.insert(r.scheduler);
    os << "  segment " << r.segment << ": " << r.scheduler << " " << r.params << " grid ["
       << r.launch.grid[0] << ", " << r.launch.grid[1] << ", " << r.launch.grid[2] << "] block ["
       << r.launch.block[0] << ", " << r.launch.block[1] << ", " << r.launch.block[2] << "]\n";
  }
  if (kernels != nullptr) *kernels = int64_t(rt->lastRun().size());
  if (detail != nullptr) *detail = os.str();
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

std::string caseText(const FuzzCase& c, const std::string& fusion_text,
                     const std::vector<eval::Argument>& args, const std::string& args_label) {
  std::ostringstream os;
  os << "fusion (" << c.fusion->exprs().size() << " exprs, " << c.outputs.size()
     << " outputs):\n"
     << fusion_text;
  if (!fusion_text.empty() && fusion_text.back() != '\n') os << "\n";
  os << "inputs (" << args_label << "):\n" << describeArguments(c, args);
  os << "generator steps:\n";
  for (const std::string& s : c.steps) os << "  " << s << "\n";
  os << "outputs:";
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    os << " " << c.outputs[i].name << " (tol x" << c.outputs[i].tolScale << ")";
  }
  os << "\nfeatures:";
  for (const std::string& f : c.features) os << " " << f;
  os << "\n";
  return os.str();
}

// The hand-edited schedule of a one-kernel case (RunnerOptions::handSchedules): the automatic
// schedule of the cache's only segment with intermediates moved to random memory types, lowered
// and run by a KernelExecutor. nullopt when there is nothing to edit or lowering refused the
// edit (recorded as a feature); otherwise the verdict of the run.
struct HandRun {
  Verdict verdict = Verdict::Pass;
  std::string failureClass;
  std::string error;
  std::string report;
};

std::optional<HandRun> runHandSchedule(FuzzCase& c, runtime::FusionExecutorCache& cache,
                                       const std::vector<eval::Argument>& args,
                                       const std::vector<Tensor>& expected,
                                       const RunnerOptions& options) {
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  if (rt == nullptr || rt->segmented().segments().size() != 1) return std::nullopt;
  const segmenter::SegmentedFusion& sf = rt->segmented();
  const segmenter::Segment& seg = sf.segments().front();
  // The kernel's parameters must be the fusion's own inputs and outputs, in order.
  if (seg.fusion.inputs != sf.original().inputs() ||
      seg.fusion.outputs != sf.original().outputs()) {
    return std::nullopt;
  }
  for (ir::Val* out : sf.original().outputs()) {
    if (sf.original().isInput(out)) return std::nullopt;
  }
  std::unique_ptr<ir::Fusion> fusion = seg.fusion.fusion->clone();
  scheduler::applyScheduler(scheduler::schedulerFor(seg.kernel()->scheduler), *fusion,
                            *seg.kernel()->params);

  Rng rng(deriveSeed(c.seed, 0x48414e44));  // "HAND"
  const std::vector<ir::MemoryType> types = {ir::MemoryType::Local, ir::MemoryType::Shared,
                                             ir::MemoryType::Global};
  std::string edits;
  for (ir::TensorView* tv : fusion->allTvs()) {
    if (tv->isFusionInput() || tv->isFusionOutput() || !rng.chance(0.5)) continue;
    ir::MemoryType m = rng.pick(types);
    if (m == tv->memoryType()) continue;
    tv->setMemoryType(m);
    edits += "  " + tv->toString() + " -> " + std::string(ir::memoryTypeName(m)) + "\n";
  }
  if (edits.empty()) return std::nullopt;
  c.features.insert("hand-memory-types");
  auto report = [&](const std::string& extra) {
    return "hand schedule: the automatic schedule of the only segment (" +
           seg.what() +
           ") with these memory types:\n" + edits + "scheduled fusion:\n" +
           ir::printFusion(*fusion) + extra;
  };
  exec::KernelExecutor ke;
  try {
    ke.compile(*fusion, options.backend,
               {.poisonOutputs = true,
                .lowering = {.peelVectorRows = seg.kernel()->params->peelVectorRows()}});
  } catch (const UserError&) {
    c.features.insert("hand-refused");  // a schedule lowering cannot run, refused by name
    return std::nullopt;
  } catch (const std::exception& e) {
    return HandRun{Verdict::LoomError, classifyException(e) + " (hand schedule)", e.what(),
                   report("")};
  }
  std::vector<Tensor> actual;
  try {
    actual = ke.run(args);
  } catch (const std::exception& e) {
    return HandRun{Verdict::LoomError, classifyException(e) + " (hand schedule)", e.what(),
                   report("")};
  }
  std::optional<Mismatch> worst;
  std::string messages;
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    eval::Tolerance tol = outputTolerance(c, i, expected[i].dtype(), c.classValues);
    if (auto m = compareOutput(actual[i], expected[i], tol, "output " + std::to_string(i))) {
      messages += m->message + "\n";
      if (!worst || m->rank > worst->rank) worst = m;
    }
  }
  if (actual.size() != expected.size()) worst = Mismatch{5, "wrong number of outputs", ""};
  if (!worst) return std::nullopt;
  return HandRun{Verdict::Mismatch, "mismatch (hand schedule): " + worst->kind, messages,
                 report("kernel:\n" + ke.generated().kernelText)};
}

}  // namespace

std::string_view verdictName(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::LoomError: return "loom error";
    case Verdict::Mismatch: return "mismatch";
    case Verdict::GeneratorBug: return "generator bug";
    case Verdict::Crash: return "crash";
    case Verdict::Timeout: return "timeout";
  }
  return "?";
}

std::string classifyException(const std::exception& e) {
  std::string what = e.what();
  std::string location;
  std::string message = what;
  // Loom's messages start with "path:line: ".
  static const std::regex loc("^([A-Za-z0-9_./-]+:[0-9]+): ");
  std::smatch m;
  if (std::regex_search(what, m, loc)) {
    location = m[1];
    message = m.suffix();
  }
  if (const auto* le = dynamic_cast<const Error*>(&e)) message = le->reason();
  message = message.substr(0, message.find("; source written to"));
  std::string out = exceptionKind(e);
  if (!location.empty()) out += " at " + location;
  out += ": " + normalize(message, 90);
  // A failed kernel compile: the compiler's first error names the problem.
  if (what.find("compiling kernel") != std::string::npos ||
      what.find("could not compile") != std::string::npos) {
    auto pos = what.find("error: ", std::min(what.size(), what.find('\n')));
    if (pos != std::string::npos) out += " | " + normalize(std::string_view(what).substr(pos), 80);
  }
  return out;
}

std::string dumpSeed(uint64_t seed, const RunnerOptions& options) {
  FuzzCase c = generateCase(seed, options.generator);
  std::vector<eval::Argument> args = makeArguments(c, c.classValues, 0);
  std::string text = "seed " + std::to_string(seed) + "\n" +
                     caseText(c, c.fusion->toString(), args, "first run");
  if (c.resizedRun && options.extraRuns) {
    if (auto v = resizedClassValues(c, options.generator)) {
      text += "resized run:\n" + describeArguments(c, makeArguments(c, *v, 2));
    }
  }
  return text;
}

SeedResult runSeed(uint64_t seed, const RunnerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SeedResult res;
  res.seed = seed;
  auto finish = [&](Verdict v, std::string cls, std::string error, std::string report) {
    res.verdict = v;
    res.failureClass = std::move(cls);
    res.error = std::move(error);
    res.report = std::move(report);
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return res;
  };

  FuzzCase c;
  try {
    c = generateCase(seed, options.generator);
  } catch (const std::exception& e) {
    return finish(Verdict::GeneratorBug, "generator: building: " + classifyException(e), e.what(),
                  "the generator threw while building the fusion of this seed\n");
  }
  res.numExprs = int64_t(c.fusion->exprs().size());
  res.features.assign(c.features.begin(), c.features.end());
  const std::string fusion_text = c.fusion->toString();
  const std::unique_ptr<ir::Fusion> reference = c.fusion->clone();

  struct Plan {
    int run;
    std::vector<int64_t> values;
    std::string label;
  };
  std::vector<Plan> plans{{0, c.classValues, "first run"}};
  if (options.extraRuns) {
    plans.push_back({1, c.classValues, "second run, new values (cached)"});
    if (c.resizedRun) {
      if (auto v = resizedClassValues(c, options.generator)) {
        plans.push_back({2, *v, "resized run"});
        c.features.insert("resized-run");
        res.features.assign(c.features.begin(), c.features.end());
      }
    }
  }

  runtime::RuntimeOptions ro;
  ro.backend = options.backend;
  ro.executor.poisonOutputs = true;
  std::unique_ptr<runtime::FusionExecutorCache> cache;
  std::vector<eval::Argument> first_args = makeArguments(c, plans[0].values, 0);
  try {
    cache = std::make_unique<runtime::FusionExecutorCache>(c.fusion->clone(), ro);
  } catch (const std::exception& e) {
    return finish(Verdict::LoomError, classifyException(e), e.what(),
                  caseText(c, fusion_text, first_args, plans[0].label));
  }

  std::vector<Tensor> first_expected;
  for (const Plan& plan : plans) {
    std::vector<eval::Argument> args =
        plan.run == 0 ? first_args : makeArguments(c, plan.values, plan.run);
    const std::string suffix = plan.run == 0 ? "" : " (" + plan.label + ")";
    std::vector<Tensor> expected;
    try {
      expected = eval::evaluateFusion(*reference, args);
    } catch (const std::exception& e) {
      return finish(Verdict::GeneratorBug, "generator: reference: " + classifyException(e),
                    e.what(), caseText(c, fusion_text, args, plan.label));
    }
    const auto before = snapshot(args);
    std::vector<Tensor> actual;
    try {
      actual = cache->run(args);
    } catch (const std::exception& e) {
      return finish(Verdict::LoomError, classifyException(e) + suffix, e.what(),
                    caseText(c, fusion_text, args, plan.label));
    }
    std::string segments;
    std::string scheds = schedulersOf(*cache, plan.run == 0 ? &res.kernels : nullptr, &segments);
    if (plan.run == 0) res.schedulers = scheds;
    std::optional<Mismatch> worst;
    std::string messages;
    if (actual.size() != expected.size()) {
      worst = Mismatch{5, "wrong number of outputs", ""};
      messages = std::to_string(actual.size()) + " outputs, expected " +
                 std::to_string(expected.size()) + "\n";
    } else {
      for (size_t i = 0; i < actual.size(); ++i) {
        eval::Tolerance tol = outputTolerance(c, i, expected[i].dtype(), plan.values);
        std::string what = "output " + std::to_string(i) + " (" + c.outputs[i].name + ")";
        if (auto m = compareOutput(actual[i], expected[i], tol, what)) {
          messages += m->message + "\n";
          if (!worst || m->rank > worst->rank) worst = m;
        }
      }
    }
    if (snapshot(args) != before) {
      messages += "an input's storage changed during the run\n";
      if (!worst || worst->rank < 6) worst = Mismatch{6, "input overwritten", ""};
    }
    if (worst) {
      std::string report = caseText(c, fusion_text, args, plan.label) + "kernels (" + plan.label +
                           "):\n" + segments;
      return finish(Verdict::Mismatch,
                    "mismatch: " + worst->kind + " [" + scheds + "]" + suffix, messages, report);
    }
    if (plan.run == 0) first_expected = std::move(expected);
  }
  // The hand-edited schedule, after the automatic path passed (its first run's segmentation).
  if (options.handSchedules && deriveSeed(seed, 0x48414e44) % 3 == 0) {
    // The cache's last runtime is the one of the last plan; rerun the first plan's arguments so
    // that segment, arguments and expected values belong together.
    try {
      (void)cache->run(first_args);
    } catch (const std::exception& e) {
      return finish(Verdict::LoomError, classifyException(e) + " (rerun)", e.what(),
                    caseText(c, fusion_text, first_args, plans[0].label));
    }
    std::optional<HandRun> hand;
    try {
      hand = runHandSchedule(c, *cache, first_args, first_expected, options);
    } catch (const std::exception& e) {
      hand = HandRun{Verdict::LoomError, classifyException(e) + " (hand schedule)", e.what(), ""};
    }
    res.features.assign(c.features.begin(), c.features.end());
    if (hand) {
      return finish(hand->verdict, hand->failureClass, hand->error,
                    caseText(c, fusion_text, first_args, plans[0].label) + hand->report);
    }
  }
  if (options.textMutations) {
    auto failed = [&](Verdict v, const TextMutation& m, const std::string& problem) {
      res.features.assign(c.features.begin(), c.features.end());
      return finish(v, "text mutation (" + m.kind + "): " + normalize(problem, 60), problem,
                    caseText(c, fusion_text, first_args, plans[0].label) + "text mutation " +
                        m.kind + ": " + m.description + "\nmutated fusion:\n" + m.text);
    };
    std::vector<TextMutation> mutations;
    try {
      mutations = textMutations(c, fusion_text);
    } catch (const std::exception& e) {
      return finish(Verdict::LoomError, "printed fusion: " + classifyException(e), e.what(),
                    caseText(c, fusion_text, first_args, plans[0].label));
    }
    for (const TextMutation& m : mutations) {
      c.features.insert("text-mutation-" + m.kind);
      if (auto problem = checkParse(m)) return failed(Verdict::LoomError, m, *problem);
      if (m.kind != "cast") continue;
      std::optional<std::string> mismatch;
      try {
        mismatch = runCastMutation(c, m, first_args, options.backend);
      } catch (const std::exception& e) {
        return failed(Verdict::LoomError, m, classifyException(e) + "\n" + e.what());
      }
      if (mismatch) return failed(Verdict::Mismatch, m, "mismatch: " + *mismatch);
    }
    res.features.assign(c.features.begin(), c.features.end());
  }
  return finish(Verdict::Pass, "", "", "");
}

}  // namespace loom::fuzz
