// SPDX-License-Identifier: Apache-2.0
// Tensor parallelism through the sharding passes (issue 30): a column-parallel linear needs no
// communication, a row-parallel one (its contracted dim sharded) is named and becomes partial
// products plus one Allreduce or ReduceScatter, a sequence-sharded input of a column-parallel
// linear is gathered (the weight keeps its sharding), and the forms Loom does not run say what
// to write. The mpi tier runs them (mpi_tensor_parallel_test.cpp).
#include <gtest/gtest.h>

#include "user_error_of.h"

#include <memory>

#include "loom/ir/ir.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/contraction_rfactor.h"
#include "loom/ops/ops.h"
#include "loom/segmenter/presegment.h"
#include "multidevice/shard_annotation.h"

namespace loom::multidevice {
namespace {

using ir::DeviceMesh;
using ir::Fusion;
using ir::FusionGuard;
using ir::ParallelType;
using ir::TensorView;

constexpr int64_t kD = 4;


TensorView* input(Fusion& f, std::vector<int64_t> shape) {
  auto* x = ops::TensorBuilder().shape(std::move(shape)).dtype(DataType::Float32).build();
  f.addInput(x);
  return x;
}

TensorView* replicated(Fusion& f, std::vector<int64_t> shape) {
  TensorView* x = input(f, std::move(shape));
  x->setDeviceMesh(DeviceMesh::arange(kD));
  return x;
}

// The logical position of `tv`'s DIDx-sharded dim, -1 when none.
int64_t shardedDim(const TensorView* tv) {
  for (const ShardedAxis& a : shardedAxes(tv)) {
    const auto& logical = tv->logical();
    return int64_t(std::find(logical.begin(), logical.end(), a.logical) - logical.begin());
  }
  return -1;
}

// The communications of the sharded copy (what the runtime runs), in the fusion's order.
std::vector<Communication> communicationsOf(const Fusion& f) {
  std::unique_ptr<Fusion> sharded = segmenter::shardedCopy(f);
  std::vector<Communication> out;
  for (const ir::Expr* e : sharded->exprs()) {
    if (auto c = communicationOf(e)) out.push_back(*c);
  }
  return out;
}

TEST(TensorParallel, ColumnParallelLinearNeedsNoCommunication) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = replicated(f, {3, 5, 16});
  TensorView* w = input(f, {32, 16});
  TensorView* b = input(f, {32});
  shard(w, 0);
  shard(b, 0);
  TensorView* y = ops::linear(x, w, b);
  f.addOutput(y);
  propagateShardings(f);
  EXPECT_EQ(shardedDim(y), 2);  // the output features, as the weight's rows
  EXPECT_EQ(loom::test::userErrorOf([&] { checkNoResharding(f); }), "");
}

TEST(TensorParallel, RowParallelLinearIsPartialsThenOneAllreduce) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = input(f, {3, 5, 32});
    TensorView* w = input(f, {6, 32});
    TensorView* b = replicated(f, {6});
    shard(x, 2);
    shard(w, 1);
    f.addOutput(ops::linear(x, w, b));
    propagateShardings(f);
    const std::string why = loom::test::userErrorOf([&] { checkNoResharding(f); });
    EXPECT_NE(why.find("contracts the dim of T0 and T1 that is sharded on DIDx over 4 devices"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("that needs an Allreduce of the partial products"), std::string::npos)
        << why;
  }
  const std::vector<Communication> comms = communicationsOf(f);
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].type, CommunicationType::Allreduce);
  EXPECT_EQ(comms[0].reducedDim, 0);  // the devices' dim of the partial products
}

// Sequence parallel: the input sharded on the sequence, the weight on the output features. The
// output takes the weight's sharding, so the input is gathered (not the weight); the second,
// row-parallel linear's output sharded on the sequence is a ReduceScatter.
TEST(TensorParallel, SequenceParallelMlpGathersTheInputAndScattersTheSum) {
  Fusion f;
  TensorView* h = nullptr;
  {
    FusionGuard g(&f);
    TensorView* x = input(f, {2, 8, 16});
    TensorView* w1 = input(f, {32, 16});
    TensorView* w2 = input(f, {16, 32});
    shard(x, 1);
    shard(w1, 0);
    shard(w2, 1);
    h = ops::relu(ops::linear(x, w1));
    TensorView* y = ops::linear(h, w2);
    shard(y, 1);
    f.addOutput(y);
  }
  std::vector<Communication> comms = communicationsOf(f);
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0].type, CommunicationType::Allgather);
  EXPECT_EQ(comms[0].dim, 1);
  EXPECT_EQ(comms[1].type, CommunicationType::ReduceScatter);
  EXPECT_EQ(comms[1].dim, 1);
  propagateShardings(f);
  EXPECT_EQ(shardedDim(h), 2);
}

// nvFuser's row-parallel linear marks the output's contracted r{k} with the operands' DID (a
// split of out's last logical ID, the outer piece on DIDx): the same partial products and one
// Allreduce; with out's sequence dim on DIDx too (two DIDx loop IDs, one on r{k}) a
// ReduceScatter along it.
TEST(TensorParallel, NvFuserFormWithDidOnRkIsAllreduceOrReduceScatter) {
  for (bool scatter : {false, true}) {
    Fusion f;
    TensorView* y = nullptr;
    {
      FusionGuard g(&f);
      TensorView* x = input(f, {2, 8, 32});
      TensorView* w = input(f, {6, 32});
      y = ops::linear(x, w);
      ASSERT_EQ(y->logical().size(), 4u);
      for (TensorView* t : {x, w, y}) {
        t->setDeviceMesh(DeviceMesh::arange(kD));
        t->split(-1, kD, /*inner_split=*/false);
        t->axis(-2)->parallelize(ParallelType::DIDx);
      }
      if (scatter) {
        y->outerSplit(1, kD);
        y->axis(1)->parallelize(ParallelType::DIDx);
      }
      f.addOutput(y);
      // The DID on r{k} shards no data: only the sequence dim counts.
      EXPECT_EQ(shardedDim(y), scatter ? 1 : -1);
    }
    const std::vector<Communication> comms = communicationsOf(f);
    ASSERT_EQ(comms.size(), 1u) << scatter;
    EXPECT_EQ(comms[0].type,
              scatter ? CommunicationType::ReduceScatter : CommunicationType::Allreduce);
    if (scatter) {
      EXPECT_EQ(comms[0].dim, 1);
    }
  }
}

// Propagation gives an unannotated linear output's r{k} the operands' sharding of k (nvFuser's
// partial-sum mark), and leaves its data dims unsharded.
TEST(TensorParallel, RFactoredHalfProductSumsItsF32PartialsInAReduceScatter) {
  // nvFuser's row-parallel matmul by rFactor with the output's m on DIDx: for bf16 / f16 the
  // f32 sum of the partials takes the output's sharding (a ReduceScatter of f32 values, along m),
  // and the cast to the output's dtype is local; an unsharded m keeps the Allreduce.
  for (DataType dt : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
    for (bool scatter : {false, true}) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + (scatter ? " scattered" : ""));
      Fusion f;
      {
        FusionGuard g(&f);
        const DeviceMesh mesh = DeviceMesh::arange(kD);
        auto* a = ops::TensorBuilder().shape({2 * kD, 8 * kD}).dtype(dt).build();
        auto* b = ops::TensorBuilder().shape({8 * kD, 5}).dtype(dt).build();
        f.addInput(a);
        f.addInput(b);
        shard(a, 1);
        shard(b, 0);
        TensorView* y = ops::matmul(a, b);
        y->setDeviceMesh(mesh);
        y->split(-1, kD, /*inner_split=*/false);
        TensorView* local = ops::rFactorContraction(y, {-1});
        local->axis(-2)->parallelize(ParallelType::DIDx);
        if (scatter) {
          y->outerSplit(0, kD);
          y->axis(0)->parallelize(ParallelType::DIDx);
        }
        f.addOutput(y);
      }
      std::unique_ptr<Fusion> sharded = segmenter::shardedCopy(f);
      std::vector<Communication> comms;
      for (const ir::Expr* e : sharded->exprs()) {
        if (auto c = communicationOf(e)) {
          comms.push_back(*c);
          EXPECT_EQ(e->output(0)->dtype(), DataType::Float32);  // the partials' sum, in f32
        }
      }
      ASSERT_EQ(comms.size(), 1u);
      EXPECT_EQ(comms[0].type,
                scatter ? CommunicationType::ReduceScatter : CommunicationType::Allreduce);
      if (scatter) {
        EXPECT_EQ(comms[0].dim, 0);
      }
    }
  }
}

TEST(TensorParallel, PropagationMarksTheContractedRk) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {3, 5, 32});
  TensorView* w = input(f, {6, 32});
  shard(x, 2);
  shard(w, 1);
  TensorView* y = ops::linear(x, w);
  f.addOutput(y);
  propagateShardings(f);
  ASSERT_TRUE(y->hasDeviceMesh());
  EXPECT_EQ(shardedDim(y), -1);
  const ir::IterDomain* did = y->axis(0);
  EXPECT_TRUE(did->isReduction() && did->parallelType() == ParallelType::DIDx) << y->toString();
  const auto* split = did->definition()->as<ir::Split>();
  EXPECT_EQ(split->in(), y->logical().back());
  EXPECT_FALSE(split->innerSplit());
}

// Only the output's r{k} on DIDx, the operands replicated: each operand is sliced on k (two
// Scatters) and the partials summed.
TEST(TensorParallel, DidOnRkOfReplicatedOperandsScattersThem) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = replicated(f, {3, 32});
    TensorView* w = replicated(f, {6, 32});
    TensorView* y = ops::linear(x, w);
    y->setDeviceMesh(DeviceMesh::arange(kD));
    y->split(-1, kD, /*inner_split=*/false);
    y->axis(-2)->parallelize(ParallelType::DIDx);
    f.addOutput(y);
  }
  const std::vector<Communication> comms = communicationsOf(f);
  ASSERT_EQ(comms.size(), 3u);
  EXPECT_EQ(comms[0].type, CommunicationType::Scatter);
  EXPECT_EQ(comms[1].type, CommunicationType::Scatter);
  EXPECT_EQ(comms[2].type, CommunicationType::Allreduce);
}

// A DID on r{k} that is not one outer split by the mesh size, or on another mesh axis than the
// operands' k, is a UserError naming the output.
TEST(TensorParallel, DidOnRkFormsLoomDoesNotRun) {
  auto error = [](auto build) {
    Fusion f;
    FusionGuard g(&f);
    build(f);
    return loom::test::userErrorOf([&] { (void)segmenter::shardedCopy(f); });
  };
  std::string inner = error([](Fusion& f) {
    TensorView* x = replicated(f, {3, 32});
    TensorView* w = replicated(f, {6, 32});
    TensorView* y = ops::linear(x, w);
    y->setDeviceMesh(DeviceMesh::arange(kD));
    y->split(-1, 2);  // outer piece of 16, not 4
    y->axis(-2)->parallelize(ParallelType::DIDx);
    f.addOutput(y);
  });
  EXPECT_NE(inner.find("T2: DIDx loop ID"), std::string::npos) << inner;
  EXPECT_NE(inner.find("marks the contracted r{k} (i"), std::string::npos) << inner;
  EXPECT_NE(inner.find("split(-1, 4, inner_split=False)"), std::string::npos) << inner;
  const DeviceMesh mesh2d(DeviceMesh::arange(kD).devices(), {2, 2});
  std::string axes = error([&](Fusion& f) {
    TensorView* x = input(f, {5, 32});
    TensorView* w = input(f, {6, 32});
    shard(x, 1, ParallelType::DIDy, mesh2d);
    shard(w, 1, ParallelType::DIDy, mesh2d);
    TensorView* y = ops::linear(x, w);
    y->setDeviceMesh(mesh2d);
    y->split(-1, 2, /*inner_split=*/false);
    y->axis(-2)->parallelize(ParallelType::DIDx);
    f.addOutput(y);
  });
  EXPECT_NE(axes.find("sums the contracted r{k} (i"), std::string::npos) << axes;
  EXPECT_NE(axes.find("across DIDx but an operand's contracted dim is sharded on DIDy"),
            std::string::npos)
      << axes;
}

TEST(TensorParallel, UnsupportedFormsSayWhatToWrite) {
  auto error = [](auto build) {
    Fusion f;
    FusionGuard g(&f);
    build(f);
    return loom::test::userErrorOf([&] { (void)segmenter::shardedCopy(f); });
  };
  std::string one_dim = error([](Fusion& f) {
    TensorView* a = input(f, {5, 32});
    TensorView* v = input(f, {32});
    shard(a, 1);
    shard(v, 0);
    f.addOutput(ops::matmul(a, v));
  });
  EXPECT_NE(one_dim.find("T1 has one dim"), std::string::npos) << one_dim;
  EXPECT_NE(one_dim.find("unsqueeze T1 to [1, k] (or [k, 1] as matmul's second operand)"),
            std::string::npos)
      << one_dim;
  const DeviceMesh mesh2d(DeviceMesh::arange(kD).devices(), {2, 2});
  std::string axes = error([&](Fusion& f) {
    TensorView* x = input(f, {5, 32});
    TensorView* w = input(f, {6, 32});
    shard(x, 1, ParallelType::DIDx, mesh2d);
    shard(w, 1, ParallelType::DIDy, mesh2d);
    f.addOutput(ops::linear(x, w));
  });
  EXPECT_NE(axes.find("T0's dim sharded on DIDx over 2 devices and T1's sharded on DIDy"),
            std::string::npos)
      << axes;
  EXPECT_NE(axes.find("shard both contracted dims on one mesh axis"), std::string::npos) << axes;
  std::string meshes = error([](Fusion& f) {
    TensorView* x = input(f, {5, 32});
    TensorView* w = input(f, {6, 32});
    shard(x, 1);
    shard(w, 1, ParallelType::DIDx, DeviceMesh({4, 5, 6, 7}));
    f.addOutput(ops::linear(x, w));
  });
  EXPECT_NE(meshes.find("different device meshes (T0 on"), std::string::npos) << meshes;
  EXPECT_NE(meshes.find("move one onto the other's mesh with a set first"), std::string::npos)
      << meshes;
}

}  // namespace
}  // namespace loom::multidevice
