// SPDX-License-Identifier: Apache-2.0
// Test kernel: out[i] = a[i] + b[i] over n floats, one element per thread.
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
