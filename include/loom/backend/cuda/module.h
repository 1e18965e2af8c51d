// SPDX-License-Identifier: Apache-2.0
// Loading cubins and launching their kernels through the driver API.
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "loom/backend/cuda/stream.h"

struct CUfunc_st;
typedef struct CUfunc_st* CUfunction;

namespace loom::cuda {

struct Dim3 {
  Dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
  unsigned x, y, z;
};

struct LaunchConfig {
  LaunchConfig() = default;
  LaunchConfig(Dim3 grid, Dim3 block, size_t sharedMemoryBytes = 0)
      : grid(grid), block(block), sharedMemoryBytes(sharedMemoryBytes) {}
  Dim3 grid;
  Dim3 block;
  size_t sharedMemoryBytes = 0;  ///< dynamic shared memory
  /// cuLaunchCooperativeKernel: every block resident at once (the driver refuses a grid that
  /// cannot be; the executor checks maxActiveBlocksPerMultiprocessor first).
  bool cooperative = false;
};

std::ostream& operator<<(std::ostream& os, const LaunchConfig& config);

struct ModuleState;

/// One kernel of a loaded module; keeps the module loaded while it lives.
class Function {
 public:
  const std::string& name() const { return name_; }
  CUfunction handle() const { return handle_; }
  int device() const;
  int numRegisters() const;
  int maxThreadsPerBlock() const;
  /// Blocks of `threads` threads and `sharedBytes` dynamic shared memory one SM holds at once
  /// (cuOccupancyMaxActiveBlocksPerMultiprocessor, from the kernel's registers and shared memory).
  int maxActiveBlocksPerMultiprocessor(int threads, size_t sharedBytes) const;

  /// Queues the kernel on `stream`. `args` points at one pointer per kernel parameter, each
  /// pointing at the parameter's value. Raises the kernel's dynamic shared memory limit first when
  /// the launch asks for more than the default 48 KiB. A failure names the kernel and the launch.
  void launch(const LaunchConfig& config, void** args, const Stream& stream) const;

 private:
  friend class Module;
  Function(std::shared_ptr<ModuleState> module, CUfunction handle, std::string name,
           bool dumpLaunch)
      : module_(std::move(module)), handle_(handle), name_(std::move(name)),
        dump_launch_(dumpLaunch) {}

  std::shared_ptr<ModuleState> module_;
  CUfunction handle_ = nullptr;
  std::string name_;
  bool dump_launch_ = false;  ///< LOOM_DUMP=launch_params, read once (a map lookup per launch)
};

/// A cubin loaded on one device (cuModuleLoadData); unloaded when it and its Functions are gone.
class Module {
 public:
  Module(const std::vector<char>& cubin, int device = 0);

  /// The kernel named `name` (the mangled name unless it is extern "C"). UserError when absent.
  Function function(const std::string& name) const;
  int device() const;

 private:
  std::shared_ptr<ModuleState> state_;
};

}  // namespace loom::cuda
