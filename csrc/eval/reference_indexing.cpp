// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's indexing (index_select, gather, scatter) and sorting (argsort, topk)
// ops, on the dense buffers of index_ops.h and sort_ops.h.
#include "eval/reference_runner.h"
#include "eval/sort_ops.h"
#include "loom/ir/fusion.h"

namespace loom::eval::detail {

using ir::TensorView;

DenseRef Runner::dense(const TensorView* tv, const ir::Expr* user) {
  const Buffer& b = bufferOf(tv, user);
  return {b.shape, b.data, tv->toString()};
}

void Runner::handle(ir::IndexSelectOp* e) {
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
  std::vector<double> data =
      indexSelect(dense(e->lookup(), e), dense(e->index(), e), e->dim(), shape, e->opName());
  define(e->out(), Buffer{std::move(shape), std::move(data)});
}

void Runner::handle(ir::GatherOp* e) {
  DenseRef index = dense(e->index(), e);
  std::vector<double> data = gather(dense(e->lookup(), e), index, e->dim(), e->opName());
  define(e->out(), Buffer{index.shape, std::move(data)});
}

void Runner::handle(ir::ScatterOp* e) {
  DenseRef self = dense(e->self(), e);
  std::vector<double> data = scatter(self, dense(e->index(), e), dense(e->src(), e), e->dim(),
                                     e->accumulate(), e->opName());
  define(e->out(), Buffer{self.shape, std::move(data)});
}

// Sorts compare the elements as doubles (exact for every dtype but i64 values beyond 2^53).
void Runner::handle(ir::ArgsortOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  const int64_t n = in.shape.at(size_t(e->dim()));
  SortedRows r = sortRows(in.shape, in.data, e->dim(), e->descending(), n);
  define(e->out(), Buffer{std::move(r.shape), std::move(r.indices)});
}

void Runner::handle(ir::TopKOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  const int64_t n = in.shape.at(size_t(e->dim()));
  const int64_t k = ee_.evaluateInt(e->k());
  LOOM_CHECK(k >= 0 && k <= n, "topk: k = ", k, " is outside [0, ", n, "], the size of dimension ",
             e->dim(), " of ", e->in()->toString());
  SortedRows r = sortRows(in.shape, in.data, e->dim(), e->largest(), k);
  define(e->values(), Buffer{r.shape, std::move(r.values)});
  define(e->indices(), Buffer{std::move(r.shape), std::move(r.indices)});
}

}  // namespace loom::eval::detail
