// SPDX-License-Identifier: Apache-2.0
// sdpfa_fwd / sdpfa_bwd as composites of matmul, reductions, pointwise ops and RngOp.
#include "loom/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ops/arith.h"
#include "loom/ops/factory.h"
#include "loom/ops/matmul.h"
#include "loom/ops/random.h"
#include "loom/ops/reduction.h"
#include "loom/ops/scalar_arith.h"
#include "loom/ops/shape.h"
#include "loom/ops/tensor_builder.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string described(const TensorView* tv) {
  return tv->toString() + " " + detail::shapeString(tv);
}

struct Named {
  const char* name;
  TensorView* tv;
};

// query, key and value (and the backward's grad_output and output): one dtype among f32, bf16
// and f16 (the matmul segment multiplies those), one rank: [N, H, *, *] or nvFuser's
// [D, N, H, *, *].
void checkOperands(std::string_view op, const std::vector<Named>& operands) {
  const Named& first = operands.front();
  for (const Named& o : operands) {
    LOOM_CHECK(o.tv != nullptr, op, ": ", o.name, " is null");
    const DataType d = o.tv->dtype();
    LOOM_CHECK(d == DataType::Float32 || d == DataType::BFloat16 || d == DataType::Float16, op,
               ": ", o.name, " ", o.tv->toString(), " is ", d,
               "; attention takes f32, bf16 or f16 tensors (cast it first)");
    LOOM_CHECK(d == first.tv->dtype(), op, ": ", o.name, " ", o.tv->toString(), " is ", d, " but ",
               first.name, " ", first.tv->toString(), " is ", first.tv->dtype(),
               "; they need one dtype");
    const int64_t r = o.tv->rank();
    LOOM_CHECK(r == 4 || r == 5, op, ": ", o.name, " ", described(o.tv),
               " must have rank 4 ([N, H, seq, dim]) or 5 (with nvFuser's leading device dim)");
    LOOM_CHECK(r == first.tv->rank(), op, ": ", o.name, " ", described(o.tv), " has rank ", r,
               " but ", first.name, " ", described(first.tv), " has rank ", first.tv->rank());
  }
}

// Dim `da` of a and dim `db` of b must have one size (`what` names it: "N", "E", ...) when both
// are constants; symbolic sizes are checked when the fusion runs (the matmuls' and the pointwise
// ops' shape checks).
void checkSameSize(std::string_view op, const Named& a, int64_t da, const Named& b, int64_t db,
                   std::string_view what) {
  const auto ad = detail::dims(a.tv);
  const auto bd = detail::dims(b.tv);
  auto x = detail::constSize(ad[size_t(da < 0 ? da + a.tv->rank() : da)]);
  auto y = detail::constSize(bd[size_t(db < 0 ? db + b.tv->rank() : db)]);
  LOOM_CHECK(!x || !y || *x == *y, op, ": ", what, " differs: ", a.name, " ", described(a.tv),
             " has ", x.value_or(0), ", ", b.name, " ", described(b.tv), " has ", y.value_or(0));
}

// The shape checks shared by both directions: q [.., L, E], k [.., S, E], v [.., S, Ev].
void checkGeometry(std::string_view op, const Named& q, const Named& k, const Named& v) {
  const int64_t r = q.tv->rank();
  for (int64_t d = 0; d < r - 2; ++d) {
    const std::string what = "batch dim " + std::to_string(d) + (d == r - 3 ? " (H)" : "");
    checkSameSize(op, q, d, k, d, what);
    checkSameSize(op, q, d, v, d, what);
  }
  checkSameSize(op, q, -1, k, -1, "the head size E (last dim)");
  checkSameSize(op, k, -2, v, -2, "the key length S (second-to-last dim)");
}

// A Scalar argument that must be a number or a Scalar (not a tensor) of one of the numeric
// categories; converted to Float64.
Scalar* realScalar(const Operand& v, std::string_view op, std::string_view what) {
  LOOM_CHECK(v.isScalar(), op, ": ", what, " must be a number or a Scalar, got the tensor ",
             v.val()->toString());
  const DataType d = v.val()->dtype();
  LOOM_CHECK(isFloatingType(d) || (isIntegralType(d) && !isBooleanType(d)), op, ": ", what,
             " must be a real number, got ", v.val()->toString(), " (", d, ")");
  return detail::scalarOperand(v.val(), DataType::Float64, op, what);
}

// dropout_p as a Float64 Scalar, or nullptr when it is the constant 0 (or absent): then no RNG
// is drawn. A constant outside [0, 1) is a UserError (1 would drop every entry: torch refuses it
// in the fused kernels too).
Scalar* dropoutProbability(const std::optional<Operand>& p, std::string_view op) {
  if (!p) return nullptr;
  Scalar* s = realScalar(*p, op, "dropout_p");
  if (auto c = s->constDouble()) {
    LOOM_CHECK(*c >= 0.0 && *c < 1.0, op, ": dropout_p must be in [0, 1), got ", *c);
    if (*c == 0.0) return nullptr;
  }
  return s;
}

// is_causal: false (absent or the constant false), true, or a Bool Scalar read when it runs.
struct Causal {
  bool on = false;         ///< the constant true
  Scalar* flag = nullptr;  ///< a symbolic Bool Scalar
};
Causal causalOf(const std::optional<Operand>& c, std::string_view op) {
  if (!c) return {};
  LOOM_CHECK(c->isScalar() && isBooleanType(c->val()->dtype()), op,
             ": is_causal must be a bool or a Bool Scalar, got ", c->val()->toString(), " (",
             c->val()->dtype(), ")");
  auto* s = c->val()->as<Scalar>();
  if (s->isConst()) {
    const auto* b = std::get_if<bool>(&s->value());
    return {b != nullptr && *b, nullptr};
  }
  return {false, s};
}

// scale as a Float64 Scalar; default 1 / sqrt(E), E the query's last dim.
Scalar* scaleOf(const std::optional<Operand>& scale, TensorView* query, std::string_view op) {
  if (scale) return realScalar(*scale, op, "scale");
  Scalar* e = detail::numElements(query, {query->rank() - 1});
  if (auto c = e->constInt()) return Operand(1.0 / std::sqrt(double(*c))).val()->as<Scalar>();
  Scalar* root = scalarUnary(ir::UnaryOpType::Sqrt, scalarCast(e, DataType::Float64));
  return scalarBinary(ir::BinaryOpType::Div, 1.0, root);
}

TensorView* f32(TensorView* x) { return cast(x, DataType::Float32); }

TensorView* transposed(TensorView* x) { return transpose(x, -2, -1); }

// The scores [.., L, S] in f32: q @ k^T * scale, -inf where the causal mask hides a key.
TensorView* scores(TensorView* qf, TensorView* kf, Scalar* scale, const Causal& causal) {
  TensorView* s = mul(matmul(qf, transposed(kf)), scale);
  if (!causal.on && causal.flag == nullptr) return s;
  // torch's is_causal: key j is seen by query i when j <= i (tril of ones [L, S], top-left).
  TensorView* rows = broadcast(iota(detail::numElements(qf, {qf->rank() - 2})), {false, true});
  TensorView* cols = broadcast(iota(detail::numElements(kf, {kf->rank() - 2})), {true, false});
  TensorView* seen = le(cols, rows);
  if (causal.flag != nullptr)
    seen = logicalOr(seen, scalarUnary(ir::UnaryOpType::LogicalNot, causal.flag));
  return where(seen, s, -kInf);
}

// The forward's optional bias (added in f32) and Bool mask (false hides the key: -inf) of the
// scores [.., L, S]: the scores' rank, sizes lined up by the pointwise ops (broadcast dims
// stretch; constants that differ are a UserError there, symbolic ones when the fusion runs).
TensorView* biasedAndMasked(TensorView* sc, TensorView* bias, TensorView* mask,
                            std::string_view op) {
  for (const Named& n : {Named{"bias", bias}, Named{"mask", mask}}) {
    if (n.tv == nullptr) continue;
    LOOM_CHECK(n.tv->rank() == sc->rank(), op, ": ", n.name, " ", described(n.tv), " has rank ",
               n.tv->rank(), " but the scores [.., L, S] have rank ", sc->rank(),
               " (broadcast_in_dim it to that rank)");
  }
  if (bias != nullptr) {
    LOOM_CHECK(isFloatingType(bias->dtype()), op, ": bias ", bias->toString(), " is ",
               bias->dtype(), "; it must be a floating tensor");
    sc = add(sc, f32(bias));
  }
  if (mask != nullptr) {
    LOOM_CHECK(isBooleanType(mask->dtype()), op, ": mask ", mask->toString(), " is ", mask->dtype(),
               "; it must be a Bool tensor (true where a key is seen)");
    sc = where(mask, sc, -kInf);
  }
  return sc;
}

// P = exp(scores - lse) with lse [.., L, 1]. A row that sees no key (lse = -inf: every score
// -inf) gives 0, not exp(-inf + inf) = NaN: its lse is replaced by +inf here.
TensorView* probabilities(TensorView* s, TensorView* lse) {
  TensorView* safe = where(eq(lse, -kInf), kInf, lse);
  return exp(sub(s, safe));
}

// Dropout of [.., L, S] tensors with ops::dropout's mask (rand < 1 - p for the seed and offset),
// so forward and backward, which both draw it here, drop the same entries. The mask is drawn
// once per direction and applied as ops::dropout applies it.
struct Dropout {
  Scalar* p = nullptr;  ///< nullptr: no dropout
  Scalar* seed = nullptr;
  Scalar* offset = nullptr;
  TensorView* mask = nullptr;

  TensorView* apply(TensorView* x) {
    if (p == nullptr) return x;
    if (mask == nullptr) {
      DropoutResult r = dropout(x, p, seed, offset);
      mask = r.mask;
      return r.output;
    }
    Scalar* keep = scalarBinary(ir::BinaryOpType::Sub, 1.0, p);
    return where(mask, mul(x, scalarBinary(ir::BinaryOpType::Div, 1.0, keep)), 0.0);
  }
};

// Seed and offset of the forward: integers or integer Scalars (ops::rand checks them).
Scalar* keyOf(const std::optional<Operand>& v, std::string_view op, std::string_view what) {
  LOOM_CHECK(v.has_value(), op, ": dropout_p may be above 0, so ", what,
             " is needed: Loom has no global random generator (pass the seed and offset of the "
             "dropout mask, integers or Int Scalars)");
  LOOM_CHECK(
      v->isScalar() && isIntegralType(v->val()->dtype()) && !isBooleanType(v->val()->dtype()), op,
      ": ", what, " must be an integer or an integer Scalar, got ", v->val()->toString(), " (",
      v->val()->dtype(), ")");
  return detail::scalarOperand(v->val(), DataType::Int64, op, what);
}

// The FullOp that fills `tv` with one integer (nullptr if none): the definition of a 0-D tensor
// (sdpfa_fwd's philox_offset, or the seed and offset as 0-D Int64 in fusions of Loom's earlier
// form), or, for sdpfa_fwd's [2] philox_seed, the definition of the [1] tensor the pad appends
// the offset to (so the seed).
const ir::FullOp* keyFill(const TensorView* tv) {
  if (tv->definition() == nullptr || !isIntegralType(tv->dtype())) return nullptr;
  if (tv->rank() == 0) return tv->definition()->dynCast<ir::FullOp>();
  const auto* pad = tv->definition()->dynCast<ir::PadOp>();
  if (tv->rank() != 1 || pad == nullptr || pad->in()->definition() == nullptr) return nullptr;
  return pad->in()->definition()->dynCast<ir::FullOp>();
}

// The backward's philox_seed / philox_offset: the tensors sdpfa_fwd made in this fusion (the [2]
// seed-and-offset or the 0-D offset; keyFill), or the seed itself.
Scalar* backwardKeyOf(const std::optional<Operand>& v, std::string_view op, std::string_view what) {
  if (v && v->isTensor()) {
    TensorView* tv = v->tensor();
    const ir::FullOp* full = keyFill(tv);
    LOOM_CHECK(full != nullptr, op, ": ", what, " ", described(tv),
               " is not the one sdpfa_fwd returned in this fusion, and dropout_p may be above 0: "
               "Loom regenerates the dropout mask from a seed known when the fusion is built. "
               "Pass sdpfa_fwd's own result, or the seed and offset given to it (integers or Int "
               "Scalars)");
    // The fill is the seed (offset) cast to UInt64: the backward takes the integer it was cast
    // from, the forward's own Scalar.
    Scalar* fill = full->value();
    const auto* cast =
        fill->definition() != nullptr ? fill->definition()->dynCast<ir::UnaryOp>() : nullptr;
    if (cast != nullptr && cast->opType() == ir::UnaryOpType::Cast &&
        isIntegralType(cast->in()->dtype()) && !isBooleanType(cast->in()->dtype())) {
      fill = cast->in()->as<Scalar>();
    }
    return detail::scalarOperand(fill, DataType::Int64, op, what);
  }
  return keyOf(v, op, what);
}

// sdpfa_fwd's philox_seed and philox_offset as nvFuser returns them (torch 2.7's flash attention
// RNG state): a [2] UInt64 tensor holding the seed and the offset, and a 0-D UInt64 holding the
// offset; 0 where there is none. The [2] is a pad of a [1] fill, which keyFill reads back.
std::pair<TensorView*, TensorView*> keyTensors(Scalar* seed, Scalar* offset) {
  const Operand s = seed != nullptr ? Operand(seed) : Operand(int64_t(0));
  const Operand o = offset != nullptr ? Operand(offset) : Operand(int64_t(0));
  TensorView* both = pad(full(SizeList(std::vector<Size>{1}), s, DataType::UInt64),
                         SizeList(std::vector<Size>{0, 1}), o);
  return {both, full(SizeList(std::vector<Size>{}), o, DataType::UInt64)};
}

}  // namespace

SdpfaFwdResult sdpfaFwdComposite(TensorView* query, TensorView* key, TensorView* value,
                                 std::optional<Operand> dropout_p, std::optional<Operand> is_causal,
                                 std::optional<Operand> scale, std::optional<Operand> rng_seed,
                                 std::optional<Operand> rng_offset, TensorView* bias,
                                 TensorView* mask) {
  constexpr std::string_view op = "sdpfa_fwd";
  const Named q{"query", query}, k{"key", key}, v{"value", value};
  checkOperands(op, {q, k, v});
  checkGeometry(op, q, k, v);
  Dropout drop{dropoutProbability(dropout_p, op)};
  if (drop.p != nullptr) {
    drop.seed = keyOf(rng_seed, op, "rng_seed");
    drop.offset = keyOf(rng_offset, op, "rng_offset");
  }
  const Causal causal = causalOf(is_causal, op);
  Scalar* s = scaleOf(scale, query, op);

  TensorView* sc = biasedAndMasked(scores(f32(query), f32(key), s, causal), bias, mask, op);
  const int64_t last = sc->rank() - 1;
  // log(sum(exp(sc))) shifted by the row max; a row with every score -inf keeps max 0 so that
  // its lse is log(0) = -inf, never NaN.
  TensorView* m = max(sc, {last}, /*keepdim=*/true);
  TensorView* m_safe = where(eq(m, -kInf), 0.0, m);
  TensorView* lse = add(m_safe, log(sum(exp(sub(sc, m_safe)), {last}, /*keepdim=*/true)));
  TensorView* p = drop.apply(probabilities(sc, lse));
  TensorView* out = cast(matmul(p, f32(value)), query->dtype());

  // Without dropout the seed and offset are still returned when given (else 0), as nvFuser always
  // returns these outputs.
  Scalar* seed = drop.seed != nullptr ? drop.seed
                 : rng_seed           ? keyOf(rng_seed, op, "rng_seed")
                                      : nullptr;
  Scalar* offset = drop.offset != nullptr ? drop.offset
                   : rng_offset           ? keyOf(rng_offset, op, "rng_offset")
                                          : nullptr;
  auto [seed_out, offset_out] = keyTensors(seed, offset);
  return {out, squeeze(lse, {last}), seed_out, offset_out};
}

namespace {

// The backward's tensor checks, shared by the node and the composite.
void checkBackwardOperands(std::string_view op, TensorView* grad_output, TensorView* query,
                           TensorView* key, TensorView* value, TensorView* output,
                           TensorView* log_sumexp) {
  const Named q{"query", query}, k{"key", key}, v{"value", value};
  const Named go{"grad_output", grad_output}, o{"output", output};
  checkOperands(op, {q, k, v, o, go});
  checkGeometry(op, q, k, v);
  // output and grad_output: [.., L, Ev].
  for (const Named* t : {&o, &go}) {
    for (int64_t d = 0; d < query->rank() - 1; ++d) {
      checkSameSize(op, *t, d, q, d, d == query->rank() - 2 ? "the query length L" : "a batch dim");
    }
    checkSameSize(op, *t, -1, v, -1, "the value size Ev (last dim)");
  }
  LOOM_CHECK(log_sumexp != nullptr, op, ": log_sumexp is null");
  LOOM_CHECK(log_sumexp->dtype() == DataType::Float32, op, ": log_sumexp ", log_sumexp->toString(),
             " is ", log_sumexp->dtype(), "; it is Float32, as sdpfa_fwd returns it");
  LOOM_CHECK(log_sumexp->rank() == query->rank() - 1, op, ": log_sumexp ", described(log_sumexp),
             " must have the query's shape without its last dim (rank ", query->rank() - 1, ")");
  const Named lse_named{"log_sumexp", log_sumexp};
  for (int64_t d = 0; d < log_sumexp->rank(); ++d) {
    checkSameSize(op, lse_named, d, q, d, "a dim of [.., L]");
  }
}

}  // namespace

SdpfaBwdResult sdpfaBwdComposite(TensorView* grad_output, TensorView* query, TensorView* key,
                                 TensorView* value, TensorView* output, TensorView* log_sumexp,
                                 std::optional<Operand> dropout_p, std::optional<Operand> is_causal,
                                 std::optional<Operand> philox_seed,
                                 std::optional<Operand> philox_offset,
                                 std::optional<Operand> scale) {
  constexpr std::string_view op = "sdpfa_bwd";
  checkBackwardOperands(op, grad_output, query, key, value, output, log_sumexp);
  Dropout drop{dropoutProbability(dropout_p, op)};
  if (drop.p != nullptr) {
    drop.seed = backwardKeyOf(philox_seed, op, "philox_seed");
    drop.offset = backwardKeyOf(philox_offset, op, "philox_offset");
  }
  const Causal causal = causalOf(is_causal, op);
  Scalar* s = scaleOf(scale, query, op);

  TensorView* qf = f32(query);
  TensorView* kf = f32(key);
  TensorView* vf = f32(value);
  TensorView* dout = f32(grad_output);
  TensorView* sc = scores(qf, kf, s, causal);
  const int64_t last = sc->rank() - 1;
  TensorView* p = probabilities(sc, unsqueeze(log_sumexp, last));
  // output = dropout(P) @ v: dv = dropout(P)^T @ dout, and d(dropout(P)) = dout @ v^T, whose
  // gradient through the dropout is the same mask and scale.
  TensorView* grad_v = matmul(transposed(drop.apply(p)), dout);
  TensorView* dp = drop.apply(matmul(dout, transposed(vf)));
  // The softmax backward: sum_j P_ij dP_ij = sum_j dropout(P)_ij (dout_i . v_j) = dout_i . out_i.
  TensorView* d = sum(mul(dout, f32(output)), {last}, /*keepdim=*/true);
  TensorView* ds = mul(p, sub(dp, d));
  TensorView* grad_q = mul(matmul(ds, kf), s);
  TensorView* grad_k = mul(matmul(transposed(ds), qf), s);
  return {cast(grad_q, query->dtype()), cast(grad_k, key->dtype()), cast(grad_v, value->dtype())};
}

namespace {

// The node's five Scalars from the ops' arguments (the composite's checks and defaults): dropout_p
// (the constant 0 when absent or 0), is_causal, scale, and seed and offset (the constant 0 when
// absent and not needed).
std::vector<Scalar*> nodeScalars(std::string_view op, TensorView* query,
                                 const std::optional<Operand>& dropout_p,
                                 const std::optional<Operand>& is_causal,
                                 const std::optional<Operand>& scale, Scalar* seed,
                                 Scalar* offset) {
  auto constant = [](Operand v) { return v.val()->as<Scalar>(); };
  Scalar* p = dropoutProbability(dropout_p, op);
  const Causal causal = causalOf(is_causal, op);
  return {p != nullptr ? p : constant(0.0),
          causal.flag != nullptr ? causal.flag : constant(causal.on), scaleOf(scale, query, op),
          seed != nullptr ? seed : constant(int64_t(0)),
          offset != nullptr ? offset : constant(int64_t(0))};
}

// A tensor of `like`'s dims (fresh IDs), the last one replaced by `last` (none when null) or
// dropped, of `dtype`.
TensorView* freshLike(TensorView* like, ir::IterDomain* last, bool drop_last, DataType dtype) {
  std::vector<ir::IterDomain*> ids;
  const std::vector<ir::IterDomain*> d = detail::dims(like);
  for (size_t i = 0; i + 1 < d.size(); ++i) ids.push_back(detail::freshId(d[i]));
  if (!drop_last) ids.push_back(detail::freshId(last != nullptr ? last : d.back()));
  return detail::newTensor(std::move(ids), dtype);
}

// `out` (a result of the same rank as `like`) allocated in `like`'s dim order, as torch's
// attention kernels allocate theirs (the order of the query's strides): a query declared with
// stride_order [.., 1, 2, 0] (BSHE) gives an output whose transpose(2, 3) is contiguous. Only an
// allocation that permutes like's dims is followed; any other stays row-major.
void allocateLike(TensorView* out, const TensorView* like) {
  if (!like->domain()->hasAllocation()) return;
  const std::vector<ir::IterDomain*> dims = detail::dims(like);
  const std::vector<ir::IterDomain*> out_dims = detail::dims(out);
  const std::vector<ir::IterDomain*> alloc =
      ir::TensorDomain::noReductions(like->domain()->allocation());
  if (alloc.size() != dims.size() || out_dims.size() != dims.size() || alloc == dims) return;
  std::vector<ir::IterDomain*> order;
  for (ir::IterDomain* id : alloc) {
    auto it = std::find(dims.begin(), dims.end(), id);
    if (it == dims.end()) return;  // a split or merged allocation: not a permutation
    order.push_back(out_dims[size_t(it - dims.begin())]);
  }
  out->setAllocationDomain(std::move(order));
}

}  // namespace

SdpfaFwdResult sdpfaFwd(TensorView* query, TensorView* key, TensorView* value,
                        std::optional<Operand> dropout_p, std::optional<Operand> is_causal,
                        std::optional<Operand> scale, std::optional<Operand> rng_seed,
                        std::optional<Operand> rng_offset, TensorView* bias, TensorView* mask) {
  // The node (and the fused kernels behind it) take no bias or mask: with either, the composite
  // is the fusion's attention.
  if (bias != nullptr || mask != nullptr) {
    return sdpfaFwdComposite(query, key, value, dropout_p, is_causal, scale, rng_seed, rng_offset,
                             bias, mask);
  }
  constexpr std::string_view op = "sdpfa_fwd";
  const Named q{"query", query}, k{"key", key}, v{"value", value};
  checkOperands(op, {q, k, v});
  checkGeometry(op, q, k, v);
  const bool drops = dropoutProbability(dropout_p, op) != nullptr;
  Scalar* seed = drops || rng_seed ? keyOf(rng_seed, op, "rng_seed") : nullptr;
  Scalar* offset = drops || rng_offset ? keyOf(rng_offset, op, "rng_offset") : nullptr;
  std::vector<Scalar*> s = nodeScalars(op, query, dropout_p, is_causal, scale, seed, offset);
  TensorView* out = freshLike(query, detail::dims(value).back(), false, query->dtype());
  TensorView* lse = freshLike(query, nullptr, true, DataType::Float32);
  allocateLike(out, query);
  ir::IrBuilder::create<ir::SdpaFwdOp>(out, lse, query, key, value, s[0], s[1], s[2], s[3], s[4]);
  auto [seed_out, offset_out] = keyTensors(seed, offset);
  return {out, lse, seed_out, offset_out};
}

SdpfaBwdResult sdpfaBwd(TensorView* grad_output, TensorView* query, TensorView* key,
                        TensorView* value, TensorView* output, TensorView* log_sumexp,
                        std::optional<Operand> dropout_p, std::optional<Operand> is_causal,
                        std::optional<Operand> philox_seed, std::optional<Operand> philox_offset,
                        std::optional<Operand> scale) {
  constexpr std::string_view op = "sdpfa_bwd";
  checkBackwardOperands(op, grad_output, query, key, value, output, log_sumexp);
  Scalar* seed = nullptr;
  Scalar* offset = nullptr;
  if (dropoutProbability(dropout_p, op) != nullptr) {
    seed = backwardKeyOf(philox_seed, op, "philox_seed");
    offset = backwardKeyOf(philox_offset, op, "philox_offset");
  }
  std::vector<Scalar*> s = nodeScalars(op, query, dropout_p, is_causal, scale, seed, offset);
  TensorView* dq = freshLike(query, nullptr, false, query->dtype());
  TensorView* dk = freshLike(key, nullptr, false, key->dtype());
  TensorView* dv = freshLike(value, nullptr, false, value->dtype());
  allocateLike(dq, query);
  allocateLike(dk, key);
  allocateLike(dv, value);
  ir::IrBuilder::create<ir::SdpaBwdOp>(dq, dk, dv, grad_output, query, key, value, output,
                                       log_sumexp, s[0], s[1], s[2], s[3], s[4]);
  return {dq, dk, dv};
}

std::unique_ptr<ir::Fusion> sdpfaCompositeFusion(bool backward, DataType dtype, int64_t rank) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto tensor = [&](int64_t r, DataType d) {
    TensorView* tv = TensorBuilder().rank(r).dtype(d).build();
    f->addInput(tv);
    return tv;
  };
  std::vector<TensorView*> in;
  for (int i = 0; i < (backward ? 5 : 3); ++i) in.push_back(tensor(rank, dtype));
  TensorView* lse = backward ? tensor(rank - 1, DataType::Float32) : nullptr;
  std::vector<Scalar*> s;
  for (DataType d :
       {DataType::Float64, DataType::Bool, DataType::Float64, DataType::Int64, DataType::Int64}) {
    s.push_back(ir::IrBuilder::symbolic(d));
    f->addInput(s.back());
  }
  if (!backward) {
    SdpfaFwdResult r = sdpfaFwdComposite(in[0], in[1], in[2], s[0], s[1], s[2], s[3], s[4]);
    f->addOutput(r.output);
    f->addOutput(r.log_sumexp);
  } else {
    SdpfaBwdResult r =
        sdpfaBwdComposite(in[0], in[1], in[2], in[3], in[4], lse, s[0], s[1], s[3], s[4], s[2]);
    f->addOutput(r.grad_query);
    f->addOutput(r.grad_key);
    f->addOutput(r.grad_value);
  }
  return f;
}

void expandAttention(ir::Fusion& fusion) {
  ir::FusionGuard guard(&fusion);
  for (ir::Expr* e : fusion.exprs()) {
    if (!ir::isAttentionExpr(e)) continue;
    const std::vector<ir::Val*> in = e->inputs();
    const std::vector<ir::Val*> outs = e->outputs();
    auto t = [&](size_t i) { return in[i]->as<TensorView>(); };
    const size_t n = ir::attentionTensorInputs(e);
    auto sc = [&](size_t i) { return std::optional<Operand>(in[n + i]); };
    std::vector<TensorView*> made;
    if (e->isA<ir::SdpaFwdOp>()) {
      SdpfaFwdResult r = sdpfaFwdComposite(t(0), t(1), t(2), sc(0), sc(1), sc(2), sc(3), sc(4));
      made = {r.output, r.log_sumexp};
    } else {
      SdpfaBwdResult r =
          sdpfaBwdComposite(t(0), t(1), t(2), t(3), t(4), t(5), sc(0), sc(1), sc(3), sc(4), sc(2));
      made = {r.grad_query, r.grad_key, r.grad_value};
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      // A result allocated in its operand's dim order keeps it: the composite's row-major
      // result copied into that order.
      auto* o = outs[i]->as<TensorView>();
      if (o->domain()->hasAllocation()) {
        made[i] = set(made[i]);
        allocateLike(made[i], o);
      }
      fusion.replaceAllUses(outs[i], made[i]);
    }
    fusion.removeExpr(e);
  }
}

}  // namespace loom::ops
