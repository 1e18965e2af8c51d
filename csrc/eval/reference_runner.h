// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's Runner: the buffer type every op handler reads and writes, and the
// visitor that runs a fusion's exprs on them (loom/eval/reference_evaluator.h states the
// semantics).
//
// The handlers live by kind of op, each file defining its members of Runner:
//   reference_evaluator.cpp  running a fusion, inputs and outputs, define(), the pointwise
//                            templates and the elementwise ops (unary, binary, ternary)
//   reference_reductions.cpp reductions, Welford and scans
//   reference_shape_ops.cpp  broadcast, squeeze, expand, reshape, permute (LoadStoreOp), slice,
//                            pad and cat
//   reference_factories.cpp  full, iota and the random ops
//   reference_indexing.cpp   index_select, gather, scatter, argsort and topk
//   reference_matmul.cpp     matmul, linear and attention
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "eval/complex_ops.h"
#include "eval/element_ops.h"
#include "eval/index_ops.h"
#include "eval/reduction_space.h"
#include "loom/eval/argument.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/dispatch.h"
#include "loom/tensor/tensor.h"

namespace loom::eval::detail {

/// A tensor value: a dense row-major buffer of its logical shape (reductions removed). A complex
/// tensor (`complex`) keeps its imaginary parts in `imag`, in the layout of `data`; a real one
/// has no `imag`. An integer tensor (Int32, Int64) also keeps its exact values in `ints` (a
/// double holds integers exactly only up to 2^53): integer math, copies, reductions, full and
/// iota read and write them; an op that computes in double leaves `ints` empty, and define()
/// fills it from `data`.
struct Buffer {
  Buffer() = default;
  Buffer(std::vector<int64_t> shape_, std::vector<double> data_, std::vector<double> imag_ = {})
      : shape(std::move(shape_)), data(std::move(data_)), imag(std::move(imag_)) {}

  std::vector<int64_t> shape;
  std::vector<double> data;
  std::vector<double> imag;
  std::vector<int64_t> ints;
  bool complex = false;

  Complex at(size_t i) const { return {data[i], complex ? imag[i] : 0.0}; }
  /// Element i as an integer: exact when `ints` holds it, else truncated from `data`.
  int64_t intAt(size_t i) const { return ints.empty() ? toInt64(data[i]) : ints[i]; }
  /// Element `to` of this buffer set to element `from` of `src` (same kind of buffer).
  void copyElement(size_t to, const Buffer& src, size_t from) {
    data[to] = src.data[from];
    if (complex && src.complex) imag[to] = src.imag[from];
    if (!src.ints.empty()) {
      ints.resize(data.size());
      ints[to] = src.ints[from];
    }
  }
  /// Makes this a complex buffer whose imaginary parts are `fill`.
  void makeComplex(double fill = 0.0) {
    complex = true;
    imag.assign(data.size(), fill);
  }
};

/// Strides that read `in_shape` (row-major, same rank) stretched to `out_shape`: a size-1 dim
/// of the input repeats. Returns false when some dim is neither equal nor 1.
bool stretchStrides(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape,
                    std::vector<int64_t>& strides);

/// Runs a fusion's exprs in order on Buffers, each op's result rounded to its dtype by define().
class Runner : public ir::ExprVisitor {
 public:
  std::vector<Tensor> run(const ir::Fusion& fusion, std::span<const Argument> args);

 private:
  // --- Values in and out (reference_evaluator.cpp) ---
  static Buffer readTensor(const Tensor& t);
  Tensor toTensor(ir::Val* out);
  const Buffer& bufferOf(const ir::TensorView* tv, const ir::Expr* user);
  /// Stores an op's result after rounding it to the output dtype.
  void define(const ir::TensorView* tv, Buffer b);
  /// The logical sizes of `tv` (the output of `e`), each a UserError when negative.
  std::vector<int64_t> checkedSizes(const ir::Expr* e, const ir::TensorView* tv, const char* what);

  // --- Pointwise (reference_evaluator.cpp) ---
  /// Output shape of a pointwise op: the output's extents, checked against (and filled in from)
  /// the operand sizes, where a size-1 operand dim stretches.
  std::vector<int64_t> pointwiseShape(const ir::Expr* e, const ir::TensorView* out);

  /// Reads operand `v` (a tensor stretched to `shape`, or a scalar) element by element.
  struct Operand {
    const Buffer* buffer = nullptr;  // nullptr for a scalar
    double scalar = 0.0;
    int64_t int_scalar = 0;  // the scalar as an integer (exact for integer values)
    Complex complex_scalar;  // the scalar as a complex number
    DataType dtype = DataType::Float64;
    int64_t intAt(size_t i) const { return buffer != nullptr ? buffer->intAt(i) : int_scalar; }
  };
  Operand operand(ir::Val* v, const ir::Expr* e);
  /// Per operand of a pointwise op, the strides that read it stretched to `shape` (all 0 for a
  /// scalar).
  static std::vector<std::vector<int64_t>> operandStrides(const ir::Expr* e,
                                                          const std::vector<Operand>& ops,
                                                          const std::vector<int64_t>& shape);

  /// Runs fn(values) for every output element of a pointwise op and returns the results. With
  /// kComplex, the values and fn's result are complex numbers (ops on complex values).
  template <bool kComplex = false, typename Fn>
  Buffer pointwise(const ir::Expr* e, const ir::TensorView* out, Fn&& fn);
  /// pointwise() in exact integer math: fn(values) on the operands as integers (integer tensors
  /// and scalars exactly), its results kept in `ints`.
  template <typename Fn>
  Buffer pointwiseInt(const ir::Expr* e, const ir::TensorView* out, Fn&& fn);

  void handle(ir::UnaryOp* e) override;
  void handle(ir::BinaryOp* e) override;
  void handle(ir::TernaryOp* e) override;

  // --- Reductions, Welford and scans (reference_reductions.cpp) ---
  void handle(ir::ReductionOp* e) override;
  /// A reduction of integers, exact in int64 and wrapping as the kernels' accumulators do (the
  /// output's width applied by define()).
  void defineIntReduction(ir::ReductionOp* e, const Buffer& in, ReductionSpace& space);
  /// A sum or product of complex values (ir::verify admits no other complex reduction).
  void defineComplexReduction(ir::ReductionOp* e, const Buffer& in, ReductionSpace& space);
  void handle(ir::ScanOp* e) override;
  void handle(ir::WelfordOp* e) override;

  // --- Shape ops (reference_shape_ops.cpp) ---
  void handle(ir::BroadcastOp* e) override;
  void handle(ir::SqueezeOp* e) override;
  void handle(ir::ExpandOp* e) override;
  void handle(ir::ReshapeOp* e) override;
  void handle(ir::LoadStoreOp* e) override;

  /// For each logical dim of a slice or pad output (reductions skipped): the Resize's left width
  /// (0 for a dim that is its root ID) and the input dim's size.
  struct ResizedDims {
    std::vector<int64_t> left;
    std::vector<int64_t> in_size;
  };
  ResizedDims resizedDims(const ir::Expr* e, const ir::TensorView* out, const Buffer& in);
  void handle(ir::SliceOp* e) override;
  void handle(ir::PadOp* e) override;
  void handle(ir::CatOp* e) override;

  // --- Factories (reference_factories.cpp) ---
  void handle(ir::FullOp* e) override;
  void handle(ir::IotaOp* e) override;
  void handle(ir::RngOp* e) override;

  // --- Indexing and sorting (reference_indexing.cpp) ---
  DenseRef dense(const ir::TensorView* tv, const ir::Expr* user);
  void handle(ir::IndexSelectOp* e) override;
  void handle(ir::GatherOp* e) override;
  void handle(ir::ScatterOp* e) override;
  void handle(ir::ArgsortOp* e) override;
  void handle(ir::TopKOp* e) override;

  // --- Matmul and attention (reference_matmul.cpp) ---
  void handleMatmul(ir::Expr* e);
  void handleAttention(ir::Expr* e);
  void handle(ir::MatmulOp* e) override { handleMatmul(e); }
  void handle(ir::LinearOp* e) override { handleMatmul(e); }
  void handle(ir::SdpaFwdOp* e) override { handleAttention(e); }
  void handle(ir::SdpaBwdOp* e) override { handleAttention(e); }

  // --- Domain exprs and the rest (reference_evaluator.cpp) ---
  void handle(ir::Split* /*e*/) override {}  // schedules do not change semantics
  void handle(ir::Merge* /*e*/) override {}
  void handle(ir::Resize* /*e*/) override {}  // read by SliceOp, PadOp and CatOp
  void handleDefault(ir::Expr* e) override;

  ExpressionEvaluator ee_;
  std::unordered_map<const ir::Val*, Buffer> buffers_;
};

}  // namespace loom::eval::detail
