// SPDX-License-Identifier: Apache-2.0
// ComputeDevice: where kernels run. One object carries the backend and the device index, so the
// executor and the runtime never switch on a backend tag or assume GPU 0.
//
//   std::shared_ptr<const exec::ComputeDevice> gpu = exec::makeComputeDevice(Backend::Cuda, 1);
//   ke.compile(fusion, gpu);               // kernels built for cuda:1's architecture, loaded there
//
// Two implementations: the host backend (the kernel text compiled by the host compiler and run on
// the CPU as fibers; tensors are host tensors) and one GPU (NVRTC and the driver; tensors are CUDA
// tensors on that GPU, host tensors are copied in and out for convenience). A build without the
// CUDA backend has only the first; asking for a GPU there is a UserError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/backend/cuda/driver.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/eval/argument.h"
#include "loom/exec/gemm.h"
#include "loom/ir/fusion.h"
#include "loom/support/options.h"
#include "loom/support/phase_timer.h"
#include "loom/tensor/tensor.h"

namespace loom::exec {

enum class Backend : uint8_t { Auto, Host, Cuda };
std::string_view backendName(Backend b);  ///< "auto", "host", "cuda"
/// Resolves Auto (LOOM_BACKEND, then GPU presence); UserError for a bad LOOM_BACKEND value.
Backend resolveBackend(Backend b);
/// What resolveBackend(b) picks and why, for programs that tell their user: "asked for by the
/// caller" (b is not Auto), "LOOM_BACKEND=host", "1 GPU(s) seen by the CUDA driver", or "no GPU
/// found: " and the driver's reason ("no CUDA driver (libcuda.so.1) found", a build without the
/// CUDA backend).
struct BackendChoice {
  Backend backend;
  std::string reason;
};
BackendChoice chooseBackend(Backend b);
/// GPUs the driver sees; 0 without a CUDA backend or a driver.
int gpuCount();

/// Launch parameters computed from the bound extents.
struct LaunchParams {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  size_t sharedBytes = 0;
  /// All blocks resident at once (kir::Kernel::cooperative: the kernel waits at grid barriers):
  /// cuLaunchCooperativeKernel on a GPU, HostLaunchOptions::cooperative on the host backend.
  bool cooperative = false;
  std::string toString() const;
};

/// One kernel built and loaded on a device.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  /// Runs (host) or queues on `stream` (cuda) one launch; `args` are pointers to the arguments,
  /// CUDA's convention.
  virtual void launch(const LaunchParams& launch, void** args, CUstream stream) const = 0;
  /// The most threads a block of this kernel can have on its device: on a GPU what its registers
  /// per thread allow (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024 on the host backend.
  virtual int64_t maxThreadsPerBlock() const { return 1024; }
  /// The most blocks of `threadsPerBlock` threads and `sharedBytes` dynamic shared memory that
  /// can be resident at once, the bound of a cooperative launch: on a GPU the occupancy the
  /// driver reports for this kernel (its registers and shared memory) times the SM count; on the
  /// host backend what its fiber scheduler runs at once (2^18 threads).
  virtual int64_t maxResidentBlocks(int64_t threadsPerBlock, size_t sharedBytes) const = 0;
  /// Registers per thread on a GPU (the driver's count after ptxas); 0 on the host backend,
  /// where a kernel has none to count.
  virtual int64_t registersPerThread() const { return 0; }
};

/// A point in a stream's work (ComputeDevice::markStream), to time what was queued between two
/// of them: a recorded CUDA event on a GPU, the host clock on the host backend (whose work is
/// done when the call that queued it returns).
class StreamMark {
 public:
  virtual ~StreamMark() = default;
};

class ComputeDevice {
 public:
  virtual ~ComputeDevice() = default;

  virtual Backend backend() const = 0;
  /// The GPU's index among the driver's devices; 0 on the host backend.
  virtual int index() const = 0;
  /// "host" or "cuda:<index>".
  std::string name() const;
  /// Where tensors this device computes on live (Device::cpu() on the host backend).
  virtual Device tensorDevice() const = 0;
  /// The GPU's properties when there is a GPU and a driver (schedulers size launches from them);
  /// nullopt on the host backend or without a driver.
  virtual std::optional<cuda::DeviceProperties> gpuProperties() const = 0;
  /// What generated code may assume about the target (the SM count on a GPU).
  virtual codegen::CodegenOptions codegenOptions() const = 0;

  /// UserError unless kernels can run here now (a GPU needs a driver); `purpose` says why.
  virtual void require(std::string_view purpose) const = 0;
  /// Builds `kernel` (or finds it in the caches) and loads it; `timer` marks the phases (the
  /// compilers' own dumps, ptxas and host_compile, follow LOOM_DUMP where they run).
  virtual std::unique_ptr<LoadedKernel> load(const codegen::GeneratedKernel& kernel,
                                             PhaseTimer& timer) const = 0;

  /// Fresh contiguous storage here (stream-ordered on a GPU).
  virtual Tensor empty(std::span<const int64_t> sizes, DataType dtype, CUstream stream) const = 0;
  /// Zeroes a fresh tensor (grid-reduction semaphores), or fills it with values a check can tell
  /// from written ones (NaN for floats; ExecutorOptions::poisonOutputs).
  virtual void zero(const Tensor& fresh, CUstream stream) const = 0;
  virtual void poison(const Tensor& fresh, CUstream stream) const = 0;
  /// Copies `bytes` bytes between two buffers of this device (queued on `stream` on a GPU).
  virtual void copyBytes(void* dst, const void* src, size_t bytes, CUstream stream) const = 0;
  /// Copies the elements of `src` into `dst` (two tensors of this device with the same sizes and
  /// dtype), each through its own strides: the bytes between `dst`'s elements are left alone.
  /// Queued on `stream` on a GPU. `dst`'s elements must have distinct addresses.
  virtual void copyElements(const Tensor& dst, const Tensor& src, CUstream stream) const = 0;
  /// An output that is also an input is returned as a copy: contiguous on the host; on a GPU the
  /// memory the view spans, same sizes and strides, queued on `stream`.
  virtual Tensor copyForOutput(const Tensor& t, CUstream stream) const = 0;

  /// Runs one GEMM (exec/gemm.h) on this device's pointers, queued on `stream` on a GPU:
  /// cuBLASLt there (opened at run time; UserError naming what was tried when it cannot be
  /// loaded), the blocked host GEMM on the host backend.
  virtual void gemm(const GemmProblem& problem, CUstream stream) const = 0;
  /// True when gemm() reads a `rows` x `cols` operand with these strides as it is; false when
  /// the caller must pass a dense copy instead (cuBLASLt needs one of the two dims unit-strided
  /// and the other a valid leading dimension). The host GEMM reads any strides.
  virtual bool gemmReads(int64_t rows, int64_t cols, int64_t rowStride,
                         int64_t colStride) const = 0;

  /// Checks that each tensor argument is where this device can use it: host tensors on the host
  /// backend; on a GPU either all host tensors (copied) or all CUDA tensors on this GPU.
  /// UserError naming the input and what was expected. Arguments past the fusion's inputs and
  /// non-tensors are left to ExpressionEvaluator::bindInputs. Returns true for CUDA tensors.
  bool checkArguments(const ir::Fusion& fusion, std::span<const eval::Argument> args) const;
  /// True when run() must copy `args` in and the outputs out: host tensors on a GPU.
  bool copiesArguments(std::span<const eval::Argument> args) const;
  /// `args` with every tensor copied here on `stream` (after checkArguments), and the host
  /// copies of a run's outputs (waits for `stream`): the copy-in/copy-out convenience path.
  virtual std::vector<eval::Argument> copyIn(const ir::Fusion& fusion,
                                             std::span<const eval::Argument> args,
                                             CUstream stream) const = 0;
  virtual void copyOut(std::vector<Tensor>& outputs, CUstream stream) const = 0;

  /// A mark of `stream` now, and the seconds of the work queued between two marks of one stream
  /// (waits for `end`): what a profile times each kernel with. By default the host clock, right
  /// for a device whose work is done when the call that queued it returns (the host backend);
  /// a GPU records events.
  virtual std::unique_ptr<StreamMark> markStream(CUstream stream) const;
  virtual double secondsBetween(const StreamMark& start, const StreamMark& end) const;
};

/// The device of `backend` (Auto resolved): the host backend, or GPU `gpu` (UserError for a
/// negative index or a build without the CUDA backend; a missing driver is reported when a
/// kernel is first built or run, so a device can be named on a machine without a GPU).
std::shared_ptr<const ComputeDevice> makeComputeDevice(Backend backend, int gpu = 0);

}  // namespace loom::exec
