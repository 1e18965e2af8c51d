// SPDX-License-Identifier: Apache-2.0
// GPU measurements of loom_bench: kernel times with CUDA events, host overhead, compile time.
#include "benchmarks/bench_gpu.h"

#include "benchmarks/bench_sweep_run.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/module.h"
#include "loom/backend/cuda/nvrtc.h"
#include "loom/backend/cuda/stream.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"

namespace loom::bench {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The protocol's L2 flush: a write of 256 MiB, over four times the H200's 60 MB L2.
constexpr int64_t kFlushBytes = int64_t(256) << 20;

runtime::RuntimeOptions cudaOptions(const cuda::Stream& stream, bool poison,
                                    const Options* tuning = nullptr) {
  runtime::RuntimeOptions opts;
  if (tuning != nullptr) opts.paramOverrides = tuning->params;
  opts.backend = exec::Backend::Cuda;
  opts.executor.stream = stream.handle();
  opts.executor.poisonOutputs = poison;
  return opts;
}

std::vector<eval::Argument> toDeviceArgs(const std::vector<Tensor>& host,
                                         const cuda::Stream& stream) {
  std::vector<eval::Argument> args;
  for (const Tensor& t : host) args.emplace_back(cuda::toDevice(t, 0, stream.handle()));
  return args;
}

}  // namespace

std::string gpuName() { return cuda::deviceProperties(0).name; }

CaseResult runCase(const Case& c, DataType dtype, const Options& options) {
  CaseResult r;
  r.name = c.name;
  r.dtype = dtypeLabel(dtype);
  r.shape = c.shape;
  r.bytes = ioBytes(c.op, c.shape, dtype);
  try {
    cuda::Stream stream = cuda::Stream::create(0);
    std::vector<eval::Argument> args;
    {
      std::vector<Tensor> host = makeInputs(c.op, c.shape, dtype, 20261202);
      args = toDeviceArgs(host, stream);
      // Correctness first, with outputs poisoned (NaN) before the launch: an element the kernel
      // never writes fails the finite check. A separate cache, since poisoning costs a memset.
      runtime::FusionExecutorCache checking(buildFusion(c.op, c.shape, dtype),
                                            cudaOptions(stream, true, &options));
      auto t0 = Clock::now();
      std::vector<Tensor> outs = checking.run(args);
      stream.synchronize();
      r.firstRunMs = msSince(t0);
      std::vector<Tensor> hostOuts;
      for (const Tensor& o : outs) hostOuts.push_back(cuda::toHost(o, stream.handle()));
      r.check = checkOutputs(c.op, dtype, host, hostOuts);
    }

    runtime::FusionExecutorCache cache(buildFusion(c.op, c.shape, dtype),
                                       cudaOptions(stream, false, &options));
    for (int64_t i = 0; i <= options.warmup; ++i) (void)cache.run(args);  // the first compiles
    stream.synchronize();
    recordRun(cache, r);

    Tensor flush = cuda::emptyCuda({kFlushBytes / 4}, DataType::Float32, 0, stream.handle());
    cuda::Event start = cuda::Event::create(0), stop = cuda::Event::create(0);
    r.repsUs.reserve(size_t(options.reps));
    for (int64_t rep = 0; rep < options.reps; ++rep) {
      // The flush keeps the GPU busy for tens of microseconds, long enough for the host to queue
      // the start event and the kernels behind it, so host overhead does not show in the time.
      cuda::fillBytes(flush, uint8_t(rep & 0x7f), stream.handle());
      start.record(stream.handle());
      {
        std::vector<Tensor> outs = cache.run(args);
        stop.record(stream.handle());
      }  // outputs freed stream-ordered, after the stop event
      stop.synchronize();
      r.repsUs.push_back(double(cuda::Event::elapsedMs(start, stop)) * 1e3);
    }
    stream.synchronize();
    r.us = summarize(r.repsUs);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

namespace {

// tanh(x * y + 1.0) on [1024] fp32: one kernel, the torch baseline's pointwise3_1024.
std::unique_ptr<ir::Fusion> pointwise3Fusion() {
  auto fusion = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(fusion.get());
  auto* x = ops::TensorBuilder().shape({1024}).dtype(DataType::Float32).build();
  auto* y = ops::TensorBuilder().shape({1024}).dtype(DataType::Float32).build();
  fusion->addInput(x);
  fusion->addInput(y);
  fusion->addOutput(ops::tanh(ops::add(ops::mul(x, y), 1.0)));
  return fusion;
}

// Synchronizing every so many calls keeps the launch queue (about a thousand entries) from
// filling, which would make a call block on the GPU and time the kernel instead of the host.
constexpr int64_t kSyncEvery = 256;

template <typename F>
std::vector<double> timeCalls(int64_t calls, const cuda::Stream& stream, F&& call,
                              double* loopUsPerCall = nullptr) {
  std::vector<double> us;
  us.reserve(size_t(calls));
  auto loop0 = Clock::now();
  for (int64_t i = 0; i < calls; ++i) {
    if (i % kSyncEvery == 0) stream.synchronize();
    auto t0 = Clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  stream.synchronize();
  if (loopUsPerCall) *loopUsPerCall = msSince(loop0) * 1e3 / double(calls);
  return us;
}

}  // namespace

HostOverhead measureHostOverhead(const Options& options) {
  HostOverhead h;
  h.case_ = "pointwise3_1024";
  h.calls = options.hostCalls;
  try {
    cuda::Stream stream = cuda::Stream::create(0);
    std::vector<Tensor> host;
    for (uint64_t seed : {11u, 12u}) {
      host.push_back(Tensor::empty({1024}, DataType::Float32));
      fillRandom(host.back(), seed);
    }
    std::vector<eval::Argument> args = toDeviceArgs(host, stream);
    runtime::FusionExecutorCache cache(pointwise3Fusion(), cudaOptions(stream, false));
    {
      Tensor out = cuda::toHost(cache.run(args).at(0), stream.handle());
      h.check = "PASS";
      for (int64_t i = 0; i < 1024; ++i) {
        double want = std::tanh(host[0].getDoubleLinear(i) * host[1].getDoubleLinear(i) + 1.0);
        if (!(std::abs(out.getDoubleLinear(i) - want) <= 1e-5 + 1e-5 * std::abs(want))) {
          h.check = "FAIL: element " + std::to_string(i) + " is " +
                    std::to_string(out.getDoubleLinear(i)) + ", expected " + std::to_string(want);
          break;
        }
      }
    }
    h.kernels = cache.lastRuntime() ? cache.lastRuntime()->numKernels() : 0;
    for (int i = 0; i < 200; ++i) (void)cache.run(args);
    std::vector<double> us = timeCalls(
        options.hostCalls, stream, [&] { std::vector<Tensor> outs = cache.run(args); },
        &h.loopUsPerCall);
    h.us = summarize(us);

    // Context for the number: the same loop over a bare launch of an empty kernel.
    cuda::NvrtcCompiler compiler(std::nullopt);
    cuda::CompileResult compiled =
        compiler.compile("extern \"C\" __global__ void loom_bench_empty() {}\n",
                         cuda::CompileOptions::forArch("", "loom_bench_empty"));
    cuda::Module module(compiled.cubin, 0);
    cuda::Function empty = module.function("loom_bench_empty");
    cuda::LaunchConfig config(cuda::Dim3(1), cuda::Dim3(32));
    auto launch = [&] { empty.launch(config, nullptr, stream); };
    for (int i = 0; i < 200; ++i) launch();
    h.launchUs = summarize(timeCalls(options.hostCalls, stream, launch));
  } catch (const std::exception& e) {
    h.error = e.what();
  }
  return h;
}

namespace {

constexpr const char* kProbeTag = "loom_bench_compile_probe";

int64_t countCubins(const std::filesystem::path& dir) {
  int64_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".cubin") ++n;
  }
  return n;
}

struct ProbeLine {
  double firstMs = 0;
  double cachedMs = 0;
  int64_t kernels = 0;
  int64_t cubins = 0;
};

// Runs the probe in a child process; the whole output is returned in `log` for error messages.
std::optional<ProbeLine> runProbeProcess(const std::string& exe, const std::string& cacheDir,
                                         const std::string& caseName, std::string& log) {
  // mkdtemp names, /proc/self/exe targets and case names hold no quote: single quotes suffice.
  std::string cmd = "LOOM_CACHE_DIR='" + cacheDir + "' '" + exe +
                    "' --compile-probe --compile-case '" + caseName + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    log = "popen failed for: " + cmd;
    return std::nullopt;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) log.append(buf.data(), n);
  int status = pclose(pipe);
  status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(kProbeTag, 0) != 0) continue;
    ProbeLine p;
    if (std::sscanf(line.c_str() + std::strlen(kProbeTag),
                    " first_ms=%lf cached_ms=%lf kernels=%ld cubins=%ld", &p.firstMs, &p.cachedMs,
                    &p.kernels, &p.cubins) == 4 &&
        status == 0) {
      return p;
    }
  }
  log = "exit status " + std::to_string(status) + ": " + log;
  return std::nullopt;
}

}  // namespace

int runCompileProbe(const std::string& caseName) {
  try {
    cuda::requireCuda("loom_bench --compile-probe");
    // One-time process costs stay outside the timed part: creating the context and stream,
    // making and copying the inputs. libnvrtc is not loaded here: a warm start whose cubins are
    // cached no longer loads it (the cubin key's NVRTC identity is remembered), a cold one does,
    // inside its timing.
    cuda::Stream stream = cuda::Stream::create(0);
    const Case& c = *findCase(caseName);
    std::vector<eval::Argument> args =
        toDeviceArgs(makeInputs(c.op, c.shape, DataType::Float32, 5), stream);
    std::unique_ptr<ir::Fusion> fusion = buildFusion(c.op, c.shape, DataType::Float32);
    // The memory pool maps physical memory the first time it grows (milliseconds for the 256 MB
    // output), a once-per-process cost like the context: grow it here, outside the timing.
    {
      int64_t numel = 1;
      for (int64_t s : c.shape) numel *= s;
      (void)cuda::emptyCuda({2 * numel}, DataType::Float32, 0, stream.handle());
    }
    stream.synchronize();

    auto t0 = Clock::now();
    runtime::FusionExecutorCache cache(std::move(fusion), cudaOptions(stream, false));
    (void)cache.run(args);
    stream.synchronize();
    double firstMs = msSince(t0);

    auto t1 = Clock::now();
    (void)cache.run(args);
    stream.synchronize();
    double cachedMs = msSince(t1);

    const char* dir = std::getenv("LOOM_CACHE_DIR");
    int64_t cubins = dir ? countCubins(dir) : -1;
    // plan_hits: 1 when the first run was served by the plan cache (on unless
    // LOOM_PLAN_CACHE=0); lastRuntime() then builds the runtime here, after the timed runs.
    int64_t kernels = cache.lastRuntime() ? cache.lastRuntime()->numKernels() : 0;
    fmt::print("{} first_ms={:.4f} cached_ms={:.4f} kernels={} cubins={} plan_hits={}\n", kProbeTag,
               firstMs, cachedMs, kernels, cubins, cache.planHits());
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "loom_bench --compile-probe: {}\n", e.what());
    return 1;
  }
}

CompileTimes measureCompileTimes(const std::string& exe, const std::string& caseName) {
  CompileTimes t;
  t.case_ = caseName;
  std::string tmpl = (std::filesystem::temp_directory_path() / "loom_bench_cache_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    t.error = "mkdtemp failed for " + tmpl;
    return t;
  }
  std::string log;
  if (auto cold = runProbeProcess(exe, tmpl, caseName, log)) {
    t.coldMs = cold->firstMs;
    t.coldCubins = cold->cubins;
    t.kernels = cold->kernels;
    log.clear();
    if (auto warm = runProbeProcess(exe, tmpl, caseName, log)) {
      t.warmMs = warm->firstMs;
      t.cachedRunMs = warm->cachedMs;
      t.warmNewCubins = warm->cubins - cold->cubins;
    } else {
      t.error = "warm compile probe failed: " + log;
    }
  } else {
    t.error = "cold compile probe failed: " + log;
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return t;
}

}  // namespace loom::bench
