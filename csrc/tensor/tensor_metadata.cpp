// SPDX-License-Identifier: Apache-2.0
// TensorMetadata (tensor_metadata.h).
#include "loom/tensor/tensor_metadata.h"

namespace loom {

int64_t dataAlignment(const void* data, int64_t numel) {
  if (numel == 0) return 16;
  const auto address = reinterpret_cast<uintptr_t>(data);
  int64_t a = 1;
  while (a < 16 && address % uintptr_t(a * 2) == 0) a *= 2;
  return a;
}

TensorMetadata TensorMetadata::of(const Tensor& t) {
  TensorMetadata m;
  m.dtype = t.dtype();
  m.device = t.device();
  m.sizes = t.sizes();
  m.strides = t.strides();
  m.globalSizes = t.sizes();
  m.alignment = dataAlignment(t.data(), t.numel());
  return m;
}

int64_t TensorMetadata::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

}  // namespace loom
