// SPDX-License-Identifier: Apache-2.0
// Device runtime: the accumulating phase of an atomic scatter_add (kir::ScatterAdd).
//
// A scatter_add the scatter scheduler gives atomics to (ir::ScatterOp::atomic) is one cooperative
// kernel in two phases: the generated loops copy self into out, then every thread calls
// scatterAddAtomic, which waits at a grid barrier (so every copy has landed) and walks the index
// once, grid-stride: element j of index (row-major over index's sizes) adds src[j] into out at
// j's coordinates with `dim` replaced by index[j]. Each index value passes the range check of the
// kernel's site `site` first (index.cuh), so no add leaves out. f32, f64 and i32 use the
// hardware's atomicAdd, i64 the unsigned 64-bit one (two's complement: the same bits). f16 and
// bf16 (scatterAddAtomicWide) sum in an f32 scratch the size of out, one rounding at the end, as
// reductions do; scatterAtomicAdd16 (a compare-and-swap loop on the aligned 32-bit word holding
// the element, any GPU and the host emulation) adds in the dtype itself, each partial sum rounded
// as torch's CUDA index_add_ does, and is kept for callers that add into 16-bit memory. The
// order of the adds is the scheduling's, so float sums may differ in the last bits between runs.
#ifndef LOOM_RUNTIME_SCATTER_CUH
#define LOOM_RUNTIME_SCATTER_CUH

namespace loom {
namespace detail {

__device__ __forceinline__ void scatterAtomicAdd(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void scatterAtomicAdd(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void scatterAtomicAdd(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void scatterAtomicAdd(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

/// *p += v for a 16-bit float type T (a `__x` payload): the element's half of its aligned 32-bit
/// word is replaced by the rounded sum, retried until no other thread changed the word between.
/// Allocations are at least 4-byte aligned, so the word never leaves the tensor's allocation.
template <typename T>
__device__ __forceinline__ void scatterAtomicAdd16(T* p, T v) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(p);
  unsigned* word = reinterpret_cast<unsigned*>(address & ~3ull);
  const unsigned shift = (address & 2ull) != 0ull ? 16u : 0u;
  const float add = static_cast<float>(v);
  unsigned old = *reinterpret_cast<volatile unsigned*>(word);
  while (true) {
    T current;
    current.__x = static_cast<unsigned short>((old >> shift) & 0xffffu);
    const T sum(static_cast<float>(current) + add);
    const unsigned next = (old & ~(0xffffu << shift)) | (unsigned(sum.__x) << shift);
    const unsigned seen = atomicCAS(word, old, next);
    if (seen == old) return;
    old = seen;
  }
}
__device__ __forceinline__ void scatterAtomicAdd(__half* p, __half v) { scatterAtomicAdd16(p, v); }
__device__ __forceinline__ void scatterAtomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
  scatterAtomicAdd16(p, v);
}

}  // namespace detail

namespace detail {

/// The coordinates of element `linear` (row-major over `size`). The division is in the kernel's
/// index type: `linear` is below the tensor's element count, which that type holds, and a 32-bit
/// division is a few instructions where a 64-bit one is a long software sequence.
template <int N, typename IndexT>
__device__ __forceinline__ void scatterCoords(long long linear, const IndexT* size,
                                              long long* coord) {
  IndexT rest = static_cast<IndexT>(linear);
  for (int d = N - 1; d >= 0; --d) {
    coord[d] = static_cast<long long>(rest % size[d]);
    rest /= size[d];
  }
}

/// For each element j of index (grid-stride): the range-checked index value, then
/// add(position of j with `dim` replaced by the value, src's element at j). `at` gives the
/// position in the destination from the coordinates.
template <typename I, int N, typename IndexT, typename Add>
__device__ void scatterWalk(Tensor<I, N, IndexT> index, int dim, IndexT extent, long long* error,
                            int site, Add add) {
  long long total = 1;
  for (int d = 0; d < N; ++d) total *= static_cast<long long>(index.size[d]);
  const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += threads) {
    long long coord[N];
    scatterCoords<N>(j, index.size, coord);
    long long at_index = 0;
    for (int d = 0; d < N; ++d) at_index += coord[d] * static_cast<long long>(index.stride[d]);
    const long long value = static_cast<long long>(index.data[at_index]);
    if (!loom_index_check_in(value, extent, error, site)) continue;
    const long long at = coord[dim];
    coord[dim] = value;
    add(coord, at);
  }
}

}  // namespace detail

/// out[j with `dim` = index[j]] += src[j] for every position j of index, after a grid barrier on
/// the kernel's two gridSync words `sync`. Every thread of the (cooperative) grid calls it.
template <typename T, typename I, int N, typename IndexT>
__device__ void scatterAddAtomic(Tensor<T, N, IndexT> out, Tensor<I, N, IndexT> index,
                                 Tensor<T, N, IndexT> src, int dim, unsigned* sync,
                                 long long* error, int site) {
  gridSync(sync);
  detail::scatterWalk(index, dim, out.size[dim], error, site, [&](long long* coord, long long j) {
    long long at_out = 0;
    long long at_src = 0;
    for (int d = 0; d < N; ++d) {
      at_out += coord[d] * static_cast<long long>(out.stride[d]);
      at_src += (d == dim ? j : coord[d]) * static_cast<long long>(src.stride[d]);
    }
    detail::scatterAtomicAdd(&out.data[at_out], src.data[at_src]);
  });
}

/// scatterAddAtomic for 16-bit floats, summing in f32 as reductions do: `acc` (one float per
/// element of out, row-major) takes self's values, then (after a grid barrier) the atomic f32
/// adds, then (after another) out gets each sum rounded once to T. Every thread of the grid
/// calls it.
template <typename T, typename I, int N, typename IndexT>
__device__ void scatterAddAtomicWide(Tensor<T, N, IndexT> out, Tensor<T, N, IndexT> self,
                                     Tensor<I, N, IndexT> index, Tensor<T, N, IndexT> src, int dim,
                                     float* acc, unsigned* sync, long long* error, int site) {
  long long total = 1;
  for (int d = 0; d < N; ++d) total *= static_cast<long long>(out.size[d]);
  const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += threads) {
    long long coord[N];
    detail::scatterCoords<N>(i, out.size, coord);
    long long at = 0;
    for (int d = 0; d < N; ++d) at += coord[d] * static_cast<long long>(self.stride[d]);
    acc[i] = static_cast<float>(self.data[at]);
  }
  gridSync(sync);
  detail::scatterWalk(index, dim, out.size[dim], error, site, [&](long long* coord, long long j) {
    long long linear = 0;
    long long at_src = 0;
    for (int d = 0; d < N; ++d) {
      linear = linear * static_cast<long long>(out.size[d]) + coord[d];
      at_src += (d == dim ? j : coord[d]) * static_cast<long long>(src.stride[d]);
    }
    atomicAdd(&acc[linear], static_cast<float>(src.data[at_src]));
  });
  gridSync(sync);
  for (long long i = first; i < total; i += threads) {
    long long coord[N];
    detail::scatterCoords<N>(i, out.size, coord);
    long long at = 0;
    for (int d = 0; d < N; ++d) at += coord[d] * static_cast<long long>(out.stride[d]);
    out.data[at] = T(acc[i]);
  }
}

}  // namespace loom

#endif  // LOOM_RUNTIME_SCATTER_CUH
