// SPDX-License-Identifier: Apache-2.0
// Test kernels that exercise every device runtime helper; run on the host backend and NVRTC-compiled.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/runtime_library.h"

namespace loom::codegen::testing {

/// One extern "C" kernel; `mode` arguments select among helper instantiations at run time, so each
/// kernel compiles once.
struct TestKernel {
  const char* name;
  const char* source;
};

// Every thread of the block writes the warp sum and max of its lane's input (width 32), and the
// sum over segments of 8 lanes.
inline constexpr TestKernel kWarpKernel = {"warp_reduce_test", R"(
extern "C" __global__ void warp_reduce_test(float* sum, float* mx, float* seg8, const float* in) {
  const unsigned tid = loom::linearThreadIdx();
  const float v = in[tid];
  sum[tid] = loom::warpReduce(v, loom::Sum{});
  mx[tid] = loom::warpReduce(v, loom::Max{});
  seg8[tid] = loom::warpReduce(v, loom::Sum{}, 8u);
}
)"};

// mode 0: sum over x (rows y independent); 1: sum over x and y; 2: sum over y only; 3: max over x;
// 4: broadcast of (0, y)'s value along x; 5: broadcast of thread (0, 0)'s value to the block.
inline constexpr TestKernel kBlockKernel = {"block_reduce_test", R"(
extern "C" __global__ void block_reduce_test(float* out, const float* in, int mode) {
  extern __shared__ __align__(16) char smemRaw[];
  float* smem = reinterpret_cast<float*>(smemRaw);
  const unsigned threads = loom::blockThreadCount();
  const unsigned tid = loom::linearThreadIdx();
  const unsigned i = blockIdx.x * threads + tid;
  const float v = in[i];
  float r = 0.0f;
  if (mode == 0) r = loom::blockReduce<true, false>(v, loom::Sum{}, 0.0f, smem);
  if (mode == 1) r = loom::blockReduce<true, true>(v, loom::Sum{}, 0.0f, smem);
  if (mode == 2) r = loom::blockReduce<false, true>(v, loom::Sum{}, 0.0f, smem);
  if (mode == 3) r = loom::blockReduce<true, false>(v, loom::Max{}, -__int_as_float(0x7f800000), smem);
  if (mode == 4) r = loom::blockBroadcast<true, false>(v, smem);
  if (mode == 5) r = loom::blockBroadcast<true, true, true>(v, smem);
  out[i] = r;
}
)"};

// Each row threadIdx.y of block b reduces in[(b * blockDim.y + y) * count ...] with Welford
// updates per thread and blockWelford over x.
inline constexpr TestKernel kWelfordKernel = {"block_welford_test", R"(
extern "C" __global__ void block_welford_test(float* avg, float* m2, long long* n,
                                              const float* in, int count) {
  extern __shared__ __align__(16) char smemRaw[];
  auto* smem = reinterpret_cast<loom::Welford<float>*>(smemRaw);
  const unsigned row = blockIdx.x * blockDim.y + threadIdx.y;
  loom::Welford<float> w = loom::welfordInit<float>();
  for (int i = threadIdx.x; i < count; i += blockDim.x) w = loom::welfordUpdate(w, in[row * count + i]);
  w = loom::blockWelford<true, false>(w, smem);
  if (threadIdx.x == blockDim.x - 1) {
    avg[row] = w.avg;
    m2[row] = w.m2;
    n[row] = w.n;
  }
}
)"};

// Segment blockIdx.y sums (mode 0) or Welford-reduces (mode 1) in[segment][0 .. count) over the
// threads (x) of all blocks (blockIdx.x): block partials first, then gridReduce/gridWelford.
inline constexpr TestKernel kGridKernel = {"grid_reduce_test", R"(
extern "C" __global__ void grid_reduce_test(float* out, const float* in, int count, void* work,
                                            unsigned* semaphores, int mode) {
  extern __shared__ __align__(16) char smemRaw[];
  const float* seg = in + (long long)blockIdx.y * count;
  const int stride = gridDim.x * blockDim.x;
  if (mode == 0) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) v += seg[i];
    v = loom::blockReduce<true, false>(v, loom::Sum{}, 0.0f, reinterpret_cast<float*>(smemRaw));
    float total = -1.0f;
    if (loom::gridReduce<true, false, false>(total, v, loom::Sum{}, 0.0f, static_cast<float*>(work), semaphores) &&
        threadIdx.x == 0) {
      out[blockIdx.y] = total;
    }
  } else {
    loom::Welford<float> w = loom::welfordInit<float>();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
      w = loom::welfordUpdate(w, seg[i]);
    }
    w = loom::blockWelford<true, false>(w, reinterpret_cast<loom::Welford<float>*>(smemRaw));
    loom::Welford<float> total = loom::welfordInit<float>();
    if (loom::gridWelford<true, false, false>(total, w, static_cast<loom::Welford<float>*>(work), semaphores) &&
        threadIdx.x == 0) {
      out[3 * blockIdx.y] = total.avg;
      out[3 * blockIdx.y + 1] = total.m2;
      out[3 * blockIdx.y + 2] = (float)total.n;
    }
  }
}
)"};

// Segment s = blockIdx.x sums in[s][0 .. count) over the threads and over blockIdx.y and
// blockIdx.z together, `entrances` times in a loop: entrance e reduces in[s][i] + e into
// out[e * gridDim.x + s]. The loop reuses one call site, so each entrance needs its own slice.
inline constexpr TestKernel kGridYZKernel = {"grid_reduce_yz_test", R"(
extern "C" __global__ void grid_reduce_yz_test(float* out, const float* in, int count,
                                               float* work, unsigned* semaphores, int entrances) {
  extern __shared__ __align__(16) char smemRaw[];
  const float* seg = in + (long long)blockIdx.x * count;
  const unsigned member = blockIdx.y + gridDim.y * blockIdx.z;
  const unsigned members = gridDim.y * gridDim.z;
  for (int e = 0; e < entrances; ++e) {
    float v = 0.0f;
    for (int i = member * blockDim.x + threadIdx.x; i < count; i += members * blockDim.x) {
      v += seg[i] + (float)e;
    }
    v = loom::blockReduce<true, false>(v, loom::Sum{}, 0.0f, reinterpret_cast<float*>(smemRaw));
    float total = -1.0f;
    if (loom::gridReduce<false, true, true>(total, v, loom::Sum{}, 0.0f, work, semaphores,
                                           (unsigned)e) &&
        threadIdx.x == 0) {
      out[e * gridDim.x + blockIdx.x] = total;
    }
  }
}
)"};

// Three rounds: every block publishes a value, gridSync, every block reads all of them.
inline constexpr TestKernel kGridSyncKernel = {"grid_sync_test", R"(
extern "C" __global__ void grid_sync_test(int* data, int* out, unsigned* sync) {
  const unsigned blocks = gridDim.x;
  for (int round = 0; round < 3; ++round) {
    if (threadIdx.x == 0) data[blockIdx.x] = (round + 1) * (blockIdx.x + 1);
    loom::gridSync(sync);
    int s = 0;
    for (unsigned b = 0; b < blocks; ++b) s += ((volatile int*)data)[b];
    if (threadIdx.x == blockDim.x - 1) out[round * blocks + blockIdx.x] = s;
    loom::gridSync(sync);
  }
}
)"};

// Conversions, vector accesses, Tensor fields and the element-wise math helpers; one block only.
inline constexpr TestKernel kElementwiseKernel = {"elementwise_test", R"(
extern "C" __global__ void elementwise_test(loom::Tensor<float, 3> t, loom::Tensor<int, 0> t0,
                                            long long* fields, const float* in, __half* h,
                                            __nv_bfloat16* b, float* back, float* vec, __half* h2,
                                            float* math,
                                            const double* din, double* dmath, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) {
    for (int d = 0; d < 3; ++d) {
      fields[d] = t.size[d];
      fields[3 + d] = t.stride[d];
    }
    fields[6] = (long long)t[t.stride[0] + 2 * t.stride[2]];
    fields[7] = t0.data[0];
  }
  if (i < n) {
    const float x = in[i];
    loom::storeFromFloat(&h[i], x);
    loom::storeFromFloat(&b[i], x);
    back[2 * i] = loom::loadAsFloat(&h[i]);
    back[2 * i + 1] = loom::toFloat(b[i]);
    const float y = in[(i + 1) % n];
    float* m = math + 16 * i;
    m[0] = loom_max(x, y);
    m[1] = loom_min(x, y);
    m[2] = loom_round(x);
    m[3] = loom_sign(x);
    m[4] = loom_sigmoid(x);
    m[5] = loom_silu(x);
    m[6] = loom_gelu(x);
    m[7] = loom_gelu_tanh(x);
    m[8] = loom_gelu_grad(x);
    m[9] = loom_fmod(x, y);
    m[10] = loom_remainder(x, y);
    m[11] = loom_where(x > y, x, y);
    m[12] = (float)loom_ceil_div(i + 5, 4);
    m[13] = (float)loom_fmod(i - 3, 2);
    m[14] = (float)loom_remainder(i - 3, 2);
    m[15] = (float)loom_max(i, 3);
    const double dx = din[i];
    double* dm = dmath + 8 * i;
    dm[0] = loom_max(dx, 0.5);
    dm[1] = loom_round(dx);
    dm[2] = loom_sigmoid(dx);
    dm[3] = loom_silu(dx);
    dm[4] = loom_gelu(dx);
    dm[5] = loom_gelu_tanh(dx);
    dm[6] = loom_fmod(dx, 0.75);
    dm[7] = loom_sign(dx);
  }
  // Vector accesses: 16-byte Arrays of 4 floats and of 8 halves (chunks of the inputs, doubled).
  // One block: the barrier makes every thread's h[] visible to the half vector loads.
  __syncthreads();
  if (i * 4 + 3 < n) {
    loom::Array<float, 4> a;
    loom::loadVector(a, in + 4 * i);
    for (int k = 0; k < 4; ++k) a[k] *= 2.0f;
    loom::storeVector(vec + 4 * i, a);
  }
  if (i * 8 + 7 < n) {
    loom::Array<__half, 8> a;
    loom::loadVector(a, h + 8 * i);
    loom::Array<__half, 8> c;
    for (int k = 0; k < 8; ++k) c[k] = loom::fromFloat<__half>(loom::toFloat(a[k]) * 2.0f);
    loom::storeVector(h2 + 8 * i, c);
  }
}
)"};

// loom::misalignment of the addresses of 32 floats and 32 bf16 from `f` and `b` (out[0..31],
// out[32..63]); mode 1 then loads a 16-byte vector at f + 1 and mode 2 stores one there: an
// address the vector's size does not divide (a GPU faults; the host emulation traps).
inline constexpr TestKernel kAlignmentKernel = {"alignment_test", R"(
extern "C" __global__ void alignment_test(int* out, float* f, const __nv_bfloat16* b, int mode) {
  const int i = threadIdx.x;
  out[i] = loom::misalignment<4>(f + i);
  out[32 + i] = loom::misalignment<8>(b + i);
  if (i == 0 && mode == 1) {
    loom::Array<float, 4> a;
    loom::loadVector(a, f + 1);
    out[64] = (int)a[0];
  }
  if (i == 0 && mode == 2) {
    loom::Array<float, 4> a;
    a.fill(1.0f);
    loom::storeVector(f + 1, a);
  }
}
)"};

// One warp: b (16 x 16, row-major [k][n], bf16 bits) into shared rows padded to 24 values, its B
// fragments by ldmatrixX4Trans (registers out to `regs`, 4 a lane), a's A fragment built in PTX's
// layout, and A B as two mmaM16N8K16 tiles (columns 0-7 and 8-15) out to d (16 x 16, f32).
inline constexpr TestKernel kMmaKernel = {"mma_test", R"(
extern "C" __global__ void mma_test(unsigned* regs, float* d, const unsigned short* a,
                                    const unsigned short* b) {
  extern __shared__ __align__(16) char smemRaw[];
  unsigned short* tile = reinterpret_cast<unsigned short*>(smemRaw);
  const int lane = (int)threadIdx.x, g = lane / 4, t = lane % 4;
  for (int i = lane; i < 256; i += 32) tile[(i / 16) * 24 + i % 16] = b[i];
  __syncthreads();
  unsigned r[4];
  loom::ldmatrixX4Trans(r, tile + (8 * ((lane / 8) % 2) + lane % 8) * 24 + 8 * (lane / 16));
  unsigned af[4];
  for (int i = 0; i < 4; ++i) {
    regs[lane * 4 + i] = r[i];
    const int row = g + (i % 2) * 8, k = 2 * t + (i / 2) * 8;
    af[i] = loom::packHalves(a[row * 16 + k], a[row * 16 + k + 1]);
  }
  float d0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const unsigned lo[2] = {r[0], r[1]}, hi[2] = {r[2], r[3]};
  loom::mmaM16N8K16<__nv_bfloat16>(d0, af, lo);
  loom::mmaM16N8K16<__nv_bfloat16>(d1, af, hi);
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i / 2) * 8, col = 2 * t + (i % 2);
    d[row * 16 + col] = d0[i];
    d[row * 16 + 8 + col] = d1[i];
  }
}
)"};

inline const std::vector<TestKernel>& allTestKernels() {
  static const std::vector<TestKernel> kAll = {
      kWarpKernel,     kBlockKernel,    kWelfordKernel,     kGridKernel,
      kGridYZKernel,   kGridSyncKernel, kElementwiseKernel, kAlignmentKernel,
      kMmaKernel};
  return kAll;
}

/// The runtime library followed by one kernel: what codegen's output looks like.
inline std::string withRuntime(const TestKernel& k) {
  return std::string(runtimeLibrarySource()) + k.source;
}

}  // namespace loom::codegen::testing
