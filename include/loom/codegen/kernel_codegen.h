// SPDX-License-Identifier: Apache-2.0
// Codegen: Kernel IR -> one readable CUDA C++ `extern "C" __global__` kernel.
//
// The kernel takes one loom::Tensor<T, N> per kernel parameter (the runtime library's struct:
// data pointer, then N int64 sizes, then N int64 strides), uses only dynamic shared memory
// (`extern __shared__ char loom_smem[]`, block-reduction scratch at offset 0), and is named
// loom_kernel_<hash of its text>. The same source compiles with NVRTC and with the host backend.
#pragma once

#include <cstdint>
#include <string>

#include "loom/lower/kernel_ir.h"

namespace loom::codegen {

struct GeneratedKernel {
  std::string name;  ///< the __global__ function's name
  /// The kernel alone (what LOOM_DUMP=cuda_kernel prints): launchDefines(kernel), then the
  /// function (with launchBounds() in its declaration).
  std::string kernelText;
  /// What gets compiled: the launch defines, runtimeLibraryFor(kernel), then the function.
  std::string source;
};

/// `#define LOOM_BLOCK_DIM_X 128u`-style lines for every launch dimension lowering fixes
/// (kir::constantLaunchExtent), read by the runtime library's blockDimX() ... gridDimZ(). They go in
/// front of the runtime so that its shape tests fold before NVRTC optimizes; the executor launches
/// exactly these dimensions.
std::string launchDefines(const kir::Kernel& kernel);

/// What codegen may know about the GPU the kernel is built for. Everything is optional: a kernel
/// generated without it (the host backend, `loom codegen`) is correct, only tuned less.
struct CodegenOptions {
  /// Streaming multiprocessors of the target GPU; 0 when unknown. Used by launchBounds().
  int64_t multiprocessors = 0;
  /// Bound the registers so that a block of the kernel's (constant) thread count can launch:
  /// `__launch_bounds__(T)` where launchBounds() gives nothing. Off by default, since the bound
  /// changes ptxas's choices (see launchBounds()); the kernel executor sets it and builds again
  /// when a first build cannot run T threads per block (too many registers per thread).
  bool boundBlockThreads = false;
  /// At most this many registers per thread (`__maxnreg__(N)`, nvFuser's CompileParams
  /// maxrregcount); 0: no bound of its own. CUDA allows no `__launch_bounds__` next to it, so the
  /// kernel then gets none, and a bound for its block (boundBlockThreads) lowers N instead.
  int64_t maxRegisters = 0;
};

/// `__launch_bounds__(T, 1) ` for a kernel whose whole grid fits on the GPU at one block per SM,
/// else "". T is the block's thread count; T and the grid are constants of the launch
/// (kir::constantLaunchExtent). Such a grid (outer reductions: 128 blocks of 512 threads) gains no
/// occupancy from a smaller register count, but without bounds ptxas still kept the bf16 sum over
/// dim 0 at 32 registers with 3 of its 8 16-byte loads in flight (59 us on the H200); bounded, it
/// takes 64 and issues all 8 (50 us). Not for two or more blocks per SM: the fp32 sum (256 blocks
/// of 512) then got 64 registers, all loads of both blocks in flight, and went from 82 to 96 us.
/// Multi-wave grids and run-time launch shapes get nothing, unless CodegenOptions::
/// boundBlockThreads asks for `__launch_bounds__(T)` (a constant T; the executor's second build of
/// a kernel whose first one cannot launch T threads).
std::string launchBounds(const kir::Kernel& kernel, int64_t multiprocessors);

/// The runtime library text `kernel` needs: every runtime file, less grid.cuh when the kernel
/// has no grid reduction and sort.cuh when it sorts no rows (fewer bytes for NVRTC to parse; the
/// cached cubin's key changes with it).
std::string runtimeLibraryFor(const kir::Kernel& kernel);

/// Generates the kernel; sets kernel.name to the generated name (a hash of the whole text, launch
/// defines and bounds included).
GeneratedKernel generateKernel(kir::Kernel& kernel, const CodegenOptions& options = {});

/// The C++ spelling of a dtype in generated code (long long for Int64, __half for Float16, ...).
std::string_view cTypeName(DataType dtype);

/// A constant of `dtype` holding `value` as a C++ expression of exactly that type and value,
/// valid for NVRTC and for the host backend's compiler; every constant of generated code goes
/// through it. `index_type` is the kernel's index type (Kernel::indexType).
///
///   bool          true, false (any other value: nonzero is true)
///   i32           7, (-7), (-2147483647 - 1); an int64 value out of range wraps
///   i64           7LL, (-7LL), (-9223372036854775807LL - 1LL); in an Int32-index kernel, values
///                 that fit an int print as i32 (index constants share Int64 with data)
///   f64           0.1, 1e+300, (-2.5), 0.0, (-0.0), 0x1p-1074 (subnormals in hexadecimal),
///                 __longlong_as_double(0x7ff0000000000000LL) (inf; -inf negated), NaN likewise
///   f32           the value rounded once to float (1e300 is inf), then as f64 with an f suffix:
///                 0.1f, 0x1p-149f, __int_as_float(0x7f800000), __int_as_float(0x7fffffff)
///   f16, bf16     the value rounded once to the type, written as the float that holds it
///                 exactly: __half(0.099975586f), __nv_bfloat16((-__int_as_float(0x7f800000)))
/// Integer values of floating dtypes round once (round-to-nearest-even), bools are 0 or 1.
std::string scalarLiteral(DataType dtype, const ir::ScalarValue& value, DataType index_type);

}  // namespace loom::codegen
