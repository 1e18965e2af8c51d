// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the op constructors: fresh output IterDomains, axis normalization, shapes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loom/ir/builder.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ops/size.h"

namespace loom::ops::detail {

using ir::IterDomain;
using ir::IterType;
using ir::Scalar;
using ir::TensorView;
using ir::Val;

/// A new serial IterDomain with `id`'s start and extents and the given type, no definition, not an
/// rFactor product. An expanded extent is kept only when `type` is Broadcast.
IterDomain* freshId(const IterDomain* id, IterType type);
inline IterDomain* freshId(const IterDomain* id) { return freshId(id, id->iterType()); }

/// x's logical domain without reduction IDs: the dimensions users see.
std::vector<IterDomain*> dims(const TensorView* x);

/// Fresh copies of `ids` (types kept).
std::vector<IterDomain*> freshIds(const std::vector<IterDomain*>& ids);

/// A TensorView over `logical` with default contiguity.
TensorView* newTensor(std::vector<IterDomain*> logical, DataType dtype);

/// What a list of dims is for: the error for a bad one also says it in nvFuser's words (so a
/// test written for nvFuser's message matches Loom's), which differ for reduction axes.
enum class DimRole { kGeneral, kReduction };

/// Normalizes `dim` (negative counts from the end) for a tensor of `rank` dims; the error names
/// `op`, `x` (may be nullptr), the dim and the range expected.
int64_t normalizeDim(const TensorView* x, int64_t dim, int64_t rank, std::string_view op,
                     DimRole role = DimRole::kGeneral);

/// Normalizes and checks for duplicates; the result keeps the given order.
std::vector<int64_t> normalizeDims(const TensorView* x, const std::vector<int64_t>& dims,
                                   int64_t rank, std::string_view op,
                                   DimRole role = DimRole::kGeneral);

/// "[2, 3, s4]": constant extents as numbers, symbolic ones by name.
std::string shapeString(const TensorView* x);
std::string shapeString(const std::vector<int64_t>& sizes);

/// The user-visible size of one ID as a constant, or nullopt when symbolic.
std::optional<int64_t> constSize(const IterDomain* id);

/// Output logical IDs of a pointwise op over tensors whose ranks align from the right: Broadcast
/// where every operand is Broadcast (keeping an expanded extent), otherwise Iteration with the
/// extent of a non-broadcast operand (constants preferred). Throws a UserError when two constant
/// extents conflict.
std::vector<IterDomain*> broadcastOutputIds(const std::vector<TensorView*>& tensors,
                                            std::string_view op);
/// The same over given IDs of each tensor (`ids[t]` are IDs of `tensors[t]`, named in errors):
/// matmul's batch dims, which are not all of an operand's dims.
std::vector<IterDomain*> broadcastOutputIds(const std::vector<TensorView*>& tensors,
                                            const std::vector<std::vector<IterDomain*>>& ids,
                                            std::string_view op);

/// Product of the user-visible extents of the given dims of x (an index Scalar, folded).
Scalar* numElements(const TensorView* x, const std::vector<int64_t>& axes);

/// `s` converted to `dtype`: itself when the dtype matches, a new constant for a constant, a
/// scalar Cast otherwise.
Scalar* castScalar(Scalar* s, DataType dtype);

/// The Scalar of a scalar operand (a number or a Scalar node) converted to `dtype`; a tensor is
/// a UserError naming `op` and `what` ("the pad value").
Scalar* scalarOperand(const Val* v, DataType dtype, std::string_view op, std::string_view what);

/// The output ID of one factory size: Broadcast for a constant 1, else Iteration; a negative
/// constant is a UserError naming `op`, the dim and (when given) the whole shape.
IterDomain* sizedId(const Size& size, std::string_view op, size_t dim, const SizeList* shape);

/// The floating type composites compute in: Float64 for Float64, else Float32.
inline DataType computeFloat(DataType t) { return t == DataType::Float64 ? t : DataType::Float32; }
/// A composite's main output dtype: the input's floating type, Float32 for integer and bool.
inline DataType outputFloat(DataType t) { return isFloatingType(t) ? t : DataType::Float32; }

/// The last `n` dims of x (the normalized dims of a norm), normalized; n must be in [1, rank]
/// (UserError naming `op` otherwise).
std::vector<int64_t> lastDims(const TensorView* x, int64_t n, std::string_view op);

}  // namespace loom::ops::detail
