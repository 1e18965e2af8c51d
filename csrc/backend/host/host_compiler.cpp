// SPDX-License-Identifier: Apache-2.0
// Host compiler driver: writes a kernel's translation unit to the cache, compiles it, caches it.
//
// Cache layout: <cache>/<16 hex digits>/{kernel.cpp, loom_cuda_emulation.h, loom_emu_abi.h,
// kernel.so, compile.log}. The key hashes the translation unit, both headers, the flags and the
// compiler's version line, so a changed header or compiler never reuses an old object. Files are
// written under temporary names and renamed, so processes sharing a cache never see half a file.
#include "backend/host/host_compiler.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "backend/host/embedded_runtime.h"
#include "loom/support/error.h"
#include "loom/support/hash.h"
#include "loom/support/options.h"
#include "loom/support/strings.h"

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

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void writeFileAtomically(const fs::path& path, std::string_view text) {
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp =
      path.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    LOOM_CHECK(out.good(), "host backend: cannot write ", tmp.string());
  }
  fs::rename(tmp, path);
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

/// The first line of `<compiler> --version`, memoized per compiler string.
std::string compilerVersion(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = versions.find(compiler);
  if (it != versions.end()) return it->second;
  std::string line;
  if (FILE* p = popen((compiler + " --version 2>/dev/null").c_str(), "r")) {
    char buf[512];
    if (std::fgets(buf, sizeof(buf), p)) line = buf;
    pclose(p);
  }
  LOOM_CHECK(!line.empty(), "host backend: the host compiler '", compiler,
             "' did not answer --version; set LOOM_HOST_CXX to a working C++17 compiler");
  return versions[compiler] = std::string(trim(line));
}

fs::path defaultCacheDir() {
  if (auto dir = getEnv("LOOM_CACHE_DIR"); dir && !dir->empty()) return fs::path(*dir) / "host";
  if (auto xdg = getEnv("XDG_CACHE_HOME"); xdg && !xdg->empty()) {
    return fs::path(*xdg) / "loom" / "host";
  }
  if (auto home = getEnv("HOME"); home && !home->empty()) {
    return fs::path(*home) / ".cache" / "loom" / "host";
  }
  return fs::temp_directory_path() / "loom-cache" / "host";
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
     << "__attribute__((visibility(\"hidden\"))) thread_local LoomEmuThread* loom_emu_ctx = "
        "nullptr;\n"
     << "__attribute__((visibility(\"default\"))) void* loom_emu_ctx_slot() { return "
        "&loom_emu_ctx; }\n"
     << "__attribute__((visibility(\"default\"))) unsigned loom_emu_abi_version() { return "
        "LOOM_EMU_ABI_VERSION; }\n"
     << "__attribute__((visibility(\"default\"))) void " << trampolineName(kernelName)
     << "(void** args) { loom_emu::invoke(&" << kernelName << ", args); }\n"
     << "}\n";
  return os.str();
}

CompiledObject compileForHost(const std::string& translationUnit, std::string_view kernelName,
                              const HostCompileOptions& options, bool forceCompile) {
  std::string compiler = options.compiler;
  if (compiler.empty()) compiler = getEnv("LOOM_HOST_CXX").value_or("");
  if (compiler.empty()) compiler = "c++";
  std::vector<std::string> flags =
      options.flags.empty() ? std::vector<std::string>{"-O2"} : options.flags;
  if (auto extra = getEnv("LOOM_HOST_CXXFLAGS"); extra && !extra->empty()) {
    flags.push_back(*extra);
  }
  const std::string flagText = "-std=c++17 -shared -fPIC -fvisibility=hidden " + join(flags, " ");

  const std::string_view header = embeddedCudaEmulationHeader();
  const std::string_view abi = embeddedEmuAbiHeader();
  Hasher h;
  h.str("loom-host-backend-1")
      .str(translationUnit)
      .str(header)
      .str(abi)
      .str(compiler)
      .str(flagText);
  h.str(compilerVersion(compiler));
  const fs::path cacheDir = options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir;
  const fs::path dir = cacheDir / hex16(h.digest());

  CompiledObject result;
  result.sourcePath = dir / "kernel.cpp";
  result.objectPath = dir / "kernel.so";
  const bool dump = DumpOptions::fromEnvironment().has(DumpOption::HostCompile);
  std::error_code ec;
  if (!forceCompile && fs::exists(result.objectPath, ec)) {
    result.cacheHit = true;
    if (dump) std::cerr << "[loom host_compile] cache hit: " << result.objectPath.string() << "\n";
    return result;
  }
  fs::create_directories(dir, ec);
  LOOM_CHECK(!ec, "host backend: cannot create the cache directory ", dir.string(), ": ",
             ec.message(), " (set LOOM_CACHE_DIR to a writable directory)");
  writeFileAtomically(dir / "loom_cuda_emulation.h", header);
  writeFileAtomically(dir / "loom_emu_abi.h", abi);
  writeFileAtomically(result.sourcePath, translationUnit);

  const fs::path tmpObject =
      dir / ("kernel.so.tmp." + std::to_string(getpid()) + "." + std::to_string(gCompilerRuns));
  const fs::path logPath = dir / "compile.log";
  const std::string command = compiler + " " + flagText + " -I" + shellQuote(dir.string()) +
                              " -o " + shellQuote(tmpObject.string()) + " " +
                              shellQuote(result.sourcePath.string());
  if (dump) std::cerr << "[loom host_compile] " << command << "\n";
  ++gCompilerRuns;
  const int status =
      std::system((command + " > " + shellQuote(logPath.string()) + " 2>&1").c_str());
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : status;
  if (status != 0) {
    std::string log = readFile(logPath);
    constexpr size_t kMaxLog = 12000;
    if (log.size() > kMaxLog) log = log.substr(0, kMaxLog) + "\n... (log truncated)";
    fs::remove(tmpObject, ec);
    LOOM_THROW("host backend: compiling kernel ", kernelName, " failed (exit status ", rc,
               ")\n  source: ", result.sourcePath.string(), "\n  command: ", command,
               "\n  compiler log (", logPath.string(), "):\n", log);
  }
  fs::rename(tmpObject, result.objectPath);
  return result;
}

uint64_t hostCompilerRuns() { return gCompilerRuns.load(); }

}  // namespace loom::backend::host
