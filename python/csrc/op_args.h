// SPDX-License-Identifier: Apache-2.0
// What the loom._C.ops binding files share: the scope an op builds in and the conversion of its
// Python arguments (tensors, Scalars, numbers, size lists), each checked against the op's fusion
// with errors naming the op and the argument.
#pragma once

#include "bindings.h"
#include "loom/ir/fusion.h"
#include "loom/ops/operand.h"
#include "loom/ops/size.h"

namespace loom::python {

/// The fusion an op builds in: not executed yet, and made current while the op runs.
class OpScope {
 public:
  OpScope(PyFusion& f, const char* op);

 private:
  ir::FusionGuard guard_;
};

/// A TensorView, a Scalar (both of `f`) or a Python number.
ops::Operand operand(const PyFusion& f, nb::handle h, const char* op, const char* arg);
/// A TensorView of `f`.
ir::TensorView* tensor(const PyFusion& f, nb::handle h, const char* op, const char* arg);
/// A TensorView of `f`, or nullptr for None.
ir::TensorView* tensorOrNone(const PyFusion& f, nb::handle h, const char* op, const char* arg);
/// A Python list of ints and integer Scalars.
ops::SizeList sizeList(const PyFusion& f, nb::handle h, const char* op, const char* arg);
/// An int or an integer Scalar.
ops::Size size(const PyFusion& f, nb::handle h, const char* op, const char* arg);
/// A result for Python that keeps `fusion` alive; None for nullptr.
nb::object refOrNone(ir::TensorView* tv, nb::handle fusion);

/// The call policy of an op returning one TensorView: a reference kept alive by the fusion.
constexpr auto kKeep = nb::keep_alive<0, 1>();

// The themes of loom._C.ops, one file each (ops.cpp makes the module and calls them).
void bindElementwiseOps(nb::module_& m);  // ops_elementwise.cpp: the op lists, scalar forms
void bindReductionOps(nb::module_& m);    // ops_reduction.cpp: reductions, scans, Welford
void bindShapeOps(nb::module_& m);        // ops_shape.cpp: broadcast, reshape, slice, pad, cat
void bindIndexingOps(nb::module_& m);     // ops_indexing.cpp: index_select, gather, scatter
void bindFactoryOps(nb::module_& m);      // ops_factory.cpp: inputs, full, iota, arange
void bindRandomOps(nb::module_& m);       // ops_random.cpp: Philox samples, dropout
void bindMatmulOps(nb::module_& m);       // ops_matmul.cpp: matmul, linear
void bindCompositeOps(nb::module_& m);    // ops_composite.cpp: softmax, norms, backward, loss
void bindSortAndLayoutOps(
    nb::module_& m);  // ops_sort.cpp: argsort, topk, select, tril, segment_set

}  // namespace loom::python
