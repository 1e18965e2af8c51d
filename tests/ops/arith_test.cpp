// SPDX-License-Identifier: Apache-2.0
// Pointwise ops: output shapes and broadcasting, dtypes, the exprs they build, and user errors.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DT = DataType;
using ArithTest = OpsTest;

// Size-1 (Broadcast) dims stretch; the output gets fresh IDs, Iteration where any operand has one.
TEST_F(ArithTest, BroadcastSizeOne) {
  auto* a = input({4, 1, 6});
  auto* b = input({1, 5, 6});
  auto* c = add(a, b);
  EXPECT_EQ(sizes(c), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(types(c), "iter,iter,iter");
  EXPECT_TRUE(idsDisjoint({a, b, c}));
  auto* d = add(input({1, 1}), input({1, 1}));
  EXPECT_EQ(types(d), "bcast,bcast");
  verifyOutputs({c, d});
}

// Ranks align from the right; the lower-rank operand gets an explicit BroadcastOp first.
TEST_F(ArithTest, RankDifference) {
  auto* a = input({2, 3, 4});
  auto* b = input({4});
  auto* c = mul(a, b);
  EXPECT_EQ(sizes(c), (std::vector<int64_t>{2, 3, 4}));
  auto* op = c->definition()->as<ir::BinaryOp>();
  auto* rhs = op->rhs()->as<TensorView>();
  ASSERT_NE(rhs->definition(), nullptr);
  auto* bop = rhs->definition()->as<ir::BroadcastOp>();
  EXPECT_EQ(bop->in(), b);
  EXPECT_EQ(bop->isBroadcastDim(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(types(rhs), "bcast,bcast,iter");
  verifyOutputs({c});
}

// A symbolic extent yields to a constant one at the same position.
TEST_F(ArithTest, PreferConstantExtent) {
  auto* a = input({-1, 8});
  auto* b = input({5, -1});
  auto* c = add(a, b);
  EXPECT_EQ(sizes(c), (std::vector<int64_t>{5, 8}));
  auto* d = add(a, a);
  EXPECT_EQ(sizes(d), (std::vector<int64_t>{-1, 8}));
  EXPECT_EQ(d->logical()[0]->extent(), a->logical()[0]->extent());
  verifyOutputs({c, d});
}

// Expanded broadcasts keep their expanded extent when every operand broadcasts there.
TEST_F(ArithTest, KeepsExpandedExtent) {
  auto* a = expand(input({1, 4}), {7, -1});
  auto* b = input({1, 1});
  auto* c = add(a, b);
  EXPECT_EQ(types(c), "bcast,iter");
  ASSERT_TRUE(c->logical()[0]->hasExpandedExtent());
  EXPECT_EQ(c->logical()[0]->expandedExtent()->constInt(), 7);
  verifyOutputs({c});
}

// Conflicting constant sizes are a UserError naming both tensors, the dimension and the sizes.
TEST_F(ArithTest, SizeMismatchError) {
  auto* a = input({2, 3});
  auto* b = input({2, 4});
  std::string msg = userError([&] { add(a, b); });
  EXPECT_HAS(msg, a->toString());
  EXPECT_HAS(msg, b->toString());
  EXPECT_HAS(msg, "dimension 1");
  EXPECT_HAS(msg, "(3 vs 4)");
  // An expanded broadcast conflicts like an ordinary dimension.
  auto* e = expand(input({1}), {5});
  EXPECT_HAS(userError([&] { add(e, input({6})); }), "(5 vs 6)");
}

// Pointwise ops need at least one tensor operand.
TEST_F(ArithTest, NoTensorError) {
  EXPECT_HAS(userError([&] { add(1.0, 2); }), "at least one operand must be a tensor");
}

// Floating unary functions lift integers to Float32; neg/abs/... keep integer types.
TEST_F(ArithTest, UnaryDtypes) {
  auto* i = input({3}, DT::Int32);
  auto* h = input({3}, DT::BFloat16);
  for (auto* out : {exp(i), log(i), sqrt(i), rsqrt(i), sin(i), tanh(i), sigmoid(i), silu(i),
                    erf(i), exp2(i), log2(i), reciprocal(i), cos(i)}) {
    EXPECT_EQ(out->dtype(), DT::Float32);
  }
  for (auto* out : {neg(i), abs(i), relu(i), floor(i), ceil(i), round(i), sign(i)}) {
    EXPECT_EQ(out->dtype(), DT::Int32);
  }
  EXPECT_EQ(exp(h)->dtype(), DT::Float32);
  EXPECT_EQ(neg(h)->dtype(), DT::Float32);
  EXPECT_EQ(exp(input({3}, DT::Float64))->dtype(), DT::Float64);
  auto* e = exp(i);
  EXPECT_EQ(e->definition()->as<ir::UnaryOp>()->opType(), ir::UnaryOpType::Exp);
  EXPECT_EQ(e->definition()->as<ir::UnaryOp>()->in()->dtype(), DT::Float32);
  verifyOutputs({e});
}

// isNan, isInf, logicalNot, comparisons and logical ops return Bool; logical ops cast to Bool.
TEST_F(ArithTest, PredicatesReturnBool) {
  auto* x = input({3});
  auto* i = input({3}, DT::Int64);
  for (auto* out : {isNan(x), isInf(x), logicalNot(x), eq(x, 1.0), ne(x, i), lt(x, x), le(i, 2),
                    gt(x, 0), ge(i, x), logicalAnd(x, i), logicalOr(i, true)}) {
    EXPECT_EQ(out->dtype(), DT::Bool);
  }
  auto* la = logicalAnd(x, i);
  auto* op = la->definition()->as<ir::BinaryOp>();
  EXPECT_EQ(op->lhs()->dtype(), DT::Bool);
  EXPECT_EQ(op->rhs()->dtype(), DT::Bool);
  auto* ln = logicalNot(i);
  EXPECT_EQ(ln->definition()->as<ir::UnaryOp>()->in()->dtype(), DT::Bool);
  verifyOutputs({la, ln});
}

// neg of a Bool tensor is a UserError.
TEST_F(ArithTest, NegBoolError) {
  auto* b = input({3}, DT::Bool);
  std::string msg = userError([&] { neg(b); });
  EXPECT_HAS(msg, b->toString());
  EXPECT_HAS(msg, "logicalNot");
}

// cast to the same type is the identity; otherwise one UnaryOp Cast with fresh IDs.
TEST_F(ArithTest, Cast) {
  auto* x = input({2, 1});
  EXPECT_EQ(cast(x, DT::Float32), x);
  auto* y = cast(x, DT::BFloat16);
  EXPECT_EQ(y->dtype(), DT::BFloat16);
  EXPECT_EQ(types(y), "iter,bcast");
  EXPECT_EQ(y->definition()->as<ir::UnaryOp>()->opType(), ir::UnaryOpType::Cast);
  EXPECT_TRUE(idsDisjoint({x, y}));
  verifyOutputs({y});
}

// where: Bool condition, values promoted together, all three broadcast to the output.
TEST_F(ArithTest, Where) {
  auto* c = input({4, 1}, DT::Bool);
  auto* a = input({5}, DT::Int32);
  auto* w = where(c, a, 0.5);
  EXPECT_EQ(w->dtype(), DT::Float32);
  EXPECT_EQ(sizes(w), (std::vector<int64_t>{4, 5}));
  auto* op = w->definition()->as<ir::TernaryOp>();
  EXPECT_EQ(op->opType(), ir::TernaryOpType::Where);
  EXPECT_EQ(op->a()->dtype(), DT::Bool);
  EXPECT_EQ(op->b()->as<TensorView>()->rank(), 2);
  verifyOutputs({w});
}

// where with a non-Bool condition is a UserError.
TEST_F(ArithTest, WhereConditionError) {
  auto* c = input({4});
  std::string msg = userError([&] { where(c, 1.0, 2.0); });
  EXPECT_HAS(msg, "must be Bool");
  EXPECT_HAS(msg, c->toString());
}

// clamp and lerp build one TernaryOp each.
TEST_F(ArithTest, ClampLerp) {
  auto* x = input({3}, DT::Float16);
  auto* c = clamp(x, 0.0, 1.0);
  EXPECT_EQ(c->definition()->as<ir::TernaryOp>()->opType(), ir::TernaryOpType::Clamp);
  EXPECT_EQ(c->dtype(), DT::Float32);
  auto* i = input({3}, DT::Int32);
  EXPECT_EQ(clamp(i, 0, 5)->dtype(), DT::Int32);
  auto* l = lerp(input({3}), input({2, 3}), 0.25);
  EXPECT_EQ(l->definition()->as<ir::TernaryOp>()->opType(), ir::TernaryOpType::Lerp);
  EXPECT_EQ(sizes(l), (std::vector<int64_t>{2, 3}));
  verifyOutputs({c, l});
}

// gelu builds erf (exact) or tanh (approximate) from primitives, computing in Float32.
TEST_F(ArithTest, Gelu) {
  auto* x = input({8}, DT::BFloat16);
  auto has = [&](TensorView* out, ir::UnaryOpType t) {
    ir::Fusion* f = &fusion_;
    fusion_.addOutput(out);
    bool found = false;
    for (auto* e : f->exprs()) {
      if (auto* u = e->dynCast<ir::UnaryOp>(); u && u->opType() == t) found = true;
    }
    return found;
  };
  auto* exact = gelu(x);
  EXPECT_EQ(exact->dtype(), DT::Float32);
  EXPECT_TRUE(has(exact, ir::UnaryOpType::Erf));
  auto* approx = gelu(x, GeluApproximation::Tanh);
  EXPECT_TRUE(has(approx, ir::UnaryOpType::Tanh));
  verifyOutputs({exact, approx});
}

// Binary ops build the matching BinaryOp; maximum/minimum map to Max/Min.
TEST_F(ArithTest, BinaryOpTypes) {
  auto* x = input({3});
  EXPECT_EQ(sub(x, 1)->definition()->as<ir::BinaryOp>()->opType(), ir::BinaryOpType::Sub);
  EXPECT_EQ(fmod(x, 2.0)->definition()->as<ir::BinaryOp>()->opType(), ir::BinaryOpType::Fmod);
  EXPECT_EQ(maximum(x, x)->definition()->as<ir::BinaryOp>()->opType(), ir::BinaryOpType::Max);
  EXPECT_EQ(minimum(1, x)->definition()->as<ir::BinaryOp>()->opType(), ir::BinaryOpType::Min);
  // A number on the left stays on the left.
  auto* m = minimum(1, x)->definition()->as<ir::BinaryOp>();
  EXPECT_TRUE(m->lhs()->isA<Scalar>());
}

}  // namespace
}  // namespace loom::ops::testing
