// SPDX-License-Identifier: Apache-2.0
// HostModule: loads a host-compiled kernel object and launches it through the fiber scheduler.
#include "loom/backend/host_module.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

#include "backend/host/embedded_runtime.h"
#include "backend/host/fiber_scheduler.h"
#include "backend/host/host_compiler.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/options.h"
#include "loom/support/warning.h"

namespace loom::backend {

namespace {

using ::loom::detail::concat;

/// Serializes dlopen and dlclose. The dynamic loader holds its own lock, so this costs nothing,
/// but ThreadSanitizer cannot see that lock (ld.so is not instrumented) and reported the loader's
/// bookkeeping, allocated by one thread's dlopen and freed by another's dlclose, as a race.
std::mutex& loaderMutex() {
  static std::mutex mutex;
  return mutex;
}

/// dlopen + symbol lookup; returns an error text instead of throwing so the caller can retry.
std::string openObject(const std::filesystem::path& path, const std::string& entryName,
                       void*& handle, void (*&entry)(void**)) {
  std::lock_guard<std::mutex> lock(loaderMutex());
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    return std::string("dlopen failed: ") + (e ? e : "unknown error");
  }
  auto version = reinterpret_cast<unsigned (*)()>(dlsym(handle, "loom_emu_abi_version"));
  entry = reinterpret_cast<void (*)(void**)>(dlsym(handle, entryName.c_str()));
  auto bind = reinterpret_cast<void (*)(ptrdiff_t)>(dlsym(handle, "loom_emu_bind"));
  std::string error;
  if (!version || !entry || !bind) {
    error = "the object lacks " + entryName + " or the emulation runtime symbols";
  } else if (version() != LOOM_EMU_ABI_VERSION) {
    error = "the object was built for emulation ABI " + std::to_string(version()) + ", expected " +
            std::to_string(LOOM_EMU_ABI_VERSION);
  }
  if (!error.empty()) {
    dlclose(handle);
    handle = nullptr;
  } else {
    bind(host::runningThreadOffset());
  }
  return error;
}

}  // namespace

std::unique_ptr<HostModule> HostModule::load(std::string_view source, std::string_view kernelName,
                                             const HostCompileOptions& options) {
  LOOM_CHECK(!kernelName.empty(), "host backend: a kernel name is required");
  const std::string unit = host::hostTranslationUnit(source, kernelName);
  const std::string entryName = host::trampolineName(kernelName);
  std::unique_ptr<HostModule> m(new HostModule());
  m->kernelName_ = std::string(kernelName);
  m->dumpLaunches_ = DumpOptions::fromEnvironment().has(DumpOption::LaunchParams);
  host::CompiledObject obj = host::compileForHost(unit, kernelName, options);
  std::string error = openObject(obj.objectPath, entryName, m->handle_, m->entry_);
  if (!error.empty() && obj.cacheHit) {
    // A verified entry that does not load (built for another emulation ABI, say): build it again
    // rather than failing.
    warn(concat("host kernel cache entry ", obj.objectPath.parent_path().string(),
                " could not be loaded (", error, "); rebuilding"));
    obj = host::compileForHost(unit, kernelName, options, /*forceCompile=*/true);
    error = openObject(obj.objectPath, entryName, m->handle_, m->entry_);
  }
  m->temporaryDir_ = obj.temporaryDir;
  LOOM_CHECK(error.empty(), "host backend: cannot load kernel ", kernelName, " from ",
             obj.objectPath.string(), ": ", error, " (source: ", obj.sourcePath.string(), ")");
  m->sourcePath_ = obj.sourcePath;
  m->objectPath_ = obj.objectPath;
  m->cacheHit_ = obj.cacheHit;
  return m;
}

HostModule::~HostModule() {
  if (handle_) {
    std::lock_guard<std::mutex> lock(loaderMutex());
    dlclose(handle_);
  }
  if (!temporaryDir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temporaryDir_, ec);
  }
}

void HostModule::launch(Dim3 grid, Dim3 block, size_t dynamicSharedBytes, void** args,
                        const HostLaunchOptions& options) const {
  if (dumpLaunches_) {
    // To the dump sink like every dump, in one insertion.
    dumpSink() << fmt::format(
        "[loom launch_params] host kernel {} grid ({},{},{}) block ({},{},{}) dynamic shared {} "
        "bytes{}\n",
        kernelName_, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamicSharedBytes,
        options.cooperative ? " cooperative" : "");
  }
  host::GridLaunch l;
  l.grid = grid;
  l.block = block;
  l.dynamicSharedBytes = dynamicSharedBytes;
  l.options = options;
  l.entry = entry_;
  l.args = args;
  l.kernelName = kernelName_;
  host::runGrid(l);
}

uint64_t HostModule::compilerRuns() { return host::hostCompilerRuns(); }

std::string_view cudaEmulationHeader() { return host::embeddedCudaEmulationHeader(); }

}  // namespace loom::backend
