// SPDX-License-Identifier: Apache-2.0
// sdpfaFwd / sdpfaBwd (issue 30): one SdpaFwdOp / SdpaBwdOp node each; their composites' result
// shapes and dtypes (nvFuser's), what the composites build (no RNG without dropout, a causal mask
// only when asked), and the UserErrors naming each argument.
#include <cmath>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DT = DataType;
using AttentionOpsTest = OpsTest;

int64_t countExprs(ir::Fusion& f, const std::function<bool(ir::Expr*)>& pred) {
  int64_t n = 0;
  for (auto* e : f.exprs()) n += pred(e) ? 1 : 0;
  return n;
}

// Outputs: output [N, H, L, Ev] in the inputs' dtype, log_sumexp [N, H, L] f32, philox_seed [2]
// UInt64 (seed and offset) and philox_offset 0-D UInt64, as nvFuser returns them with torch 2.7 and
// later; the gradients have their inputs' shapes and dtype.
TEST_F(AttentionOpsTest, ShapesAndDtypes) {
  auto* q = input({2, 3, 5, 8}, DT::BFloat16);
  auto* k = input({2, 3, 7, 8}, DT::BFloat16);
  auto* v = input({2, 3, 7, 4}, DT::BFloat16);
  auto* go = input({2, 3, 5, 4}, DT::BFloat16);
  SdpfaFwdResult f = sdpfaFwdComposite(q, k, v, 0.1, true, std::nullopt, int64_t(1), int64_t(2));
  EXPECT_EQ(sizes(f.output), (std::vector<int64_t>{2, 3, 5, 4}));
  EXPECT_EQ(f.output->dtype(), DT::BFloat16);
  EXPECT_EQ(sizes(f.log_sumexp), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(f.log_sumexp->dtype(), DT::Float32);
  EXPECT_EQ(sizes(f.philox_seed), (std::vector<int64_t>{2}));
  EXPECT_EQ(f.philox_seed->dtype(), DT::UInt64);
  EXPECT_EQ(f.philox_offset->rank(), 0);
  EXPECT_EQ(f.philox_offset->dtype(), DT::UInt64);
  SdpfaBwdResult b = sdpfaBwdComposite(go, q, k, v, f.output, f.log_sumexp, 0.1, true,
                                       f.philox_seed, f.philox_offset, std::nullopt);
  EXPECT_EQ(sizes(b.grad_query), sizes(q));
  EXPECT_EQ(sizes(b.grad_key), sizes(k));
  EXPECT_EQ(sizes(b.grad_value), sizes(v));
  EXPECT_EQ(b.grad_key->dtype(), DT::BFloat16);
  verifyOutputs({f.output, f.log_sumexp, f.philox_seed, f.philox_offset, b.grad_query, b.grad_key,
                 b.grad_value});
  // Forward and backward each draw the mask once; every product is a matmul in f32: q k^T and
  // P v forward; q k^T again, dO v^T, P^T dO, dS k and dS^T q backward.
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::RngOp>(); }), 2);
  EXPECT_EQ(countExprs(fusion_,
                       [](ir::Expr* e) {
                         auto* m = e->dynCast<ir::MatmulOp>();
                         return m != nullptr && m->output(0)->dtype() == DT::Float32;
                       }),
            7);
}

// nvFuser's 5-D form ([D, N, H, L, E]) is accepted; without dropout no RNG is drawn and the
// seed outputs are zeros; a constant false is_causal builds no mask.
TEST_F(AttentionOpsTest, FiveDimsAndNoDropout) {
  auto* q = input({1, 2, 3, 5, 8});
  auto* k = input({1, 2, 3, 6, 8});
  auto* v = input({1, 2, 3, 6, 8});
  SdpfaFwdResult f = sdpfaFwdComposite(q, k, v, 0.0, false);
  EXPECT_EQ(sizes(f.output), (std::vector<int64_t>{1, 2, 3, 5, 8}));
  EXPECT_EQ(sizes(f.log_sumexp), (std::vector<int64_t>{1, 2, 3, 5}));
  verifyOutputs({f.output, f.log_sumexp, f.philox_seed});
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::RngOp>(); }), 0);
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::IotaOp>(); }), 0);
  auto* pad = f.philox_seed->definition()->as<ir::PadOp>();
  EXPECT_TRUE(pad->in()->definition()->as<ir::FullOp>()->value()->isConstInt(0));
  EXPECT_TRUE(pad->value()->isConstInt(0));
  EXPECT_TRUE(f.philox_offset->definition()->as<ir::FullOp>()->value()->isConstInt(0));
}

// The ops build one node each (the attention segment's), with the composite's result shapes and
// the five Scalars in order; expandAttention puts the composite back.
TEST_F(AttentionOpsTest, OpsBuildOneNodeEach) {
  auto* q = input({2, 3, 5, 8});
  auto* k = input({2, 3, 7, 8});
  auto* v = input({2, 3, 7, 4});
  auto* go = input({2, 3, 5, 4});
  SdpfaFwdResult f = sdpfaFwd(q, k, v, 0.1, true, std::nullopt, int64_t(1), int64_t(2));
  SdpfaBwdResult b = sdpfaBwd(go, q, k, v, f.output, f.log_sumexp, 0.1, true, f.philox_seed,
                              f.philox_offset, std::nullopt);
  EXPECT_EQ(sizes(f.output), (std::vector<int64_t>{2, 3, 5, 4}));
  EXPECT_EQ(sizes(f.log_sumexp), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(sizes(b.grad_key), sizes(k));
  verifyOutputs({f.output, f.log_sumexp, b.grad_query, b.grad_key, b.grad_value});
  auto* node = f.output->definition()->as<ir::SdpaFwdOp>();
  EXPECT_EQ(node->logSumexp(), f.log_sumexp);
  EXPECT_EQ(node->dropoutP()->constDouble(), 0.1);
  EXPECT_TRUE(node->seed()->isConstInt(1));
  EXPECT_TRUE(node->offset()->isConstInt(2));
  EXPECT_EQ(node->scale()->constDouble(), 1.0 / std::sqrt(8.0));
  EXPECT_TRUE(b.grad_query->definition()->isA<ir::SdpaBwdOp>());
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::MatmulOp>(); }), 0);
  expandAttention(fusion_);
  EXPECT_NO_THROW(ir::verify(fusion_));
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return ir::isAttentionExpr(e); }), 0);
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::MatmulOp>(); }), 7);
}

TEST_F(AttentionOpsTest, ForwardErrorsNameTheArgument) {
  auto* q = input({2, 3, 5, 8});                     // T0
  auto* k = input({2, 3, 7, 8});                     // T1
  auto* v = input({2, 3, 7, 4});                     // T2
  auto* q3 = input({3, 5, 8});                       // T3
  auto* k5 = input({1, 2, 3, 7, 8});                 // T4
  auto* k_n = input({4, 3, 7, 8});                   // T5
  auto* v_h = input({2, 6, 7, 4});                   // T6
  auto* k_e = input({2, 3, 7, 6});                   // T7
  auto* v_s = input({2, 3, 9, 4});                   // T8
  auto* q_int = input({2, 3, 5, 8}, DT::Int64);      // T9
  auto* v_f64 = input({2, 3, 7, 4}, DT::Float64);    // T10
  auto* v_bf16 = input({2, 3, 7, 4}, DT::BFloat16);  // T11
  EXPECT_HAS(userError([&] { sdpfaFwd(q3, k, v); }),
             "sdpfa_fwd: query T3 [3, 5, 8] must have rank 4");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k5, v); }), "key T4 [1, 2, 3, 7, 8] has rank 5 but query");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k_n, v); }),
             "batch dim 0 differs: query T0 [2, 3, 5, 8] has 2, key T5 [4, 3, 7, 8] has 4");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v_h); }), "batch dim 1 (H) differs");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k_e, v); }), "the head size E (last dim) differs");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v_s); }),
             "the key length S (second-to-last dim) differs: key T1 [2, 3, 7, 8] has 7, value T8 "
             "[2, 3, 9, 4] has 9");
  EXPECT_HAS(userError([&] { sdpfaFwd(q_int, k, v); }),
             "query T9 is i64; attention takes f32, bf16 or f16 tensors");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v_f64); }),
             "value T10 is f64; attention takes f32, bf16 or f16");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v_bf16); }),
             "value T11 is bf16 but query T0 is f32; they need one dtype");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, 1.0, false, std::nullopt, 1, 2); }),
             "sdpfa_fwd: dropout_p must be in [0, 1), got 1");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, -0.5); }), "dropout_p must be in [0, 1), got -0.5");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, true); }), "dropout_p must be a real number");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, 0.1); }),
             "sdpfa_fwd: dropout_p may be above 0, so rng_seed is needed");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, 0.1, false, std::nullopt, 2.5, 1); }),
             "rng_seed must be an integer or an integer Scalar");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, 0.0, 1.0); }),
             "is_causal must be a bool or a Bool Scalar");
  EXPECT_HAS(userError([&] { sdpfaFwd(q, k, v, 0.0, false, q); }),
             "scale must be a number or a Scalar, got the tensor T0");
}

TEST_F(AttentionOpsTest, BackwardErrorsNameTheArgument) {
  auto* q = input({2, 3, 5, 8});
  auto* k = input({2, 3, 7, 8});
  auto* v = input({2, 3, 7, 4});
  auto* go = input({2, 3, 5, 4});
  SdpfaFwdResult f = sdpfaFwd(q, k, v);
  auto bwd = [&](TensorView* g, TensorView* out, TensorView* lse, Operand p,
                 std::optional<Operand> seed) {
    sdpfaBwd(g, q, k, v, out, lse, p, false, seed, seed, std::nullopt);
  };
  EXPECT_HAS(userError([&] {
               bwd(input({2, 3, 6, 4}), f.output, f.log_sumexp, 0.0, {});
             }),
             "sdpfa_bwd: the query length L differs: grad_output");
  EXPECT_HAS(userError([&] {
               bwd(go, input({2, 3, 5, 5}), f.log_sumexp, 0.0, {});
             }),
             "the value size Ev (last dim) differs: output");
  EXPECT_HAS(userError([&] {
               bwd(go, f.output, input({2, 3, 5}, DT::BFloat16), 0.0, {});
             }),
             "sdpfa_bwd: log_sumexp T");
  EXPECT_HAS(userError([&] {
               bwd(go, f.output, input({2, 3, 5}, DT::BFloat16), 0.0, {});
             }),
             "is bf16; it is Float32, as sdpfa_fwd returns it");
  EXPECT_HAS(userError([&] {
               bwd(go, f.output, input({2, 3, 5, 1}), 0.0, {});
             }),
             "must have the query's shape without its last dim (rank 3)");
  EXPECT_HAS(userError([&] { bwd(go, f.output, f.log_sumexp, 0.2, {}); }),
             "sdpfa_bwd: dropout_p may be above 0, so philox_seed is needed");
  // A seed tensor from outside (a fusion input) cannot key Loom's RNG when dropout may be on ...
  auto* seed_in = input({}, DT::Int64);
  EXPECT_HAS(userError([&] { bwd(go, f.output, f.log_sumexp, 0.2, seed_in); }), "philox_seed T");
  EXPECT_HAS(userError([&] { bwd(go, f.output, f.log_sumexp, 0.2, seed_in); }),
             "is not the one sdpfa_fwd returned in this fusion");
  // ... and is not read when dropout is off (nvFuser's test_sdpa_bwd passes torch's).
  EXPECT_NO_THROW(bwd(go, f.output, f.log_sumexp, 0.0, seed_in));
}

// Symbolic dropout_p, is_causal and scale (scalar fusion inputs) build: dropout and the causal
// mask are always built, their values read when the fusion runs.
TEST_F(AttentionOpsTest, SymbolicArgumentsBuildBothPaths) {
  auto* q = input({-1, -1, -1, -1});
  auto* k = input({-1, -1, -1, -1});
  auto* v = input({-1, -1, -1, -1});
  auto* p = ir::IrBuilder::symbolic(DT::Float64);
  auto* causal = ir::IrBuilder::symbolic(DT::Bool);
  auto* seed = ir::IrBuilder::symbolic(DT::Int64);
  for (ir::Val* s :
       {static_cast<ir::Val*>(p), static_cast<ir::Val*>(causal), static_cast<ir::Val*>(seed)}) {
    fusion_.addInput(s);
  }
  SdpfaFwdResult f = sdpfaFwdComposite(q, k, v, p, causal, std::nullopt, seed, seed);
  verifyOutputs({f.output, f.log_sumexp});
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::RngOp>(); }), 1);
  EXPECT_EQ(countExprs(fusion_, [](ir::Expr* e) { return e->isA<ir::IotaOp>(); }), 2);
}

}  // namespace
}  // namespace loom::ops::testing
