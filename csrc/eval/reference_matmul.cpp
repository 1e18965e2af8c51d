// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's matmul, linear and attention (attention runs its composite fusion).
#include <memory>

#include "eval/reference_runner.h"
#include "loom/ir/fusion.h"
#include "loom/ir/matmul_geometry.h"
#include "loom/ops/attention.h"

namespace loom::eval::detail {

using ir::TensorView;

// Matmul and linear: each output element is its dot product over k, in double.
void Runner::handleMatmul(ir::Expr* e) {
  std::vector<std::vector<int64_t>> sizes, strides;
  std::vector<const Buffer*> bufs;
  for (ir::Val* in : e->inputs()) {
    bufs.push_back(&bufferOf(in->as<TensorView>(), e));
    sizes.push_back(bufs.back()->shape);
    strides.push_back(rowMajorStrides(bufs.back()->shape));
  }
  const ir::MatmulGeometry g = ir::matmulGeometry(e, sizes, strides);
  Buffer b{g.outSizes, std::vector<double>(size_t(numelOf(g.outSizes)))};
  const ir::MatrixStrides c = g.denseOut();
  std::vector<int64_t> batch_shape = g.batch;
  forEachIndex(batch_shape, {g.a.batch, g.b.batch, c.batch},
               [&](int64_t, const std::vector<int64_t>& off) {
                 for (int64_t i = 0; i < g.m; ++i) {
                   for (int64_t j = 0; j < g.n; ++j) {
                     double sum = g.hasBias ? bufs[2]->data[size_t(j * g.biasStride)] : 0.0;
                     for (int64_t p = 0; p < g.k; ++p) {
                       sum += bufs[0]->data[size_t(off[0] + i * g.a.row + p * g.a.col)] *
                              bufs[1]->data[size_t(off[1] + p * g.b.row + j * g.b.col)];
                     }
                     b.data[size_t(off[2] + i * c.row + j * c.col)] = sum;
                   }
                 }
               });
  define(e->output(0)->as<TensorView>(), std::move(b));
}

// Attention is its composite (ops::sdpfaCompositeFusion): the node's tensors (already rounded
// to their dtype) and Scalars run through that fusion here, so the node and the composite
// cannot drift.
void Runner::handleAttention(ir::Expr* e) {
  const size_t n = ir::attentionTensorInputs(e);
  std::vector<Argument> args;
  for (size_t i = 0; i < n; ++i) args.emplace_back(toTensor(e->input(i)));
  args.emplace_back(ee_.evaluateDouble(e->input(n)));
  args.emplace_back(ee_.evaluateInt(e->input(n + 1)) != 0);
  args.emplace_back(ee_.evaluateDouble(e->input(n + 2)));
  args.emplace_back(ee_.evaluateInt(e->input(n + 3)));
  args.emplace_back(ee_.evaluateInt(e->input(n + 4)));
  const double p = std::get<double>(args[n]);
  LOOM_CHECK(p >= 0.0 && p < 1.0, e->toString(), ": dropout_p must be in [0, 1), got ", p);
  const auto* q = e->input(e->isA<ir::SdpaFwdOp>() ? 0 : 1)->as<TensorView>();
  std::unique_ptr<ir::Fusion> composite = ops::sdpfaCompositeFusion(
      e->isA<ir::SdpaBwdOp>(), q->dtype(), int64_t(bufferOf(q, e).shape.size()));
  std::vector<Tensor> outs = Runner().run(*composite, args);
  for (size_t i = 0; i < outs.size(); ++i) {
    define(e->output(i)->as<TensorView>(), readTensor(outs[i]));
  }
}

}  // namespace loom::eval::detail
