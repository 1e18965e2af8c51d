// SPDX-License-Identifier: Apache-2.0
// Zero-copy conversion between loom::Tensor and DLPack managed tensors.
//
// Import: the DLTensor is validated completely before anything is taken, so a throw leaves the
// producer's tensor untouched. The shape and strides are copied (they belong to the producer), and
// the Storage's deleter calls the producer's deleter, so it runs once, when the last view goes.
// Export: one heap context owns the managed struct, the shape/stride arrays it points into and a
// reference to the Tensor's storage; the exported deleter frees that context.
#include "loom/tensor/dlpack.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/support/error.h"

namespace loom {
namespace {

using dlpack::DLDataType;
using dlpack::DLDevice;
using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;
using dlpack::DLTensor;

std::string deviceTypeName(int32_t type) {
  switch (type) {
    case dlpack::kDLCPU: return "kDLCPU";
    case dlpack::kDLCUDA: return "kDLCUDA";
    case dlpack::kDLCUDAHost: return "kDLCUDAHost";
    case dlpack::kDLOpenCL: return "kDLOpenCL";
    case dlpack::kDLVulkan: return "kDLVulkan";
    case dlpack::kDLMetal: return "kDLMetal";
    case dlpack::kDLVPI: return "kDLVPI";
    case dlpack::kDLROCM: return "kDLROCM";
    case dlpack::kDLROCMHost: return "kDLROCMHost";
    case dlpack::kDLExtDev: return "kDLExtDev";
    case dlpack::kDLCUDAManaged: return "kDLCUDAManaged";
    case dlpack::kDLOneAPI: return "kDLOneAPI";
    case dlpack::kDLWebGPU: return "kDLWebGPU";
    case dlpack::kDLHexagon: return "kDLHexagon";
    case dlpack::kDLMAIA: return "kDLMAIA";
    default: return "unknown";
  }
}

std::string typeCodeName(uint8_t code) {
  switch (code) {
    case dlpack::kDLInt: return "kDLInt";
    case dlpack::kDLUInt: return "kDLUInt";
    case dlpack::kDLFloat: return "kDLFloat";
    case dlpack::kDLOpaqueHandle: return "kDLOpaqueHandle";
    case dlpack::kDLBfloat: return "kDLBfloat";
    case dlpack::kDLComplex: return "kDLComplex";
    case dlpack::kDLBool: return "kDLBool";
    case dlpack::kDLFloat8_e4m3fn: return "kDLFloat8_e4m3fn";
    case dlpack::kDLFloat8_e5m2: return "kDLFloat8_e5m2";
    default: return "code " + std::to_string(int(code));
  }
}

constexpr const char* kSupportedDtypes =
    "bool (kDLBool, 8 bits), int8/int16/int32/int64 (kDLInt, 8/16/32/64 bits), "
    "uint8/uint16/uint32/uint64 (kDLUInt, 8/16/32/64 bits), float16/float32/float64 "
    "(kDLFloat, 16/32/64 bits), bfloat16 (kDLBfloat, 16 bits), complex64/complex128 (kDLComplex, "
    "64/128 bits), float8_e4m3fn (kDLFloat8_e4m3fn, 8 bits), float8_e5m2 (kDLFloat8_e5m2, 8 bits)";

Device toLoomDevice(DLDevice device) {
  switch (device.device_type) {
    case dlpack::kDLCPU:
    case dlpack::kDLCUDAHost: return Device::cpu();
    case dlpack::kDLCUDA:
    case dlpack::kDLCUDAManaged:
      LOOM_CHECK(device.device_id >= 0, "DLPack: negative CUDA device id ", device.device_id);
      return Device::cuda(device.device_id);
    default: break;
  }
  LOOM_THROW("DLPack: unsupported device type ", int(device.device_type), " (",
             deviceTypeName(device.device_type),
             "); Loom accepts kDLCPU, kDLCUDAHost, kDLCUDA and kDLCUDAManaged tensors");
}

DLDevice toDLDevice(Device device) {
  if (device.isCuda()) return {dlpack::kDLCUDA, int32_t(device.index)};
  return {dlpack::kDLCPU, 0};
}

DataType toLoomDtype(DLDataType t) {
  LOOM_CHECK(t.lanes == 1, "DLPack: vector dtype with ", t.lanes, " lanes (", typeCodeName(t.code),
             ", ", int(t.bits), " bits) is not supported; Loom needs lanes == 1");
  switch (t.code) {
    case dlpack::kDLBool:
      if (t.bits == 8) return DataType::Bool;
      break;
    case dlpack::kDLInt:
      if (t.bits == 8) return DataType::Int8;
      if (t.bits == 16) return DataType::Int16;
      if (t.bits == 32) return DataType::Int32;
      if (t.bits == 64) return DataType::Int64;
      break;
    case dlpack::kDLUInt:
      if (t.bits == 8) return DataType::UInt8;
      if (t.bits == 16) return DataType::UInt16;
      if (t.bits == 32) return DataType::UInt32;
      if (t.bits == 64) return DataType::UInt64;
      break;
    case dlpack::kDLFloat:
      if (t.bits == 16) return DataType::Float16;
      if (t.bits == 32) return DataType::Float32;
      if (t.bits == 64) return DataType::Float64;
      break;
    case dlpack::kDLBfloat:
      if (t.bits == 16) return DataType::BFloat16;
      break;
    case dlpack::kDLFloat8_e4m3fn:
      if (t.bits == 8) return DataType::Float8_e4m3fn;
      break;
    case dlpack::kDLFloat8_e5m2:
      if (t.bits == 8) return DataType::Float8_e5m2;
      break;
    case dlpack::kDLComplex:
      if (t.bits == 64) return DataType::ComplexFloat;
      if (t.bits == 128) return DataType::ComplexDouble;
      break;
    default: break;
  }
  LOOM_THROW("DLPack: unsupported dtype (", typeCodeName(t.code), ", ", int(t.bits),
             " bits); Loom supports ", kSupportedDtypes);
}

DLDataType toDLDtype(DataType dtype) {
  auto bits = uint8_t(dataTypeSize(dtype) * 8);
  switch (dtype) {
    case DataType::Bool: return {dlpack::kDLBool, bits, 1};
    case DataType::Int8:
    case DataType::Int16:
    case DataType::Int32:
    case DataType::Int64: return {dlpack::kDLInt, bits, 1};
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: return {dlpack::kDLUInt, bits, 1};
    case DataType::Float16:
    case DataType::Float32:
    case DataType::Float64: return {dlpack::kDLFloat, bits, 1};
    case DataType::BFloat16: return {dlpack::kDLBfloat, bits, 1};
    case DataType::ComplexFloat:
    case DataType::ComplexDouble: return {dlpack::kDLComplex, bits, 1};
    case DataType::Float8_e4m3fn: return {dlpack::kDLFloat8_e4m3fn, bits, 1};
    case DataType::Float8_e5m2: return {dlpack::kDLFloat8_e5m2, bits, 1};
  }
  LOOM_UNREACHABLE("bad DataType ", int(dtype));
}

// "a [2147483648, 2147483648] f32 tensor" for messages about a tensor not imported yet.
std::string describeImport(std::span<const int64_t> sizes, DataType dtype) {
  std::string s = "a [";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "] " + std::string(dataTypeName(dtype)) + " tensor";
}

// Validates `t` and builds a Tensor over its memory whose storage calls `release` when freed.
// Every size is computed with checked arithmetic first (an expanded view's element count or
// byte size can pass int64: [2^31, 2^31] of f32 with strides 0), and `release` is armed only once
// the Tensor exists, so a throw anywhere in here leaves ownership with the caller: the producer's
// deleter then runs exactly once, from the caller, never from a half-built Storage as well.
Tensor importTensor(const DLTensor& t, Storage::Deleter release) {
  const Device device = toLoomDevice(t.device);
  const DataType dtype = toLoomDtype(t.dtype);
  LOOM_CHECK(t.ndim >= 0, "DLPack: negative ndim ", t.ndim);
  LOOM_CHECK(t.ndim == 0 || t.shape != nullptr, "DLPack: shape is NULL for a ", t.ndim,
             "-D tensor");
  const auto ndim = size_t(t.ndim);
  std::vector<int64_t> sizes(t.shape, t.shape + ndim);
  for (size_t i = 0; i < ndim; ++i) {
    LOOM_CHECK(sizes[i] >= 0, "DLPack: negative size ", sizes[i], " at dimension ", i);
  }
  // Messages are built only on failure: this runs for every tensor of every Python execute().
  auto overflows = [&](const char* quantity) {
    LOOM_THROW("DLPack: ", describeImport(sizes, dtype), ": ", quantity,
               " overflows 64 bits; Loom cannot address it");
  };
  const auto item = int64_t(dataTypeSize(dtype));
  int64_t numel = 1;
  for (int64_t s : sizes) {
    if (s == 0) numel = 0;
  }
  for (size_t i = 0; i < ndim && numel != 0; ++i) {
    if (__builtin_mul_overflow(numel, sizes[i], &numel)) overflows("its element count");
  }
  if (int64_t bytes = 0; __builtin_mul_overflow(numel, item, &bytes)) overflows("its byte size");
  std::vector<int64_t> strides;
  if (t.strides == nullptr) {
    strides = Tensor::contiguousStrides(sizes);
  } else {
    strides.assign(t.strides, t.strides + ndim);
    for (size_t i = 0; i < ndim; ++i) {
      LOOM_CHECK(strides[i] >= 0 || sizes[i] <= 1, "DLPack: negative stride ", strides[i],
                 " at dimension ", i, "; Loom needs non-negative strides");
      if (sizes[i] <= 1) strides[i] = std::max<int64_t>(strides[i], 0);
    }
  }
  LOOM_CHECK(t.byte_offset < (uint64_t(1) << 62), "DLPack: byte_offset ", t.byte_offset,
             " is out of range");
  LOOM_CHECK(numel == 0 || t.data != nullptr, "DLPack: data is NULL for a tensor of ", numel,
             " elements");

  // Keep the producer's base pointer when byte_offset is a whole number of elements, so that an
  // export of this Tensor reproduces the same (data, byte_offset); otherwise fold it into the base.
  char* base = static_cast<char*>(t.data);
  int64_t offset = 0;
  if (t.byte_offset % uint64_t(item) == 0) {
    offset = int64_t(t.byte_offset / uint64_t(item));
  } else {
    base += t.byte_offset;
  }
  int64_t extent = 0;  // elements reachable from base
  if (numel > 0) {
    bool overflow = __builtin_add_overflow(offset, 1, &extent);
    for (size_t i = 0; i < ndim; ++i) {
      int64_t step = 0;
      overflow = overflow || __builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
                 __builtin_add_overflow(extent, step, &extent);
    }
    if (overflow) overflows("the memory its strides span");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(extent, item, &bytes)) overflows("the bytes its strides span");

  struct Release {
    Storage::Deleter fn;
    bool armed = false;
  };
  auto owner = std::make_shared<Release>(Release{std::move(release)});
  auto storage = std::make_shared<Storage>(base, size_t(bytes), device, [owner](void* p) {
    if (owner->armed) owner->fn(p);
  });
  Tensor tensor(std::move(storage), dtype, std::move(sizes), std::move(strides), offset);
  owner->armed = true;  // from here on the Storage owns the producer's tensor
  return tensor;
}

template <typename Managed>
struct ExportContext {
  Managed managed{};
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

template <typename Managed>
void deleteExport(Managed* self) {
  delete static_cast<ExportContext<Managed>*>(self->manager_ctx);
}

template <typename Managed>
Managed* exportTensor(const Tensor& tensor) {
  LOOM_CHECK(tensor.defined(), "toDLPack: cannot export an undefined tensor");
  auto ctx = std::make_unique<ExportContext<Managed>>();
  ctx->storage = tensor.storage();
  ctx->shape = tensor.sizes();
  ctx->strides = tensor.strides();
  DLTensor& t = ctx->managed.dl_tensor;
  t.data = tensor.storage()->data();
  t.device = toDLDevice(tensor.device());
  t.ndim = int32_t(tensor.dim());
  t.dtype = toDLDtype(tensor.dtype());
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = uint64_t(tensor.offset()) * tensor.itemSize();
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = &deleteExport<Managed>;
  return &ctx.release()->managed;
}

}  // namespace

Tensor fromDLPack(DLManagedTensorVersioned* managed) {
  LOOM_CHECK(managed != nullptr, "fromDLPack: the managed tensor is NULL");
  // Only the fields up to `flags` are readable when the major version is unknown.
  LOOM_CHECK(managed->version.major == dlpack::kMajorVersion, "DLPack: unsupported version ",
             managed->version.major, ".", managed->version.minor, "; Loom reads DLPack ",
             dlpack::kMajorVersion, ".x");
  return importTensor(managed->dl_tensor, [managed](void*) {
    if (managed->deleter != nullptr) managed->deleter(managed);
  });
}

Tensor fromDLPack(DLManagedTensor* managed) {
  LOOM_CHECK(managed != nullptr, "fromDLPack: the managed tensor is NULL");
  return importTensor(managed->dl_tensor, [managed](void*) {
    if (managed->deleter != nullptr) managed->deleter(managed);
  });
}

DLManagedTensorVersioned* toDLPackVersioned(const Tensor& tensor) {
  auto* managed = exportTensor<DLManagedTensorVersioned>(tensor);
  managed->version = {dlpack::kMajorVersion, dlpack::kMinorVersion};
  managed->flags = 0;
  return managed;
}

DLManagedTensor* toDLPack(const Tensor& tensor) { return exportTensor<DLManagedTensor>(tensor); }

}  // namespace loom
