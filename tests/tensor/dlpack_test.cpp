// SPDX-License-Identifier: Apache-2.0
// Tests of DLPack import/export: round trips, zero copy, ownership and rejected inputs.
#include "loom/tensor/dlpack.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/support/error.h"

namespace loom {
namespace {

using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

struct TypeCase {
  DataType dtype;
  uint8_t code;
  uint8_t bits;
};

const TypeCase kTypeCases[] = {
    {DataType::Bool, dlpack::kDLBool, 8},
    {DataType::Int32, dlpack::kDLInt, 32},
    {DataType::Int64, dlpack::kDLInt, 64},
    {DataType::Float16, dlpack::kDLFloat, 16},
    {DataType::BFloat16, dlpack::kDLBfloat, 16},
    {DataType::Float32, dlpack::kDLFloat, 32},
    {DataType::Float64, dlpack::kDLFloat, 64},
    {DataType::ComplexFloat, dlpack::kDLComplex, 64},
    {DataType::ComplexDouble, dlpack::kDLComplex, 128},
    {DataType::Int8, dlpack::kDLInt, 8},
    {DataType::Int16, dlpack::kDLInt, 16},
    {DataType::UInt8, dlpack::kDLUInt, 8},
    {DataType::UInt16, dlpack::kDLUInt, 16},
    {DataType::UInt32, dlpack::kDLUInt, 32},
    {DataType::UInt64, dlpack::kDLUInt, 64},
    {DataType::Float8_e4m3fn, dlpack::kDLFloat8_e4m3fn, 8},
    {DataType::Float8_e5m2, dlpack::kDLFloat8_e5m2, 8},
};

// A tensor owned by a foreign producer: the managed struct, its buffer and its shape arrays live
// in one heap object that the producer's deleter frees, counting how often it ran.
template <typename Managed>
struct Producer {
  Managed managed{};
  std::vector<double> buffer;  // doubles, so the base is 8-byte aligned
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int* deleted = nullptr;

  static void deleter(Managed* self) {
    auto* p = static_cast<Producer*>(self->manager_ctx);
    ++*p->deleted;
    delete p;
  }
  char* base() { return reinterpret_cast<char*>(buffer.data()); }
};

// Value stored at logical linear index i; exactly representable in every dtype.
double valueAt(int64_t i) { return double(i % 7) - 3.0; }
double expectedAt(DataType dtype, int64_t i) {
  if (isUnsignedType(dtype)) {  // negative values wrap to the width
    return integerToDouble(wrapInteger(int64_t(valueAt(i)), dtype), dtype);
  }
  return dtype == DataType::Bool ? (valueAt(i) != 0.0 ? 1.0 : 0.0) : valueAt(i);
}

// Builds a producer tensor on the CPU (strides nullopt = NULL) and fills it with valueAt().
template <typename Managed>
Producer<Managed>* makeProducer(TypeCase type, std::vector<int64_t> shape,
                                std::optional<std::vector<int64_t>> strides, uint64_t byte_offset,
                                int* deleted) {
  auto p = std::make_unique<Producer<Managed>>();
  p->shape = std::move(shape);
  p->strides = strides.value_or(Tensor::contiguousStrides(p->shape));
  const int64_t item = type.bits / 8;
  int64_t extent = 1;
  for (size_t i = 0; i < p->shape.size(); ++i) extent += (p->shape[i] - 1) * p->strides[i];
  p->buffer.assign(size_t((int64_t(byte_offset) + extent * item) / 8 + 2), 0.0);
  p->deleted = deleted;

  dlpack::DLTensor& t = p->managed.dl_tensor;
  t.data = p->base();
  t.device = {dlpack::kDLCPU, 0};
  t.ndim = int32_t(p->shape.size());
  t.dtype = {type.code, type.bits, 1};
  t.shape = p->shape.empty() ? nullptr : p->shape.data();
  t.strides = strides.has_value() ? p->strides.data() : nullptr;
  t.byte_offset = byte_offset;
  p->managed.manager_ctx = p.get();
  p->managed.deleter = &Producer<Managed>::deleter;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    p->managed.version = {1, 0};
    p->managed.flags = 0;
  }

  // Write valueAt(linear) at every logical position, walking the index in row-major order.
  std::vector<int64_t> index(p->shape.size(), 0);
  int64_t numel = 1;
  for (int64_t s : p->shape) numel *= s;
  for (int64_t linear = 0; linear < numel; ++linear) {
    int64_t pos = 0;
    for (size_t d = 0; d < index.size(); ++d) pos += index[d] * p->strides[d];
    storeFromDouble(p->base() + byte_offset + pos * item, type.dtype, valueAt(linear));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < p->shape[d]) break;
      index[d] = 0;
    }
  }
  return p.release();
}

template <typename Managed>
Managed* exportAs(const Tensor& t) {
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    return toDLPackVersioned(t);
  } else {
    return toDLPack(t);
  }
}

void expectValues(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    ASSERT_EQ(t.getDoubleLinear(i), expectedAt(t.dtype(), i)) << t.dtype() << " element " << i;
  }
}

// Import a strided, offset producer tensor of every dtype, export it again, re-import the export:
// metadata and values survive, nothing is copied, and the producer's deleter runs exactly once.
template <typename Managed>
void roundTripEveryDtype() {
  for (const TypeCase& type : kTypeCases) {
    SCOPED_TRACE(dataTypeName(type.dtype));
    const uint64_t item = type.bits / 8;
    int deleted = 0;
    auto* producer =
        makeProducer<Managed>(type, {3, 4}, std::vector<int64_t>{1, 5}, 3 * item, &deleted);
    char* base = producer->base();

    Tensor t = fromDLPack(&producer->managed);
    EXPECT_EQ(t.dtype(), type.dtype);
    EXPECT_EQ(t.device(), Device::cpu());
    EXPECT_THAT(t.sizes(), ElementsAre(3, 4));
    EXPECT_THAT(t.strides(), ElementsAre(1, 5));
    EXPECT_EQ(t.offset(), 3);
    EXPECT_EQ(t.data(), base + 3 * item);
    EXPECT_FALSE(t.isContiguous());
    expectValues(t);

    Managed* exported = exportAs<Managed>(t);
    const dlpack::DLTensor& e = exported->dl_tensor;
    EXPECT_EQ(e.data, base);
    EXPECT_EQ(e.byte_offset, 3 * item);
    EXPECT_EQ(e.device.device_type, dlpack::kDLCPU);
    EXPECT_EQ(e.device.device_id, 0);
    EXPECT_EQ(e.ndim, 2);
    EXPECT_EQ(e.dtype.code, type.code);
    EXPECT_EQ(e.dtype.bits, type.bits);
    EXPECT_EQ(e.dtype.lanes, 1);
    EXPECT_THAT(std::vector<int64_t>(e.shape, e.shape + 2), ElementsAre(3, 4));
    ASSERT_NE(e.strides, nullptr);
    EXPECT_THAT(std::vector<int64_t>(e.strides, e.strides + 2), ElementsAre(1, 5));
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      EXPECT_EQ(exported->version.major, 1u);
      EXPECT_EQ(exported->flags, 0u);
    }

    Tensor back = fromDLPack(exported);
    EXPECT_EQ(back.data(), t.data());
    EXPECT_EQ(back.offset(), 3);
    EXPECT_EQ(back.strides(), t.strides());
    EXPECT_EQ(back.dtype(), type.dtype);
    expectValues(back);

    t = Tensor();
    EXPECT_EQ(deleted, 0) << "the re-imported export still uses the producer's memory";
    back = Tensor();
    EXPECT_EQ(deleted, 1);
  }
}

// Versioned round trip of every dtype keeps strides, byte_offset and the data pointer.
TEST(DLPackTest, VersionedRoundTripEveryDtype) { roundTripEveryDtype<DLManagedTensorVersioned>(); }

// Legacy (unversioned) round trip of every dtype keeps strides, byte_offset and the data pointer.
TEST(DLPackTest, LegacyRoundTripEveryDtype) { roundTripEveryDtype<DLManagedTensor>(); }

// A Loom tensor exported and re-imported aliases the same memory, and the export alone keeps the
// storage alive until its deleter runs.
TEST(DLPackTest, ExportKeepsStorageAlive) {
  Tensor base = Tensor::emptyStrided({4, 3}, {1, 4}, DataType::Float32);
  for (int64_t i = 0; i < base.numel(); ++i) base.setDoubleLinear(i, valueAt(i));
  std::weak_ptr<Storage> storage = base.storage();
  Tensor view(base.storage(), DataType::Float32, {3, 2}, {4, 1}, 1);  // offset, non-contiguous
  void* data = view.data();
  std::vector<double> expected;
  for (int64_t i = 0; i < view.numel(); ++i) expected.push_back(view.getDoubleLinear(i));

  DLManagedTensorVersioned* exported = toDLPackVersioned(view);
  base = Tensor();
  view = Tensor();
  EXPECT_FALSE(storage.expired());

  Tensor back = fromDLPack(exported);
  EXPECT_EQ(back.data(), data);
  EXPECT_THAT(back.sizes(), ElementsAre(3, 2));
  EXPECT_THAT(back.strides(), ElementsAre(4, 1));
  std::vector<double> got;
  for (int64_t i = 0; i < back.numel(); ++i) got.push_back(back.getDoubleLinear(i));
  EXPECT_THAT(got, ElementsAreArray(expected));
  back = Tensor();
  EXPECT_TRUE(storage.expired());
}

// A consumer that never imports the export releases the storage by calling its deleter.
TEST(DLPackTest, ExportDeleterReleasesStorage) {
  Tensor t = Tensor::empty({5}, DataType::Int64);
  std::weak_ptr<Storage> storage = t.storage();
  DLManagedTensor* legacy = toDLPack(t);
  DLManagedTensorVersioned* versioned = toDLPackVersioned(t);
  t = Tensor();
  EXPECT_FALSE(storage.expired());
  legacy->deleter(legacy);
  EXPECT_FALSE(storage.expired());
  versioned->deleter(versioned);
  EXPECT_TRUE(storage.expired());
}

// Writes through the imported tensor land in the producer's buffer (zero copy).
TEST(DLPackTest, ImportIsZeroCopy) {
  int deleted = 0;
  auto* producer =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[5], {2, 2}, std::nullopt, 0, &deleted);
  auto* raw = reinterpret_cast<float*>(producer->base());
  Tensor t = fromDLPack(&producer->managed);
  EXPECT_EQ(t.data(), raw);
  t.setDouble(std::vector<int64_t>{1, 0}, 42.0);
  EXPECT_EQ(raw[2], 42.0f);
  raw[3] = -7.0f;
  EXPECT_EQ(t.getDouble(std::vector<int64_t>{1, 1}), -7.0);
  t = Tensor();
  EXPECT_EQ(deleted, 1);
}

// The producer's deleter runs exactly once, after every Loom view and every Loom export is gone.
TEST(DLPackTest, DeleterRunsOnceWhenBothSidesRelease) {
  int deleted = 0;
  auto* producer =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[6], {3, 2}, std::nullopt, 0, &deleted);
  Tensor t = fromDLPack(&producer->managed);
  Tensor copy = t;
  Tensor permuted = t.permute(std::vector<int64_t>{1, 0});
  DLManagedTensor* exported = toDLPack(permuted);
  t = copy = permuted = Tensor();
  EXPECT_EQ(deleted, 0);
  exported->deleter(exported);
  EXPECT_EQ(deleted, 1);
}

// NULL strides mean compact row-major.
TEST(DLPackTest, NullStridesAreContiguous) {
  int deleted = 0;
  auto* producer =
      makeProducer<DLManagedTensor>(kTypeCases[2], {2, 3, 4}, std::nullopt, 0, &deleted);
  ASSERT_EQ(producer->managed.dl_tensor.strides, nullptr);
  Tensor t = fromDLPack(&producer->managed);
  EXPECT_THAT(t.strides(), ElementsAre(12, 4, 1));
  EXPECT_TRUE(t.isContiguous());
  expectValues(t);
}

// A byte_offset that is not a whole number of elements is folded into the storage base.
TEST(DLPackTest, UnalignedByteOffset) {
  int deleted = 0;
  auto* producer =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[1], {4}, std::nullopt, 0, &deleted);
  producer->managed.dl_tensor.byte_offset = 6;
  char* base = producer->base();
  Tensor t = fromDLPack(&producer->managed);
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.data(), base + 6);
  DLManagedTensorVersioned* exported = toDLPackVersioned(t);
  EXPECT_EQ(static_cast<char*>(exported->dl_tensor.data) + exported->dl_tensor.byte_offset,
            base + 6);
  exported->deleter(exported);
}

// 0-D tensors (NULL shape) and empty tensors (NULL data) import.
TEST(DLPackTest, ScalarAndEmptyTensors) {
  int deleted = 0;
  auto* scalar =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[6], {}, std::nullopt, 0, &deleted);
  Tensor s = fromDLPack(&scalar->managed);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.getDoubleLinear(0), valueAt(0));

  auto* empty =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[5], {0, 3}, std::nullopt, 0, &deleted);
  empty->managed.dl_tensor.data = nullptr;
  Tensor e = fromDLPack(&empty->managed);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_THAT(e.sizes(), ElementsAre(0, 3));
  s = e = Tensor();
  EXPECT_EQ(deleted, 2);
}

// A NULL deleter is allowed: Loom then frees nothing.
TEST(DLPackTest, NullDeleterIsAllowed) {
  int deleted = 0;
  auto* producer =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[5], {2}, std::nullopt, 0, &deleted);
  producer->managed.deleter = nullptr;
  Tensor t = fromDLPack(&producer->managed);
  t = Tensor();
  EXPECT_EQ(deleted, 0);
  Producer<DLManagedTensorVersioned>::deleter(&producer->managed);
}

// CUDA devices map to Device::cuda(id) both ways; pinned host memory imports as a CPU tensor.
TEST(DLPackTest, DeviceMapping) {
  int deleted = 0;
  auto* producer =
      makeProducer<DLManagedTensorVersioned>(kTypeCases[5], {4}, std::nullopt, 0, &deleted);
  producer->managed.dl_tensor.device = {dlpack::kDLCUDA, 3};
  Tensor t = fromDLPack(&producer->managed);  // the memory is only addressed, never read
  EXPECT_EQ(t.device(), Device::cuda(3));
  DLManagedTensorVersioned* exported = toDLPackVersioned(t);
  EXPECT_EQ(exported->dl_tensor.device.device_type, dlpack::kDLCUDA);
  EXPECT_EQ(exported->dl_tensor.device.device_id, 3);
  exported->deleter(exported);

  auto* managed_mem = makeProducer<DLManagedTensor>(kTypeCases[5], {4}, std::nullopt, 0, &deleted);
  managed_mem->managed.dl_tensor.device = {dlpack::kDLCUDAManaged, 1};
  EXPECT_EQ(fromDLPack(&managed_mem->managed).device(), Device::cuda(1));

  auto* pinned = makeProducer<DLManagedTensor>(kTypeCases[5], {4}, std::nullopt, 0, &deleted);
  pinned->managed.dl_tensor.device = {dlpack::kDLCUDAHost, 0};
  Tensor h = fromDLPack(&pinned->managed);
  EXPECT_EQ(h.device(), Device::cpu());
  expectValues(h);
}

// Runs an import that must fail; checks the caller still owns the tensor, then releases it.
template <typename Managed>
std::string importError(Producer<Managed>* producer) {
  std::string message;
  try {
    fromDLPack(&producer->managed);
    ADD_FAILURE() << "fromDLPack did not throw";
  } catch (const UserError& e) {
    message = e.message();
  }
  int* deleted = producer->deleted;  // the producer frees itself in its deleter
  int before = *deleted;
  producer->managed.deleter(&producer->managed);
  EXPECT_EQ(*deleted, before + 1) << "a failed import must not call the deleter";
  return message;
}

Producer<DLManagedTensorVersioned>* floatProducer(int* deleted) {
  return makeProducer<DLManagedTensorVersioned>(kTypeCases[5], {2, 2}, std::nullopt, 0, deleted);
}

// Unsupported dtypes are rejected with the dtype named and the supported list given.
TEST(DLPackTest, UnsupportedDtypeIsError) {
  int deleted = 0;
  struct Bad {
    dlpack::DLDataType dtype;
    const char* named;
  };
  for (Bad bad : {Bad{{dlpack::kDLUInt, 128, 1}, "(kDLUInt, 128 bits)"},
                  Bad{{dlpack::kDLFloat, 8, 1}, "(kDLFloat, 8 bits)"},
                  Bad{{dlpack::kDLInt, 128, 1}, "(kDLInt, 128 bits)"},
                  Bad{{dlpack::kDLComplex, 32, 1}, "(kDLComplex, 32 bits)"},
                  Bad{{dlpack::kDLBfloat, 32, 1}, "(kDLBfloat, 32 bits)"},
                  Bad{{dlpack::kDLFloat8_e5m2, 16, 1}, "(kDLFloat8_e5m2, 16 bits)"},
                  Bad{{11, 8, 1}, "(code 11, 8 bits)"}}) {  // kDLFloat8_e4m3fnuz
    auto* p = floatProducer(&deleted);
    p->managed.dl_tensor.dtype = bad.dtype;
    std::string msg = importError(p);
    EXPECT_THAT(msg, HasSubstr(std::string("DLPack: unsupported dtype ") + bad.named));
    EXPECT_THAT(msg, HasSubstr("Loom supports bool (kDLBool, 8 bits)"));
  }
  EXPECT_EQ(deleted, 7);
}

// Vector dtypes (lanes != 1) are rejected.
TEST(DLPackTest, LanesIsError) {
  int deleted = 0;
  auto* p = floatProducer(&deleted);
  p->managed.dl_tensor.dtype.lanes = 4;
  std::string msg = importError(p);
  EXPECT_THAT(msg, HasSubstr("vector dtype with 4 lanes (kDLFloat, 32 bits)"));
  EXPECT_THAT(msg, HasSubstr("Loom needs lanes == 1"));
}

// Major versions other than 1 are rejected before the DLTensor is read.
TEST(DLPackTest, UnsupportedVersionIsError) {
  int deleted = 0;
  auto* p = floatProducer(&deleted);
  p->managed.version = {2, 0};
  p->managed.dl_tensor.ndim = -5;  // garbage past `flags` must not be looked at
  p->managed.dl_tensor.dtype.lanes = 7;
  std::string msg = importError(p);
  EXPECT_THAT(msg, HasSubstr("DLPack: unsupported version 2.0"));
  EXPECT_THAT(msg, HasSubstr("Loom reads DLPack 1.x"));

  auto* zero = floatProducer(&deleted);
  zero->managed.version = {0, 8};
  EXPECT_THAT(importError(zero), HasSubstr("unsupported version 0.8"));

  auto* minor = floatProducer(&deleted);  // any 1.x minor version is accepted
  minor->managed.version = {1, 7};
  EXPECT_NO_THROW(fromDLPack(&minor->managed));
  EXPECT_EQ(deleted, 3);
}

// Devices other than CPU / CUDA are rejected with the device named.
TEST(DLPackTest, UnsupportedDeviceIsError) {
  int deleted = 0;
  auto* p = floatProducer(&deleted);
  p->managed.dl_tensor.device = {dlpack::kDLOpenCL, 0};
  std::string msg = importError(p);
  EXPECT_THAT(msg, HasSubstr("unsupported device type 4 (kDLOpenCL)"));
  EXPECT_THAT(msg, HasSubstr("Loom accepts kDLCPU, kDLCUDAHost, kDLCUDA and kDLCUDAManaged"));

  auto* unknown = floatProducer(&deleted);
  unknown->managed.dl_tensor.device = {dlpack::DLDeviceType(99), 0};
  EXPECT_THAT(importError(unknown), HasSubstr("unsupported device type 99 (unknown)"));

  auto* negative = floatProducer(&deleted);
  negative->managed.dl_tensor.device = {dlpack::kDLCUDA, -1};
  EXPECT_THAT(importError(negative), HasSubstr("negative CUDA device id -1"));
}

// Malformed tensors (negative strides or sizes, NULL shape or data) are rejected.
TEST(DLPackTest, MalformedTensorIsError) {
  int deleted = 0;
  auto* p =
      makeProducer<DLManagedTensor>(kTypeCases[5], {2, 3}, std::vector<int64_t>{3, 1}, 0, &deleted);
  p->strides[1] = -1;
  EXPECT_THAT(importError(p), HasSubstr("negative stride -1 at dimension 1"));

  auto* q = makeProducer<DLManagedTensor>(kTypeCases[5], {2, 3}, std::nullopt, 0, &deleted);
  q->managed.dl_tensor.shape = nullptr;
  EXPECT_THAT(importError(q), HasSubstr("shape is NULL for a 2-D tensor"));

  auto* r = makeProducer<DLManagedTensor>(kTypeCases[5], {2, 3}, std::nullopt, 0, &deleted);
  r->shape[0] = -2;
  EXPECT_THAT(importError(r), HasSubstr("negative size -2 at dimension 0"));

  auto* s = makeProducer<DLManagedTensor>(kTypeCases[5], {2, 3}, std::nullopt, 0, &deleted);
  s->managed.dl_tensor.data = nullptr;
  EXPECT_THAT(importError(s), HasSubstr("data is NULL for a tensor of 6 elements"));
  EXPECT_EQ(deleted, 4);

  try {
    fromDLPack(static_cast<DLManagedTensorVersioned*>(nullptr));
    ADD_FAILURE() << "fromDLPack(nullptr) did not throw";
  } catch (const UserError& e) {
    EXPECT_THAT(e.message(), HasSubstr("the managed tensor is NULL"));
  }
}

// A producer tensor whose sizes or strides overflow 64 bits once multiplied out (an expanded view
// such as torch.zeros(1, 1).expand(2**31, 2**31) of f32: 2^62 elements, 2^64 bytes). Import
// refuses it naming the quantity, and the producer keeps ownership: its deleter has not run when
// fromDLPack throws, and runs exactly once when the caller calls it (before the fix, the Tensor
// constructor threw after a Storage had taken the deleter, so it ran twice).
template <typename Managed>
void overflowingSizesKeepOwnership() {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    TypeCase type;
    const char* message;
  };
  const int64_t k31 = int64_t(1) << 31;
  const int64_t k32 = int64_t(1) << 32;
  const int64_t k40 = int64_t(1) << 40;
  const Case cases[] = {
      {{k31, k31},
       {0, 0},
       kTypeCases[5],
       "DLPack: a [2147483648, 2147483648] f32 tensor: its byte size overflows 64 bits"},
      {{k32, k32},
       {0, 0},
       kTypeCases[0],
       "DLPack: a [4294967296, 4294967296] bool tensor: its element count overflows 64 bits"},
      {{k40}, {k40}, kTypeCases[0], "the memory its strides span overflows 64 bits"},
      {{int64_t(1) << 58}, {16}, kTypeCases[6], "the bytes its strides span overflows 64 bits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    struct Counted {
      Managed managed{};
      int deleted = 0;
    } producer;
    double storage = 0;
    std::vector<int64_t> shape = c.shape;
    std::vector<int64_t> strides = c.strides;
    dlpack::DLTensor& t = producer.managed.dl_tensor;
    t.data = &storage;
    t.device = {dlpack::kDLCPU, 0};
    t.ndim = int32_t(shape.size());
    t.dtype = {c.type.code, c.type.bits, 1};
    t.shape = shape.data();
    t.strides = strides.data();
    producer.managed.manager_ctx = &producer;
    producer.managed.deleter = [](Managed* self) {
      ++static_cast<Counted*>(self->manager_ctx)->deleted;
    };
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      producer.managed.version = {1, 0};
    }
    try {
      fromDLPack(&producer.managed);
      ADD_FAILURE() << "fromDLPack did not throw";
    } catch (const UserError& e) {
      EXPECT_THAT(e.message(), HasSubstr(c.message));
    }
    EXPECT_EQ(producer.deleted, 0) << "a failed import must leave ownership with the producer";
    producer.managed.deleter(&producer.managed);
    EXPECT_EQ(producer.deleted, 1);
  }
}

TEST(DLPackTest, OverflowingSizesKeepOwnershipVersioned) {
  overflowingSizesKeepOwnership<DLManagedTensorVersioned>();
}

TEST(DLPackTest, OverflowingSizesKeepOwnershipLegacy) {
  overflowingSizesKeepOwnership<DLManagedTensor>();
}

// Exporting an undefined tensor is a user error.
TEST(DLPackTest, ExportUndefinedIsError) {
  try {
    toDLPackVersioned(Tensor());
    ADD_FAILURE() << "toDLPackVersioned did not throw";
  } catch (const UserError& e) {
    EXPECT_THAT(e.message(), HasSubstr("cannot export an undefined tensor"));
  }
}

}  // namespace
}  // namespace loom
