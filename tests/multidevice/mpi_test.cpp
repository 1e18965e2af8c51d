// SPDX-License-Identifier: Apache-2.0
// The mpi tier: run under `mpirun -np N` (ctest registers N = 1, 2, 4), one rank per device of the
// meshes. Every rank builds the same global inputs, takes its shard, runs every sharded case as
// its rank, and checks its outputs against its shard of the reference; the ranks then agree on
// the verdict through the communicator, so a failure on one rank fails every rank. No run issues
// a communication, except the resharding cases at the end, which count theirs.
// LOOM_MPI_TEST_BACKEND=cuda runs the ranks on the GPU (ranks share it).
#include <gtest/gtest.h>

#include "backend_available.h"

#include <cstdlib>
#include <sstream>

#include "loom/multidevice/communication.h"
#include "loom/segmenter/presegment.h"
#include "multidevice/mpi_communication_case.h"
#include "multidevice/sharded_cases.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::multidevice {
namespace {

using namespace test;

exec::Backend backend() { return mpiBackend(); }

TEST(Mpi, RanksFromTheLauncher) {
  Communicator& comm = Communicator::instance();
  ASSERT_GE(comm.size(), 1);
  std::vector<int64_t> ranks = comm.allgather(comm.rank());
  for (int64_t r = 0; r < comm.size(); ++r) EXPECT_EQ(ranks[size_t(r)], r);
  std::vector<std::string> names = comm.allgatherBytes("rank " + std::to_string(comm.rank()));
  EXPECT_EQ(names.back(), "rank " + std::to_string(comm.size() - 1));
  comm.barrier();
}

class MpiSharded : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiSharded, EachRankComputesItsShard) {
  Communicator& comm = Communicator::instance();
  if (auto why = loom::test::backendUnavailable(backend())) GTEST_SKIP() << *why;
  const std::vector<Case> cases = shardedCases(comm.size());
  const Case* c = nullptr;
  for (const Case& k : cases) {
    if (k.name == GetParam()) c = &k;
  }
  ASSERT_NE(c, nullptr);
  Fusion fusion;
  {
    FusionGuard g(&fusion);
    c->build(fusion);
  }
  std::vector<eval::Argument> global = globalInputs(*c, fusion);
  std::vector<Tensor> expected = eval::evaluateFusion(fusion, global);
  std::unique_ptr<Fusion> sharded = segmenter::shardedCopy(fusion);
  std::vector<std::string> failures;
  const int64_t before = comm.communications();
  try {
    runAsDevice(*c, fusion, *sharded, global, expected, comm.rank(), backend(), failures, &comm);
  } catch (const std::exception& e) {
    failures.push_back(std::string("rank threw: ") + e.what());
  }
  EXPECT_EQ(comm.communications(), before) << "a sharded run needing none communicated";
  // Every rank reaches this collective, whatever happened above.
  std::ostringstream mine;
  for (const std::string& f : failures) mine << f << "\n";
  std::vector<std::string> all = comm.allgatherBytes(mine.str());
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_TRUE(all[r].empty()) << "rank " << r << " of " << comm.size() << ":\n" << all[r];
  }
}

std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  for (const Case& c : shardedCases(Communicator::instance().size())) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Cases, MpiSharded, ::testing::ValuesIn(caseNames()),
                         [](const auto& info) { return info.param; });

// A mesh naming more devices than there are ranks is a clear error on every rank.
TEST(Mpi, MeshLargerThanTheWorld) {
  Communicator& comm = Communicator::instance();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1}, DataType::Float32);
    shard(x, 0, DeviceMesh::arange(comm.size() + 1));
    f->addOutput(ops::neg(x));
  }
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  options.communicator = &comm;
  std::string msg;
  try {
    runtime::FusionExecutorCache cache(std::move(f), options);
  } catch (const UserError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("a mesh may not be larger than the world"), std::string::npos) << msg;
  EXPECT_NE(msg.find("names device " + std::to_string(comm.size())), std::string::npos) << msg;
}

// A 1-D mesh of the devices [from, to).
DeviceMesh meshOf(int64_t from, int64_t to) {
  std::vector<int64_t> devices;
  for (int64_t i = from; i < to; ++i) devices.push_back(i);
  return DeviceMesh(devices);
}

std::vector<CommunicationCase> communicationCases() {
  return {
      // relu of a sharded input into a replicated output: an Allgather along dim 1 (not the
      // outermost: the blocks are rearranged), then relu on the whole tensor.
      {"AllgatherIntoReplicated",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3, 4 * d, 5}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         TensorView* y = ops::relu(x);
         y->setDeviceMesh(DeviceMesh::arange(d));
         f.addOutput(y);
       },
       {CommunicationType::Allgather}},
      // nvFuser's inner split with the outer piece on the mesh (issue 36), gathered into a
      // replicated output: the same blocks as an outer split, so the same Allgather.
      {"InnerSplitShardGathered",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3, 4 * d, 5}, DataType::Float32);
         x->setDeviceMesh(DeviceMesh::arange(d));
         x->split(1, 4);  // [3, d, 4, 5]
         x->axis(1)->parallelize(ParallelType::DIDx);
         TensorView* y = ops::relu(x);
         y->setDeviceMesh(DeviceMesh::arange(d));
         f.addOutput(y);
       },
       {CommunicationType::Allgather}},
      // A sum (and a max) over the sharded dim of one element per device: an Allreduce each.
      {"AllreduceSumAndMax",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {d, 6}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         f.addOutput(ops::sum(x, {0}));
         f.addOutput(ops::max(x, {0}));
       },
       {CommunicationType::Allreduce, CommunicationType::Allreduce},
       2,
       2},
      // Several elements per device along the reduced sharded dim: a local partial reduction,
      // then an Allreduce of the partials; with another reduced dim too, and for max.
      {"PartialsThenAllreduce",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3, 4 * d, 5}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         f.addOutput(ops::sum(x, {1}));
         f.addOutput(ops::sum(x, {1, 2}));
         f.addOutput(ops::max(x, {0, 1}));
       },
       {CommunicationType::Allreduce, CommunicationType::Allreduce, CommunicationType::Allreduce},
       3},
      // bf16 in, the sum over the sharded sequence dim of a [b, s, e] input (f32 math inside).
      {"SequenceSumBf16",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {2, 8 * d, 6}, DataType::BFloat16);
         shard(x, 1, DeviceMesh::arange(d));
         f.addOutput(ops::sum(ops::cast(x, DataType::Float32), {1}));
       },
       {CommunicationType::Allreduce}},
      // var_mean over the sharded sequence dim: each device's Welford partials, gathered (three
      // Allgathers: avg, m2, n) and combined exactly; and a layer-norm-like normalization over
      // that dim from sums (Allreduce of the partial sums each time).
      {"VarMeanOverTheShardedDim",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {2, 8 * d, 6}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         ops::VarMeanResult vm = ops::varMean(x, {1}, /*correction=*/0.0);
         f.addOutput(vm.var);
         f.addOutput(vm.mean);
       },
       {CommunicationType::Allgather, CommunicationType::Allgather, CommunicationType::Allgather},
       3},
      // Sequence-parallel normalization whose statistics span the sharded dim: mean and
      // two-pass variance over it (each sum an Allreduce of local partials), then every device
      // normalizes its own block.
      {"NormalizeOverTheShardedDim",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {2, 8 * d, 6}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         TensorView* m = ops::mean(x, {1}, /*keepdim=*/true);
         TensorView* v = ops::variance(x, {1}, /*correction=*/0.0, /*keepdim=*/true);
         TensorView* y = ops::mul(ops::sub(x, m), ops::rsqrt(ops::add(v, 1e-5)));
         f.addOutput(y);
       },
       {CommunicationType::Allreduce, CommunicationType::Allreduce,
        CommunicationType::Allreduce},
       3},
      // A 2-D mesh (2 x d/2): dim 0 on DIDy, dim 2 on DIDx; the sum over dim 0 reduces within
      // each DIDy team (the devices of one mesh column) only, and stays sharded on DIDx.
      {"TwoDimensionalMeshReducesWithinDidyTeams",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {4, 3, 2 * d}, DataType::Float32);
         x->setDeviceMesh(mesh2d(d));
         x->outerSplit(0, 2);
         x->axis(0)->parallelize(ParallelType::DIDy);
         x->outerSplit(3, d / 2);
         x->axis(3)->parallelize(ParallelType::DIDx);
         f.addOutput(ops::sum(x, {0}));
       },
       {CommunicationType::Allreduce},
       1,
       4},
      // nvFuser's 2-D AllToAll (its test_2d_alltoall): [DIDy, DIDx] read as [DIDx, DIDy] on the
      // 2 x 2 mesh changes both mesh axes: DIDx's dim is gathered (whose place DIDy holds),
      // DIDy's moves to dim 1 (an AllToAll within each DIDy team), then each device keeps its
      // DIDx block of dim 0 (a local Scatter, no collective).
      {"TwoAxisAllToAll",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {6, 10}, DataType::Float32);
         x->setDeviceMesh(mesh2d(d));
         x->outerSplit(1, d / 2);
         x->axis(1)->parallelize(ParallelType::DIDx);
         x->outerSplit(0, 2);
         x->axis(0)->parallelize(ParallelType::DIDy);
         TensorView* y = ops::neg(x);
         y->setDeviceMesh(mesh2d(d));
         y->outerSplit(1, 2);
         y->axis(1)->parallelize(ParallelType::DIDy);
         y->outerSplit(0, d / 2);
         y->axis(0)->parallelize(ParallelType::DIDx);
         f.addOutput(y);
       },
       {CommunicationType::Allgather, CommunicationType::AllToAll, CommunicationType::Scatter},
       2,
       4},
      // Partials reduce-scattered: the sum's output sharded along its other dim.
      {"PartialsThenReduceScatter",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3 * d, 2, 4 * d}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         TensorView* y = ops::sum(x, {0});
         shard(y, 2, DeviceMesh::arange(d));  // loop axis 2: [r, 2, 4d]
         f.addOutput(y);
       },
       {CommunicationType::ReduceScatter}},
      // The sum's output sharded along its other dim: a ReduceScatter.
      {"ReduceScatter",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {d, 3, 4 * d}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         TensorView* y = ops::sum(x, {0});
         shard(y, 2, DeviceMesh::arange(d));
         f.addOutput(y);
       },
       {CommunicationType::ReduceScatter},
       1,
       2},
      // The sharded dim moves (dim 0 to dim 2): an AllToAll, then the negation locally.
      {"AllToAll",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {2 * d, 3, 4 * d}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         TensorView* y = ops::neg(x);
         shard(y, 2, DeviceMesh::arange(d));
         f.addOutput(y);
       },
       {CommunicationType::AllToAll}},
      // A replicated operand of a sharded product: each device takes its block (a Scatter,
      // local: every device holds the whole).
      {"ScatterReplicatedOperand",
       [](Fusion& f, int64_t d) {
         TensorView* w = input(f, {4 * d, 6}, DataType::Float32);
         TensorView* x = input(f, {4 * d, 6}, DataType::Float32);
         w->setDeviceMesh(DeviceMesh::arange(d));
         shard(x, 0, DeviceMesh::arange(d));
         f.addOutput(ops::mul(w, x));
       },
       {CommunicationType::Scatter},
       0},
      // A Welford over the sharded dim whose statistics the user shards along another dim: the
      // partials gathered and combined, then each device keeps its block of each result (a
      // local Scatter, no collective).
      {"VarMeanShardedStatistics",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {2 * d, 4 * d, 3}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         ops::WelfordResult w = ops::welford(x, {1});
         for (TensorView* t : {w.avg, w.m2}) {
           shard(t, 0, DeviceMesh::arange(d));
           f.addOutput(t);
         }
       },
       {CommunicationType::Allgather, CommunicationType::Allgather, CommunicationType::Allgather,
        CommunicationType::Scatter, CommunicationType::Scatter},
       3},
      // Symbolic sizes: each device binds its shard's size, and n / d is the local extent of
      // a sharded dim of whole extent n (so the gathered side reads n as the whole). An
      // Allgather along dim 1, then a kernel on the whole tensor.
      {"AllgatherSymbolic",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         TensorView* y = ops::relu(x);
         y->setDeviceMesh(DeviceMesh::arange(d));
         f.addOutput(ops::sum(y, {2}));
       },
       {CommunicationType::Allgather},
       1,
       1,
       nullptr,
       nullptr,
       [](int64_t d) { return std::vector<std::vector<int64_t>>{{3, 4 * d, 5}}; }},
      {"AllToAllSymbolic",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         TensorView* y = ops::neg(x);
         shard(y, 2, DeviceMesh::arange(d));
         f.addOutput(y);
       },
       {CommunicationType::AllToAll},
       1,
       1,
       nullptr,
       nullptr,
       [](int64_t d) { return std::vector<std::vector<int64_t>>{{2 * d, 3, 4 * d}}; }},
      {"ReduceScatterSymbolic",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {d, -1, -1}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         TensorView* y = ops::sum(x, {0});
         shard(y, 2, DeviceMesh::arange(d));
         f.addOutput(ops::exp(y));
       },
       {CommunicationType::ReduceScatter},
       1,
       2,
       nullptr,
       nullptr,
       [](int64_t d) { return std::vector<std::vector<int64_t>>{{d, 3, 4 * d}}; }},
      {"ScatterSymbolic",
       [](Fusion& f, int64_t d) {
         TensorView* w = input(f, {-1, -1}, DataType::Float32);
         TensorView* x = input(f, {-1, -1}, DataType::Float32);
         w->setDeviceMesh(DeviceMesh::arange(d));
         shard(x, 0, DeviceMesh::arange(d));
         f.addOutput(ops::mul(w, x));
       },
       {CommunicationType::Scatter},
       0,
       1,
       nullptr,
       nullptr,
       [](int64_t d) { return std::vector<std::vector<int64_t>>{{4 * d, 6}, {4 * d, 6}}; }},
      // Reductions over a sharded dim of symbolic size: the partials view each device's block
      // through an outer split by d (static even when the extent is symbolic).
      {"SymbolicSequenceStatistics",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {-1, -1, -1}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         f.addOutput(ops::sum(x, {1}));
         ops::VarMeanResult vm = ops::varMean(x, {1}, /*correction=*/1.0);
         f.addOutput(vm.var);
         f.addOutput(vm.mean);
       },
       {CommunicationType::Allreduce, CommunicationType::Allgather, CommunicationType::Allgather,
        CommunicationType::Allgather},
       4,
       1,
       nullptr,
       nullptr,
       [](int64_t d) { return std::vector<std::vector<int64_t>>{{2, 8 * d, 6}}; }},
      // Between meshes. One device's tensor to every device: a Broadcast from device 0 (the
      // whole mesh at -np 1 is that device: nothing moves).
      {"BroadcastToEveryDevice",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3, 5}, DataType::Float32);
         x->setDeviceMesh(DeviceMesh({0}));
         TensorView* y = ops::exp(x);
         TensorView* z = ops::neg(y);
         z->setDeviceMesh(DeviceMesh::arange(d));
         f.addOutput(y);
         f.addOutput(z);
       },
       {CommunicationType::Broadcast}},
      // Pipeline stages: device 0 computes, device 1 continues, device 0 finishes; a SendRecv
      // each way (issued in the fusion's order on both devices). Other ranks hold nothing.
      {"PipelineThereAndBack",
       [](Fusion& f, int64_t /*d*/) {
         TensorView* x = input(f, {4, 6}, DataType::Float32);
         x->setDeviceMesh(DeviceMesh({0}));
         TensorView* y = ops::exp(x);
         TensorView* z = ops::neg(y);
         z->setDeviceMesh(DeviceMesh({1}));
         TensorView* w = ops::mul(z, z);
         w->setDeviceMesh(DeviceMesh({1}));
         TensorView* v = ops::add(w, y);
         v->setDeviceMesh(DeviceMesh({0}));
         f.addOutput(z);
         f.addOutput(v);
       },
       {CommunicationType::SendRecv, CommunicationType::SendRecv},
       2,
       2,
       [](int64_t r, int64_t) { return r < 2; },
       [](int64_t r) -> std::string {
         return r == 0 ? "send by SendRecv from mesh [0] to mesh [1]"
                       : r == 1 ? "receive by SendRecv from mesh [0] to mesh [1]" : "";
       }},
      // Shards of one half of the devices to the other half, block for block: a SendRecv.
      {"SendRecvOfShards",
       [](Fusion& f, int64_t d) {
         const int64_t h = d / 2;
         TensorView* x = input(f, {2 * h, 3, 5}, DataType::Float32);
         shard(x, 0, meshOf(0, h));
         TensorView* y = ops::relu(x);
         shard(y, 0, meshOf(h, 2 * h));
         f.addOutput(y);
       },
       {CommunicationType::SendRecv},
       1,
       2,
       [](int64_t r, int64_t d) { return r < 2 * (d / 2); }},
      // Every device's shard (of dim 1: blocks rearranged) gathered into device 0.
      {"GatherIntoOneDevice",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3, 4 * d}, DataType::Float32);
         shard(x, 1, DeviceMesh::arange(d));
         TensorView* y = ops::relu(x);
         y->setDeviceMesh(DeviceMesh({0}));
         f.addOutput(y);
       },
       {CommunicationType::Gather}},
      // Device 0's tensor split along dim 1 over every device: a Scatter from it.
      {"ScatterFromOneDevice",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {3, 4 * d}, DataType::Float32);
         x->setDeviceMesh(DeviceMesh({0}));
         TensorView* y = ops::neg(x);
         shard(y, 1, DeviceMesh::arange(d));
         f.addOutput(y);
       },
       {CommunicationType::Scatter}},
      // A sum over the sharded dim into the last device only: local partials, then a Reduce.
      {"ReduceIntoOneDevice",
       [](Fusion& f, int64_t d) {
         TensorView* x = input(f, {2 * d, 6}, DataType::Float32);
         shard(x, 0, DeviceMesh::arange(d));
         TensorView* y = ops::sum(x, {0});
         y->setDeviceMesh(DeviceMesh({d - 1}));
         f.addOutput(y);
       },
       {CommunicationType::Reduce}},
  };
}

class MpiCommunication : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiCommunication, MatchesTheReferenceWithTheExpectedCommunications) {
  Communicator& comm = Communicator::instance();
  if (auto why = loom::test::backendUnavailable(backend())) GTEST_SKIP() << *why;
  CommunicationCase c;
  for (const CommunicationCase& k : communicationCases()) {
    if (k.name == GetParam()) c = k;
  }
  ASSERT_TRUE(c.build);
  if (comm.size() < c.minRanks) GTEST_SKIP() << c.name << " needs " << c.minRanks << " ranks";
  expectNoFailureOnAnyRank(runCommunicationCase(c, comm), comm);
}

std::vector<std::string> communicationCaseNames() {
  std::vector<std::string> names;
  for (const CommunicationCase& c : communicationCases()) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Cases, MpiCommunication, ::testing::ValuesIn(communicationCaseNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom::multidevice
