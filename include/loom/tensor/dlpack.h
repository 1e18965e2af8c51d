// SPDX-License-Identifier: Apache-2.0
// DLPack 1.x interchange: Loom's own declaration of the C ABI, and zero-copy import/export of
// Tensors.
//
// The structs below follow the DLPack 1.1 ABI field for field (the layout is the same as 1.0's), so
// a pointer to a `::DLManagedTensorVersioned` from the official dlpack.h can be reinterpret_cast to
// `loom::dlpack::DLManagedTensorVersioned*` and back. They live in namespace loom::dlpack (and the
// flag/version constants are C++ constants, not macros) so that this header never clashes with a
// real dlpack.h included in the same translation unit. static_asserts pin the 64-bit layout.
//
// Ownership, as the DLPack protocol defines it:
//   - fromDLPack() takes ownership of the managed tensor only when it succeeds. The returned Tensor
//     aliases the producer's memory; the producer's deleter runs exactly once, when the last Loom
//     Tensor (or Loom export) sharing that storage goes away. When fromDLPack() throws, nothing was
//     taken: the caller still owns the managed tensor and must call its deleter.
//   - toDLPack()/toDLPackVersioned() hand out a heap-allocated managed tensor that keeps the
//     Tensor's storage alive until the consumer calls its deleter (exactly once).
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom::dlpack {

/// The DLPack version Loom writes into exported tensors. Any 1.x is accepted on import.
inline constexpr uint32_t kMajorVersion = 1;
inline constexpr uint32_t kMinorVersion = 1;

/// DLManagedTensorVersioned::flags bits.
inline constexpr uint64_t kFlagBitmaskReadOnly = uint64_t(1) << 0;  ///< consumer must not write
inline constexpr uint64_t kFlagBitmaskIsCopied = uint64_t(1) << 1;  ///< producer made a copy
inline constexpr uint64_t kFlagBitmaskIsSubbyteTypePadded = uint64_t(1) << 2;  ///< since 1.1

extern "C" {

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,  ///< pinned host memory, CPU-accessible
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,  ///< cudaMallocManaged memory
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  // DLPack 1.1's narrow float codes run 7..17 (kDLFloat8_e3m4 = 7, ..., kDLFloat4_e2m1fn = 17);
  // Loom takes the two below (torch.float8_e4m3fn / float8_e5m2) and rejects the others.
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e5m2 = 12,
};

struct DLDataType {
  uint8_t code;    ///< a DLDataTypeCode
  uint8_t bits;    ///< bits per lane
  uint16_t lanes;  ///< 1 for scalars; >1 for vector types
};

struct DLTensor {
  void* data;  ///< base pointer; the first element lives at data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;    ///< ndim extents
  int64_t* strides;  ///< ndim strides in elements, or NULL for compact row-major
  uint64_t byte_offset;
};

/// Legacy (unversioned, pre-1.0) managed tensor.
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);  ///< may be NULL; frees `self` too
};

/// The DLPack 1.x managed tensor. Everything up to `flags` is stable across major versions, so a
/// consumer may always call `deleter` even when it rejects the version.
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);  ///< may be NULL; frees `self` too
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // extern "C"

// The ABI on LP64 targets (Linux x86-64 / aarch64), as every DLPack producer lays it out.
static_assert(sizeof(DLPackVersion) == 8);
static_assert(sizeof(DLDevice) == 8 && offsetof(DLDevice, device_id) == 4);
static_assert(sizeof(DLDataType) == 4 && offsetof(DLDataType, bits) == 1 &&
              offsetof(DLDataType, lanes) == 2);
static_assert(sizeof(void*) == 8, "Loom's DLPack layout assumes a 64-bit target");
static_assert(offsetof(DLTensor, data) == 0 && offsetof(DLTensor, device) == 8 &&
              offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20 &&
              offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
              offsetof(DLTensor, byte_offset) == 40 && sizeof(DLTensor) == 48);
static_assert(offsetof(DLManagedTensor, dl_tensor) == 0 &&
              offsetof(DLManagedTensor, manager_ctx) == 48 &&
              offsetof(DLManagedTensor, deleter) == 56 && sizeof(DLManagedTensor) == 64);
static_assert(offsetof(DLManagedTensorVersioned, version) == 0 &&
              offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
              offsetof(DLManagedTensorVersioned, deleter) == 16 &&
              offsetof(DLManagedTensorVersioned, flags) == 24 &&
              offsetof(DLManagedTensorVersioned, dl_tensor) == 32 &&
              sizeof(DLManagedTensorVersioned) == 80);

}  // namespace loom::dlpack

namespace loom {

/// Wraps a DLPack 1.x tensor without copying. Accepted: major version 1; devices kDLCPU and
/// kDLCUDAHost (-> Device::cpu()), kDLCUDA and kDLCUDAManaged (-> Device::cuda(device_id));
/// dtypes bool(8), int32, int64, float16, bfloat16, float32, float64 with lanes == 1; NULL strides
/// (compact row-major); non-negative strides; any byte_offset. The READ_ONLY flag is accepted
/// (Loom only reads the tensors it is given as inputs). Throws UserError otherwise, in which case
/// the caller keeps ownership of `managed`.
Tensor fromDLPack(dlpack::DLManagedTensorVersioned* managed);

/// Same, for the legacy unversioned struct.
Tensor fromDLPack(dlpack::DLManagedTensor* managed);

/// Exports a defined Tensor without copying, as DLPack 1.x with flags 0. `data` is the storage
/// base and `byte_offset` the Tensor's offset in bytes; strides are always given. The caller must
/// eventually call the result's deleter.
dlpack::DLManagedTensorVersioned* toDLPackVersioned(const Tensor& tensor);

/// Same, as the legacy unversioned struct.
dlpack::DLManagedTensor* toDLPack(const Tensor& tensor);

}  // namespace loom
