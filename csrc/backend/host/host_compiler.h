// SPDX-License-Identifier: Apache-2.0
// The host compiler driver: kernel text -> shared object in the disk cache.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "loom/backend/host_module.h"

namespace loom::backend::host {

/// Rewrites `extern __shared__ T name[];` and `__shared__ T name[N]...;` declarations into
/// per-block buffers provided by the scheduler (a plain `static` would be shared by all blocks of
/// a cooperative launch). Declarations it cannot parse are left alone.
std::string rewriteSharedDeclarations(std::string_view source);

/// The complete translation unit compiled for a kernel: emulation include, the rewritten source and
/// the trampoline `loom_launch_<name>(void** args)`.
std::string hostTranslationUnit(std::string_view source, std::string_view kernelName);

/// The exported name of a kernel's trampoline.
std::string trampolineName(std::string_view kernelName);

/// A compiled kernel object on disk.
struct CompiledObject {
  std::filesystem::path sourcePath;
  std::filesystem::path objectPath;
  bool cacheHit = false;
  /// Set when the object was built outside the cache (see compileForHost): a private temporary
  /// directory the loader removes when done.
  std::filesystem::path temporaryDir;
};

/// Returns the cached shared object for the translation unit, compiling it when absent, damaged
/// (a warning names the entry and the reason) or when `forceCompile` (used after a cached object
/// failed to load). A returned cache hit has been verified against its checksum. Compiles into a
/// private temporary directory instead, with a warning, when the cache is not private, cannot
/// take new entries (read-only), its lock stays held past cacheLockTimeout(), or the build
/// directory is deleted during the compile. Safe to call from many threads. Throws UserError with
/// the compiler log and the source path when compilation fails.
CompiledObject compileForHost(const std::string& translationUnit, std::string_view kernelName,
                              const HostCompileOptions& options, bool forceCompile = false);

/// How many times this process has run the host compiler.
uint64_t hostCompilerRuns();

/// The host compiler's identity as the kernel cache keys it: per word of the command (LOOM_HOST_CXX
/// split, e.g. "ccache g++"), the word and the stamp (support/tool_identity.h: canonical path,
/// size, modification time, inode) of the program it names, then the first line of
/// `<compiler> --version`. That probe runs only when `identityDir` remembers no answer for these
/// stamps, so a changed compiler file is probed again and changes the identity; `probed` says
/// whether it ran. Not memoized (compileForHost memoizes it per process).
std::string hostCompilerIdentity(const std::vector<std::string>& compiler,
                                 const std::filesystem::path& identityDir, bool* probed = nullptr);

/// The stamps part of hostCompilerIdentity into `stamps`; true when the command's first word
/// names a file (else there is nothing to remember the version by).
bool hostCompilerStamps(const std::vector<std::string>& compiler, std::string& stamps);

}  // namespace loom::backend::host
