// SPDX-License-Identifier: Apache-2.0
// `loom run`: schedule a fusion automatically, run it on random inputs, check it against the
// reference evaluator and report each kernel.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/support/checked_math.h"
#include "loom/support/strings.h"
#include "tools/loom/commands.h"
#include "tools/loom/random_inputs.h"
#include "tools/loom/sharded_run.h"
#include "loom/multidevice/sharding.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::tools {
namespace {

double maxError(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t k = 0; k < a.numel() && k < b.numel(); ++k) {
    double d = std::fabs(a.getDoubleLinear(k) - b.getDoubleLinear(k));
    if (std::isnan(d)) return NAN;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  std::string file;
  uint64_t seed = 0;
  bool bench = false;
  exec::Backend backend = exec::Backend::Auto;
  std::map<std::string, std::string> sizes;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--bench") {
      bench = true;
    } else if (a == "--seed" || a == "--sizes" || a == "--backend") {
      LOOM_CHECK(i + 1 < args.size(), a, " needs a value");
      const std::string& v = args[++i];
      if (a == "--seed") {
        seed = uint64_t(parseInteger(v, "--seed"));
      } else if (a == "--backend") {
        LOOM_CHECK(v == "host" || v == "cuda", "--backend must be host or cuda, got '", v, "'");
        backend = v == "host" ? exec::Backend::Host : exec::Backend::Cuda;
      } else {
        sizes = parseSizes(v);
      }
    } else if (!a.empty() && a[0] == '-') {
      LOOM_THROW("unknown option '", a, "' for run (expected --backend, --sizes, --seed, --bench)");
    } else {
      LOOM_CHECK(file.empty(), "run takes one file, got '", file, "' and '", a, "'");
      file = a;
    }
  }
  LOOM_CHECK(!file.empty(),
             "usage: loom run FILE.fus [--backend cuda|host] [--sizes s0=N,...] [--seed N] "
             "[--bench]");
  auto fusion = ir::parseFusionFile(file);
  std::vector<eval::Argument> inputs = randomInputs(*fusion, sizes, seed);
  if (multidevice::isMultidevice(*fusion)) {
    runtime::RuntimeOptions sharded_options;
    sharded_options.backend = exec::resolveBackend(backend);
    sharded_options.executor.poisonOutputs = true;
    return runSharded(std::move(fusion), inputs, sharded_options, bench);
  }
  std::vector<Tensor> expected = eval::evaluateFusion(*fusion, inputs);
  std::vector<std::string> names;
  for (ir::Val* out : fusion->outputs()) names.push_back(out->toString());
  int64_t input_numel = 1;
  for (const eval::Argument& a : inputs) {
    if (auto* t = std::get_if<Tensor>(&a)) input_numel = std::max(input_numel, t->numel());
  }

  runtime::RuntimeOptions options;
  options.backend = exec::resolveBackend(backend);
  options.executor.poisonOutputs = true;
  const bool on_device = options.backend == exec::Backend::Cuda;
  // On cuda the inputs move to the device once; the runs then use them in place (no copies).
  std::vector<eval::Argument> run_inputs = inputs;
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (on_device) {
    for (eval::Argument& a : run_inputs) {
      if (auto* t = std::get_if<Tensor>(&a)) *t = cuda::toDevice(*t);
    }
  }
#endif
  std::unique_ptr<ir::Fusion> timed_fusion = bench ? fusion->clone() : nullptr;
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  std::vector<Tensor> outs = cache.run(run_inputs);
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (on_device) {
    for (Tensor& t : outs) t = cuda::toHost(t);
  }
#endif

  bool ok = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    // Tolerance from the widest input over the output: the elements reduced into each output.
    int64_t reduced = std::max<int64_t>(1, input_numel / std::max<int64_t>(1, outs[i].numel()));
    auto err = eval::expectClose(outs[i], expected[i],
                                 eval::defaultTolerance(outs[i].dtype(), reduced), names[i]);
    char line[256];
    std::snprintf(line, sizeof(line), "%s %-4s [%s] %s max_error=%.3g", err ? "FAIL" : "PASS",
                  names[i].c_str(), join(outs[i].sizes()).c_str(),
                  std::string(dataTypeName(outs[i].dtype())).c_str(), maxError(outs[i], expected[i]));
    std::cout << line << "\n";
    if (err) std::cout << "  " << *err << "\n";
    ok = ok && !err;
  }

  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  std::vector<runtime::KernelRecord> records = rt->lastRun();
  std::cout << records.size() << " kernel(s)\n";
  for (const runtime::KernelRecord& r : records) {
    char line[512];
    std::snprintf(line, sizeof(line), "kernel %lld: %s on %s, %s",
                  static_cast<long long>(r.segment), r.scheduler.c_str(),
                  std::string(exec::backendName(r.backend)).c_str(), r.launch.toString().c_str());
    std::cout << line;
    if (!on_device) std::printf(", %.3f ms (host wall time of the first run)", r.seconds * 1e3);
    std::cout << "\n  params: " << r.params << "\n";
  }
  if (bench) {
    // A second cache without output poisoning, so the timed runs do only the fusion's work.
    runtime::RuntimeOptions timed_options = options;
    timed_options.executor.poisonOutputs = false;
    runtime::FusionExecutorCache timed(std::move(timed_fusion), timed_options);
    int64_t bytes = 0;
    for (const eval::Argument& a : run_inputs) {
      if (auto* t = std::get_if<Tensor>(&a)) bytes += t->numel() * int64_t(t->itemSize());
    }
    for (const Tensor& t : outs) bytes += t.numel() * int64_t(t.itemSize());
    constexpr int kWarmup = 3, kReps = 20;
    for (int r = 0; r < kWarmup; ++r) timed.run(run_inputs);
    double total_ms = 0;
    const char* how = "host wall time per run";
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (on_device) {
      how = "CUDA events around each run, L2 not flushed; benchmarks/ has the full protocol";
      cuda::Event start = cuda::Event::create(), stop = cuda::Event::create();
      for (int r = 0; r < kReps; ++r) {
        start.record(nullptr);
        timed.run(run_inputs);
        stop.record(nullptr);
        stop.synchronize();
        total_ms += double(cuda::Event::elapsedMs(start, stop));
      }
    }
#endif
    if (!on_device) {
      for (int r = 0; r < kReps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        timed.run(run_inputs);
        total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count();
      }
    }
    double ms = total_ms / kReps;
    std::printf("bench: %.3f ms per run (mean of %d, %s), %.3f GB/s over %lld bytes (inputs read "
                "once, outputs written once)\n",
                ms, kReps, how, ms > 0 ? double(bytes) / (ms * 1e-3) / 1e9 : 0.0,
                static_cast<long long>(bytes));
  }
  return ok ? 0 : 1;
}

}  // namespace loom::tools
