// SPDX-License-Identifier: Apache-2.0
// Sharded fusions run device by device (one process plays each device of the mesh in turn, on
// the host backend, or on CUDA in the gpu executable): every device's outputs, poisoned first,
// equal its shard of the reference outputs of the global inputs; shards put back together equal
// the whole reference. Sharded on a non-reduced axis, 1-D and 2-D meshes, fp32 and bf16, constant
// and symbolic extents; the founding case translated and not; the user errors of sharded inputs.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::multidevice {
namespace {

using ir::DeviceMesh;
using ir::Fusion;
using ir::FusionGuard;
using ir::ParallelType;
using ir::TensorView;

exec::Backend backend() {
#ifdef LOOM_SHARDED_TEST_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

void shard(TensorView* tv, int64_t dim, const DeviceMesh& mesh,
           ParallelType type = ParallelType::DIDx) {
  tv->setDeviceMesh(mesh);
  tv->outerSplit(dim, mesh.size(type));
  tv->axis(dim)->parallelize(type);
}

struct Case {
  std::string name;
  /// Builds the fusion (inputs annotated) and returns the global input shapes and dtypes.
  std::function<void(Fusion&)> build;
  std::vector<std::vector<int64_t>> shapes;
  int64_t reduced = 1;  ///< elements reduced into one output element (the tolerance)
};

Tensor randomOf(const std::vector<int64_t>& sizes, DataType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(sizes, dtype);
  fillRandom(t, seed);
  return t;
}

// Runs `c` as every device of its first input's mesh and checks each device's outputs.
void runOnEveryDevice(const Case& c) {
  if (backend() == exec::Backend::Cuda) {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason();
#else
    GTEST_SKIP() << "built without the CUDA backend";
#endif
  }
  Fusion fusion;
  {
    FusionGuard g(&fusion);
    c.build(fusion);
  }
  std::vector<eval::Argument> global;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    auto* tv = fusion.inputs()[i]->as<TensorView>();
    global.push_back(randomOf(c.shapes[i], tv->dtype(), 100 + i));
  }
  std::vector<Tensor> expected = eval::evaluateFusion(fusion, global);
  std::unique_ptr<Fusion> sharded = shardedCopy(fusion);
  const DeviceMesh mesh = sharded->inputs()[0]->as<TensorView>()->deviceMesh();
  std::vector<std::vector<Tensor>> outs_by_device;
  for (int64_t device : mesh.devices()) {
    SCOPED_TRACE(c.name + " on device " + std::to_string(device));
    std::vector<eval::Argument> local;
    for (size_t i = 0; i < global.size(); ++i) {
      Tensor shard =
          shardTensor(std::get<Tensor>(global[i]), sharded->inputs()[i]->as<TensorView>(), device)
              .contiguous();
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (backend() == exec::Backend::Cuda) shard = cuda::toDevice(shard);
#endif
      local.push_back(shard);
    }
    runtime::RuntimeOptions options;
    options.backend = backend();
    options.executor.poisonOutputs = true;
    options.deviceId = device;
    runtime::FusionExecutorCache cache(fusion.clone(), options);
    std::vector<Tensor> outs = cache.run(local);
    ASSERT_EQ(outs.size(), expected.size());
    for (size_t o = 0; o < outs.size(); ++o) {
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (backend() == exec::Backend::Cuda) outs[o] = cuda::toHost(outs[o]);
#endif
      const auto* out_tv = sharded->outputs()[o]->as<TensorView>();
      Tensor want = shardTensor(expected[o], out_tv, device).contiguous();
      auto tol = eval::defaultTolerance(want.dtype(), c.reduced);
      auto msg = eval::expectClose(outs[o], want, tol, "output " + std::to_string(o));
      EXPECT_FALSE(msg.has_value()) << *msg;
    }
    outs_by_device.push_back(std::move(outs));
  }
  // The shards put back together are the whole reference.
  for (size_t o = 0; o < expected.size(); ++o) {
    std::vector<Tensor> shards;
    for (auto& outs : outs_by_device) shards.push_back(outs[o]);
    Tensor whole = unshardTensor(shards, sharded->outputs()[o]->as<TensorView>());
    auto msg = eval::expectClose(whole, expected[o], eval::defaultTolerance(whole.dtype(), c.reduced),
                                 "whole output " + std::to_string(o));
    EXPECT_FALSE(msg.has_value()) << *msg;
  }
}

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dtype) {
  auto* x = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(x);
  return x;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const DeviceMesh d4 = DeviceMesh::arange(4);
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    const std::string suffix = dt == DataType::Float32 ? "Fp32" : "Bf16";
    out.push_back({"Pointwise" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1}, dt);
                     TensorView* b = input(f, {-1}, dt);
                     shard(x, 0, d4);
                     f.addOutput(ops::gelu(ops::add(x, ops::broadcast(b, {true, false}))));
                   },
                   {{16, 96}, {96}}});
    out.push_back({"Softmax" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {8, 12, 64}, dt);
                     shard(x, 1, d4);
                     f.addOutput(ops::softmax(x, 2));
                   },
                   {{8, 12, 64}},
                   64});
    out.push_back({"LayerNorm" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1, -1}, dt);
                     TensorView* w = input(f, {-1}, dt);
                     TensorView* b = input(f, {-1}, dt);
                     shard(x, 1, d4);
                     f.addOutput(ops::layerNorm(x, 1, w, b).y);
                   },
                   {{2, 16, 128}, {128}, {128}},
                   128});
    out.push_back({"RmsNorm" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1}, dt);
                     shard(x, 0, d4);
                     f.addOutput(ops::rmsNorm(x, 1, nullptr, 1e-5));
                   },
                   {{24, 80}},
                   80});
    out.push_back({"SumOverUnshardedAxis" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1}, dt);
                     shard(x, 1, d4);
                     f.addOutput(ops::sum(x, {0}));
                   },
                   {{64, 32}},
                   64});
  }
  // A 2-D mesh: rows on DIDy, the sequence on DIDx.
  out.push_back({"TwoDimensionalMesh",
                 [](Fusion& f) {
                   TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
                   DeviceMesh mesh({0, 1, 2, 3, 4, 5}, {2, 3});
                   shard(x, 2, mesh, ParallelType::DIDx);  // loop [b, DIDx, s/3]
                   shard(x, 0, mesh, ParallelType::DIDy);  // loop [DIDy, b/2, DIDx, s/3]
                   f.addOutput(ops::mul(ops::exp(x), 0.5));
                   f.addOutput(ops::sum(x, {1}));
                 },
                 {{4, 10, 9}},
                 10});
  // The founding case, persistent path (the Welford translation) and multi-output rFactor.
  for (bool wide : {false, true}) {
    out.push_back({wide ? "FoundingCaseWide" : "FoundingCase",
                   [](Fusion& f) {
                     TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
                     ops::VarMeanResult vm = ops::varMean(x, {2}, 0.0);
                     f.addOutput(vm.var);
                     f.addOutput(vm.mean);
                     shard(x, 1, DeviceMesh::arange(4));
                   },
                   {{1, 32, wide ? 65536 : 768}},
                   wide ? 65536 : 768});
  }
  return out;
}

class ShardedExec : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedExec, EachDeviceComputesItsShard) { runOnEveryDevice(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, ShardedExec, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

std::string userErrorOf(const auto& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

std::unique_ptr<Fusion> shardedExp(std::vector<int64_t> shape, const DeviceMesh& mesh) {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  TensorView* x = input(*f, std::move(shape), DataType::Float32);
  shard(x, 0, mesh);
  f->addOutput(ops::exp(x));
  return f;
}

// The user errors of running a sharded fusion.
TEST(ShardedExecErrors, ClearMessages) {
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  // No device id.
  std::string msg = userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({8, 4}, DeviceMesh::arange(4)), options);
  });
  EXPECT_NE(msg.find("set RuntimeOptions::deviceId"), std::string::npos) << msg;
  // A device outside the mesh.
  options.deviceId = 7;
  msg = userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({8, 4}, DeviceMesh::arange(4)), options);
    cache.run(std::vector<eval::Argument>{Tensor::empty({2, 4}, DataType::Float32)});
  });
  EXPECT_NE(msg.find("device 7 is not in the device mesh [0, 1, 2, 3]"), std::string::npos)
      << msg;
  // A local tensor of the wrong size for the shard of a constant extent: 8 rows over 4 devices
  // is 2 rows each.
  options.deviceId = 1;
  msg = userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({8, 4}, DeviceMesh::arange(4)), options);
    cache.run(std::vector<eval::Argument>{Tensor::empty({8, 4}, DataType::Float32)});
  });
  EXPECT_NE(msg.find("input 0 (T0) dimension 0 (sharded over 4 devices, local size 8): "
                     "expected size 8 (a constant extent), got size 32"),
            std::string::npos)
      << msg;
  // A sharded extent the mesh does not divide.
  msg = userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({6, 4}, DeviceMesh::arange(4)), options);
  });
  EXPECT_NE(msg.find("which do not divide it"), std::string::npos) << msg;
  // A fusion that needs communication.
  msg = userErrorOf([&] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {8, 4}, DataType::Float32);
    shard(x, 0, DeviceMesh::arange(4));
    f->addOutput(ops::sum(x, {0}));
    runtime::FusionExecutorCache cache(std::move(f), options);
  });
  EXPECT_NE(msg.find("that needs an Allreduce"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::multidevice
