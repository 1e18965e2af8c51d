// SPDX-License-Identifier: Apache-2.0
// Fusion: the container that owns an IR graph, its inputs and outputs. FusionGuard sets the
// fusion that IrBuilder adds nodes to. See the IR contract in base.h.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/base.h"
#include "loom/ir/cloner.h"

namespace loom::ir {

class TensorView;
class Scalar;

/// A condition on the run's sizes that the fusion's form implies but its extents do not say: the
/// scalar `value` (an expression of extents) must evaluate to `expected`. ExpressionEvaluator's
/// bindInputs checks it (a UserError: `what`, then the extent `extent` evaluates to). The
/// sharding passes add them (an inner split whose outer piece is a DID gives each device a block
/// only for one extent, multidevice/sharding.h), and so do ops: broadcast_in_dim to a constant
/// size of a run-time dim, a floating Scalar used as a size (ops/size.h). The text form prints
/// them as `require` lines (docs/text-format.md).
struct ExtentRequirement {
  Scalar* value = nullptr;
  int64_t expected = 0;
  Scalar* extent = nullptr;
  std::string what;
};

class Fusion {
 public:
  Fusion();
  ~Fusion();
  Fusion(const Fusion&) = delete;
  Fusion& operator=(const Fusion&) = delete;

  /// A deep copy.
  std::unique_ptr<Fusion> clone() const;
  /// Copies every statement, the inputs and the outputs into `target`, which must be empty, and
  /// returns the mapping from this fusion's nodes to the copies. Copies keep their names.
  IrCloner copyInto(Fusion& target) const;

  /// Marks a Val (TensorView or Scalar) as an input. Inputs have no definition.
  void addInput(Val* v);
  /// Marks a Val as an output. The same Val may be output once.
  void addOutput(Val* v);
  /// Replaces output `old_out` by `new_out` in place.
  void replaceOutput(Val* old_out, Val* new_out);
  /// Makes `replacement` take `old`'s place as the input of every expr that reads it and as a
  /// fusion output (graph rewrites: concretization, empty-work removal).
  void replaceAllUses(Val* old, Val* replacement);
  void removeOutput(Val* v);
  /// Drops `v` from the inputs (it stays registered: removeDeadCode deletes it when unused).
  void removeInput(Val* v);
  const std::vector<Val*>& inputs() const { return inputs_; }
  const std::vector<Val*>& outputs() const { return outputs_; }
  bool isInput(const Val* v) const;
  bool isOutput(const Val* v) const;

  /// An in-place update (nvFuser's add_output(alias_input=)): tensor `output` is written into
  /// the memory of tensor input `input`, and the output returned by a run shares that input's
  /// storage. Marks `output` as an output when it is not one yet. UserError naming both when
  /// `input` is not a tensor input, `output` is an input or already aliased, `input` is aliased
  /// by another output, or their dtypes or ranks differ. Sizes and strides are checked when the
  /// fusion runs (docs/design.md, "In-place outputs", says who writes the memory when).
  void aliasOutputToInput(Val* output, Val* input);
  /// The input `output` is written into, or nullptr.
  Val* aliasedInput(const Val* output) const;
  /// (output, input) of every aliased output, in the order they were declared.
  const std::vector<std::pair<Val*, Val*>>& aliases() const { return aliases_; }

  /// Adds a run-time condition on the sizes (see ExtentRequirement); its scalars stay live.
  void addExtentRequirement(ExtentRequirement requirement);
  const std::vector<ExtentRequirement>& extentRequirements() const { return requirements_; }

  /// Math exprs (not IterDomain transforms) that the outputs depend on, producers before
  /// consumers. Deterministic: follows output order, then input order of each expr. Memoized
  /// (under a lock, so const use from several threads at once is safe; changing the graph while
  /// another thread reads it is not): every change of the graph (wiring an expr, the output list)
  /// drops the saved order. Returns a copy, so callers may change the graph while they walk it.
  std::vector<Expr*> exprs() const;
  /// Every TensorView the outputs depend on (and the inputs), in topological order.
  std::vector<TensorView*> allTvs() const;

  /// Every statement still registered, in creation order.
  std::vector<Statement*> statements() const;
  std::vector<Val*> vals() const;
  std::vector<Expr*> allExprs() const;
  int64_t numStatements() const { return int64_t(stmts_.size()); }

  /// Unlinks an expr from its inputs and outputs and deletes it.
  void removeExpr(Expr* e);
  /// Deletes a Val that nothing uses or outputs; removes its definition first.
  void removeVal(Val* v);
  /// Removes every statement that neither the outputs nor the inputs need: math not reaching an
  /// output, and domains, IDs and scalars no live tensor refers to.
  void removeDeadCode();

  /// Adds a node made outside IrBuilder (cloner, parser). Wires definitions and uses for exprs;
  /// `name` keeps a given name (clones keep their source names).
  void registerStatement(Statement* s, std::optional<int64_t> name = std::nullopt);

  /// Text of the whole fusion in the .fus form (implemented by the printer).
  std::string toString() const;

 private:
  friend class Expr;
  void wireExpr(Expr* e);
  void unwireExpr(Expr* e);
  void deleteStatement(Statement* s);

  std::vector<std::unique_ptr<Statement>> stmts_;
  std::vector<Val*> inputs_;
  std::vector<Val*> outputs_;
  std::vector<std::pair<Val*, Val*>> aliases_;  // (output, input)
  std::vector<ExtentRequirement> requirements_;
  std::vector<int64_t> next_name_;  // per NodeKind
  // exprs() and allTvs() while the graph is unchanged (schedulers and lowering ask for them
  // dozens of times per compile); every graph change calls invalidateOrders().
  void invalidateOrders();
  const std::vector<Expr*>& exprsLocked() const;  // exprs() with orders_mutex_ held
  mutable std::mutex orders_mutex_;
  mutable std::vector<Expr*> exprs_;
  mutable std::vector<TensorView*> tvs_;
  mutable bool exprs_valid_ = false;
  mutable bool tvs_valid_ = false;
};

/// Sets the active fusion for the guard's lifetime (thread-local), restoring the previous one.
class FusionGuard {
 public:
  explicit FusionGuard(Fusion* fusion);
  ~FusionGuard();
  FusionGuard(const FusionGuard&) = delete;
  FusionGuard& operator=(const FusionGuard&) = delete;

  /// The active fusion, or nullptr.
  static Fusion* current();

 private:
  Fusion* previous_;
};

}  // namespace loom::ir
