// SPDX-License-Identifier: Apache-2.0
// Per-expr rules: ranks, IterTypes and dtypes (see verify_exprs.h).
#include "ir/verify_exprs.h"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "loom/ir/complex_ops.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/transforms.h"
#include "loom/support/error.h"

namespace loom::ir {
namespace {

using ::loom::detail::concat;

char iterLetter(IterType t) {
  switch (t) {
    case IterType::Iteration: return 'i';
    case IterType::Reduction: return 'r';
    case IterType::Broadcast: return 'b';
    case IterType::Symbolic: return 'u';
  }
  return '?';
}

// An ID as the text form writes it: the letter of its IterType and its number.
std::string idName(const IterDomain* id) {
  return iterLetter(id->iterType()) + std::to_string(id->name());
}

std::string_view kindName(IterType t) {
  switch (t) {
    case IterType::Iteration: return "an iteration";
    case IterType::Reduction: return "a reduction";
    case IterType::Broadcast: return "a broadcast";
    case IterType::Symbolic: return "a symbolic";
  }
  return "an unknown";
}

std::string quoted(const Expr* e) { return "'" + e->toString() + "'"; }

// ---- Ranks and IterTypes --------------------------------------------------------------------

bool isReductionExpr(const Expr* e) { return e->isA<ReductionOp>() || e->isA<WelfordOp>(); }

// The IDs of operand `p` and output `c` that line up dim for dim (the logical map,
// ir/logical_map.h): p's dims without reductions, minus squeezed ones; c's root-or-logical dims,
// minus new broadcasts.
struct Alignment {
  std::vector<IterDomain*> p, c;
};

Alignment align(const Expr* e, const TensorView* p, const TensorView* c) {
  Alignment a;
  std::vector<IterDomain*> p_ids = TensorDomain::noReductions(p->logical());
  const std::vector<IterDomain*>& c_ids = c->domain()->maybeRoot();
  const auto* sq = e->dynCast<SqueezeOp>();
  for (size_t i = 0; i < p_ids.size(); ++i) {
    if (sq == nullptr || i >= sq->isSqueezedDim().size() || !sq->isSqueezedDim()[i]) {
      a.p.push_back(p_ids[i]);
    }
  }
  const auto* b = e->dynCast<BroadcastOp>();
  for (size_t i = 0; i < c_ids.size(); ++i) {
    if (b == nullptr || i >= b->isBroadcastDim().size() || !b->isBroadcastDim()[i]) {
      a.c.push_back(c_ids[i]);
    }
  }
  return a;
}

std::optional<std::string> rankProblem(const Expr* e, const TensorView* p, const TensorView* c) {
  const size_t p_rank = TensorDomain::noReductions(p->logical()).size();
  const size_t c_rank = c->domain()->maybeRoot().size();
  if (const auto* sq = e->dynCast<SqueezeOp>();
      sq != nullptr && sq->isSqueezedDim().size() != p_rank) {
    return concat(quoted(e), " has ", sq->isSqueezedDim().size(), " squeeze flags for the ", p_rank,
                  " dims of ", p->toString());
  }
  if (const auto* b = e->dynCast<BroadcastOp>();
      b != nullptr && b->isBroadcastDim().size() != c_rank) {
    return concat(quoted(e), " has ", b->isBroadcastDim().size(), " broadcast flags for the ",
                  c_rank, " dims of ", c->toString());
  }
  Alignment a = align(e, p, c);
  if (a.p.size() != a.c.size()) {
    return concat(quoted(e), ": operand ", p->toString(), " has ", a.p.size(),
                  " dims to line up with ", c->toString(), ", which has ", a.c.size());
  }
  return std::nullopt;
}

// An output ID takes its IterType from the operand IDs it lines up with: a broadcast output ID
// needs a broadcast in every operand there (else it would read one element of a whole row), and
// only reductions make Reduction IDs.
std::optional<std::string> pairProblem(const Expr* e, const TensorView* p, const TensorView* c,
                                       const IterDomain* pid, const IterDomain* cid) {
  if (cid->isReduction() && !isReductionExpr(e)) {
    return concat(quoted(e), ": ", c->toString(), "'s ID ", idName(cid), " is a reduction ID, but ",
                  e->opName(), " reduces nothing (write i", cid->name(), ")");
  }
  if (cid->isBroadcast() && !pid->isBroadcast()) {
    return concat(quoted(e), ": ", c->toString(), "'s ID ", idName(cid),
                  " is a broadcast ID, but it lines up with ", idName(pid), " of ", p->toString(),
                  ", which is not one (a broadcast holds one element of that dim)");
  }
  return std::nullopt;
}

std::optional<std::string> squeezeProblem(const SqueezeOp* sq) {
  std::vector<IterDomain*> ids = TensorDomain::noReductions(sq->in()->logical());
  for (size_t i = 0; i < ids.size() && i < sq->isSqueezedDim().size(); ++i) {
    if (!sq->isSqueezedDim()[i]) continue;
    // An expanded broadcast holds one value along its dim, so squeezing it is well defined
    // (nvFuser's squeeze_expanded; ops::squeeze asks for that flag before making one). Other
    // IDs: symbolic extents are checked to be 1 when the squeeze runs.
    if (ids[i]->hasExpandedExtent()) continue;
    auto n = ids[i]->extent()->constInt();
    if (n.has_value() && *n != 1) {
      return concat(quoted(sq), ": squeezed ID ", idName(ids[i]), " of ", sq->in()->toString(),
                    " has the extent ", *n, "; only size-1 dims are squeezed");
    }
  }
  return std::nullopt;
}

// Matmul and linear: the operand ranks they take, the output rank they give, and the IterTypes
// of the output IDs each operand dim lines up with (matmulOperandDims).
std::optional<std::string> matmulProblem(const Expr* e) {
  auto rank = [](const TensorView* tv) {
    return int64_t(TensorDomain::noReductions(tv->logical()).size());
  };
  const auto* out = e->output(0)->as<TensorView>();
  int64_t want = 0;
  if (const auto* mm = e->dynCast<MatmulOp>()) {
    const int64_t ra = rank(mm->a()), rb = rank(mm->b());
    if (ra < 1 || rb < 1) {
      return concat(quoted(e), ": matmul takes operands of rank 1 or more, got ",
                    mm->a()->toString(), " of rank ", ra, " and ", mm->b()->toString(), " of rank ",
                    rb);
    }
    want = std::max(ra >= 2 ? ra - 2 : 0, rb >= 2 ? rb - 2 : 0) + (ra >= 2 ? 1 : 0) +
           (rb >= 2 ? 1 : 0);
  } else {
    const auto* lin = e->as<LinearOp>();
    const int64_t rx = rank(lin->x()), rw = rank(lin->w());
    if (rx < 1 || rw < 1 || rw > 2) {
      return concat(quoted(e), ": linear takes an input of rank 1 or more and a weight of rank 1 ",
                    "or 2, got ", lin->x()->toString(), " of rank ", rx, " and ",
                    lin->w()->toString(), " of rank ", rw);
    }
    if (lin->hasBias()) {
      const int64_t rbias = rank(lin->bias());
      if (rbias > 1 || (rbias == 1 && rw == 1)) {
        return concat(quoted(e), ": the bias ", lin->bias()->toString(), " of rank ", rbias,
                      " must be 0-D, or 1-D for a 2-D weight");
      }
    }
    want = rx - 1 + (rw == 2 ? 1 : 0);
  }
  const std::vector<IterDomain*>& c_ids = out->logical();
  if (rank(out) != want || c_ids.size() != size_t(want) + 1 || !c_ids.back()->isReduction()) {
    return concat(quoted(e), ": its output ", out->toString(), " must have ", want,
                  " dims and then one reduction ID, the contracted r{k} (", want + 1,
                  " logical IDs, the last a reduction), not ", c_ids.size(), " logical IDs of ",
                  "which ", c_ids.size() - size_t(rank(out)), " reductions");
  }
  for (Val* in : e->inputs()) {
    const auto* p = in->as<TensorView>();
    const std::vector<IterDomain*> p_ids = TensorDomain::noReductions(p->logical());
    const std::vector<int64_t> dims = matmulOperandDims(e, p);
    for (size_t i = 0; i < p_ids.size(); ++i) {
      if (dims[i] < 0) continue;  // k, whose r{k} is checked above
      if (auto r = pairProblem(e, p, out, p_ids[i], c_ids[size_t(dims[i])])) return r;
    }
  }
  return std::nullopt;
}

// sdpfa_fwd / sdpfa_bwd: one rank (4 or 5) and one dtype (f32, bf16, f16) for the attention
// tensors, log_sumexp Float32 of one rank less, and the five Scalars' dtypes.
std::optional<std::string> attentionProblem(const Expr* e) {
  const size_t n = attentionTensorInputs(e);
  const auto* q = e->input(e->isA<SdpaFwdOp>() ? 0 : 1)->as<TensorView>();
  const auto rank = [](const Val* v) {
    return int64_t(TensorDomain::noReductions(v->as<TensorView>()->logical()).size());
  };
  const int64_t r = rank(q);
  const DataType d = q->dtype();
  if ((r != 4 && r != 5) ||
      (d != DataType::Float32 && d != DataType::BFloat16 && d != DataType::Float16)) {
    return concat(quoted(e), ": the query ", q->toString(), " must be f32, bf16 or f16 of rank 4 ",
                  "or 5, not ", d, " of rank ", r);
  }
  std::vector<const Val*> lse;
  if (const auto* f = e->dynCast<SdpaFwdOp>()) lse.push_back(f->logSumexp());
  if (const auto* b = e->dynCast<SdpaBwdOp>()) lse.push_back(b->logSumexp());
  std::vector<const Val*> tensors(e->inputs().begin(), e->inputs().begin() + long(n));
  tensors.insert(tensors.end(), e->outputs().begin(), e->outputs().end());
  for (const Val* t : tensors) {
    const bool is_lse = t == lse.front();
    const DataType want = is_lse ? DataType::Float32 : d;
    const int64_t want_rank = is_lse ? r - 1 : r;
    if (!t->isA<TensorView>() || t->dtype() != want || rank(t) != want_rank) {
      return concat(quoted(e), ": ", t->toString(), " must be ", want, " of rank ", want_rank,
                    is_lse ? " (log_sumexp)" : " (the query's dtype and rank)");
    }
  }
  const char* names[] = {"dropout_p", "is_causal", "scale", "seed", "offset"};
  for (size_t i = 0; i < 5; ++i) {
    const Val* s = e->input(n + i);
    const DataType sd = s->dtype();
    const bool ok = s->isA<Scalar>() && (i == 1   ? isBooleanType(sd)
                                         : i >= 3 ? isIntegralType(sd) && !isBooleanType(sd)
                                                  : isFloatingType(sd));
    if (!ok) {
      return concat(quoted(e), ": ", names[i], " ", s->toString(), " is ", sd, "; it must be a ",
                    i == 1   ? "Bool"
                    : i >= 3 ? "integer"
                             : "floating",
                    " Scalar");
    }
  }
  return std::nullopt;
}

std::optional<std::string> iterTypeProblem(const Expr* e) {
  if (e->isA<MatmulOp>() || e->isA<LinearOp>()) return matmulProblem(e);
  if (isAttentionExpr(e)) return attentionProblem(e);
  std::vector<const TensorView*> outs;
  for (Val* o : e->outputs()) {
    if (auto* tv = o->dynCast<TensorView>()) outs.push_back(tv);
  }
  if (const auto* b = e->dynCast<BroadcastOp>()) {
    const std::vector<IterDomain*>& ids = b->out()->domain()->maybeRoot();
    for (size_t i = 0; i < ids.size() && i < b->isBroadcastDim().size(); ++i) {
      if (b->isBroadcastDim()[i] && !ids[i]->isBroadcast()) {
        return concat(quoted(e), ": the new ID ", idName(ids[i]), " (position ", i, ") of ",
                      b->out()->toString(), " must be a broadcast ID (write b", ids[i]->name(),
                      ")");
      }
    }
  }
  if (const auto* sq = e->dynCast<SqueezeOp>()) {
    if (auto p = squeezeProblem(sq)) return p;
  }
  // Only reductions make Reduction IDs (also where no operand lines up: full, iota).
  for (const TensorView* c : outs) {
    for (IterDomain* id : c->domain()->maybeRoot()) {
      if (id->isReduction() && !isReductionExpr(e)) return pairProblem(e, c, c, id, id);
    }
  }
  // A reduction whose output lists no reduction IDs is left to the reference evaluator's
  // inference (verifyRunnable rejects it for kernels).
  if (isReductionExpr(e) && !e->output(0)->as<TensorView>()->domain()->hasReduction()) {
    return std::nullopt;
  }
  for (Val* in : e->inputs()) {
    const auto* p = in->dynCast<TensorView>();
    if (p == nullptr) continue;
    for (const TensorView* c : outs) {
      if (auto r = rankProblem(e, p, c)) return r;
      Alignment a = align(e, p, c);
      for (size_t i = 0; i < a.p.size(); ++i) {
        if (auto r = pairProblem(e, p, c, a.p[i], a.c[i])) return r;
      }
    }
  }
  return std::nullopt;
}

// ---- Dtypes ------------------------------------------------------------------------------------

// A value as the text form writes it: T3, s2, or a constant with its dtype (f32(0.5)).
std::string describe(const Val* v) {
  const auto* s = v->dynCast<Scalar>();
  if (s == nullptr || !s->isConst()) return v->toString();
  const ScalarValue& x = s->value();
  const DataType plain = std::holds_alternative<bool>(x)      ? DataType::Bool
                         : std::holds_alternative<int64_t>(x) ? DataType::Int64
                                                              : DataType::Float64;
  std::string text = scalarValueToString(x, s->dtype());
  if (std::holds_alternative<std::complex<double>>(x)) {
    text = std::string(dataTypeName(s->dtype())) + text;  // c64(1.0, -2.5)
  } else if (s->dtype() != plain) {
    text = std::string(dataTypeName(s->dtype())) + "(" + text + ")";
  }
  return "the constant " + text;
}

bool isComparison(BinaryOpType t) {
  return isPredicateOp(t) && t != BinaryOpType::LogicalAnd && t != BinaryOpType::LogicalOr;
}

// Bool arithmetic computes on 0 and 1 and tests the result for != 0 (what ops builds for bools);
// division and remainders have no Bool meaning (they would divide by false), nor have the ops
// whose kind takes numbers only (op_types.h).
bool boolArithmetic(BinaryOpType t) {
  switch (binaryKind(t)) {
    case BinaryKind::Arithmetic: return t != BinaryOpType::Fmod;
    case BinaryKind::Comparison:
    case BinaryKind::Logical:
    case BinaryKind::Bitwise: return true;
    default: return false;
  }
}

class DtypeRule {
 public:
  explicit DtypeRule(const Expr* e) : e_(e) {}

  // `v` must have dtype `t`; `why` says where t comes from.
  void need(const Val* v, DataType t, const std::string& why) {
    if (problem_ || v == nullptr || v->dtype() == t) return;
    problem_ = concat(quoted(e_), ": ", describe(v), " is ", v->dtype(), ", but ", why,
                      " (convert with cast)");
  }
  void needAll(DataType t, const std::string& why) {
    for (Val* v : e_->inputs()) need(v, t, why);
  }
  void fail(const std::string& msg) {
    if (!problem_) problem_ = concat(quoted(e_), ": ", msg);
  }
  std::optional<std::string> take() { return std::move(problem_); }

 private:
  const Expr* e_;
  std::optional<std::string> problem_;
};

std::string computesIn(std::string_view op, const Val* out) {
  return concat(op, " computes in ", out->dtype(), ", the dtype of its output ", out->toString());
}

// An op on complex values (complex_ops.h); the other rules do not see complex dtypes.
void complexUnaryRule(const UnaryOp* u, DtypeRule& r) {
  const UnaryOpType t = u->opType();
  const std::string_view op = opTypeName(t);
  const DataType in = u->in()->dtype();
  const DataType out = u->out()->dtype();
  if (t == UnaryOpType::Cast) {
    if (isComplexType(in) && !isComplexType(out)) {
      r.fail(concat("cast of a complex value to ", out,
                    " is not defined (take real, imag or abs of it first)"));
    }
    return;
  }
  if (!isComplexType(in)) {
    r.fail(concat(op, " of ", in, " gives ", in, ", not ", out));
    return;
  }
  if (!isComplexOp(t)) {
    r.fail(
        concat(op, " is not defined for complex values (", u->in()->toString(), " is ", in, ")"));
  } else if (isUnaryTest(t)) {
    r.need(u->out(), DataType::Bool, concat(op, " gives Bool"));
  } else if (isComplexToRealOp(t)) {
    r.need(u->out(), complexPartType(in), concat(op, " of ", in, " gives ", complexPartType(in)));
  } else {
    r.need(u->in(), out, computesIn(op, u->out()));
  }
}

void unaryRule(const UnaryOp* u, DtypeRule& r) {
  const UnaryOpType t = u->opType();
  const std::string_view op = opTypeName(t);
  if (isComplexType(u->in()->dtype()) || isComplexType(u->out()->dtype())) {
    complexUnaryRule(u, r);
    return;
  }
  if (t == UnaryOpType::Cast) return;
  if (t == UnaryOpType::Imag || t == UnaryOpType::Conj || t == UnaryOpType::Real) {
    r.fail(concat(op, " takes a complex value, not ", u->in()->dtype()));
    return;
  }
  if (isUnaryTest(t)) {
    r.need(u->out(), DataType::Bool, concat(op, " gives Bool"));
    return;
  }
  if (t == UnaryOpType::LogicalNot) {
    r.need(u->out(), DataType::Bool, "logical_not gives Bool");
    r.need(u->in(), DataType::Bool, "logical_not takes Bool");
    return;
  }
  r.need(u->in(), u->out()->dtype(), computesIn(op, u->out()));
  const DataType c = u->out()->dtype();
  if (isFloatOnlyOp(t) && !isFloatingType(c)) {
    r.fail(concat(op, " computes in a floating dtype, not ", c,
                  " (ops casts integers to f32 "
                  "first: write cast(x, f32))"));
  }
  if (t == UnaryOpType::Neg && c == DataType::Bool) {
    r.fail("neg is not defined for Bool (use logical_not)");
  }
  if (isBitwiseOp(t) && isFloatingType(c)) {
    r.fail(concat(op, " takes integers or Bool, not ", c));
  }
}

void binaryRule(const BinaryOp* b, DtypeRule& r) {
  const BinaryOpType t = b->opType();
  const std::string_view op = opTypeName(t);
  for (const Val* v : b->inputs()) {
    if (isComplexType(v->dtype()) && !isComplexOp(t)) {
      r.fail(
          concat(op, " is not defined for complex values (", describe(v), " is ", v->dtype(), ")"));
      return;
    }
  }
  if (t == BinaryOpType::LogicalAnd || t == BinaryOpType::LogicalOr) {
    r.need(b->out(), DataType::Bool, concat(op, " gives Bool"));
    r.needAll(DataType::Bool, concat(op, " takes Bool operands"));
    return;
  }
  if (isComparison(t)) {
    r.need(b->out(), DataType::Bool, concat(op, " gives Bool"));
    // The operands meet in one dtype: a tensor's when there is one.
    const Val* first =
        b->lhs()->isA<TensorView>() || !b->rhs()->isA<TensorView>() ? b->lhs() : b->rhs();
    r.needAll(first->dtype(), concat(op, " compares operands of one dtype, here ", first->dtype(),
                                     " (the dtype of ", first->toString(), ")"));
    return;
  }
  r.needAll(b->out()->dtype(), computesIn(op, b->out()));
  const DataType c = b->out()->dtype();
  if (c == DataType::Bool && !boolArithmetic(t)) {
    r.fail(concat(op, " is not defined for Bool"));
  }
  if (isBitwiseOp(t) && isFloatingType(c)) {
    r.fail(concat(op, " takes integers", boolArithmetic(t) ? " or Bool" : "", ", not ", c));
  }
  if (t == BinaryOpType::Atan2 && !isFloatingType(c)) {
    r.fail(concat("atan2 computes in a floating dtype, not ", c));
  }
  if (t == BinaryOpType::Nextafter && c != DataType::Float32 && c != DataType::Float64) {
    r.fail(concat("nextafter computes in f32 or f64, not ", c));
  }
}

void ternaryRule(const TernaryOp* e, DtypeRule& r) {
  const std::string_view op = opTypeName(e->opType());
  const Val* out = e->output(0);
  if (isComplexType(out->dtype()) && !isComplexOp(e->opType())) {
    r.fail(concat(op, " is not defined for complex values (", out->toString(), " is ", out->dtype(),
                  ")"));
    return;
  }
  if (e->opType() == TernaryOpType::Where) {
    r.need(e->input(0), DataType::Bool, "the condition of where is Bool");
    r.need(e->input(1), out->dtype(), computesIn(op, out));
    r.need(e->input(2), out->dtype(), computesIn(op, out));
    return;
  }
  r.needAll(out->dtype(), computesIn(op, out));
  if (e->opType() == TernaryOpType::Lerp && !isFloatingType(out->dtype())) {
    r.fail(concat("lerp computes in a floating dtype, not ", out->dtype()));
  }
}

void reductionRule(const ReductionOp* red, DtypeRule& r) {
  const std::string_view op = opTypeName(red->opType());
  const DataType c = red->out()->dtype();
  r.need(red->in(), c, computesIn(op, red->out()));
  r.need(red->init(), c, computesIn(op, red->out()));
  if (isComplexType(c) && !isComplexOp(red->opType())) {
    r.fail(concat(op, " is not defined for complex values (they have no order)"));
  }
  const bool accumulates =
      red->opType() == ReductionOpType::Sum || red->opType() == ReductionOpType::Prod;
  const bool narrow_int = isIntegralType(c) && dataTypeSize(c) < 8;
  if (accumulates && (isReducedPrecision(c) || narrow_int)) {
    r.fail(concat(op, " accumulates in ", c, ", which loses the sum on the way: ops::", op,
                  " accumulates ",
                  isReducedPrecision(c) ? "16- and 8-bit floats in f32"
                                        : "integers narrower than 64 bits in i64",
                  " (cast the input first, and the result back)"));
  }
}

void welfordRule(const WelfordOp* w, DtypeRule& r) {
  const DataType c = w->outAvg()->dtype();
  if (c != DataType::Float32 && c != DataType::Float64) {
    r.fail(concat("welford computes in f32 or f64, not ", c, " (the dtype of ",
                  w->outAvg()->toString(), ")"));
  }
  const std::string why =
      concat("welford computes its avg and m2 in ", c, ", the dtype of ", w->outAvg()->toString());
  for (const Val* v : std::initializer_list<const Val*>{w->outM2(), w->inAvg(), w->inM2(),
                                                        w->initAvg(), w->initM2()}) {
    r.need(v, c, why);
  }
  const std::string count = "welford counts in i64";
  for (const Val* v : std::initializer_list<const Val*>{w->outN(), w->inN(), w->initN()}) {
    r.need(v, DataType::Int64, count);
  }
}

// Random numbers are floating; seed and offset are 64-bit patterns, the parameters doubles.
void rngRule(const RngOp* rng, DtypeRule& r) {
  const DataType c = rng->out()->dtype();
  if (!isFloatingType(c)) {
    r.fail(concat(rng->opName(), " makes floating-point values, not ", c, " (the dtype of ",
                  rng->out()->toString(), ")"));
  }
  const std::string key = concat(rng->opName(), " takes its seed and offset as i64");
  r.need(rng->seed(), DataType::Int64, key);
  r.need(rng->offset(), DataType::Int64, key);
  const std::string param = concat(rng->opName(), " takes its parameters as f64");
  r.need(rng->param0(), DataType::Float64, param);
  r.need(rng->param1(), DataType::Float64, param);
  if (!rng->hasIndexOffsets()) return;
  const size_t rank = TensorDomain::noReductions(rng->out()->logical()).size();
  if (rng->indexOffsets().size() != rank) {
    r.fail(concat(rng->opName(), " has ", rng->indexOffsets().size(),
                  " index offsets and global extents, but ", rng->out()->toString(), " has ",
                  rank, " dims (one each per dim)"));
  }
  const std::string index = concat(rng->opName(), " takes its index offsets and global extents "
                                   "as index scalars");
  for (Scalar* o : rng->indexOffsets()) r.need(o, kIndexType, index);
  for (Scalar* g : rng->globalExtents()) r.need(g, kIndexType, index);
}

// A scan keeps its dtype; a sum or product keeps it only where it does not wrap or round away
// (ops::cumsum and cumprod take bools and i32 in i64, as the reductions do).
void scanRule(const ScanOp* scan, DtypeRule& r) {
  const DataType c = scan->out()->dtype();
  r.need(scan->in(), c, computesIn(scan->opName(), scan->out()));
  const bool accumulates =
      scan->opType() == ReductionOpType::Sum || scan->opType() == ReductionOpType::Prod;
  if (accumulates && ((isIntegralType(c) && dataTypeSize(c) < 8) || isBooleanType(c))) {
    r.fail(concat(scan->opName(), " accumulates in ", c, ", which wraps or saturates: ops::",
                  scan->opName(),
                  " takes bools and integers narrower than 64 bits in i64 (cast the input first)"));
  }
}

// ---- Indexing ops -----------------------------------------------------------------------------

// Constant extent of a (non-expanded) ID; nullopt when symbolic.
std::optional<int64_t> constExtent(const IterDomain* id) {
  return id->isBroadcast() && !id->hasExpandedExtent() ? std::optional<int64_t>(1)
                                                       : id->logicalExtent()->constInt();
}

// Output ID `cid` lines up with operand ID `pid`: no reductions, and a broadcast only over one.
std::optional<std::string> lineUpProblem(const Expr* e, const TensorView* p, const TensorView* c,
                                         const IterDomain* pid, const IterDomain* cid) {
  return pairProblem(e, p, c, pid, cid);
}

// The ranks, dims and dtypes of index_select, gather / take_along_axis and scatter
// (docs/ops.md, "Indexing"): the positional line-up of iterTypeProblem does not hold for them.
std::optional<std::string> indexingProblem(const Expr* e) {
  const TensorView* out = e->output(0)->as<TensorView>();
  const std::vector<IterDomain*> o = TensorDomain::noReductions(out->logical());
  for (IterDomain* id : out->logical()) {
    if (id->isReduction()) return pairProblem(e, out, out, id, id);
  }
  auto dims = [](const Val* v) {
    return TensorDomain::noReductions(v->as<TensorView>()->logical());
  };
  const TensorView* index = e->input(1)->as<TensorView>();
  if (!isIntegralType(index->dtype())) {
    return concat(quoted(e), ": the index ", index->toString(), " is ", index->dtype(),
                  "; an index is i32 or i64");
  }
  const TensorView* data = e->input(0)->as<TensorView>();
  // An operand read at indexed positions (from global memory) is no operand read in the
  // output's loops too.
  const auto& ins = e->inputs();
  for (size_t a = 0; a < ins.size(); ++a) {
    for (size_t b = 0; b < ins.size(); ++b) {
      const bool indexed_a = e->isA<ScatterOp>() ? a > 0 : a == 0;
      const bool indexed_b = e->isA<ScatterOp>() ? b > 0 : b == 0;
      if (ins[a] == ins[b] && indexed_a && !indexed_b) {
        return concat(quoted(e), ": ", ins[a]->toString(), " is both read at indexed positions "
                      "and in the output's loops; copy it (set) for one of the roles");
      }
    }
  }
  const std::vector<IterDomain*> l = dims(data);
  const std::vector<IterDomain*> x = dims(index);
  int64_t dim = 0;
  if (auto* is = e->dynCast<IndexSelectOp>()) dim = is->dim();
  if (auto* g = e->dynCast<GatherOp>()) dim = g->dim();
  if (auto* sc = e->dynCast<ScatterOp>()) dim = sc->dim();
  if (dim < 0 || dim >= int64_t(l.size())) {
    return concat(quoted(e), ": dim ", dim, " is out of range for ", data->toString(), " of rank ",
                  l.size());
  }
  const auto d0 = size_t(dim);
  if (e->isA<IndexSelectOp>()) {
    // The index has the output's rank: its own dims at [dim, dim + span), broadcast elsewhere.
    if (x.size() != o.size() || o.size() + 1 < l.size()) {
      return concat(quoted(e), ": ", out->toString(), " has ", o.size(), " dims and the index ",
                    index->toString(), " ", x.size(), "; both need at least the ", l.size() - 1,
                    " dims of ", data->toString(), " other than dim ", dim);
    }
    const size_t span = o.size() + 1 - l.size();
    for (size_t i = 0; i < o.size(); ++i) {
      const bool in_span = i >= d0 && i < d0 + span;
      if (!in_span && (!x[i]->isBroadcast() || x[i]->hasExpandedExtent())) {
        return concat(quoted(e), ": the index ", index->toString(), "'s ID ", idName(x[i]),
                      " (position ", i, ") lines up with ", data->toString(),
                      " and must be a broadcast ID of size 1");
      }
      const TensorView* p = in_span ? index : data;
      const IterDomain* pid = in_span ? x[i] : l[i < d0 ? i : i + 1 - span];
      if (auto r = lineUpProblem(e, p, out, pid, o[i])) return r;
    }
  } else {
    const TensorView* shaped = e->isA<GatherOp>() ? index : data;
    for (Val* in : e->inputs()) {
      if (dims(in).size() != l.size()) {
        return concat(quoted(e), ": ", in->toString(), " has ", dims(in).size(), " dims and ",
                      data->toString(), " has ", l.size(), "; ", e->opName(),
                      " needs operands of one rank");
      }
    }
    if (o.size() != l.size()) {
      return concat(quoted(e), ": ", out->toString(), " has ", o.size(), " dims, ",
                    shaped->toString(), " has ", l.size());
    }
    const std::vector<IterDomain*> sh = dims(shaped);
    for (size_t i = 0; i < o.size(); ++i) {
      if (auto r = lineUpProblem(e, shaped, out, sh[i], o[i])) return r;
    }
    // Index extents fit the tensors they index (constant extents only; run time checks the rest).
    const auto* g = e->dynCast<GatherOp>();
    for (size_t i = 0; i < l.size(); ++i) {
      auto xi = constExtent(x[i]);
      if (!xi) continue;
      if (i != d0) {
        auto li = constExtent(l[i]);
        const bool equal_needed = g != nullptr && g->exact() && !x[i]->isBroadcast();
        if (li && (equal_needed ? *xi != *li : *xi > *li)) {
          return concat(quoted(e), ": the index ", index->toString(), " has extent ", *xi,
                        " at dim ", i, ", ", data->toString(), " has ", *li, " (",
                        equal_needed ? "equal extents" : "at most that", " needed off dim ", dim,
                        ")");
        }
      }
      if (auto* sc = e->dynCast<ScatterOp>()) {
        auto si = constExtent(dims(sc->src())[i]);
        if (si && *xi > *si) {
          return concat(quoted(e), ": the index ", index->toString(), " has extent ", *xi,
                        " at dim ", i, ", the source ", sc->src()->toString(), " only ", *si);
        }
      }
    }
  }
  DtypeRule r(e);
  const std::string why =
      concat(e->opName(), " does not convert: ", out->toString(), " is ", out->dtype());
  r.need(data, out->dtype(), why);
  if (auto* sc = e->dynCast<ScatterOp>()) r.need(sc->src(), out->dtype(), why);
  return r.take();
}

// ---- Sorting ----------------------------------------------------------------------------------

// An extent known to equal `k`: the same Scalar, or constants of one value.
bool sameExtent(const Scalar* a, const Scalar* b) {
  if (a == b) return true;
  auto ca = a->constInt();
  auto cb = b->constInt();
  return ca.has_value() && cb.has_value() && *ca == *cb;
}

// argsort and topk (docs/ops.md, "Sorting"): outputs of the input's rank lining up with it off
// the sort dim, the sort dim's extent (the input's for argsort, k for topk), the dtypes.
std::optional<std::string> sortProblem(const Expr* e) {
  const auto* in = e->input(0)->as<TensorView>();
  const std::vector<IterDomain*> p = TensorDomain::noReductions(in->logical());
  const int64_t dim = sortDim(e);
  if (dim < 0 || dim >= int64_t(p.size())) {
    return concat(quoted(e), ": dim ", dim, " is out of range for ", in->toString(), " of rank ",
                  p.size());
  }
  const auto d = size_t(dim);
  const auto* topk = e->dynCast<TopKOp>();
  for (Val* o : e->outputs()) {
    const auto* out = o->as<TensorView>();
    const std::vector<IterDomain*>& c = out->domain()->maybeRoot();
    if (c.size() != p.size()) {
      return concat(quoted(e), ": ", out->toString(), " has ", c.size(), " dims, ", in->toString(),
                    " has ", p.size());
    }
    for (size_t i = 0; i < c.size(); ++i) {
      if (auto r = pairProblem(e, in, out, p[i], c[i])) return r;
    }
    const Scalar* want = topk != nullptr ? topk->k() : p[d]->logicalExtent();
    if (!sameExtent(c[d]->logicalExtent(), want)) {
      return concat(quoted(e), ": ", out->toString(), "'s ID ", idName(c[d]), " along dim ", dim,
                    " has the extent ", c[d]->logicalExtent()->toString(), "; it must be ",
                    topk != nullptr ? "k (" : "the input's (", want->toString(), ")");
    }
  }
  DtypeRule r(e);
  if (isComplexType(in->dtype())) {
    r.fail(concat(e->opName(), " orders real values; ", in->toString(), " is ", in->dtype(),
                  " (complex values have no order)"));
  }
  const std::string index = concat(e->opName(), " gives indices as i64");
  if (topk != nullptr) {
    r.need(topk->values(), in->dtype(),
           concat("topk's values have the dtype of its input ", in->toString()));
    r.need(topk->indices(), DataType::Int64, index);
    r.need(topk->k(), DataType::Int64, "topk takes k as i64");
  } else {
    r.need(e->output(0), DataType::Int64, index);
  }
  return r.take();
}

// Matmul and linear multiply one floating dtype (accumulating in f32) and give it back.
void matmulRule(const Expr* e, DtypeRule& r) {
  const DataType c = e->output(0)->dtype();
  if (c != DataType::Float32 && c != DataType::BFloat16 && c != DataType::Float16) {
    r.fail(concat(e->opName(), " computes in f32, bf16 or f16, not ", c, " (the dtype of ",
                  e->output(0)->toString(), ")"));
  }
  r.needAll(c, concat(e->opName(), " takes operands of its output's dtype ", c));
}

std::optional<std::string> dtypeProblem(const Expr* e) {
  DtypeRule r(e);
  if (const auto* u = e->dynCast<UnaryOp>()) {
    unaryRule(u, r);
  } else if (const auto* b = e->dynCast<BinaryOp>()) {
    binaryRule(b, r);
  } else if (const auto* t = e->dynCast<TernaryOp>()) {
    ternaryRule(t, r);
  } else if (const auto* red = e->dynCast<ReductionOp>()) {
    reductionRule(red, r);
  } else if (const auto* w = e->dynCast<WelfordOp>()) {
    welfordRule(w, r);
  } else if (const auto* rng = e->dynCast<RngOp>()) {
    rngRule(rng, r);
  } else if (e->isA<IotaOp>() && isComplexType(e->output(0)->dtype())) {
    r.fail(concat("iota makes integers or floats, not ", e->output(0)->dtype()));
  } else if (const auto* io = e->dynCast<IotaOp>(); io != nullptr && io->indexOffset()) {
    const Val* out = e->output(0);
    const std::string why = concat("iota does not convert: ", out->toString(), " is ",
                                   out->dtype());
    r.need(io->start(), out->dtype(), why);
    r.need(io->step(), out->dtype(), why);
    r.need(io->indexOffset(), kIndexType, "iota takes its index offset as an index scalar");
  } else if (const auto* scan = e->dynCast<ScanOp>()) {
    scanRule(scan, r);
  } else if (e->isA<MatmulOp>() || e->isA<LinearOp>()) {
    matmulRule(e, r);
  } else if (isAttentionExpr(e)) {
    // attentionProblem checks every dtype.
  } else if (!e->outputs().empty()) {
    // Shape ops, pad, cat and the factories move values without converting them: every input
    // (a pad or full value, an iota start and step) has the output's dtype.
    const Val* out = e->output(0);
    r.needAll(out->dtype(),
              concat(e->opName(), " does not convert: ", out->toString(), " is ", out->dtype()));
  }
  return r.take();
}

}  // namespace

std::optional<std::string> mathExprProblem(const Expr* e) {
  if (const auto* scan = e->dynCast<ScanOp>()) {
    const size_t rank = TensorDomain::noReductions(scan->out()->logical()).size();
    if (scan->dim() < 0 || size_t(scan->dim()) >= rank) {
      return concat(quoted(e), ": the scan dim ", scan->dim(), " is out of range for ",
                    scan->out()->toString(), " of rank ", rank);
    }
  }
  if (isIndexingExpr(e)) return indexingProblem(e);
  if (isSortExpr(e)) return sortProblem(e);
  if (auto p = iterTypeProblem(e)) return p;
  return dtypeProblem(e);
}

std::optional<std::string> transformProblem(const Expr* e) {
  // The type each output takes from the inputs (as IterDomain::split, merge and resize give it),
  // or nullopt when the inputs do not combine.
  std::optional<IterType> want;
  if (const auto* s = e->dynCast<Split>()) {
    want = s->in()->iterType();  // both halves keep the type of what they split
  } else if (const auto* m = e->dynCast<Merge>()) {
    // A broadcast takes the other's type; a reduction merges only with reductions and
    // broadcasts; other mixes are Iteration.
    const IterDomain* outer = m->outer();
    const IterDomain* inner = m->inner();
    if (outer->iterType() == inner->iterType()) {
      want = outer->iterType();
    } else if (outer->isBroadcast()) {
      want = inner->iterType();
    } else if (inner->isBroadcast()) {
      want = outer->iterType();
    } else if (!outer->isReduction() && !inner->isReduction()) {
      want = IterType::Iteration;
    }
  } else if (e->isA<Resize>()) {
    want = IterType::Iteration;
  } else {
    return std::nullopt;
  }
  for (Val* v : e->outputs()) {
    const auto* out = v->as<IterDomain>();
    if (want == out->iterType()) continue;
    // rFactor decides per product which side reduces it: Iteration and Reduction trade places.
    const bool reduction_side =
        (!want || *want == IterType::Reduction || *want == IterType::Iteration) &&
        (out->isReduction() || out->isIteration());
    if (out->isRFactorProduct() && reduction_side) continue;
    if (!want) {
      const auto* m = e->as<Merge>();
      return concat(quoted(e), ": ", idName(m->outer()), " and ", idName(m->inner()),
                    " do not merge (a reduction ID merges only with reductions or broadcasts)");
    }
    return concat(quoted(e), ": ", idName(out), " must be ", kindName(*want), " ID (write ",
                  iterLetter(*want), out->name(), ")");
  }
  return std::nullopt;
}

std::optional<std::string> extentProblem(const Expr* e) {
  // Compares constants only: a symbolic extent names a scalar the text defines, and localized
  // (sharded) fusions change extents after the transforms were built.
  auto constOf = [](const Scalar* s) -> std::optional<int64_t> {
    return s == nullptr ? std::nullopt : s->constInt();
  };
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  // `what` of `id` (its extent or expanded extent) must be `want` where both are constants.
  auto check = [&](const IterDomain* id, const Scalar* got_s, std::optional<int64_t> want,
                   std::string_view what) -> std::optional<std::string> {
    std::optional<int64_t> got = constOf(got_s);
    if (!want || !got || *want == *got) return std::nullopt;
    return concat(quoted(e), ": the ", what, " of ", idName(id), " must be ", *want, ", not ",
                  *got);
  };
  if (const auto* s = e->dynCast<Split>()) {
    std::optional<int64_t> f = constOf(s->factor());
    if (f && *f <= 0) return concat(quoted(e), ": the split factor must be positive, not ", *f);
    const IterDomain* in = s->in();
    const IterDomain* factor_side = s->innerSplit() ? s->inner() : s->outer();
    const IterDomain* rest_side = s->innerSplit() ? s->outer() : s->inner();
    auto rest = [&](const Scalar* n) -> std::optional<int64_t> {
      std::optional<int64_t> c = constOf(n);
      if (!c || !f) return std::nullopt;
      return ceilDiv(*c, *f);
    };
    if (auto p = check(factor_side, factor_side->extent(), f, "extent")) return p;
    if (auto p = check(rest_side, rest_side->extent(), rest(in->extent()), "extent")) return p;
    if (in->hasExpandedExtent()) {
      if (auto p = check(factor_side, factor_side->expandedExtent(), f, "expanded extent")) {
        return p;
      }
      if (auto p = check(rest_side, rest_side->expandedExtent(), rest(in->expandedExtent()),
                         "expanded extent")) {
        return p;
      }
    }
    return std::nullopt;
  }
  if (const auto* m = e->dynCast<Merge>()) {
    const IterDomain* out = m->out();
    auto product = [&](const Scalar* a, const Scalar* b) -> std::optional<int64_t> {
      std::optional<int64_t> x = constOf(a), y = constOf(b);
      if (!x || !y) return std::nullopt;
      return *x * *y;
    };
    std::optional<int64_t> logical =
        product(m->outer()->logicalExtent(), m->inner()->logicalExtent());
    if (!out->isBroadcast()) return check(out, out->extent(), logical, "extent");
    if (auto p = check(out, out->extent(), product(m->outer()->extent(), m->inner()->extent()),
                       "extent")) {
      return p;
    }
    if (out->hasExpandedExtent())
      return check(out, out->expandedExtent(), logical, "expanded extent");
    return std::nullopt;
  }
  if (const auto* r = e->dynCast<Resize>()) {
    std::optional<int64_t> l = constOf(r->left()), n = constOf(r->in()->logicalExtent()),
                           rt = constOf(r->right());
    std::optional<int64_t> want;
    if (l && n && rt) want = *l + *n + *rt;
    return check(r->out(), r->out()->extent(), want, "extent");
  }
  return std::nullopt;
}

}  // namespace loom::ir
