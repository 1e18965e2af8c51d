// SPDX-License-Identifier: Apache-2.0
// Device runtime: one row of argsort or topk, sorted by the thread that calls it.
//
// Codegen emits one call per row (kir::SortRow) in place of the row's loop: the thread reads the
// row of the input (n elements `stride` apart, in global memory) and writes whole rows of the
// outputs. The order is torch's: NaN above every number and equal to other NaNs, -0.0 equal to
// 0.0, and ties broken by the lower index first, which makes the order total, so the in-place
// heapsorts below give exactly what a stable sort gives. argsortRow takes O(n log n) steps and
// no memory besides its output row; topkRow keeps the best k in a heap in its output row,
// O(n log k). Indices are the Int64 output (long long); half types compare as float, bools of a
// caller's tensor byte-wise (loadBoolInput). argsortRowBlock / topkRowBlock sort a row that fits
// in shared memory with every thread of the block (a bitonic sort, the same order).
#ifndef LOOM_RUNTIME_SORT_CUH
#define LOOM_RUNTIME_SORT_CUH

namespace loom {
namespace detail {

template <typename T>
__device__ __forceinline__ T sortKey(const T* p) {
  return *p;
}
__device__ __forceinline__ bool sortKey(const bool* p) { return loadBoolInput(p); }
__device__ __forceinline__ float sortKey(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float sortKey(const __nv_bfloat16* p) { return __bfloat162float(*p); }

/// The order of one row: before(a, b) when element a comes before element b.
template <typename T, typename I>
struct RowOrder {
  const T* in;
  I stride;
  bool descending;

  __device__ __forceinline__ bool before(long long a, long long b) const {
    const auto x = sortKey(in + a * stride);
    const auto y = sortKey(in + b * stride);
    const bool x_nan = x != x;
    const bool y_nan = y != y;
    if (x_nan || y_nan) return x_nan == y_nan ? a < b : (descending ? x_nan : y_nan);
    if (x == y) return a < b;
    return descending ? x > y : x < y;
  }
};

/// Restores the heap below `root` of the heap h[0 .. size) (stride hs), in which no element
/// comes before its parent: the root is the one that comes last.
template <typename T, typename I>
__device__ void siftDown(long long* h, I hs, I root, I size, const RowOrder<T, I>& order) {
  while (true) {
    I child = 2 * root + 1;
    if (child >= size) return;
    if (child + 1 < size && order.before(h[child * hs], h[(child + 1) * hs])) ++child;
    if (!order.before(h[root * hs], h[child * hs])) return;
    const long long t = h[root * hs];
    h[root * hs] = h[child * hs];
    h[child * hs] = t;
    root = child;
  }
}

/// Turns the heap h[0 .. size) into the row's order (the first element first).
template <typename T, typename I>
__device__ void sortHeap(long long* h, I hs, I size, const RowOrder<T, I>& order) {
  for (I end = size - 1; end > 0; --end) {
    const long long t = h[0];
    h[0] = h[end * hs];
    h[end * hs] = t;
    siftDown(h, hs, I(0), end, order);
  }
}

}  // namespace detail

/// idx[i * idx_stride] = the index of the i-th element of in[0 .. n) (stride in_stride) in
/// ascending (or descending) order.
template <typename T, typename I>
__device__ void argsortRow(const T* in, I in_stride, I n, long long* idx, I idx_stride,
                           bool descending) {
  const detail::RowOrder<T, I> order{in, in_stride, descending};
  for (I i = 0; i < n; ++i) idx[i * idx_stride] = i;
  for (I i = n / 2; i-- > 0;) detail::siftDown(idx, idx_stride, i, n, order);
  detail::sortHeap(idx, idx_stride, n, order);
}

/// The first k elements of that order (the k largest when `largest`, else the k smallest), in
/// order: their values (a caller's bool as 0 or 1) and their indices.
template <typename T, typename I>
__device__ void topkRow(const T* in, I in_stride, I n, I k, T* values, I values_stride,
                        long long* idx, I idx_stride, bool largest) {
  const detail::RowOrder<T, I> order{in, in_stride, largest};
  if (k <= 0) return;
  for (I j = 0; j < n; ++j) {
    if (j < k) {
      // Grow the heap: sift the new element up past parents that come before it.
      I c = j;
      idx[c * idx_stride] = j;
      while (c > 0) {
        const I p = (c - 1) / 2;
        if (!order.before(idx[p * idx_stride], idx[c * idx_stride])) break;
        const long long t = idx[p * idx_stride];
        idx[p * idx_stride] = idx[c * idx_stride];
        idx[c * idx_stride] = t;
        c = p;
      }
    } else if (order.before(j, idx[0])) {
      // Better than the last of the k kept so far: it takes that one's place.
      idx[0] = j;
      detail::siftDown(idx, idx_stride, I(0), k, order);
    }
  }
  detail::sortHeap(idx, idx_stride, k, order);
  for (I i = 0; i < k; ++i) {
    values[i * values_stride] = T(detail::sortKey(in + idx[i * idx_stride] * in_stride));
  }
}

namespace detail {

/// The order of a row whose keys sit in shared memory (keys[i] the key of element i): as
/// RowOrder, and the padding elements n .. CAP-1 of a block-wide sort come after every element.
template <typename K>
struct KeyOrder {
  const K* keys;
  int n;
  bool descending;

  __device__ __forceinline__ bool before(int a, int b) const {
    if (a >= n || b >= n) return a >= n && b >= n ? a < b : b >= n;
    const K x = keys[a];
    const K y = keys[b];
    const bool x_nan = x != x;
    const bool y_nan = y != y;
    if (x_nan || y_nan) return x_nan == y_nan ? a < b : (descending ? x_nan : y_nan);
    if (x == y) return a < b;
    return descending ? x > y : x < y;
  }
};

/// Sorts the row in[0 .. n) (stride in_stride) with every thread of the block: its keys go to
/// shared memory, then a bitonic sort of CAP indices (CAP a power of two >= n; padding indices
/// sort last), comparing through the keys. The order is total (ties by index), so the result is
/// the stable sort's. Returns the sorted indices (in shared memory, after a barrier).
template <typename T, typename I, int CAP>
__device__ int* sortRowInBlock(const T* in, I in_stride, I n, bool descending, char* smem) {
  using K = decltype(sortKey(in));
  K* keys = reinterpret_cast<K*>(smem);
  int* idx = reinterpret_cast<int*>(smem + (CAP * sizeof(K) + 15) / 16 * 16);
  const int rows = static_cast<int>(n);
  for (int i = static_cast<int>(threadIdx.x); i < CAP; i += static_cast<int>(blockDim.x)) {
    idx[i] = i;
    if (i < rows) keys[i] = sortKey(in + static_cast<I>(i) * in_stride);
  }
  __syncthreads();
  const KeyOrder<K> order{keys, rows, descending};
  for (int k = 2; k <= CAP; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = static_cast<int>(threadIdx.x); i < CAP; i += static_cast<int>(blockDim.x)) {
        const int l = i ^ j;
        if (l <= i) continue;
        const int a = idx[i];
        const int b = idx[l];
        // Runs of k alternate direction; the last merge (k = CAP) is ascending in `order`.
        const bool swap = (i & k) == 0 ? order.before(b, a) : order.before(a, b);
        if (swap) {
          idx[i] = b;
          idx[l] = a;
        }
      }
      __syncthreads();
    }
  }
  return idx;
}

}  // namespace detail

/// argsortRow by every thread of the block together (n <= CAP): one bitonic sort in shared
/// memory (`smem`: CAP keys, 16-byte aligned, then CAP ints), then the indices written in order.
template <typename T, typename I, int CAP>
__device__ void argsortRowBlock(const T* in, I in_stride, I n, long long* idx, I idx_stride,
                                bool descending, char* smem) {
  const int* order = detail::sortRowInBlock<T, I, CAP>(in, in_stride, n, descending, smem);
  for (I i = static_cast<I>(threadIdx.x); i < n; i += static_cast<I>(blockDim.x)) {
    idx[i * idx_stride] = order[i];
  }
  __syncthreads();  // the shared row is free for the block's next call
}

/// topkRow by every thread of the block together: the whole row sorted as argsortRowBlock, its
/// first k values and indices written.
template <typename T, typename I, int CAP>
__device__ void topkRowBlock(const T* in, I in_stride, I n, I k, T* values, I values_stride,
                             long long* idx, I idx_stride, bool largest, char* smem) {
  const int* order = detail::sortRowInBlock<T, I, CAP>(in, in_stride, n, largest, smem);
  for (I i = static_cast<I>(threadIdx.x); i < k; i += static_cast<I>(blockDim.x)) {
    idx[i * idx_stride] = order[i];
    values[i * values_stride] = T(detail::sortKey(in + static_cast<I>(order[i]) * in_stride));
  }
  __syncthreads();
}

}  // namespace loom

#endif  // LOOM_RUNTIME_SORT_CUH
