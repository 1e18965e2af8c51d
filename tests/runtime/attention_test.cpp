// SPDX-License-Identifier: Apache-2.0
// sdpfa_fwd / sdpfa_bwd (issue 30) end to end: each fusion runs through FusionExecutorCache
// (outputs poisoned) against the reference evaluator, and both against attention computed here in
// double from the definition (scores, causal mask, softmax, dropout with the mask that
// ops::dropout draws for the seed and offset, the gradients from the chain rule), so the
// composite's formulas (lse-based P, dS = P * (dP - rowsum(dO * O))) are checked, not trusted.
// Causal and not, L != S, f32 and bf16, dropout 0 and 0.25 (forward and backward drop the same
// entries), symbolic arguments, an empty key set, the text form. Built twice: host backend (emu)
// and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::Scalar;
using ir::TensorView;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor host(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (t.device().isCuda()) return cuda::toHost(t);
#endif
  return t;
}

Tensor toDouble(const Tensor& t) {
  Tensor h = host(t);
  Tensor out = Tensor::empty(h.sizes(), DataType::Float64);
  for (int64_t i = 0; i < h.numel(); ++i) out.setDoubleLinear(i, h.getDoubleLinear(i));
  return out;
}

// One attention problem: q [B.., L, E], k [B.., S, E], v [B.., S, Ev], go [B.., L, Ev].
struct Problem {
  std::vector<int64_t> batch;  // N, H
  int64_t l, s, e, ev;
  DataType dtype = DataType::Float32;

  std::vector<int64_t> shape(int64_t a, int64_t b) const {
    std::vector<int64_t> out = batch;
    out.push_back(a);
    out.push_back(b);
    return out;
  }
  int64_t batches() const {
    int64_t n = 1;
    for (int64_t b : batch) n *= b;
    return n;
  }
};

// Attention and its gradients in double, straight from the definition.
struct Expected {
  Tensor out, lse, dq, dk, dv;
};
Expected attention(const Problem& pb, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& go, double scale, bool causal, double p,
                   const std::vector<bool>& keep) {
  Expected r{Tensor::empty(pb.shape(pb.l, pb.ev), DataType::Float64),
             Tensor::empty(pb.shape(pb.l, 1), DataType::Float64),
             Tensor::empty(pb.shape(pb.l, pb.e), DataType::Float64),
             Tensor::empty(pb.shape(pb.s, pb.e), DataType::Float64),
             Tensor::empty(pb.shape(pb.s, pb.ev), DataType::Float64)};
  std::vector<int64_t> lse_shape = pb.batch;
  lse_shape.push_back(pb.l);
  r.lse = Tensor::empty(lse_shape, DataType::Float64);
  for (Tensor* t : {&r.out, &r.dq, &r.dk, &r.dv}) {
    for (int64_t i = 0; i < t->numel(); ++i) t->setDoubleLinear(i, 0.0);
  }
  const int64_t L = pb.l, S = pb.s, E = pb.e, Ev = pb.ev;
  auto at = [](const Tensor& t, int64_t i) { return t.getDoubleLinear(i); };
  auto acc = [](Tensor& t, int64_t i, double x) { t.setDoubleLinear(i, t.getDoubleLinear(i) + x); };
  for (int64_t b = 0; b < pb.batches(); ++b) {
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> sc(size_t(S), -kInf), prob(size_t(S), 0.0), kept(size_t(S), 0.0);
      double m = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        if (causal && j > i) continue;
        double dot = 0.0;
        for (int64_t e = 0; e < E; ++e)
          dot += at(q, (b * L + i) * E + e) * at(k, (b * S + j) * E + e);
        sc[size_t(j)] = dot * scale;
        m = std::max(m, sc[size_t(j)]);
      }
      double total = 0.0;
      for (int64_t j = 0; j < S; ++j) total += m == -kInf ? 0.0 : std::exp(sc[size_t(j)] - m);
      const double lse = m == -kInf ? -kInf : m + std::log(total);
      r.lse.setDoubleLinear(b * L + i, lse);
      for (int64_t j = 0; j < S; ++j) {
        prob[size_t(j)] = lse == -kInf ? 0.0 : std::exp(sc[size_t(j)] - lse);
        const bool k_j = keep.empty() || keep[size_t((b * L + i) * S + j)];
        kept[size_t(j)] = k_j ? prob[size_t(j)] / (1.0 - p) : 0.0;
      }
      // out_i = sum_j kept_ij v_j; dv_j += kept_ij go_i.
      for (int64_t j = 0; j < S; ++j) {
        for (int64_t c = 0; c < Ev; ++c) {
          acc(r.out, (b * L + i) * Ev + c, kept[size_t(j)] * at(v, (b * S + j) * Ev + c));
          acc(r.dv, (b * S + j) * Ev + c, kept[size_t(j)] * at(go, (b * L + i) * Ev + c));
        }
      }
      // dP_ij = (go_i . v_j) through the dropout; the softmax's Jacobian gives
      // dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik).
      std::vector<double> dp(size_t(S), 0.0);
      double d = 0.0;
      for (int64_t j = 0; j < S; ++j) {
        const bool k_j = keep.empty() || keep[size_t((b * L + i) * S + j)];
        double dot = 0.0;
        for (int64_t c = 0; c < Ev; ++c)
          dot += at(go, (b * L + i) * Ev + c) * at(v, (b * S + j) * Ev + c);
        dp[size_t(j)] = k_j ? dot / (1.0 - p) : 0.0;
        d += prob[size_t(j)] * dp[size_t(j)];
      }
      for (int64_t j = 0; j < S; ++j) {
        const double ds = prob[size_t(j)] * (dp[size_t(j)] - d) * scale;
        for (int64_t e = 0; e < E; ++e) {
          acc(r.dq, (b * L + i) * E + e, ds * at(k, (b * S + j) * E + e));
          acc(r.dk, (b * S + j) * E + e, ds * at(q, (b * L + i) * E + e));
        }
      }
    }
  }
  return r;
}

// The keep mask ops::dropout draws on a [B.., L, S] tensor for (p, seed, offset), from the
// reference evaluator (the RNG is bit-exact on every backend: docs/ops.md).
std::vector<bool> dropoutMask(const Problem& pb, double p, int64_t seed, int64_t offset) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(int64_t(pb.batch.size()) + 2).build();
    f.addInput(x);
    f.addOutput(ops::dropout(x, p, seed, offset).mask);
  }
  Tensor zeros = Tensor::empty(pb.shape(pb.l, pb.s), DataType::Float32);
  for (int64_t i = 0; i < zeros.numel(); ++i) zeros.setDoubleLinear(i, 0.0);
  std::vector<eval::Argument> args{zeros};
  Tensor mask = eval::evaluateFusion(f, args)[0];
  std::vector<bool> keep;
  for (int64_t i = 0; i < mask.numel(); ++i) keep.push_back(mask.getDoubleLinear(i) != 0.0);
  return keep;
}

class Attention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static TensorView* input(Fusion& f, int64_t rank, DataType dtype) {
    TensorView* tv = ops::TensorBuilder().rank(rank).dtype(dtype).build();
    f.addInput(tv);
    return tv;
  }

  // Runs the fusion through a cache, checks it against the reference evaluator and returns the
  // outputs on the host.
  static std::vector<Tensor> run(std::unique_ptr<Fusion> fusion,
                                 const std::vector<eval::Argument>& args, int64_t k) {
    std::vector<Tensor> expected = eval::evaluateFusion(*fusion, args);
    FusionExecutorCache cache(std::move(fusion), poisonedOptions());
    std::vector<Tensor> got = cache.run(args);
    EXPECT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
      got[i] = host(got[i]);
      eval::Tolerance tol = eval::defaultTolerance(expected[i].dtype(), k);
      // The backward chains three matmuls and a softmax: f32 differs from the reference's
      // rounding by more than one reduction's worth.
      if (expected[i].dtype() == DataType::Float32) tol = {1e-4, 1e-5};
      auto err = eval::expectClose(got[i], expected[i], tol, "output " + std::to_string(i));
      EXPECT_FALSE(err.has_value()) << *err;
    }
    return got;
  }

  // `got` (any floating dtype) against the double computation: f32 closely, 16-bit types at
  // their precision (inputs and outputs are rounded to it).
  static void expectNear(const Tensor& got, const Tensor& want, DataType dtype,
                         const std::string& what) {
    const eval::Tolerance tol =
        dtype == DataType::Float32 ? eval::Tolerance{1e-4, 1e-4} : eval::Tolerance{3e-2, 3e-2};
    auto err = eval::expectClose(toDouble(got), want, tol, what);
    EXPECT_FALSE(err.has_value()) << *err;
  }
};

// The forward and the backward in one fusion (the backward reads the forward's output,
// log_sumexp, philox_seed and philox_offset), with seed and offset as scalar inputs.
TEST_F(Attention, ForwardAndBackwardMatchTheDefinition) {
  const std::vector<Problem> problems = {
      {{2, 3}, 5, 7, 4, 6, DataType::Float32},  // L < S
      {{1, 2}, 9, 4, 8, 3, DataType::Float32},  // L > S: causal rows past S see every key
      {{2, 2}, 6, 6, 16, 16, DataType::BFloat16},
      {{1, 2}, 7, 5, 8, 4, DataType::Float16},
  };
  const int64_t seed = 1234, offset = 7;
  uint64_t data = 1;
  for (const Problem& pb : problems) {
    for (bool causal : {false, true}) {
      for (double p : {0.0, 0.25}) {
        SCOPED_TRACE("L " + std::to_string(pb.l) + " S " + std::to_string(pb.s) + " " +
                     std::string(dataTypeName(pb.dtype)) + (causal ? " causal" : "") + " dropout " +
                     std::to_string(p));
        auto fusion = std::make_unique<Fusion>();
        {
          FusionGuard g(fusion.get());
          const int64_t r = int64_t(pb.batch.size()) + 2;
          TensorView* q = input(*fusion, r, pb.dtype);
          TensorView* k = input(*fusion, r, pb.dtype);
          TensorView* v = input(*fusion, r, pb.dtype);
          TensorView* go = input(*fusion, r, pb.dtype);
          Scalar* s = ir::IrBuilder::symbolic(DataType::Int64);
          Scalar* o = ir::IrBuilder::symbolic(DataType::Int64);
          fusion->addInput(s);
          fusion->addInput(o);
          ops::SdpfaFwdResult fwd = ops::sdpfaFwd(q, k, v, p, causal, std::nullopt, s, o);
          ops::SdpfaBwdResult bwd =
              ops::sdpfaBwd(go, q, k, v, fwd.output, fwd.log_sumexp, p, causal, fwd.philox_seed,
                            fwd.philox_offset, std::nullopt);
          for (TensorView* t : {fwd.output, fwd.log_sumexp, fwd.philox_seed, fwd.philox_offset,
                                bwd.grad_query, bwd.grad_key, bwd.grad_value}) {
            fusion->addOutput(t);
          }
        }
        Tensor q = test::randomTensor(pb.shape(pb.l, pb.e), pb.dtype, data++);
        Tensor k = test::randomTensor(pb.shape(pb.s, pb.e), pb.dtype, data++);
        Tensor v = test::randomTensor(pb.shape(pb.s, pb.ev), pb.dtype, data++);
        Tensor go = test::randomTensor(pb.shape(pb.l, pb.ev), pb.dtype, data++);
        std::vector<Tensor> got = run(std::move(fusion), {q, k, v, go, seed, offset}, pb.s + pb.e);
        ASSERT_EQ(got.size(), 7u);
        EXPECT_EQ(got[0].dtype(), pb.dtype);
        EXPECT_EQ(got[1].dtype(), DataType::Float32);
        EXPECT_EQ(got[2].getDoubleLinear(0), double(seed));
        EXPECT_EQ(got[3].getDoubleLinear(0), double(offset));
        std::vector<bool> keep;
        if (p > 0.0) {
          keep = dropoutMask(pb, p, seed, offset);
          int64_t dropped = 0;
          for (bool kept : keep) dropped += kept ? 0 : 1;
          // The mask is a real one: about p of the entries are dropped.
          EXPECT_NEAR(double(dropped) / double(keep.size()), p, 0.12);
        }
        Expected want = attention(pb, q, k, v, go, 1.0 / std::sqrt(double(pb.e)), causal, p, keep);
        expectNear(got[0], want.out, pb.dtype, "output");
        expectNear(got[1], want.lse, DataType::Float32, "log_sumexp");
        expectNear(got[4], want.dq, pb.dtype, "grad_query");
        expectNear(got[5], want.dk, pb.dtype, "grad_key");
        expectNear(got[6], want.dv, pb.dtype, "grad_value");
      }
    }
  }
}

// The backward alone, in a fusion of its own (as nvFuser's test_sdpa_bwd), given the forward's
// saved output and log_sumexp and the seed and offset as Int Scalars: the same mask is drawn.
TEST_F(Attention, BackwardInItsOwnFusionRegeneratesTheMask) {
  const Problem pb{{2, 2}, 6, 5, 4, 3, DataType::Float32};
  const double p = 0.3, scale = 0.45;
  const int64_t seed = 99, offset = 3;
  auto forward = std::make_unique<Fusion>();
  {
    FusionGuard g(forward.get());
    TensorView* q = input(*forward, 4, pb.dtype);
    TensorView* k = input(*forward, 4, pb.dtype);
    TensorView* v = input(*forward, 4, pb.dtype);
    ops::SdpfaFwdResult fwd = ops::sdpfaFwd(q, k, v, p, true, scale, seed, offset);
    forward->addOutput(fwd.output);
    forward->addOutput(fwd.log_sumexp);
  }
  Tensor q = test::randomTensor(pb.shape(pb.l, pb.e), pb.dtype, 31);
  Tensor k = test::randomTensor(pb.shape(pb.s, pb.e), pb.dtype, 32);
  Tensor v = test::randomTensor(pb.shape(pb.s, pb.ev), pb.dtype, 33);
  Tensor go = test::randomTensor(pb.shape(pb.l, pb.ev), pb.dtype, 34);
  std::vector<Tensor> saved = run(std::move(forward), {q, k, v}, pb.s + pb.e);
  auto backward = std::make_unique<Fusion>();
  {
    FusionGuard g(backward.get());
    std::vector<TensorView*> in;
    for (int i = 0; i < 5; ++i) in.push_back(input(*backward, 4, pb.dtype));
    in.push_back(input(*backward, 3, DataType::Float32));  // log_sumexp
    Scalar* s = ir::IrBuilder::symbolic(DataType::Int64);
    Scalar* o = ir::IrBuilder::symbolic(DataType::Int64);
    backward->addInput(s);
    backward->addInput(o);
    ops::SdpfaBwdResult bwd =
        ops::sdpfaBwd(in[0], in[1], in[2], in[3], in[4], in[5], p, true, s, o, scale);
    for (TensorView* t : {bwd.grad_query, bwd.grad_key, bwd.grad_value}) backward->addOutput(t);
  }
  std::vector<Tensor> got =
      run(std::move(backward), {go, q, k, v, saved[0], saved[1], seed, offset}, pb.s + pb.e);
  Expected want = attention(pb, q, k, v, go, scale, true, p, dropoutMask(pb, p, seed, offset));
  expectNear(saved[0], want.out, pb.dtype, "output");
  expectNear(got[0], want.dq, pb.dtype, "grad_query");
  expectNear(got[1], want.dk, pb.dtype, "grad_key");
  expectNear(got[2], want.dv, pb.dtype, "grad_value");
  // Another offset draws another mask: the gradients change (the mask is not ignored).
  Expected other = attention(pb, q, k, v, go, scale, true, p, dropoutMask(pb, p, seed, offset + 1));
  EXPECT_TRUE(
      eval::expectClose(toDouble(got[2]), other.dv, {1e-4, 1e-4}, "grad_value").has_value());
}

// dropout_p, is_causal and scale as scalar inputs of the fusion: one compiled fusion serves every
// value (causal on and off, dropout on and off).
TEST_F(Attention, SymbolicArguments) {
  const Problem pb{{1, 3}, 5, 6, 4, 4, DataType::Float32};
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* q = input(*fusion, 4, pb.dtype);
    TensorView* k = input(*fusion, 4, pb.dtype);
    TensorView* v = input(*fusion, 4, pb.dtype);
    TensorView* go = input(*fusion, 4, pb.dtype);
    Scalar* p = ir::IrBuilder::symbolic(DataType::Float64);
    Scalar* causal = ir::IrBuilder::symbolic(DataType::Bool);
    Scalar* scale = ir::IrBuilder::symbolic(DataType::Float64);
    fusion->addInput(p);
    fusion->addInput(causal);
    fusion->addInput(scale);
    ops::SdpfaFwdResult fwd = ops::sdpfaFwd(q, k, v, p, causal, scale, int64_t(5), int64_t(6));
    ops::SdpfaBwdResult bwd = ops::sdpfaBwd(go, q, k, v, fwd.output, fwd.log_sumexp, p, causal,
                                            fwd.philox_seed, fwd.philox_offset, scale);
    for (TensorView* t : {fwd.output, bwd.grad_query, bwd.grad_key, bwd.grad_value}) {
      fusion->addOutput(t);
    }
  }
  Tensor q = test::randomTensor(pb.shape(pb.l, pb.e), pb.dtype, 41);
  Tensor k = test::randomTensor(pb.shape(pb.s, pb.e), pb.dtype, 42);
  Tensor v = test::randomTensor(pb.shape(pb.s, pb.ev), pb.dtype, 43);
  Tensor go = test::randomTensor(pb.shape(pb.l, pb.ev), pb.dtype, 44);
  const Fusion& f = *fusion;
  FusionExecutorCache cache(f.clone(), poisonedOptions());
  for (auto [p, causal, scale] : std::vector<std::tuple<double, bool, double>>{
           {0.0, true, 0.7}, {0.2, false, 1.3}, {0.2, true, 0.5}}) {
    SCOPED_TRACE("p " + std::to_string(p) + (causal ? " causal" : "") + " scale " +
                 std::to_string(scale));
    std::vector<eval::Argument> args{q, k, v, go, p, causal, scale};
    std::vector<Tensor> got = cache.run(args);
    std::vector<bool> keep = p > 0.0 ? dropoutMask(pb, p, 5, 6) : std::vector<bool>{};
    Expected want = attention(pb, q, k, v, go, scale, causal, p, keep);
    expectNear(got[0], want.out, pb.dtype, "output");
    expectNear(got[1], want.dq, pb.dtype, "grad_query");
    expectNear(got[2], want.dk, pb.dtype, "grad_key");
    expectNear(got[3], want.dv, pb.dtype, "grad_value");
  }
}

// Rows that see no key: every score -inf (a query row of -inf against positive keys) or no keys
// at all (S = 0). torch gives such a row output 0 and gradients 0 (its safe softmax); so does
// Loom, with log_sumexp -inf, never NaN (the safe max and lse forms), where the definition
// computed here agrees. grad_key is NaN where torch's is too (0 * -inf through q), so it is not
// compared.
TEST_F(Attention, RowsThatSeeNoKeyGiveZerosNotNaN) {
  for (int64_t s : {6, 0}) {
    SCOPED_TRACE("S " + std::to_string(s));
    const Problem pb{{1, 2}, 3, s, 4, 5, DataType::Float32};
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* q = input(*fusion, 4, pb.dtype);
      TensorView* k = input(*fusion, 4, pb.dtype);
      TensorView* v = input(*fusion, 4, pb.dtype);
      TensorView* go = input(*fusion, 4, pb.dtype);
      ops::SdpfaFwdResult fwd = ops::sdpfaFwd(q, k, v);
      ops::SdpfaBwdResult bwd = ops::sdpfaBwd(go, q, k, v, fwd.output, fwd.log_sumexp, std::nullopt,
                                              std::nullopt, fwd.philox_seed, fwd.philox_offset);
      for (TensorView* t : {fwd.output, fwd.log_sumexp, bwd.grad_query, bwd.grad_value}) {
        fusion->addOutput(t);
      }
    }
    Tensor q = test::randomTensor(pb.shape(pb.l, pb.e), pb.dtype, 51);
    Tensor k = test::randomTensor(pb.shape(pb.s, pb.e), pb.dtype, 52);
    Tensor v = test::randomTensor(pb.shape(pb.s, pb.ev), pb.dtype, 53);
    Tensor go = test::randomTensor(pb.shape(pb.l, pb.ev), pb.dtype, 54);
    // Row 1 of each head: (-inf, 0, 0, 0); keys in [0.5, 1.5): each of its scores is -inf.
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t e = 0; e < pb.e; ++e) {
        q.setDoubleLinear((h * pb.l + 1) * pb.e + e, e == 0 ? -kInf : 0.0);
      }
    }
    for (int64_t i = 0; i < k.numel(); ++i) k.setDoubleLinear(i, k.getDoubleLinear(i) * 0.5 + 1.0);
    std::vector<Tensor> got = run(std::move(fusion), {q, k, v, go}, pb.s + pb.e);
    Expected want = attention(pb, q, k, v, go, 0.5, false, 0.0, {});
    expectNear(got[0], want.out, pb.dtype, "output");
    expectNear(got[1], want.lse, DataType::Float32, "log_sumexp");
    expectNear(got[2], want.dq, pb.dtype, "grad_query");
    expectNear(got[3], want.dv, pb.dtype, "grad_value");
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_EQ(got[1].getDoubleLinear(h * pb.l + 1), -kInf);
      for (int64_t c = 0; c < pb.ev; ++c) {
        EXPECT_EQ(got[0].getDoubleLinear((h * pb.l + 1) * pb.ev + c), 0.0);
      }
    }
  }
}

// The composites are primitives, so the text form carries them: printed, parsed and printed the
// same, and the parsed fusion computes what the original does.
TEST_F(Attention, TextFormRoundTrip) {
  const Problem pb{{1, 2}, 4, 5, 4, 3, DataType::BFloat16};
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* q = input(f, 4, pb.dtype);
    TensorView* k = input(f, 4, pb.dtype);
    TensorView* v = input(f, 4, pb.dtype);
    TensorView* go = input(f, 4, pb.dtype);
    ops::SdpfaFwdResult fwd = ops::sdpfaFwd(q, k, v, 0.1, true, 0.3, int64_t(8), int64_t(9));
    ops::SdpfaBwdResult bwd = ops::sdpfaBwd(go, q, k, v, fwd.output, fwd.log_sumexp, 0.1, true,
                                            fwd.philox_seed, fwd.philox_offset, 0.3);
    for (TensorView* t :
         {fwd.output, fwd.log_sumexp, bwd.grad_query, bwd.grad_key, bwd.grad_value}) {
      f.addOutput(t);
    }
  }
  const std::string text = ir::printFusion(f);
  std::unique_ptr<Fusion> parsed = ir::parseFusion(text, "attention.fus");
  EXPECT_EQ(ir::printFusion(*parsed), text);
  std::vector<eval::Argument> args{test::randomTensor(pb.shape(pb.l, pb.e), pb.dtype, 61),
                                   test::randomTensor(pb.shape(pb.s, pb.e), pb.dtype, 62),
                                   test::randomTensor(pb.shape(pb.s, pb.ev), pb.dtype, 63),
                                   test::randomTensor(pb.shape(pb.l, pb.ev), pb.dtype, 64)};
  std::vector<Tensor> a = eval::evaluateFusion(f, args);
  std::vector<Tensor> b = run(std::move(parsed), args, pb.s + pb.e);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    auto err = eval::expectClose(b[i], a[i], eval::defaultTolerance(a[i].dtype(), pb.s + pb.e),
                                 "output " + std::to_string(i));
    EXPECT_FALSE(err.has_value()) << *err;
  }
}

}  // namespace
}  // namespace loom::runtime
