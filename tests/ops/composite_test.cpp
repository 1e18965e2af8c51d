// SPDX-License-Identifier: Apache-2.0
// Composite ops: output shapes and dtypes (main output in the input dtype, statistics in Float32),
// and their user errors.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DT = DataType;
using CompositeTest = OpsTest;

bool hasExpr(ir::Fusion& f, const std::function<bool(ir::Expr*)>& pred) {
  for (auto* e : f.exprs()) {
    if (pred(e)) return true;
  }
  return false;
}

// softmax and logSoftmax keep the input shape and dtype and reduce with max then sum.
TEST_F(CompositeTest, Softmax) {
  auto* x = input({4, 16}, DT::BFloat16);
  auto* y = softmax(x, -1);
  EXPECT_EQ(y->dtype(), DT::BFloat16);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{4, 16}));
  auto* l = logSoftmax(x, 0);
  EXPECT_EQ(l->dtype(), DT::BFloat16);
  EXPECT_EQ(sizes(l), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(softmax(input({3}, DT::Int32), 0)->dtype(), DT::Float32);
  verifyOutputs({y, l});
  EXPECT_TRUE(hasExpr(fusion_, [](ir::Expr* e) {
    auto* r = e->dynCast<ir::ReductionOp>();
    return r && r->opType() == ir::ReductionOpType::Max && r->in()->dtype() == DT::Float32;
  }));
  EXPECT_HAS(userError([&] { softmax(x, 2); }), "out of range");
}

// layerNorm: y in the input dtype, mean and rstd Float32 with keepdim shape, one WelfordOp.
TEST_F(CompositeTest, LayerNorm) {
  auto* x = input({2, 3, 8}, DT::Float16);
  auto* w = input({3, 8}, DT::Float16);
  auto* b = input({3, 8}, DT::Float16);
  auto r = layerNorm(x, 2, w, b);
  EXPECT_EQ(r.y->dtype(), DT::Float16);
  EXPECT_EQ(sizes(r.y), (std::vector<int64_t>{2, 3, 8}));
  EXPECT_EQ(r.mean->dtype(), DT::Float32);
  EXPECT_EQ(r.rstd->dtype(), DT::Float32);
  EXPECT_EQ(sizes(r.mean), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(types(r.rstd), "iter,bcast,bcast");
  auto plain = layerNorm(input({4, 5}), 1, nullptr, nullptr);
  EXPECT_EQ(sizes(plain.y), (std::vector<int64_t>{4, 5}));
  verifyOutputs({r.y, r.mean, r.rstd, plain.y});
  EXPECT_TRUE(hasExpr(fusion_, [](ir::Expr* e) { return e->isA<ir::WelfordOp>(); }));
}

// layerNorm checks normalized_ndims and the rank and sizes of weight and bias.
TEST_F(CompositeTest, LayerNormErrors) {
  auto* x = input({2, 8});
  EXPECT_HAS(userError([&] { layerNorm(x, 3, nullptr, nullptr); }), "normalized_ndims 3");
  auto* w2 = input({2, 8});
  std::string msg = userError([&] { layerNorm(x, 1, w2, nullptr); });
  EXPECT_HAS(msg, "weight");
  EXPECT_HAS(msg, "must have rank 1");
  auto* b = input({7});
  msg = userError([&] { layerNorm(x, 1, nullptr, b); });
  EXPECT_HAS(msg, "bias");
  EXPECT_HAS(msg, "has size 7, expected 8");
}

// rmsNorm keeps the input shape and dtype; weight is optional and checked like layerNorm's.
TEST_F(CompositeTest, RmsNorm) {
  auto* x = input({4, 32}, DT::BFloat16);
  auto* y = rmsNorm(x, 1, input({32}, DT::BFloat16));
  EXPECT_EQ(y->dtype(), DT::BFloat16);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{4, 32}));
  auto* z = rmsNorm(input({3, 5}, DT::Float64), 2, nullptr);
  EXPECT_EQ(z->dtype(), DT::Float64);
  verifyOutputs({y, z});
  EXPECT_HAS(userError([&] { rmsNorm(x, 1, input({16})); }), "has size 16, expected 32");
}

// biasGelu broadcasts the bias along leading dims and returns the input dtype.
TEST_F(CompositeTest, BiasGelu) {
  auto* x = input({4, 8}, DT::Float16);
  auto* y = biasGelu(x, input({8}, DT::Float16));
  EXPECT_EQ(y->dtype(), DT::Float16);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{4, 8}));
  auto* z = biasGelu(input({4, 8}), input({8}), GeluApproximation::None);
  EXPECT_EQ(z->dtype(), DT::Float32);
  verifyOutputs({y, z});
  EXPECT_HAS(userError([&] { biasGelu(x, input({2, 4, 8})); }), "higher rank");
  EXPECT_HAS(userError([&] { biasGelu(x, input({7})); }), "(8 vs 7)");
}

}  // namespace
}  // namespace loom::ops::testing
