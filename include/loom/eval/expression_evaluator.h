// SPDX-License-Identifier: Apache-2.0
// ExpressionEvaluator: values of Scalars (extents, split factors, scalar inputs) once the
// symbolic ones are bound, and validation of runtime inputs against a fusion.
//
//   ExpressionEvaluator ee;
//   ee.bindInputs(fusion, args);                 // checks args, binds s0 := 128, ...
//   int64_t n = ee.evaluateInt(tv->axis(0)->extent());
//
// Scalar math follows the element semantics of the reference evaluator: integer Div truncates,
// Mod has the sign of the dividend, CeilDiv is the exact ceiling of the quotient; integer
// arithmetic wraps to the scalar's width; floating results are rounded to the scalar's dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/scalar.h"
#include "loom/tensor/tensor_metadata.h"

namespace loom::ir {
class Fusion;
class IterDomain;
class TensorView;
}  // namespace loom::ir

namespace loom::eval {

class ExpressionEvaluator {
 public:
  /// Binds a symbolic Scalar to a value (converted to the scalar's dtype). Binding a constant or
  /// rebinding to a different value is a UserError; derived values are recomputed afterwards.
  void bind(const ir::Val* v, ir::ScalarValue value);
  bool isBound(const ir::Val* v) const { return bound_.count(v) != 0; }

  /// The value of a Scalar: its constant, its binding, or its definition (Unary/Binary/TernaryOp
  /// on scalars) evaluated recursively. nullopt when something it needs is not bound. Integer
  /// division by zero is a UserError.
  std::optional<ir::ScalarValue> evaluate(const ir::Val* v);
  /// evaluate() as an integer; UserError naming the value when it is not known.
  int64_t evaluateInt(const ir::Val* v);
  /// evaluate() as a double; UserError naming the value when it is not known.
  double evaluateDouble(const ir::Val* v);

  /// The size of `id` as `tv` shows it (the expanded extent of an expanded broadcast); UserError
  /// "extent s3 of T0 is not bound" when unknown.
  int64_t extentOf(const ir::IterDomain* id, const ir::TensorView* tv);
  /// Sizes of tv's logical domain without reductions: the shape users see.
  std::vector<int64_t> logicalSizes(const ir::TensorView* tv);

  /// Checks `args` against the fusion's inputs and binds scalar inputs and the symbolic (and
  /// expanded) extents of tensor inputs. Checks, each a UserError naming the input position, the
  /// tensor, the dimension and expected vs got: argument count; tensor vs scalar; rank (logical
  /// without reductions); exact dtype; constant extents equal the size; broadcast
  /// dims have size 1 unless expanded (then stride 0 or size 1); a symbolic extent shared by
  /// several inputs gets one size; dims that the fusion's exprs line up have equal sizes unless
  /// the fusion declares a broadcast (checkShapeConstraints in shape_constraints.h).
  ///
  /// Sharded inputs (DID loop IDs, ir::shardCounts): with `Shards::Local` (the runtime) a tensor
  /// argument is one device's shard, and a sharded dim binds its logical extent as the local
  /// size times the number of devices; with `Shards::Global` (the reference evaluator) arguments
  /// are whole tensors.
  ///
  /// Only metadata is read (inputMetadata), so tensors may be on any device.
  enum class Shards : uint8_t { Local, Global };
  void bindInputs(const ir::Fusion& fusion, std::span<const Argument> args,
                  Shards shards = Shards::Local);

 private:
  std::unordered_map<const ir::Val*, ir::ScalarValue> bound_;
  std::unordered_map<const ir::Val*, ir::ScalarValue> derived_;  // cache, cleared by bind()
};

/// The metadata of argument `t` for fusion input `tv` (rank already checked): with
/// Shards::Local and a tensor with a device mesh, each sharded dim's global size is its local
/// size times its shard count (ir::shardCounts); UserError naming `name` when that overflows.
TensorMetadata inputMetadata(const ir::TensorView* tv, const Tensor& t,
                             ExpressionEvaluator::Shards shards, const std::string& name);

}  // namespace loom::eval
