// SPDX-License-Identifier: Apache-2.0
// Tests of loom::Tensor: layout, host element access, views, copies, fills and errors.
#include "loom/tensor/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "loom/support/error.h"
#include "loom/tensor/half.h"
#include "loom/tensor/tensor_metadata.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename F>
std::string userErrorOf(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

// Raw bytes of every element in logical row-major order, for bitwise comparisons.
std::vector<uint8_t> elementBytes(const Tensor& t) {
  Tensor c = t.contiguous();
  auto p = static_cast<const uint8_t*>(c.data());
  return {p, p + c.numel() * int64_t(c.itemSize())};
}

// empty() makes a row-major host tensor with offset 0.
TEST(TensorTest, EmptyIsContiguousRowMajor) {
  Tensor t = Tensor::empty({2, 3, 4}, DataType::Float32);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.dtype(), DataType::Float32);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_THAT(t.sizes(), ElementsAre(2, 3, 4));
  EXPECT_THAT(t.strides(), ElementsAre(12, 4, 1));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.itemSize(), 4u);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_TRUE(t.isContiguous());
  EXPECT_GE(t.storage()->nbytes(), 24u * 4u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);  // host storage is 64-byte aligned
}

// Row-major strides treat size-0 dimensions as size 1, and a 0-D tensor has one element.
TEST(TensorTest, ContiguousStridesEdgeCases) {
  EXPECT_THAT(Tensor::contiguousStrides(std::vector<int64_t>{2, 0, 3}), ElementsAre(3, 3, 1));
  EXPECT_TRUE(Tensor::contiguousStrides(std::vector<int64_t>{}).empty());
  Tensor scalar = Tensor::empty({}, DataType::Float64);
  EXPECT_EQ(scalar.numel(), 1);
  scalar.fill(2.5);
  EXPECT_EQ(scalar.getDoubleLinear(0), 2.5);
  Tensor zero = Tensor::empty({3, 0}, DataType::Int32);
  EXPECT_EQ(zero.numel(), 0);
  EXPECT_NO_THROW(zero.fill(1.0));
  EXPECT_EQ(zero.contiguous().numel(), 0);
}

// emptyStrided() allocates exactly the span its strides reach and keeps the strides.
TEST(TensorTest, EmptyStridedKeepsStrides) {
  Tensor t = Tensor::emptyStrided({2, 3}, {1, 2}, DataType::Float32);  // column-major
  EXPECT_THAT(t.strides(), ElementsAre(1, 2));
  EXPECT_EQ(t.storage()->nbytes(), (1 + 1 * 1 + 2 * 2) * 4u);
  EXPECT_FALSE(t.isContiguous());
  Tensor padded = Tensor::emptyStrided({2, 3}, {8, 1}, DataType::Int64);
  EXPECT_EQ(padded.storage()->nbytes(), (1 + 8 + 2) * 8u);
  EXPECT_FALSE(padded.isContiguous());
}

// isContiguous ignores the strides of size-1 dimensions and rejects gaps and transposes.
TEST(TensorTest, IsContiguous) {
  auto storage = Storage::allocateHost(1024);
  EXPECT_TRUE(Tensor(storage, DataType::Float32, {2, 1, 3}, {3, 99, 1}).isContiguous());
  EXPECT_TRUE(Tensor(storage, DataType::Float32, {2, 3}, {3, 1}, 7).isContiguous());
  EXPECT_FALSE(Tensor(storage, DataType::Float32, {2, 3}, {4, 1}).isContiguous());
  EXPECT_FALSE(Tensor(storage, DataType::Float32, {2, 3}, {1, 2}).isContiguous());
  EXPECT_FALSE(Tensor(storage, DataType::Float32, {3}, {2}).isContiguous());
}

// getDouble / setDouble address storage at offset + sum(index * stride) elements.
TEST(TensorTest, ElementAccessUsesStridesAndOffset) {
  auto storage = Storage::allocateHost(64 * sizeof(float));
  std::memset(storage->data(), 0, 64 * sizeof(float));
  Tensor t(storage, DataType::Float32, {2, 3}, {1, 4}, 5);
  const std::vector<int64_t> index{1, 2};
  t.setDouble(index, 7.5);
  auto raw = static_cast<const float*>(storage->data());
  EXPECT_EQ(raw[5 + 1 * 1 + 2 * 4], 7.5f);
  EXPECT_EQ(t.getDouble(index), 7.5);
  EXPECT_EQ(t.data(), static_cast<void*>(static_cast<float*>(storage->data()) + 5));
  // Linear indices walk the logical sizes in row-major order: linear 5 is [1, 2].
  EXPECT_EQ(t.getDoubleLinear(5), 7.5);
  t.setDoubleLinear(1, -3.0);  // [0, 1] -> storage 5 + 4
  EXPECT_EQ(raw[9], -3.0f);
  EXPECT_EQ(t.getDouble(std::vector<int64_t>{0, 1}), -3.0);
}

// Stores round to the element type: half and bfloat16 to nearest even, ints toward zero.
TEST(TensorTest, StoresRoundToElementType) {
  for (DataType dtype : kAllDataTypes) {
    Tensor t = Tensor::empty({1}, dtype);
    t.setDoubleLinear(0, 2.75);
    // 2.75 needs three mantissa bits: e5m2 (two) rounds the tie to even, 3.0.
    double expected = dtype == DataType::Bool      ? 1.0
                      : isIntegralType(dtype)      ? 2.0
                      : dtype == DataType::Float16 ? double(halfBitsToFloat(doubleToHalfBits(2.75)))
                      : dtype == DataType::Float8_e5m2 ? 3.0
                                                       : 2.75;
    EXPECT_EQ(t.getDoubleLinear(0), expected) << dtype;
  }
  Tensor h = Tensor::empty({1}, DataType::Float16);
  h.setDoubleLinear(0, 0.1);
  EXPECT_EQ(*h.dataAs<uint16_t>(), doubleToHalfBits(0.1));
  Tensor b = Tensor::empty({1}, DataType::BFloat16);
  b.setDoubleLinear(0, 1.0 + 0x1p-8 + 0x1p-40);  // rounded once, from double
  EXPECT_EQ(*b.dataAs<uint16_t>(), 0x3F81);
}

// Float-to-int stores truncate toward zero and saturate; NaN becomes 0 (CUDA's rules).
TEST(TensorTest, IntegerStoresSaturate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  int32_t i32 = 1;
  storeFromDouble(&i32, DataType::Int32, nan);
  EXPECT_EQ(i32, 0);
  storeFromDouble(&i32, DataType::Int32, 1e30);
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::max());
  storeFromDouble(&i32, DataType::Int32, -1e30);
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::min());
  storeFromDouble(&i32, DataType::Int32, 2147483647.9);
  EXPECT_EQ(i32, 2147483647);
  storeFromDouble(&i32, DataType::Int32, -2.9);
  EXPECT_EQ(i32, -2);
  int64_t i64 = 1;
  storeFromDouble(&i64, DataType::Int64, nan);
  EXPECT_EQ(i64, 0);
  storeFromDouble(&i64, DataType::Int64, 1e30);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::max());
  storeFromDouble(&i64, DataType::Int64, 0x1p63);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::max());
  storeFromDouble(&i64, DataType::Int64, -inf);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::min());
  storeFromDouble(&i64, DataType::Int64, 0x1p63 - 1024);  // largest double below 2^63 is exact
  EXPECT_EQ(i64, int64_t(0x7FFFFFFFFFFFFC00));
  storeFromDouble(&i64, DataType::Int64, -7.5);
  EXPECT_EQ(i64, -7);
  bool flag = false;
  storeFromDouble(&flag, DataType::Bool, -0.5);
  EXPECT_TRUE(flag);
  storeFromDouble(&flag, DataType::Bool, -0.0);
  EXPECT_FALSE(flag);
}

// Floats to the narrow and unsigned integers (docs/ops.md, "Integer types"): truncation toward
// zero, then a wrap to the width, as torch on the CPU for every value in range (-1.0 is 255 as
// u8); UInt64 takes [2^63, 2^64) exactly and saturates above; NaN gives 0.
TEST(TensorTest, FloatsToNarrowAndUnsignedIntegersWrap) {
  struct Case {
    DataType dtype;
    double v;
    int64_t want;  // the int64 form of data_type.h
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Case c : {Case{DataType::UInt8, -1.0, 255}, Case{DataType::UInt8, -300.7, 212},
                 Case{DataType::UInt8, 70000.0, 112}, Case{DataType::UInt8, nan, 0},
                 Case{DataType::Int8, 200.0, -56}, Case{DataType::Int8, -129.0, 127},
                 Case{DataType::Int16, 70000.0, 4464}, Case{DataType::Int16, -70000.0, -4464},
                 Case{DataType::UInt16, -1.5, 65535}, Case{DataType::UInt32, -129.0, 4294967167},
                 Case{DataType::UInt32, 4294967296.0, 0}, Case{DataType::UInt64, -1.0, -1},
                 Case{DataType::UInt64, 1e19, int64_t(uint64_t(1e19))},
                 Case{DataType::UInt64, 3e19, -1}, Case{DataType::UInt64, nan, 0},
                 Case{DataType::Int32, 1e30, std::numeric_limits<int32_t>::max()}}) {
    EXPECT_EQ(floatToInteger(c.v, c.dtype), c.want) << c.dtype << " " << c.v;
    alignas(8) unsigned char buf[8] = {};
    storeFromDouble(buf, c.dtype, c.v);
    EXPECT_EQ(loadInteger(buf, c.dtype), c.want) << c.dtype << " " << c.v;
  }
  // UInt64 reads back as its unsigned value.
  alignas(8) unsigned char buf[8] = {};
  storeInteger(buf, DataType::UInt64, -1);
  EXPECT_EQ(loadAsDouble(buf, DataType::UInt64), 18446744073709551616.0);
}

// The names and sizes of every type: parseDataType reads back dataTypeName and the long names.
TEST(DataTypeTest, NamesParseAndSizes) {
  for (DataType dtype : kAllDataTypes) {
    EXPECT_EQ(parseDataType(dataTypeName(dtype)), dtype) << dtype;
  }
  struct Named {
    const char* name;
    const char* long_name;
    DataType dtype;
    size_t size;
    bool is_unsigned;
  };
  for (Named n : {Named{"i8", "int8", DataType::Int8, 1, false},
                  Named{"i16", "int16", DataType::Int16, 2, false},
                  Named{"u8", "uint8", DataType::UInt8, 1, true},
                  Named{"u16", "uint16", DataType::UInt16, 2, true},
                  Named{"u32", "uint32", DataType::UInt32, 4, true},
                  Named{"u64", "uint64", DataType::UInt64, 8, true}}) {
    EXPECT_EQ(dataTypeName(n.dtype), n.name);
    EXPECT_EQ(parseDataType(n.long_name), n.dtype) << n.long_name;
    EXPECT_EQ(dataTypeSize(n.dtype), n.size) << n.name;
    EXPECT_EQ(integerBits(n.dtype), int(n.size * 8)) << n.name;
    EXPECT_TRUE(isIntegralType(n.dtype)) << n.name;
    EXPECT_EQ(isUnsignedType(n.dtype), n.is_unsigned) << n.name;
    EXPECT_FALSE(isFloatingType(n.dtype)) << n.name;
  }
  EXPECT_FALSE(isUnsignedType(DataType::Bool));
  EXPECT_FALSE(isIntegralType(DataType::Bool));
  EXPECT_EQ(parseDataType("u128"), std::nullopt);
  EXPECT_EQ(wrapInteger(255, DataType::Int8), -1);
  EXPECT_EQ(wrapInteger(-1, DataType::UInt16), 65535);
  EXPECT_EQ(wrapInteger(-1, DataType::UInt64), -1);  // its bits
  EXPECT_EQ(integerToDouble(-1, DataType::UInt64), 18446744073709551616.0);
}

// permute() returns a view with permuted sizes and strides over the same storage.
TEST(TensorTest, PermuteIsAView) {
  Tensor t = Tensor::empty({2, 3, 4}, DataType::Int32);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, double(i));
  const std::vector<int64_t> dims{2, 0, -2};
  Tensor p = t.permute(dims);
  EXPECT_THAT(p.sizes(), ElementsAre(4, 2, 3));
  EXPECT_THAT(p.strides(), ElementsAre(1, 12, 4));
  EXPECT_EQ(p.storage(), t.storage());
  EXPECT_EQ(p.data(), t.data());
  EXPECT_FALSE(p.isContiguous());
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        EXPECT_EQ(p.getDouble(std::vector<int64_t>{k, i, j}),
                  t.getDouble(std::vector<int64_t>{i, j, k}));
      }
    }
  }
  p.setDouble(std::vector<int64_t>{3, 1, 2}, -1.0);  // writes through to t
  EXPECT_EQ(t.getDouble(std::vector<int64_t>{1, 2, 3}), -1.0);
}

// contiguous() copies a strided view into new row-major storage with the same values.
TEST(TensorTest, ContiguousCopies) {
  Tensor t = Tensor::empty({3, 5}, DataType::Float64);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, 0.5 * double(i));
  const std::vector<int64_t> dims{1, 0};
  Tensor p = t.permute(dims);
  Tensor c = p.contiguous();
  EXPECT_TRUE(c.isContiguous());
  EXPECT_THAT(c.sizes(), ElementsAre(5, 3));
  EXPECT_THAT(c.strides(), ElementsAre(3, 1));
  EXPECT_NE(c.storage(), t.storage());
  for (int64_t i = 0; i < c.numel(); ++i) EXPECT_EQ(c.getDoubleLinear(i), p.getDoubleLinear(i));
  c.setDoubleLinear(0, 100.0);  // the copy is independent
  EXPECT_EQ(t.getDoubleLinear(0), 0.0);
  // Values are copied bit for bit, NaN payloads included.
  Tensor h = Tensor::emptyStrided({2, 2}, {1, 2}, DataType::Float16);
  for (int64_t i = 0; i < 4; ++i) h.setDoubleLinear(i, double(i) - 1.5);
  EXPECT_EQ(elementBytes(h), elementBytes(h.contiguous()));
}

// fill() sets every element of a strided view, rounded to the element type.
TEST(TensorTest, FillSetsEveryElement) {
  Tensor t = Tensor::emptyStrided({3, 2}, {1, 4}, DataType::Float16);
  t.fill(0.1);
  const double expected = halfBitsToFloat(doubleToHalfBits(0.1));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.getDoubleLinear(i), expected);
  Tensor b = Tensor::empty({4}, DataType::Bool);
  b.fill(2.0);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(b.getDoubleLinear(i), 1.0);
}

// fillRandom is deterministic per seed and stays in its documented ranges.
TEST(TensorTest, FillRandomDeterministicAndInRange) {
  for (DataType dtype : kAllDataTypes) {
    Tensor a = Tensor::empty({1000}, dtype), b = Tensor::empty({1000}, dtype),
           c = Tensor::empty({1000}, dtype);
    fillRandom(a, 42);
    fillRandom(b, 42);
    fillRandom(c, 43);
    EXPECT_EQ(elementBytes(a), elementBytes(b)) << dtype;
    EXPECT_NE(elementBytes(a), elementBytes(c)) << dtype;
    std::set<double> distinct;
    for (int64_t i = 0; i < a.numel(); ++i) {
      double v = a.getDoubleLinear(i);
      distinct.insert(v);
      if (isFloatingType(dtype)) {
        EXPECT_TRUE(v >= -1.0 && v <= 1.0) << dtype << " " << v;
      } else if (isComplexType(dtype)) {  // each part drawn as a float is
        const std::complex<double> z = a.getComplexLinear(i);
        EXPECT_TRUE(std::abs(z.real()) <= 1.0 && std::abs(z.imag()) <= 1.0) << dtype << " " << v;
        EXPECT_NE(z.imag(), 0.0) << dtype;
      } else if (isIntegralType(dtype)) {
        const double lo = isUnsignedType(dtype) ? 0.0 : -8.0;
        EXPECT_TRUE(v >= lo && v <= lo + 15.0 && v == std::trunc(v)) << dtype << " " << v;
      } else {
        EXPECT_TRUE(v == 0.0 || v == 1.0) << v;
      }
    }
    // The 8-bit floats hold about 120 values in [-1, 1], few of them near 0.
    size_t expected_distinct = isBooleanType(dtype)    ? 2
                               : isIntegralType(dtype) ? 16
                               : isFloat8Type(dtype)   ? 48
                                                       : 100;
    EXPECT_GE(distinct.size(), expected_distinct) << dtype;
  }
}

// poison makes floats NaN and integers a recognizable sentinel.
TEST(TensorTest, PoisonMarksEveryElement) {
  for (DataType dtype : kAllDataTypes) {
    Tensor t = Tensor::emptyStrided({2, 3}, {1, 2}, dtype);
    t.fill(0.0);
    poison(t);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.getDoubleLinear(i);
      if (isComplexType(dtype)) {
        EXPECT_TRUE(std::isnan(v) && std::isnan(t.getComplexLinear(i).imag())) << dtype;
      } else if (isFloatingType(dtype)) {
        EXPECT_TRUE(std::isnan(v)) << dtype;
      } else if (isIntegralType(dtype)) {
        // -1234567 wrapped to the type's width (UInt64: 2^64 - 1234567, rounded to double)
        EXPECT_EQ(v, integerToDouble(wrapInteger(-1234567, dtype), dtype)) << dtype;
      } else {
        EXPECT_NE(v, 0.0);
      }
    }
  }
}

// fromBlob wraps caller memory and runs the deleter once, when the last view goes.
TEST(TensorTest, FromBlobDeleterRunsOnce) {
  float data[6] = {0, 1, 2, 3, 4, 5};
  int deleted = 0;
  {
    Tensor t =
        Tensor::fromBlob(data, {2, 3}, {3, 1}, DataType::Float32, Device::cpu(), [&](void* p) {
          EXPECT_EQ(p, data);
          ++deleted;
        });
    EXPECT_EQ(t.data(), data);
    EXPECT_EQ(t.getDouble(std::vector<int64_t>{1, 2}), 5.0);
    const std::vector<int64_t> dims{1, 0};
    Tensor view = t.permute(dims);
    t = Tensor();
    EXPECT_EQ(deleted, 0);
    EXPECT_EQ(view.getDouble(std::vector<int64_t>{2, 1}), 5.0);
  }
  EXPECT_EQ(deleted, 1);
}

// Describe strings and device printing name sizes, dtype and device.
TEST(TensorTest, DescribeAndDevice) {
  EXPECT_EQ(describe(Tensor::empty({2, 3}, DataType::Float32)), "[2, 3] f32 on cpu");
  EXPECT_EQ(describe(Tensor()), "undefined tensor");
  std::ostringstream os;
  os << Device::cuda(1);
  EXPECT_EQ(os.str(), "cuda:1");
  EXPECT_FALSE(Tensor().defined());
}

// Negative sizes are rejected with a message naming the size.
TEST(TensorTest, NegativeSizeIsError) {
  EXPECT_THAT(userErrorOf([] {
                Tensor::empty({2, -1}, DataType::Float32);
              }),
              HasSubstr("negative size -1"));
  auto storage = Storage::allocateHost(64);
  EXPECT_THAT(userErrorOf([&] { Tensor(storage, DataType::Float32, {-3}, {1}); }),
              HasSubstr("tensor size -3 at dimension 0 is negative"));
  EXPECT_THAT(userErrorOf([&] {
                Tensor(storage, DataType::Float32, {2, 3}, {1});
              }),
              HasSubstr("2 sizes but 1 strides"));
  EXPECT_THAT(userErrorOf([] { Tensor::emptyStrided({2}, {-1}, DataType::Float32); }),
              HasSubstr("negative stride -1"));
}

// permute rejects repeated, out-of-range or missing dimensions.
TEST(TensorTest, BadPermuteIsError) {
  Tensor t = Tensor::empty({2, 3}, DataType::Float32);
  EXPECT_THAT(userErrorOf([&] {
                t.permute(std::vector<int64_t>{0, 0});
              }),
              HasSubstr("permute: [0, 0] is not a permutation of 2 dimensions"));
  EXPECT_THAT(userErrorOf([&] {
                t.permute(std::vector<int64_t>{0, 2});
              }),
              HasSubstr("is not a permutation"));
  EXPECT_THAT(userErrorOf([&] { t.permute(std::vector<int64_t>{0}); }),
              HasSubstr("permute: 1 dims for a 2-D tensor"));
}

// Out-of-range element indices and dimensions are user errors.
TEST(TensorTest, IndexErrors) {
  Tensor t = Tensor::empty({2, 3}, DataType::Float32);
  EXPECT_THAT(userErrorOf([&] {
                t.getDouble(std::vector<int64_t>{0, 3});
              }),
              HasSubstr("index 3 out of range [0, 3) at dimension 1"));
  EXPECT_THAT(userErrorOf([&] { t.getDouble(std::vector<int64_t>{0}); }),
              HasSubstr("index of rank 1 for a 2-D tensor"));
  EXPECT_THAT(userErrorOf([&] { t.size(2); }), HasSubstr("dimension 2 out of range"));
  EXPECT_THAT(userErrorOf([] { Tensor().data(); }), HasSubstr("undefined tensor"));
}

// Host-only operations refuse device tensors with a message naming the device.
TEST(TensorTest, HostOnlyOperationsRejectDeviceTensors) {
  // The pointer is never dereferenced: every access must be refused first.
  static char fake_device_memory[64];
  Tensor d = Tensor::fromBlob(fake_device_memory, {4}, {1}, DataType::Float32, Device::cuda(0));
  EXPECT_EQ(d.device(), Device::cuda(0));
  EXPECT_THAT(userErrorOf([&] { d.fill(1.0); }), HasSubstr("fill needs a host tensor"));
  EXPECT_THAT(userErrorOf([&] { d.getDoubleLinear(0); }), HasSubstr("cuda:0"));
  EXPECT_THAT(userErrorOf([&] { d.contiguous(); }), HasSubstr("needs a host tensor"));
}

// Sizes whose products overflow int64 are UserErrors, never a wrapped (small) allocation: an
// element count past 2^63, a byte size past it, and the strides of such a shape. A zero size
// makes a shape empty (its strides must still fit).
TEST(TensorTest, SizeProductsThatOverflowAreErrors) {
  const int64_t big = int64_t(1) << 62;
  EXPECT_THAT(userErrorOf([&] { Tensor::empty({big + 1}, DataType::Float32); }),
              HasSubstr("overflows 64 bits"));
  EXPECT_THAT(userErrorOf([&] { Tensor::empty({int64_t(1) << 32, int64_t(1) << 32},
                                              DataType::Float32); }),
              HasSubstr("overflows 64 bits"));
  EXPECT_THAT(userErrorOf([&] { Tensor::empty({3, big, 5}, DataType::Bool); }),
              HasSubstr("overflows 64 bits"));
  Tensor empty = Tensor::empty({big, 0, big}, DataType::Float32);
  EXPECT_EQ(empty.numel(), 0);
  int64_t x = 0;
  EXPECT_THAT(userErrorOf([&] {
                Tensor::fromBlob(&x, {big, 4}, {1, big}, DataType::Bool, Device::cpu());
              }),
              HasSubstr("overflows 64 bits"));
}

// A bool element whose byte is not 0 or 1 (a uint8 tensor viewed as bool) reads as true, as in
// torch: the reference evaluator and every host-side read go through loadAsDouble.
TEST(TensorTest, BoolBytesOtherThanZeroOrOneAreTrue) {
  alignas(8) unsigned char bytes[8] = {0, 1, 2, 3, 127, 128, 254, 255};
  Tensor t = Tensor::fromBlob(bytes, {8}, {1}, DataType::Bool, Device::cpu());
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(t.getDoubleLinear(i), i == 0 ? 0.0 : 1.0) << "byte " << int(bytes[i]);
    EXPECT_EQ(loadAsDouble(&bytes[i], DataType::Bool), i == 0 ? 0.0 : 1.0);
  }
}

// fromBlob that throws leaves the memory with the caller: the deleter has not run. Before the
// fix, an expanded view whose byte size overflows (extent 1, 2^64 bytes of elements) built its
// Storage first and ran the deleter when the Tensor constructor threw.
TEST(TensorTest, FromBlobThatThrowsDoesNotRunTheDeleter) {
  float x = 0;
  int deleted = 0;
  auto deleter = [&](void*) { ++deleted; };
  const int64_t k31 = int64_t(1) << 31;
  EXPECT_THAT(userErrorOf([&] {
                Tensor::fromBlob(&x, {k31, k31}, {0, 0}, DataType::Float32, Device::cpu(), deleter);
              }),
              HasSubstr("fromBlob: the byte size of a tensor overflows 64 bits"));
  EXPECT_THAT(userErrorOf([&] {
                Tensor::fromBlob(&x, {2, 2}, {1}, DataType::Float32, Device::cpu(), deleter);
              }),
              HasSubstr("fromBlob: 2 sizes but 1 strides"));
  EXPECT_THAT(userErrorOf([&] {
                Tensor::fromBlob(&x, {-1}, {1}, DataType::Float32, Device::cpu(), deleter);
              }),
              HasSubstr("fromBlob: negative size -1"));
  EXPECT_EQ(deleted, 0);
}

// fromBlob rejects a null pointer for a tensor with elements and a pointer not aligned to the
// element size (a null pointer for an empty tensor is fine).
TEST(TensorTest, FromBlobRejectsNullAndMisalignedData) {
  EXPECT_THAT(userErrorOf([] {
                Tensor::fromBlob(nullptr, {4}, {1}, DataType::Float32, Device::cpu());
              }),
              HasSubstr("null data pointer"));
  EXPECT_EQ(Tensor::fromBlob(nullptr, {0}, {1}, DataType::Float32, Device::cpu()).numel(), 0);
  alignas(8) char buffer[64] = {};
  EXPECT_THAT(userErrorOf([&] {
                Tensor::fromBlob(buffer + 2, {4}, {1}, DataType::Float32, Device::cpu());
              }),
              HasSubstr("is not aligned to the 4-byte elements of f32"));
  EXPECT_EQ(Tensor::fromBlob(buffer + 2, {4}, {1}, DataType::Float16, Device::cpu()).numel(), 4);
}

// The one alignment rule: the largest power of two up to 16 dividing the address; 16 for an
// empty tensor, whose address is never used.
TEST(TensorMetadata, AlignmentRule) {
  alignas(16) char buffer[64] = {};
  EXPECT_EQ(dataAlignment(buffer, 1), 16);
  EXPECT_EQ(dataAlignment(buffer + 8, 1), 8);
  EXPECT_EQ(dataAlignment(buffer + 4, 1), 4);
  EXPECT_EQ(dataAlignment(buffer + 6, 1), 2);
  EXPECT_EQ(dataAlignment(buffer + 3, 1), 1);
  EXPECT_EQ(dataAlignment(buffer + 32, 1), 16);  // capped at 16
  EXPECT_EQ(dataAlignment(buffer + 3, 0), 16);
}

// Metadata of a view on any device: sizes, strides, dtype, device, alignment, no memory read.
TEST(TensorMetadata, OfAView) {
  alignas(16) float data[24] = {};
  Tensor t = Tensor::fromBlob(data + 2, {3, 4}, {8, 2}, DataType::Float32, Device::cuda(1));
  TensorMetadata m = TensorMetadata::of(t);
  EXPECT_EQ(m.dtype, DataType::Float32);
  EXPECT_EQ(m.device, Device::cuda(1));
  EXPECT_EQ(m.sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(m.strides, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(m.globalSizes, m.sizes);
  EXPECT_EQ(m.alignment, 8);
  EXPECT_EQ(m.numel(), 12);
  EXPECT_EQ(m.dim(), 2);
}

}  // namespace
}  // namespace loom
