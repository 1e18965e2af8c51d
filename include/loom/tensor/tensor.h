// SPDX-License-Identifier: Apache-2.0
// loom::Tensor: a strided view (sizes, strides in elements, offset) of shared storage on a device.
//
// Tensors are cheap handles: copying one shares the storage. The storage owns its memory through
// a deleter, so memory handed in from a framework (DLPack) is released by its owner's deleter.
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "loom/tensor/data_type.h"

namespace loom {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  bool isCpu() const { return type == DeviceType::CPU; }
  bool isCuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device&) const = default;
};

std::ostream& operator<<(std::ostream& os, Device d);

/// A block of memory on one device, freed by its deleter when the last Tensor lets go.
class Storage {
 public:
  using Deleter = std::function<void(void*)>;
  Storage(void* data, size_t nbytes, Device device, Deleter deleter)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}
  ~Storage() {
    if (deleter_) deleter_(data_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  /// Host memory, 64-byte aligned, uninitialized; large blocks come from the process's
  /// HostBlockCache (loom/tensor/host_block_cache.h).
  static std::shared_ptr<Storage> allocateHost(size_t nbytes);

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
};

class Tensor {
 public:
  /// An undefined tensor (no storage). defined() is false.
  Tensor() = default;

  /// A view of existing storage. Strides and offset are in elements.
  Tensor(std::shared_ptr<Storage> storage, DataType dtype, std::vector<int64_t> sizes,
         std::vector<int64_t> strides, int64_t offset = 0);

  /// New contiguous (row-major) host tensor, uninitialized.
  static Tensor empty(std::vector<int64_t> sizes, DataType dtype);
  /// New host tensor with the given strides (which must not overlap), uninitialized.
  static Tensor emptyStrided(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                             DataType dtype);
  /// Wraps memory the caller owns; `deleter` (may be empty) runs when the last view goes. When
  /// fromBlob throws (a UserError on bad sizes, strides or data), `deleter` has not run and the
  /// memory is still the caller's.
  static Tensor fromBlob(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                         DataType dtype, Device device, Storage::Deleter deleter = {});

  /// Row-major strides for the given sizes.
  static std::vector<int64_t> contiguousStrides(std::span<const int64_t> sizes);

  bool defined() const { return storage_ != nullptr; }
  DataType dtype() const { return dtype_; }
  Device device() const;
  int64_t dim() const { return int64_t(sizes_.size()); }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t offset() const { return offset_; }
  int64_t numel() const;
  size_t itemSize() const { return dataTypeSize(dtype_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  /// Address of element [0, 0, ...] (storage base + offset).
  void* data() const;
  template <typename T>
  T* dataAs() const {
    return static_cast<T*>(data());
  }

  /// Row-major with no gaps (size-1 dimensions may have any stride).
  bool isContiguous() const;

  /// Element at a multi-index, converted to double (host tensors only).
  double getDouble(std::span<const int64_t> index) const;
  /// Element at a row-major linear index over the logical sizes, converted to double.
  double getDoubleLinear(int64_t linear) const;
  /// Stores a double, converted (rounded) to the element type.
  void setDouble(std::span<const int64_t> index, double value);
  void setDoubleLinear(int64_t linear, double value);
  /// Complex element access (a real element reads with imaginary part 0; storing a complex value
  /// into a real element keeps its real part).
  std::complex<double> getComplexLinear(int64_t linear) const;
  void setComplexLinear(int64_t linear, std::complex<double> value);

  /// Sets every element (host tensors only).
  void fill(double value);

  /// A contiguous host copy.
  Tensor contiguous() const;

  /// Permuted / restrided views sharing storage.
  Tensor permute(std::span<const int64_t> dims) const;

 private:
  int64_t storageIndex(std::span<const int64_t> index) const;
  int64_t storageIndexLinear(int64_t linear) const;

  std::shared_ptr<Storage> storage_;
  DataType dtype_ = DataType::Float32;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

/// Reads one element of `dtype` at `ptr` as a double (a complex element gives its real part).
double loadAsDouble(const void* ptr, DataType dtype);
/// Stores a double into one element of `dtype` at `ptr` (round to nearest even for floats,
/// truncation toward zero for integers, `value != 0` for bool, imaginary part 0 for complex).
void storeFromDouble(void* ptr, DataType dtype, double value);
/// Reads one element of an integral (or Bool) `dtype` exactly, in the int64 form of
/// data_type.h (UInt64: its bits).
int64_t loadInteger(const void* ptr, DataType dtype);
/// Stores an integer into one element of an integral (or Bool) `dtype`, wrapping to its width.
void storeInteger(void* ptr, DataType dtype, int64_t value);
/// Reads one element as a complex number (a real element has imaginary part 0).
std::complex<double> loadAsComplex(const void* ptr, DataType dtype);
/// Stores a complex number: each part rounded to the part type of a complex `dtype`; a real
/// `dtype` stores the real part as storeFromDouble does.
void storeFromComplex(void* ptr, DataType dtype, std::complex<double> value);

/// Fills a host tensor with random values: floats drawn uniformly from [-1, 1) then rounded to the
/// element type (so 1.0 can occur), complex numbers with each part drawn so, integers uniform in
/// [-8, 8) (unsigned ones in [0, 16)), bools fair coin flips.
/// Deterministic for a given seed.
void fillRandom(Tensor& t, uint64_t seed);

/// Fills a floating host tensor with NaN (complex: NaN in both parts; integers with a recognizable
/// pattern) so that a test can tell an element that was never written.
void poison(Tensor& t);

/// Copies the elements of host tensor `src` into host tensor `dst` (the same sizes and dtype,
/// checked), each read or written through its own strides; the bytes between `dst`'s elements
/// are left alone. `dst`'s elements must have distinct addresses.
void copyElements(const Tensor& dst, const Tensor& src);

/// "[2, 3] f32" style description for messages.
std::string describe(const Tensor& t);

}  // namespace loom
