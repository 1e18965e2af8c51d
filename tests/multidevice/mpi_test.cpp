// SPDX-License-Identifier: Apache-2.0
// The mpi tier: run under `mpirun -np N` (ctest registers N = 1, 2, 4), one rank per device of the
// meshes. Every rank builds the same global inputs, takes its shard, runs every sharded case as
// its rank, and checks its outputs against its shard of the reference; the ranks then agree on
// the verdict through the communicator, so a failure on one rank fails every rank. No run issues
// a communication. LOOM_MPI_TEST_BACKEND=cuda runs the ranks on the GPU (ranks share it).
#include <gtest/gtest.h>

#include "backend_available.h"

#include <cstdlib>
#include <sstream>

#include "multidevice/sharded_cases.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::multidevice {
namespace {

using namespace test;

exec::Backend backend() {
  const char* b = std::getenv("LOOM_MPI_TEST_BACKEND");
  return b != nullptr && std::string(b) == "cuda" ? exec::Backend::Cuda : exec::Backend::Host;
}

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
  std::unique_ptr<Fusion> sharded = shardedCopy(fusion);
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

}  // namespace
}  // namespace loom::multidevice
