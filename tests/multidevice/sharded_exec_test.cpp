// SPDX-License-Identifier: Apache-2.0
// Sharded fusions run device by device (one process plays each device of the mesh in turn, on
// the host backend, or on CUDA in the gpu executable): every device's outputs, poisoned first,
// equal its shard of the reference outputs of the global inputs; shards put back together equal
// the whole reference. Sharded on a non-reduced axis, 1-D and 2-D meshes, fp32 and bf16, constant
// and symbolic extents; the founding case translated and not; the user errors of sharded inputs.
#include <gtest/gtest.h>

#include "user_error_of.h"

#include "backend_available.h"

#include "loom/segmenter/presegment.h"
#include "multidevice/sharded_cases.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::multidevice {
namespace {

using namespace test;

exec::Backend backend() {
#ifdef LOOM_SHARDED_TEST_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

// Runs `c` as every device of a 4-device mesh in turn and checks each device's outputs; the
// shards put back together equal the whole reference.
void runOnEveryDevice(const Case& c) {
  if (auto why = loom::test::backendUnavailable(backend())) GTEST_SKIP() << *why;
  Fusion fusion;
  {
    FusionGuard g(&fusion);
    c.build(fusion);
  }
  std::vector<eval::Argument> global = globalInputs(c, fusion);
  std::vector<Tensor> expected = eval::evaluateFusion(fusion, global);
  std::unique_ptr<Fusion> sharded = segmenter::shardedCopy(fusion);
  const DeviceMesh mesh = sharded->inputs()[0]->as<TensorView>()->deviceMesh();
  std::vector<std::vector<Tensor>> outs_by_device;
  std::vector<std::string> failures;
  for (int64_t device : mesh.devices()) {
    outs_by_device.push_back(
        runAsDevice(c, fusion, *sharded, global, expected, device, backend(), failures));
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
  for (size_t o = 0; o < expected.size(); ++o) {
    std::vector<Tensor> shards;
    for (auto& outs : outs_by_device) shards.push_back(outs.at(o));
    Tensor whole = unshardTensor(shards, sharded->outputs()[o]->as<TensorView>());
    auto msg = eval::expectClose(whole, expected[o],
                                 eval::defaultTolerance(whole.dtype(), c.reduced),
                                 c.name + " whole output " + std::to_string(o));
    EXPECT_FALSE(msg.has_value()) << *msg;
  }
}

class ShardedExec : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedExec, EachDeviceComputesItsShard) { runOnEveryDevice(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, ShardedExec, ::testing::ValuesIn(shardedCases(4)),
                         [](const auto& info) { return info.param.name; });

std::unique_ptr<Fusion> shardedExp(std::vector<int64_t> shape, const DeviceMesh& mesh) {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  TensorView* x = input(*f, std::move(shape), DataType::Float32);
  shard(x, 0, mesh);
  f->addOutput(ops::exp(x));
  return f;
}

// Constructing a cache of a sharded fusion shards it once: the pre-segmentation list runs
// propagate_shardings one time (the passes after it shard only the tensors they make), and no
// pass the list runs calls another. Every sharded case of the suite, with a reduction whose
// init is not the identity among them (its combine is made and sharded by reduction_inits).
TEST(ShardedExecPasses, OnePropagationPerCacheConstruction) {
  std::vector<Case> cases = shardedCases(4);
  ASSERT_FALSE(cases.empty());
  for (const Case& c : cases) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      c.build(*f);
    }
    runtime::RuntimeOptions options;
    options.backend = exec::Backend::Host;
    options.deviceId = 0;
    runtime::FusionExecutorCache cache(std::move(f), options);
    const PassReport& r = cache.shardingPasses();
    EXPECT_EQ(r.runsOf("propagate_shardings"), 1) << c.name;
    EXPECT_EQ(r.runsOf("decompose_reshardings"), 1) << c.name;
    EXPECT_EQ(r.runsOf("finalize_shardings"), 1) << c.name;
    EXPECT_EQ(r.runsOf("localize_shards"), 0) << c.name << ": the copy stays global";
  }
}

// nvFuser's inner split whose outer piece is on the mesh runs for the extent that gives the
// piece the mesh's size (sharded_cases.h runs it); another extent is an error naming the tensor:
// at definition for a constant, at run time for a symbolic one. A DID on the inner piece (strided
// rows, which nvFuser does not run either) is refused saying what to write instead.
TEST(ShardedExecErrors, InnerSplitForms) {
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  options.deviceId = 1;
  auto innerSplit = [](int64_t rows, int64_t factor, int64_t did_axis) {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {rows, 4}, DataType::Float32);
    x->setDeviceMesh(DeviceMesh::arange(4));
    x->split(0, factor);
    x->axis(did_axis)->parallelize(ParallelType::DIDx);
    f->addOutput(ops::exp(x));
    return f;
  };
  std::string msg = loom::test::userErrorOf(
      [&] { runtime::FusionExecutorCache cache(innerSplit(8, 4, 1), options); });
  EXPECT_NE(msg.find("is the inner piece of split(i"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Write outer_split(axis, 4) and parallelize the outer piece"),
            std::string::npos)
      << msg;
  msg = loom::test::userErrorOf(
      [&] { runtime::FusionExecutorCache cache(innerSplit(12, 2, 0), options); });
  EXPECT_NE(msg.find("has 6 elements"), std::string::npos) << msg;
  EXPECT_NE(msg.find("but the mesh has 4 devices along DIDx"), std::string::npos) << msg;
  // Symbolic rows split by 2 with the outer piece on 4 devices: 8 rows, 2 per device.
  runtime::FusionExecutorCache cache(innerSplit(-1, 2, 0), options);
  std::vector<Tensor> outs =
      cache.run(std::vector<eval::Argument>{Tensor::empty({2, 4}, DataType::Float32)});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{2, 4}));
  msg = loom::test::userErrorOf([&] {
    cache.run(std::vector<eval::Argument>{Tensor::empty({3, 4}, DataType::Float32)});
  });
  EXPECT_NE(msg.find("T0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only when its extent is 2 x 4 = 8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the arguments make that extent 12"), std::string::npos) << msg;
}

// The user errors of running a sharded fusion.
TEST(ShardedExecErrors, ClearMessages) {
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  // No device id.
  std::string msg = loom::test::userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({8, 4}, DeviceMesh::arange(4)), options);
  });
  EXPECT_NE(msg.find("set RuntimeOptions::deviceId"), std::string::npos) << msg;
  // A device outside the mesh holds nothing: it reads no input and its output is undefined.
  options.deviceId = 7;
  {
    runtime::FusionExecutorCache cache(shardedExp({8, 4}, DeviceMesh::arange(4)), options);
    std::vector<Tensor> outs = cache.run(std::vector<eval::Argument>{Tensor()});
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_FALSE(outs[0].defined());
    EXPECT_EQ(cache.lastRuntime()->numSegments(), 0);
  }
  // A local tensor of the wrong size for the shard of a constant extent: 8 rows over 4 devices
  // is 2 rows each.
  options.deviceId = 1;
  msg = loom::test::userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({8, 4}, DeviceMesh::arange(4)), options);
    cache.run(std::vector<eval::Argument>{Tensor::empty({8, 4}, DataType::Float32)});
  });
  EXPECT_NE(msg.find("input 0 (T0) dimension 0 (sharded over 4 devices, local size 8): "
                     "expected a local shard of size 2 (the extent 8 over 4 devices), got 8"),
            std::string::npos)
      << msg;
  // A sharded extent the mesh does not divide.
  msg = loom::test::userErrorOf([&] {
    runtime::FusionExecutorCache cache(shardedExp({6, 4}, DeviceMesh::arange(4)), options);
  });
  EXPECT_NE(msg.find("which do not divide it"), std::string::npos) << msg;
  // A sort reads whole rows: an input sharded along the sort dim is gathered first (the
  // resharding finds an Allgather, which needs a communicator here), and a result sharded along
  // it is refused by name (it would need a Scatter).
  auto sortOfSharded = [&](bool shard_result) {
    return loom::test::userErrorOf([&] {
      auto f = std::make_unique<Fusion>();
      FusionGuard g(f.get());
      TensorView* x = input(*f, {8, 4}, DataType::Float32);
      shard(x, 0, DeviceMesh::arange(4));
      TensorView* order = ops::argsort(x, 0);
      if (shard_result) shard(order, 0, DeviceMesh::arange(4));
      f->addOutput(order);
      runtime::FusionExecutorCache cache(std::move(f), options);
      cache.run(std::vector<eval::Argument>{Tensor::empty({2, 4}, DataType::Float32)});
    });
  };
  msg = sortOfSharded(false);
  EXPECT_NE(msg.find("needs a communication (Allgather over DIDx"), std::string::npos) << msg;
  msg = sortOfSharded(true);
  EXPECT_NE(msg.find("= argsort(T2)' reads T2, which is not sharded on DIDx, into T1, sharded on "
                     "DIDx along i4: that needs a Scatter"),
            std::string::npos)
      << msg;
  // A fusion that needs communication runs one (Allreduce of the partial sums), which needs a
  // communicator.
  msg = loom::test::userErrorOf([&] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {8, 4}, DataType::Float32);
    shard(x, 0, DeviceMesh::arange(4));
    f->addOutput(ops::sum(x, {0}));
    runtime::FusionExecutorCache cache(std::move(f), options);
    cache.run(std::vector<eval::Argument>{Tensor::empty({2, 4}, DataType::Float32)});
  });
  EXPECT_NE(msg.find("needs a communication (Allreduce (sum) over DIDx of mesh"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("set RuntimeOptions::communicator"), std::string::npos) << msg;
  // One Loom cannot run yet is still named with the communication it needs.
  msg = loom::test::userErrorOf([&] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {8, 4}, DataType::Float32);
    shard(x, 0, DeviceMesh::arange(4));
    TensorView* y = ops::neg(x);
    y->setDeviceMesh(DeviceMesh({0, 1}));  // another mesh
    f->addOutput(y);
    runtime::FusionExecutorCache cache(std::move(f), options);
  });
  EXPECT_NE(msg.find("needs a communication Loom cannot run yet: a move between meshes other "
                     "than a SendRecv"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("that needs a communication between the meshes"), std::string::npos) << msg;
  // Between meshes every size must be known to the receivers.
  msg = loom::test::userErrorOf([&] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, 4}, DataType::Float32);
    x->setDeviceMesh(DeviceMesh({0}));
    TensorView* y = ops::neg(x);
    y->setDeviceMesh(DeviceMesh({1}));
    f->addOutput(y);
    runtime::FusionExecutorCache cache(std::move(f), options);
  });
  EXPECT_NE(msg.find("a move between device meshes of a tensor with a symbolic size"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace loom::multidevice
