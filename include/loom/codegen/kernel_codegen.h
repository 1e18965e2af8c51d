// SPDX-License-Identifier: Apache-2.0
// Codegen: Kernel IR -> one readable CUDA C++ `extern "C" __global__` kernel.
//
// The kernel takes one loom::Tensor<T, N> per kernel parameter (the runtime library's struct:
// data pointer, then N int64 sizes, then N int64 strides), uses only dynamic shared memory
// (`extern __shared__ char loom_smem[]`, block-reduction scratch at offset 0), and is named
// loom_kernel_<hash of its text>. The same source compiles with NVRTC and with the host backend.
#pragma once

#include <string>

#include "loom/lower/kernel_ir.h"

namespace loom::codegen {

struct GeneratedKernel {
  std::string name;  ///< the __global__ function's name
  /// The kernel alone (what LOOM_DUMP=cuda_kernel prints): launchDefines(kernel), then the
  /// function.
  std::string kernelText;
  /// What gets compiled: the launch defines, runtimeLibraryFor(kernel), then the function.
  std::string source;
};

/// `#define LOOM_BLOCK_DIM_X 128u`-style lines for every launch dimension lowering fixes
/// (kir::constantLaunchExtent), read by the runtime library's blockDimX() ... gridDimZ(). They go in
/// front of the runtime so that its shape tests fold before NVRTC optimizes; the executor launches
/// exactly these dimensions.
std::string launchDefines(const kir::Kernel& kernel);

/// The runtime library text `kernel` needs: every runtime file, less grid.cuh when the kernel
/// has no grid reduction (fewer bytes for NVRTC to parse; the cached cubin's key changes with it).
std::string runtimeLibraryFor(const kir::Kernel& kernel);

/// Generates the kernel; sets kernel.name to the generated name.
GeneratedKernel generateKernel(kir::Kernel& kernel);

/// The C++ spelling of a dtype in generated code (long long for Int64, __half for Float16, ...).
std::string_view cTypeName(DataType dtype);

}  // namespace loom::codegen
