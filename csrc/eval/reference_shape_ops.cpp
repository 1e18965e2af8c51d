// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's shape ops: broadcast, squeeze, expand, reshape, permute (LoadStoreOp),
// slice, pad and cat. Each copies elements of its input (exact for every dtype).
#include <algorithm>

#include "eval/reference_runner.h"
#include "loom/ir/fusion.h"
#include "loom/support/strings.h"

namespace loom::eval::detail {

using ir::TensorView;

namespace {

/// A copy of `in` read through `strides` (and a start offset) into `shape`.
Buffer readStrided(const Buffer& in, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides) {
  Buffer out{shape, std::vector<double>(size_t(numelOf(shape)))};
  if (in.complex) out.makeComplex();
  forEachIndex(shape, {strides}, [&](int64_t lin, const std::vector<int64_t>& off) {
    out.copyElement(size_t(lin), in, size_t(off[0]));
  });
  return out;
}

}  // namespace

void Runner::handle(ir::BroadcastOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  const auto& flags = e->isBroadcastDim();
  auto out_ids = ir::TensorDomain::noReductions(e->out()->logical());
  LOOM_CHECK(flags.size() == out_ids.size(), e->toString(), ": ", flags.size(),
             " broadcast flags for ", out_ids.size(), " output dims");
  std::vector<int64_t> aligned, shape;
  size_t k = 0;
  for (size_t d = 0; d < flags.size(); ++d) {
    if (flags[d]) {
      aligned.push_back(1);
      auto known = ee_.evaluate(out_ids[d]->logicalExtent());
      shape.push_back(known ? scalarToInt(*known) : 1);
    } else {
      LOOM_CHECK(k < in.shape.size(), e->toString(), ": more kept dims than input dims");
      aligned.push_back(in.shape[k]);
      shape.push_back(in.shape[k++]);
    }
  }
  LOOM_CHECK(k == in.shape.size(), e->toString(), ": ", k, " kept dims for an input of rank ",
             in.shape.size());
  std::vector<int64_t> strides;
  LOOM_ASSERT(stretchStrides(aligned, shape, strides), "broadcast shapes");
  define(e->out(), readStrided(in, shape, strides));
}

void Runner::handle(ir::SqueezeOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  const auto& flags = e->isSqueezedDim();
  auto in_ids = ir::TensorDomain::noReductions(e->in()->logical());
  LOOM_CHECK(flags.size() == in.shape.size(), e->toString(), ": ", flags.size(),
             " squeeze flags for an input of rank ", in.shape.size());
  auto in_strides = rowMajorStrides(in.shape);
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < flags.size(); ++d) {
    if (!flags[d]) {
      shape.push_back(in.shape[d]);
      strides.push_back(in_strides[d]);
      continue;
    }
    // An expanded broadcast holds one value repeated, so squeezing reads index 0.
    bool expanded = d < in_ids.size() && in_ids[d]->isBroadcast();
    LOOM_CHECK(in.shape[d] == 1 || expanded, e->toString(), ": cannot squeeze dimension ", d,
               " of ", e->in()->toString(), " with size ", in.shape[d]);
  }
  define(e->out(), readStrided(in, shape, strides));
}

void Runner::handle(ir::ExpandOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  std::vector<int64_t> shape = ee_.logicalSizes(e->out());
  std::vector<int64_t> strides;
  LOOM_CHECK(stretchStrides(in.shape, shape, strides), e->toString(), ": cannot expand [",
             join(in.shape), "] to [", join(shape), "]");
  define(e->out(), readStrided(in, shape, strides));
}

void Runner::handle(ir::ReshapeOp* e) {
  // The dense row-major buffer reinterpreted with the new shape is the row-major reshape (a
  // dynamic reshape runs the same way, with the sizes bound now).
  Buffer b = bufferOf(e->in(), e);
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "requested size");
  LOOM_CHECK(numelOf(shape) == numelOf(b.shape), "reshape: cannot reshape ", e->in()->toString(),
             " of shape [", join(b.shape), "] (", numelOf(b.shape), " elements) to shape [",
             join(shape), "] (", numelOf(shape), " elements) in ", e->toString());
  b.shape = std::move(shape);
  define(e->out(), std::move(b));
}

void Runner::handle(ir::LoadStoreOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  const TensorView* out = e->out();
  if (!out->domain()->hasRoot()) {
    LOOM_CHECK(ir::TensorDomain::noReductions(out->logical()).size() == in.shape.size(),
               e->toString(), ": rank changes without a root domain");
    define(out, in);
    return;
  }
  // Output logical dim i is root dim perm[i]; root dims follow the input's dims.
  const auto& root = out->root();
  auto logical = ir::TensorDomain::noReductions(out->logical());
  LOOM_CHECK(root.size() == in.shape.size() && logical.size() == root.size(), e->toString(),
             ": the output's root does not mirror the input");
  auto in_strides = rowMajorStrides(in.shape);
  std::vector<int64_t> shape, strides;
  for (const ir::IterDomain* id : logical) {
    auto it = std::find(root.begin(), root.end(), id);
    LOOM_CHECK(it != root.end(), e->toString(), ": logical ", id->toString(), " of ",
               out->toString(), " is not a root ID; only permutations are supported");
    size_t p = size_t(it - root.begin());
    shape.push_back(in.shape[p]);
    strides.push_back(in_strides[p]);
  }
  define(out, readStrided(in, shape, strides));
}

Runner::ResizedDims Runner::resizedDims(const ir::Expr* e, const TensorView* out,
                                        const Buffer& in) {
  const auto& root = out->root();
  auto logical = ir::TensorDomain::noReductions(out->logical());
  LOOM_CHECK(root.size() == in.shape.size() && logical.size() == root.size(), e->toString(),
             ": the output's root does not mirror the input [", join(in.shape), "]");
  ResizedDims r;
  for (size_t d = 0; d < logical.size(); ++d) {
    const ir::IterDomain* id = logical[d];
    r.in_size.push_back(in.shape[d]);
    if (id == root[d]) {
      r.left.push_back(0);
      continue;
    }
    auto* resize = id->definition() != nullptr ? id->definition()->dynCast<ir::Resize>() : nullptr;
    LOOM_CHECK(resize != nullptr && resize->in() == root[d], e->toString(), ": logical ",
               id->toString(), " of ", out->toString(), " is neither root ID ", root[d]->toString(),
               " nor a Resize of it");
    r.left.push_back(ee_.evaluateInt(resize->left()));
  }
  return r;
}

void Runner::handle(ir::SliceOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
  ResizedDims r = resizedDims(e, e->out(), in);
  auto strides = rowMajorStrides(in.shape);
  int64_t base = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t start = -r.left[d];
    LOOM_CHECK(start >= 0 && start + shape[d] <= r.in_size[d], "slice: dimension ", d, " of ",
               e->out()->toString(), " reads [", start, ", ", start + shape[d], ") of ",
               e->in()->toString(), ", whose size there is ", r.in_size[d], " (", e->toString(),
               ")");
    base += start * strides[d];
  }
  Buffer out{shape, std::vector<double>(size_t(numelOf(shape)))};
  if (in.complex) out.makeComplex();
  forEachIndex(shape, {strides}, [&](int64_t lin, const std::vector<int64_t>& off) {
    out.copyElement(size_t(lin), in, size_t(base + off[0]));
  });
  define(e->out(), std::move(out));
}

void Runner::handle(ir::PadOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
  ResizedDims r = resizedDims(e, e->out(), in);
  const Operand value_op = operand(e->value(), e);
  const double value = value_op.scalar;
  auto in_strides = rowMajorStrides(in.shape);
  Buffer out{shape, std::vector<double>(size_t(numelOf(shape)), value)};
  if (in.complex) out.makeComplex(value_op.complex_scalar.imag());
  if (!in.ints.empty()) out.ints.assign(out.data.size(), value_op.int_scalar);
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t lin = 0; lin < out.data.size(); ++lin) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size() && inside; ++d) {
      int64_t i = idx[d] - r.left[d];
      inside = i >= 0 && i < r.in_size[d];
      src += i * in_strides[d];
    }
    if (inside) out.copyElement(lin, in, size_t(src));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  define(e->out(), std::move(out));
}

void Runner::handle(ir::CatOp* e) {
  const TensorView* out = e->out();
  std::vector<int64_t> shape = checkedSizes(e, out, "size");
  const auto dim = size_t(e->dim());
  LOOM_CHECK(dim < shape.size(), e->toString(), ": dim ", dim, " is out of range for ",
             out->toString(), " of rank ", shape.size());
  // Input k covers [begin[k], begin[k] + size[k]) along dim.
  std::vector<int64_t> begin, size;
  int64_t next = 0;
  for (size_t k = 0; k < e->numInputs(); ++k) {
    const ir::Resize* resize = e->inputResize(k);
    LOOM_CHECK(resize != nullptr, e->toString(), ": input ", e->in(k)->toString(),
               " is not padded along dimension ", dim,
               " (a CatOp reads each input's range "
               "from the Resize of its PadOp)");
    const auto* pad = e->in(k)->definition();
    const TensorView* orig =
        pad != nullptr && pad->isA<ir::PadOp>() ? pad->as<ir::PadOp>()->in() : e->in(k);
    const Buffer& b = bufferOf(e->in(k), e);
    LOOM_CHECK(b.shape.size() == shape.size(), e->toString(), ": input ", e->in(k)->toString(),
               " has rank ", b.shape.size(), " but ", out->toString(), " has rank ", shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      LOOM_CHECK(b.shape[d] == shape[d], "cat: input ", k, " (", orig->toString(), ") has size ",
                 d == dim ? "(padded) " : "", b.shape[d], " at dimension ", d, " but ",
                 out->toString(), " has size ", shape[d],
                 d == dim ? "" : " there; only the cat dimension may differ", " (", e->toString(),
                 ")");
    }
    begin.push_back(ee_.evaluateInt(resize->left()));
    size.push_back(ee_.extentOf(resize->in(), e->in(k)));
    LOOM_CHECK(begin.back() == next, e->toString(), ": input ", k, " starts at ", begin.back(),
               " along dimension ", dim, " but the inputs before it end at ", next);
    next += size.back();
  }
  LOOM_CHECK(next == shape[dim], e->toString(), ": the inputs cover ", next,
             " elements along dimension ", dim, " but ", out->toString(), " has ", shape[dim]);
  // which[i]: the input that holds output index i along dim.
  std::vector<size_t> which(static_cast<size_t>(shape[dim]), 0);
  for (size_t k = 0; k < begin.size(); ++k) {
    for (int64_t i = begin[k]; i < begin[k] + size[k]; ++i) which[size_t(i)] = k;
  }
  std::vector<const Buffer*> ins;
  for (size_t k = 0; k < e->numInputs(); ++k) ins.push_back(&bufferOf(e->in(k), e));
  Buffer result{shape, std::vector<double>(size_t(numelOf(shape)))};
  if (isComplexType(out->dtype())) result.makeComplex();
  const int64_t dim_stride = rowMajorStrides(shape)[dim];
  for (size_t lin = 0; lin < result.data.size(); ++lin) {
    auto i = size_t((int64_t(lin) / dim_stride) % shape[dim]);
    result.copyElement(lin, *ins[which[i]], lin);
  }
  define(out, std::move(result));
}

}  // namespace loom::eval::detail
