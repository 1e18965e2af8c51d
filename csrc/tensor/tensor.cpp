// SPDX-License-Identifier: Apache-2.0
// loom::Tensor: construction, element access on the host, views.
#include "loom/tensor/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "loom/support/checked_math.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "loom/tensor/float8.h"
#include "loom/tensor/half.h"
#include "loom/tensor/host_block_cache.h"

namespace loom {

std::ostream& operator<<(std::ostream& os, Device d) {
  return d.isCpu() ? os << "cpu" : os << "cuda:" << d.index;
}

std::shared_ptr<Storage> Storage::allocateHost(size_t nbytes) {
  return HostBlockCache::process().allocate(nbytes);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, DataType dtype, std::vector<int64_t> sizes,
               std::vector<int64_t> strides, int64_t offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset) {
  LOOM_CHECK(storage_ != nullptr, "a tensor needs storage");
  LOOM_CHECK(sizes_.size() == strides_.size(), "tensor has ", sizes_.size(), " sizes but ",
             strides_.size(), " strides");
  for (size_t i = 0; i < sizes_.size(); ++i) {
    LOOM_CHECK(sizes_[i] >= 0, "tensor size ", sizes_[i], " at dimension ", i, " is negative");
  }
  LOOM_CHECK(offset_ >= 0, "tensor offset ", offset_, " is negative");
  // numel() and every byte offset of an element fit in int64 (checked once here).
  checkedMul(checkedNumel(sizes_, "the element count of a tensor"), int64_t(itemSize()),
             "the byte size of a tensor");
}

std::vector<int64_t> Tensor::contiguousStrides(std::span<const int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    if (i > 0) s = checkedMul(s, std::max<int64_t>(sizes[i], 1), "the strides of a tensor");
  }
  return strides;
}

Tensor Tensor::empty(std::vector<int64_t> sizes, DataType dtype) {
  auto strides = contiguousStrides(sizes);
  return emptyStrided(std::move(sizes), std::move(strides), dtype);
}

Tensor Tensor::emptyStrided(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                            DataType dtype) {
  LOOM_CHECK(sizes.size() == strides.size(), "emptyStrided: ", sizes.size(), " sizes but ",
             strides.size(), " strides");
  int64_t extent = 1;  // one past the largest reachable element
  for (size_t i = 0; i < sizes.size(); ++i) {
    LOOM_CHECK(sizes[i] >= 0, "emptyStrided: negative size ", sizes[i]);
    LOOM_CHECK(strides[i] >= 0, "emptyStrided: negative stride ", strides[i]);
    if (sizes[i] == 0) extent = 0;
  }
  if (extent != 0) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      extent = checkedAdd(extent, checkedMul(sizes[i] - 1, strides[i], "a tensor's extent"),
                          "a tensor's extent");
    }
  }
  const int64_t bytes = checkedMul(extent, int64_t(dataTypeSize(dtype)), "a tensor's byte size");
  auto storage = Storage::allocateHost(size_t(bytes));
  return Tensor(std::move(storage), dtype, std::move(sizes), std::move(strides));
}

Tensor Tensor::fromBlob(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                        DataType dtype, Device device, Storage::Deleter deleter) {
  // Everything the constructor checks is checked here first: once the Storage exists it owns
  // `deleter`, and a throw after that would run it while the caller still owns the memory.
  LOOM_CHECK(sizes.size() == strides.size(), "fromBlob: ", sizes.size(), " sizes but ",
             strides.size(), " strides");
  for (int64_t s : sizes) LOOM_CHECK(s >= 0, "fromBlob: negative size ", s);
  checkedMul(checkedNumel(sizes, "fromBlob: the element count of a tensor"),
             int64_t(dataTypeSize(dtype)), "fromBlob: the byte size of a tensor");
  int64_t extent = 1;
  for (int64_t s : sizes) {
    if (s == 0) extent = 0;
  }
  if (extent != 0) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      LOOM_CHECK(strides[i] != std::numeric_limits<int64_t>::min(), "fromBlob: stride ",
                 strides[i], " out of range");
      extent = checkedAdd(
          extent, checkedMul(sizes[i] - 1, std::abs(strides[i]), "a tensor's extent"),
          "a tensor's extent");
    }
  }
  const int64_t bytes = checkedMul(extent, int64_t(dataTypeSize(dtype)), "a tensor's byte size");
  LOOM_CHECK(data != nullptr || bytes == 0, "fromBlob: a null data pointer for a ",
             dataTypeName(dtype), " tensor of ", extent, " elements");
  LOOM_CHECK(reinterpret_cast<uintptr_t>(data) % dataTypeSize(dtype) == 0, "fromBlob: data ",
             data, " is not aligned to the ", dataTypeSize(dtype), "-byte elements of ",
             dataTypeName(dtype));
  auto storage = std::make_shared<Storage>(data, size_t(bytes), device, std::move(deleter));
  return Tensor(std::move(storage), dtype, std::move(sizes), std::move(strides));
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

int64_t Tensor::size(int64_t d) const {
  LOOM_CHECK(d >= -dim() && d < dim(), "dimension ", d, " out of range for a ", dim(),
             "-D tensor");
  return sizes_[size_t(d < 0 ? d + dim() : d)];
}

int64_t Tensor::stride(int64_t d) const {
  LOOM_CHECK(d >= -dim() && d < dim(), "dimension ", d, " out of range for a ", dim(),
             "-D tensor");
  return strides_[size_t(d < 0 ? d + dim() : d)];
}

int64_t Tensor::numel() const {
  return std::accumulate(sizes_.begin(), sizes_.end(), int64_t(1), std::multiplies<>());
}

void* Tensor::data() const {
  LOOM_CHECK(defined(), "access to an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * int64_t(itemSize());
}

bool Tensor::isContiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= sizes_[i];
  }
  return true;
}

int64_t Tensor::storageIndex(std::span<const int64_t> index) const {
  LOOM_CHECK(int64_t(index.size()) == dim(), "index of rank ", index.size(), " for a ", dim(),
             "-D tensor");
  int64_t s = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    LOOM_CHECK(index[i] >= 0 && index[i] < sizes_[i], "index ", index[i], " out of range [0, ",
               sizes_[i], ") at dimension ", i);
    s += index[i] * strides_[i];
  }
  return s;
}

int64_t Tensor::storageIndexLinear(int64_t linear) const {
  int64_t s = 0;
  for (size_t i = sizes_.size(); i-- > 0;) {
    int64_t n = sizes_[i];
    s += (linear % n) * strides_[i];
    linear /= n;
  }
  return s;
}

namespace {

void checkHost(const Tensor& t, const char* what) {
  LOOM_CHECK(t.device().isCpu(), what, " needs a host tensor, got one on ", t.device());
}

// Truncates toward zero and saturates to the range of Int, NaN -> 0: CUDA's float-to-int rules.
template <typename Int>
Int saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  // 2^(bits-1) is exact in double and is the first value past the top of Int.
  constexpr double kTop = -double(std::numeric_limits<Int>::min());
  if (v >= kTop) return std::numeric_limits<Int>::max();
  if (v <= -kTop) return std::numeric_limits<Int>::min();
  return Int(v);
}

}  // namespace

double loadAsDouble(const void* ptr, DataType dtype) {
  switch (dtype) {
    // Byte-wise: a caller's bool tensor may hold any byte (a uint8 tensor viewed as bool), and
    // any non-zero byte is true, as in torch; reading it as a C++ bool would be undefined.
    case DataType::Bool: return *static_cast<const unsigned char*>(ptr) != 0 ? 1.0 : 0.0;
    case DataType::Int32: return double(*static_cast<const int32_t*>(ptr));
    case DataType::Int64: return double(*static_cast<const int64_t*>(ptr));
    case DataType::Float16: return halfBitsToFloat(*static_cast<const uint16_t*>(ptr));
    case DataType::BFloat16: return bfloat16BitsToFloat(*static_cast<const uint16_t*>(ptr));
    case DataType::Float8_e4m3fn: return float8E4M3FNBitsToFloat(*static_cast<const uint8_t*>(ptr));
    case DataType::Float8_e5m2: return float8E5M2BitsToFloat(*static_cast<const uint8_t*>(ptr));
    case DataType::Float32: return double(*static_cast<const float*>(ptr));
    case DataType::Float64: return *static_cast<const double*>(ptr);
    case DataType::ComplexFloat: return double(static_cast<const float*>(ptr)[0]);
    case DataType::ComplexDouble: return static_cast<const double*>(ptr)[0];
    case DataType::Int8:
    case DataType::Int16:
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: return integerToDouble(loadInteger(ptr, dtype), dtype);
  }
  LOOM_UNREACHABLE();
}

int64_t loadInteger(const void* ptr, DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return *static_cast<const unsigned char*>(ptr) != 0 ? 1 : 0;
    case DataType::Int8: return *static_cast<const int8_t*>(ptr);
    case DataType::Int16: return *static_cast<const int16_t*>(ptr);
    case DataType::Int32: return *static_cast<const int32_t*>(ptr);
    case DataType::Int64: return *static_cast<const int64_t*>(ptr);
    case DataType::UInt8: return *static_cast<const uint8_t*>(ptr);
    case DataType::UInt16: return *static_cast<const uint16_t*>(ptr);
    case DataType::UInt32: return *static_cast<const uint32_t*>(ptr);
    case DataType::UInt64: return int64_t(*static_cast<const uint64_t*>(ptr));
    default: break;
  }
  LOOM_ASSERT(false, "loadInteger of a ", dtype, " element");
  LOOM_UNREACHABLE();
}

void storeInteger(void* ptr, DataType dtype, int64_t value) {
  const int64_t v = wrapInteger(value, dtype);
  switch (dtype) {
    case DataType::Bool: *static_cast<bool*>(ptr) = v != 0; return;
    case DataType::Int8: *static_cast<int8_t*>(ptr) = int8_t(v); return;
    case DataType::Int16: *static_cast<int16_t*>(ptr) = int16_t(v); return;
    case DataType::Int32: *static_cast<int32_t*>(ptr) = int32_t(v); return;
    case DataType::Int64: *static_cast<int64_t*>(ptr) = v; return;
    case DataType::UInt8: *static_cast<uint8_t*>(ptr) = uint8_t(v); return;
    case DataType::UInt16: *static_cast<uint16_t*>(ptr) = uint16_t(v); return;
    case DataType::UInt32: *static_cast<uint32_t*>(ptr) = uint32_t(v); return;
    case DataType::UInt64: *static_cast<uint64_t*>(ptr) = uint64_t(v); return;
    default: break;
  }
  LOOM_ASSERT(false, "storeInteger into a ", dtype, " element");
}

void storeFromDouble(void* ptr, DataType dtype, double value) {
  switch (dtype) {
    case DataType::Bool: *static_cast<bool*>(ptr) = value != 0.0; return;
    case DataType::Int32: *static_cast<int32_t*>(ptr) = saturatingCast<int32_t>(value); return;
    case DataType::Int64: *static_cast<int64_t*>(ptr) = saturatingCast<int64_t>(value); return;
    case DataType::Float16: *static_cast<uint16_t*>(ptr) = doubleToHalfBits(value); return;
    case DataType::BFloat16: *static_cast<uint16_t*>(ptr) = doubleToBFloat16Bits(value); return;
    // Through float, as torch casts a double to the 8-bit types (float8.h).
    case DataType::Float8_e4m3fn:
      *static_cast<uint8_t*>(ptr) = floatToFloat8E4M3FNBits(float(value));
      return;
    case DataType::Float8_e5m2:
      *static_cast<uint8_t*>(ptr) = floatToFloat8E5M2Bits(float(value));
      return;
    case DataType::Float32: *static_cast<float*>(ptr) = float(value); return;
    case DataType::Float64: *static_cast<double*>(ptr) = value; return;
    case DataType::ComplexFloat:
    case DataType::ComplexDouble: storeFromComplex(ptr, dtype, {value, 0.0}); return;
    case DataType::Int8:
    case DataType::Int16:
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: storeInteger(ptr, dtype, floatToInteger(value, dtype)); return;
  }
  LOOM_UNREACHABLE();
}

std::complex<double> loadAsComplex(const void* ptr, DataType dtype) {
  if (dtype == DataType::ComplexFloat) {
    const float* p = static_cast<const float*>(ptr);
    return {double(p[0]), double(p[1])};
  }
  if (dtype == DataType::ComplexDouble) {
    const double* p = static_cast<const double*>(ptr);
    return {p[0], p[1]};
  }
  return {loadAsDouble(ptr, dtype), 0.0};
}

void storeFromComplex(void* ptr, DataType dtype, std::complex<double> value) {
  if (dtype == DataType::ComplexFloat) {
    float* p = static_cast<float*>(ptr);
    p[0] = float(value.real());
    p[1] = float(value.imag());
  } else if (dtype == DataType::ComplexDouble) {
    double* p = static_cast<double*>(ptr);
    p[0] = value.real();
    p[1] = value.imag();
  } else {
    storeFromDouble(ptr, dtype, value.real());
  }
}

double Tensor::getDouble(std::span<const int64_t> index) const {
  checkHost(*this, "getDouble");
  return loadAsDouble(static_cast<const char*>(data()) + storageIndex(index) * int64_t(itemSize()),
                      dtype_);
}

double Tensor::getDoubleLinear(int64_t linear) const {
  checkHost(*this, "getDoubleLinear");
  return loadAsDouble(
      static_cast<const char*>(data()) + storageIndexLinear(linear) * int64_t(itemSize()), dtype_);
}

void Tensor::setDouble(std::span<const int64_t> index, double value) {
  checkHost(*this, "setDouble");
  storeFromDouble(static_cast<char*>(data()) + storageIndex(index) * int64_t(itemSize()), dtype_,
                  value);
}

void Tensor::setDoubleLinear(int64_t linear, double value) {
  checkHost(*this, "setDoubleLinear");
  storeFromDouble(static_cast<char*>(data()) + storageIndexLinear(linear) * int64_t(itemSize()),
                  dtype_, value);
}

std::complex<double> Tensor::getComplexLinear(int64_t linear) const {
  checkHost(*this, "getComplexLinear");
  return loadAsComplex(
      static_cast<const char*>(data()) + storageIndexLinear(linear) * int64_t(itemSize()), dtype_);
}

void Tensor::setComplexLinear(int64_t linear, std::complex<double> value) {
  checkHost(*this, "setComplexLinear");
  storeFromComplex(static_cast<char*>(data()) + storageIndexLinear(linear) * int64_t(itemSize()),
                   dtype_, value);
}

void Tensor::fill(double value) {
  checkHost(*this, "fill");
  int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) setDoubleLinear(i, value);
}

Tensor Tensor::contiguous() const {
  checkHost(*this, "contiguous");
  Tensor out = Tensor::empty(sizes_, dtype_);
  int64_t n = numel();
  size_t isz = itemSize();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(static_cast<char*>(out.data()) + i * int64_t(isz),
                static_cast<const char*>(data()) + storageIndexLinear(i) * int64_t(isz), isz);
  }
  return out;
}

void copyElements(const Tensor& dst, const Tensor& src) {
  checkHost(dst, "copyElements");
  checkHost(src, "copyElements");
  LOOM_CHECK(dst.sizes() == src.sizes() && dst.dtype() == src.dtype(),
             "copyElements: ", describe(src), " copied into ", describe(dst));
  const int64_t n = dst.numel();
  const int64_t item = int64_t(dst.itemSize());
  auto* to_base = static_cast<char*>(dst.data());
  const auto* from_base = static_cast<const char*>(src.data());
  std::vector<int64_t> index(size_t(dst.dim()), 0);
  int64_t to = 0;  // element offsets of the current index
  int64_t from = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(to_base + to * item, from_base + from * item, size_t(item));
    for (int64_t d = dst.dim() - 1; d >= 0; --d) {  // the next index, the last dim fastest
      to += dst.stride(d);
      from += src.stride(d);
      if (++index[size_t(d)] < dst.size(d)) break;
      to -= dst.stride(d) * dst.size(d);
      from -= src.stride(d) * src.size(d);
      index[size_t(d)] = 0;
    }
  }
}

Tensor Tensor::permute(std::span<const int64_t> dims) const {
  LOOM_CHECK(int64_t(dims.size()) == dim(), "permute: ", dims.size(), " dims for a ", dim(),
             "-D tensor");
  std::vector<int64_t> sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i] < 0 ? dims[i] + dim() : dims[i];
    LOOM_CHECK(d >= 0 && d < dim() && !seen[size_t(d)], "permute: [", join(dims),
               "] is not a permutation of ", dim(), " dimensions");
    seen[size_t(d)] = true;
    sizes[i] = sizes_[size_t(d)];
    strides[i] = strides_[size_t(d)];
  }
  return Tensor(storage_, dtype_, std::move(sizes), std::move(strides), offset_);
}

void fillRandom(Tensor& t, uint64_t seed) {
  checkHost(t, "fillRandom");
  std::mt19937_64 rng(seed);
  int64_t n = t.numel();
  if (isFloatingType(t.dtype())) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t i = 0; i < n; ++i) t.setDoubleLinear(i, dist(rng));
  } else if (isComplexType(t.dtype())) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      const double re = dist(rng);
      t.setComplexLinear(i, {re, dist(rng)});
    }
  } else if (isIntegralType(t.dtype())) {
    const int64_t lo = isUnsignedType(t.dtype()) ? 0 : -8;
    std::uniform_int_distribution<int64_t> dist(lo, lo + 15);
    for (int64_t i = 0; i < n; ++i) t.setDoubleLinear(i, double(dist(rng)));
  } else {
    std::bernoulli_distribution dist(0.5);
    for (int64_t i = 0; i < n; ++i) t.setDoubleLinear(i, dist(rng) ? 1.0 : 0.0);
  }
}

void poison(Tensor& t) {
  checkHost(t, "poison");
  int64_t n = t.numel();
  if (isComplexType(t.dtype())) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int64_t i = 0; i < n; ++i) t.setComplexLinear(i, {nan, nan});
    return;
  }
  double v = isFloatingType(t.dtype()) ? std::numeric_limits<double>::quiet_NaN()
             : isIntegralType(t.dtype()) ? double(wrapInteger(-1234567, t.dtype()))
                                         : 1.0;
  for (int64_t i = 0; i < n; ++i) t.setDoubleLinear(i, v);
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined tensor";
  return "[" + join(t.sizes()) + "] " + std::string(dataTypeName(t.dtype())) + " on " +
         (t.device().isCpu() ? std::string("cpu") : "cuda:" + std::to_string(t.device().index));
}

}  // namespace loom
