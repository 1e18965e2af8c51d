// SPDX-License-Identifier: Apache-2.0
// NVRTC, loaded lazily: option lists, compilation to cubin, ptxas reports and the cache lookup.
#include "loom/backend/cuda/nvrtc.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "loom/backend/cuda/driver.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/hash.h"
#include "loom/support/options.h"
#include "loom/support/private_dir.h"
#include "loom/support/private_file.h"
#include "loom/support/strings.h"
#include "loom/support/tool_identity.h"

#define LOOM_NVRTC_FUNCTIONS(X)                                                           \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)    \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)                 \
  X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

namespace loom::cuda {
namespace {

using ::loom::detail::concat;

struct NvrtcApi {
#define LOOM_NVRTC_DECLARE(name) decltype(&::name) name = nullptr;
  LOOM_NVRTC_FUNCTIONS(LOOM_NVRTC_DECLARE)
#undef LOOM_NVRTC_DECLARE
};

struct NvrtcState {
  NvrtcApi api;
  std::string reason;  // empty when usable
  std::string library; // the file that was opened
  std::string loadedPath;  // the file the loader opened for it (dladdr), when usable
  int major = 0, minor = 0;
};

std::atomic<bool> gNvrtcOpened{false};

std::vector<std::string> candidateLibraries() {
  std::vector<std::string> names;
  if (auto lib = getEnv("LOOM_NVRTC_LIBRARY"); lib && !lib->empty()) names.push_back(*lib);
  for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.emplace_back(n);
  for (auto home : {getEnv("CUDA_HOME"), getEnv("CUDA_PATH"), std::optional<std::string>("/usr/local/cuda")}) {
    if (!home || home->empty()) continue;
    for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
      names.push_back(*home + "/lib64/" + n);
    }
  }
  return names;
}

// Never throws; the library stays loaded for the process's life.
std::unique_ptr<NvrtcState> openNvrtc() {
  gNvrtcOpened = true;
  auto state = std::make_unique<NvrtcState>();
  void* handle = nullptr;
  auto names = candidateLibraries();
  for (const auto& name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      state->library = name;
      break;
    }
  }
  if (handle == nullptr) {
    state->reason = concat("NVRTC (libnvrtc.so) not found; tried ", join(names),
                           " (set LOOM_NVRTC_LIBRARY or CUDA_HOME)");
    return state;
  }
  std::vector<std::string> missing;
#define LOOM_NVRTC_LOOKUP(name)                                                       \
  state->api.name = reinterpret_cast<decltype(state->api.name)>(dlsym(handle, #name)); \
  if (state->api.name == nullptr) missing.emplace_back(#name);
  LOOM_NVRTC_FUNCTIONS(LOOM_NVRTC_LOOKUP)
#undef LOOM_NVRTC_LOOKUP
  if (!missing.empty()) {
    state->reason = concat("NVRTC (", state->library, ") lacks ", join(missing));
    return state;
  }
  if (state->api.nvrtcVersion(&state->major, &state->minor) != NVRTC_SUCCESS) {
    state->reason = concat("NVRTC (", state->library, ") did not report its version");
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(state->api.nvrtcVersion), &info) != 0 &&
      info.dli_fname != nullptr) {
    state->loadedPath = info.dli_fname;
  }
  return state;
}

const NvrtcState& nvrtcState() {
  static const std::unique_ptr<NvrtcState> state = openNvrtc();
  return *state;
}

const NvrtcState& requireNvrtc(std::string_view purpose) {
  const NvrtcState& s = nvrtcState();
  if (!s.reason.empty()) {
    ::loom::detail::throwUnavailable(__FILE__, __LINE__,
                                     concat(s.reason, ": NVRTC is required for ", purpose));
  }
  return s;
}

// What decides which libnvrtc dlopen finds (candidateLibraries' order): the variables naming
// it or its folders, the loader's cache and the stamps of the folders searched (adding or
// removing a library changes its folder's modification time). The RUNPATH of the program is
// not in it (fixed per build).
std::string nvrtcSearchIdentity() {
  std::string id =
      "nvrtc search 1\nLOOM_NVRTC_LIBRARY=" + getEnv("LOOM_NVRTC_LIBRARY").value_or("") +
      "\nLD_LIBRARY_PATH=" + getEnv("LD_LIBRARY_PATH").value_or("") + "\n";
  std::vector<std::filesystem::path> places = {"/etc/ld.so.cache"};
  if (auto lib = getEnv("LOOM_NVRTC_LIBRARY"); lib && lib->find('/') != std::string::npos) {
    places.push_back(std::filesystem::path(*lib).parent_path());
  }
  for (const std::string& dir : split(getEnv("LD_LIBRARY_PATH").value_or(""), ':')) {
    if (!dir.empty()) places.emplace_back(dir);
  }
  for (const std::string& name : candidateLibraries()) {
    if (name.find('/') != std::string::npos) {
      places.push_back(std::filesystem::path(name).parent_path());
    }
  }
  for (const std::filesystem::path& p : places) {
    id += p.string() + ": " + fileStamp(p).value_or("absent") + "\n";
  }
  return id;
}

// Thrown inside rememberedProbe when NVRTC cannot be loaded: nothing is remembered.
struct NvrtcMissing {};

// NVRTC's version and the stamp of the library file, for cache keys: read from the record
// rememberedProbe keeps for the search identity while that file's stamp is unchanged, so a warm
// start does not dlopen libnvrtc (100 MB) just to key its cubins.
struct NvrtcKey {
  bool available = false;
  int major = 0, minor = 0;
  std::string stamp;  // fileStamp of the library
};

NvrtcKey parseNvrtcKey(const std::string& answer, std::string* path) {
  NvrtcKey k;
  const std::vector<std::string> lines = split(answer, '\n');
  if (lines.size() != 3) return k;
  std::istringstream version(lines[0]);
  if (!(version >> k.major >> k.minor)) return k;
  if (path != nullptr) *path = lines[1];
  k.stamp = lines[2];
  k.available = true;
  return k;
}

NvrtcKey nvrtcKey() {
  static const NvrtcKey key = [] {
    const std::optional<std::filesystem::path> root = defaultCacheRoot();
    auto probe = []() -> std::string {
      const NvrtcState& s = nvrtcState();
      if (!s.reason.empty() || s.loadedPath.empty()) throw NvrtcMissing{};
      const std::optional<std::string> stamp = fileStamp(s.loadedPath);
      if (!stamp) throw NvrtcMissing{};
      return concat(s.major, " ", s.minor, "\n", s.loadedPath, "\n", *stamp);
    };
    // A remembered answer holds while the library file it names has the same stamp.
    auto valid = [](const std::string& answer) {
      std::string path;
      const NvrtcKey k = parseNvrtcKey(answer, &path);
      return k.available && fileStamp(path) == k.stamp;
    };
    try {
      if (!root) return parseNvrtcKey(probe(), nullptr);
      return parseNvrtcKey(rememberedProbe(*root / "identities", "nvrtc", nvrtcSearchIdentity(),
                                           probe, nullptr, valid),
                           nullptr);
    } catch (const NvrtcMissing&) {
      return NvrtcKey{};
    }
  }();
  return key;
}

// Destroys the program on every path out of compile().
struct ProgramGuard {
  const NvrtcApi& api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api.nvrtcDestroyProgram(&program);
  }
};

int64_t numberBefore(std::string_view line, std::string_view suffix) {
  auto pos = line.find(suffix);
  if (pos == std::string_view::npos) return 0;
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end) return 0;
  return std::stoll(std::string(line.substr(begin, end - begin)));
}

void dumpResources(const std::string& name, const CompileResult& r) {
  for (const auto& k : r.kernels) {
    dumpSink() << "ptxas " << name << " " << r.arch << " " << k.function << ": " << k.registers
              << " registers, " << k.spillStores << " bytes spill stores, " << k.spillLoads
              << " bytes spill loads, " << k.stackFrame << " bytes stack, " << k.sharedMemory
              << " bytes smem" << (r.cacheHit ? " (cached)" : "") << "\n";
  }
}

}  // namespace

const KernelResources* CompileResult::kernel(std::string_view function) const {
  for (const auto& k : kernels) {
    if (k.function == function) return &k;
  }
  return nullptr;
}

bool CompileResult::hasSpills() const {
  for (const auto& k : kernels) {
    if (k.spillStores != 0 || k.spillLoads != 0) return true;
  }
  return false;
}

bool nvrtcAvailable() noexcept {
  try {
    return nvrtcState().reason.empty();
  } catch (...) {
    return false;
  }
}

std::string nvrtcUnavailableReason() noexcept {
  try {
    return nvrtcState().reason;
  } catch (...) {
    return "NVRTC could not be queried";
  }
}

bool nvrtcLoaded() noexcept { return gNvrtcOpened.load(); }

std::string nvrtcLibraryPath() { return requireNvrtc("finding the NVRTC library file").loadedPath; }

std::pair<int, int> nvrtcVersion() {
  const NvrtcState& s = requireNvrtc("querying the NVRTC version");
  return {s.major, s.minor};
}

// NVRTC 13 keeps its own compilation cache (in the driver's compute cache, active only where a
// driver is installed); a compile served from it runs no ptxas and so leaves no register report in
// the log. Loom caches cubins itself, keyed the same way, so NVRTC's cache is turned off.
// --minimal (NVRTC 12.4 and later) leaves out the texture/surface functions, device-side launch
// and the CUDA runtime's types that kernels never use; it removes a fixed part of every compile
// (docs/cuda-backend.md has the numbers). LOOM_NVRTC_OPTIONS (space-separated) goes last, for
// trying options such as --Ofast-compile=min on a GPU machine without rebuilding; being part of
// the option list, it is part of the cache key.
std::vector<std::string> nvrtcOptions(const CompileOptions& options, const std::string& arch,
                                      int nvrtcMajor) {
  std::vector<std::string> out = {"--gpu-architecture=" + arch, "-std=c++17", "-default-device",
                                  "--ptxas-options=-v"};
  if (nvrtcMajor >= 13) {
    out.emplace_back("--no-cache");
    out.emplace_back("--minimal");
  }
  if (options.fastMath) out.emplace_back("--use_fast_math");
  if (options.lineInfo) out.emplace_back("-lineinfo");
  std::string level = options.fastCompile;
  if (auto env = getEnv("LOOM_NVRTC_FAST_COMPILE"); env) level = *env;
  LOOM_CHECK(level.empty() || level == "0" || level == "min" || level == "mid" || level == "max",
             "NVRTC fast-compile level must be empty, 0, min, mid or max (CompileOptions::"
             "fastCompile or LOOM_NVRTC_FAST_COMPILE), got '", level, "'");
  if (nvrtcMajor >= 13 && !level.empty() && level != "0") {
    out.push_back("--Ofast-compile=" + level);
  }
  out.insert(out.end(), options.extraOptions.begin(), options.extraOptions.end());
  if (auto env = getEnv("LOOM_NVRTC_OPTIONS"); env && !env->empty()) {
    for (const std::string& word : split(*env, ' ')) {
      if (!word.empty()) out.push_back(word);
    }
  }
  return out;
}

// ptxas -v prints, per function:
//   ptxas info    : Compiling entry function 'vadd' for 'sm_90'
//   ptxas info    : Function properties for vadd
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0]
std::vector<KernelResources> parsePtxasInfo(std::string_view log) {
  std::vector<KernelResources> out;
  KernelResources* current = nullptr;
  auto select = [&](std::string_view name) {
    for (auto& k : out) {
      if (k.function == name) return current = &k;
    }
    out.push_back(KernelResources{std::string(name)});
    return current = &out.back();
  };
  for (const std::string& raw : split(log, '\n')) {
    std::string_view line = trim(raw);
    if (auto p = line.find("Compiling entry function '"); p != std::string_view::npos) {
      auto rest = line.substr(p + 26);
      select(rest.substr(0, rest.find('\'')));
    } else if (auto q = line.find("Function properties for "); q != std::string_view::npos) {
      select(trim(line.substr(q + 24)));
    } else if (current != nullptr && line.find("bytes stack frame") != std::string_view::npos) {
      current->stackFrame = numberBefore(line, "bytes stack frame");
      current->spillStores = numberBefore(line, "bytes spill stores");
      current->spillLoads = numberBefore(line, "bytes spill loads");
    } else if (current != nullptr && line.find(" registers") != std::string_view::npos &&
               line.find("Used ") != std::string_view::npos) {
      current->registers = int(numberBefore(line, " registers"));
      current->sharedMemory = numberBefore(line, "bytes smem");
    }
  }
  return out;
}

NvrtcCompiler::NvrtcCompiler() {
  if (auto root = defaultCacheRoot()) cache_.emplace(*root / "cuda");
}

NvrtcCompiler::NvrtcCompiler(std::optional<std::filesystem::path> cubinCacheDir) {
  if (cubinCacheDir) cache_.emplace(std::move(*cubinCacheDir));
}

CompileStats NvrtcCompiler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::filesystem::path NvrtcCompiler::sourceDir() const {
  if (cache_) return cache_->dir() / "sources";
  return std::filesystem::temp_directory_path() / concat("loom-cuda-sources-", ::geteuid());
}

CompileResult NvrtcCompiler::compile(std::string_view source, const CompileOptions& options) {
  // The key needs NVRTC's version and library file, not the library: a cache hit never loads
  // libnvrtc (nvrtcKey remembers them per library file).
  const NvrtcKey id = nvrtcKey();
  if (!id.available) (void)requireNvrtc(concat("compiling '", options.name, "'"));
  CompileResult result;
  result.arch = options.arch.empty() ? deviceProperties(options.device).arch() : options.arch;
  std::vector<std::string> flags;
  auto keyFor = [&](int major, int minor, const std::string& stamp) {
    flags = nvrtcOptions(options, result.arch, major);
    Hasher hasher;
    hasher.str("loom-cuda-cubin-v2").value(major).value(minor).str(stamp);
    for (const auto& f : flags) hasher.str(f);
    hasher.str(source);
    result.key = hasher.digest();
  };
  keyFor(id.major, id.minor, id.stamp);
  bool dump = DumpOptions::fromEnvironment().has(DumpOption::Ptxas);

  if (cache_) {
    if (auto entry = cache_->load(result.key)) {
      result.cubin = std::move(entry->cubin);
      result.log = std::move(entry->log);
      result.kernels = parsePtxasInfo(result.log);
      result.cacheHit = true;
      {
        std::lock_guard lock(mutex_);
        ++stats_.cacheHits;
      }
      if (dump) dumpResources(options.name, result);
      return result;
    }
    std::lock_guard lock(mutex_);
    ++stats_.cacheMisses;
  }

  const NvrtcState& nv = requireNvrtc(concat("compiling '", options.name, "'"));
  const NvrtcApi& api = nv.api;
  // The loaded library is normally the one the key named (nvrtcKey probed this process's, or
  // checked the remembered file's stamp); should the loader have found another, the cubin is
  // keyed (and its options chosen) by the one loaded.
  if (const std::string stamp = fileStamp(nv.loadedPath).value_or("");
      nv.major != id.major || nv.minor != id.minor || stamp != id.stamp) {
    keyFor(nv.major, nv.minor, stamp);
  }
  std::string text(source);
  std::string fileName = options.name + ".cu";
  ProgramGuard guard{api};
  nvrtcResult r = api.nvrtcCreateProgram(&guard.program, text.c_str(), fileName.c_str(), 0,
                                         nullptr, nullptr);
  LOOM_ASSERT(r == NVRTC_SUCCESS, "nvrtcCreateProgram failed: ", api.nvrtcGetErrorString(r));
  std::vector<const char*> argv;
  for (const auto& f : flags) argv.push_back(f.c_str());
  {
    std::lock_guard lock(mutex_);
    ++stats_.nvrtcCompiles;
  }
  nvrtcResult compiled = api.nvrtcCompileProgram(guard.program, int(argv.size()), argv.data());
  size_t logSize = 0;
  if (api.nvrtcGetProgramLogSize(guard.program, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    result.log.resize(logSize);
    api.nvrtcGetProgramLog(guard.program, result.log.data());
    result.log.resize(logSize - 1);  // drop the terminating NUL
  }
  if (compiled != NVRTC_SUCCESS) {
    std::string where = writeFailedSource(text, options.name, result.key);
    LOOM_THROW("NVRTC could not compile '", options.name, "' for ", result.arch, " (",
               api.nvrtcGetErrorString(compiled), "); source written to ", where,
               "\noptions: ", join(flags, " "), "\n", result.log);
  }
  size_t cubinSize = 0;
  r = api.nvrtcGetCUBINSize(guard.program, &cubinSize);
  LOOM_ASSERT(r == NVRTC_SUCCESS && cubinSize > 0, "NVRTC produced no cubin for '", options.name,
              "' (", api.nvrtcGetErrorString(r), "); is ", result.arch, " a real architecture (sm_XX)?");
  result.cubin.resize(cubinSize);
  r = api.nvrtcGetCUBIN(guard.program, result.cubin.data());
  LOOM_ASSERT(r == NVRTC_SUCCESS, "nvrtcGetCUBIN failed: ", api.nvrtcGetErrorString(r));
  result.kernels = parsePtxasInfo(result.log);

  if (cache_ && cache_->store(result.key, {result.log, result.cubin})) {
    std::lock_guard lock(mutex_);
    ++stats_.cacheStores;
  }
  if (dump) dumpResources(options.name, result);
  return result;
}

std::string NvrtcCompiler::writeFailedSource(const std::string& source, const std::string& name,
                                             uint64_t key) const {
  std::filesystem::path dir = sourceDir();
  const std::string hex = fmt::format("{:016x}", key);
  std::string safe = name;
  for (char& c : safe) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  }
  std::filesystem::path path = dir / concat(safe, "-", hex, ".cu");
  // A private folder and an atomic write: never write through a link someone else put there.
  std::optional<std::string> error = createPrivateDirectories(dir);
  if (!error) error = privateDirectoryProblem(dir);
  if (!error) error = writeFileAtomically(path, source);
  if (error) return concat("(could not write the source under ", dir.string(), ": ", *error, ")");
  return path.string();
}

}  // namespace loom::cuda
