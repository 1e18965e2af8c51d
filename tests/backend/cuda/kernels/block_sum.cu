// SPDX-License-Identifier: Apache-2.0
// Test kernel: each block sums `per_block` floats through dynamic shared memory (one float per
// element, so a launch may need more than the default 48 KiB) and writes one partial sum.
extern "C" __global__ void block_sum(const float* in, float* partial, int per_block) {
  extern __shared__ float buffer[];
  const float* base = in + (long long)blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) buffer[i] = base[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int i = 0; i < per_block; ++i) sum += buffer[i];
    partial[blockIdx.x] = sum;
  }
}
