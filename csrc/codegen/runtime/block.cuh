// SPDX-License-Identifier: Apache-2.0
// Device runtime: block-wide reductions, Welford reductions and broadcasts over TIDx/TIDy/TIDz.
//
// The template flags kX, kY, kZ name the thread dimensions that are reduced (or broadcast along).
// The other dimensions index independent groups: blockReduce<true, false>(...) in a 2-D block
// reduces each row threadIdx.y separately. Every result is valid in all threads of its group
// (an all-reduce), so codegen needs no extra broadcast, and it is bit-identical in all of them.
//
// Shared memory: `smem` points at dynamic shared memory with room for blockDim.x * blockDim.y *
// blockDim.z elements of T (fewer are used on the fast paths). Every thread of the block must call
// the function (it contains __syncthreads on most paths); threads with nothing to contribute pass
// the operator's identity. The function ends with a barrier whenever it used `smem`, so the same
// buffer can be reused by the next call right away.
#ifndef LOOM_RUNTIME_BLOCK_CUH
#define LOOM_RUNTIME_BLOCK_CUH

namespace loom {

/// Where the calling thread sits relative to the reduced dimensions kX/kY/kZ: `member` is its index
/// among the `size` threads of its group (x fastest), `group` the index of its group.
template <bool kX, bool kY, bool kZ>
struct ThreadGroup {
  unsigned member = 0;
  unsigned size = 1;
  unsigned group = 0;

  /// True when each group is a contiguous range of linear thread indices (the reduced dimensions
  /// are a prefix of x, y, z), so that warps can reduce inside a group with shuffles.
  static constexpr bool kContiguous = (kX || !kY) && ((kX && kY) || !kZ);

  __device__ __forceinline__ ThreadGroup() {
    unsigned groupStride = 1;
    add(kX, threadIdx.x, blockDimX(), groupStride);
    add(kY, blockDimY() == 1u ? 0u : threadIdx.y, blockDimY(), groupStride);
    add(kZ, blockDimZ() == 1u ? 0u : threadIdx.z, blockDimZ(), groupStride);
  }

  /// This thread's slot in a buffer of one element per thread, grouped: group * size + member.
  __device__ __forceinline__ unsigned slot() const { return group * size + member; }

 private:
  __device__ __forceinline__ void add(bool reduced, unsigned idx, unsigned dim,
                                      unsigned& groupStride) {
    if (reduced) {
      member += idx * size;
      size *= dim;
    } else {
      group += idx * groupStride;
      groupStride *= dim;
    }
  }
};

/// Reduces `value` with `op` over the thread dimensions kX, kY, kZ; `init` must be op's identity
/// (it seeds the final fold). Returns the group's result in every thread of the group.
///
/// Paths, chosen from the block shape (uniform over the block, so all threads take the same one):
///  - group of at most 32 threads that divides 32 and is contiguous: one warpReduce over segments
///    of the group size, no shared memory and no barrier;
///  - contiguous group of a multiple of 32 threads: warpReduce, one partial per warp in smem, each
///    thread folds its group's partials (2 barriers);
///  - a reduction over y only with blockDim.x dividing 32 and whole warps (outer reductions):
///    shuffles fold the y members inside each warp, one partial per (warp, x) in smem, each thread
///    folds its group's partials (2 barriers);
///  - anything else (e.g. blockDim.x = 100, or over y with blockDim.x = 48): all values in smem, the
///    first 32 members fold the strided rest, then every thread folds those 32 (2-4 barriers).
template <bool kX, bool kY, bool kZ = false, typename T, typename Op>
__device__ T blockReduce(T value, Op op, T init, T* smem) {
  const ThreadGroup<kX, kY, kZ> g;
  if (ThreadGroup<kX, kY, kZ>::kContiguous && g.size <= 32u && 32u % g.size == 0u) {
    return warpReduce(value, op, g.size);
  }
  if (ThreadGroup<kX, kY, kZ>::kContiguous && g.size % 32u == 0u) {
    const T warpResult = warpReduce(value, op);
    const unsigned tid = linearThreadIdx();
    if ((tid & 31u) == 0u) smem[tid / 32u] = warpResult;
    __syncthreads();
    const unsigned warps = g.size / 32u;
    const T* partials = smem + g.group * warps;
    T result = init;
    for (unsigned w = 0; w < warps; ++w) result = op(result, partials[w]);
    __syncthreads();
    return result;
  }
  if (!kX && kY && !kZ && 32u % blockDimX() == 0u && (blockDimX() * blockDimY()) % 32u == 0u) {
    // A reduction over y of narrow rows (outer reductions: blockDim.x vector columns): each warp
    // holds 32 / blockDim.x members of every group, strided by blockDim.x, so shuffles fold them
    // (a tree towards lanes 0..blockDim.x-1); one partial per (warp, x) goes to smem and every
    // thread folds its group's partials. One barrier pair, no bank conflicts.
    const unsigned bdx = blockDimX();
    const unsigned mask = warpLiveMask();
    const unsigned lane = linearThreadIdx() & 31u;
    for (unsigned offset = 16u; offset >= bdx; offset /= 2u) {
      const T other = shuffleDown(mask, value, offset, 32);
      if ((lane & (2u * offset - 1u)) < offset) value = op(value, other);
    }
    const unsigned tid = linearThreadIdx();
    const unsigned warp = tid / 32u;
    if (lane < bdx) smem[warp * bdx + lane] = value;
    __syncthreads();
    // The warps of this thread's z slice, in order.
    const unsigned warpsPerSlice = (bdx * blockDimY()) / 32u;
    const unsigned first = threadIdx.z * warpsPerSlice;
    T result = init;
    for (unsigned w = first; w < first + warpsPerSlice; ++w) {
      result = op(result, smem[w * bdx + threadIdx.x]);
    }
    __syncthreads();
    return result;
  }
  smem[g.slot()] = value;
  __syncthreads();
  const T* row = smem + g.group * g.size;
  if (g.size > 32u) {
    // Members 0..31 fold the members congruent to them modulo 32, then publish their partials.
    T partial = value;
    if (g.member < 32u) {
      for (unsigned i = g.member + 32u; i < g.size; i += 32u) partial = op(partial, row[i]);
    }
    __syncthreads();
    if (g.member < 32u) smem[g.slot()] = partial;
    __syncthreads();
  }
  const unsigned count = g.size < 32u ? g.size : 32u;
  T result = init;
  for (unsigned i = 0; i < count; ++i) result = op(result, row[i]);
  __syncthreads();
  return result;
}

/// blockReduce of Welford states (smem holds one Welford<T, N> per thread).
template <bool kX, bool kY, bool kZ = false, typename T, typename N>
__device__ Welford<T, N> blockWelford(Welford<T, N> value, Welford<T, N>* smem) {
  return blockReduce<kX, kY, kZ>(value, WelfordOp{}, welfordInit<T, N>(), smem);
}

/// Broadcasts the value of the group's first member (index 0 along kX, kY, kZ) to every thread of
/// the group; blockBroadcast<true, true, true> sends thread (0,0,0)'s value to the whole block.
/// smem needs one element per group. Contains two barriers.
template <bool kX, bool kY, bool kZ = false, typename T>
__device__ T blockBroadcast(T value, T* smem) {
  const ThreadGroup<kX, kY, kZ> g;
  if (g.member == 0u) smem[g.group] = value;
  __syncthreads();
  const T result = smem[g.group];
  __syncthreads();
  return result;
}

}  // namespace loom

#endif  // LOOM_RUNTIME_BLOCK_CUH
