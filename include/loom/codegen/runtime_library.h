// SPDX-License-Identifier: Apache-2.0
// The device runtime library: CUDA C++ helpers that generated kernels call, embedded at build time.
//
// The sources live in csrc/codegen/runtime/*.cuh (documented in docs/runtime-library.md). Codegen
// puts runtimeLibrarySource() in front of every kernel; the same text compiles with NVRTC and with
// the host backend's emulation header.
#pragma once

#include <string_view>
#include <vector>

namespace loom::codegen {

/// All runtime files concatenated in dependency order (types, math, welford, warp, block, grid).
std::string_view runtimeLibrarySource();

/// One runtime file: its name (e.g. "block.cuh") and text.
struct RuntimeFile {
  std::string_view name;
  std::string_view text;
};

/// The runtime files in dependency order; runtimeLibrarySource() is their concatenation.
const std::vector<RuntimeFile>& runtimeLibraryFiles();

}  // namespace loom::codegen
