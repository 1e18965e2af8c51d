// SPDX-License-Identifier: Apache-2.0
// sdpfa_fwd / sdpfa_bwd nodes through FusionExecutorCache (issue 30): each is an attention segment
// of its own between Loom's kernels, run by the fused kernel where it takes the operands (head
// dim 64) and by the composite where it does not (an odd head dim), against the reference
// evaluator (which evaluates each node by its composite), outputs poisoned. Also the nodes' text
// form and an argument error. Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"
#include "loom/runtime/attention_executor.h"
#include "loom/runtime/fusion_executor_cache.h"
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

// `t` where the test's device computes (the fused kernel takes tensors of its device).
Tensor onDevice(const Tensor& t) {
#ifdef LOOM_RUNTIME_TEST_CUDA
  return cuda::toDeviceSameLayout(t);
#else
  return t;
#endif
}

// q = query * 0.5 (a pointwise producer), sdpfa_fwd, sdpfa_bwd of grad_output; outputs
// output + 1 (a pointwise consumer), log_sumexp and the three gradients. The default scale
// (1 / sqrt(E) of a symbolic E) is a Scalar the segment evaluates when it runs.
std::unique_ptr<Fusion> attentionFusion(DataType dtype, double p, bool causal) {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  std::vector<TensorView*> in;
  for (int i = 0; i < 4; ++i) {
    in.push_back(ops::TensorBuilder().rank(4).dtype(dtype).build());
    f->addInput(in.back());
  }
  TensorView* q = ops::cast(ops::mul(in[0], 0.5), dtype);
  ops::SdpfaFwdResult r =
      ops::sdpfaFwd(q, in[1], in[2], p, causal, std::nullopt, int64_t(99), int64_t(5));
  ops::SdpfaBwdResult b = ops::sdpfaBwd(in[3], q, in[1], in[2], r.output, r.log_sumexp, p, causal,
                                        r.philox_seed, r.philox_offset);
  f->addOutput(ops::add(r.output, 1.0));
  f->addOutput(r.log_sumexp);
  for (TensorView* t : {b.grad_query, b.grad_key, b.grad_value}) f->addOutput(t);
  return f;
}

struct Ran {
  int64_t fused = 0, composite = 0, segments = 0;
  std::string program;
};

// Runs the fusion through a cache on the test's backend (outputs poisoned), compares every output
// with the reference evaluator, and says which attention path ran.
Ran check(DataType dtype, int64_t e, double p, bool causal) {
  const int64_t n = 1, h = 2, l = 40, s = 72;
  std::vector<eval::Argument> args{
      test::randomTensor({n, h, l, e}, dtype, 1), test::randomTensor({n, h, s, e}, dtype, 2),
      test::randomTensor({n, h, s, e}, dtype, 3), test::randomTensor({n, h, l, e}, dtype, 4)};
  std::unique_ptr<Fusion> fusion = attentionFusion(dtype, p, causal);
  std::vector<Tensor> want = eval::evaluateFusion(*fusion, args);
  FusionExecutorCache cache(std::move(fusion), poisonedOptions());
  std::vector<eval::Argument> dargs;
  for (const eval::Argument& a : args) dargs.emplace_back(onDevice(std::get<Tensor>(a)));
  std::vector<Tensor> got = cache.run(dargs);
  const char* names[] = {"output + 1", "log_sumexp", "grad_query", "grad_key", "grad_value"};
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    // f32: the kernels' FMA order against the reference's rounding of each op (as
    // fused_attention_test.cpp); bf16: the dtype's tolerance for an S + E term reduction, also
    // for output + 1, which is computed in f32 from the bf16 output.
    eval::Tolerance tol = dtype == DataType::Float32 ? eval::Tolerance{1e-4, 1e-5}
                                                     : eval::defaultTolerance(dtype, s + e);
    auto err = eval::expectClose(host(got[i]), want[i], tol, names[i]);
    EXPECT_FALSE(err.has_value()) << *err;
  }
  const FusionKernelRuntime* rt = cache.lastRuntime();
  Ran ran;
  ran.program = rt->hostProgram();
  EXPECT_EQ(rt->numAttentions(), 2) << ran.program;
  EXPECT_EQ(rt->numCommunications(), 0) << ran.program;
  for (int64_t i = 0; i < rt->numSegments(); ++i) {
    const auto* a = dynamic_cast<const AttentionSegmentExecutor*>(&rt->segmentExecutor(i));
    if (a == nullptr) continue;
    ++ran.segments;
    ran.fused += a->fusedRuns();
    ran.composite += a->compositeRuns();
  }
  return ran;
}

class AttentionSegment : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
};

TEST_F(AttentionSegment, RunsTheFusedKernelsBetweenLoomKernels) {
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    for (auto [p, causal] : {std::pair{0.0, false}, std::pair{0.25, true}}) {
      SCOPED_TRACE(std::string(dataTypeName(dtype)) + " dropout " + std::to_string(p) +
                   (causal ? " causal" : ""));
      Ran ran = check(dtype, 64, p, causal);
      EXPECT_EQ(ran.segments, 2);
      EXPECT_EQ(ran.fused, 2) << ran.program;
      EXPECT_EQ(ran.composite, 0);
      EXPECT_NE(ran.program.find("sdpfa_fwd (the fused kernel where it applies"), std::string::npos)
          << ran.program;
    }
  }
}

TEST_F(AttentionSegment, AnOddHeadDimRunsTheComposite) {
  Ran ran = check(DataType::Float32, 40, 0.25, true);
  EXPECT_EQ(ran.fused, 0);
  EXPECT_EQ(ran.composite, 2) << ran.program;
}

TEST_F(AttentionSegment, RecordSaysWhichRan) {
  std::vector<eval::Argument> args{test::randomTensor({1, 1, 8, 40}, DataType::Float32, 1),
                                   test::randomTensor({1, 1, 8, 40}, DataType::Float32, 2),
                                   test::randomTensor({1, 1, 8, 40}, DataType::Float32, 3),
                                   test::randomTensor({1, 1, 8, 40}, DataType::Float32, 4)};
  FusionExecutorCache cache(attentionFusion(DataType::Float32, 0.0, false), poisonedOptions());
  cache.run(args);
  std::string params;
  for (const SegmentRecord& r : cache.lastRuntime()->lastRun()) {
    if (r.kind == "attention") params += r.params + "\n";
  }
  EXPECT_NE(params.find("sdpfa_fwd: the composite ("), std::string::npos) << params;
  EXPECT_NE(params.find("sdpfa_bwd: the composite ("), std::string::npos) << params;
}

// A gradient nobody reads is not an output of the attention segment: it outputs the node's
// results that are used, in their place.
TEST_F(AttentionSegment, AnUnusedGradientIsNotAnOutput) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    std::vector<TensorView*> in;
    for (int i = 0; i < 4; ++i) {
      in.push_back(ops::TensorBuilder().rank(4).dtype(DataType::Float32).build());
      fusion->addInput(in.back());
    }
    ops::SdpfaFwdResult r = ops::sdpfaFwd(in[0], in[1], in[2], 0.0, true);
    ops::SdpfaBwdResult b = ops::sdpfaBwd(in[3], in[0], in[1], in[2], r.output, r.log_sumexp, 0.0,
                                          true, r.philox_seed, r.philox_offset);
    fusion->addOutput(b.grad_value);
    fusion->addOutput(b.grad_query);
  }
  std::vector<eval::Argument> args{test::randomTensor({1, 2, 33, 64}, DataType::Float32, 1),
                                   test::randomTensor({1, 2, 35, 64}, DataType::Float32, 2),
                                   test::randomTensor({1, 2, 35, 64}, DataType::Float32, 3),
                                   test::randomTensor({1, 2, 33, 64}, DataType::Float32, 4)};
  std::vector<Tensor> want = eval::evaluateFusion(*fusion, args);
  FusionExecutorCache cache(std::move(fusion), poisonedOptions());
  std::vector<eval::Argument> dargs;
  for (const eval::Argument& a : args) dargs.emplace_back(onDevice(std::get<Tensor>(a)));
  std::vector<Tensor> got = cache.run(dargs);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    auto err = eval::expectClose(host(got[i]), want[i], eval::Tolerance{1e-4, 1e-5},
                                 i == 0 ? "grad_value" : "grad_query");
    EXPECT_FALSE(err.has_value()) << *err;
  }
  int64_t fused = 0;
  const FusionKernelRuntime* rt = cache.lastRuntime();
  for (int64_t i = 0; i < rt->numSegments(); ++i) {
    const auto* a = dynamic_cast<const AttentionSegmentExecutor*>(&rt->segmentExecutor(i));
    if (a != nullptr) fused += a->fusedRuns();
  }
  EXPECT_EQ(fused, 2) << rt->hostProgram();
}

// Operands declared BSHE ([N, H, S, E] allocated [N, S, H, E]; nvFuser's stride_order [3, 1, 2,
// 0]): the output and each gradient are allocated in their operand's order, as torch's kernels
// allocate them (nvFuser's test_sdpa[BSHE] asserts out.transpose(1, 2).is_contiguous()), and the
// values match the reference; log_sumexp stays row-major. Fused (head dim 64) and composite (40).
TEST_F(AttentionSegment, ResultsTakeTheOperandsDimOrder) {
  for (int64_t e : {64, 40}) {
    SCOPED_TRACE("head dim " + std::to_string(e));
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      std::vector<TensorView*> in;
      for (int i = 0; i < 4; ++i) {
        in.push_back(ops::TensorBuilder()
                         .rank(4)
                         .dtype(DataType::Float32)
                         .strideOrder({0, 2, 1, 3})
                         .build());
        fusion->addInput(in.back());
      }
      ops::SdpfaFwdResult r = ops::sdpfaFwd(in[0], in[1], in[2], 0.0, true);
      ops::SdpfaBwdResult b = ops::sdpfaBwd(in[3], in[0], in[1], in[2], r.output, r.log_sumexp, 0.0,
                                            true, r.philox_seed, r.philox_offset);
      for (TensorView* t : {r.output, r.log_sumexp, b.grad_query, b.grad_key, b.grad_value}) {
        fusion->addOutput(t);
      }
    }
    // [N, S, H, E] storage viewed as [N, H, S, E].
    auto bshe = [](int64_t s, int64_t e, uint64_t seed) {
      return test::randomTensor({1, s, 2, e}, DataType::Float32, seed)
          .permute(std::vector<int64_t>{0, 2, 1, 3});
    };
    std::vector<eval::Argument> args{bshe(33, e, 1), bshe(35, e, 2), bshe(35, e, 3),
                                     bshe(33, e, 4)};
    std::vector<Tensor> want = eval::evaluateFusion(*fusion, args);
    FusionExecutorCache cache(std::move(fusion), poisonedOptions());
    std::vector<eval::Argument> dargs;
    for (const eval::Argument& a : args) dargs.emplace_back(onDevice(std::get<Tensor>(a)));
    std::vector<Tensor> got = cache.run(dargs);
    ASSERT_EQ(got.size(), 5u);
    const char* names[] = {"output", "log_sumexp", "grad_query", "grad_key", "grad_value"};
    for (size_t i = 0; i < got.size(); ++i) {
      auto err = eval::expectClose(host(got[i]), want[i], eval::Tolerance{1e-4, 1e-5}, names[i]);
      EXPECT_FALSE(err.has_value()) << *err;
      if (i == 1) {
        EXPECT_TRUE(got[i].isContiguous()) << names[i];
        continue;
      }
      EXPECT_TRUE(got[i].permute(std::vector<int64_t>{0, 2, 1, 3}).isContiguous())
          << names[i] << " strides [" << join(got[i].strides()) << "]";
    }
  }
}

TEST(AttentionNode, TextRoundTripsAndEvaluatesAsBefore) {
  std::unique_ptr<Fusion> fusion = attentionFusion(DataType::Float32, 0.25, true);
  const std::string text = ir::printFusion(*fusion);
  EXPECT_NE(text.find("sdpfa_fwd("), std::string::npos) << text;
  EXPECT_NE(text.find("sdpfa_bwd("), std::string::npos) << text;
  std::unique_ptr<Fusion> parsed = ir::parseFusion(text);
  EXPECT_EQ(ir::printFusion(*parsed), text);
  std::vector<eval::Argument> args{test::randomTensor({1, 2, 5, 8}, DataType::Float32, 1),
                                   test::randomTensor({1, 2, 6, 8}, DataType::Float32, 2),
                                   test::randomTensor({1, 2, 6, 8}, DataType::Float32, 3),
                                   test::randomTensor({1, 2, 5, 8}, DataType::Float32, 4)};
  std::vector<Tensor> a = eval::evaluateFusion(*fusion, args);
  std::vector<Tensor> b = eval::evaluateFusion(*parsed, args);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    auto err = eval::expectClose(b[i], a[i], eval::Tolerance{0, 0}, "parsed");
    EXPECT_FALSE(err.has_value()) << *err;
  }
  // A Scalar of the wrong kind is refused naming the argument.
  std::string bad = text;
  const size_t at = bad.find("dropout_p=0.25");
  ASSERT_NE(at, std::string::npos) << text;
  bad.replace(at, 14, "dropout_p=T0");
  const std::string message = loom::test::userErrorOf([&] { ir::parseFusion(bad); });
  EXPECT_NE(message.find("dropout_p must be a scalar"), std::string::npos) << message;
}

TEST(AttentionNode, BadArgumentsNameTheTensor) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* q = ops::TensorBuilder().rank(4).dtype(DataType::Float32).build();
  TensorView* k3 = ops::TensorBuilder().rank(3).dtype(DataType::Float32).build();
  TensorView* v = ops::TensorBuilder().rank(4).dtype(DataType::Float32).build();
  const std::string message = loom::test::userErrorOf([&] { ops::sdpfaFwd(q, k3, v); });
  EXPECT_NE(message.find("sdpfa_fwd: key T1"), std::string::npos) << message;
  EXPECT_NE(message.find("must have rank 4"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom::runtime
