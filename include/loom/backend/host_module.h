// SPDX-License-Identifier: Apache-2.0
// The host backend: compiles CUDA C++ kernel text with the host compiler and runs it on the CPU.
//
//   auto m = HostModule::load(source, "scale", {});           // compile (or reuse the disk cache)
//   void* args[] = {&out, &in, &n};                           // CUDA convention: pointers to args
//   m->launch({blocks}, {256}, /*dynamic_shared_bytes=*/0, args);
//
// Each CUDA thread of a block runs as a fiber; blocks run one after another unless the launch is
// cooperative, in which case all threads of the grid are fibers of one scheduler (needed for
// loom_grid_sync() and for grid reductions that wait on other blocks). Misuse the emulator can see
// (divergent __syncthreads, incomplete shuffle masks, deadlocks) is a UserError. See
// docs/host-backend.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom::backend {

/// Launch dimensions, as CUDA's dim3.
struct Dim3 {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
  Dim3() = default;
  Dim3(uint32_t vx, uint32_t vy = 1, uint32_t vz = 1) : x(vx), y(vy), z(vz) {}
  uint64_t volume() const { return uint64_t{x} * y * z; }
};

/// How to compile a kernel for the host.
struct HostCompileOptions {
  /// Cache directory; empty: $LOOM_CACHE_DIR/host, else $XDG_CACHE_HOME/loom/host, else
  /// ~/.cache/loom/host, else <temp dir>/loom-cache-<uid>/host. Created with mode 0700; used only
  /// while it is a private directory of the current user (see docs/host-backend.md).
  std::filesystem::path cacheDir;
  /// Compiler; empty: $LOOM_HOST_CXX, else "c++". Split on whitespace ("ccache g++"); never run
  /// through a shell.
  std::string compiler;
  /// Flags replacing the default optimization flags ("-O2"), one argument each; the words of
  /// $LOOM_HOST_CXXFLAGS are appended to them (for example "-g -O0" or "-fsanitize=address" when
  /// debugging a kernel).
  std::vector<std::string> flags;
};

/// The most threads a cooperative launch runs (all of them fibers of one scheduler).
inline constexpr int64_t kMaxCooperativeThreads = int64_t{1} << 18;

/// How to run one launch.
struct HostLaunchOptions {
  /// Run all blocks concurrently (as fibers of one scheduler), like a cooperative launch.
  bool cooperative = false;
  /// Stack size of each fiber; a guard page below it turns an overflow into a crash, not
  /// corruption.
  size_t stackBytes = 64 * 1024;
};

/// One compiled kernel, loaded from a shared object.
class HostModule {
 public:
  /// Compiles `source` (CUDA C++ defining the __global__ function `kernelName`) against the
  /// emulation header, or loads it from the disk cache after checking its checksum. Safe to call
  /// from many threads at once. Throws UserError with the compiler log and the source path when
  /// compilation fails.
  static std::unique_ptr<HostModule> load(std::string_view source, std::string_view kernelName,
                                          const HostCompileOptions& options = {});

  ~HostModule();
  HostModule(const HostModule&) = delete;
  HostModule& operator=(const HostModule&) = delete;

  /// Runs the kernel. args[i] points at the value of the kernel's parameter i (the convention of
  /// cuLaunchKernel). Throws UserError for bad dimensions and for misuse detected while running.
  void launch(Dim3 grid, Dim3 block, size_t dynamicSharedBytes, void** args,
              const HostLaunchOptions& options = {}) const;

  const std::string& kernelName() const { return kernelName_; }
  /// The kernel source as compiled (emulation include and trampoline added).
  const std::filesystem::path& sourcePath() const { return sourcePath_; }
  const std::filesystem::path& objectPath() const { return objectPath_; }
  /// True when the shared object came from the cache and the compiler did not run.
  bool cacheHit() const { return cacheHit_; }

  /// How many times this process has run the host compiler (for tests and statistics).
  static uint64_t compilerRuns();

 private:
  HostModule() = default;

  std::string kernelName_;
  std::filesystem::path sourcePath_;
  std::filesystem::path objectPath_;
  bool cacheHit_ = false;
  std::filesystem::path temporaryDir_;  ///< removed with the module (built outside the cache)
  void* handle_ = nullptr;
  void (*entry_)(void**) = nullptr;
  bool dumpLaunches_ = false;  ///< LOOM_DUMP=launch_params, read once at load (not per launch)
};

/// The text of the emulation header (csrc/backend/host/runtime/cuda_emulation.h), embedded.
std::string_view cudaEmulationHeader();

}  // namespace loom::backend
