// SPDX-License-Identifier: Apache-2.0
// Host compiler driver: writes a kernel's translation unit to the cache, compiles it, caches it.
//
// Cache layout: <cache>/<16 hex digits>/{kernel.cpp, loom_cuda_emulation.h, loom_emu_abi.h,
// kernel.so, compile.log, manifest}. The key is the SHA-256 of the translation unit, both headers,
// the compiler, the flags and the compiler's identity (hostCompilerIdentity: the stamps of the
// files its command names and its version line), so a changed header or compiler never reuses an
// old object. The version line comes from `--version` only when the stamps are new: the answer is
// remembered under <cache root>/identities (support/tool_identity.h), so a warm start spawns no
// process. An entry is built in a fresh private directory (<16 hex>.build.XXXXXX)
// and renamed into place whole, so readers see a complete entry or none. Before an entry's object
// is loaded, the entry must be a private directory of ours and kernel.so must match the SHA-256 in
// `manifest`; anything else is rebuilt, with a warning. A cache directory that is not private
// (another user could plant code) is not used at all. A cache that cannot take new entries
// (read-only), an install lock held past LOOM_CACHE_LOCK_TIMEOUT and a build directory deleted
// during the compile each give a private build outside the cache, with a warning saying which.
// The compiler runs through posix_spawn with an argument vector: no shell ever sees a path or a
// flag. See docs/host-backend.md.
#include "backend/host/host_compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "backend/host/cache_lock.h"
#include "backend/host/embedded_runtime.h"
#include "backend/host/process.h"
#include "loom/support/cache_root.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/options.h"
#include "loom/support/private_dir.h"
#include "loom/support/private_file.h"
#include "loom/support/sha256.h"
#include "loom/support/strings.h"
#include "loom/support/tool_identity.h"
#include "loom/support/warning.h"

namespace loom::backend::host {
namespace {

namespace fs = std::filesystem;

std::atomic<uint64_t> gCompilerRuns{0};

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Parses the text between `__shared__` and `;`: [alignment] TYPE NAME [DIMS]. Returns false when
/// it does not look like a plain declaration.
bool parseSharedDecl(std::string_view text, std::string& type, std::string& name,
                     std::string& dims) {
  std::string_view t = trim(text);
  if (t.find_first_of("{}=;") != std::string_view::npos) return false;
  // Trailing array dimensions.
  size_t end = t.size();
  while (end > 0 && t[end - 1] == ']') {
    const size_t open = t.rfind('[', end - 1);
    if (open == std::string_view::npos) return false;
    end = open;
    while (end > 0 && std::isspace(static_cast<unsigned char>(t[end - 1]))) --end;
  }
  dims = std::string(trim(t.substr(end)));
  std::string_view rest = trim(t.substr(0, end));
  size_t nameStart = rest.size();
  while (nameStart > 0 && isIdentChar(rest[nameStart - 1])) --nameStart;
  name = std::string(rest.substr(nameStart));
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  std::string_view typeText = trim(rest.substr(0, nameStart));
  // Alignment attributes are dropped: scheduler buffers are aligned to max_align_t.
  for (std::string_view attr : {"__align__", "alignas"}) {
    if (typeText.substr(0, attr.size()) == attr) {
      const size_t close = typeText.find(')');
      if (close == std::string_view::npos) return false;
      typeText = trim(typeText.substr(close + 1));
    }
  }
  type = std::string(typeText);
  return !type.empty();
}

/// The compiler's words and the flags, each one argument.
struct CompilerCommand {
  std::vector<std::string> compiler;  ///< LOOM_HOST_CXX split on whitespace ("ccache g++")
  std::vector<std::string> flags;
};

CompilerCommand compilerCommand(const HostCompileOptions& options) {
  CompilerCommand c;
  std::string compiler = options.compiler;
  if (compiler.empty()) compiler = getEnv("LOOM_HOST_CXX").value_or("");
  c.compiler = splitWords(compiler);
  if (c.compiler.empty()) c.compiler = {"c++"};
  c.flags = {"-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden"};
  if (options.flags.empty()) {
    c.flags.push_back("-O2");
  } else {
    c.flags.insert(c.flags.end(), options.flags.begin(), options.flags.end());
  }
  for (std::string& w : splitWords(getEnv("LOOM_HOST_CXXFLAGS").value_or(""))) {
    c.flags.push_back(std::move(w));
  }
  return c;
}

/// The first line of `<compiler> --version`.
std::string probeCompilerVersion(const std::vector<std::string>& compiler) {
  std::vector<std::string> argv = compiler;
  argv.push_back("--version");
  std::string output;
  const ProcessResult r = runProcess(argv, {}, {}, &output);
  const std::string line(trim(output.substr(0, output.find('\n'))));
  LOOM_CHECK(r.ok() && !line.empty(), "host backend: the host compiler '", join(compiler, " "),
             "' did not answer --version (", r.describe(),
             "); set LOOM_HOST_CXX to a working C++17 compiler");
  return line;
}

/// hostCompilerIdentity, memoized per identity within the process (under a lock: compiles run
/// on many threads). The stamps are taken on every call (a few stat calls), so a compiler
/// replaced while the process runs is seen.
std::string compilerKey(const std::vector<std::string>& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> keys;
  std::string stamps;
  const bool resolved = hostCompilerStamps(compiler, stamps);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = keys.find(stamps);
  if (it != keys.end()) return it->second;
  std::string key = resolved ? hostCompilerIdentity(compiler, cacheRoot() / "identities")
                             : stamps + probeCompilerVersion(compiler);
  return keys[stamps] = std::move(key);
}

// An entry's checksum file ("manifest"): the format line, the SHA-256 of the key material, and the
// size and SHA-256 of kernel.so.
constexpr std::string_view kManifestFormat = "loom host kernel cache entry 1";

std::string manifestText(const std::string& key, const std::string& object) {
  return detail::concat(kManifestFormat, "\nkey ", key, "\nkernel.so ", object.size(), " ",
                        sha256Hex(object), "\n");
}

/// Why the entry directory cannot be used as it is; empty reason and !exists when it is absent.
struct EntryCheck {
  bool exists = false;
  std::string problem;  ///< empty: the entry verified
  bool good() const { return exists && problem.empty(); }
};

/// Verifies an entry before anything in it is loaded: a private directory of ours, a manifest for
/// this key, and a kernel.so (a regular file of ours, not writable by others) whose bytes match
/// the manifest's size and SHA-256.
EntryCheck checkEntry(const fs::path& entry, const std::string& key) {
  EntryCheck c;
  struct stat st;
  if (::lstat(entry.c_str(), &st) != 0 && errno == ENOENT) return c;
  c.exists = true;
  if (auto problem = privateDirectoryProblem(entry)) {
    c.problem = *problem;
    return c;
  }
  std::string manifest;
  if (auto problem = readPrivateFile(entry / "manifest", manifest)) {
    c.problem = *problem == "does not exist" ? "has no checksum file"
                                             : "has a checksum file that " + *problem;
    return c;
  }
  std::istringstream in(manifest);
  std::string format, keyWord, storedKey, objectWord, storedSha;
  uint64_t storedSize = 0;
  std::getline(in, format);
  in >> keyWord >> storedKey >> objectWord >> storedSize >> storedSha;
  if (!in || format != kManifestFormat || keyWord != "key" || objectWord != "kernel.so") {
    c.problem = "has a malformed checksum file";
    return c;
  }
  if (storedKey != key) {
    c.problem = "was built from other inputs (its key does not match)";
    return c;
  }
  std::string object;
  if (auto problem = readPrivateFile(entry / "kernel.so", object)) {
    c.problem = "has a kernel.so that " + *problem;
    return c;
  }
  if (object.size() != storedSize || sha256Hex(object) != storedSha) {
    c.problem = "failed its checksum";
  }
  return c;
}

/// Writes the headers and the translation unit into `dir`; returns what failed, if anything.
std::optional<std::string> writeSources(const fs::path& dir, const std::string& translationUnit) {
  for (auto [name, text] : {std::pair<const char*, std::string_view>{"loom_cuda_emulation.h",
                                                                     embeddedCudaEmulationHeader()},
                            {"loom_emu_abi.h", embeddedEmuAbiHeader()},
                            {"kernel.cpp", translationUnit}}) {
    if (auto error = writeFileAtomically(dir / name, text)) return error;
  }
  return std::nullopt;
}

/// Runs the compiler in `dir` (which holds the sources) with relative paths, so the command works
/// again in the entry the directory becomes. Returns how the compiler failed ("exit status 1"),
/// or nullopt when it succeeded; `argv` receives the command.
std::optional<std::string> runCompiler(const fs::path& dir, const CompilerCommand& cmd, bool dump,
                                       std::vector<std::string>& argv) {
  argv = cmd.compiler;
  // A compiler named by a relative path keeps meaning what it meant in our working directory.
  if (argv[0].find('/') != std::string::npos) argv[0] = fs::absolute(argv[0]).string();
  argv.insert(argv.end(), cmd.flags.begin(), cmd.flags.end());
  for (const char* a : {"-I.", "-o", "kernel.so", "kernel.cpp"}) argv.emplace_back(a);
  if (dump) {
    dumpSink() << "[loom host_compile] cd " << displayCommand({dir.string()}) << " && "
               << displayCommand(argv) << "\n";
  }
  ++gCompilerRuns;
  const ProcessResult r = runProcess(argv, dir, dir / "compile.log");
  if (r.ok()) return std::nullopt;
  return r.describe();
}

/// The UserError of a failed compile whose files are now in `dir`.
[[noreturn]] void throwCompileError(std::string_view kernelName, const fs::path& dir,
                                    const std::vector<std::string>& argv,
                                    const std::string& failure) {
  std::string log;
  (void)readPrivateFile(dir / "compile.log", log);
  constexpr size_t kMaxLog = 12000;
  if (log.size() > kMaxLog) log = log.substr(0, kMaxLog) + "\n... (log truncated)";
  LOOM_THROW("host backend: compiling kernel ", kernelName, " failed (", failure,
             ")\n  source: ", (dir / "kernel.cpp").string(), "\n  command: cd ",
             displayCommand({dir.string()}), " && ", displayCommand(argv), "\n  compiler log (",
             (dir / "compile.log").string(), "):\n", log);
}

/// Prepares the host cache directory: created 0700 where missing, and trusted only when it and
/// (for the default location) the cache root are private directories of ours. Returns what is
/// wrong, as "<path> <problem>".
std::optional<std::string> prepareCacheDir(const fs::path& hostDir, bool defaultLocation) {
  std::vector<fs::path> dirs;
  if (defaultLocation) dirs.push_back(hostDir.parent_path());
  dirs.push_back(hostDir);
  if (auto error = createPrivateDirectories(hostDir)) return *error;
  for (const fs::path& d : dirs) {
    if (auto problem = privateDirectoryProblem(d)) return d.string() + " " + *problem;
  }
  return std::nullopt;
}

/// What one compile needs, whichever directory it runs in.
struct CompileJob {
  const CompilerCommand& cmd;
  const std::string& translationUnit;
  std::string_view kernelName;
  bool dump;
};

/// Compiles into a fresh private directory in the temp dir, outside the cache; the module removes
/// it when done. A failed compile's directory stays for inspection (the error names it).
CompiledObject compilePrivately(const CompileJob& job) {
  std::string error;
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  auto temp = makePrivateTempDirectory(tmp, "loom-host-", &error);
  LOOM_CHECK(temp, "host backend: ", error);
  if (auto writeError = writeSources(*temp, job.translationUnit)) {
    fs::remove_all(*temp, ec);
    LOOM_THROW("host backend: cannot write the kernel source: ", *writeError);
  }
  std::vector<std::string> argv;
  if (auto failure = runCompiler(*temp, job.cmd, job.dump, argv)) {
    throwCompileError(job.kernelName, *temp, argv, *failure);
  }
  CompiledObject result;
  result.sourcePath = *temp / "kernel.cpp";
  result.objectPath = *temp / "kernel.so";
  result.temporaryDir = *temp;
  return result;
}

bool isGone(const fs::path& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) != 0 && errno == ENOENT;
}

/// Builds the kernel in `build` (a fresh directory in the cache): sources, object, manifest.
/// Returns false, throwing nothing, when `build` disappeared on the way (the cache, or the build
/// directory, was deleted meanwhile): whatever failed then failed for that reason, and the
/// compiler's log went with the directory. A failed compile is thrown, its directory kept as
/// <key>.failed/ for inspection.
bool buildInCache(const CompileJob& job, const fs::path& hostDir, const fs::path& build,
                  const std::string& key, std::chrono::milliseconds lockTimeout) {
  if (auto writeError = writeSources(build, job.translationUnit)) {
    if (isGone(build)) return false;
    LOOM_THROW("host backend: cannot write the kernel source: ", *writeError);
  }
  std::vector<std::string> argv;
  if (auto failure = runCompiler(build, job.cmd, job.dump, argv)) {
    if (isGone(build)) return false;
    // Keep the failed attempt for inspection, one per key (its command works there too).
    fs::path kept = build;
    {
      CacheLock lock(hostDir, lockTimeout);
      const fs::path failed = hostDir / (key.substr(0, 16) + ".failed");
      if (lock.held()) {
        moveAside(failed);
        if (::rename(build.c_str(), failed.c_str()) == 0) kept = failed;
      }
    }
    throwCompileError(job.kernelName, kept, argv, *failure);
  }
  // The compiler created kernel.so under the process umask; an entry's files are ours alone.
  ::chmod((build / "kernel.so").c_str(), 0700);
  std::string object;
  if (auto problem = readPrivateFile(build / "kernel.so", object)) {
    if (isGone(build)) return false;
    LOOM_THROW("host backend: the compiler's output ", (build / "kernel.so").string(), " ",
               *problem);
  }
  if (auto writeError = writeFileAtomically(build / "manifest", manifestText(key, object))) {
    if (isGone(build)) return false;
    LOOM_THROW("host backend: ", *writeError);
  }
  return true;
}

/// The warning for a build directory that vanished during a compile: the cache deleted, or only
/// the build directory (which the docs allow deleting while no process uses it).
void warnBuildDirGone(const fs::path& hostDir, const fs::path& build, std::string_view kernelName) {
  const std::string what =
      isGone(hostDir) ? detail::concat("host kernel cache ", hostDir.string(), " was deleted")
                      : detail::concat("build directory ", build.string(),
                                       " in the host kernel cache was deleted");
  warn(detail::concat(what, " while kernel ", kernelName,
                      " was being compiled; compiling it again in a private temporary directory"));
}
}  // namespace

std::string rewriteSharedDeclarations(std::string_view source) {
  static constexpr std::string_view kShared = "__shared__";
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = source.find(kShared, pos);
    if (hit == std::string_view::npos) break;
    const size_t after = hit + kShared.size();
    const bool token = (hit == 0 || !isIdentChar(source[hit - 1])) &&
                       (after >= source.size() || !isIdentChar(source[after]));
    const size_t lineStart =
        source.rfind('\n', hit) == std::string_view::npos ? 0 : source.rfind('\n', hit) + 1;
    const std::string_view linePrefix = source.substr(lineStart, hit - lineStart);
    const bool inCommentOrDirective =
        linePrefix.find("//") != std::string_view::npos || trim(linePrefix).substr(0, 1) == "#";
    const size_t semi = source.find(';', after);
    std::string type, name, dims;
    if (!token || inCommentOrDirective || semi == std::string_view::npos ||
        !parseSharedDecl(source.substr(after, semi - after), type, name, dims)) {
      out.append(source.substr(pos, after - pos));
      pos = after;
      continue;
    }
    // A storage keyword right before __shared__ belongs to the declaration.
    size_t declStart = hit;
    bool isExtern = false;
    std::string_view before = source.substr(pos, hit - pos);
    const size_t lastNonBlank = before.find_last_not_of(" \t");
    const std::string_view trimmedBefore = lastNonBlank == std::string_view::npos
                                               ? std::string_view()
                                               : before.substr(0, lastNonBlank + 1);
    for (std::string_view kw : {"extern", "static"}) {
      if (trimmedBefore.size() >= kw.size() &&
          trimmedBefore.substr(trimmedBefore.size() - kw.size()) == kw &&
          (trimmedBefore.size() == kw.size() ||
           !isIdentChar(trimmedBefore[trimmedBefore.size() - kw.size() - 1]))) {
        declStart = pos + trimmedBefore.size() - kw.size();
        isExtern = kw == "extern";
      }
    }
    out.append(source.substr(pos, declStart - pos));
    if (isExtern) {
      LOOM_CHECK(dims == "[]", "host backend: cannot emulate 'extern __shared__ ", type, " ", name,
                 dims, "': dynamic shared memory must be declared as an unsized array");
      out += type + "* " + name + " = reinterpret_cast<" + type + "*>(loom_emu_ctx->dynamic_smem);";
    } else {
      const std::string ptr = dims.empty() ? type + "*" : type + "(*)" + dims;
      out += "auto& " + name + " = *reinterpret_cast<" + ptr +
             ">(loom_emu_ctx->api->static_shared(loom_emu_ctx, __COUNTER__, sizeof(" + type + dims +
             "), alignof(" + type + ")));";
    }
    // Keep line numbers: re-emit the newlines the declaration spanned.
    for (size_t i = after; i < semi; ++i) {
      if (source[i] == '\n') out += '\n';
    }
    pos = semi + 1;
  }
  out.append(source.substr(pos));
  return out;
}

std::string trampolineName(std::string_view kernelName) {
  std::string name = "loom_launch_";
  for (char c : kernelName) name += isIdentChar(c) ? c : '_';
  return name;
}

std::string hostTranslationUnit(std::string_view source, std::string_view kernelName) {
  std::ostringstream os;
  os << "// Generated by Loom's host backend for kernel " << kernelName << ".\n"
     << "#include \"loom_cuda_emulation.h\"\n"
     << "#line 1 \"" << kernelName << ".cu\"\n"
     << rewriteSharedDeclarations(source) << "\n"
     << "#line 1 \"loom_trampoline.cpp\"\n"
     << "extern \"C\" {\n"
     << "__attribute__((visibility(\"hidden\"))) ptrdiff_t loom_emu_ctx_offset = 0;\n"
     << "__attribute__((visibility(\"default\"))) void loom_emu_bind(ptrdiff_t ctxOffset) { "
        "loom_emu_ctx_offset = ctxOffset; }\n"
     << "__attribute__((visibility(\"default\"))) unsigned loom_emu_abi_version() { return "
        "LOOM_EMU_ABI_VERSION; }\n"
     << "__attribute__((visibility(\"default\"))) void " << trampolineName(kernelName)
     << "(void** args) { loom_emu::invoke(&" << kernelName << ", args); }\n"
     << "}\n";
  return os.str();
}

CompiledObject compileForHost(const std::string& translationUnit, std::string_view kernelName,
                              const HostCompileOptions& options, bool forceCompile) {
  const CompilerCommand cmd = compilerCommand(options);
  // The key: SHA-256 of everything that determines the object. Its first 16 hex digits name the
  // entry; the manifest holds all 64, so two inputs sharing a prefix cannot reuse each other's.
  Sha256 h;
  h.str("loom-host-backend-2")
      .str(translationUnit)
      .str(embeddedCudaEmulationHeader())
      .str(embeddedEmuAbiHeader());
  for (const std::string& w : cmd.compiler) h.str(w);
  h.str("--");
  for (const std::string& f : cmd.flags) h.str(f);
  h.str(compilerKey(cmd.compiler));
  const std::string key = h.hexDigest();
  const std::string name = key.substr(0, 16);
  const bool dump = DumpOptions::fromEnvironment().has(DumpOption::HostCompile);

  const CompileJob job{cmd, translationUnit, kernelName, dump};

  const bool defaultLocation = options.cacheDir.empty();
  const fs::path hostDir = defaultLocation ? cacheRoot() / "host" : options.cacheDir;
  if (auto problem = prepareCacheDir(hostDir, defaultLocation)) {
    // A cache is an optimization: compile into a private temporary directory the module removes.
    warnOnce(detail::concat("host kernel cache ", hostDir.string(), " is not used: ", *problem,
                            "; compiling into private temporary directories instead"));
    return compilePrivately(job);
  }

  CompiledObject result;
  fs::path entry = hostDir / name;
  if (!forceCompile) {
    const EntryCheck check = checkEntry(entry, key);
    if (check.good()) {
      if (dump) dumpSink() << "[loom host_compile] cache hit: " << entry.string() << "\n";
      result.sourcePath = entry / "kernel.cpp";
      result.objectPath = entry / "kernel.so";
      result.cacheHit = true;
      return result;
    }
    if (check.exists) {
      warn(detail::concat("host kernel cache entry ", entry.string(), " ", check.problem,
                          "; rebuilding"));
    }
  }

  const std::chrono::milliseconds lockTimeout = cacheLockTimeout();
  std::string error;
  auto build = makePrivateTempDirectory(hostDir, name + ".build.", &error);
  if (!build) {
    // A read-only cache (or a full disk): hits still come from it, misses are built outside it.
    warnOnce(detail::concat("host kernel cache ", hostDir.string(), " cannot take new entries (",
                            error,
                            "); compiling kernels it lacks into private temporary directories"));
    return compilePrivately(job);
  }
  if (!buildInCache(job, hostDir, *build, key, lockTimeout)) {
    warnBuildDirGone(hostDir, *build, kernelName);
    return compilePrivately(job);
  }

  {
    // Install: rename the whole directory into place, so a reader sees a complete entry or none.
    // Under the lock, an entry that appeared meanwhile (a racing compile of the same key) is used
    // when it verifies; a damaged one, or the one that failed to load (forceCompile), is replaced.
    CacheLock lock(hostDir, lockTimeout);
    if (!lock.held()) {
      // The build is a private directory already: use it uncached; the module removes it.
      warnOnce(detail::concat(lock.problem(),
                              "; kernels are compiled into private directories, not cached, "
                              "until it is released"));
      entry = *build;
      result.temporaryDir = *build;
    } else if (!forceCompile && checkEntry(entry, key).good()) {
      std::error_code ec;
      fs::remove_all(*build, ec);
    } else {
      moveAside(entry);
      if (::rename(build->c_str(), entry.c_str()) != 0) {
        // Cannot install (not expected): use the build, and let the module remove it.
        entry = *build;
        result.temporaryDir = *build;
      }
    }
  }
  if (!result.temporaryDir.empty() && isGone(*build)) {
    warnBuildDirGone(hostDir, *build, kernelName);
    return compilePrivately(job);
  }
  if (dump) dumpSink() << "[loom host_compile] stored: " << entry.string() << "\n";
  result.sourcePath = entry / "kernel.cpp";
  result.objectPath = entry / "kernel.so";
  return result;
}

uint64_t hostCompilerRuns() { return gCompilerRuns.load(); }

bool hostCompilerStamps(const std::vector<std::string>& compiler, std::string& stamps) {
  stamps.clear();
  bool resolved = false;
  for (size_t i = 0; i < compiler.size(); ++i) {
    const std::string& w = compiler[i];
    stamps += w;
    if (!w.empty() && w[0] != '-') {
      if (std::optional<fs::path> exe = findExecutable(w)) {
        if (std::optional<std::string> stamp = fileStamp(*exe)) {
          stamps += " = " + *stamp;
          if (i == 0) resolved = true;
        }
      }
    }
    stamps += "\n";
  }
  return resolved;
}

std::string hostCompilerIdentity(const std::vector<std::string>& compiler,
                                 const fs::path& identityDir, bool* probed) {
  std::string stamps;
  if (!hostCompilerStamps(compiler, stamps)) {
    // A compiler not found as a file: nothing to remember its answer by.
    if (probed != nullptr) *probed = true;
    return stamps + probeCompilerVersion(compiler);
  }
  return stamps + rememberedProbe(
                      identityDir, "host-cxx", stamps,
                      [&] { return probeCompilerVersion(compiler); }, probed);
}

}  // namespace loom::backend::host
