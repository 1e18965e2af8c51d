// SPDX-License-Identifier: Apache-2.0
// Loading cubins, looking up kernels and launching them, with launch failures that name the kernel.
#include "loom/backend/cuda/module.h"

#include <iostream>
#include <mutex>

#include "backend/cuda/driver_api.h"
#include "loom/support/dump_sink.h"
#include "loom/support/options.h"

namespace loom::cuda {

using ::loom::detail::concat;

namespace {
// The dynamic shared memory a kernel may use without opting in.
constexpr size_t kDefaultDynamicSharedLimit = 48 * 1024;
}  // namespace

struct ModuleState {
  CUmodule handle = nullptr;
  int device = 0;
  // Per function, the dynamic shared memory limit already raised (launches are cheap when the
  // limit suffices; cuFuncSetAttribute is only called when a launch needs more).
  std::mutex mutex;
  std::vector<std::pair<CUfunction, size_t>> sharedLimits;

  ~ModuleState() {
    if (handle == nullptr) return;
    try {
      const auto& api = detail::enterDevice(device, "unloading a CUDA module");
      CUresult r = api.cuModuleUnload(handle);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
        std::cerr << "loom: cuModuleUnload failed: " << detail::resultText(r) << "\n";
      }
    } catch (const std::exception& e) {
      std::cerr << "loom: unloading a CUDA module failed: " << e.what() << "\n";
    }
  }
};

std::ostream& operator<<(std::ostream& os, const LaunchConfig& c) {
  return os << "grid (" << c.grid.x << ", " << c.grid.y << ", " << c.grid.z << "), block ("
            << c.block.x << ", " << c.block.y << ", " << c.block.z << "), dynamic shared memory "
            << c.sharedMemoryBytes << " bytes" << (c.cooperative ? ", cooperative" : "");
}

Module::Module(const std::vector<char>& cubin, int device) : state_(std::make_shared<ModuleState>()) {
  LOOM_CHECK(!cubin.empty(), "Module: the cubin is empty");
  const auto& api = detail::enterDevice(device, "loading a CUDA module");
  state_->device = device;
  detail::checkResult(api.cuModuleLoadData(&state_->handle, cubin.data()),
                      concat("cuModuleLoadData (", cubin.size(), " bytes) on GPU ", device));
}

int Module::device() const { return state_->device; }

Function Module::function(const std::string& name) const {
  const auto& api = detail::enterDevice(state_->device, "looking up a CUDA kernel");
  CUfunction f = nullptr;
  CUresult r = api.cuModuleGetFunction(&f, state_->handle, name.c_str());
  LOOM_CHECK(r != CUDA_ERROR_NOT_FOUND, "kernel '", name,
             "' is not in the module (C++ names are mangled; declare it extern \"C\")");
  detail::checkResult(r, concat("cuModuleGetFunction('", name, "')"));
  return Function(state_, f, name, DumpOptions::fromEnvironment().has(DumpOption::LaunchParams));
}

int Function::device() const { return module_->device; }

namespace {
int functionAttribute(const Function& f, CUfunction_attribute attribute) {
  const auto& api = detail::enterDevice(f.device(), "querying a CUDA kernel");
  int v = 0;
  detail::checkResult(api.cuFuncGetAttribute(&v, attribute, f.handle()),
                      concat("cuFuncGetAttribute of kernel '", f.name(), "'"));
  return v;
}
}  // namespace

int Function::numRegisters() const { return functionAttribute(*this, CU_FUNC_ATTRIBUTE_NUM_REGS); }

int Function::maxThreadsPerBlock() const {
  return functionAttribute(*this, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
}

int Function::maxActiveBlocksPerMultiprocessor(int threads, size_t sharedBytes) const {
  const auto& api = detail::enterDevice(module_->device, "querying a kernel's occupancy");
  int blocks = 0;
  detail::checkResult(
      api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, handle_, threads, sharedBytes),
      concat("cuOccupancyMaxActiveBlocksPerMultiprocessor of kernel '", name_, "'"));
  return blocks;
}

void Function::launch(const LaunchConfig& config, void** args, const Stream& stream) const {
  LOOM_CHECK(stream.device() == module_->device, "kernel '", name_, "' is loaded on GPU ",
             module_->device, " but the stream belongs to GPU ", stream.device());
  // A fixed purpose: launches are on the hot path, so no message is built unless one fails.
  const auto& api = detail::enterDevice(module_->device, "launching a CUDA kernel");
  if (dump_launch_) {
    dumpSink() << "launch " << name_ << ": " << config << "\n";
  }
  auto fail = [&](CUresult r, std::string_view step) {
    std::string message = concat("launching kernel '", name_, "' with ", config, " failed", step,
                                 ": ", detail::resultText(r));
    throw CudaError(concat("cuda: ", message), message, int(r));
  };
  if (config.sharedMemoryBytes > kDefaultDynamicSharedLimit) {
    std::lock_guard lock(module_->mutex);
    size_t raised = 0;
    for (const auto& [f, limit] : module_->sharedLimits) {
      if (f == handle_) raised = limit;
    }
    if (raised < config.sharedMemoryBytes) {
      CUresult r = api.cuFuncSetAttribute(handle_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          int(config.sharedMemoryBytes));
      if (r != CUDA_SUCCESS) fail(r, " (raising its dynamic shared memory limit)");
      module_->sharedLimits.emplace_back(handle_, config.sharedMemoryBytes);
    }
  }
  CUresult r = config.cooperative
                   ? api.cuLaunchCooperativeKernel(handle_, config.grid.x, config.grid.y,
                                                   config.grid.z, config.block.x, config.block.y,
                                                   config.block.z,
                                                   unsigned(config.sharedMemoryBytes),
                                                   stream.handle(), args)
                   : api.cuLaunchKernel(handle_, config.grid.x, config.grid.y, config.grid.z,
                                        config.block.x, config.block.y, config.block.z,
                                        unsigned(config.sharedMemoryBytes), stream.handle(), args,
                                        nullptr);
  if (r != CUDA_SUCCESS) fail(r, "");
}

}  // namespace loom::cuda
