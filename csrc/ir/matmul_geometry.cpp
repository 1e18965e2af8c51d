// SPDX-License-Identifier: Apache-2.0
// The run-time geometry of matmul and linear (see matmul_geometry.h).
#include "loom/ir/matmul_geometry.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::ir {
namespace {

std::string shapeOf(const Val* tv, const std::vector<int64_t>& sizes) {
  return tv->toString() + " [" + join(sizes) + "]";
}

// One operand with its batch dims (before the last two) aligned to the output's from the right.
struct Operand {
  const Val* tv;
  std::vector<int64_t> sizes, strides;  // of the batch dims only
};

// The broadcast batch sizes of a and b, with each operand's stride per output batch dim.
void broadcastBatch(const Expr* e, const Operand& a, const Operand& b, MatmulGeometry& g) {
  const size_t nb = std::max(a.sizes.size(), b.sizes.size());
  g.batch.assign(nb, 1);
  g.a.batch.assign(nb, 0);
  g.b.batch.assign(nb, 0);
  for (size_t d = 0; d < nb; ++d) {
    int64_t size = 1;
    for (const Operand* op : {&a, &b}) {
      if (d + op->sizes.size() < nb) continue;  // the operand has no such dim: it repeats
      const int64_t s = op->sizes[d + op->sizes.size() - nb];
      if (s == 1 || s == size) continue;
      LOOM_CHECK(size == 1, e->opName(), ": the batch dims of ", a.tv->toString(), " and ",
                 b.tv->toString(), " do not broadcast: output batch dim ", d, " is ", size,
                 " in one and ", s, " in the other (equal sizes or 1 expected)");
      size = s;
    }
    g.batch[d] = size;
    for (auto [op, out] : {std::pair{&a, &g.a}, std::pair{&b, &g.b}}) {
      if (d + op->sizes.size() < nb) continue;
      const size_t i = d + op->sizes.size() - nb;
      out->batch[d] = op->sizes[i] == 1 ? 0 : op->strides[i];
    }
  }
}

Operand batchPart(const Val* tv, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides) {
  Operand op{tv, {}, {}};
  if (sizes.size() > 2) {
    op.sizes.assign(sizes.begin(), sizes.end() - 2);
    op.strides.assign(strides.begin(), strides.end() - 2);
  }
  return op;
}

}  // namespace

int64_t MatmulGeometry::batchCount() const {
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  return count;
}

MatrixStrides MatmulGeometry::denseOut() const {
  MatrixStrides c;
  c.col = 1;
  c.row = n;
  c.batch.assign(batch.size(), 0);
  int64_t stride = m * n;
  for (size_t d = batch.size(); d-- > 0;) {
    c.batch[d] = stride;
    stride *= batch[d];
  }
  return c;
}

MatmulGeometry matmulGeometry(const Expr* e, std::span<const std::vector<int64_t>> sizes,
                              std::span<const std::vector<int64_t>> strides) {
  LOOM_ASSERT(sizes.size() == e->inputs().size() && strides.size() == sizes.size(),
              "matmulGeometry of ", e->toString(), ": one size and stride list per operand");
  MatmulGeometry g;
  const bool linear = e->isA<LinearOp>();
  const Val* a_tv = e->input(0);
  const Val* b_tv = e->input(1);
  const std::vector<int64_t>& as = sizes[0];
  const std::vector<int64_t>& at = strides[0];
  const std::vector<int64_t>& bs = sizes[1];
  const std::vector<int64_t>& bt = strides[1];
  LOOM_CHECK(!as.empty() && !bs.empty() && (!linear || bs.size() <= 2), e->opName(),
             ": operands of rank ", as.size(), " and ", bs.size(), " (", shapeOf(a_tv, as), ", ",
             shapeOf(b_tv, bs), ") do not multiply");
  // a: [batch..., m, k] or [k].
  const bool a_vector = as.size() == 1;
  g.k = as.back();
  g.a.col = at.back();
  if (!a_vector) {
    g.m = as[as.size() - 2];
    g.a.row = at[at.size() - 2];
  }
  // b: [batch..., k, n] or [k]; linear's weight is [n, k] or [k], read transposed.
  const bool b_vector = bs.size() == 1;
  int64_t b_k = bs.back();
  if (linear) {
    g.b.row = bt.back();
    if (!b_vector) {
      g.n = bs[0];
      g.b.col = bt[0];
    }
  } else if (b_vector) {
    g.b.row = bt[0];
  } else {
    b_k = bs[bs.size() - 2];
    g.n = bs.back();
    g.b.row = bt[bt.size() - 2];
    g.b.col = bt.back();
  }
  LOOM_CHECK(b_k == g.k, e->opName(), ": the contracted sizes differ: ", shapeOf(a_tv, as), " has ",
             g.k, " in its last dim, ", shapeOf(b_tv, bs), " has ", b_k,
             linear ? " in its last dim" : (b_vector ? " elements" : " in its second-to-last dim"),
             linear ? " (linear computes x @ w^T: w is [out_features, in_features])" : "");
  const Operand a_batch = batchPart(a_tv, as, at);
  const Operand b_batch = linear ? Operand{b_tv, {}, {}} : batchPart(b_tv, bs, bt);
  broadcastBatch(e, a_batch, b_batch, g);
  g.outSizes = g.batch;
  if (!a_vector) g.outSizes.push_back(g.m);
  if (!b_vector) g.outSizes.push_back(g.n);
  if (linear && sizes.size() == 3) {
    const std::vector<int64_t>& bias = sizes[2];
    g.hasBias = true;
    if (bias.size() == 1 && bias[0] != 1) {
      LOOM_CHECK(bias[0] == g.n && !b_vector, "linear: the bias ", shapeOf(e->input(2), bias),
                 " must have one element per output feature (", g.n, ", the rows of ",
                 shapeOf(b_tv, bs), ")");
      g.biasStride = strides[2][0];
    }
  }
  return g;
}

}  // namespace loom::ir
