// SPDX-License-Identifier: Apache-2.0
// Private to the executor: packing kernel arguments and checking vectorized layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/lower/kernel_ir.h"
#include "loom/tensor/data_type.h"

namespace loom::exec::detail {

/// One by-value scalar kernel argument, 8 bytes so that every scalar type fits.
union ScalarArg {
  double f64;
  float f32;
  int64_t i64;
  int32_t i32;
  bool b;
};

/// Converts a scalar fusion input's argument to the kernel parameter's type.
ScalarArg packScalar(const eval::Argument& arg, DataType dtype, const std::string& name);

/// Appends the words of one loom::Tensor<T, N> argument to `blob`: the data pointer (written
/// later, per run), then N sizes and N strides as int64, or as 2N int32 padded to 8 bytes for
/// Int32 indexing. Returns the position of the pointer word.
size_t appendTensorBlob(std::vector<int64_t>& blob, std::span<const int64_t> sizes,
                        std::span<const int64_t> strides, DataType index_type);

/// Vectorized parameters are read/written `width` elements at a time: the data pointer must be
/// aligned to the vector, the dims the vector spans (`v.dims`, merged outermost first) must start
/// (innermost) with a dense run, innermost stride 1, whose size is a multiple of the width (so
/// no vector leaves the run and the all-or-nothing vector predicate never drops elements), and
/// every other stride (spanned dims past the run included) must be a multiple of it. `data` may
/// be null to check the layout only.
void checkVectorLayout(const kir::Kernel::VectorizedParam& v, const void* data,
                       std::span<const int64_t> sizes, std::span<const int64_t> strides);

/// A kernel with grid barriers hangs unless every block is resident at once: UserError (naming
/// kernel `name`) when `kernel` cannot hold `launch`'s grid resident on `device`. Checked before
/// anything is launched, by a fresh launch plan and by a plan loaded from the plan cache.
void checkResident(const LaunchParams& launch, const LoadedKernel& kernel,
                   const ComputeDevice& device, const std::string& name);

/// After a launch of a kernel with checked index reads: the failed check's site and the value
/// it read, from the two error words `words` (site + 1, value; 0 when every check passed), which
/// are zeroed again for the next launch; nullopt when every check passed. Waits for the launch.
std::optional<std::pair<size_t, int64_t>> takeIndexError(const ComputeDevice& device,
                                                         const Tensor& words, CUstream stream);

/// UserError for a vectorized output whose fresh allocation is not aligned (a custom allocator).
[[noreturn]] void throwMisalignedOutput(const kir::Buffer* b, const void* data, int64_t bytes);

}  // namespace loom::exec::detail
