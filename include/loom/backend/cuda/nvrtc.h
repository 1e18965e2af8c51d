// SPDX-License-Identifier: Apache-2.0
// CUDA C++ -> cubin with NVRTC (loaded lazily), with register/spill reports and a disk cache.
//
//   NvrtcCompiler compiler;                          // cache under defaultCacheRoot()/cuda
//   CompileResult r = compiler.compile(source, CompileOptions::forArch("sm_90", "vadd"));
//   r.kernel("vadd")->registers;
//
// libnvrtc is opened with dlopen on first use (libnvrtc.so.13, .so.12, .so, then the toolkit's
// lib64), so nothing links against it. The cache key hashes the source, the exact option list,
// the NVRTC version and the stamp of the library file (path, size, modification time, inode); a
// hit does not call the NVRTC compiler at all (stats() counts both). Nor does it load libnvrtc:
// the version and stamp are remembered under <cache root>/identities per library search (the
// variables and folders that decide which file dlopen finds) while that file's stamp is unchanged
// (support/tool_identity.h), so only a miss loads the library.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/backend/cuda/cubin_cache.h"

namespace loom::cuda {

struct CompileOptions {
  /// Target, e.g. "sm_90". Empty: the compute capability of GPU `device` (needs a driver).
  std::string arch;
  int device = 0;
  bool fastMath = false;  ///< --use_fast_math
  bool lineInfo = false;  ///< -lineinfo, for profilers and compute-sanitizer
  /// --Ofast-compile level (NVRTC 13): "" (off), "0", "min", "mid" or "max". Off by default:
  /// "min" cuts NVRTC time by about a third on a layer_norm kernel, but its ptxas part changes the
  /// code (a call to a software remainder helper appears), so it stays off until measured on a
  /// GPU; "mid" and "max" move register arrays to the stack. The environment variable
  /// LOOM_NVRTC_FAST_COMPILE, when set, overrides this (docs/cuda-backend.md).
  std::string fastCompile;
  /// Appended verbatim (e.g. "-DN=4", "--maxrregcount=64").
  std::vector<std::string> extraOptions;
  /// Names the program in messages and the file the source is written to on failure.
  std::string name = "kernel";

  /// Options for `arch` (empty: the current device's), naming the program `name`.
  static CompileOptions forArch(std::string arch, std::string name = "kernel") {
    CompileOptions o;
    o.arch = std::move(arch);
    o.name = std::move(name);
    return o;
  }
};

/// What ptxas reported for one function.
struct KernelResources {
  std::string function;  ///< as ptxas names it (mangled unless extern "C")
  int registers = 0;
  int64_t spillStores = 0;  ///< bytes
  int64_t spillLoads = 0;   ///< bytes
  int64_t stackFrame = 0;   ///< bytes
  int64_t sharedMemory = 0; ///< static shared memory, bytes
};

struct CompileResult {
  std::string arch;         ///< "sm_90"
  std::vector<char> cubin;
  std::string log;          ///< NVRTC's program log, ptxas info included
  std::vector<KernelResources> kernels;
  uint64_t key = 0;         ///< the cache key
  bool cacheHit = false;

  /// The report of one function, or nullptr.
  const KernelResources* kernel(std::string_view function) const;
  /// True when any function spills registers to local memory.
  bool hasSpills() const;
};

/// Counts for tests and benchmarks: a warm start has nvrtcCompiles == 0.
struct CompileStats {
  uint64_t nvrtcCompiles = 0;
  uint64_t cacheHits = 0;
  uint64_t cacheMisses = 0;
  uint64_t cacheStores = 0;
};

class NvrtcCompiler {
 public:
  /// Caches under defaultCacheRoot()/"cuda".
  NvrtcCompiler();
  /// Caches under `cubinCacheDir`; nullopt disables the cache.
  explicit NvrtcCompiler(std::optional<std::filesystem::path> cubinCacheDir);

  /// Compiles (or fetches from the cache). Throws UserError with the NVRTC log and the path of the
  /// written source when the source does not compile; UnavailableError without NVRTC.
  CompileResult compile(std::string_view source, const CompileOptions& options);

  CompileStats stats() const;
  /// Where failed sources are written (a private folder, 0700): the cache dir's sources/, else
  /// <temp dir>/loom-cuda-sources-<uid>.
  std::filesystem::path sourceDir() const;
  const std::optional<CubinCache>& cache() const { return cache_; }

 private:
  std::string writeFailedSource(const std::string& source, const std::string& name,
                                uint64_t key) const;

  std::optional<CubinCache> cache_;
  mutable std::mutex mutex_;
  CompileStats stats_;
};

/// True when libnvrtc can be loaded. Never throws.
bool nvrtcAvailable() noexcept;
/// Why NVRTC is not usable; empty when it is.
std::string nvrtcUnavailableReason() noexcept;
/// NVRTC's (major, minor). Throws UnavailableError without NVRTC.
std::pair<int, int> nvrtcVersion();
/// The file libnvrtc was loaded from (loads it). Throws UnavailableError without NVRTC.
std::string nvrtcLibraryPath();
/// Whether this process has tried to load libnvrtc (a warm start whose cubins all come from the
/// cache does not).
bool nvrtcLoaded() noexcept;

/// The exact NVRTC option list for a resolved arch ("sm_90") and NVRTC major version.
std::vector<std::string> nvrtcOptions(const CompileOptions& options, const std::string& arch,
                                      int nvrtcMajor);

/// Parses "ptxas info" lines of a compiler log into one record per function.
std::vector<KernelResources> parsePtxasInfo(std::string_view log);

}  // namespace loom::cuda
