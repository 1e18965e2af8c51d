// SPDX-License-Identifier: Apache-2.0
// A small owning wrapper of a CUDA event, for timing work queued on a stream.
//
//   auto start = cuda::Event::create(), stop = cuda::Event::create();
//   start.record(stream);  /* queue work */  stop.record(stream);
//   stop.synchronize();
//   float ms = cuda::Event::elapsedMs(start, stop);
#pragma once

#include "loom/backend/cuda/driver.h"

// Declared as cuda.h declares it, so this header does not need the toolkit.
struct CUevent_st;
typedef struct CUevent_st* CUevent;

namespace loom::cuda {

/// An event bound to a device, created with timing enabled and destroyed with the wrapper.
/// Move-only.
class Event {
 public:
  /// A new event on `device`; `timing` false makes it cheaper to record (elapsedMs then fails).
  /// Throws UnavailableError without a GPU.
  static Event create(int device = 0, bool timing = true);

  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  CUevent handle() const { return handle_; }
  int device() const { return device_; }

  /// Captures the work queued on `stream` so far (null: the legacy default stream).
  void record(CUstream stream) const;
  /// Blocks until the captured work is done; reports asynchronous errors.
  void synchronize() const;
  /// Whether the captured work is done, without waiting (true for an event never recorded).
  /// Usable from any thread.
  bool done() const;

  /// Milliseconds between two recorded events whose work has completed (about 0.5 us
  /// resolution). A CudaError when either was not recorded or has not completed.
  static float elapsedMs(const Event& start, const Event& end);

 private:
  Event(CUevent handle, int device) : handle_(handle), device_(device) {}
  void reset() noexcept;

  CUevent handle_ = nullptr;
  int device_ = 0;
};

}  // namespace loom::cuda
