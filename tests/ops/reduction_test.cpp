// SPDX-License-Identifier: Apache-2.0
// Reductions and Welford: output domains, dtypes, init values, keepdim, statistics, user errors.
#include <cmath>

#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DT = DataType;
using ReductionTest = OpsTest;

// Reduced IDs become Reduction IDs in place; the others are fresh clones.
TEST_F(ReductionTest, SumDomain) {
  auto* x = input({2, 3, 4});
  auto* s = sum(x, {1});
  EXPECT_EQ(types(s), "iter,red,iter");
  EXPECT_EQ(sizes(s), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(s->rank(), 2);
  EXPECT_EQ(s->logical()[1]->extent()->constInt(), 3);
  EXPECT_TRUE(idsDisjoint({x, s}));
  auto* op = s->definition()->as<ir::ReductionOp>();
  EXPECT_EQ(op->opType(), ir::ReductionOpType::Sum);
  EXPECT_EQ(op->init()->constDouble(), 0.0);
  EXPECT_EQ(op->init()->dtype(), DT::Float32);
  verifyOutputs({s});
}

// Negative axes count from the end; an empty list reduces everything.
TEST_F(ReductionTest, AxesNormalization) {
  auto* x = input({2, 3, 4});
  EXPECT_EQ(types(sum(x, {-1, 0})), "red,iter,red");
  EXPECT_EQ(types(sum(x, {})), "red,red,red");
  EXPECT_EQ(sum(x, {})->rank(), 0);
}

// Sum/prod accumulate bools and integers in Int64 and half types in Float32; max/min keep dtype.
TEST_F(ReductionTest, Dtypes) {
  EXPECT_EQ(sum(input({3}, DT::Bool), {0})->dtype(), DT::Int64);
  EXPECT_EQ(sum(input({3}, DT::Int32), {0})->dtype(), DT::Int64);
  EXPECT_EQ(prod(input({3}, DT::Float16), {0})->dtype(), DT::Float32);
  EXPECT_EQ(sum(input({3}, DT::Float64), {0})->dtype(), DT::Float64);
  EXPECT_EQ(max(input({3}, DT::BFloat16), {0})->dtype(), DT::BFloat16);
  EXPECT_EQ(min(input({3}, DT::Int32), {0})->dtype(), DT::Int32);
  // The input is cast before the ReductionOp, so in and out agree.
  auto* s = sum(input({3}, DT::Int32), {0});
  EXPECT_EQ(s->definition()->as<ir::ReductionOp>()->in()->dtype(), DT::Int64);
}

// Init values are the identities of each op, typed as the output.
TEST_F(ReductionTest, InitValues) {
  auto init = [](TensorView* tv) { return tv->definition()->as<ir::ReductionOp>()->init(); };
  EXPECT_EQ(init(prod(input({3}), {0}))->constDouble(), 1.0);
  EXPECT_EQ(init(max(input({3}), {0}))->constDouble(), -INFINITY);
  EXPECT_EQ(init(min(input({3}), {0}))->constDouble(), INFINITY);
  EXPECT_EQ(init(max(input({3}, DT::Int64), {0}))->constInt(), INT64_MIN);
  EXPECT_EQ(init(min(input({3}, DT::Int64), {0}))->constInt(), INT64_MAX);
  EXPECT_EQ(init(max(input({3}, DT::Int32), {0}))->constInt(), INT32_MIN);
  auto* mb = init(max(input({3}, DT::Bool), {0}));
  EXPECT_EQ(mb->dtype(), DT::Bool);
  EXPECT_EQ(std::get<bool>(mb->value()), false);
  EXPECT_EQ(std::get<bool>(init(min(input({3}, DT::Bool), {0}))->value()), true);
}

// keepdim re-inserts Broadcast dims at the reduced positions through a BroadcastOp.
TEST_F(ReductionTest, Keepdim) {
  auto* x = input({2, 3, 4});
  auto* s = sum(x, {0, 2}, /*keepdim=*/true);
  EXPECT_EQ(types(s), "bcast,iter,bcast");
  EXPECT_EQ(sizes(s), (std::vector<int64_t>{1, 3, 1}));
  auto* b = s->definition()->as<ir::BroadcastOp>();
  EXPECT_EQ(b->isBroadcastDim(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(types(b->in()), "red,iter,red");
  verifyOutputs({s});
}

// Reducing an expanded broadcast uses its expanded extent; a plain broadcast reduces as size 1.
TEST_F(ReductionTest, ReduceBroadcast) {
  auto* e = expand(input({1, 4}), {6, -1});
  auto* s = sum(e, {0});
  EXPECT_EQ(s->logical()[0]->extent()->constInt(), 6);
  EXPECT_FALSE(s->logical()[0]->hasExpandedExtent());
  auto* t = max(input({1, 4}), {0});
  EXPECT_EQ(types(t), "red,iter");
  EXPECT_EQ(t->logical()[0]->extent()->constInt(), 1);
  verifyOutputs({s, t});
}

// Out-of-range and duplicate axes, and reducing a 0-D tensor over an axis, are UserErrors.
TEST_F(ReductionTest, AxisErrors) {
  auto* x = input({2, 3});
  std::string msg = userError([&] { sum(x, {2}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "dimension 2 is out of range");
  EXPECT_HAS(msg, "rank 2");
  msg = userError([&] { max(x, {1, -1}); });
  EXPECT_HAS(msg, "appears twice");
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "rank 2");
  auto* z = input({});
  msg = userError([&] { sum(z, {0}); });
  EXPECT_HAS(msg, "cannot reduce 0-D tensor");
  EXPECT_HAS(msg, z->toString());
  // Reducing a 0-D tensor over "all" (no) dimensions is the value itself.
  EXPECT_EQ(sum(z, {})->rank(), 0);
}

// welford: one WelfordOp with avg/m2 in the compute type and n in Int64, same shape, own IDs.
TEST_F(ReductionTest, Welford) {
  auto* x = input({4, 8}, DT::BFloat16);
  auto w = welford(x, {1});
  EXPECT_EQ(w.avg->dtype(), DT::Float32);
  EXPECT_EQ(w.m2->dtype(), DT::Float32);
  EXPECT_EQ(w.n->dtype(), DT::Int64);
  for (auto* tv : {w.avg, w.m2, w.n}) EXPECT_EQ(types(tv), "iter,red");
  EXPECT_TRUE(idsDisjoint({w.avg, w.m2, w.n, x}));
  auto* op = w.avg->definition()->as<ir::WelfordOp>();
  EXPECT_EQ(w.n->definition(), op);
  EXPECT_TRUE(op->hasRawInput());
  EXPECT_EQ(op->inAvg()->dtype(), DT::Float32);
  EXPECT_EQ(op->inN()->as<Scalar>()->constInt(), 1);
  EXPECT_EQ(op->initN()->constInt(), 0);
  EXPECT_EQ(op->initM2()->constDouble(), 0.0);
  EXPECT_EQ(welford(input({3}, DT::Float64), {0}).avg->dtype(), DT::Float64);
  verifyOutputs({w.avg, w.m2, w.n});
}

// mean divides the Float32 sum by the constant element count and casts back to the input type.
TEST_F(ReductionTest, Mean) {
  auto* x = input({4, 6}, DT::Float16);
  auto* m = mean(x, {0, 1});
  EXPECT_EQ(m->dtype(), DT::Float16);
  auto* div_out = m->definition()->as<ir::UnaryOp>()->in()->as<TensorView>();
  auto* d = div_out->definition()->as<ir::BinaryOp>();
  EXPECT_EQ(d->opType(), ir::BinaryOpType::Div);
  EXPECT_EQ(d->rhs()->as<Scalar>()->constDouble(), 24.0);
  EXPECT_EQ(mean(input({3}, DT::Int32), {0})->dtype(), DT::Float32);
  auto* k = mean(input({2, 3}), {1}, /*keepdim=*/true);
  EXPECT_EQ(sizes(k), (std::vector<int64_t>{2, 1}));
  verifyOutputs({m, k});
}

// With a symbolic extent, N is scalar math over the extents, cast to the compute type.
TEST_F(ReductionTest, MeanSymbolic) {
  auto* x = input({-1, 4});
  auto* m = mean(x, {0, 1});
  auto* d = m->definition()->as<ir::BinaryOp>();
  auto* n = d->rhs()->as<Scalar>();
  EXPECT_EQ(n->dtype(), DT::Float32);
  ASSERT_NE(n->definition(), nullptr);
  EXPECT_EQ(n->definition()->as<ir::UnaryOp>()->opType(), ir::UnaryOpType::Cast);
  verifyOutputs({m});
}

// variance divides by max(N - correction, 0), folded when N is constant.
TEST_F(ReductionTest, Variance) {
  auto* x = input({4, 6});
  auto* v = variance(x, {1});
  EXPECT_EQ(sizes(v), (std::vector<int64_t>{4}));
  auto* d = v->definition()->as<ir::BinaryOp>();
  EXPECT_EQ(d->rhs()->as<Scalar>()->constDouble(), 5.0);
  auto* v0 = variance(input({1}), {0}, 2.0);
  EXPECT_EQ(v0->definition()->as<ir::BinaryOp>()->rhs()->as<Scalar>()->constDouble(), 0.0);
  auto* k = variance(input({2, 3}, DT::BFloat16), {1}, 0.0, /*keepdim=*/true);
  EXPECT_EQ(k->dtype(), DT::BFloat16);
  EXPECT_EQ(sizes(k), (std::vector<int64_t>{2, 1}));
  verifyOutputs({v, v0, k});
}

// varMean uses one WelfordOp; symbolic N builds max(N - c, 0) as scalar exprs.
TEST_F(ReductionTest, VarMean) {
  auto* x = input({-1, 8}, DT::BFloat16);
  auto vm = varMean(x, {1}, 1.0, /*keepdim=*/true);
  EXPECT_EQ(vm.var->dtype(), DT::BFloat16);
  EXPECT_EQ(vm.mean->dtype(), DT::BFloat16);
  EXPECT_EQ(sizes(vm.var), (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ(types(vm.mean), "iter,bcast");
  auto* y = input({-1});
  auto vs = varMean(y, {0});
  auto* d = vs.var->definition()->as<ir::BinaryOp>();
  auto* denom = d->rhs()->as<Scalar>();
  ASSERT_NE(denom->definition(), nullptr);
  EXPECT_EQ(denom->definition()->as<ir::BinaryOp>()->opType(), ir::BinaryOpType::Max);
  EXPECT_TRUE(d->lhs()->definition()->isA<ir::WelfordOp>());
  verifyOutputs({vm.var, vm.mean, vs.var, vs.mean});
}

}  // namespace
}  // namespace loom::ops::testing
