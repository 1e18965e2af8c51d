// SPDX-License-Identifier: Apache-2.0
// Texts of the emulation headers, embedded into the library at build time from runtime/.
#pragma once

#include <string_view>

namespace loom::backend::host {

/// runtime/cuda_emulation.h, written next to each kernel as loom_cuda_emulation.h.
std::string_view embeddedCudaEmulationHeader();
/// runtime/loom_emu_abi.h, written next to each kernel as loom_emu_abi.h.
std::string_view embeddedEmuAbiHeader();

}  // namespace loom::backend::host
