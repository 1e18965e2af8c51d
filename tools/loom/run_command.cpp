// SPDX-License-Identifier: Apache-2.0
// `loom run`: schedule a fusion automatically, run it on random inputs, check it against the
// reference evaluator and report each kernel. It says what it does as it goes: the backend and
// why, the inputs, each output with what computes it and what it was checked against, and the
// time split into compile, run and reference check; long steps print progress lines to stderr.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/multidevice/sharding.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/support/strings.h"
#include "tools/loom/commands.h"
#include "tools/loom/narration.h"
#include "tools/loom/progress.h"
#include "tools/loom/random_inputs.h"
#include "tools/loom/run_device.h"
#include "tools/loom/sharded_run.h"

namespace loom::tools {
namespace {

struct RunArgs {
  std::string file;
  std::string backend;  ///< empty: not given
  std::string sizes;
  std::string seed = "0";
  bool bench = false;
  bool noCheck = false;
  ProgressFlag progress;
};

double maxError(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t k = 0; k < a.numel() && k < b.numel(); ++k) {
    double d = std::fabs(a.getDoubleLinear(k) - b.getDoubleLinear(k));
    if (std::isnan(d)) return NAN;
    m = std::max(m, d);
  }
  return m;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

exec::Backend requestedBackend(const RunArgs& a) {
  if (a.backend.empty()) return exec::Backend::Auto;
  LOOM_CHECK(a.backend == "host" || a.backend == "cuda", "--backend must be host or cuda, got '",
             a.backend, "'");
  return a.backend == "host" ? exec::Backend::Host : exec::Backend::Cuda;
}

// The first, compiling run and how its time splits into compile and run.
struct FirstRun {
  std::vector<Tensor> outputs;  ///< fetched home
  std::vector<runtime::SegmentRecord> records;
  double compileSeconds = 0;
  double runSeconds = 0;
  std::string runHow;
};

FirstRun runFirst(runtime::FusionExecutorCache& cache, const std::vector<eval::Argument>& inputs,
                  RunDevice& device, exec::Backend backend, Progress& progress) {
  const bool on_device = backend == exec::Backend::Cuda;
  FirstRun first;
  double first_s = 0;
  {
    Progress::Step step =
        progress.step(fmt::format("compiling (segment, schedule, lower, build) and running on {}",
                                  exec::backendName(backend)));
    const auto t0 = std::chrono::steady_clock::now();
    first.outputs = cache.run(inputs);
    for (Tensor& t : first.outputs) t = device.fetch(t);  // on a GPU this waits for the kernels
    first_s = secondsSince(t0);
  }
  first.records = cache.lastRuntime()->lastRun();
  // The run's share of the first call: on the host the kernels' own wall time (each launch runs
  // to completion), less the module builds their first launches did; on a GPU a second, cached
  // run timed with CUDA events. The rest (segment, schedule, lower, build and load the modules)
  // is the compile.
  if (!on_device) {
    first.runHow = "the kernels' host wall time in the first run";
    for (const runtime::SegmentRecord& r : first.records) {
      first.runSeconds += r.seconds - r.compileSeconds;
    }
  } else {
    first.runSeconds = device.time([&] { (void)cache.run(inputs); }).deviceSeconds;
    first.runHow = "a second, cached run timed with CUDA events";
  }
  first.compileSeconds = std::max(0.0, first_s - first.runSeconds);
  return first;
}

// One PASS/FAIL line per output against the reference (or RAN lines under --no-check); true
// when every output passed.
// How the report names each output: its name and what computes it.
struct OutputLabels {
  std::vector<std::string> names;
  std::vector<std::string> descriptions;
};

OutputLabels outputLabels(const ir::Fusion& fusion) {
  OutputLabels labels;
  for (ir::Val* out : fusion.outputs()) {
    labels.names.push_back(out->toString());
    labels.descriptions.push_back(describeOutput(out));
  }
  return labels;
}

// An in-place output (written into an input's memory) says so, and how: the reference it is
// checked against was computed from the inputs as they were before the run.
void describeInPlaceWrites(const runtime::FusionKernelRuntime& rt, OutputLabels& labels) {
  const ir::Fusion& fusion = rt.segmented().original();
  for (const segmenter::InPlaceWrite& w : rt.segmented().inPlaceWrites()) {
    const std::string input = fusion.inputs().at(size_t(w.input))->toString();
    labels.descriptions.at(size_t(w.output)) +=
        w.inPlace()
            ? fmt::format(", written into input {} in place (by segment {})", input, w.segment)
            : fmt::format(", written into input {} (a copy after the last segment: {})", input,
                          w.why);
  }
}

bool reportOutputs(const RunArgs& a, const OutputLabels& labels,
                   const std::vector<eval::Argument>& inputs, const std::vector<Tensor>& outs,
                   const std::vector<Tensor>& expected, Progress& progress) {
  const std::vector<std::string>& names = labels.names;
  const std::vector<std::string>& descriptions = labels.descriptions;
  if (a.noCheck) {
    fmt::print("check: skipped (--no-check): the outputs are not compared with the reference\n");
    for (size_t i = 0; i < outs.size(); ++i) {
      fmt::print("RAN  {:<4} [{}] {}: {}\n", names[i], join(outs[i].sizes()),
                 dataTypeName(outs[i].dtype()), descriptions[i]);
    }
    return true;
  }
  fmt::print(
      "check: each output against the reference evaluator (double precision) on the same "
      "inputs, |loom - reference| <= atol + rtol * |reference|\n");
  Progress::Step check_step = progress.step("comparing the outputs with the reference");
  bool ok = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    const eval::Tolerance tol = outputTolerance(inputs, outs[i].dtype(), outs[i].numel());
    auto err = eval::expectClose(outs[i], expected[i], tol, names[i]);
    fmt::print("{} {:<4} [{}] {} max_error={:.3g} (rtol {:.2g}, atol {:.2g}): {}\n",
               err ? "FAIL" : "PASS", names[i], join(outs[i].sizes()),
               dataTypeName(outs[i].dtype()), maxError(outs[i], expected[i]), tol.rtol, tol.atol,
               descriptions[i]);
    if (err) fmt::print("  {}\n", *err);
    ok = ok && !err;
  }
  return ok;
}

// What ran: the segment counts, then one line per segment with its parameters.
void reportSegments(const runtime::FusionKernelRuntime& rt,
                    const std::vector<runtime::SegmentRecord>& records, bool on_device) {
  fmt::print("{} kernel(s)", rt.numKernels());
  if (rt.numCommunications() > 0) fmt::print(", {} communication(s)", rt.numCommunications());
  fmt::print("\n");
  for (const runtime::SegmentRecord& r : records) {
    std::string line = r.isKernel() ? fmt::format("kernel {}: {} on {}, {}", r.segment, r.scheduler,
                                                  exec::backendName(r.backend), r.launch.toString())
                                    : fmt::format("{} {}: {}", r.kind, r.segment, r.scheduler);
    if (!on_device) {
      line += fmt::format(
          ", {:.3f} ms (host wall time of the first run, {:.3f} ms of it building "
          "the kernel)",
          r.seconds * 1e3, r.compileSeconds * 1e3);
    }
    fmt::print("{}\n  params: {}\n", line, r.params);
  }
}

// --bench: 20 timed runs after 3 warm-ups on a second cache without output poisoning, so the
// timed runs do only the fusion's work.
void benchRuns(std::unique_ptr<ir::Fusion> fusion, const runtime::RuntimeOptions& options,
               const std::vector<eval::Argument>& inputs, const std::vector<Tensor>& outs,
               RunDevice& device, bool on_device, Progress& progress) {
  runtime::RuntimeOptions timed_options = options;
  timed_options.executor.poisonOutputs = false;
  runtime::FusionExecutorCache timed(std::move(fusion), timed_options);
  int64_t bytes = 0;
  for (const eval::Argument& arg : inputs) {
    if (auto* t = std::get_if<Tensor>(&arg)) bytes += t->numel() * int64_t(t->itemSize());
  }
  for (const Tensor& t : outs) bytes += t.numel() * int64_t(t.itemSize());
  constexpr int kWarmup = 3, kReps = 20;
  Progress::Step step = progress.step(fmt::format("timing {} runs", kWarmup + kReps));
  for (int r = 0; r < kWarmup; ++r) timed.run(inputs);
  double total_ms = 0;
  const std::string how =
      on_device ? "CUDA events around each run, L2 not flushed; benchmarks/ has the full protocol"
                : "host wall time per run";
  for (int r = 0; r < kReps; ++r) {
    total_ms += device.time([&] { timed.run(inputs); }).deviceSeconds * 1e3;
  }
  step.end();
  double ms = total_ms / kReps;
  fmt::print(
      "bench: {:.3f} ms per run (mean of {}, {}), {:.3f} GB/s over {} bytes (inputs read once, "
      "outputs written once)\n",
      ms, kReps, how, ms > 0 ? double(bytes) / (ms * 1e-3) / 1e9 : 0.0, bytes);
}

int runFusion(const RunArgs& a) {
  const uint64_t seed = uint64_t(parseInteger(a.seed, "--seed"));
  const exec::Backend requested = requestedBackend(a);
  auto fusion = readFusionFile(a.file);
  const std::map<std::string, std::string> sizes = parseSizes(a.sizes);
  checkSizeNames(*fusion, sizes);
  const exec::BackendChoice choice = exec::chooseBackend(requested);
  const Progress::Duration progress_after = progressAfter(a.progress);
  runtime::RuntimeOptions options;
  options.backend = choice.backend;
  options.executor.poisonOutputs = true;
  if (multidevice::isMultidevice(*fusion)) {
    std::vector<eval::Argument> global = randomInputs(*fusion, sizes, seed);
    return runSharded(std::move(fusion), global, options, a.bench, !a.noCheck,
                      backendLine(choice, requested != exec::Backend::Auto), progress_after);
  }
  Progress progress(std::cerr, progress_after);
  std::vector<eval::Argument> inputs;
  {
    Progress::Step step = progress.step("making the random inputs");
    inputs = randomInputs(*fusion, sizes, seed);
  }
  fmt::print("loom run {}: {} input(s), {} output(s)\n", a.file, fusion->inputs().size(),
             fusion->outputs().size());
  fmt::print("{}\n", backendLine(choice, requested != exec::Backend::Auto));
  fmt::print("{}\n", inputsLine(*fusion, inputs, seed));

  std::vector<Tensor> expected;
  double reference_s = 0;
  if (!a.noCheck) {
    Progress::Step step =
        progress.step("computing the reference outputs (reference evaluator, double precision)");
    expected = eval::evaluateFusion(*fusion, inputs);
    reference_s = step.end();
  }

  const bool on_device = options.backend == exec::Backend::Cuda;
  const std::unique_ptr<RunDevice> device = makeRunDevice(options.backend);
  // On cuda the inputs move to the device once; the runs then use them in place (no copies).
  std::vector<eval::Argument> run_inputs = inputs;
  for (eval::Argument& arg : run_inputs) {
    if (auto* t = std::get_if<Tensor>(&arg)) *t = device->place(*t);
  }
  OutputLabels labels = outputLabels(*fusion);
  std::unique_ptr<ir::Fusion> timed_fusion = a.bench ? fusion->clone() : nullptr;
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  const FirstRun first = runFirst(cache, run_inputs, *device, options.backend, progress);
  describeInPlaceWrites(*cache.lastRuntime(), labels);

  const bool ok = reportOutputs(a, labels, inputs, first.outputs, expected, progress);
  reportSegments(*cache.lastRuntime(), first.records, on_device);
  if (a.noCheck) {
    fmt::print("time: compile {:.3f} s, run {:.3f} s ({}), no reference check\n",
               first.compileSeconds, first.runSeconds, first.runHow);
  } else {
    fmt::print("time: compile {:.3f} s, run {:.3f} s ({}), reference check {:.3f} s\n",
               first.compileSeconds, first.runSeconds, first.runHow, reference_s);
  }
  if (a.bench) {
    benchRuns(std::move(timed_fusion), options, run_inputs, first.outputs, *device, on_device,
              progress);
  }
  return ok ? 0 : 1;
}

}  // namespace

Command addRunCommand(CLI::App& loom) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = loom.add_subcommand(
      "run", "schedule, compile and run on random inputs; check against the reference evaluator");
  cmd->add_option("FILE.fus", a->file,
                  "the fusion; one with device meshes runs one rank per device under mpirun")
      ->required()
      ->type_name("");
  cmd->add_option("--backend", a->backend,
                  "where the kernels run; default: LOOM_BACKEND, else cuda when a GPU is found, "
                  "else host")
      ->type_name("host|cuda");
  cmd->add_option("--sizes", a->sizes,
                  "values of the symbolic sizes and scalar inputs, e.g. s0=4,s1=8")
      ->type_name("s0=N,...");
  cmd->add_option("--seed", a->seed, "seed of the random inputs (default 0)")->type_name("N");
  cmd->add_flag("--no-check", a->noCheck,
                "run without computing the reference outputs (the reference evaluator is slow on "
                "big inputs); the outputs are reported, not checked")
      ->disable_flag_override();
  cmd->add_flag("--bench", a->bench,
                "also time 20 runs after 3 warm-up runs and report the bandwidth (CUDA events on "
                "the GPU)")
      ->disable_flag_override();
  addProgressOption(*cmd, a->progress);
  cmd->footer(
      "Prints the backend and why, the inputs, one PASS or FAIL line per output (what computes\n"
      "it, its largest error against the reference evaluator and the tolerance), each kernel,\n"
      "and the time split into compile, run and reference check. Progress lines for long steps\n"
      "go to stderr. Exit status 1 when an output fails its check. --no-check skips the\n"
      "reference (RAN lines instead of PASS/FAIL), for inputs too big to evaluate in double.\n"
      "\n"
      "Examples:\n"
      "  loom run examples/var_mean_small.fus\n"
      "  loom run examples/softmax_fp32.fus --backend host --seed 3\n"
      "  mpirun -np 2 loom run examples/multidevice/pipeline_d2.fus");
  return {cmd, [a] { return runFusion(*a); }};
}

}  // namespace loom::tools
