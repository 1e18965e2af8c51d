// SPDX-License-Identifier: Apache-2.0
// The mpi tier: the ranks' agreement on the first run of a sharded fusion (FusionExecutorCache,
// runtime/rank_agreement.h). The last rank runs another fusion (max where the others sum, a mesh
// listed in another order, another sharded dim) or passes the whole tensor where its shard is
// due; every rank gets the same UserError naming the rank that differs and what differs, and
// goes on (the next test runs on the same ranks). An agreeing fusion is checked once per
// signature, and never on cached runs. Needs two ranks or more (skipped under mpirun -np 1).
#include <gtest/gtest.h>

#include <sstream>

#include "multidevice/sharded_cases.h"

namespace loom::multidevice {
namespace {

using namespace test;

std::string ranksBefore(int64_t last) {
  if (last == 1) return "rank 0";
  std::ostringstream os;
  os << "ranks ";
  for (int64_t r = 0; r < last; ++r) os << (r > 0 ? ", " : "") << r;
  return os.str();
}

// Runs the fusion `build` makes (given this rank's place: whether it is the last rank) on this
// rank's `local` input and returns the UserError's message ("" when it ran).
std::string runAsRank(const std::function<void(Fusion&, bool last)>& build,
                      const std::function<Tensor(bool last)>& local) {
  Communicator& comm = Communicator::instance();
  const bool last = comm.rank() == comm.size() - 1;
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    build(*fusion, last);
  }
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  options.communicator = &comm;
  try {
    runtime::FusionExecutorCache cache(std::move(fusion), options);
    cache.run(std::vector<eval::Argument>{local(last)});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// Every rank's failures, so that a failure on one rank fails every rank.
void expectOnEveryRank(const std::vector<std::string>& failures) {
  Communicator& comm = Communicator::instance();
  std::ostringstream mine;
  for (const std::string& f : failures) mine << f << "\n";
  std::vector<std::string> all = comm.allgatherBytes(mine.str());
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_TRUE(all[r].empty()) << "rank " << r << " of " << comm.size() << ":\n" << all[r];
  }
}

// `message` holds every part of `parts`.
std::vector<std::string> missing(const std::string& message,
                                 const std::vector<std::string>& parts) {
  std::vector<std::string> out;
  for (const std::string& p : parts) {
    if (message.find(p) == std::string::npos) out.push_back("'" + p + "' not in: " + message);
  }
  return out;
}

Tensor filled(std::vector<int64_t> sizes) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, 7);
  return t;
}

class MpiAgreement : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Communicator::instance().size() < 2) GTEST_SKIP() << "needs two ranks or more";
  }
  int64_t d() const { return Communicator::instance().size(); }
  std::string odd() const { return "rank " + std::to_string(d() - 1); }
};

// One rank reduces with max where the others sum: the same sizes and communications, so without
// the check the job would run, with wrong results.
TEST_F(MpiAgreement, SumVersusMax) {
  const int64_t n = d();
  const std::string msg = runAsRank(
      [n](Fusion& f, bool last) {
        TensorView* x = input(f, {2 * n, 3}, DataType::Float32);
        shard(x, 0, DeviceMesh::arange(n));
        f.addOutput(last ? ops::max(x, {0}) : ops::sum(x, {0}));
      },
      [](bool) {
        return filled({2, 3});
      });
  expectOnEveryRank(
      missing(msg, {"the ranks disagree on the first run of this sharded fusion",
                    odd() + "'s fusion differs from " + ranksBefore(n - 1) + "'s, first at line",
                    "= sum(T0", "= max(T0"}));
}

// One rank lists the mesh in another order: its shard is another block of the whole.
TEST_F(MpiAgreement, MeshInAnotherOrder) {
  const int64_t n = d();
  const std::string msg = runAsRank(
      [n](Fusion& f, bool last) {
        std::vector<int64_t> devices = DeviceMesh::arange(n).devices();
        if (last) std::reverse(devices.begin(), devices.end());
        TensorView* x = input(f, {2 * n, 3}, DataType::Float32);
        shard(x, 0, DeviceMesh(devices));
        f.addOutput(ops::neg(x));
      },
      [](bool) {
        return filled({2, 3});
      });
  expectOnEveryRank(
      missing(msg, {odd() + "'s fusion differs from " + ranksBefore(n - 1) + "'s", "mesh=["}));
}

// One rank shards the other dim (square, so every local size agrees): no communication either
// way, so without the check every rank would return a wrong block.
TEST_F(MpiAgreement, AnotherShardedDim) {
  const int64_t n = d();
  const std::string msg = runAsRank(
      [n](Fusion& f, bool last) {
        TensorView* x = input(f, {2 * n, 2 * n}, DataType::Float32);
        shard(x, last ? 1 : 0, DeviceMesh::arange(n));
        f.addOutput(ops::neg(x));
      },
      [n](bool last) {
        return filled(last ? std::vector<int64_t>{2 * n, 2} : std::vector<int64_t>{2, 2 * n});
      });
  expectOnEveryRank(
      missing(msg, {odd() + "'s fusion differs from " + ranksBefore(n - 1) + "'s, first at line"}));
}

// One rank passes the whole tensor where its shard is due: with symbolic extents it binds as a
// larger whole and, for a pointwise fusion, runs without a collective to notice.
TEST_F(MpiAgreement, WholeTensorWhereAShardIsDue) {
  const int64_t n = d();
  const std::string msg = runAsRank(
      [n](Fusion& f, bool) {
        TensorView* x = input(f, {-1, -1}, DataType::Float32);
        shard(x, 0, DeviceMesh::arange(n));
        f.addOutput(ops::neg(x));
      },
      [n](bool last) {
        return filled({last ? 2 * n : 2, 3});
      });
  expectOnEveryRank(missing(
      msg, {"input 0 (T0): " + odd() + " passes f32 [" + std::to_string(2 * n) + ", 3] where " +
            ranksBefore(n - 1) + (n == 2 ? " passes" : " pass") + " f32 [2, 3] (" + odd() +
            " may pass the whole tensor where its shard is due)"}));
}

// An agreeing fusion: one check on the first run, none on cached runs nor on a run whose
// arguments are new to the cache but not to the ranks (another alignment), one for new sizes;
// every run is right.
TEST_F(MpiAgreement, OncePerSignature) {
  Communicator& comm = Communicator::instance();
  const int64_t n = d();
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* x = input(*fusion, {-1, 3}, DataType::Float32);
    shard(x, 0, DeviceMesh::arange(n));
    fusion->addOutput(ops::sum(x, {0}));
  }
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  options.communicator = &comm;
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  std::vector<std::string> failures;
  auto expectRun = [&](const Tensor& local, int64_t checks, const char* what) {
    const int64_t before = comm.checks();
    Tensor out = cache.run(std::vector<eval::Argument>{local}).at(0);
    if (comm.checks() - before != checks) {
      failures.push_back(std::string(what) + ": " + std::to_string(comm.checks() - before) +
                         " checks, expected " + std::to_string(checks));
    }
    // Every rank's shard is filled with its rank + 1: each column sums (r + 1) over the rows.
    const double want = double(local.size(0)) * double(n * (n + 1) / 2);
    for (int64_t j = 0; j < 3; ++j) {
      if (out.dataAs<float>()[j] != float(want)) {
        failures.push_back(std::string(what) + ": element " + std::to_string(j) + " is " +
                           std::to_string(out.dataAs<float>()[j]) + ", expected " +
                           std::to_string(want));
      }
    }
  };
  auto shardOf = [&](int64_t rows) {
    Tensor t = Tensor::empty({rows, 3}, DataType::Float32);
    t.fill(double(comm.rank() + 1));
    return t;
  };
  expectRun(shardOf(2), 1, "first run");
  expectRun(shardOf(2), 0, "cached run");
  // The same sizes at an address of another alignment: a new key for the cache, not for the
  // ranks.
  Tensor wider = Tensor::empty({2 * 3 + 1}, DataType::Float32);
  wider.fill(double(comm.rank() + 1));
  Tensor offset(wider.storage(), DataType::Float32, {2, 3}, {3, 1}, 1);
  expectRun(offset, 0, "run at another alignment");
  expectRun(shardOf(4), 1, "run with new sizes");
  expectRun(shardOf(4), 0, "cached run with the new sizes");
  EXPECT_EQ(cache.misses(), 3);
  expectOnEveryRank(failures);
}

}  // namespace
}  // namespace loom::multidevice
