// SPDX-License-Identifier: Apache-2.0
// loom_compile_stages: times each CPU stage of compiling a fusion (no GPU needed) for tuning.
//
//   loom_compile_stages [--case layer_norm|rms_norm|softmax|var_mean|gelu_bias|sum_dim0]
//                       [--dtype fp32|bf16]
//                       [--reps N] [--nvrtc-reps N] [--arch sm_90] [--no-nvrtc] [--source]
//   loom_compile_stages --warm-start [--case ...] [--dtype ...] [--rows N]
//
// Stages, as FusionExecutorCache's first run does them: segmentation (scheduler checks and
// heuristics included), scheduling a clone, KernelExecutor's clone, lowering, codegen, then NVRTC
// (the first compile in the process separately: it loads libnvrtc-builtins) and the disk-cache
// path of a warm start (hash of the source and options, read of the cubin file). Times are wall
// and process CPU time, min and median over the repetitions. On a loaded machine CPU time is the
// steadier number. cuModuleLoadData and the kernel launch need a GPU: loom_bench measures those.
//
// --warm-start is the host backend's compile probe: one FusionExecutorCache in this process, made
// and run once on [rows, 4096] host tensors (default 64 rows, so the CPU kernel itself is short),
// then run again. Run it twice with one LOOM_CACHE_DIR: the second process is a warm start (the
// kernel object from the disk cache), and LOOM_DUMP=compile_time says where its time goes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/ir.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/scheduler/registry.h"
#include "loom/segmenter/segmenter.h"
#include "loom/support/error.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/nvrtc.h"
#endif

namespace {

using namespace loom;
using Clock = std::chrono::steady_clock;

double cpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

struct Stage {
  explicit Stage(std::string n) : name(std::move(n)) {}
  std::string name;
  std::vector<double> wall, cpu;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double minimum(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

// Runs `fn` once and records its wall and CPU time under `stage`.
void timeIt(Stage& stage, const std::function<void()>& fn) {
  double c0 = cpuMs();
  auto t0 = Clock::now();
  fn();
  stage.wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  stage.cpu.push_back(cpuMs() - c0);
}

std::unique_ptr<ir::Fusion> buildCase(const std::string& name, DataType dtype, int64_t rows,
                                      int64_t cols) {
  auto fusion = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(fusion.get());
  auto x = ops::TensorBuilder().shape({rows, cols}).dtype(dtype).build();
  fusion->addInput(x);
  if (name == "layer_norm" || name == "rms_norm") {
    auto w = ops::TensorBuilder().shape({cols}).dtype(dtype).build();
    fusion->addInput(w);
    if (name == "rms_norm") {
      fusion->addOutput(ops::rmsNorm(x, 1, w, 1e-5));
    } else {
      auto b = ops::TensorBuilder().shape({cols}).dtype(dtype).build();
      fusion->addInput(b);
      fusion->addOutput(ops::layerNorm(x, 1, w, b, 1e-5).y);
    }
  } else if (name == "softmax") {
    fusion->addOutput(ops::softmax(x, -1));
  } else if (name == "var_mean") {
    auto r = ops::varMean(x, {1});
    fusion->addOutput(r.var);
    fusion->addOutput(r.mean);
  } else if (name == "gelu_bias") {
    auto b = ops::TensorBuilder().shape({cols}).dtype(dtype).build();
    fusion->addInput(b);
    fusion->addOutput(ops::biasGelu(x, b));
  } else if (name == "sum_dim0") {
    fusion->addOutput(ops::sum(x, {0}));
  } else {
    LOOM_THROW("unknown case '", name,
               "' (layer_norm, rms_norm, softmax, var_mean, gelu_bias, sum_dim0)");
  }
  return fusion;
}

// Metadata-only arguments: the stages only read sizes, strides and pointer alignment, so the
// tensors point at a 256-byte aligned address that is never dereferenced.
std::vector<eval::Argument> fakeArgs(const ir::Fusion& fusion, int64_t rows, int64_t cols) {
  std::vector<eval::Argument> args;
  for (ir::Val* in : fusion.inputs()) {
    auto* tv = in->as<ir::TensorView>();
    std::vector<int64_t> sizes = {rows, cols};
    if (ir::TensorDomain::noReductions(tv->logical()).size() == 1) sizes = {cols};
    args.emplace_back(Tensor::fromBlob(reinterpret_cast<void*>(uintptr_t{1} << 20), sizes,
                                       Tensor::contiguousStrides(sizes), tv->dtype(),
                                       Device::cpu()));
  }
  return args;
}

// The host backend's compile probe (see the file comment): prints one line
//   warm_start first_ms=... cached_ms=... kernels=N plan_hits=N view_ms=...
int warmStart(const std::string& name, DataType dtype, int64_t rows) {
  const int64_t cols = 4096;
  auto fusion = buildCase(name, dtype, rows, cols);
  std::vector<std::vector<float>> storage;
  std::vector<eval::Argument> args;
  for (ir::Val* in : fusion->inputs()) {
    auto* tv = in->as<ir::TensorView>();
    std::vector<int64_t> sizes = {rows, cols};
    if (ir::TensorDomain::noReductions(tv->logical()).size() == 1) sizes = {cols};
    Tensor t = Tensor::empty(sizes, tv->dtype());
    auto* bytes = static_cast<unsigned char*>(t.data());
    for (int64_t i = 0; i < t.numel() * int64_t(t.itemSize()); ++i) {
      bytes[i] = static_cast<unsigned char>((i * 37 + 11) % 61);  // finite for fp32 and bf16
    }
    args.emplace_back(std::move(t));
  }
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  auto t0 = Clock::now();
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  (void)cache.run(args);
  const double first = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  auto t1 = Clock::now();
  (void)cache.run(args);
  const double cached = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  // With plan_hits=1 the plan cache served the runs and no runtime exists until asked for:
  // view_ms is what building it costs (segment, schedule, lower, codegen; kernels from the disk
  // cache), paid only by a caller that inspects the runtime.
  auto t2 = Clock::now();
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  const double view = std::chrono::duration<double, std::milli>(Clock::now() - t2).count();
  std::printf("warm_start first_ms=%.4f cached_ms=%.4f kernels=%lld plan_hits=%lld view_ms=%.4f\n",
              first, cached, static_cast<long long>(rt != nullptr ? rt->numKernels() : -1),
              static_cast<long long>(cache.planHits()), view);
  return 0;
}

int run(int argc, char** argv) {
  std::string name = "layer_norm", arch = "sm_90";
  DataType dtype = DataType::Float32;
  int reps = 20, nvrtcReps = 3;
  bool nvrtc = true, source = false, warm = false;
  int64_t rows = 64;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      LOOM_CHECK(i + 1 < argc, a, " needs a value");
      return argv[++i];
    };
    if (a == "--case") name = value();
    else if (a == "--dtype") dtype = value() == "bf16" ? DataType::BFloat16 : DataType::Float32;
    else if (a == "--reps") reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--nvrtc-reps") nvrtcReps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--arch") arch = value();
    else if (a == "--no-nvrtc") nvrtc = false;
    else if (a == "--source") source = true;
    else if (a == "--warm-start") warm = true;
    else if (a == "--rows") rows = std::max<int64_t>(1, std::atoll(value().c_str()));
    else LOOM_THROW("unknown option '", a, "'");
  }
  if (warm) return warmStart(name, dtype, rows);
  auto fusion = buildCase(name, dtype, 16384, 4096);
  std::vector<eval::Argument> args = fakeArgs(*fusion, 16384, 4096);

  Stage segment{"segment+heuristics"}, schedule{"schedule (clone+transform)"},
      clone{"executor clone"}, lower{"lower"}, codegen{"codegen"};
  codegen::GeneratedKernel generated;
  for (int r = 0; r < reps; ++r) {
    std::optional<segmenter::SegmentedFusion> seg;
    timeIt(segment, [&] { seg.emplace(segmenter::segmentFusion(*fusion, args)); });
    LOOM_CHECK(seg->segments().size() == 1, "expected one segment, got ", seg->segments().size());
    const segmenter::Segment& s = seg->segments().front();
    std::unique_ptr<ir::Fusion> scheduled;
    timeIt(schedule, [&] {
      scheduled = s.fusion.fusion->clone();
      scheduler::applyScheduler(scheduler::schedulerFor(s.kernel()->scheduler), *scheduled,
                                *s.kernel()->params);
    });
    std::unique_ptr<ir::Fusion> copy;
    timeIt(clone, [&] { copy = scheduled->clone(); });
    std::unique_ptr<kir::Kernel> kernel;
    timeIt(lower, [&] {
      kernel = lower::lowerFusion(*copy, DumpOptions::fromEnvironment(),
                                  {.peelVectorRows = s.kernel()->params->peelVectorRows()});
    });
    kernel->indexType = DataType::Int32;  // what the executor picks for these sizes
    timeIt(codegen, [&] { generated = codegen::generateKernel(*kernel); });
  }
  if (source) std::printf("%s\n", generated.source.c_str());
  std::vector<Stage*> stages = {&segment, &schedule, &clone, &lower, &codegen};
  std::deque<Stage> extra;  // stable addresses

  Stage first{"nvrtc (first in process)"}, later{"nvrtc (later)"}, hit{"disk cache hit"};
#ifdef LOOM_HAVE_CUDA_BACKEND
  // Loading libnvrtc is timed on its own: loom_bench's probe does it before its timer starts,
  // but a real warm start pays it, since the cache key includes NVRTC's version.
  bool available = false;
  Stage& load = extra.emplace_back("load libnvrtc (dlopen)");
  if (nvrtc) timeIt(load, [&] { available = cuda::nvrtcAvailable(); });
  if (available) {
    stages.push_back(&load);
    cuda::NvrtcCompiler uncached(std::nullopt);
    auto options = cuda::CompileOptions::forArch(arch, generated.name);
    cuda::CompileResult result;
    for (int r = 0; r < nvrtcReps; ++r) {
      timeIt(r == 0 ? first : later, [&] { result = uncached.compile(generated.source, options); });
    }
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("loom-compile-stages-" + std::to_string(getpid()));
    {
      cuda::NvrtcCompiler cached(dir);
      (void)cached.compile(generated.source, options);  // store
      for (int r = 0; r < reps; ++r) {
        timeIt(hit, [&] { result = cached.compile(generated.source, options); });
      }
      LOOM_CHECK(cached.stats().nvrtcCompiles == 1, "the disk cache did not hit");
    }
    std::filesystem::remove_all(dir);
    for (const auto& k : result.kernels) {
      std::printf("%s %s: %d registers, %lld bytes spill stores, %zu bytes cubin\n",
                  result.arch.c_str(), k.function.c_str(), k.registers,
                  static_cast<long long>(k.spillStores), result.cubin.size());
    }
    stages.push_back(&first);
    if (nvrtcReps > 1) stages.push_back(&later);
    stages.push_back(&hit);
  }
#else
  (void)nvrtc;
  (void)arch;
#endif
  std::printf("%s %s [16384, 4096], kernel source %zu bytes (kernel %zu)\n", name.c_str(),
              dataTypeName(dtype).data(), generated.source.size(), generated.kernelText.size());
  // "first" is the first repetition: what a new process pays (cold instruction and data caches,
  // one-time initialisation), i.e. the warm-start case.
  std::printf("%-28s %10s %10s %10s %10s %10s %5s\n", "stage (ms)", "first", "wall min",
              "wall med", "cpu min", "cpu med", "reps");
  for (const Stage* s : stages) {
    std::printf("%-28s %10.3f %10.3f %10.3f %10.3f %10.3f %5zu\n", s->name.c_str(), s->wall.front(),
                minimum(s->wall), median(s->wall), minimum(s->cpu), median(s->cpu),
                s->wall.size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom_compile_stages: %s\n", e.what());
    return 1;
  }
}
