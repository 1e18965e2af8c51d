// SPDX-License-Identifier: Apache-2.0
// Device runtime: grid reductions over any block dims (last block finishes, or every block with a
// grid barrier) and a portable grid sync.
//
// gridReduce needs no co-residency: every block writes its partial to a global work buffer and
// counts itself in on a semaphore; the block that arrives last (the atomic counter says so) combines
// all partials in blockIdx.x order (deterministic) and resets the semaphore. No block ever waits for
// another, so it runs with any launch, and on the host backend with blocks run one after another.
//
// gridSync is a real barrier: every block waits for all others, so the launch must be cooperative
// (all blocks resident at once: cuLaunchCooperativeKernel on the GPU, HostLaunchOptions::cooperative
// on the host backend). It is built from atomics only, so the same text runs on both.
#ifndef LOOM_RUNTIME_GRID_CUH
#define LOOM_RUNTIME_GRID_CUH

namespace loom {

/// A volatile (L1-bypassing) load, for values other blocks wrote. T is an arithmetic type; Welford
/// states have their own overload (welford.cuh).
template <typename T>
__device__ __forceinline__ T loadVolatile(const T* p) {
  return *static_cast<const volatile T*>(p);
}

/// Where the calling block sits relative to the reduced block dimensions kX/kY/kZ: `member` is its
/// index among the `size` blocks that reduce together (x fastest), `segment` the index of that
/// group ("segment") among `segments`. The ThreadGroup of block.cuh, over blockIdx / gridDim.
template <bool kX, bool kY, bool kZ>
struct BlockGroup {
  unsigned member = 0;
  unsigned size = 1;
  unsigned segment = 0;
  unsigned segments = 1;

  __device__ __forceinline__ BlockGroup() {
    add(kX, gridDimX() == 1u ? 0u : blockIdx.x, gridDimX());
    add(kY, gridDimY() == 1u ? 0u : blockIdx.y, gridDimY());
    add(kZ, gridDimZ() == 1u ? 0u : blockIdx.z, gridDimZ());
  }

 private:
  __device__ __forceinline__ void add(bool reduced, unsigned idx, unsigned dim) {
    if (reduced) {
      member += idx * size;
      size *= dim;
    } else {
      segment += idx * segments;
      segments *= dim;
    }
  }
};

/// Reduces, for every thread slot (linear thread index), `value` over the block dimensions kX, kY,
/// kZ. Blocks with the same index along the other dimensions form one independent reduction
/// ("segment"): gridReduce<true, false, false> in a 2-D grid reduces over blockIdx.x for each
/// blockIdx.y, gridReduce<false, true, false> over blockIdx.y for each blockIdx.x.
///
/// Returns true in all threads of the one block per segment that finished the reduction; there
/// `result` holds, for each thread, op(init, v[member 0], v[member 1], ...) of the values its slot
/// passed in every block of the segment (members in order: deterministic). In other blocks it
/// returns false and leaves `result` unchanged. To reduce over threads as well, call blockReduce
/// before (every thread then passes its group's partial) or after (in the finishing block only: the
/// condition is uniform per block).
///
/// `entrance` numbers the times one call site is reached in a launch (the iteration of the serial
/// loops around it, 0 .. entrances - 1): each entrance has its own slice of the buffers, so a block
/// that moves on to the next iteration never overwrites a partial the finishing block of the
/// previous one has yet to read. Each entrance may finish in a different block.
///
/// Buffers (global memory, allocated by the executor):
///  - work: entrances * gridDim.x * gridDim.y * gridDim.z * (threads per block) elements of T; no
///    initial value.
///  - semaphores: entrances * segments unsigned counters, zero before the first launch; they are
///    zero again when the kernel ends, so they can be allocated once and reused.
/// Each gridReduce call site in a kernel needs its own buffers (a block may reach the next call
/// before the finishing block of this one has read the partials). Every thread of every block must
/// call it (it contains two __syncthreads).
template <bool kX, bool kY, bool kZ, typename T, typename Op>
__device__ bool gridReduce(T& result, T value, Op op, T init, T* work, unsigned* semaphores,
                           unsigned entrance = 0u) {
  const BlockGroup<kX, kY, kZ> g;
  const unsigned threads = blockThreadCount();
  const unsigned tid = linearThreadIdx();
  const unsigned counter = entrance * g.segments + g.segment;
  T* segmentWork = work + static_cast<int64>(counter) * g.size * threads;

  segmentWork[static_cast<int64>(g.member) * threads + tid] = value;
  // Make this thread's partial visible to the finishing block before the block counts itself in.
  __threadfence();
  __syncthreads();
  bool last = false;
  if (tid == 0u) last = atomicAdd(&semaphores[counter], 1u) == g.size - 1u;
  last = __syncthreads_or(last) != 0;
  if (!last) return false;

  __threadfence();
  T acc = init;
  for (unsigned b = 0; b < g.size; ++b) {
    acc = op(acc, loadVolatile(&segmentWork[static_cast<int64>(b) * threads + tid]));
  }
  result = acc;
  // Every block of the segment has arrived, so nobody else touches the counter in this launch.
  if (tid == 0u) atomicExch(&semaphores[counter], 0u);
  return true;
}

/// gridReduce of Welford states; `work` holds Welford<T, N> elements.
template <bool kX, bool kY, bool kZ, typename T, typename N>
__device__ bool gridWelford(Welford<T, N>& result, Welford<T, N> value, Welford<T, N>* work,
                            unsigned* semaphores, unsigned entrance = 0u) {
  return gridReduce<kX, kY, kZ>(result, value, WelfordOp{}, welfordInit<T, N>(), work, semaphores,
                                entrance);
}

/// Grid-wide barrier for cooperative launches: no thread leaves before every thread of the grid
/// has arrived, and global writes before it are visible to all threads after it.
///
/// `sync` points at two unsigned words in global memory, zero before the first launch: an arrival
/// counter and a generation number. The last block to arrive resets the counter and bumps the
/// generation; the others spin (sleeping) until the generation changes. The words are left ready
/// for the next barrier and the next launch, so one pair serves every gridSync of a kernel.
/// Every thread of every block must call it.
__device__ inline void gridSync(unsigned* sync) {
  __syncthreads();
  if (linearThreadIdx() == 0u) {
    const unsigned blocks = gridDimX() * gridDimY() * gridDimZ();
    // The generation cannot change before this block arrives, so reading it first is safe; the
    // fence orders the read (and the block's writes) before the arrival.
    const unsigned generation = loadVolatile(&sync[1]);
    __threadfence();
    if (atomicAdd(&sync[0], 1u) == blocks - 1u) {
      atomicExch(&sync[0], 0u);
      __threadfence();
      atomicAdd(&sync[1], 1u);
    } else {
      // __nanosleep backs off on the GPU and lets other blocks' fibers run on the host backend.
      while (loadVolatile(&sync[1]) == generation) __nanosleep(32);
    }
    __threadfence();
  }
  __syncthreads();
}

/// gridReduce whose result every block needs (a grid broadcast: an outer-persistent normalization
/// uses the column statistics in the blocks that hold the columns' data). Cooperative launches
/// only: every block writes its partial, waits at a grid barrier, then combines all partials of its
/// segment itself, in member order, so every block gets the same (deterministic) result and no
/// block has to publish it. Buffers: `work` as gridReduce's (one slice per entrance), `sync` the
/// kernel's two gridSync words. The partials are read only after the barrier of their own entrance
/// and written again only in the next launch, so no second barrier is needed.
template <bool kX, bool kY, bool kZ, typename T, typename Op>
__device__ void gridAllReduce(T& result, T value, Op op, T init, T* work, unsigned* sync,
                              unsigned entrance = 0u) {
  const BlockGroup<kX, kY, kZ> g;
  const unsigned threads = blockThreadCount();
  const unsigned tid = linearThreadIdx();
  T* segmentWork = work + static_cast<int64>(entrance * g.segments + g.segment) * g.size * threads;
  segmentWork[static_cast<int64>(g.member) * threads + tid] = value;
  __threadfence();
  gridSync(sync);
  T acc = init;
  for (unsigned b = 0; b < g.size; ++b) {
    acc = op(acc, loadVolatile(&segmentWork[static_cast<int64>(b) * threads + tid]));
  }
  result = acc;
}

/// gridAllReduce of Welford states.
template <bool kX, bool kY, bool kZ, typename T, typename N>
__device__ void gridAllWelford(Welford<T, N>& result, Welford<T, N> value, Welford<T, N>* work,
                               unsigned* sync, unsigned entrance = 0u) {
  gridAllReduce<kX, kY, kZ>(result, value, WelfordOp{}, welfordInit<T, N>(), work, sync, entrance);
}

}  // namespace loom

#endif  // LOOM_RUNTIME_GRID_CUH
