// SPDX-License-Identifier: Apache-2.0
// Device runtime: reduction operators, thread geometry and the warp-level reduction.
//
// warpReduce is a shuffle tree towards lane 0 of each segment followed by a broadcast from lane 0,
// rather than an xor butterfly: every lane then holds the bit-identical result even for operators
// that are not bit-commutative (Welford), and a partial last warp (a block whose thread count is
// not a multiple of 32) is handled by skipping lanes that do not exist.
#ifndef LOOM_RUNTIME_WARP_CUH
#define LOOM_RUNTIME_WARP_CUH

namespace loom {

// ---- Reduction operators (any functor `T operator()(T, T) const` works as well) -------------
struct Sum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct Prod {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
};
/// NaN-propagating, as torch.amax.
struct Max {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return loom_max(a, b); }
};
/// NaN-propagating, as torch.amin.
struct Min {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return loom_min(a, b); }
};

// ---- Launch geometry ----------------------------------------------------------------------------
// Codegen defines LOOM_BLOCK_DIM_X .. LOOM_GRID_DIM_Z in front of the runtime for every launch
// dimension the kernel fixes (a constant extent, or 1 where no loop is parallelized on it). The
// runtime reads the geometry only through these functions, so the shape tests of blockReduce and
// friends fold at compile time and NVRTC never optimizes the paths a launch cannot take.
#ifdef LOOM_BLOCK_DIM_X
__device__ __forceinline__ unsigned blockDimX() { return LOOM_BLOCK_DIM_X; }
#else
__device__ __forceinline__ unsigned blockDimX() { return blockDim.x; }
#endif
#ifdef LOOM_BLOCK_DIM_Y
__device__ __forceinline__ unsigned blockDimY() { return LOOM_BLOCK_DIM_Y; }
#else
__device__ __forceinline__ unsigned blockDimY() { return blockDim.y; }
#endif
#ifdef LOOM_BLOCK_DIM_Z
__device__ __forceinline__ unsigned blockDimZ() { return LOOM_BLOCK_DIM_Z; }
#else
__device__ __forceinline__ unsigned blockDimZ() { return blockDim.z; }
#endif
#ifdef LOOM_GRID_DIM_X
__device__ __forceinline__ unsigned gridDimX() { return LOOM_GRID_DIM_X; }
#else
__device__ __forceinline__ unsigned gridDimX() { return gridDim.x; }
#endif
#ifdef LOOM_GRID_DIM_Y
__device__ __forceinline__ unsigned gridDimY() { return LOOM_GRID_DIM_Y; }
#else
__device__ __forceinline__ unsigned gridDimY() { return gridDim.y; }
#endif
#ifdef LOOM_GRID_DIM_Z
__device__ __forceinline__ unsigned gridDimZ() { return LOOM_GRID_DIM_Z; }
#else
__device__ __forceinline__ unsigned gridDimZ() { return gridDim.z; }
#endif

// ---- Thread geometry ----------------------------------------------------------------------------
/// Threads in the block.
__device__ __forceinline__ unsigned blockThreadCount() {
  return blockDimX() * blockDimY() * blockDimZ();
}
/// CUDA's linear thread index (x fastest), which also decides warp membership. With a 1-D block
/// (LOOM_BLOCK_DIM_Y and _Z are 1) this is threadIdx.x.
__device__ __forceinline__ unsigned linearThreadIdx() {
  const unsigned y = blockDimY() == 1u ? 0u : threadIdx.y;
  const unsigned z = blockDimZ() == 1u ? 0u : threadIdx.z;
  return threadIdx.x + blockDimX() * (y + blockDimY() * z);
}
/// How many lanes of the calling thread's warp exist: 32, except in a block's partial last warp.
__device__ __forceinline__ unsigned warpLiveLanes() {
  const unsigned warpBase = linearThreadIdx() & ~31u;
  const unsigned left = blockThreadCount() - warpBase;
  return left < 32u ? left : 32u;
}
/// The shuffle mask naming exactly the existing lanes of the calling thread's warp.
__device__ __forceinline__ unsigned warpLiveMask() {
  const unsigned live = warpLiveLanes();
  return live == 32u ? 0xffffffffu : ((1u << live) - 1u);
}

// ---- Shuffles of any value (overloads for composite types live next to those types) ------------
template <typename T>
__device__ __forceinline__ T shuffleDown(unsigned mask, T v, unsigned delta, int width) {
  return __shfl_down_sync(mask, v, delta, width);
}
template <typename T>
__device__ __forceinline__ T shuffleIdx(unsigned mask, T v, int srcLane, int width) {
  return __shfl_sync(mask, v, srcLane, width);
}

/// Reduces `value` over each aligned segment of `width` lanes (a power of two, at most 32; the
/// default is the whole warp) and returns the result in every lane of the segment. All existing
/// lanes of the warp must call it together (it is a warp collective); lanes past the end of a
/// partial last warp are left out, so a warp of 20 threads reduces 20 values. The combination
/// order is fixed (a tree towards the segment's lane 0), so results are deterministic.
template <typename T, typename Op>
__device__ __forceinline__ T warpReduce(T value, Op op, unsigned width = kWarpSize) {
  const unsigned mask = warpLiveMask();
  const unsigned lane = linearThreadIdx() & 31u;
  const unsigned segLane = lane & (width - 1u);
  const unsigned segBase = lane - segLane;
  const unsigned segLeft = warpLiveLanes() - segBase;
  const unsigned segLive = segLeft < width ? segLeft : width;
  for (unsigned offset = width / 2; offset > 0; offset /= 2) {
    const T other = shuffleDown(mask, value, offset, static_cast<int>(width));
    if (segLane + offset < segLive) value = op(value, other);
  }
  return shuffleIdx(mask, value, 0, static_cast<int>(width));
}

}  // namespace loom

#endif  // LOOM_RUNTIME_WARP_CUH
