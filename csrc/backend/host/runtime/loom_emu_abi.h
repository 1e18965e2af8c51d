// SPDX-License-Identifier: Apache-2.0
// The binary interface between a host-compiled kernel (.so) and Loom's fiber scheduler.
//
// Both sides include this file: the kernel through cuda_emulation.h, the library directly. It holds
// only plain structs and function pointers, so the kernel object needs no symbols from the process
// that loads it: the scheduler hands each fiber a LoomEmuThread whose `api` table it fills in, and
// the object finds the running fiber's LoomEmuThread at the thread-pointer offset given to its
// loom_emu_bind when it is loaded.
// Bump LOOM_EMU_ABI_VERSION whenever a layout below changes (cached .so files check it).
#ifndef LOOM_EMU_ABI_H
#define LOOM_EMU_ABI_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_EMU_ABI_VERSION 2

/// CUDA's uint3, under a name that cannot clash with the library's own types.
struct LoomEmuUint3 {
  unsigned x, y, z;
};

/// Warp-wide collective operations (all lanes named in the mask take part).
enum LoomEmuWarpOp {
  LOOM_EMU_SHFL_IDX = 0,
  LOOM_EMU_SHFL_UP = 1,
  LOOM_EMU_SHFL_DOWN = 2,
  LOOM_EMU_SHFL_XOR = 3,
  LOOM_EMU_BALLOT = 4,
  LOOM_EMU_ANY = 5,
  LOOM_EMU_ALL = 6,
  LOOM_EMU_SYNCWARP = 7,
  LOOM_EMU_WARP_OP_COUNT = 8
};

/// What a block barrier computes besides synchronizing (__syncthreads_count/_and/_or).
enum LoomEmuBarrierOp {
  LOOM_EMU_BARRIER_PLAIN = 0,
  LOOM_EMU_BARRIER_COUNT = 1,
  LOOM_EMU_BARRIER_AND = 2,
  LOOM_EMU_BARRIER_OR = 3
};

struct LoomEmuThread;

/// Services of the scheduler. Every call may switch to another fiber before it returns.
struct LoomEmuApi {
  unsigned abi_version;
  int (*sync_threads)(struct LoomEmuThread* t, int op, int predicate);
  uint64_t (*warp_collective)(struct LoomEmuThread* t, int op, unsigned mask, uint64_t value,
                              int param, int width);
  void (*grid_sync)(struct LoomEmuThread* t);
  /// Per-block storage of a static __shared__ variable; `site` identifies the declaration.
  void* (*static_shared)(struct LoomEmuThread* t, unsigned site, size_t bytes, size_t align);
  /// Lets other fibers run (spin loops on atomics, __nanosleep, __threadfence).
  void (*yield)(struct LoomEmuThread* t);
  /// Stops the launch with an error (__trap, failed device assert). Does not return.
  void (*trap)(struct LoomEmuThread* t, const char* message);
};

/// The state of one emulated CUDA thread, owned by the scheduler.
struct LoomEmuThread {
  struct LoomEmuUint3 thread_idx;
  struct LoomEmuUint3 block_idx;
  struct LoomEmuUint3 block_dim;
  struct LoomEmuUint3 grid_dim;
  void* dynamic_smem;
  unsigned lane;
  unsigned spin_count;
  const struct LoomEmuApi* api;
  void* impl;
};

#endif  // LOOM_EMU_ABI_H
