// SPDX-License-Identifier: Apache-2.0
// Lazy loading of libcuda.so.1, primary contexts, device properties and driver error text.
#include <dlfcn.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/cuda/driver_api.h"
#include "loom/support/strings.h"

#define LOOM_CUDA_STR2(x) #x
#define LOOM_CUDA_STR(x) LOOM_CUDA_STR2(x)

namespace loom::cuda {
namespace detail {

using ::loom::detail::concat;

namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

struct DriverState {
  void* handle = nullptr;
  DriverApi api;
  std::string reason;  // why the driver is unusable; empty when usable
  int deviceCount = 0;
};

// Never throws: every failure becomes `reason`. The library stays open for the process's life
// (unloading the driver under live allocations would crash their deleters).
std::unique_ptr<DriverState> openDriver(const char* library) {
  auto state = std::make_unique<DriverState>();
  dlerror();
  state->handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (state->handle == nullptr) {
    state->reason = concat("no CUDA driver (", library, ") found");
    return state;
  }
  std::vector<std::string> missing;
#define LOOM_CUDA_LOOKUP_ENTRY(name)                                                     \
  state->api.name =                                                                      \
      reinterpret_cast<decltype(state->api.name)>(dlsym(state->handle, LOOM_CUDA_STR(name))); \
  if (state->api.name == nullptr) missing.emplace_back(LOOM_CUDA_STR(name));
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CUDA_LOOKUP_ENTRY)
#undef LOOM_CUDA_LOOKUP_ENTRY
  if (!missing.empty()) {
    state->reason = concat("the CUDA driver (", library, ") is too old: it lacks ",
                           join(missing));
    return state;
  }
  CUresult r = state->api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    state->api.cuGetErrorName(r, &name);
    state->reason = concat("the CUDA driver (", library, ") failed to initialize: ",
                           name ? name : "unknown error", " (", int(r), ")");
    return state;
  }
  r = state->api.cuDeviceGetCount(&state->deviceCount);
  if (r != CUDA_SUCCESS || state->deviceCount <= 0) {
    state->deviceCount = 0;
    state->reason = concat("the CUDA driver (", library, ") sees no GPU");
  }
  return state;
}

const DriverState& processDriver() {
  static const std::unique_ptr<DriverState> state = openDriver(kDriverLibrary);
  return *state;
}

// Devices whose retained context is also published in a lock-free slot.
constexpr int kPublishedDevices = 64;

// Primary contexts retained so far, by device. They stay retained for the process's life.
// enterDevice runs on every allocation, launch and free, so once a context is retained it is
// read from `published` (one atomic load); the mutex is only taken to retain one.
struct Contexts {
  std::mutex mutex;
  std::vector<CUcontext> byDevice;
  std::atomic<CUcontext> published[kPublishedDevices] = {};
};

Contexts& contexts() {
  static Contexts c;
  return c;
}

}  // namespace

const DriverApi& driverApi(std::string_view purpose) {
  const DriverState& state = processDriver();
  if (!state.reason.empty()) {
    ::loom::detail::throwUnavailable(__FILE__, __LINE__,
                             concat(state.reason, ": a GPU is required for ", purpose));
  }
  return state.api;
}

std::string resultText(CUresult result) {
  const DriverState& state = processDriver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (state.api.cuGetErrorName) state.api.cuGetErrorName(result, &name);
  if (state.api.cuGetErrorString) state.api.cuGetErrorString(result, &text);
  return concat(name ? name : "CUDA error", " (", text ? text : concat("code ", int(result)), ")");
}

void checkResult(CUresult result, std::string_view what) {
  if (result == CUDA_SUCCESS) [[likely]] return;
  std::string message = concat(what, " failed: ", resultText(result));
  throw CudaError(concat("cuda: ", message), message, int(result));
}

const DriverApi& enterDevice(int device, std::string_view purpose) {
  const DriverApi& api = driverApi(purpose);
  int count = processDriver().deviceCount;
  LOOM_CHECK(device >= 0 && device < count, "CUDA device ", device, " does not exist (", purpose,
             "); this machine has ", count, " GPU(s)");
  Contexts& c = contexts();
  CUcontext ctx =
      device < kPublishedDevices ? c.published[device].load(std::memory_order_acquire) : nullptr;
  if (ctx == nullptr) {
    std::lock_guard lock(c.mutex);
    if (c.byDevice.size() < size_t(count)) c.byDevice.resize(count, nullptr);
    if (c.byDevice[device] == nullptr) {
      CUdevice dev = 0;
      checkResult(api.cuDeviceGet(&dev, device), "cuDeviceGet");
      checkResult(api.cuDevicePrimaryCtxRetain(&c.byDevice[device], dev),
                  concat("retaining the primary context of GPU ", device));
    }
    ctx = c.byDevice[device];
    if (device < kPublishedDevices) c.published[device].store(ctx, std::memory_order_release);
  }
  // Asked every time rather than remembered: other code on this thread (a framework, the CUDA
  // runtime) may have made another context current since; the query is a thread-local read.
  CUcontext current = nullptr;
  checkResult(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != ctx) checkResult(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return api;
}

}  // namespace detail

using ::loom::detail::concat;

bool cudaAvailable() noexcept {
  try {
    return detail::processDriver().reason.empty();
  } catch (...) {
    return false;
  }
}

int deviceCount() noexcept {
  try {
    return detail::processDriver().deviceCount;
  } catch (...) {
    return 0;
  }
}

std::string unavailableReason() noexcept {
  try {
    return detail::processDriver().reason;
  } catch (...) {
    return "the CUDA driver could not be queried";
  }
}

void requireCuda(std::string_view purpose) { (void)detail::driverApi(purpose); }

std::string probeDriverLibrary(const char* libraryName) noexcept {
  try {
    // A probe of the real driver reuses the process's state rather than initializing twice.
    if (std::string_view(libraryName) == detail::kDriverLibrary) return unavailableReason();
    return detail::openDriver(libraryName)->reason;
  } catch (...) {
    return "probing the CUDA driver failed";
  }
}

std::string DeviceProperties::arch() const { return concat("sm_", major, minor); }

DeviceProperties deviceProperties(int device) {
  const auto& api = detail::enterDevice(device, "querying GPU properties");
  CUdevice dev = 0;
  detail::checkResult(api.cuDeviceGet(&dev, device), "cuDeviceGet");
  auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    detail::checkResult(api.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
    return v;
  };
  DeviceProperties p;
  p.index = device;
  char name[256] = {};
  detail::checkResult(api.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  p.name = name;
  p.major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p.maxThreadsPerBlock = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p.maxSharedMemoryPerBlockOptin =
      size_t(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  p.l2CacheBytes = size_t(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  p.memoryClockKhz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  p.memoryBusWidthBits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  detail::checkResult(api.cuDeviceTotalMem(&p.totalMemory, dev), "cuDeviceTotalMem");
  return p;
}

void makeCurrent(int device) { (void)detail::enterDevice(device, "using a GPU"); }

void synchronizeDevice(int device) {
  const auto& api = detail::enterDevice(device, "synchronizing a GPU");
  detail::checkResult(api.cuCtxSynchronize(), concat("synchronizing GPU ", device));
}

}  // namespace loom::cuda
