// SPDX-License-Identifier: Apache-2.0
// Device runtime: the range check of indexed reads (gather, index_select, scatter).
//
// A kernel with checked reads takes `long long* loom_index_error`: two words the executor zeroes
// before the launch. The first read whose index value lies outside [0, extent) claims word 0 with
// its site number + 1 and stores the value in word 1; the read itself is skipped (codegen puts it
// in the taken branch of the check), so no thread touches memory outside the tensor. After the
// launch the executor reads the words back and raises the op's error (docs/lowering.md).
#ifndef LOOM_RUNTIME_INDEX_CUH
#define LOOM_RUNTIME_INDEX_CUH

template <typename V, typename E>
__device__ __forceinline__ bool loom_index_check_in(V value, E extent, long long* error, int site) {
  const long long v = (long long)value;
  if (v >= 0 && v < (long long)extent) return true;
  if (atomicCAS(reinterpret_cast<unsigned long long*>(error), 0ull,
                (unsigned long long)site + 1ull) == 0ull) {
    error[1] = v;
  }
  return false;
}

/// The check at site `site` of the kernel being compiled: the words are its parameter.
#define loom_index_check(value, extent, site) \
  loom_index_check_in((value), (extent), loom_index_error, (site))

#endif  // LOOM_RUNTIME_INDEX_CUH
