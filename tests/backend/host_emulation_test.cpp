// SPDX-License-Identifier: Apache-2.0
// Execution tests of the host backend: CUDA kernel text run on fibers gives CUDA's results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "backend/host/fiber_scheduler.h"
#include "backend/host_test_util.h"
#include "loom/tensor/half.h"

namespace loom::backend {
namespace {

using testing::loadKernel;

// Each test binary runs on the stack switch it was built for: loom_backend_ucontext_tests really
// tests the fallback, loom_backend_tests what LOOM_HOST_FIBERS chose.
TEST(HostEmulation, FibersSwitchAsConfigured) {
  EXPECT_STREQ(host::fiberSwitchName(), LOOM_EXPECTED_FIBER_SWITCH);
}

// A 256-thread shared-memory tree reduction needs every __syncthreads to hold all fibers back.
TEST(HostEmulation, BlockTreeReductionWithStaticShared) {
  const char* src = R"(
extern "C" __global__ void block_sum(float* out, const float* in, int n) {
  __shared__ float buf[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}
)";
  auto m = loadKernel(src, "block_sum");
  const int n = 1000;
  std::vector<float> in(n), out(4, -1.0f);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 7);
  float* o = out.data();
  const float* p = in.data();
  int nn = n;
  void* args[] = {&o, &p, &nn};
  m->launch({4}, {256}, 0, args);
  for (int b = 0; b < 4; ++b) {
    float expect = 0;
    for (int i = b * 256; i < std::min(n, (b + 1) * 256); ++i) expect += in[i];
    EXPECT_EQ(out[b], expect) << "block " << b;
  }
}

// Dynamic shared memory (`extern __shared__`) is one buffer per block, of the launch's size, and
// the same reduction works in cooperative mode where all blocks' fibers interleave.
TEST(HostEmulation, DynamicSharedIsPerBlockEvenWhenBlocksInterleave) {
  const char* src = R"(
extern "C" __global__ void dyn_sum(int* out) {
  extern __shared__ int smem[];
  smem[threadIdx.x] = blockIdx.x + 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) s += smem[t];
    out[blockIdx.x] = s;
  }
}
)";
  auto m = loadKernel(src, "dyn_sum");
  for (bool cooperative : {false, true}) {
    std::vector<int> out(6, 0);
    int* o = out.data();
    void* args[] = {&o};
    HostLaunchOptions opts;
    opts.cooperative = cooperative;
    m->launch({6}, {64}, 64 * sizeof(int), args, opts);
    for (int b = 0; b < 6; ++b) EXPECT_EQ(out[b], 64 * (b + 1)) << "cooperative " << cooperative;
  }
}

// threadIdx/blockIdx follow CUDA's linearization (x fastest) in every dimension.
TEST(HostEmulation, ThreeDimensionalIndices) {
  const char* src = R"(
extern "C" __global__ void ids(int* out) {
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int b = blockIdx.x + gridDim.x * blockIdx.y;
  int nt = blockDim.x * blockDim.y * blockDim.z;
  out[b * nt + t] = b * 1000 + threadIdx.z * 100 + threadIdx.y * 10 + threadIdx.x;
}
)";
  auto m = loadKernel(src, "ids");
  std::vector<int> out(6 * 64, -1);
  int* o = out.data();
  void* args[] = {&o};
  m->launch({2, 3}, {8, 4, 2}, 0, args);
  for (int b = 0; b < 6; ++b)
    for (int z = 0; z < 2; ++z)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 8; ++x)
          ASSERT_EQ(out[b * 64 + x + 8 * (y + 4 * z)], b * 1000 + z * 100 + y * 10 + x);
}

// Launches on one thread reuse their fiber stacks: a small block, a larger one (a larger pool),
// the small one again (served by the larger pool), and another stack size (a new pool) all give
// each thread its own stack with its own deep locals, every time.
TEST(HostEmulation, FiberStacksAreReusedAcrossLaunches) {
  const char* src = R"(
extern "C" __global__ void deep(int* out, int salt) {
  volatile int local[512];
  for (int i = 0; i < 512; ++i) local[i] = salt + threadIdx.x + i;
  __syncthreads();
  int sum = 0;
  for (int i = 0; i < 512; ++i) sum += local[i] - i;
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
)";
  auto m = loadKernel(src, "deep");
  struct Case {
    unsigned threads;
    size_t stackBytes;
  };
  const Case cases[] = {{32, 64 * 1024}, {512, 64 * 1024}, {32, 64 * 1024}, {96, 48 * 1024}};
  int salt = 0;
  for (const Case& c : cases) {
    ++salt;
    std::vector<int> out(2 * c.threads, -1);
    int* o = out.data();
    void* args[] = {&o, &salt};
    HostLaunchOptions options;
    options.stackBytes = c.stackBytes;
    m->launch({2}, {c.threads}, 0, args, options);
    for (unsigned b = 0; b < 2; ++b) {
      for (unsigned t = 0; t < c.threads; ++t) {
        ASSERT_EQ(out[b * c.threads + t], 512 * (salt + int(t)))
            << "block " << b << " thread " << t << ", " << c.threads << " threads";
      }
    }
  }
}

// Blocks run one at a time, the last first: a kernel that reads what a lower block writes (a race
// CUDA does not order) reads unwritten data on the host as well. The order each block arrives in
// is recorded by thread 0 through an atomic counter.
TEST(HostEmulation, BlocksRunLastFirst) {
  const char* src = R"(
extern "C" __global__ void order(int* counter, int* out) {
  if (threadIdx.x == 0) out[atomicAdd(counter, 1)] = blockIdx.x;
}
)";
  auto m = loadKernel(src, "order");
  int counter = 0;
  std::vector<int> out(5, -1);
  int* c = &counter;
  int* o = out.data();
  void* args[] = {&c, &o};
  m->launch({5}, {32}, 0, args);
  EXPECT_EQ(out, (std::vector<int>{4, 3, 2, 1, 0}));
}

// Warp shuffles: an xor butterfly gives every lane the warp sum; up/down/idx follow CUDA's
// out-of-range rule (a lane whose source is outside its width segment keeps its own value).
TEST(HostEmulation, WarpShuffles) {
  const char* src = R"(
extern "C" __global__ void shuffles(int* out) {
  int lane = threadIdx.x % 32;
  int v = threadIdx.x;
  int sum = v;
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  int down = __shfl_down_sync(0xffffffffu, v, 3);
  int up = __shfl_up_sync(0xffffffffu, v, 2, 16);
  int bcast = __shfl_sync(0xffffffffu, v * 2.5f, 7) ;
  double d = __shfl_xor_sync(0xffffffffu, (double)v + 0.5, 1);
  out[threadIdx.x * 5 + 0] = sum;
  out[threadIdx.x * 5 + 1] = down;
  out[threadIdx.x * 5 + 2] = up;
  out[threadIdx.x * 5 + 3] = bcast;
  out[threadIdx.x * 5 + 4] = (int)(d * 2);
  (void)lane;
}
)";
  auto m = loadKernel(src, "shuffles");
  std::vector<int> out(64 * 5, -1);
  int* o = out.data();
  void* args[] = {&o};
  m->launch({1}, {64}, 0, args);
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, warpBase = t - lane;
    int warpSum = 0;
    for (int l = 0; l < 32; ++l) warpSum += warpBase + l;
    EXPECT_EQ(out[t * 5 + 0], warpSum) << t;
    EXPECT_EQ(out[t * 5 + 1], lane + 3 < 32 ? t + 3 : t) << t;
    EXPECT_EQ(out[t * 5 + 2], (lane % 16) >= 2 ? t - 2 : t) << t;
    EXPECT_EQ(out[t * 5 + 3], static_cast<int>((warpBase + 7) * 2.5f)) << t;
    EXPECT_EQ(out[t * 5 + 4], 2 * (t ^ 1) + 1) << t;
  }
}

// Votes: ballot collects the predicate bits of the mask's lanes, any/all reduce them, and a
// partial last warp only has its real lanes.
TEST(HostEmulation, BallotAnyAll) {
  const char* src = R"(
extern "C" __global__ void votes(unsigned* out) {
  int lane = threadIdx.x % 32;
  unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
  int any = __any_sync(0xffffffffu, threadIdx.x == 40);
  int all = __all_sync(0xffffffffu, lane < 30);
  int allTrue = __all_sync(0xffffffffu, 1);
  int c = __syncthreads_count(threadIdx.x % 2);
  out[threadIdx.x * 5 + 0] = b;
  out[threadIdx.x * 5 + 1] = any;
  out[threadIdx.x * 5 + 2] = all;
  out[threadIdx.x * 5 + 3] = allTrue;
  out[threadIdx.x * 5 + 4] = c;
}
)";
  auto m = loadKernel(src, "votes");
  const int n = 48;  // the second warp has 16 lanes
  std::vector<unsigned> out(n * 5, 7);
  unsigned* o = out.data();
  void* args[] = {&o};
  m->launch({1}, {n}, 0, args);
  for (int t = 0; t < n; ++t) {
    const bool second = t >= 32;
    const unsigned lanes = second ? 0xffffu : 0xffffffffu;
    EXPECT_EQ(out[t * 5 + 0], 0x49249249u & lanes) << t;
    EXPECT_EQ(out[t * 5 + 1], second ? 1u : 0u) << t;
    EXPECT_EQ(out[t * 5 + 2], second ? 1u : 0u) << t;
    EXPECT_EQ(out[t * 5 + 3], 1u) << t;
    EXPECT_EQ(out[t * 5 + 4], 24u) << t;
  }
}

// Atomics from every thread of many blocks are neither lost nor duplicated.
TEST(HostEmulation, AtomicsFromManyBlocks) {
  const char* src = R"(
extern "C" __global__ void count(unsigned long long* counter, int* mx, float* fsum, int* cas) {
  atomicAdd(counter, 1ull);
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicMax(mx, id);
  atomicAdd(fsum, 0.5f);
  int old;
  do { old = *cas; } while (atomicCAS(cas, old, old + 2) != old);
}
)";
  auto m = loadKernel(src, "count");
  unsigned long long counter = 0;
  int mx = -1, cas = 0;
  float fsum = 0;
  unsigned long long* pc = &counter;
  int* pm = &mx;
  float* pf = &fsum;
  int* pcas = &cas;
  void* args[] = {&pc, &pm, &pf, &pcas};
  m->launch({16}, {128}, 0, args);
  EXPECT_EQ(counter, 2048u);
  EXPECT_EQ(mx, 2047);
  EXPECT_EQ(fsum, 1024.0f);
  EXPECT_EQ(cas, 4096);
}

// A grid reduction whose blocks wait on a semaphore for all others needs concurrent blocks; with
// a cooperative launch every block sees the full sum. loom_grid_sync works there too.
TEST(HostEmulation, GridReductionWithSemaphoreInCooperativeMode) {
  const char* src = R"(
extern "C" __global__ void grid_sum(float* out, float* work, unsigned* sem, const float* in) {
  __shared__ float buf[64];
  buf[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (int s = 32; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    work[blockIdx.x] = buf[0];
    __threadfence();
    atomicAdd(sem, 1u);
    while (atomicAdd(sem, 0u) < gridDim.x) {
    }
    float total = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) total += work[b];
    out[blockIdx.x] = total;
  }
  loom_grid_sync();
  if (threadIdx.x == 1) out[gridDim.x + blockIdx.x] = out[(blockIdx.x + 1) % gridDim.x];
}
)";
  auto m = loadKernel(src, "grid_sum");
  const int blocks = 8;
  std::vector<float> in(blocks * 64), out(2 * blocks, 0), work(blocks, 0);
  std::iota(in.begin(), in.end(), 0.0f);
  unsigned sem = 0;
  float* o = out.data();
  float* w = work.data();
  unsigned* s = &sem;
  const float* p = in.data();
  void* args[] = {&o, &w, &s, &p};
  HostLaunchOptions opts;
  opts.cooperative = true;
  m->launch({blocks}, {64}, 0, args, opts);
  const float total = std::accumulate(in.begin(), in.end(), 0.0f);
  for (int b = 0; b < 2 * blocks; ++b) EXPECT_EQ(out[b], total) << b;
}

// float -> half/bfloat16 in kernel text rounds to nearest even exactly like loom::Half, including
// ties, subnormals, overflow, infinities and NaN; the way back is exact.
TEST(HostEmulation, HalfAndBFloat16Conversions) {
  const char* src = R"(
extern "C" __global__ void convert(unsigned short* h, unsigned short* b, float* back, const float* in, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  __half x = __float2half(in[i]);
  __nv_bfloat16 y = __float2bfloat16(in[i]);
  h[i] = __half_as_ushort(x);
  b[i] = __bfloat16_as_ushort(y);
  back[2 * i] = __half2float(x);
  back[2 * i + 1] = __bfloat162float(y);
}
)";
  auto m = loadKernel(src, "convert");
  std::vector<float> in = {0.0f,
                           -0.0f,
                           1.0f,
                           1.0f + 1.0f / 2048,
                           1.0f + 3.0f / 2048,
                           65504.0f,
                           65520.0f,
                           65519.0f,
                           1e-8f,
                           3e-8f,
                           6.0e-5f,
                           -2.5e-6f,
                           1.0f / 3,
                           1.00390625f,
                           1.01171875f,
                           3.0e38f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  const int n = static_cast<int>(in.size());
  std::vector<unsigned short> h(n), b(n);
  std::vector<float> back(2 * n);
  unsigned short* ph = h.data();
  unsigned short* pb = b.data();
  float* pback = back.data();
  const float* pin = in.data();
  int nn = n;
  void* args[] = {&ph, &pb, &pback, &pin, &nn};
  m->launch({1}, {32}, 0, args);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(h[i], floatToHalfBits(in[i])) << "half of " << in[i];
    EXPECT_EQ(b[i], floatToBFloat16Bits(in[i])) << "bfloat16 of " << in[i];
    const float hf = halfBitsToFloat(h[i]), bf = bfloat16BitsToFloat(b[i]);
    if (std::isnan(in[i])) {
      EXPECT_TRUE(std::isnan(back[2 * i]) && std::isnan(back[2 * i + 1]));
    } else {
      EXPECT_EQ(std::memcmp(&back[2 * i], &hf, 4), 0) << in[i];
      EXPECT_EQ(std::memcmp(&back[2 * i + 1], &bf, 4), 0) << in[i];
    }
  }
}

// Math functions of the CUDA device library compile and compute the libm results.
TEST(HostEmulation, MathFunctions) {
  const char* src = R"(
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }
extern "C" __global__ void math(float* out, double* dout, const float* __restrict__ in) {
  float x = in[threadIdx.x];
  out[threadIdx.x * 6 + 0] = __expf(x) + exp2f(x);
  out[threadIdx.x * 6 + 1] = rsqrtf(x + 2.0f);
  out[threadIdx.x * 6 + 2] = tanhf(x);
  out[threadIdx.x * 6 + 3] = gelu(x);
  out[threadIdx.x * 6 + 4] = fmaxf(x, 0.25f) + fminf(x, 0.25f) + max(1, 2);
  out[threadIdx.x * 6 + 5] = logf(x + 2.0f);
  dout[threadIdx.x] = exp((double)x) + rsqrt((double)x + 2.0);
}
)";
  auto m = loadKernel(src, "math");
  std::vector<float> in = {-1.5f, 0.0f, 0.3f, 1.7f}, out(24);
  std::vector<double> dout(4);
  float* o = out.data();
  double* d = dout.data();
  const float* p = in.data();
  void* args[] = {&o, &d, &p};
  m->launch({1}, {4}, 0, args);
  for (int t = 0; t < 4; ++t) {
    const float x = in[t];
    EXPECT_FLOAT_EQ(out[t * 6 + 0], std::exp(x) + std::exp2(x));
    EXPECT_FLOAT_EQ(out[t * 6 + 1], 1.0f / std::sqrt(x + 2.0f));
    EXPECT_FLOAT_EQ(out[t * 6 + 2], std::tanh(x));
    EXPECT_FLOAT_EQ(out[t * 6 + 3], 0.5f * x * (1.0f + std::erf(x * 0.70710678f)));
    EXPECT_FLOAT_EQ(out[t * 6 + 4], std::max(x, 0.25f) + std::min(x, 0.25f) + 2.0f);
    EXPECT_FLOAT_EQ(out[t * 6 + 5], std::log(x + 2.0f));
    EXPECT_DOUBLE_EQ(dout[t], std::exp(double{x}) + 1.0 / std::sqrt(double{x} + 2.0));
  }
}

}  // namespace
}  // namespace loom::backend
