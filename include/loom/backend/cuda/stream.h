// SPDX-License-Identifier: Apache-2.0
// A small owning wrapper of a CUDA stream on one device.
#pragma once

#include "loom/backend/cuda/driver.h"

namespace loom::cuda {

/// A stream bound to a device. Streams made by create() are destroyed with the wrapper; the legacy
/// default stream (a null handle) is not owned. Move-only.
class Stream {
 public:
  /// A new stream on `device` that synchronizes with the legacy default stream.
  static Stream create(int device = 0);
  /// The legacy default stream of `device` (null handle). Needs no driver until it is used.
  static Stream legacyDefault(int device = 0) { return Stream(nullptr, device, false); }
  /// A non-owning wrapper of a stream someone else made (null: the legacy default stream).
  static Stream borrow(CUstream handle, int device = 0) { return Stream(handle, device, false); }

  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  CUstream handle() const { return handle_; }
  int device() const { return device_; }

  /// Blocks until all work queued on the stream is done; reports asynchronous errors.
  void synchronize() const;

 private:
  Stream(CUstream handle, int device, bool owned) : handle_(handle), device_(device), owned_(owned) {}
  void reset() noexcept;

  CUstream handle_ = nullptr;
  int device_ = 0;
  bool owned_ = false;
};

}  // namespace loom::cuda
