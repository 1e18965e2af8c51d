// SPDX-License-Identifier: Apache-2.0
// loom_bench: times Loom's kernels on the cases of shared/docs/performance.md and writes the JSON
// that benchmarks/compare.py merges with the torch baseline (benchmarks/README.md).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "benchmarks/bench_cases.h"
#include "benchmarks/bench_cli.h"
#include "benchmarks/bench_report.h"
#include "benchmarks/bench_sweep_run.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "benchmarks/bench_gpu.h"
#include "loom/backend/cuda/driver.h"
#include "loom/version.h"
#endif

namespace loom::bench {
namespace {

// Exit statuses: 2 for a bad command line or no GPU (as torch_baseline.py), 1 when a case failed.
constexpr int kExitUnavailable = 2;

#ifdef LOOM_HAVE_CUDA_BACKEND

constexpr int kExitFailed = 1;
// The H200's device-to-device copy ceiling, bytes read plus written (performance.md).
constexpr double kCopyCeilingTbps = 4.26;

void writeJson(const std::string& path, const std::string& gpu, const Options& o,
               const std::vector<CaseResult>& results, const HostOverhead* host,
               const CompileTimes* compile) {
  JsonWriter w;
  w.beginObject();
  w.key("schema").value("loom-bench-loom/1");
  w.key("date").value(utcTimestamp());
  w.key("gpu").value(gpu);
  w.key("loom").value(LOOM_VERSION_STRING);
  w.key("protocol").beginObject();
  w.key("timer").value("cuda events around FusionExecutorCache::run");
  w.key("reps").value(o.reps);
  w.key("warmup").value(o.warmup);
  w.key("flush_mb").value(256);
  w.endObject();
  w.key("copy_ceiling_tbps").value(kCopyCeilingTbps);
  w.key("results").beginArray();
  for (const CaseResult& r : results) {
    w.beginObject();
    w.key("case").value(r.name);
    w.key("dtype").value(r.dtype);
    w.key("shape").array(r.shape);
    w.key("bytes").value(r.bytes);
    if (r.error.empty()) {
      w.key("loom_us").value(r.us.median);
      w.key("loom_min_us").value(r.us.min);
      w.key("loom_mean_us").value(r.us.mean);
      w.key("loom_max_us").value(r.us.max);
      w.key("loom_tbps").value(tbps(r.bytes, r.us.median));
      w.key("reps").value(int64_t(r.repsUs.size()));
      w.key("reps_us").array(r.repsUs);
      w.key("kernels").value(r.kernels);
      w.key("scheduler").value(r.schedulers);
      w.key("params").value(r.params);
      w.key("first_run_ms").value(r.firstRunMs);
      w.key("check").value(r.check.ok ? "PASS" : "FAIL");
      w.key("check_detail").value(r.check.detail);
    } else {
      w.key("check").value("ERROR");
      w.key("error").value(r.error);
    }
    w.endObject();
  }
  w.endArray();
  w.key("host_overhead").beginArray();
  if (host != nullptr && host->error.empty()) {
    w.beginObject();
    w.key("case").value(host->case_);
    w.key("loom_us_per_call").value(host->us.median);
    w.key("loom_min_us_per_call").value(host->us.min);
    w.key("loom_mean_us_per_call").value(host->us.mean);
    w.key("loop_us_per_call").value(host->loopUsPerCall);
    w.key("calls").value(host->calls);
    w.key("kernels").value(host->kernels);
    w.key("check").value(host->check);
    w.endObject();
    w.beginObject();
    w.key("case").value("empty_kernel_launch");
    w.key("loom_us_per_call").value(host->launchUs.median);
    w.key("loom_min_us_per_call").value(host->launchUs.min);
    w.key("what").value("cuda::Function::launch (cuLaunchKernel) of an empty kernel");
    w.endObject();
  }
  w.endArray();
  if (host != nullptr && !host->error.empty()) w.key("host_overhead_error").value(host->error);
  if (compile != nullptr) {
    if (compile->error.empty()) {
      w.key("compile_ms").beginObject();
      w.key("cold").value(compile->coldMs);
      w.key("warm").value(compile->warmMs);
      w.key("cached_run").value(compile->cachedRunMs);
      w.endObject();
      w.key("compile_detail").beginObject();
      w.key("fusion").value(compile->case_ + " fp32");
      w.key("kernels").value(compile->kernels);
      w.key("cold_cubins_stored").value(compile->coldCubins);
      w.key("warm_new_cubins").value(compile->warmNewCubins);
      w.endObject();
    } else {
      w.key("compile_error").value(compile->error);
    }
  }
  w.endObject();
  std::ofstream os(path);
  os << w.str();
  LOOM_CHECK(os.good(), "cannot write the JSON file '", path, "'");
}

std::string caseLabel(const std::string& name) {
  const Case* c = findCase(name);
  return c ? c->label : name;
}

void printReport(const std::vector<CaseResult>& results, const HostOverhead* host,
                 const CompileTimes* compile) {
  std::cout << "\n";
  if (compile != nullptr) {
    if (compile->error.empty()) {
      std::cout << "compile (" << compile->case_ << " fp32, " << compile->kernels
                << " kernel(s)): cold "
                << fixed(compile->coldMs, 1) << " ms (goal 150), warm from disk cache "
                << fixed(compile->warmMs, 2) << " ms (goal 2; includes one "
                << fixed(compile->cachedRunMs, 2) << " ms cached run), cubins recompiled warm: "
                << compile->warmNewCubins << "\n";
    } else {
      std::cout << "compile: ERROR " << compile->error << "\n";
    }
  }
  if (host != nullptr) {
    if (host->error.empty()) {
      std::cout << "host overhead (" << host->case_ << ", " << host->kernels
                << " kernel(s), check " << host->check << "): median "
                << fixed(host->us.median, 2) << " us per cache.run() (goal 5), loop "
                << fixed(host->loopUsPerCall, 2) << " us per call; bare empty-kernel launch "
                << fixed(host->launchUs.median, 2) << " us\n";
    } else {
      std::cout << "host overhead: ERROR " << host->error << "\n";
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (const CaseResult& r : results) {
    if (!r.error.empty()) {
      rows.push_back({caseLabel(r.name), r.dtype, "-", "-", "-", "-", "-", "-", "ERROR"});
      continue;
    }
    double bw = tbps(r.bytes, r.us.median);
    rows.push_back({caseLabel(r.name), r.dtype, fixed(r.us.median, 1), fixed(r.us.min, 1),
                    fixed(bw, 2), fixed(bw / kCopyCeilingTbps, 2), std::to_string(r.kernels),
                    r.schedulers, r.check.ok ? "PASS" : "FAIL"});
  }
  std::cout << "\n"
            << formatTable({"case", "dtype", "Loom us", "min us", "TB/s", "of 4.26 TB/s",
                            "kernels", "scheduler", "check"},
                           rows);
}

int runBenchmarks(const Options& o, const std::string& exe) {
  std::string gpu = gpuName();
  std::cout << "loom_bench " << LOOM_VERSION_STRING << " on " << gpu << ": " << o.reps
            << " reps after " << o.warmup << " warm-up runs, L2 flushed (256 MiB) before each\n";
  bool ok = true;
  std::optional<CompileTimes> compile;
  if (!o.skipCompile) {
    // First, while this process holds no GPU memory; the probes are separate processes anyway.
    std::cout << "compile probe (cold, then warm in a new process) ..." << std::endl;
    compile = measureCompileTimes(exe, o.compileCase);
    ok = ok && compile->error.empty();
  }
  std::vector<std::string> dtypes = o.dtypes.empty() ? std::vector<std::string>{"fp32", "bf16"}
                                                     : o.dtypes;
  std::vector<CaseResult> results;
  for (const std::string& d : dtypes) {
    for (const Case& c : allCases()) {
      if (!o.cases.empty() && std::find(o.cases.begin(), o.cases.end(), c.name) == o.cases.end()) {
        continue;
      }
      std::cout << c.name << " " << d << " ..." << std::flush;
      CaseResult r = runCase(c, parseDtype(d), o);
      if (r.error.empty()) {
        std::cout << " " << fixed(r.us.median, 1) << " us, " << fixed(tbps(r.bytes, r.us.median), 2)
                  << " TB/s, " << r.kernels << " kernel(s) [" << r.schedulers << "], check "
                  << (r.check.ok ? "PASS" : "FAIL") << ": " << r.check.detail << std::endl;
      } else {
        std::cout << " ERROR: " << r.error << std::endl;
      }
      ok = ok && r.ok();
      results.push_back(std::move(r));
    }
  }
  std::optional<HostOverhead> host;
  if (!o.skipHost) {
    std::cout << "host overhead ..." << std::endl;
    host = measureHostOverhead(o);
    ok = ok && host->error.empty() && host->check == "PASS";
  }
  if (!o.jsonPath.empty()) {
    writeJson(o.jsonPath, gpu, o, results, host ? &*host : nullptr, compile ? &*compile : nullptr);
    std::cout << "wrote " << o.jsonPath << "\n";
  }
  printReport(results, host ? &*host : nullptr, compile ? &*compile : nullptr);
  return ok ? 0 : kExitFailed;
}

#endif  // LOOM_HAVE_CUDA_BACKEND

int mainImpl(int argc, char** argv) {
  Options o;
  try {
    o = parseArgs(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "loom_bench: " << e.what() << "\n" << usage();
    return kExitUnavailable;
  }
  if (o.help) {
    std::cout << usage();
    return 0;
  }
  try {
    // What needs no GPU: the sweep's shape list, and the sweep checked on the host backend.
    if (!o.listSweepPath.empty()) {
      writeSweepShapes(o, o.listSweepPath);
      std::cout << "wrote " << o.listSweepPath << "\n";
      return 0;
    }
    if (o.sweep && o.hostBackend) {
      return runSweep(o, "host backend",
                      [&](const Case& c, DataType dtype) { return checkOnHost(c, dtype, o); });
    }
  } catch (const std::exception& e) {
    std::cerr << "loom_bench: " << e.what() << "\n";
    return 1;
  }
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (!cuda::cudaAvailable()) {
    std::cerr << "loom_bench: " << cuda::unavailableReason()
              << ": run this on the GPU machine\n";
    return kExitUnavailable;
  }
  if (o.compileProbe) return runCompileProbe(o.compileCase);
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) exe = argv[0];
  try {
    if (o.sweep) {
      return runSweep(o, gpuName(), [&](const Case& c, DataType dtype) {
        return runCase(c, dtype, o);
      });
    }
    return runBenchmarks(o, exe);
  } catch (const std::exception& e) {
    std::cerr << "loom_bench: " << e.what() << "\n";
    return kExitFailed;
  }
#else
  std::cerr << "loom_bench: built without the CUDA backend (cuda.h was not found at configure "
               "time): rebuild with the CUDA toolkit headers and run this on the GPU machine\n";
  return kExitUnavailable;
#endif
}

}  // namespace
}  // namespace loom::bench

int main(int argc, char** argv) { return loom::bench::mainImpl(argc, argv); }
