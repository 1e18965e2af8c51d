// SPDX-License-Identifier: Apache-2.0
// Stream creation, destruction and synchronization.
#include "loom/backend/cuda/stream.h"

#include <iostream>
#include <utility>

#include "backend/cuda/driver_api.h"

namespace loom::cuda {

Stream Stream::create(int device) {
  const auto& api = detail::enterDevice(device, "creating a CUDA stream");
  CUstream handle = nullptr;
  detail::checkResult(api.cuStreamCreate(&handle, CU_STREAM_DEFAULT), "cuStreamCreate");
  return Stream(handle, device, true);
}

Stream::Stream(Stream&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      device_(other.device_),
      owned_(std::exchange(other.owned_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

Stream::~Stream() { reset(); }

// Destruction cannot throw; a failure here means the context is already broken, which the next
// checked call reports, so it is only logged.
void Stream::reset() noexcept {
  if (owned_ && handle_ != nullptr) {
    try {
      const auto& api = detail::enterDevice(device_, "destroying a CUDA stream");
      CUresult r = api.cuStreamDestroy(handle_);
      if (r != CUDA_SUCCESS) {
        std::cerr << "loom: cuStreamDestroy failed: " << detail::resultText(r) << "\n";
      }
    } catch (const std::exception& e) {
      std::cerr << "loom: destroying a CUDA stream failed: " << e.what() << "\n";
    }
  }
  handle_ = nullptr;
  owned_ = false;
}

void Stream::synchronize() const {
  const auto& api = detail::enterDevice(device_, "synchronizing a CUDA stream");
  detail::checkResult(api.cuStreamSynchronize(handle_), "cuStreamSynchronize");
}

}  // namespace loom::cuda
