// SPDX-License-Identifier: Apache-2.0
// Indexing ops (indexing.h): IndexSelectOp, GatherOp and ScatterOp with torch's shape rules.
#include "loom/ops/indexing.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ops/arith.h"
#include "loom/ops/factory.h"
#include "loom/ops/reduction.h"
#include "loom/ops/scalar_arith.h"
#include "loom/ops/shape.h"
#include "loom/support/strings.h"
#include "ops/utils.h"

namespace loom::ops {

namespace {

using detail::dims;

void checkIndexDtype(const TensorView* index, std::string_view op) {
  LOOM_CHECK(index->dtype() == DataType::Int32 || index->dtype() == DataType::Int64, op,
             ": the index ", index->toString(), " is ", index->dtype(),
             "; an index tensor is i32 or i64");
}

// Along every dim but `dim`, `index`'s constant size may not exceed `data`'s (equal when `exact`,
// unless index is broadcast there). Symbolic sizes are checked when the fusion runs.
void checkIndexShape(const TensorView* data, const TensorView* index, int64_t dim, bool exact,
                     std::string_view op, std::string_view what) {
  const auto d = dims(data);
  const auto x = dims(index);
  LOOM_CHECK(d.size() == x.size(), op, ": the index ", index->toString(), " has ", x.size(),
             " dims and ", what, " ", data->toString(), " has ", d.size(),
             "; they need the same rank");
  for (size_t i = 0; i < d.size(); ++i) {
    if (int64_t(i) == dim) continue;
    auto xs = detail::constSize(x[i]);
    auto ds = detail::constSize(d[i]);
    if (!xs || !ds) continue;
    const bool equal = exact && !x[i]->isBroadcast() && !d[i]->isBroadcast();
    LOOM_CHECK(equal ? *xs == *ds : *xs <= *ds, op, ": the index ", index->toString(), " ",
               detail::shapeString(index), " has size ", *xs, " at dimension ", i, " but ", what,
               " ", data->toString(), " ", detail::shapeString(data), " has ", *ds, " (",
               equal ? "equal sizes" : "at most that", " needed off dimension ", dim, ")");
  }
}

TensorView* gatherImpl(TensorView* input, int64_t dim, TensorView* index, bool exact,
                       const char* op) {
  checkIndexDtype(index, op);
  const int64_t rank = int64_t(dims(input).size());
  LOOM_CHECK(rank > 0, op, ": ", input->toString(), " is 0-dim; there is no dimension to index");
  dim = detail::normalizeDim(input, dim, rank, op);
  checkIndexShape(input, index, dim, exact, op, "the input");
  // One tensor in both roles (an integer tensor gathered by itself): the index role reads a copy,
  // so the indexed read and the positional read are different tensors (kernels read an indexed
  // operand from global memory, and no other op of the kernel may read it).
  if (index == input) index = set(index);
  TensorView* out = detail::newTensor(detail::freshIds(dims(index)), input->dtype());
  ir::IrBuilder::create<ir::GatherOp>(out, input, index, dim, exact);
  return out;
}

TensorView* scatterImpl(TensorView* input, int64_t dim, TensorView* index, TensorView* src,
                        bool accumulate) {
  const char* op = accumulate ? "scatter_add" : "scatter";
  checkIndexDtype(index, op);
  const int64_t rank = int64_t(dims(input).size());
  LOOM_CHECK(rank > 0, op, ": ", input->toString(), " is 0-dim; there is no dimension to index");
  dim = detail::normalizeDim(input, dim, rank, op);
  LOOM_CHECK(src->dtype() == input->dtype(), op, ": the source ", src->toString(), " is ",
             src->dtype(), " but the input ", input->toString(), " is ", input->dtype(),
             " (cast one of them)");
  checkIndexShape(input, index, dim, false, op, "the input");
  const auto x = dims(index);
  const auto s = dims(src);
  LOOM_CHECK(s.size() == x.size(), op, ": the source ", src->toString(), " has ", s.size(),
             " dims and the index ", index->toString(), " has ", x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    auto xs = detail::constSize(x[i]);
    auto ss = detail::constSize(s[i]);
    LOOM_CHECK(!xs || !ss || *xs <= *ss, op, ": the index ", index->toString(), " has size ", *xs,
               " at dimension ", i, " but the source ", src->toString(), " only ", *ss);
  }
  // Scattered values differ along every dim, so an expanded input dim becomes a real one.
  std::vector<ir::IterDomain*> ids;
  for (ir::IterDomain* id : dims(input)) {
    ids.push_back(id->hasExpandedExtent() ? ir::IterDomain::create(id->logicalExtent())
                                          : detail::freshId(id));
  }
  // The same tensor as the input and as the index or source (x.scatter_add(1, i, x)): the input
  // role reads a copy, as in gatherImpl.
  if (input == src || input == index) input = set(input);
  TensorView* out = detail::newTensor(std::move(ids), input->dtype());
  ir::IrBuilder::create<ir::ScatterOp>(out, input, index, src, dim, accumulate);
  return out;
}

// IndexSelectOp with an index of any rank: lookup's dims around `dim`, index's in its place.
TensorView* selectImpl(TensorView* lookup, int64_t dim, TensorView* index, const char* op) {
  checkIndexDtype(index, op);
  const auto l = dims(lookup);
  LOOM_CHECK(!l.empty(), op, ": ", lookup->toString(), " is 0-dim; there is no dimension to index");
  dim = detail::normalizeDim(lookup, dim, int64_t(l.size()), op);
  if (index == lookup) index = set(index);  // one tensor in both roles: see gatherImpl
  std::vector<ir::IterDomain*> ids;
  for (int64_t d = 0; d < dim; ++d) ids.push_back(detail::freshId(l[size_t(d)]));
  for (ir::IterDomain* id : dims(index)) ids.push_back(detail::freshId(id));
  for (size_t d = size_t(dim) + 1; d < l.size(); ++d) ids.push_back(detail::freshId(l[d]));
  // The index lines up with the output: broadcast along the lookup's other dims, so a computed
  // index is inlined like any operand missing dims.
  std::vector<bool> flags(ids.size(), true);
  for (size_t k = 0; k < dims(index).size(); ++k) flags[size_t(dim) + k] = false;
  TensorView* wide =
      std::find(flags.begin(), flags.end(), true) == flags.end() ? index : broadcast(index, flags);
  TensorView* out = detail::newTensor(std::move(ids), lookup->dtype());
  ir::IrBuilder::create<ir::IndexSelectOp>(out, lookup, wide, dim);
  return out;
}

}  // namespace

TensorView* indexSelect(TensorView* input, int64_t dim, TensorView* index) {
  LOOM_CHECK(dims(index).size() <= 1, "index_select: the index ", index->toString(), " has ",
             dims(index).size(), " dims; index_select takes a 1-D (or 0-D) index");
  // torch (and nvFuser) read a 0-D index as one of length 1: the dim stays, with size 1.
  if (dims(index).empty()) index = broadcast(index, {true});
  return selectImpl(input, dim, index, "index_select");
}

TensorView* select(TensorView* input, int64_t dim, Size index) {
  const auto l = dims(input);
  LOOM_CHECK(!l.empty(), "select: ", input->toString(),
             " is 0-dim; there is no dimension to select from");
  dim = detail::normalizeDim(input, dim, int64_t(l.size()), "select");
  const std::optional<int64_t> n = detail::constSize(l[size_t(dim)]);
  const std::optional<int64_t> i = index.constant();
  if (i.has_value() && n.has_value()) {
    LOOM_CHECK(*i >= -*n && *i < *n, "select: index ", *i, " is out of range for dimension ", dim,
               " of ", input->toString(), " ", detail::shapeString(input), " (size ", *n,
               "); it must lie in [", -*n, ", ", *n, ")");
    // A constant position: a slice and a squeeze, copies that fuse with their neighbours.
    const int64_t at = *i < 0 ? *i + *n : *i;
    return squeeze(slice(input, dim, at, at + 1), {dim});
  }
  // A position known at run time: a 0-D index, negative values wrapped as torch does; anything
  // still outside [0, size) fails the indexed read's range check when the fusion runs.
  ir::Scalar* raw = index.toScalar();
  ir::Scalar* size = l[size_t(dim)]->logicalExtent();
  ir::Scalar* wraps = scalarBinary(
      ir::BinaryOpType::LogicalAnd, scalarBinary(ir::BinaryOpType::Lt, raw, int64_t(0)),
      scalarBinary(ir::BinaryOpType::Ge, raw, scalarUnary(ir::UnaryOpType::Neg, size)));
  ir::Scalar* at =
      scalarBinary(ir::BinaryOpType::Add, raw,
                   scalarBinary(ir::BinaryOpType::Mul, size, scalarCast(wraps, DataType::Int64)));
  return selectImpl(input, dim, full({}, at, DataType::Int64), "select");
}

TensorView* gather(TensorView* input, int64_t dim, TensorView* index) {
  return gatherImpl(input, dim, index, false, "gather");
}

TensorView* takeAlongAxis(TensorView* input, TensorView* index, int64_t dim) {
  return gatherImpl(input, dim, index, true, "take_along_axis");
}

TensorView* scatter(TensorView* input, int64_t dim, TensorView* index, TensorView* src) {
  return scatterImpl(input, dim, index, src, false);
}

TensorView* scatter(TensorView* input, int64_t dim, TensorView* index, Operand value) {
  if (value.isTensor()) return scatter(input, dim, index, value.tensor());
  // torch.scatter(input, dim, index, value): every indexed position gets the number, which is
  // a source of the index's shape holding it in the input's dtype.
  std::vector<ir::Scalar*> shape;
  for (ir::IterDomain* id : dims(index)) shape.push_back(id->logicalExtent());
  return scatterImpl(input, dim, index, full(SizeList(shape), value, input->dtype()), false);
}

TensorView* scatterAdd(TensorView* input, int64_t dim, TensorView* index, TensorView* src) {
  return scatterImpl(input, dim, index, src, true);
}

TensorView* indexPutAccumulate(TensorView* acc, TensorView* index, TensorView* value) {
  constexpr const char* op = "index_put_accumulate";
  checkIndexDtype(index, op);
  std::vector<ir::IterDomain*> x = dims(index);
  // nvFuser also takes the index as a column [m, 1].
  if (x.size() == 2 && (x[1]->isBroadcast() || detail::constSize(x[1]) == 1)) {
    index = squeeze(index, {1});
    x = dims(index);
  }
  LOOM_CHECK(x.size() == 1, op, ": the index ", index->toString(), " ",
             detail::shapeString(index), " must be 1-D [m] (or [m, 1]): one row of the accumulator ",
             acc->toString(), " per row of the value ", value->toString());
  const auto a = dims(acc);
  const auto v = dims(value);
  LOOM_CHECK(!a.empty(), op, ": the accumulator ", acc->toString(),
             " is 0-dim; it needs a dim to index");
  LOOM_CHECK(v.size() == a.size(), op, ": the value ", value->toString(), " ",
             detail::shapeString(value), " has ", v.size(), " dims and the accumulator ",
             acc->toString(), " ", detail::shapeString(acc), " has ", a.size(),
             "; the value is [m, rest...] for an accumulator [n, rest...]");
  LOOM_CHECK(value->dtype() == acc->dtype(), op, ": the value ", value->toString(), " is ",
             value->dtype(), " but the accumulator ", acc->toString(), " is ", acc->dtype(),
             " (cast one of them)");
  auto m = detail::constSize(x[0]);
  auto vm = detail::constSize(v[0]);
  LOOM_CHECK(!m || !vm || *m == *vm, op, ": the index ", index->toString(), " has ", *m,
             " entries but the value ", value->toString(), " has ", *vm, " rows");
  for (size_t d = 1; d < a.size(); ++d) {
    auto as = detail::constSize(a[d]);
    auto vs = detail::constSize(v[d]);
    LOOM_CHECK(!as || !vs || *as == *vs, op, ": the value ", value->toString(), " ",
               detail::shapeString(value), " has size ", *vs, " at dimension ", d,
               " but the accumulator ", acc->toString(), " ", detail::shapeString(acc), " has ",
               *as, " (equal sizes needed off dimension 0)");
  }
  // Row i of value goes to row index[i]: scatter_add along dim 0 with the index repeated along
  // the other dims.
  if (a.size() > 1) {
    std::vector<bool> flags(a.size(), true);
    flags[0] = false;
    std::vector<ir::Scalar*> sizes;
    for (ir::IterDomain* id : v) sizes.push_back(id->logicalExtent());
    index = expand(broadcast(index, flags), SizeList(sizes));
  }
  return scatterImpl(acc, 0, index, value, true);
}

namespace {

// The norm_type-norm of x over its last dim (kept as a size-1 dim), torch.norm's definition:
// p = inf is the largest magnitude, p = 0 the count of nonzeros, else (sum |x|^p)^(1/p). p may be
// a Scalar known only at run time, so the special cases are selected, not branched on.
TensorView* lastDimNorm(TensorView* x, Operand p) {
  const std::vector<int64_t> last{x->rank() - 1};
  TensorView* a = abs(x);
  TensorView* general =
      pow(sum(pow(a, p), last, true), scalarBinary(ir::BinaryOpType::Div, 1.0, p));
  TensorView* count = sum(cast(ne(a, 0.0), x->dtype()), last, true);
  TensorView* largest = max(a, last, true);
  TensorView* finite = where(scalarBinary(ir::BinaryOpType::Eq, p, 0.0), count, general);
  return where(scalarUnary(ir::UnaryOpType::IsInf, p), largest, finite);
}

}  // namespace

TensorView* embedding(TensorView* input, TensorView* weight, std::optional<int64_t> padding_idx,
                      std::optional<Operand> max_norm, Operand norm_type,
                      bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  LOOM_CHECK(dims(weight).size() == 2, "embedding: the weight ", weight->toString(), " has ",
             dims(weight).size(), " dims; it must be 2-D [num_embeddings, embedding_dim]");
  if (padding_idx.has_value()) {
    auto n = detail::constSize(dims(weight)[0]);
    LOOM_CHECK(!n || (*padding_idx >= -*n && *padding_idx < *n), "embedding: padding_idx ",
               *padding_idx, " is out of range for ", weight->toString(), " with ", *n, " rows");
  }
  TensorView* rows = selectImpl(weight, 0, input, "embedding");
  if (!max_norm.has_value()) return rows;
  LOOM_CHECK(isFloatingType(weight->dtype()),
             "embedding: max_norm renormalizes rows, so the weight ", weight->toString(),
             " must be floating, got ", weight->dtype());
  LOOM_CHECK(!max_norm->isTensor() && !norm_type.isTensor(),
             "embedding: max_norm and norm_type are numbers or Scalars, not tensors");
  // torch renormalizes each looked-up row in place before the lookup; scaling the picked copies
  // gives the same values.
  DataType ct = weight->dtype() == DataType::Float64 ? DataType::Float64 : DataType::Float32;
  TensorView* r = cast(rows, ct);
  TensorView* norm = lastDimNorm(r, norm_type);
  TensorView* scale = where(gt(norm, *max_norm), div(*max_norm, add(norm, 1e-7)), 1.0);
  return cast(mul(r, scale), weight->dtype());
}

}  // namespace loom::ops
