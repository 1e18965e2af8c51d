// SPDX-License-Identifier: Apache-2.0
// Shardings: propagation through every op family, the user's annotation winning, the
// resharding check naming the communication, the malformed annotations, finalizing (DID
// outermost, sharded allocation), and the founding case through the pre-segmentation passes.
#include <gtest/gtest.h>

#include "user_error_of.h"

#include <memory>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/ops.h"
#include "loom/segmenter/presegment.h"
#include "loom/tensor/tensor.h"
#include "multidevice/shard_annotation.h"

namespace loom::multidevice {
namespace {

using ir::DeviceMesh;
using ir::Fusion;
using ir::FusionGuard;
using ir::ParallelType;
using ir::TensorView;

constexpr int64_t kD = 4;


// "DIDx@1 DIDy@0": each sharded axis with the position of its logical ID; "-" unsharded;
// "none" without a mesh.
std::string sharding(const TensorView* tv) {
  if (!tv->hasDeviceMesh()) return "none";
  std::string out;
  for (const ShardedAxis& a : shardedAxes(tv)) {
    const auto& logical = tv->logical();
    int64_t pos = std::find(logical.begin(), logical.end(), a.logical) - logical.begin();
    out += (out.empty() ? "" : " ") + std::string(ir::parallelTypeName(a.type)) + "@" +
           std::to_string(pos);
  }
  return out.empty() ? "-" : out;
}

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dtype = DataType::Float32) {
  auto* x = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(x);
  return x;
}

// Pointwise, broadcast, cast, composites and reductions over an unsharded dim all keep the
// sequence dim sharded; a broadcast bias gets the mesh and stays replicated.
TEST(ShardingPropagation, ThroughEveryOpFamily) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {2, 8, 16});
  TensorView* bias = input(f, {16});
  shard(x, 1);
  TensorView* y = ops::relu(ops::add(x, ops::broadcast(bias, {true, true, false})));
  TensorView* h = ops::cast(y, DataType::BFloat16);
  TensorView* sm = ops::softmax(y, 2);
  ops::LayerNormResult ln = ops::layerNorm(y, 1, nullptr, nullptr);
  TensorView* rms = ops::rmsNorm(y, 1, nullptr, 1e-5);
  ops::VarMeanResult vm = ops::varMean(y, {2}, 0.0);
  TensorView* s = ops::sum(y, {2});
  TensorView* p = ops::permute(y, {1, 0, 2});
  for (TensorView* out : {h, sm, ln.y, rms, vm.var, vm.mean, s, p}) f.addOutput(out);
  EXPECT_TRUE(propagateShardings(f));
  checkNoResharding(f);
  EXPECT_EQ(sharding(bias), "-");
  for (TensorView* tv : {y, h, sm, ln.y, rms, vm.var, vm.mean, s}) {
    EXPECT_EQ(sharding(tv), "DIDx@1") << tv->toString();
  }
  EXPECT_EQ(sharding(p), "DIDx@0");  // the sequence dim moved to the front
  for (TensorView* tv : f.allTvs()) EXPECT_TRUE(tv->hasDeviceMesh()) << tv->toString();
}

// A reshape keeps the sharding where it keeps the blocks of the sharded dim: splitting e, or
// splitting s into (4, s/4) with the mesh size dividing the outer part; merging (b, s) loses it.
TEST(ShardingPropagation, ThroughReshapes) {
  {
    Fusion f;
    FusionGuard g(&f);
    TensorView* x = input(f, {2, 8, 16});
    shard(x, 1);
    TensorView* a = ops::reshape(x, std::vector<int64_t>{2, 8, 4, 4});
    TensorView* b = ops::reshape(x, std::vector<int64_t>{2, 4, 2, 16});
    f.addOutput(a);
    f.addOutput(b);
    propagateShardings(f);
    checkNoResharding(f);
    EXPECT_EQ(sharding(a), "DIDx@1");
    EXPECT_EQ(sharding(b), "DIDx@1");
  }
  {
    Fusion f;
    FusionGuard g(&f);
    TensorView* x = input(f, {2, 8, 16});
    shard(x, 1);
    TensorView* m = ops::reshape(x, std::vector<int64_t>{16, 16});
    f.addOutput(m);
    propagateShardings(f);
    EXPECT_EQ(sharding(m), "-");
    std::string msg = loom::test::userErrorOf([&] { checkNoResharding(f); });
    EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;
    EXPECT_NE(msg.find("that needs an Allgather"), std::string::npos) << msg;
  }
}

// Only an output annotated: the inputs (and what lies between) are sharded backwards.
TEST(ShardingPropagation, BackwardFromAnOutput) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {8, 16});
  TensorView* y = ops::exp(ops::mul(x, 2.0));
  f.addOutput(y);
  shard(y, 0);
  propagateShardings(f);
  EXPECT_EQ(sharding(x), "DIDx@0");
  checkNoResharding(f);
}

// A 2-D mesh: rows on DIDy, columns on DIDx, both propagate.
TEST(ShardingPropagation, TwoDimensionalMesh) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {4, 6, 8});
  DeviceMesh mesh({0, 1, 2, 3, 4, 5}, {2, 3});
  x->setDeviceMesh(mesh);
  x->outerSplit(0, 2);
  x->axis(0)->parallelize(ParallelType::DIDy);
  x->outerSplit(2, 3);
  x->axis(2)->parallelize(ParallelType::DIDx);
  TensorView* y = ops::sum(ops::neg(x), {2});
  f.addOutput(y);
  propagateShardings(f);
  checkNoResharding(f);
  EXPECT_EQ(sharding(y), "DIDy@0 DIDx@1");
  EXPECT_EQ(y->deviceMesh(), mesh);
}

// The user's annotation wins over propagation; the check then names the communication.
TEST(ShardingPropagation, UserAnnotationWinsAndReshardingIsNamed) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {8, 16});
  TensorView* y = ops::exp(x);
  f.addOutput(y);
  shard(x, 0);
  shard(y, 1);
  propagateShardings(f);
  EXPECT_EQ(sharding(y), "DIDx@1");
  std::string msg = loom::test::userErrorOf([&] { checkNoResharding(f); });
  EXPECT_NE(msg.find("exp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("that needs an AllToAll"), std::string::npos) << msg;
  EXPECT_NE(msg.find("asks for a fusion without communications"), std::string::npos) << msg;
}

// Each communication the check names.
TEST(ReshardingCheck, NamesTheCommunication) {
  auto reason = [](auto build) {
    Fusion f;
    FusionGuard g(&f);
    build(f);
    propagateShardings(f);
    return loom::test::userErrorOf([&] { checkNoResharding(f); });
  };
  std::string allreduce = reason([](Fusion& f) {
    TensorView* x = input(f, {8, 16});
    shard(x, 0);
    f.addOutput(ops::sum(x, {0}));
  });
  EXPECT_NE(allreduce.find("that needs an Allreduce"), std::string::npos) << allreduce;
  std::string reduce_scatter = reason([](Fusion& f) {
    TensorView* x = input(f, {8, 16});
    shard(x, 0);
    TensorView* s = ops::sum(x, {0});
    shard(s, 1);  // [r{8}, i{16}]: the iteration dim (a DID on r{8} would shard nothing)
    f.addOutput(s);
  });
  EXPECT_NE(reduce_scatter.find("that needs a ReduceScatter"), std::string::npos)
      << reduce_scatter;
  std::string allgather = reason([](Fusion& f) {
    TensorView* x = input(f, {8, 16});
    shard(x, 0);
    TensorView* y = ops::relu(x);
    y->setDeviceMesh(DeviceMesh::arange(kD));  // replicated on the same mesh
    f.addOutput(y);
  });
  EXPECT_NE(allgather.find("that needs an Allgather"), std::string::npos) << allgather;
  std::string scatter = reason([](Fusion& f) {
    TensorView* x = input(f, {8, 16});
    TensorView* w = input(f, {8, 16});
    shard(x, 0);
    w->setDeviceMesh(DeviceMesh::arange(kD));
    f.addOutput(ops::mul(w, x));
  });
  EXPECT_NE(scatter.find("that needs a Scatter"), std::string::npos) << scatter;
  std::string send = reason([](Fusion& f) {
    TensorView* x = input(f, {8, 16});
    x->setDeviceMesh(DeviceMesh({0}));
    TensorView* y = ops::neg(x);
    y->setDeviceMesh(DeviceMesh({1}));
    f.addOutput(y);
  });
  EXPECT_NE(send.find("that needs a communication between the meshes"), std::string::npos)
      << send;
}

// nvFuser's inner split whose outer piece is the DID (issue 36) shards the logical dim in blocks:
// propagate_shardings rewrites it as the outer split by the mesh size every later pass reads, its
// neighbours follow, and a symbolic extent leaves the run a requirement to check (the outer
// piece must have the mesh's size and the split divide evenly: extent = 3 x 4).
TEST(ShardedAxes, InnerSplitOuterPieceBecomesAnOuterSplit) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {-1, 16});
  TensorView* y = ops::exp(x);
  f.addOutput(y);
  x->setDeviceMesh(DeviceMesh::arange(kD));
  x->split(0, 3);  // [n/3, 3, 16]
  x->axis(0)->parallelize(ParallelType::DIDx);
  EXPECT_EQ(sharding(x), "DIDx@0");
  ASSERT_TRUE(propagateShardings(f));
  for (TensorView* tv : {x, y}) {
    const ShardedAxis a = shardedAxes(tv).at(0);
    const auto* split = a.did->definition()->as<ir::Split>();
    EXPECT_FALSE(split->innerSplit()) << tv->toString();
    EXPECT_EQ(split->in(), tv->logical()[0]) << tv->toString();
    EXPECT_EQ(split->factor()->constInt(), kD) << tv->toString();
  }
  EXPECT_EQ(x->nDims(), 3);  // [DIDx{4}, n/4, 16]: the old pieces are gone
  ASSERT_EQ(f.extentRequirements().size(), 2u);
  ir::verify(f);
  // Bound as the runtime binds a device's shard: 3 rows make n = 12; 2 rows make n = 8.
  eval::ExpressionEvaluator ok;
  ok.bindInputs(f, std::vector<eval::Argument>{Tensor::empty({3, 16}, DataType::Float32)});
  eval::ExpressionEvaluator bad;
  const std::string msg = loom::test::userErrorOf([&] {
    bad.bindInputs(f, std::vector<eval::Argument>{Tensor::empty({2, 16}, DataType::Float32)});
  });
  EXPECT_NE(msg.find("only when its extent is 3 x 4 = 12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the arguments make that extent 8"), std::string::npos) << msg;
  // The text form of the rewritten fusion keeps the outer split (the requirement is not text).
  EXPECT_NE(f.toString().find("outer_split(i0, 4)"), std::string::npos) << f.toString();
}

// Annotations Loom cannot run are errors naming the tensor.
TEST(ShardedAxes, MalformedAnnotations) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {8, 16});
  f.addOutput(ops::neg(x));
  x->setDeviceMesh(DeviceMesh::arange(kD));
  x->split(0, kD);  // inner split
  x->axis(1)->parallelize(ParallelType::DIDx);
  std::string msg = loom::test::userErrorOf([&] { shardedAxes(x); });
  EXPECT_NE(msg.find("is the inner piece of split(i"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nvFuser does not run a DID on an inner piece either"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Write outer_split(axis, 4)"), std::string::npos) << msg;

  Fusion f2;
  FusionGuard g2(&f2);
  TensorView* z = input(f2, {6, 16});
  f2.addOutput(ops::neg(z));
  shard(z, 0);  // 6 rows over 4 devices
  msg = loom::test::userErrorOf([&] { shardedAxes(z); });
  EXPECT_NE(msg.find("is sharded over 4 devices (DIDx), which do not divide it"),
            std::string::npos)
      << msg;

  // Two mesh axes on one dim: DIDx shards the piece DIDy already sharded.
  Fusion f3;
  FusionGuard g3(&f3);
  TensorView* w = input(f3, {16, 8});
  f3.addOutput(ops::neg(w));
  w->setDeviceMesh(DeviceMesh(DeviceMesh::arange(kD).devices(), {2, 2}));
  w->outerSplit(0, 2);
  w->axis(0)->parallelize(ParallelType::DIDy);
  w->outerSplit(1, 2);
  w->axis(1)->parallelize(ParallelType::DIDx);
  msg = loom::test::userErrorOf([&] { shardedAxes(w); });
  EXPECT_NE(msg.find("two mesh axes on one dim"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reshape the dim into two dims"), std::string::npos) << msg;

  // A logical DID whose extent is not the mesh size, and a broadcast on a mesh of 4.
  Fusion f4;
  FusionGuard g4(&f4);
  TensorView* v = input(f4, {3, 8});
  f4.addOutput(ops::neg(v));
  v->setDeviceMesh(DeviceMesh::arange(kD));
  v->axis(0)->parallelize(ParallelType::DIDx);
  msg = loom::test::userErrorOf([&] { shardedAxes(v); });
  EXPECT_NE(msg.find("its extent must be the mesh axis's 4, not 3"), std::string::npos) << msg;
}

// nvFuser's forms that shard nothing, cleared by propagation: a DID on a reduction ID (its mark
// of partials summed across devices; next to the same DID on an iteration ID) and a size-1 dim
// split over a one-device mesh axis. A size-1 dim over four devices is refused, naming the split.
TEST(ShardedAxes, FormsThatShardNothingAreCleared) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {8, 16});
  TensorView* s = ops::sum(x, {1});
  f.addOutput(s);
  for (TensorView* tv : {x, s}) shard(tv, 1);
  shard(s, 0);  // [DIDx{4}, 2, r4{DIDx}, r4]: a reduce-scattered output
  EXPECT_EQ(sharding(s), "DIDx@0");
  ir::verify(f);
  ASSERT_TRUE(propagateShardings(f));
  for (ir::IterDomain* id : s->loop()) {
    EXPECT_FALSE(id->isReduction() && id->isDeviceDim()) << s->toString();
  }
  EXPECT_EQ(sharding(s), "DIDx@0");

  Fusion f2;
  FusionGuard g2(&f2);
  TensorView* one = input(f2, {1, 6});
  f2.addOutput(ops::neg(one));
  shard(one, 0, DeviceMesh::arange(1));
  EXPECT_EQ(sharding(one), "-");
  ASSERT_TRUE(propagateShardings(f2));
  for (ir::IterDomain* id : one->loop()) EXPECT_FALSE(id->isDeviceDim()) << one->toString();

  Fusion f3;
  FusionGuard g3(&f3);
  TensorView* wide = input(f3, {1, 6});
  f3.addOutput(ops::neg(wide));
  shard(wide, 0);
  const std::string msg = loom::test::userErrorOf([&] { shardedAxes(wide); });
  EXPECT_NE(msg.find("through outer_split(i"), std::string::npos) << msg;
  EXPECT_NE(msg.find("which has one element for 4 devices: leave it unsharded"),
            std::string::npos)
      << msg;
}

// Finalizing moves DID outermost and gives the allocation domain the DID split.
TEST(FinalizeShardings, AllocationIsTheLocalShard) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {2, 8, 16});
  shard(x, 1);
  TensorView* y = ops::exp(x);
  f.addOutput(y);
  propagateShardings(f);
  EXPECT_TRUE(finalizeShardings(f));
  for (TensorView* tv : {x, y}) {
    EXPECT_TRUE(tv->axis(0)->isDeviceDim()) << tv->toString();
    const auto& alloc = tv->maybeAllocation();
    ASSERT_EQ(alloc.size(), 4u) << tv->toString();
    EXPECT_EQ(alloc[0]->parallelType(), ParallelType::DIDx);
    EXPECT_TRUE(alloc[2]->extent()->isConstInt(2)) << alloc[2]->toString();  // s / d
  }
}

// The founding case through the pre-segmentation passes: var_mean over e of [b, s, e] with s
// sharded, translated (persistent path) and not: every tensor, those the translation made
// included, keeps the DID split in loop and allocation.
TEST(FoundingCase, VarMeanStaysShardedThroughThePasses) {
  for (bool translate : {true, false}) {
    Fusion f;
    FusionGuard g(&f);
    TensorView* x = input(f, {-1, -1, -1});
    ops::VarMeanResult vm = ops::varMean(x, {2}, 0.0);
    f.addOutput(vm.var);
    f.addOutput(vm.mean);
    shard(x, 1);
    // Local shard metadata: [b, s/d, e]; the sizes never reach the data.
    const std::vector<int64_t> local = {1, 512, 1024};
    std::vector<eval::Argument> args = {
        Tensor::fromBlob(reinterpret_cast<void*>(uintptr_t{4096}), local,
                         Tensor::contiguousStrides(local), DataType::Float32, Device::cpu())};
    segmenter::PresegmentContext ctx;
    ctx.args = args;
    ctx.translateWelford = translate;
    segmenter::runPresegmentPasses(f, ctx, DumpOptions());
    EXPECT_EQ(ctx.welfordNote.find("translated") == 0, translate) << ctx.welfordNote;
    bool saw_welford = false;
    for (const ir::Expr* e : f.exprs()) saw_welford |= e->isA<ir::WelfordOp>();
    EXPECT_EQ(saw_welford, !translate);
    for (TensorView* tv : f.allTvs()) {
      EXPECT_EQ(sharding(tv), "DIDx@1") << tv->toString() << "\n" << f.toString();
      EXPECT_TRUE(tv->axis(0)->isDeviceDim()) << tv->toString();
      EXPECT_EQ(tv->maybeAllocation().front()->parallelType(), ParallelType::DIDx)
          << tv->toString();
    }
  }
}

// A sharded input's metadata: the local shard's sizes, and global sizes that multiply each
// DID-split dim by its mesh axis (both axes of a 2-D mesh); the reference evaluator's whole
// tensors (Shards::Global) are taken as they are, and an overflowing product names the input.
TEST(ShardedMetadata, GlobalSizesFromTheDidSplits) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {6, 6, 5});
  x->setDeviceMesh(DeviceMesh({0, 1, 2, 3, 4, 5}, {2, 3}));  // DIDy: 2, DIDx: 3
  x->outerSplit(0, 2);
  x->axis(0)->parallelize(ParallelType::DIDy);
  x->outerSplit(2, 3);
  x->axis(2)->parallelize(ParallelType::DIDx);
  using Shards = eval::ExpressionEvaluator::Shards;
  Tensor local = Tensor::empty({3, 2, 5}, DataType::Float32);
  TensorMetadata m = eval::inputMetadata(x, local, Shards::Local, "input 0");
  EXPECT_EQ(m.sizes, (std::vector<int64_t>{3, 2, 5}));
  EXPECT_EQ(m.globalSizes, (std::vector<int64_t>{6, 6, 5}));
  EXPECT_EQ(eval::inputMetadata(x, local, Shards::Global, "input 0").globalSizes,
            (std::vector<int64_t>{3, 2, 5}));
  Tensor huge = Tensor::fromBlob(local.data(), {int64_t(1) << 62, 1, 1}, {0, 0, 0},
                                 DataType::Bool, Device::cpu());
  std::string msg =
      test::userErrorOf([&] { eval::inputMetadata(x, huge, Shards::Local, "input 0"); });
  EXPECT_NE(msg.find("input 0 dimension 0 (sharded over 2 devices"), std::string::npos) << msg;
}

// shard_tensor reads any split tree: device r of an inner split by 4 holds rows r, r + 4, r + 8
// (a gathered copy), a logical DID holds one row, two mesh axes on one dim nest their blocks;
// unshard_tensor puts each back together.
TEST(ShardTensor, EveryFormOfSplit) {
  Tensor global = Tensor::empty({12, 3}, DataType::Float32);
  for (int64_t i = 0; i < 36; ++i) global.dataAs<float>()[i] = float(i);
  auto row = [](const Tensor& t, int64_t r) {
    Tensor c = t.contiguous();
    return std::vector<float>(c.dataAs<float>() + r * 3, c.dataAs<float>() + r * 3 + 3);
  };
  auto globalRow = [&](int64_t r) { return row(global, r); };

  Fusion f;
  FusionGuard g(&f);
  TensorView* inner = input(f, {12, 3});
  inner->setDeviceMesh(DeviceMesh::arange(kD));
  inner->split(0, kD);  // [12/4, 4]: the inner piece on DIDx
  inner->axis(1)->parallelize(ParallelType::DIDx);
  std::vector<Tensor> shards;
  for (int64_t r = 0; r < kD; ++r) {
    Tensor s = shardTensor(global, inner, r);
    ASSERT_EQ(s.sizes(), (std::vector<int64_t>{3, 3}));
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(row(s, i), globalRow(i * kD + r)) << r << " " << i;
    shards.push_back(s.contiguous());
  }
  Tensor back = unshardTensor(shards, inner);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(row(back, i), globalRow(i));

  TensorView* logical = input(f, {kD, 3});
  logical->setDeviceMesh(DeviceMesh::arange(kD));
  logical->axis(0)->parallelize(ParallelType::DIDx);
  Tensor four = Tensor::empty({kD, 3}, DataType::Float32);
  for (int64_t i = 0; i < kD * 3; ++i) four.dataAs<float>()[i] = float(i);
  for (int64_t r = 0; r < kD; ++r) {
    Tensor s = shardTensor(four, logical, r);
    ASSERT_EQ(s.sizes(), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(row(s, 0), row(four, r));
  }

  TensorView* nested = input(f, {12, 3});
  nested->setDeviceMesh(DeviceMesh(DeviceMesh::arange(kD).devices(), {2, 2}));
  nested->outerSplit(0, 2);  // [DIDy, 6, 3]
  nested->axis(0)->parallelize(ParallelType::DIDy);
  nested->outerSplit(1, 2);  // [DIDy, DIDx, 3, 3]
  nested->axis(1)->parallelize(ParallelType::DIDx);
  for (int64_t r = 0; r < kD; ++r) {
    const int64_t y = r / 2, x = r % 2;
    Tensor s = shardTensor(global, nested, r);
    ASSERT_EQ(s.sizes(), (std::vector<int64_t>{3, 3}));
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(row(s, i), globalRow(y * 6 + x * 3 + i)) << r;
  }
}

}  // namespace
}  // namespace loom::multidevice
