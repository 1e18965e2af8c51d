// SPDX-License-Identifier: Apache-2.0
// Event creation, recording, synchronization and elapsed time.
#include "loom/backend/cuda/event.h"

#include <iostream>
#include <utility>

#include "backend/cuda/driver_api.h"

namespace loom::cuda {

Event Event::create(int device, bool timing) {
  const auto& api = detail::enterDevice(device, "creating a CUDA event");
  CUevent handle = nullptr;
  // CU_EVENT_DEFAULT keeps timing on (CU_EVENT_DISABLE_TIMING would make elapsedMs fail).
  detail::checkResult(
      api.cuEventCreate(&handle, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
      "cuEventCreate");
  return Event(handle, device);
}

Event::Event(Event&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

Event::~Event() { reset(); }

// As for streams: destruction cannot throw, and a failure means the context is already broken,
// which the next checked call reports, so it is only logged.
void Event::reset() noexcept {
  if (handle_ == nullptr) return;
  try {
    const auto& api = detail::enterDevice(device_, "destroying a CUDA event");
    CUresult r = api.cuEventDestroy(handle_);
    if (r != CUDA_SUCCESS) {
      std::cerr << "loom: cuEventDestroy failed: " << detail::resultText(r) << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "loom: destroying a CUDA event failed: " << e.what() << "\n";
  }
  handle_ = nullptr;
}

void Event::record(CUstream stream) const {
  LOOM_CHECK(handle_ != nullptr, "Event::record on a moved-from event");
  const auto& api = detail::enterDevice(device_, "recording a CUDA event");
  detail::checkResult(api.cuEventRecord(handle_, stream), "cuEventRecord");
}

void Event::synchronize() const {
  LOOM_CHECK(handle_ != nullptr, "Event::synchronize on a moved-from event");
  const auto& api = detail::enterDevice(device_, "synchronizing a CUDA event");
  detail::checkResult(api.cuEventSynchronize(handle_), "cuEventSynchronize");
}

bool Event::done() const {
  LOOM_CHECK(handle_ != nullptr, "Event::done on a moved-from event");
  const auto& api = detail::enterDevice(device_, "querying a CUDA event");
  const CUresult r = api.cuEventQuery(handle_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  detail::checkResult(r, "cuEventQuery");
  return true;
}

float Event::elapsedMs(const Event& start, const Event& end) {
  LOOM_CHECK(start.handle_ != nullptr && end.handle_ != nullptr,
             "Event::elapsedMs on a moved-from event");
  LOOM_CHECK(start.device_ == end.device_, "Event::elapsedMs: the events are on GPUs ",
             start.device_, " and ", end.device_, "; they must be on the same GPU");
  const auto& api = detail::enterDevice(start.device_, "timing CUDA events");
  float ms = 0;
  detail::checkResult(api.cuEventElapsedTime(&ms, start.handle_, end.handle_),
                      "cuEventElapsedTime");
  return ms;
}

}  // namespace loom::cuda
