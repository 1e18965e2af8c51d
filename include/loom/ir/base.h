// SPDX-License-Identifier: Apache-2.0
// Statement, Val and Expr: the base of every IR node.
//
// ## The IR contract
//
// * A Fusion owns its nodes. Nodes are created only through IrBuilder::create<T>(...), which
//   registers them with the active fusion (set by a FusionGuard) and names them (T0, i3, ...).
// * Values are SSA: each Val has at most one definition (the Expr that outputs it) and any number
//   of uses. Registering a second definition for a Val removes the first one from the fusion.
//   Fusion inputs have no definition. A Scalar with a value and no definition is a constant.
// * Expr fields are typed and named: inputs and outputs live in inputs()/outputs() and are read
//   through accessors (`split->in()`, `reduction->out()`); other attributes (op type, split factor,
//   init value) are named members. Exprs are immutable once built, except that a pass may replace
//   one of their inputs with another Val of the same kind (Expr::replaceInput).
// * IterDomain: one iteration range [start, extent) with an IterType and a ParallelType.
//   - Iteration: an ordinary dimension. Reduction: reduced away by the tensor's definition.
//     Broadcast: extent 1 in memory; it may carry an expanded extent (the logical size after
//     `expand`) while indexing always uses extent 1. Symbolic: not yet known to be Iteration or
//     Broadcast (sizes bound at run time decide).
//   - Split(in, factor, inner) makes [ceilDiv(N, f), f] (inner split) or [f, ceilDiv(N, f)] (outer
//     split). A split need not divide its input: the remainder is masked by predicates at lowering.
//     Merge(outer, inner) makes one ID of extent outer * inner, iterated outer-major.
//     Resize(in, left, right) makes one Iteration ID of extent left + extent(in) + right (slice,
//     pad); it appears only between root and logical.
//   - ParallelType DIDx/y/z binds an ID to devices of the tensor's DeviceMesh; inside a kernel its
//     extent is 1. BIDx.., TIDx.. bind to CUDA blocks and threads; Vectorize/Unroll/Unswitch are
//     loop annotations; Bulk marks the IDs a bulk (TMA) copy moves whole (the box). Each parallel
//     type appears at most once in a tensor's loop domain.
// * TensorDomain: four lists of IterDomains connected by Split/Merge exprs (and Resize from root
//   to logical).
//   - root: present only when the tensor's own definition transforms dimensions (reshape, rFactor,
//     permute, slice, pad); it maps 1:1 to the producer's logical domain minus its reductions.
//     A dynamic reshape's logical IDs are fresh Symbolic IDs not derived from its root; they are
//     derived when the fusion is concretized for given inputs (segmenter/concretize.h).
//   - logical: the tensor's global semantic shape, reduction IDs included. Sharding never changes
//     the logical domain.
//   - allocation: the order and shape of the buffer in memory, outermost first; empty means "same
//     as logical". A sharded tensor's allocation carries the DID split, so the buffer is the shard.
//   - loop: what scheduling produces (split/merge/reorder of logical); defines loop nests and
//     parallelization. Defaults to logical.
//   - contiguity: one entry per allocation ID (per logical ID when allocation is empty): nullopt
//   for
//     broadcast and reduction IDs; true when the ID is dense with the next non-broadcast ID inward
//     (stride == size * stride of that ID; stride 1 for the innermost). Kernels rely on it
//     (no stride for a contiguous innermost dim); KernelExecutor checks input tensors against it
//     and FusionExecutorCache sets it from the strides it is given (exec/contiguity.h).
// * TensorView: a tensor value: a TensorDomain, a memory type and a device mesh. Rewrites of a
//   sharded TensorView (rFactor, clearing reduction IDs, caching, Welford translation) keep its
//   loop and allocation domains, minus what they remove; siblings of a multi-output op share one
//   schedule.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/ir/node_kinds.h"
#include "loom/support/error.h"
#include "loom/tensor/data_type.h"

namespace loom::ir {

class Statement {
 public:
  virtual ~Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  NodeKind kind() const { return kind_; }
  Fusion* fusion() const { return fusion_; }
  /// Number unique among statements of the same kind in a fusion (T3 is TensorView name 3).
  int64_t name() const { return name_; }

  bool isVal() const { return isValKind(kind_); }
  bool isExpr() const { return isExprKind(kind_); }

  template <typename T>
  bool isA() const {
    return T::classof(this);
  }
  template <typename T>
  T* as() {
    LOOM_ASSERT(isA<T>(), "node ", toString(), " is a ", nodeKindName(kind_));
    return static_cast<T*>(this);
  }
  template <typename T>
  const T* as() const {
    LOOM_ASSERT(isA<T>(), "node ", toString(), " is a ", nodeKindName(kind_));
    return static_cast<const T*>(this);
  }
  template <typename T>
  T* dynCast() {
    return isA<T>() ? static_cast<T*>(this) : nullptr;
  }
  template <typename T>
  const T* dynCast() const {
    return isA<T>() ? static_cast<const T*>(this) : nullptr;
  }

  /// Short reference used in messages and the text form: T3, i5, s2, 1.5, ...
  virtual std::string toString() const = 0;

  /// Makes a copy of this node in the cloner's target fusion (see cloner.h).
  virtual Statement* cloneInto(IrCloner& cloner) const = 0;

 protected:
  explicit Statement(NodeKind kind) : kind_(kind) {}

 private:
  friend class Fusion;
  friend class IrCloner;
  Fusion* fusion_ = nullptr;
  int64_t name_ = -1;
  size_t slot_ = 0;  ///< position in the owning fusion's statement list (Fusion keeps it current)
  NodeKind kind_;
};

class Val : public Statement {
 public:
  static bool classof(const Statement* s) { return s->isVal(); }

  DataType dtype() const { return dtype_; }
  /// The expr that outputs this value, or nullptr (fusion inputs, constants, input extents).
  Expr* definition() const { return definition_; }
  /// Exprs that take this value as an input, in the order they were registered.
  const std::vector<Expr*>& uses() const { return uses_; }

  bool isFusionInput() const;
  bool isFusionOutput() const;

 protected:
  Val(NodeKind kind, DataType dtype) : Statement(kind), dtype_(dtype) {}

 private:
  friend class Fusion;
  DataType dtype_;
  Expr* definition_ = nullptr;
  std::vector<Expr*> uses_;
};

class Expr : public Statement {
 public:
  static bool classof(const Statement* s) { return s->isExpr(); }

  const std::vector<Val*>& inputs() const { return inputs_; }
  const std::vector<Val*>& outputs() const { return outputs_; }
  Val* input(size_t i) const { return inputs_.at(i); }
  Val* output(size_t i) const { return outputs_.at(i); }

  /// Vals the expr refers to that are neither inputs nor outputs (split factor, init values).
  virtual std::vector<Val*> attributeVals() const { return {}; }

  /// Operation name used by the printer: "add", "sum", "split", ...
  virtual std::string opName() const = 0;

  /// True when the non-Val attributes (op type, flags) equal those of `other`, which has the same
  /// kind. Inputs, outputs and attributeVals are compared by the caller.
  virtual bool sameAttributes(const Expr* other) const = 0;

  /// Replaces every occurrence of `old_input` among the inputs by `new_input` and updates uses.
  void replaceInput(Val* old_input, Val* new_input);

  std::string toString() const override;

 protected:
  Expr(NodeKind kind, std::vector<Val*> inputs, std::vector<Val*> outputs)
      : Statement(kind), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

 private:
  friend class Fusion;
  std::vector<Val*> inputs_;
  std::vector<Val*> outputs_;
};

/// Clone support: each node class defines `cloneInto` with this macro and a constructor
/// `T(const T* src, IrCloner& cloner)`.
#define LOOM_DECLARE_CLONE(T)                                  \
  Statement* cloneInto(IrCloner& cloner) const override;       \
  static bool classof(const Statement* s) { return s->kind() == NodeKind::T; } \
  static constexpr NodeKind kKind = NodeKind::T;

}  // namespace loom::ir
