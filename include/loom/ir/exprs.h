// SPDX-License-Identifier: Apache-2.0
// Math exprs: pointwise, reductions, Welford, and the ops that change a tensor's dimensions.
// Constructors take outputs first, then inputs, then attributes. Each accessor names a position in
// inputs()/outputs(); attributes are named members. See the IR contract in base.h.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "loom/ir/base.h"
#include "loom/ir/op_types.h"
#include "loom/ir/scalar.h"

namespace loom::ir {

class Resize;
class Scalar;
class TensorView;

/// out = op(in). Works on Scalars and TensorViews alike; Cast converts to out's dtype.
class UnaryOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(UnaryOp)
  UnaryOp(UnaryOpType op, Val* out, Val* in);
  UnaryOp(const UnaryOp* src, IrCloner& cloner);

  UnaryOpType opType() const { return op_; }
  Val* out() const { return output(0); }
  Val* in() const { return input(0); }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  UnaryOpType op_;
};

/// out = op(lhs, rhs). Operands are TensorViews or Scalars; broadcasting is already explicit.
class BinaryOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(BinaryOp)
  BinaryOp(BinaryOpType op, Val* out, Val* lhs, Val* rhs);
  BinaryOp(const BinaryOp* src, IrCloner& cloner);

  BinaryOpType opType() const { return op_; }
  Val* out() const { return output(0); }
  Val* lhs() const { return input(0); }
  Val* rhs() const { return input(1); }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  BinaryOpType op_;
};

/// out = op(a, b, c): where(cond, x, y), clamp(x, lo, hi), lerp(start, end, weight).
class TernaryOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(TernaryOp)
  TernaryOp(TernaryOpType op, Val* out, Val* a, Val* b, Val* c);
  TernaryOp(const TernaryOp* src, IrCloner& cloner);

  TernaryOpType opType() const { return op_; }
  Val* out() const { return output(0); }
  Val* a() const { return input(0); }
  Val* b() const { return input(1); }
  Val* c() const { return input(2); }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  TernaryOpType op_;
};

/// The identity of `op` over `dtype`: 0 for sum, 1 for prod, the lowest / highest value for max
/// / min (-inf / +inf for floats, false / true for bool).
ScalarValue reductionIdentity(ReductionOpType op, DataType dtype);

/// out = reduce(in) over the IDs that are Reduction in out's logical domain; `init` is normally
/// the identity (reductionIdentity; docs/ops.md says what another init means).
class ReductionOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(ReductionOp)
  ReductionOp(ReductionOpType op, Scalar* init, TensorView* out, TensorView* in);
  ReductionOp(const ReductionOp* src, IrCloner& cloner);

  ReductionOpType opType() const { return op_; }
  Scalar* init() const { return init_; }
  /// True when partials may each start at init(): it is the identity of a sum (0) or a prod (1),
  /// or the op is max or min (idempotent).
  bool hasIdentityInit() const;
  TensorView* out() const;
  TensorView* in() const;

  std::vector<Val*> attributeVals() const override;
  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  ReductionOpType op_;
  Scalar* init_;
};

/// Welford's online mean/variance over the Reduction IDs of the outputs' logical domains.
/// Outputs: avg, m2 (sum of squared deviations) and n (count, Int64), all with one shared domain
/// shape. Inputs: the partial (avg, m2, n) being combined; a raw input x is (x, 0, 1) with the
/// Scalars 0 and 1. Init values (avg, m2, n) start the accumulation (all zero normally).
class WelfordOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(WelfordOp)
  WelfordOp(TensorView* out_avg, TensorView* out_m2, TensorView* out_n, Val* in_avg, Val* in_m2,
            Val* in_n, Scalar* init_avg, Scalar* init_m2, Scalar* init_n);
  WelfordOp(const WelfordOp* src, IrCloner& cloner);

  TensorView* outAvg() const;
  TensorView* outM2() const;
  TensorView* outN() const;
  Val* inAvg() const { return input(0); }
  Val* inM2() const { return input(1); }
  Val* inN() const { return input(2); }
  Scalar* initAvg() const { return init_avg_; }
  Scalar* initM2() const { return init_m2_; }
  Scalar* initN() const { return init_n_; }
  /// True when the init is (0, 0, 0), so that partials may each start at it.
  bool hasIdentityInit() const;
  /// True when the input is a raw tensor (m2 = 0 and n = 1 constants).
  bool hasRawInput() const;

  std::vector<Val*> attributeVals() const override;
  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  Scalar* init_avg_;
  Scalar* init_m2_;
  Scalar* init_n_;
};

/// Inserts new Broadcast IDs: output logical position i is new when isBroadcastDim()[i].
class BroadcastOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(BroadcastOp)
  BroadcastOp(TensorView* out, TensorView* in, std::vector<bool> is_broadcast_dim);
  BroadcastOp(const BroadcastOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;
  const std::vector<bool>& isBroadcastDim() const { return is_broadcast_dim_; }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  std::vector<bool> is_broadcast_dim_;
};

/// Removes size-1 IDs: input logical position i (reductions excluded) is removed when
/// isSqueezedDim()[i].
class SqueezeOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(SqueezeOp)
  SqueezeOp(TensorView* out, TensorView* in, std::vector<bool> is_squeezed_dim);
  SqueezeOp(const SqueezeOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;
  const std::vector<bool>& isSqueezedDim() const { return is_squeezed_dim_; }
  /// The input's logical IDs (reductions left out) this squeeze removes: 1 at run time, also
  /// when their extent is symbolic (the squeeze checks it).
  std::vector<IterDomain*> squeezedIds() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  std::vector<bool> is_squeezed_dim_;
};

/// Gives broadcast IDs an expanded extent (no copy: the data is still one element wide). The
/// output's logical IDs carry the new extents.
class ExpandOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(ExpandOp)
  ExpandOp(TensorView* out, TensorView* in);
  ExpandOp(const ExpandOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// Row-major reshape. out's root mirrors in's logical (minus reductions).
/// * Static: out's logical is derived from its root by Split/Merge exprs.
/// * Dynamic (ops::reshape with symbolic sizes): out's logical IDs are not derived from the root
///   (no transforms between them); their extents are the requested sizes and their IterType is
///   Symbolic where the size is symbolic (a size that is 1 at run time is a broadcast).
///   segmenter::concretizeFusion rebuilds a dynamic reshape as a static one for given inputs;
///   the reference evaluator runs it directly. isDynamic() tells the two apart.
class ReshapeOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(ReshapeOp)
  ReshapeOp(TensorView* out, TensorView* in);
  ReshapeOp(const ReshapeOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;
  /// True when out's logical domain is not derived from its root (a dynamic reshape).
  bool isDynamic() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// A copy. When out has a root domain, its logical is a permutation of the root (permute,
/// transpose). Also the op that cache tensors are defined by.
class LoadStoreOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(LoadStoreOp)
  /// `segment_boundary`: nvFuser's segment_set, a copy at which the segmenter cuts: a kernel
  /// holding this op reads its input from global memory (a fusion input of the segment), so the
  /// input's producer is in another segment.
  LoadStoreOp(LoadStoreOpType op, TensorView* out, TensorView* in, bool segment_boundary = false);
  LoadStoreOp(const LoadStoreOp* src, IrCloner& cloner);

  LoadStoreOpType opType() const { return op_; }
  TensorView* out() const;
  TensorView* in() const;
  bool isSegmentBoundary() const { return segment_boundary_; }

  /// "set" or "tma_copy", or "segment_set" for a segment boundary.
  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  LoadStoreOpType op_;
  bool segment_boundary_ = false;
};

/// True when tv is defined by a TmaCopy (the only tensors with Bulk loop IDs).
bool isTmaCopyOutput(const TensorView* tv);

/// out = in[start_0:stop_0, start_1:stop_1, ...] (step 1). out's root mirrors in's logical
/// (minus reductions); a sliced dim's logical ID is Resize(root, -start, stop - extent) with the
/// normalized bounds (0 <= start <= stop <= extent); an unsliced dim's logical ID is its root ID.
/// out index i of a sliced dim reads in index i + start.
class SliceOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(SliceOp)
  SliceOp(TensorView* out, TensorView* in);
  SliceOp(const SliceOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// out = in padded with `value`. out's root mirrors in's logical (minus reductions); a padded
/// dim's logical ID is Resize(root, left, right) with the pad widths (negative widths crop); an
/// unpadded dim's logical ID is its root ID. out index i reads in index i - left when
/// 0 <= i - left < extent(in), and is `value` otherwise. Inputs: in, value (a Scalar of out's
/// dtype).
class PadOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(PadOp)
  PadOp(TensorView* out, TensorView* in, Scalar* value);
  PadOp(const PadOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;
  Scalar* value() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// Concatenation along `dim`. Every input is a PadOp output whose logical ID at `dim` is a
/// Resize to the full output extent: input k covers [left_k, left_k + extent_k) of the output
/// (left_k = the Resize's left width, extent_k = the extent of the Resize's input) and the
/// ranges tile the output in input order. out index i along dim takes input k's value at i for
/// the k whose range contains i. Other dims have equal extents in every input and out.
class CatOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(CatOp)
  CatOp(TensorView* out, const std::vector<TensorView*>& inputs, int64_t dim);
  CatOp(const CatOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in(size_t k) const;
  size_t numInputs() const { return inputs().size(); }
  int64_t dim() const { return dim_; }
  /// The Resize that places input k: the definition of input k's logical ID at dim() (reductions
  /// skipped), or nullptr when input k is not padded that way.
  const Resize* inputResize(size_t k) const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  int64_t dim_;
};

/// out = value everywhere. No tensor input: out's logical extents give its shape. Input: value (a
/// Scalar of out's dtype).
class FullOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(FullOp)
  FullOp(TensorView* out, Scalar* value);
  FullOp(const FullOp* src, IrCloner& cloner);

  TensorView* out() const;
  Scalar* value() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// out[i] = start + (i + indexOffset) * step for a 1-D out (its logical extent is the length).
/// Inputs: start and step, Scalars of out's dtype, and optionally indexOffset (an integer
/// Scalar; absent means 0): the position of out's element 0 in a longer iota, which a device's
/// local program of an iota sharded along its dim gives (multidevice::localizeShardings).
class IotaOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(IotaOp)
  IotaOp(TensorView* out, Scalar* start, Scalar* step, Scalar* indexOffset = nullptr);
  IotaOp(const IotaOp* src, IrCloner& cloner);

  TensorView* out() const;
  Scalar* start() const;
  Scalar* step() const;
  Scalar* indexOffset() const;  ///< nullptr when absent (0)

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// The distribution of an RngOp.
enum class RngOpType : uint8_t {
  Uniform,  ///< params (low, high): low + (high - low) * u, u uniform in [0, 1)
  Normal,   ///< params (mean, std): mean + std * z, z standard normal (Box-Muller)
};
std::string_view rngOpTypeName(RngOpType t);  ///< "uniform", "normal"

/// Counter-based random numbers (Philox4x32-10): out's element at row-major linear logical index
/// i is a function of (seed, offset, i) only, never of the schedule, so kernels on any backend
/// and the reference evaluator agree (docs/ops.md, "Random numbers", states the bit rules). No
/// tensor input: out's logical extents give its shape. Inputs: seed and offset (Int64 Scalars,
/// read as their 64-bit patterns) and two Float64 parameters (low/high or mean/std).
///
/// Optionally, out is a block of a larger draw (a device's shard: localizeShardings gives it):
/// one index offset and one global extent per logical dim (reductions skipped), integer
/// Scalars. Element (i_0, .., i_r-1) of out is then element (i_0 + o_0, .., i_r-1 + o_r-1) of
/// the draw of shape (g_0, .., g_r-1): i above is its row-major index in that shape. Absent,
/// every o_d is 0 and every g_d out's own extent.
class RngOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(RngOp)
  RngOp(TensorView* out, RngOpType type, Scalar* seed, Scalar* offset, Scalar* param0,
        Scalar* param1, std::vector<Scalar*> indexOffsets = {},
        std::vector<Scalar*> globalExtents = {});
  RngOp(const RngOp* src, IrCloner& cloner);

  TensorView* out() const;
  RngOpType rngType() const { return type_; }
  Scalar* seed() const;
  Scalar* offset() const;
  Scalar* param0() const;  ///< low (Uniform) or mean (Normal)
  Scalar* param1() const;  ///< high (Uniform) or std (Normal)
  /// True when out is a block of a larger draw (the two lists below are not empty).
  bool hasIndexOffsets() const { return inputs().size() > 4; }
  std::vector<Scalar*> indexOffsets() const;   ///< per logical dim; empty when absent
  std::vector<Scalar*> globalExtents() const;  ///< per logical dim; empty when absent

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  RngOpType type_;
};

/// Inclusive scan along logical dim `dim()` (reductions excluded from the count): out[.., i, ..]
/// = in[.., 0, ..] op in[.., 1, ..] op ... op in[.., i, ..] with op Sum (cumsum), Prod (cumprod),
/// Max (cummax) or Min (cummin); max and min propagate NaN, as the reductions do. out has in's
/// shape (its own IDs, mapped to in's position by position) and dtype. No init: each row starts
/// at op's identity (reductionIdentity).
class ScanOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(ScanOp)
  ScanOp(ReductionOpType op, TensorView* out, TensorView* in, int64_t dim);
  ScanOp(const ScanOp* src, IrCloner& cloner);

  ReductionOpType opType() const { return op_; }
  TensorView* out() const;
  TensorView* in() const;
  int64_t dim() const { return dim_; }
  /// out's logical ID the scan runs along.
  IterDomain* scanId() const;

  /// "cumsum", "cumprod", "cummax", "cummin".
  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  ReductionOpType op_;
  int64_t dim_;
};
/// The ScanOp op type of "cumsum", "cumprod", "cummax" or "cummin"; nullopt for other names.
std::optional<ReductionOpType> parseScanOpName(std::string_view name);

/// The order sorts and top-k use along their dim (torch's): NaN is larger than every number and
/// equal to other NaNs, -0.0 equals 0.0, and equal elements keep their input order (the sort is
/// stable in both directions, so the order of ties is defined: lower index first).
///
/// out[.., i, ..] = the index (Int64) along `dim()` of the element of `in` that comes i-th in
/// ascending (or, `descending()`, descending) order of its row (torch.argsort with stable=True).
/// out has in's shape; its dims other than `dim` line up with in's position by position. Reads
/// its row from global memory: in kernels the input is a fusion input of the segment and the
/// output is written whole rows at a time (docs/ops.md, "Sorting").
class ArgsortOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(ArgsortOp)
  ArgsortOp(TensorView* out, TensorView* in, int64_t dim, bool descending);
  ArgsortOp(const ArgsortOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* in() const;
  int64_t dim() const { return dim_; }
  bool descending() const { return descending_; }
  /// out's logical ID the sort runs along.
  IterDomain* sortId() const;
  /// A scheduling decision (the sort scheduler's), 0 by default: the power of two of elements a
  /// block sorts in shared memory when one block sorts each row (see isSortExpr).
  int64_t blockRow() const { return block_row_; }
  void setBlockRow(int64_t capacity) { block_row_ = capacity; }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  int64_t dim_;
  bool descending_;
  int64_t block_row_ = 0;
};

/// The k largest (or, without `largest()`, smallest) elements of each row of `in` along `dim()`
/// and their indices, in that order (torch.topk with sorted=True; the order and ties as
/// ArgsortOp's: the first k of a stable descending or ascending sort). Outputs: values (in's
/// dtype) and indices (Int64), both with in's shape except extent k along `dim`. Inputs: in and
/// k (an Int64 Scalar, 0 <= k <= the extent of in's dim, checked when sizes are bound; the
/// outputs' extent along `dim` is k). Rows are read from global memory as ArgsortOp's.
class TopKOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(TopKOp)
  TopKOp(TensorView* values, TensorView* indices, TensorView* in, Scalar* k, int64_t dim,
         bool largest);
  TopKOp(const TopKOp* src, IrCloner& cloner);

  TensorView* values() const;
  TensorView* indices() const;
  TensorView* in() const;
  Scalar* k() const;
  int64_t dim() const { return dim_; }
  bool largest() const { return largest_; }
  /// values()' logical ID the selection runs along (extent k).
  IterDomain* sortId() const;
  /// As ArgsortOp::blockRow: the shared-memory capacity of a block-wide sort of the whole input
  /// row (its first k taken), 0 for one thread per row.
  int64_t blockRow() const { return block_row_; }
  void setBlockRow(int64_t capacity) { block_row_ = capacity; }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  int64_t dim_;
  bool largest_;
  int64_t block_row_ = 0;
};

/// True for ArgsortOp and TopKOp: ops that read whole rows of their input along `sortDim` and
/// write whole rows of their outputs (in kernels one thread per row, or with blockRow() > 0 the
/// threads of one block per row, sorting in shared memory).
bool isSortExpr(const Expr* e);
/// The dim an ArgsortOp or TopKOp runs along.
int64_t sortDim(const Expr* e);
/// The blockRow() of an ArgsortOp or TopKOp.
int64_t sortBlockRow(const Expr* e);

/// out = lookup indexed along `dim` by the values of `index` (index_select, embedding): out's dims
/// are lookup's before `dim`, then the index's span (its dims [dim, dim + span), span =
/// rank(out) - rank(lookup) + 1), then lookup's after `dim`, and
/// out[a..., k..., b...] = lookup[a..., index[k...], b...]. The index has out's rank and lines up
/// with it dim for dim, broadcast (size 1) off its span. Index values must lie in
/// [0, extent of lookup's dim) (negative ones are not wrapped): the reference evaluator and the
/// kernels report any other as a UserError. Inputs: lookup, index (Int32 or Int64).
class IndexSelectOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(IndexSelectOp)
  IndexSelectOp(TensorView* out, TensorView* lookup, TensorView* index, int64_t dim);
  IndexSelectOp(const IndexSelectOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* lookup() const;
  TensorView* index() const;
  int64_t dim() const { return dim_; }

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  int64_t dim_;
};

/// out = lookup gathered along `dim` (torch.gather, take_along_axis): out has index's shape and
/// out[i] = lookup[i with its `dim` coordinate replaced by index[i]]. Along the other dims index's
/// extent is at most lookup's (`exact`, take_along_axis: equal, or index broadcast there reading
/// lookup at 0 too). Index values must lie in [0, extent of lookup's dim). Inputs: lookup, index.
class GatherOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(GatherOp)
  GatherOp(TensorView* out, TensorView* lookup, TensorView* index, int64_t dim, bool exact);
  GatherOp(const GatherOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* lookup() const;
  TensorView* index() const;
  int64_t dim() const { return dim_; }
  bool exact() const { return exact_; }

  std::string opName() const override;  ///< "gather" or "take_along_axis"
  bool sameAttributes(const Expr* other) const override;

 private:
  int64_t dim_;
  bool exact_;
};

/// out = self with src scattered into it along `dim` (torch.scatter / scatter_add): out has self's
/// shape; for each position j of index, out[j with its `dim` coordinate replaced by index[j]] =
/// src[j] (`accumulate`: += src[j], every contribution added). src is at least index's shape, and
/// index's extent along the other dims is at most self's. Which of several writes to one position
/// wins is unspecified without `accumulate` (as in torch). Inputs: self, index, src.
class ScatterOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(ScatterOp)
  ScatterOp(TensorView* out, TensorView* self, TensorView* index, TensorView* src, int64_t dim,
            bool accumulate);
  ScatterOp(const ScatterOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* self() const;
  TensorView* index() const;
  TensorView* src() const;
  int64_t dim() const { return dim_; }
  bool accumulate() const { return accumulate_; }
  /// A scheduling decision (the scatter scheduler's, scheduler/scatter.h), not part of the op's
  /// meaning: the kernel copies self into out over out's loops, waits at a grid barrier, then
  /// walks index once and adds each src element into out with an atomic add. Unset, each out
  /// element searches index along `dim` (lowering, indexed_ops.h). Only with `accumulate`.
  bool atomic() const { return atomic_; }
  void setAtomic(bool atomic);

  std::string opName() const override;  ///< "scatter" or "scatter_add"
  bool sameAttributes(const Expr* other) const override;

 private:
  int64_t dim_;
  bool accumulate_;
  bool atomic_ = false;
};

/// True for the inputs an indexing op reads at computed positions (IndexSelectOp's and GatherOp's
/// lookup, ScatterOp's index and src): they line up with no dim of the output (the logical map
/// leaves them out) and kernels read them from global memory.
bool isIndexedOperand(const Expr* e, const Val* input);
/// True for IndexSelectOp, GatherOp and ScatterOp.
bool isIndexingExpr(const Expr* e);

/// Matrix product with torch.matmul's semantics: out[batch..., m, n] = sum over k of
/// a[batch_a..., m, k] * b[batch_b..., k, n]. A 1-D a is one row ([k]: out has no m dim), a 1-D
/// b one column ([k]: out has no n dim); 1-D x 1-D is a dot product (a 0-D out). The batch dims
/// of a and b (all dims before the last two) align from the right and broadcast: an operand
/// without a dim, or with size 1 there, repeats along it. The contracted dim k (a's last dim, b's
/// second-to-last or only dim) is out's last logical ID, a Reduction ID r{k} as in nvFuser:
/// out's logical domain is [batch..., m, n, r{k}]; not allocated, paired with both operands' k
/// by the logical map. A DID on it marks a row-parallel product (docs/multidevice.md).
/// Operands and out have one floating dtype (f32, bf16 or f16); products accumulate in f32 (the
/// reference evaluator in double) and out is rounded once. Runs as a segment of its own (a
/// library call: segmenter::MatmulWork), never inside a generated kernel.
class MatmulOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(MatmulOp)
  MatmulOp(TensorView* out, TensorView* a, TensorView* b);
  MatmulOp(const MatmulOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* a() const;
  TensorView* b() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// torch.nn.functional.linear: out = x @ w^T + bias. x is [..., k] (any rank >= 1), w is
/// [n, k] (out [..., n, r{k}]) or [k] (out [..., r{k}]: one dot product per row of x; r{k} as
/// MatmulOp's), bias (optional) is
/// [n] (added to every row) or 0-D (added everywhere). Dtypes and accumulation as MatmulOp; the
/// bias is added to the f32 accumulator before the one rounding. Inputs: x, w and, when
/// hasBias(), bias.
class LinearOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(LinearOp)
  LinearOp(TensorView* out, TensorView* x, TensorView* w, TensorView* bias);
  LinearOp(const LinearOp* src, IrCloner& cloner);

  TensorView* out() const;
  TensorView* x() const;
  TensorView* w() const;
  bool hasBias() const { return inputs().size() == 3; }
  /// nullptr without a bias.
  TensorView* bias() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// Scaled dot-product attention forward (ops::sdpfaFwd; docs/ops.md, "Attention"): inputs query
/// [.., L, E], key [.., S, E], value [.., S, Ev] (rank 4 or 5, one dtype of f32, bf16, f16), then
/// the Scalars dropout_p (Float64; the constant 0 draws nothing), is_causal (Bool), scale
/// (Float64), seed and offset (Int64; read only when dropout_p > 0). Outputs: output [.., L, Ev]
/// (the inputs' dtype) and log_sumexp [.., L] (Float32). Its math is the composite's
/// (ops::sdpfaFwdComposite), which the reference evaluator runs; a segment of its own
/// (segmenter::AttentionWork), never inside a generated kernel.
class SdpaFwdOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(SdpaFwdOp)
  SdpaFwdOp(TensorView* output, TensorView* log_sumexp, TensorView* query, TensorView* key,
            TensorView* value, Scalar* dropout_p, Scalar* is_causal, Scalar* scale, Scalar* seed,
            Scalar* offset);
  SdpaFwdOp(const SdpaFwdOp* src, IrCloner& cloner);

  TensorView* attnOut() const;
  TensorView* logSumexp() const;
  TensorView* query() const;
  TensorView* key() const;
  TensorView* value() const;
  Scalar* dropoutP() const;
  Scalar* isCausal() const;
  Scalar* scale() const;
  Scalar* seed() const;
  Scalar* offset() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// Its backward (ops::sdpfaBwd): inputs grad_output [.., L, Ev], query, key, value, output (the
/// forward's), log_sumexp [.., L] (Float32), then the forward's five Scalars. Outputs grad_query,
/// grad_key, grad_value (their inputs' shapes and dtype). Math: ops::sdpfaBwdComposite.
class SdpaBwdOp : public Expr {
 public:
  LOOM_DECLARE_CLONE(SdpaBwdOp)
  SdpaBwdOp(TensorView* grad_query, TensorView* grad_key, TensorView* grad_value,
            TensorView* grad_output, TensorView* query, TensorView* key, TensorView* value,
            TensorView* output, TensorView* log_sumexp, Scalar* dropout_p, Scalar* is_causal,
            Scalar* scale, Scalar* seed, Scalar* offset);
  SdpaBwdOp(const SdpaBwdOp* src, IrCloner& cloner);

  TensorView* gradOutput() const;
  TensorView* query() const;
  TensorView* key() const;
  TensorView* value() const;
  TensorView* attnOut() const;
  TensorView* logSumexp() const;
  Scalar* dropoutP() const;
  Scalar* isCausal() const;
  Scalar* scale() const;
  Scalar* seed() const;
  Scalar* offset() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// True for SdpaFwdOp and SdpaBwdOp.
bool isAttentionExpr(const Expr* e);
/// The number of tensor inputs of an attention expr (3 forward, 6 backward); its five Scalars
/// (dropout_p, is_causal, scale, seed, offset) follow them.
size_t attentionTensorInputs(const Expr* e);

/// For a MatmulOp or LinearOp `e` and one of its tensor operands: per dim of the operand
/// (reductions left out), the dim of e's output it lines up with, or -1 for the contracted dim
/// k (and for a 1-D operand's only dim). Batch dims line up from the right; a 1-D bias lines up
/// with out's last dim. The logical map and the verifier read IDs through it.
std::vector<int64_t> matmulOperandDims(const Expr* e, const TensorView* operand);

}  // namespace loom::ir
