// SPDX-License-Identifier: Apache-2.0
// Grid helpers of the device runtime (gridReduce, gridWelford, gridSync) on the host backend.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "codegen/runtime_test_util.h"

namespace loom::codegen {
namespace {

using testing::hostModule;

/// Host mirror of loom::Welford<float> (avg, m2, n).
struct WelfordF {
  float avg;
  float m2;
  long long n;
};
static_assert(sizeof(WelfordF) == 16);

struct GridRun {
  std::vector<float> out;
  std::vector<unsigned> semaphores;
};

/// One launch of grid_reduce_test over `segments` rows of `count` values, on blocks.x blocks of
/// 64 threads; semaphores persist across launches in `sem`.
GridRun runGrid(int mode, unsigned blocks, unsigned segments, const std::vector<float>& in,
                int count, bool cooperative, std::vector<unsigned>& sem) {
  const unsigned threads = 64;
  std::vector<WelfordF> work(size_t{blocks} * segments * threads);  // large enough for both modes
  GridRun r;
  r.out.assign(3 * segments, -1.0f);
  float* o = r.out.data();
  const float* p = in.data();
  void* w = work.data();
  unsigned* s = sem.data();
  void* args[] = {&o, &p, &count, &w, &s, &mode};
  backend::HostLaunchOptions opts;
  opts.cooperative = cooperative;
  hostModule(testing::kGridKernel).launch({blocks, segments}, {threads}, threads * 16, args, opts);
  r.semaphores = sem;
  return r;
}

// gridReduce sums each segment (blockIdx.y) over all blocks of blockIdx.x, in the last-block
// form that never waits: the same result with blocks run one after another and interleaved
// (cooperative), and the semaphores are back to zero after each launch, ready for reuse.
TEST(GridReduce, LastBlockSumsAllPartialsAndResetsSemaphores) {
  const int count = 1000;
  const unsigned segments = 3;
  std::vector<float> in(segments * count);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(static_cast<int>(i % 13) - 6);
  std::vector<unsigned> sem(segments, 0);
  for (bool cooperative : {false, true, false}) {
    for (unsigned blocks : {1u, 5u}) {
      GridRun r = runGrid(0, blocks, segments, in, count, cooperative, sem);
      for (unsigned s = 0; s < segments; ++s) {
        float expect = 0;
        for (int i = 0; i < count; ++i) expect += in[s * count + i];
        EXPECT_EQ(r.out[s], expect) << "segment " << s << ", " << blocks << " blocks, cooperative "
                                    << cooperative;
      }
      EXPECT_EQ(r.semaphores, std::vector<unsigned>(segments, 0u));
    }
  }
}

// gridWelford combines the blocks' Welford states: mean and M2 match a double two-pass
// computation on offset data.
TEST(GridReduce, GridWelfordMatchesDoublePrecision) {
  const int count = 3000;
  const unsigned segments = 2;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
  std::vector<float> in(segments * count);
  for (float& v : in) v = 1e4f + noise(rng);
  std::vector<unsigned> sem(segments, 0);
  GridRun r = runGrid(1, 7, segments, in, count, /*cooperative=*/true, sem);
  for (unsigned s = 0; s < segments; ++s) {
    double mean = 0, ss = 0;
    for (int i = 0; i < count; ++i) mean += in[s * count + i];
    mean /= count;
    for (int i = 0; i < count; ++i) ss += std::pow(in[s * count + i] - mean, 2);
    EXPECT_NEAR(r.out[3 * s], mean, 2e-3) << "segment " << s;
    EXPECT_NEAR(r.out[3 * s + 1], ss, 1e-3 * ss) << "segment " << s;
    EXPECT_EQ(r.out[3 * s + 2], static_cast<float>(count)) << "segment " << s;
  }
  EXPECT_EQ(r.semaphores, std::vector<unsigned>(segments, 0u));
}

// gridReduce over blockIdx.y and blockIdx.z with segments on blockIdx.x, reached three times
// from one call site in a loop: every entrance of every segment gets its own exact sum (blocks run
// one after another and interleaved), and every entrance's semaphore is zero again afterwards.
TEST(GridReduce, ReducesOverYAndZPerEntrance) {
  const int count = 777;
  const unsigned segments = 3, entrances = 3, threads = 32;
  const backend::Dim3 grid{segments, 2, 3};
  std::vector<float> in(segments * count);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(static_cast<int>(i % 11) - 5);
  std::vector<unsigned> sem(entrances * segments, 0);
  for (bool cooperative : {false, true}) {
    std::vector<float> work(size_t{entrances} * segments * 6 * threads);
    std::vector<float> out(entrances * segments, -1.0f);
    float* o = out.data();
    const float* p = in.data();
    float* w = work.data();
    unsigned* s = sem.data();
    int n = count, e = int(entrances);
    void* args[] = {&o, &p, &n, &w, &s, &e};
    backend::HostLaunchOptions opts;
    opts.cooperative = cooperative;
    hostModule(testing::kGridYZKernel).launch(grid, {threads}, threads * 4, args, opts);
    for (unsigned k = 0; k < entrances; ++k) {
      for (unsigned seg = 0; seg < segments; ++seg) {
        float expect = 0;
        for (int i = 0; i < count; ++i) expect += in[seg * count + i] + float(k);
        EXPECT_EQ(out[k * segments + seg], expect)
            << "entrance " << k << ", segment " << seg << ", cooperative " << cooperative;
      }
    }
    EXPECT_EQ(sem, std::vector<unsigned>(entrances * segments, 0u));
  }
}

// gridSync is a grid-wide barrier in a cooperative launch: after it every block sees every block's
// write of the round, over three rounds with one pair of sync words, which end reset (count 0) with
// the generation bumped once per barrier.
TEST(GridSync, EveryBlockSeesAllWritesOfTheRound) {
  const unsigned blocks = 6;
  std::vector<int> data(blocks, 0), out(3 * blocks, -1);
  std::vector<unsigned> sync(2, 0);
  int *d = data.data(), *o = out.data();
  unsigned* s = sync.data();
  void* args[] = {&d, &o, &s};
  backend::HostLaunchOptions opts;
  opts.cooperative = true;
  hostModule(testing::kGridSyncKernel).launch({blocks}, {48}, 0, args, opts);
  for (int round = 0; round < 3; ++round) {
    for (unsigned b = 0; b < blocks; ++b) {
      EXPECT_EQ(out[round * blocks + b], (round + 1) * 21) << "round " << round << " block " << b;
    }
  }
  EXPECT_EQ(sync[0], 0u);
  EXPECT_EQ(sync[1], 6u);
}

}  // namespace
}  // namespace loom::codegen
