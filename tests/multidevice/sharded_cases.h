// SPDX-License-Identifier: Apache-2.0
// The sharded fusions run by the device-by-device tests (sharded_exec_test.cpp, one process plays
// every device) and the mpirun tests (mpi_test.cpp, one rank per device), and the check of one
// device's outputs against its shard of the reference.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/multidevice/communicator.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "multidevice/shard_annotation.h"
#include "multidevice/sharded_random_cases.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::multidevice::test {

using ir::DeviceMesh;
using ir::Fusion;
using ir::FusionGuard;
using ir::ParallelType;
using ir::TensorView;

struct Case {
  std::string name;
  /// Builds the fusion, inputs annotated.
  std::function<void(Fusion&)> build;
  /// Global input shapes.
  std::vector<std::vector<int64_t>> shapes;
  int64_t reduced = 1;  ///< elements reduced into one output element (the tolerance)
};

inline TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dtype) {
  auto* x = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(x);
  return x;
}

/// A 2-D mesh of `d` devices: 2 x d/2 when d is even, else 1 x d.
inline DeviceMesh mesh2d(int64_t d) {
  std::vector<int64_t> devices = DeviceMesh::arange(d).devices();
  return d % 2 == 0 ? DeviceMesh(devices, {2, d / 2}) : DeviceMesh(devices, {1, d});
}

/// Every example fusion sharded on a non-reduced axis over `d` devices (d divides 12): 1-D and
/// 2-D meshes, fp32 and bf16, constant and symbolic extents, the founding case, and random
/// numbers and iota drawn sharded (sharded_random_cases.h).
inline std::vector<Case> shardedCases(int64_t d) {
  std::vector<Case> out;
  const DeviceMesh mesh = DeviceMesh::arange(d);
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    const std::string suffix = dt == DataType::Float32 ? "Fp32" : "Bf16";
    out.push_back({"BiasGelu" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1}, dt);
                     TensorView* b = input(f, {-1}, dt);
                     shard(x, 0, mesh);
                     f.addOutput(ops::gelu(ops::add(x, ops::broadcast(b, {true, false}))));
                   },
                   {{24, 96}, {96}}});
    out.push_back({"Softmax" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {8, 12, 64}, dt);
                     shard(x, 1, mesh);
                     f.addOutput(ops::softmax(x, 2));
                   },
                   {{8, 12, 64}},
                   64});
    out.push_back({"LayerNorm" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1, -1}, dt);
                     TensorView* w = input(f, {-1}, dt);
                     TensorView* b = input(f, {-1}, dt);
                     shard(x, 1, mesh);
                     f.addOutput(ops::layerNorm(x, 1, w, b).y);
                   },
                   {{2, 24, 128}, {128}, {128}},
                   128});
    out.push_back({"RmsNorm" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1}, dt);
                     shard(x, 0, mesh);
                     f.addOutput(ops::rmsNorm(x, 1, nullptr, 1e-5));
                   },
                   {{24, 80}},
                   80});
    out.push_back({"SumOverUnshardedAxis" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1}, dt);
                     shard(x, 1, mesh);
                     f.addOutput(ops::sum(x, {0}));
                   },
                   {{64, 48}},
                   64});
  }
  // A 2-D mesh: rows on DIDy, the last dim on DIDx; a sum over the unsharded middle dim.
  out.push_back({"TwoDimensionalMesh",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
                   const DeviceMesh m = mesh2d(d);
                   shard(x, 2, m, ParallelType::DIDx);  // loop [b, s, DIDx, e/x]
                   shard(x, 0, m, ParallelType::DIDy);  // loop [DIDy, b/y, s, DIDx, e/x]
                   f.addOutput(ops::mul(ops::exp(x), 0.5));
                   f.addOutput(ops::sum(x, {1}));
                 },
                 {{4, 10, 12}},
                 10});
  // nvFuser's other ways of saying it. A logical dim whose extent is the mesh size parallelized
  // directly (no split); the sharded dim's local part split again (a loop domain that differs
  // from the logical one past the DID split); the sharded dim merged with its neighbour by a
  // reshape, and split by one.
  out.push_back({"LogicalDimOnTheMesh",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {d, -1}, DataType::Float32);
                   x->setDeviceMesh(mesh);
                   x->axis(0)->parallelize(ParallelType::DIDx);
                   f.addOutput(ops::relu(x));
                   f.addOutput(ops::sum(x, {1}));
                 },
                 {{d, 40}},
                 40});
  out.push_back({"LocalPartSplitAgain",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {-1, -1}, DataType::Float32);
                   shard(x, 0, mesh);  // loop [DIDx, s/d, e]
                   x->split(1, 3);     // loop [DIDx, s/d/3, 3, e]
                   f.addOutput(ops::tanh(x));
                 },
                 {{12 * d, 16}}});
  out.push_back({"ShardedDimThroughReshapes",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {2 * d, 6, 8}, DataType::Float32);
                   shard(x, 0, mesh);
                   TensorView* merged = ops::reshape(x, {2 * d * 6, 8});
                   TensorView* split = ops::reshape(ops::neg(merged), {2 * d, 6, 2, 4});
                   f.addOutput(split);
                   f.addOutput(ops::sum(split, {3}));
                 },
                 {{2 * d, 6, 8}},
                 4});
  // nvFuser's inner-split forms (issue 36): an inner split whose outer piece is on the mesh (its
  // extent the mesh size: each device holds one block of 3 rows; symbolic, checked when run),
  // and a split of that outer piece again (nvFuser's split of a split through outer pieces).
  out.push_back({"InnerSplitOuterPieceOnTheMesh",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {-1, 16}, DataType::Float32);
                   x->setDeviceMesh(mesh);
                   x->split(0, 3);  // [n/3, 3], n = 3 * d
                   x->axis(0)->parallelize(ParallelType::DIDx);
                   f.addOutput(ops::relu(x));
                   f.addOutput(ops::sum(x, {1}));
                 },
                 {{3 * d, 16}},
                 16});
  out.push_back({"SplitOfTheOuterPieceOnTheMesh",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {8 * d, 5}, DataType::Float32);
                   x->setDeviceMesh(mesh);
                   x->split(0, 4);       // [2d, 4]
                   x->outerSplit(0, d);  // [d, 2, 4]
                   x->axis(0)->parallelize(ParallelType::DIDx);
                   f.addOutput(ops::mul(ops::exp(x), 0.5));
                 },
                 {{8 * d, 5}}});
  // An expanded broadcast of an unsharded row (its dims known at run time) feeding a sharded
  // dim: each device repeats the row over its own block of rows.
  out.push_back({"ExpandedBroadcastIntoShardedDim",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {-1}, DataType::Float32);
                   TensorView* b = input(f, {24, -1}, DataType::Float32);
                   shard(b, 0, mesh);
                   TensorView* rows = ops::expand(ops::broadcast(x, {true, false}), {24, -1});
                   f.addOutput(ops::add(ops::neg(rows), b));
                 },
                 {{40}, {24, 40}}});
  // The founding case: var_mean over e of [b, s, e], s sharded; the persistent path (Welford
  // translated) and the Welford path (a row too wide to hold).
  for (bool wide : {false, true}) {
    out.push_back({wide ? "FoundingCaseWelfordPath" : "FoundingCasePersistentPath",
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
                     ops::VarMeanResult vm = ops::varMean(x, {2}, 0.0);
                     f.addOutput(vm.var);
                     f.addOutput(vm.mean);
                     shard(x, 1, mesh);
                   },
                   {{1, 24, wide ? 65536 : 768}},
                   wide ? 65536 : 768});
  }
  appendShardedRandomCases(out, d, [](Fusion& f, std::vector<int64_t> shape, DataType dtype) {
    return input(f, std::move(shape), dtype);
  });
  return out;
}

/// The global inputs of `c` (random, the same on every device for one seed).
inline std::vector<eval::Argument> globalInputs(const Case& c, const Fusion& fusion) {
  std::vector<eval::Argument> args;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    Tensor t = Tensor::empty(c.shapes[i], fusion.inputs()[i]->as<TensorView>()->dtype());
    fillRandom(t, 100 + i);
    args.push_back(t);
  }
  return args;
}

/// Runs `c` as `device` on `backend` and compares its outputs with its shards of `expected`
/// (the reference outputs of the global inputs); returns the outputs (host) and adds a
/// failure message per mismatch to `failures`.
inline std::vector<Tensor> runAsDevice(const Case& c, const Fusion& fusion,
                                       const Fusion& sharded,
                                       const std::vector<eval::Argument>& global,
                                       const std::vector<Tensor>& expected, int64_t device,
                                       exec::Backend backend, std::vector<std::string>& failures,
                                       Communicator* comm = nullptr) {
  std::vector<eval::Argument> local;
  for (size_t i = 0; i < global.size(); ++i) {
    Tensor shard = shardTensor(std::get<Tensor>(global[i]),
                               sharded.inputs()[i]->as<TensorView>(), device)
                       .contiguous();
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (backend == exec::Backend::Cuda) {
      shard = cuda::toDevice(shard, comm != nullptr ? comm->gpuIndex(cuda::deviceCount()) : 0);
    }
#endif
    local.push_back(shard);
  }
  runtime::RuntimeOptions options;
  options.backend = backend;
  options.executor.poisonOutputs = true;
  options.communicator = comm;
  if (comm == nullptr) options.deviceId = device;
  runtime::FusionExecutorCache cache(fusion.clone(), options);
  std::vector<Tensor> outs = cache.run(local);
  if (outs.size() != expected.size()) {
    failures.push_back(c.name + " device " + std::to_string(device) + ": " +
                       std::to_string(outs.size()) + " outputs, expected " +
                       std::to_string(expected.size()));
    return outs;
  }
  for (size_t o = 0; o < outs.size(); ++o) {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (backend == exec::Backend::Cuda) outs[o] = cuda::toHost(outs[o]);
#endif
    Tensor want = shardTensor(expected[o], sharded.outputs()[o]->as<TensorView>(), device)
                      .contiguous();
    auto msg = eval::expectClose(outs[o], want, eval::defaultTolerance(want.dtype(), c.reduced),
                                 c.name + " device " + std::to_string(device) + " output " +
                                     std::to_string(o));
    if (msg) failures.push_back(*msg);
  }
  return outs;
}

}  // namespace loom::multidevice::test
