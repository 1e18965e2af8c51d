// SPDX-License-Identifier: Apache-2.0
// ComputeDevice (compute_device.h): backend selection and what every device shares; the host
// backend is in host_device.cpp, a GPU in cuda_device.cpp.
#include "loom/exec/compute_device.h"

#include <fmt/format.h>

#include <chrono>

#include "exec/gpu_device.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/error.h"

namespace loom::exec {

namespace detail {
std::shared_ptr<const ComputeDevice> makeHostDevice();
}  // namespace detail

std::string_view backendName(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Host: return "host";
    case Backend::Cuda: return "cuda";
  }
  LOOM_UNREACHABLE();
}

BackendChoice chooseBackend(Backend b) {
  if (b != Backend::Auto) return {b, "asked for by the caller"};
  if (auto env = getEnv("LOOM_BACKEND"); env && !env->empty()) {
    if (*env == "host") return {Backend::Host, "LOOM_BACKEND=host"};
    if (*env == "cuda") return {Backend::Cuda, "LOOM_BACKEND=cuda"};
    LOOM_THROW("LOOM_BACKEND must be 'host' or 'cuda', got '", *env, "'");
  }
  if (int n = gpuCount(); n > 0) {
    return {Backend::Cuda, std::to_string(n) + " GPU(s) seen by the CUDA driver"};
  }
  return {Backend::Host, "no GPU found: " + detail::driverUnavailableReason()};
}

Backend resolveBackend(Backend b) { return chooseBackend(b).backend; }

int gpuCount() { return detail::driverGpuCount(); }

std::string LaunchParams::toString() const {
  return fmt::format("grid ({}, {}, {}), block ({}, {}, {}), dynamic shared {} bytes", grid[0],
                     grid[1], grid[2], block[0], block[1], block[2], sharedBytes);
}

namespace {

struct ClockMark final : StreamMark {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
};

}  // namespace

std::unique_ptr<StreamMark> ComputeDevice::markStream(CUstream /*stream*/) const {
  return std::make_unique<ClockMark>();
}

double ComputeDevice::secondsBetween(const StreamMark& start, const StreamMark& end) const {
  const auto* a = dynamic_cast<const ClockMark*>(&start);
  const auto* b = dynamic_cast<const ClockMark*>(&end);
  LOOM_ASSERT(a != nullptr && b != nullptr, "stream marks of another device");
  return std::chrono::duration<double>(b->at - a->at).count();
}

std::string ComputeDevice::name() const {
  return backend() == Backend::Host ? "host" : "cuda:" + std::to_string(index());
}

bool ComputeDevice::checkArguments(const ir::Fusion& fusion,
                                   std::span<const eval::Argument> args) const {
  const auto& inputs = fusion.inputs();
  // The first tensor argument sets what the others must match on a GPU.
  const Tensor* first = nullptr;
  size_t first_pos = 0;
  for (size_t i = 0; i < inputs.size() && i < args.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&args[i]);
    if (t == nullptr || !t->defined() || !inputs[i]->isA<ir::TensorView>()) continue;
    if (backend() != Backend::Cuda) {
      LOOM_CHECK(t->device().isCpu(), "input ", i, " (", inputs[i]->toString(),
                 ") is a CUDA tensor (", describe(*t), ") but the executor's backend is ",
                 backendName(backend()), ": expected a host (cpu) tensor");
      continue;
    }
    if (t->device().isCuda()) {
      LOOM_CHECK(t->device().index == index(), "input ", i, " (", inputs[i]->toString(), ") is on ",
                 t->device(), ": expected a CUDA tensor on GPU ", index(),
                 ", where the kernels are loaded");
    }
    if (first == nullptr) {
      first = t;
      first_pos = i;
      continue;
    }
    LOOM_CHECK(t->device().type == first->device().type, "input ", i, " (", inputs[i]->toString(),
               ") is on ", t->device(), " but input ", first_pos, " (",
               inputs[first_pos]->toString(), ") is on ", first->device(),
               ": expected the tensor inputs of one run to be all CUDA tensors (device-resident) "
               "or all host tensors (copied in and out)");
  }
  return first != nullptr && first->device().isCuda();
}

bool ComputeDevice::copiesArguments(std::span<const eval::Argument> args) const {
  if (tensorDevice().isCpu()) return false;
  for (const eval::Argument& a : args) {
    const Tensor* t = std::get_if<Tensor>(&a);
    if (t != nullptr && t->defined() && t->device().isCpu()) return true;
  }
  return false;
}

std::shared_ptr<const ComputeDevice> makeComputeDevice(Backend backend, int gpu) {
  backend = resolveBackend(backend);
  if (backend == Backend::Host) return detail::makeHostDevice();
  LOOM_CHECK(gpu >= 0, "a GPU index must be >= 0, got ", gpu);
  return detail::makeGpuDevice(gpu);
}

}  // namespace loom::exec
