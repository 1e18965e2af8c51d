// SPDX-License-Identifier: Apache-2.0
// Loom's fused attention forward kernel (runtime/attention.cuh through exec::FusedAttention, issue
// 30) against the reference evaluator of ops::sdpfaFwd's composite, which defines attention: the
// output and log_sumexp of the kernel itself (not the composite's kernels), outputs poisoned.
// Causal and not, L < S and L > S, L and S not multiples of the 32-row / 32-key tiles, head dims
// 64 and 128, f32 / bf16 / f16 (bf16 and f16 on the tensor-core kernels, forward and backward),
// dropout 0 and 0.25 (the kernel draws the composite's mask: a mask that differs by one entry
// fails the comparison), strided operands, and the shapes it refuses.
// Built twice: host backend (emu: the kernel's text compiled by the host compiler) and CUDA (gpu).
#include "loom/exec/fused_attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/attention_runner.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#include "user_error_of.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

Tensor host(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (t.device().isCuda()) return cuda::toHost(t);
#endif
  return t;
}

// `t` where the test's device computes (a GPU copy with the same strides on the gpu tier).
Tensor onDevice(const Tensor& t) {
#ifdef LOOM_RUNTIME_TEST_CUDA
  return cuda::toDeviceSameLayout(t);
#else
  return t;
#endif
}

struct Case {
  int64_t n, h, l, s, e;
  DataType dtype;
  bool causal;
  double p;
};

std::string describe(const Case& c) {
  return "[" + std::to_string(c.n) + ", " + std::to_string(c.h) + "] L " + std::to_string(c.l) +
         " S " + std::to_string(c.s) + " E " + std::to_string(c.e) + " " +
         std::string(dataTypeName(c.dtype)) + (c.causal ? " causal" : "") + " dropout " +
         std::to_string(c.p);
}

// The composites' output, log_sumexp and gradients (sdpfaFwd, then sdpfaBwd of grad_output) from
// the reference evaluator (double, each op rounded as the composite rounds it).
std::vector<Tensor> reference(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& go, double scale, int64_t seed, int64_t offset) {
  Fusion f;
  {
    FusionGuard g(&f);
    std::vector<TensorView*> in;
    for (int i = 0; i < 4; ++i) {
      in.push_back(ops::TensorBuilder().rank(4).dtype(c.dtype).build());
      f.addInput(in.back());
    }
    ops::SdpfaFwdResult r = ops::sdpfaFwd(in[0], in[1], in[2], c.p, c.causal, scale, seed, offset);
    ops::SdpfaBwdResult b = ops::sdpfaBwd(in[3], in[0], in[1], in[2], r.output, r.log_sumexp, c.p,
                                          c.causal, r.philox_seed, r.philox_offset, scale);
    for (TensorView* t : {r.output, r.log_sumexp, b.grad_query, b.grad_key, b.grad_value}) {
      f.addOutput(t);
    }
  }
  const std::vector<eval::Argument> args{q, k, v, go};
  return eval::evaluateFusion(f, args);
}

class FusedAttentionKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
    device_ = exec::makeComputeDevice(testBackend());
  }

  // Runs the forward and backward kernels on q, k, v and grad_output (host tensors, any strides;
  // the backward reads the kernel's own output and log_sumexp) and compares with the reference.
  void check(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& go) {
    const double scale = 1.0 / std::sqrt(double(c.e));
    const int64_t seed = 1234, offset = 7;
    exec::FusedAttention fa(device_, /*poison_outputs=*/true);
    Tensor dq = onDevice(q), dk = onDevice(k), dv = onDevice(v), dgo = onDevice(go);
    ASSERT_EQ(fa.unsupported(dq, dk, dv), std::nullopt);
    const exec::FusedAttentionArgs args{scale, c.causal, c.p, seed, offset};
    exec::FusedAttentionResult fwd = fa.forward(dq, dk, dv, args);
    exec::FusedAttentionGrads bwd = fa.backward(dgo, dq, dk, dv, fwd.output, fwd.log_sumexp, args);
    expectMatches(c,
                  {host(fwd.output), host(fwd.log_sumexp), host(bwd.grad_query), host(bwd.grad_key),
                   host(bwd.grad_value)},
                  reference(c, q, k, v, go, scale, seed, offset));
  }

  // output, log_sumexp, grad_query, grad_key, grad_value against the reference's.
  static void expectMatches(const Case& c, const std::vector<Tensor>& got,
                            const std::vector<Tensor>& want) {
    ASSERT_EQ(want.size(), 5u);
    ASSERT_EQ(got.size(), 5u);
    const char* names[] = {"output", "log_sumexp", "grad_query", "grad_key", "grad_value"};
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), i == 1 ? DataType::Float32 : c.dtype) << names[i];
      // f32: the kernels' FMA order against the reference's rounding of each op (the gradients
      // chain three products and a softmax, as the composite test's bound says).
      eval::Tolerance tol = eval::defaultTolerance(want[i].dtype(), c.s + c.e);
      if (want[i].dtype() == DataType::Float32) {
        tol = i == 1 ? eval::Tolerance{1e-5, 1e-5} : eval::Tolerance{1e-4, 1e-5};
      }
      auto err = eval::expectClose(host(got[i]), want[i], tol, names[i]);
      EXPECT_FALSE(err.has_value()) << *err;
    }
  }

  void check(const Case& c, uint64_t data) {
    check(c, test::randomTensor({c.n, c.h, c.l, c.e}, c.dtype, data),
          test::randomTensor({c.n, c.h, c.s, c.e}, c.dtype, data + 1),
          test::randomTensor({c.n, c.h, c.s, c.e}, c.dtype, data + 2),
          test::randomTensor({c.n, c.h, c.l, c.e}, c.dtype, data + 3));
  }

  std::shared_ptr<const exec::ComputeDevice> device_;
};

// Every combination the issue names on shapes that are no multiple of the tiles: L < S (the
// causal bound skips the tiles past the block's last row) and L > S (the last rows see every key).
TEST_F(FusedAttentionKernel, MatchesTheCompositeOnEveryKind) {
  uint64_t data = 1;
  for (DataType dtype : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
    for (int64_t e : {64, 128}) {
      for (auto [l, s] : std::vector<std::pair<int64_t, int64_t>>{{45, 70}, {70, 33}}) {
        for (bool causal : {false, true}) {
          for (double p : {0.0, 0.25}) {
            const Case c{1, 2, l, s, e, dtype, causal, p};
            SCOPED_TRACE(describe(c));
            check(c, data);
            data += 4;
          }
        }
      }
    }
  }
}

// Several CTAs in every grid dim (N, H and blocks of L), and operands read through their strides:
// q, k and v are [N, L, H, E] tensors viewed as [N, H, L, E] (the BSHE layout), without a copy.
TEST_F(FusedAttentionKernel, ReadsStridedOperandsAcrossTheGrid) {
  const Case c{2, 3, 67, 40, 64, DataType::BFloat16, true, 0.25};
  const std::vector<int64_t> to_bhse{0, 2, 1, 3};
  Tensor q = test::randomTensor({c.n, c.l, c.h, c.e}, c.dtype, 91).permute(to_bhse);
  Tensor k = test::randomTensor({c.n, c.s, c.h, c.e}, c.dtype, 92).permute(to_bhse);
  Tensor v = test::randomTensor({c.n, c.s, c.h, c.e}, c.dtype, 93).permute(to_bhse);
  Tensor go = test::randomTensor({c.n, c.l, c.h, c.e}, c.dtype, 94).permute(to_bhse);
  ASSERT_FALSE(q.isContiguous());
  check(c, q, k, v, go);
  // k and v with E not dense ([N, H, E, S] viewed as [N, H, S, E]): the tensor-core forward
  // reads such tiles one value a load instead of in 16-byte vectors.
  const std::vector<int64_t> swap_se{0, 1, 3, 2};
  Tensor ks = test::randomTensor({c.n, c.h, c.e, c.s}, c.dtype, 95).permute(swap_se);
  Tensor vs = test::randomTensor({c.n, c.h, c.e, c.s}, c.dtype, 96).permute(swap_se);
  ASSERT_NE(ks.stride(3), 1);
  check(c, q, ks, vs, go);
}

// The dropout mask is the composite's, and a real one: the same seed and offset with p 0 and p
// 0.25 give different outputs (check() compared each to the reference, whose mask is
// ops::dropout's), and no key set at all (S = 0) gives output 0, log_sumexp -inf.
TEST_F(FusedAttentionKernel, DropoutChangesTheOutputAndNoKeysGiveZero) {
  const Case on{1, 1, 33, 33, 64, DataType::Float32, false, 0.25};
  Tensor q = test::randomTensor({1, 1, 33, 64}, DataType::Float32, 5);
  Tensor k = test::randomTensor({1, 1, 33, 64}, DataType::Float32, 6);
  Tensor v = test::randomTensor({1, 1, 33, 64}, DataType::Float32, 7);
  exec::FusedAttention fa(device_, true);
  Tensor a =
      host(fa.forward(onDevice(q), onDevice(k), onDevice(v), {0.125, false, 0.0, 1, 2}).output);
  Tensor b =
      host(fa.forward(onDevice(q), onDevice(k), onDevice(v), {0.125, false, 0.25, 1, 2}).output);
  EXPECT_TRUE(eval::expectClose(a, b, {1e-3, 1e-3}, "output").has_value());
  check(on, q, k, v, test::randomTensor({1, 1, 33, 64}, DataType::Float32, 9));

  const Case empty{1, 2, 5, 0, 64, DataType::Float32, true, 0.0};
  Tensor none = Tensor::empty({1, 2, 0, 64}, DataType::Float32);
  exec::FusedAttentionResult r =
      fa.forward(onDevice(test::randomTensor({1, 2, 5, 64}, DataType::Float32, 8)), onDevice(none),
                 onDevice(none), {0.125, true, 0.0, 0, 0});
  Tensor out = host(r.output), lse = host(r.log_sumexp);
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.getDoubleLinear(i), 0.0) << i;
  for (int64_t i = 0; i < lse.numel(); ++i) {
    ASSERT_EQ(lse.getDoubleLinear(i), -std::numeric_limits<double>::infinity()) << i;
  }
  (void)empty;
}

// The bf16 / f16 backward runs on tensor cores (attention_bwd_mma.cuh): blocks of 64 keys (dk,
// dv) or rows (dq), streamed tiles of 64 (E 64) or 32 (E 128) rows or keys. Lengths over several
// blocks and tiles each way and no multiple of either, causal (the dk/dv kernel starts at the tile
// of its first key, the dq kernel stops after its last row) and not, dropout (the composite's mask
// on P for dv and on dP), L < S and L > S. Causal with L <= S too: keys past the last row are
// seen by none (their dk and dv are 0), and warps skip the tiles the mask hides from all of their
// rows (dq) or keys (dk, dv).
TEST_F(FusedAttentionKernel, TensorCoreBackwardSpansSeveralBlocksAndTiles) {
  uint64_t data = 301;
  for (DataType dtype : {DataType::BFloat16, DataType::Float16}) {
    for (int64_t e : {64, 128}) {
      for (auto [l, s, causal, p] :
           std::vector<std::tuple<int64_t, int64_t, bool, double>>{{150, 131, true, 0.0},
                                                                   {97, 161, false, 0.25},
                                                                   {161, 75, true, 0.25},
                                                                   {75, 161, true, 0.0},
                                                                   {130, 130, true, 0.0}}) {
        const Case c{1, 1, l, s, e, dtype, causal, p};
        SCOPED_TRACE(describe(c));
        check(c, data);
        data += 4;
      }
    }
  }
}

// The tensor-core forward over several CTAs of rows (128 a CTA at E 64, 64 at E 128) and tiles of
// keys: tiles inside every row's reach take no mask, the tiles that cross a row's causal bound or
// the last key do, and a warp skips the tiles past all of its rows; the row blocks run in reverse
// order. Lengths that are no multiple of either, causal (L = S, L > S, L < S) and not, dropout.
TEST_F(FusedAttentionKernel, TensorCoreForwardSpansSeveralBlocksAndTiles) {
  uint64_t data = 501;
  for (DataType dtype : {DataType::BFloat16, DataType::Float16}) {
    for (int64_t e : {64, 128}) {
      for (auto [l, s, causal, p] :
           std::vector<std::tuple<int64_t, int64_t, bool, double>>{{200, 200, true, 0.0},
                                                                   {270, 130, true, 0.25},
                                                                   {140, 333, true, 0.0},
                                                                   {131, 200, false, 0.0}}) {
        const Case c{1, 1, l, s, e, dtype, causal, p};
        SCOPED_TRACE(describe(c));
        check(c, data);
        data += 4;
      }
    }
  }
}

// The tensor-core backward's edges: no key (S = 0: every row's log_sumexp is -inf, its P 0, so
// dq is 0, not NaN) and no query row (L = 0: dk and dv are 0), over poisoned outputs.
TEST_F(FusedAttentionKernel, TensorCoreBackwardWithoutKeysOrRowsGivesZeros) {
  exec::FusedAttention fa(device_, /*poison_outputs=*/true);
  auto zeros = [](const Tensor& t, const char* name) {
    const Tensor h = host(t);
    for (int64_t i = 0; i < h.numel(); ++i)
      ASSERT_EQ(h.getDoubleLinear(i), 0.0) << name << " " << i;
  };
  for (DataType dtype : {DataType::BFloat16, DataType::Float16}) {
    SCOPED_TRACE(dataTypeName(dtype));
    const exec::FusedAttentionArgs args{0.125, true, 0.25, 3, 4};
    Tensor q = onDevice(test::randomTensor({1, 2, 5, 64}, dtype, 21));
    Tensor none = onDevice(Tensor::empty({1, 2, 0, 64}, dtype));
    exec::FusedAttentionResult r = fa.forward(q, none, none, args);
    exec::FusedAttentionGrads g =
        fa.backward(onDevice(test::randomTensor({1, 2, 5, 64}, dtype, 22)), q, none, none, r.output,
                    r.log_sumexp, args);
    zeros(g.grad_query, "grad_query");
    EXPECT_EQ(g.grad_key.numel(), 0);

    Tensor k = onDevice(test::randomTensor({1, 2, 7, 128}, dtype, 23));
    Tensor v = onDevice(test::randomTensor({1, 2, 7, 128}, dtype, 24));
    Tensor empty_q = onDevice(Tensor::empty({1, 2, 0, 128}, dtype));
    exec::FusedAttentionResult r0 = fa.forward(empty_q, k, v, args);
    exec::FusedAttentionGrads g0 =
        fa.backward(r0.output, empty_q, k, v, r0.output, r0.log_sumexp, args);
    EXPECT_EQ(g0.grad_query.numel(), 0);
    zeros(g0.grad_key, "grad_key");
    zeros(g0.grad_value, "grad_value");
  }
}

// What the kernel does not take is said, not computed wrongly: an odd head dim (the composite
// runs such attention), E != Ev, rank 5, f64, and forward() refuses the same with a UserError.
TEST_F(FusedAttentionKernel, RefusesWhatItDoesNotTake) {
  exec::FusedAttention fa(device_);
  auto t = [](std::vector<int64_t> sizes, DataType d = DataType::BFloat16) {
    return onDevice(test::randomTensor(std::move(sizes), d, 1));
  };
  EXPECT_EQ(fa.unsupported(t({1, 2, 8, 48}), t({1, 2, 8, 48}), t({1, 2, 8, 48})),
            "the fused attention kernel has head dims 64 and 128, not 48");
  EXPECT_EQ(fa.unsupported(t({1, 2, 8, 64}), t({1, 2, 8, 64}), t({1, 2, 8, 128})),
            "the fused attention kernel needs one head dim for query/key and value, got E 64 and "
            "Ev 128");
  EXPECT_EQ(fa.unsupported(t({1, 1, 2, 8, 64}), t({1, 1, 2, 8, 64}), t({1, 1, 2, 8, 64})),
            "query has rank 5, the fused kernel takes 4");
  EXPECT_EQ(fa.unsupported(t({1, 2, 8, 64}, DataType::Float64), t({1, 2, 8, 64}, DataType::Float64),
                           t({1, 2, 8, 64}, DataType::Float64)),
            "the fused attention kernel takes f32, bf16 or f16, not f64");
  EXPECT_EQ(fa.unsupported(t({1, 2, 8, 64}), t({1, 2, 9, 64}), t({1, 2, 8, 64})),
            "key and value have different lengths");
  const std::string msg = loom::test::userErrorOf([&] {
    fa.forward(t({1, 2, 8, 80}), t({1, 2, 8, 80}), t({1, 2, 8, 80}), {});
  });
  EXPECT_THAT(msg,
              ::testing::HasSubstr(
                  "fused attention: the fused attention kernel has head dims 64 and 128, not 80"));
  const std::string p = loom::test::userErrorOf([&] {
    fa.forward(t({1, 2, 8, 64}), t({1, 2, 8, 64}), t({1, 2, 8, 64}), {1.0, false, 1.0, 0, 0});
  });
  EXPECT_THAT(p, ::testing::HasSubstr("fused attention: dropout_p must be in [0, 1), got 1"));
}

// AttentionRunner: the fused kernels where they take the operands (head dim 64 here), the
// composites where they do not (head dim 48, and nvFuser's 5-D form), each saying so, and both
// computing what the reference does, forward and backward.
TEST_F(FusedAttentionKernel, RunnerFallsBackToTheCompositeWhereTheKernelDoesNot) {
  struct RunnerCase {
    Case c;
    bool five_d;
    const char* why;  // nullptr: fused
  };
  const std::vector<RunnerCase> cases = {
      {{1, 2, 37, 45, 64, DataType::BFloat16, true, 0.25}, false, nullptr},
      {{1, 2, 37, 45, 48, DataType::BFloat16, true, 0.25},
       false,
       "the fused attention kernel has head dims 64 and 128, not 48"},
      {{1, 2, 20, 9, 64, DataType::Float32, false, 0.0},
       true,
       "query has rank 5, the fused kernel takes 4"},
  };
  for (const RunnerCase& rc : cases) {
    const Case& c = rc.c;
    SCOPED_TRACE(describe(c) + (rc.five_d ? " 5-D" : ""));
    auto shape = [&](int64_t rows) {
      return rc.five_d ? std::vector<int64_t>{1, c.n, c.h, rows, c.e}
                       : std::vector<int64_t>{c.n, c.h, rows, c.e};
    };
    Tensor q = test::randomTensor(shape(c.l), c.dtype, 71),
           k = test::randomTensor(shape(c.s), c.dtype, 72);
    Tensor v = test::randomTensor(shape(c.s), c.dtype, 73),
           go = test::randomTensor(shape(c.l), c.dtype, 74);
    const double scale = 0.3;
    const exec::FusedAttentionArgs args{scale, c.causal, c.p, 11, 12};
    AttentionRunner runner(poisonedOptions());
    Tensor dq = onDevice(q), dk = onDevice(k), dv = onDevice(v), dgo = onDevice(go);
    AttentionRunner::Forward fwd = runner.forward(dq, dk, dv, args);
    AttentionRunner::Backward bwd =
        runner.backward(dgo, dq, dk, dv, fwd.output, fwd.log_sumexp, args);
    EXPECT_EQ(fwd.fused, rc.why == nullptr);
    EXPECT_EQ(bwd.fused, rc.why == nullptr);
    EXPECT_EQ(fwd.whyNotFused, rc.why == nullptr ? "" : rc.why);
    EXPECT_EQ(bwd.whyNotFused, fwd.whyNotFused);
    std::vector<Tensor> want;
    {
      Fusion f;
      FusionGuard g(&f);
      std::vector<TensorView*> in;
      for (int i = 0; i < 4; ++i) {
        in.push_back(ops::TensorBuilder().rank(rc.five_d ? 5 : 4).dtype(c.dtype).build());
        f.addInput(in.back());
      }
      ops::SdpfaFwdResult r =
          ops::sdpfaFwd(in[0], in[1], in[2], c.p, c.causal, scale, int64_t(11), int64_t(12));
      ops::SdpfaBwdResult b = ops::sdpfaBwd(in[3], in[0], in[1], in[2], r.output, r.log_sumexp, c.p,
                                            c.causal, r.philox_seed, r.philox_offset, scale);
      for (TensorView* t : {r.output, r.log_sumexp, b.grad_query, b.grad_key, b.grad_value}) {
        f.addOutput(t);
      }
      const std::vector<eval::Argument> a{q, k, v, go};
      want = eval::evaluateFusion(f, a);
    }
    expectMatches(c, {fwd.output, fwd.log_sumexp, bwd.grad_query, bwd.grad_key, bwd.grad_value},
                  want);
  }
  const std::string msg = loom::test::userErrorOf([] {
    AttentionRunner runner(poisonedOptions());
    Tensor t = onDevice(test::randomTensor({1, 1, 4, 48}, DataType::Float32, 1));
    runner.forward(t, t, t, {1.0, false, 1.5, 0, 0});
  });
  EXPECT_THAT(msg, ::testing::HasSubstr("attention: dropout_p must be in [0, 1), got 1.5"));
}

}  // namespace
}  // namespace loom::runtime
