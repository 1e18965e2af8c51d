// SPDX-License-Identifier: Apache-2.0
// The host side of RunDevice (run_device.h), and the choice between it and a GPU.
#include "tools/loom/run_device.h"

#include <chrono>

#include "loom/support/error.h"

namespace loom::tools {
namespace {

class HostRunDevice final : public RunDevice {
 public:
  Tensor place(const Tensor& host) const override { return host; }
  Tensor fetch(const Tensor& t) const override { return t; }
  Timing time(const std::function<void()>& work) const override {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return {s, s};
  }
};

}  // namespace

std::unique_ptr<RunDevice> makeRunDevice(exec::Backend backend, int gpu) {
  switch (backend) {
    case exec::Backend::Host: return std::make_unique<HostRunDevice>();
    case exec::Backend::Cuda: return detail::makeGpuRunDevice(gpu);
    case exec::Backend::Auto: break;
  }
  LOOM_UNREACHABLE("makeRunDevice of an unresolved backend");
}

}  // namespace loom::tools
