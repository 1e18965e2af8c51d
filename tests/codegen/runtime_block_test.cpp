// SPDX-License-Identifier: Apache-2.0
// Warp and block helpers of the device runtime (reduce, broadcast, Welford, the tensor-core
// emulations) on the host backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codegen/runtime_test_util.h"

namespace loom::codegen {
namespace {

using backend::Dim3;
using testing::hostModule;

/// Small integers as floats, so that sums are exact in any order and mismatches are real.
std::vector<float> smallInts(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 37) % 11) - 5);
  return v;
}

// The library is the runtime files in dependency order, without headers or static shared memory.
TEST(RuntimeLibrary, FilesInDependencyOrderFollowTheRules) {
  std::vector<std::string> names;
  for (const auto& f : runtimeLibraryFiles()) names.emplace_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"types.cuh", "math.cuh", "complex.cuh", "random.cuh",
                                             "index.cuh", "sort.cuh", "welford.cuh", "warp.cuh",
                                             "block.cuh", "grid.cuh", "scatter.cuh",
                                             "attention_params.cuh", "attention.cuh", "mma.cuh",
                                             "attention_mma.cuh", "attention_bwd_mma.cuh"}));
  const std::string_view src = runtimeLibrarySource();
  for (const auto& f : runtimeLibraryFiles()) {
    EXPECT_NE(src.find(f.text), std::string_view::npos) << f.name;
  }
  EXPECT_EQ(src.find("__shared__"), std::string_view::npos);
  EXPECT_EQ(src.find("#include"), std::string_view::npos);
}

// warpReduce gives every lane its warp's sum/max (or its 8-lane segment's sum), also in a partial
// last warp whose missing lanes must not contribute.
TEST(WarpReduce, SumAndMaxOverFullAndPartialWarps) {
  const auto& m = hostModule(testing::kWarpKernel);
  for (unsigned threads : {32u, 45u, 20u}) {
    std::vector<float> in = smallInts(threads), sum(threads, -99), mx(threads, -99),
                       seg(threads, -99);
    in[threads - 1] = 50.0f;  // the largest value sits in the last existing lane
    float *s = sum.data(), *x = mx.data(), *g = seg.data();
    const float* p = in.data();
    void* args[] = {&s, &x, &g, &p};
    m.launch({1}, {threads}, 0, args);
    for (unsigned t = 0; t < threads; ++t) {
      const unsigned w0 = t / 32 * 32, w1 = std::min(threads, w0 + 32);
      const unsigned s0 = t / 8 * 8, s1 = std::min(threads, s0 + 8);
      float es = 0, em = -1e30f, eg = 0;
      for (unsigned k = w0; k < w1; ++k) es += in[k], em = std::max(em, in[k]);
      for (unsigned k = s0; k < s1; ++k) eg += in[k];
      EXPECT_EQ(sum[t], es) << threads << " threads, lane " << t;
      EXPECT_EQ(mx[t], em) << threads << " threads, lane " << t;
      EXPECT_EQ(seg[t], eg) << threads << " threads, lane " << t;
    }
  }
}

/// Runs block_reduce_test on 2 blocks of `block` and returns out.
std::vector<float> runBlockKernel(Dim3 block, int mode, const std::vector<float>& in) {
  const unsigned threads = static_cast<unsigned>(block.volume());
  std::vector<float> out(2 * threads, -99.0f);
  float* o = out.data();
  const float* p = in.data();
  void* args[] = {&o, &p, &mode};
  hostModule(testing::kBlockKernel).launch({2}, block, threads * sizeof(float), args);
  return out;
}

/// Host reference: thread (x,y,z) of each block gets op over the threads that share its
/// coordinates in the dimensions that are not reduced.
template <typename Op>
std::vector<float> reference(Dim3 block, bool rx, bool ry, const std::vector<float>& in, Op op,
                             float init) {
  const unsigned threads = static_cast<unsigned>(block.volume());
  std::vector<float> out(2 * threads);
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned t = 0; t < threads; ++t) {
      const unsigned x = t % block.x, y = t / block.x % block.y, z = t / (block.x * block.y);
      float acc = init;
      for (unsigned u = 0; u < threads; ++u) {
        const unsigned ux = u % block.x, uy = u / block.x % block.y, uz = u / (block.x * block.y);
        if ((rx || ux == x) && (ry || uy == y) && uz == z) acc = op(acc, in[b * threads + u]);
      }
      out[b * threads + t] = acc;
    }
  }
  return out;
}

float add(float a, float b) { return a + b; }
float maxf(float a, float b) { return std::max(a, b); }

// blockReduce over x is correct for block sizes that are 1, a warp, not a multiple of 32, and
// several warps: every thread of the block gets the block's sum.
TEST(BlockReduce, SumOverXForOddAndWarpMultipleSizes) {
  for (unsigned bx : {1u, 32u, 100u, 256u}) {
    const Dim3 block(bx);
    const auto in = smallInts(2 * bx);
    EXPECT_EQ(runBlockKernel(block, 0, in), reference(block, true, false, in, add, 0.0f))
        << "blockDim.x " << bx;
  }
}

// In a 2-D block, reducing along x leaves the rows (y) independent, on both the warp-shuffle
// paths (16x3, 32x4, 64x2) and the shared-memory path (100x3); x+y and y-only reductions as well.
TEST(BlockReduce, TwoDimensionalBlocksReduceAlongChosenDims) {
  for (Dim3 block : {Dim3(16, 3), Dim3(32, 4), Dim3(64, 2), Dim3(100, 3), Dim3(5, 7)}) {
    const auto in = smallInts(2 * block.volume());
    const std::string where = std::to_string(block.x) + "x" + std::to_string(block.y);
    EXPECT_EQ(runBlockKernel(block, 0, in), reference(block, true, false, in, add, 0.0f))
        << "x only, " << where;
    EXPECT_EQ(runBlockKernel(block, 1, in), reference(block, true, true, in, add, 0.0f))
        << "x and y, " << where;
    EXPECT_EQ(runBlockKernel(block, 2, in), reference(block, false, true, in, add, 0.0f))
        << "y only, " << where;
    EXPECT_EQ(runBlockKernel(block, 3, in), reference(block, true, false, in, maxf, -1e30f))
        << "max over x, " << where;
  }
}

// With the block shape fixed at compile time (codegen's LOOM_BLOCK_DIM_* defines), every path of
// blockReduce and blockBroadcast gives the same results as with the shape read at run time: the
// warp-shuffle paths (32x4, 8x16), the shared-memory path (100x3) and a 1-D block (256).
TEST(BlockReduce, CompileTimeBlockShapeMatchesRunTimeShape) {
  for (Dim3 block : {Dim3(32, 4), Dim3(8, 16), Dim3(100, 3), Dim3(256)}) {
    const std::string shape = std::to_string(block.x) + "x" + std::to_string(block.y);
    backend::HostCompileOptions o;
    o.cacheDir = testing::testCacheDir() / "host";
    auto m = backend::HostModule::load("#define LOOM_BLOCK_DIM_X " + std::to_string(block.x) +
                                           "u\n#define LOOM_BLOCK_DIM_Y " +
                                           std::to_string(block.y) +
                                           "u\n#define LOOM_BLOCK_DIM_Z 1u\n" +
                                           testing::withRuntime(testing::kBlockKernel),
                                       testing::kBlockKernel.name, o);
    const unsigned threads = static_cast<unsigned>(block.volume());
    const auto in = smallInts(2 * threads);
    for (int mode = 0; mode < 6; ++mode) {
      std::vector<float> fixed(2 * threads, -99.0f);
      float* out = fixed.data();
      const float* p = in.data();
      void* args[] = {&out, &p, &mode};
      m->launch({2}, block, threads * sizeof(float), args);
      EXPECT_EQ(fixed, runBlockKernel(block, mode, in)) << "mode " << mode << ", " << shape;
    }
  }
}

// A max reduction propagates NaN like torch.amax, whichever thread holds it.
TEST(BlockReduce, MaxPropagatesNaN) {
  const Dim3 block(100);
  auto in = smallInts(200);
  in[57] = std::nanf("");
  const auto out = runBlockKernel(block, 3, in);
  for (unsigned t = 0; t < 100; ++t) EXPECT_TRUE(std::isnan(out[t])) << t;
  for (unsigned t = 100; t < 200; ++t) EXPECT_EQ(out[t], 5.0f) << t;
}

// blockBroadcast sends the first member's value along the broadcast dims: (0, y) along x, and
// thread (0,0,0) to the whole block.
TEST(BlockBroadcast, FirstMemberValueReachesEveryThread) {
  const Dim3 block(33, 3);
  std::vector<float> in(2 * 99);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  const auto rows = runBlockKernel(block, 4, in);
  const auto all = runBlockKernel(block, 5, in);
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned t = 0; t < 99; ++t) {
      EXPECT_EQ(rows[b * 99 + t], in[b * 99 + t / 33 * 33]) << "block " << b << " thread " << t;
      EXPECT_EQ(all[b * 99 + t], in[b * 99]) << "block " << b << " thread " << t;
    }
  }
}

// blockWelford (per-thread updates, then Chan's combine across x) matches a double-precision
// two-pass computation on data with a large offset (1e4 + noise), where a float sum of squares
// would lose every digit of the variance.
TEST(BlockWelford, MatchesDoublePrecisionOnOffsetData) {
  const int count = 1000;
  for (Dim3 block : {Dim3(96, 2), Dim3(100, 2), Dim3(8, 2)}) {
    const unsigned rows = 2 * block.y;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
    std::vector<float> in(rows * count);
    for (float& v : in) v = 1e4f + noise(rng);
    std::vector<float> avg(rows, -1), m2(rows, -1);
    std::vector<long long> n(rows, -1);
    float *a = avg.data(), *q = m2.data();
    long long* c = n.data();
    const float* p = in.data();
    int cnt = count;
    void* args[] = {&a, &q, &c, &p, &cnt};
    hostModule(testing::kWelfordKernel)
        .launch({2}, block, block.volume() * 16, args);  // sizeof(Welford<float>) == 16
    for (unsigned r = 0; r < rows; ++r) {
      double mean = 0, ss = 0;
      for (int i = 0; i < count; ++i) mean += in[r * count + i];
      mean /= count;
      for (int i = 0; i < count; ++i) ss += std::pow(in[r * count + i] - mean, 2);
      EXPECT_EQ(n[r], count);
      EXPECT_NEAR(avg[r], mean, 2e-3) << "row " << r << " block.x " << block.x;
      EXPECT_NEAR(m2[r], ss, 1e-3 * ss) << "row " << r << " block.x " << block.x;
    }
  }
}

// The tensor-core emulations of mma.cuh, lane by lane against PTX's documented layouts: register i
// of lane 4g + t from ldmatrixX4Trans holds column g of rows 2t and 2t + 1 of 8 x 8 matrix i
// (lane 8i + r addressed its row r), and mmaM16N8K16 with those as B and an A fragment built in
// PTX's layout computes A B (small integers: exact in any order).
TEST(MmaEmulation, LdmatrixTransGivesMmaItsBFragments) {
  auto bits = [](int v) {
    const float f = float(v);
    uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    return uint16_t(u >> 16);  // bf16 of a small integer: exact
  };
  std::vector<int> av(256), bv(256);
  std::vector<uint16_t> a(256), b(256);
  for (int i = 0; i < 256; ++i) {
    av[i] = (i * 7) % 9 - 4;
    bv[i] = (i * 5 + 3) % 11 - 5;
    a[i] = bits(av[i]);
    b[i] = bits(bv[i]);
  }
  std::vector<uint32_t> regs(128, 0xdeadbeefu);
  std::vector<float> d(256, std::nanf(""));
  uint32_t* r = regs.data();
  float* dp = d.data();
  const uint16_t *ap = a.data(), *bp = b.data();
  void* args[] = {&r, &dp, &ap, &bp};
  hostModule(testing::kMmaKernel).launch({1}, {32}, 16 * 24 * sizeof(uint16_t), args);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int k0 = (i % 2) * 8, n0 = (i / 2) * 8;  // matrix i: rows k0.., columns n0..
      const uint32_t want = uint32_t(b[(k0 + 2 * t) * 16 + n0 + g]) |
                            uint32_t(b[(k0 + 2 * t + 1) * 16 + n0 + g]) << 16;
      EXPECT_EQ(regs[lane * 4 + i], want) << "lane " << lane << " register " << i;
    }
  }
  for (int row = 0; row < 16; ++row) {
    for (int col = 0; col < 16; ++col) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += av[row * 16 + k] * bv[k * 16 + col];
      EXPECT_EQ(d[row * 16 + col], float(sum)) << row << ", " << col;
    }
  }
}

}  // namespace
}  // namespace loom::codegen
