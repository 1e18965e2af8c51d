// SPDX-License-Identifier: Apache-2.0
// `loom run` of a sharded fusion (tensors with device meshes), one rank per device:
//
//   mpirun -np 4 loom run examples/multidevice/var_mean_sp_d4.fus [--backend cuda] [--bench]
//
// Every rank makes the same global random inputs from the seed, computes the global reference,
// takes its shards, runs its local program, and checks its outputs against its shards of the
// reference. Rank 0 prints every rank's lines and one summary; the exit status is 1 on every
// rank when any rank failed.
#include "tools/loom/sharded_run.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <sstream>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/multidevice/communicator.h"
#include "loom/multidevice/sharding.h"
#include "loom/segmenter/presegment.h"
#include "loom/support/strings.h"
#include "tools/loom/random_inputs.h"
#include "tools/loom/run_device.h"

namespace loom::tools {

int runSharded(std::unique_ptr<ir::Fusion> fusion, const std::vector<eval::Argument>& global,
               runtime::RuntimeOptions options, bool bench, bool check,
               const std::string& backend_line, Progress::Duration progress_after) {
  multidevice::Communicator& comm = multidevice::Communicator::instance();
  const int64_t rank = comm.rank();
  const bool on_device = options.backend == exec::Backend::Cuda;
  // On a GPU, the one this rank drives (its local rank among the GPUs).
  const std::unique_ptr<RunDevice> device =
      makeRunDevice(options.backend, on_device ? comm.gpuIndex(exec::gpuCount()) : 0);
  // Only rank 0 reports progress: every rank does the same steps at about the same time.
  Progress progress(std::cerr, rank == 0 ? progress_after : Progress::Duration(-1));
  if (rank == 0) fmt::print("{}\n", backend_line);
  std::vector<Tensor> expected;
  if (check) {
    Progress::Step step = progress.step(
        "computing the global reference outputs (reference evaluator, double precision)");
    expected = eval::evaluateFusion(*fusion, global);
  } else if (rank == 0) {
    fmt::print("check: skipped (--no-check): the outputs are not compared with the reference\n");
  }
  std::unique_ptr<ir::Fusion> sharded = segmenter::shardedCopy(*fusion);
  // The user's names: decomposing a resharding may give an output a new tensor in the copy.
  std::vector<std::string> names;
  for (const ir::Val* out : fusion->outputs()) names.push_back(out->toString());
  std::ostringstream lines;
  bool ok = true;
  try {
    // A rank passes nothing for the tensors it does not hold and gets undefined outputs for them.
    auto holds = [&](const ir::TensorView* tv) { return multidevice::holds(tv, rank); };
    std::vector<eval::Argument> local;
    for (size_t i = 0; i < global.size(); ++i) {
      if (const auto* t = std::get_if<Tensor>(&global[i])) {
        if (!holds(sharded->inputs()[i]->as<ir::TensorView>())) {
          local.push_back(Tensor());
          continue;
        }
        local.push_back(device->place(
            multidevice::shardTensor(*t, sharded->inputs()[i]->as<ir::TensorView>(), rank)
                .contiguous()));
      } else {
        local.push_back(global[i]);
      }
    }
    options.communicator = &comm;
    std::unique_ptr<ir::Fusion> timed_fusion = bench ? fusion->clone() : nullptr;
    runtime::FusionExecutorCache cache(std::move(fusion), options);
    std::vector<Tensor> outs;
    {
      Progress::Step step =
          progress.step(fmt::format("compiling and running rank {}'s program on {}", rank,
                                    exec::backendName(options.backend)));
      outs = cache.run(local);
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      const auto* out_tv = sharded->outputs()[o]->as<ir::TensorView>();
      if (!holds(out_tv)) {
        const bool held_anyway = outs[o].defined();
        lines << "rank " << rank << ": " << (held_anyway ? "FAIL " : "PASS ") << names[o]
              << " is on mesh " << out_tv->deviceMesh() << ", not held here"
              << (held_anyway ? " but the run returned it" : "") << "\n";
        ok = ok && !held_anyway;
        continue;
      }
      outs[o] = device->fetch(outs[o]);
      if (!check) {
        lines << "rank " << rank << ": RAN  " << names[o] << " shard [" << join(outs[o].sizes())
              << "] " << dataTypeName(outs[o].dtype()) << " (not checked)\n";
        continue;
      }
      Tensor want = multidevice::shardTensor(expected[o], out_tv, rank).contiguous();
      auto err = eval::expectClose(
          outs[o], want, outputTolerance(global, want.dtype(), expected[o].numel()), names[o]);
      lines << "rank " << rank << ": " << (err ? "FAIL " : "PASS ") << names[o] << " shard ["
            << join(outs[o].sizes()) << "] of [" << join(expected[o].sizes()) << "] "
            << dataTypeName(outs[o].dtype()) << "\n";
      if (err) lines << "  " << *err << "\n";
      ok = ok && !err;
    }
    const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
    lines << "rank " << rank << ": " << rt->numKernels() << " kernel(s) on "
          << exec::backendName(options.backend) << ", " << comm.communications()
          << " communication(s) issued\n";
    if (bench) {
      runtime::RuntimeOptions timed_options = options;
      timed_options.executor.poisonOutputs = false;
      runtime::FusionExecutorCache timed(std::move(timed_fusion), timed_options);
      constexpr int kWarmup = 5, kReps = 50;
      for (int r = 0; r < kWarmup; ++r) timed.run(local);
      double host_us = 0, kernel_ms = 0;
      for (int r = 0; r < kReps; ++r) {
        const RunDevice::Timing t = device->time([&] { timed.run(local); });
        host_us += t.hostSeconds * 1e6;
        kernel_ms += t.deviceSeconds * 1e3;
      }
      lines << fmt::format(
          "rank {}: bench {:.4f} ms per run ({}), host {:.2f} us per cached run (mean of {})\n",
          rank, kernel_ms / kReps, on_device ? "CUDA events, L2 not flushed" : "host wall time",
          host_us / kReps, kReps);
    }
  } catch (const std::exception& e) {
    // Every rank must still reach the gather below, so a rank's error is reported, not thrown.
    lines << "rank " << rank << ": error: " << e.what() << "\n";
    ok = false;
  }
  std::vector<std::string> all = comm.allgatherBytes(lines.str());
  std::vector<int64_t> oks = comm.allgather(ok ? 1 : 0);
  int64_t passed = 0;
  for (int64_t v : oks) passed += v;
  if (rank == 0) {
    for (const std::string& l : all) std::cout << l;
    std::cout << comm.size() << " rank(s) (" << comm.source() << "): "
              << (passed != comm.size() ? std::to_string(comm.size() - passed) + " FAILED"
                  : check               ? "all PASS"
                                        : "all ran (not checked)")
              << "\n";
  }
  return passed == comm.size() ? 0 : 1;
}

}  // namespace loom::tools
