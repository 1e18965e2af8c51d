// SPDX-License-Identifier: Apache-2.0
// Runs a kernel's CUDA threads as fibers: the execution model of the host backend.
#pragma once

#include <cstddef>

#include "backend/host/runtime/loom_emu_abi.h"
#include "loom/backend/host_module.h"

namespace loom::backend::host {

/// Everything one launch needs.
struct GridLaunch {
  Dim3 grid;
  Dim3 block;
  size_t dynamicSharedBytes = 0;
  HostLaunchOptions options;
  /// The trampoline: calls the kernel with CUDA-style packed arguments.
  void (*entry)(void**) = nullptr;
  void** args = nullptr;
  std::string kernelName;
};

/// Runs every thread of the grid to completion. Blocks run one after another, each block's
/// threads as fibers switched at barriers and warp collectives; with options.cooperative all
/// threads of the grid share one scheduler. Throws UserError for misuse (divergent barrier,
/// incomplete warp mask, deadlock, grid sync without a cooperative launch) and for exceptions or
/// traps raised by the kernel.
void runGrid(const GridLaunch& launch);

/// Where the running fiber's LoomEmuThread is found: the offset from the thread pointer of this
/// library's thread-local pointer to it, the same on every thread. Kernel objects get it through
/// loom_emu_bind when they are loaded.
ptrdiff_t runningThreadOffset();

/// How fibers switch stacks in this build: "fcontext" (Boost.Context) or "ucontext" (glibc's
/// swapcontext, a system call per switch); CMake's LOOM_HOST_FIBERS chooses.
const char* fiberSwitchName();

}  // namespace loom::backend::host
