// SPDX-License-Identifier: Apache-2.0
// In-place outputs (ir::Fusion::aliasOutputToInput; issue 36): the output is written into its
// input's memory and the returned tensor is that input's, on the automatic path (a segment stores
// it when segmenter/in_place.h's rule allows, else a copy after the last segment) and on a hand
// schedule (always the copy). Every case compares the updated input with the reference evaluator
// run on a copy of the inputs taken before, outputs poisoned. Built twice: host backend (emu) and
// CUDA (gpu, where host arguments take the copy-in/copy-out path).
#include <gtest/gtest.h>

#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "runtime/runtime_test_backend.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dt = DataType::Float32) {
  auto* t = ops::TensorBuilder().shape(std::move(shape)).dtype(dt).build();
  f.addInput(t);
  return t;
}

Tensor random(std::vector<int64_t> sizes, uint64_t seed, DataType dt = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  fillRandom(t, seed);
  return t;
}

std::vector<eval::Argument> copies(const std::vector<eval::Argument>& args) {
  std::vector<eval::Argument> out;
  for (const eval::Argument& a : args) {
    const auto* t = std::get_if<Tensor>(&a);
    out.push_back(t == nullptr ? a : eval::Argument(t->contiguous()));
  }
  return out;
}

class InPlace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  struct Ran {
    std::vector<Tensor> outs;
    std::vector<segmenter::InPlaceWrite> writes;
    std::string program;
  };

  // Runs `cache` on `args`, then checks every output (an in-place one in the input it was
  // written into, which must be the returned tensor) against the reference evaluator on the
  // inputs as they were before the run.
  static Ran runAndCheck(FusionExecutorCache& cache, const std::vector<eval::Argument>& args,
                         int64_t reduced = 1) {
    const std::vector<eval::Argument> before = copies(args);
    const std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), before);
    Ran ran;
    ran.outs = cache.run(args);
    ran.writes = cache.lastRuntime()->segmented().inPlaceWrites();
    ran.program = cache.lastRuntime()->hostProgram();
    EXPECT_EQ(ran.outs.size(), expected.size());
    for (size_t o = 0; o < expected.size() && o < ran.outs.size(); ++o) {
      auto msg = eval::expectClose(ran.outs[o], expected[o],
                                   eval::defaultTolerance(expected[o].dtype(), reduced),
                                   "output " + std::to_string(o));
      EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ran.program;
    }
    for (const auto& [out, in] : cache.fusion().aliases()) {
      const auto& outs = cache.fusion().outputs();
      const auto& ins = cache.fusion().inputs();
      const size_t o = size_t(std::find(outs.begin(), outs.end(), out) - outs.begin());
      const size_t i = size_t(std::find(ins.begin(), ins.end(), in) - ins.begin());
      const Tensor& target = std::get<Tensor>(args[i]);
      EXPECT_EQ(ran.outs.at(o).data(), target.data())
          << "output " << o << " does not share input " << i << "'s storage";
      auto msg = eval::expectClose(target, expected[o],
                                   eval::defaultTolerance(expected[o].dtype(), reduced),
                                   "input " + std::to_string(i) + " after the run");
      EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ran.program;
    }
    return ran;
  }
};

// An optimizer step, p -= lr * g, stored into p by the pointwise kernel itself; a second run
// (a cache hit) updates the updated p again.
TEST_F(InPlace, PointwiseUpdateIsStoredByTheKernel) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* p = input(*f, {-1, -1});
    TensorView* grad = input(*f, {-1, -1});
    ir::Scalar* lr = ir::IrBuilder::symbolic(DataType::Float64);
    f->addInput(lr);
    f->aliasOutputToInput(ops::sub(p, ops::mul(grad, lr)), p);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  std::vector<eval::Argument> args{random({33, 70}, 1), random({33, 70}, 2), 0.125};
  Ran ran = runAndCheck(cache, args);
  ASSERT_EQ(ran.writes.size(), 1u);
  EXPECT_TRUE(ran.writes[0].inPlace()) << ran.writes[0].why;
  EXPECT_NE(ran.program.find("in place: step 0 stores T"), std::string::npos) << ran.program;
  ran = runAndCheck(cache, args);  // p again, from its updated values
  EXPECT_EQ(cache.hits(), 1);
}

// The input also feeds a sum over a row in the same fusion: the reduction kernel reads elements
// other threads write, so the output is computed aside and copied in after.
TEST_F(InPlace, ReductionReadingTheInputIsCopiedAfter) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    TensorView* centered =
        ops::sub(x, ops::broadcast(ops::div(ops::sum(x, {1}), 96.0), {false, true}));
    f->aliasOutputToInput(centered, x);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Ran ran = runAndCheck(cache, {random({16, 96}, 3)}, 96);
  ASSERT_EQ(ran.writes.size(), 1u);
  if (cache.lastRuntime()->numSegments() == 1) {
    EXPECT_FALSE(ran.writes[0].inPlace());
    EXPECT_NE(ran.writes[0].why.find("scheduler computes it"), std::string::npos)
        << ran.writes[0].why;
    EXPECT_NE(ran.program.find("then: copy T"), std::string::npos) << ran.program;
  }
}

// Two segments (a matmul is one of its own): the pointwise one after it reads the input last and
// stores the output into it.
TEST_F(InPlace, SecondOfTwoSegmentsStoresIt) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* acc = input(*f, {-1, -1});
    TensorView* a = input(*f, {-1, -1});
    TensorView* b = input(*f, {-1, -1});
    f->aliasOutputToInput(ops::add(acc, ops::matmul(a, b)), acc);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Ran ran = runAndCheck(cache, {random({12, 20}, 4), random({12, 9}, 5), random({9, 20}, 6)}, 9);
  ASSERT_EQ(cache.lastRuntime()->numSegments(), 2);
  ASSERT_EQ(ran.writes.size(), 1u);
  EXPECT_EQ(ran.writes[0].segment, 1) << ran.writes[0].why;
}

// The input is read again by a segment after the one computing the output (the matmul reads the
// input and the output): the output is computed aside, so the matmul reads the old values.
TEST_F(InPlace, InputReadByALaterSegmentIsCopiedAfterIt) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    TensorView* doubled = ops::mul(x, 2.0);
    f->aliasOutputToInput(doubled, x);
    f->addOutput(ops::matmul(x, ops::permute(doubled, {1, 0})));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Ran ran = runAndCheck(cache, {random({8, 8}, 7)}, 8);
  ASSERT_EQ(ran.writes.size(), 1u);
  EXPECT_FALSE(ran.writes[0].inPlace());
  EXPECT_NE(ran.writes[0].why.find("reads T0 after segment"), std::string::npos)
      << ran.writes[0].why << "\n"
      << ran.program;
}

// A broadcast of the input in the same kernel: threads of other rows read an element after its
// own row's thread stored the new value, so the output is copied in after.
TEST_F(InPlace, BroadcastOfTheInputIsCopiedAfter) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* bias = input(*f, {-1});
    TensorView* x = input(*f, {-1, -1});
    f->aliasOutputToInput(ops::mul(bias, 0.5), bias);
    f->addOutput(ops::add(x, ops::broadcast(bias, {true, false})));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Ran ran = runAndCheck(cache, {random({300}, 8), random({64, 300}, 9)});
  ASSERT_EQ(ran.writes.size(), 1u);
  EXPECT_FALSE(ran.writes[0].inPlace());
  EXPECT_NE(ran.writes[0].why.find("lacks"), std::string::npos) << ran.writes[0].why;
}

// The input read for another output of the same kernel (not on the in-place output's path): that
// read could come after the store, so the output is copied in after. (An odd size: no vector
// loads, whose register cache would hide the order.)
TEST_F(InPlace, InputReadForAnotherOutputIsCopiedAfter) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1});
    TensorView* y = input(*f, {-1});
    f->aliasOutputToInput(ops::add(x, y), x);
    f->addOutput(ops::mul(x, 3.0));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Ran ran = runAndCheck(cache, {random({1001}, 10), random({1001}, 11)});
  ASSERT_EQ(ran.writes.size(), 1u);
  EXPECT_FALSE(ran.writes[0].inPlace());
  EXPECT_NE(ran.writes[0].why.find("for another value"), std::string::npos) << ran.writes[0].why;
}

// The same input read twice on the output's own path (x * x + x) and a sliced input of the
// right layout: stored in place.
TEST_F(InPlace, SeveralReadsOnTheOutputsPathAreStoredInPlace) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    f->aliasOutputToInput(ops::add(ops::mul(x, x), ops::neg(x)), x);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Tensor base = random({40, 24}, 12);
  // Rows 4..36 of a [40, 24] tensor: dense, at an offset.
  Tensor rows(base.storage(), DataType::Float32, {32, 24}, {24, 1}, 4 * 24);
  Ran ran = runAndCheck(cache, {rows});
  ASSERT_EQ(ran.writes.size(), 1u);
  EXPECT_TRUE(ran.writes[0].inPlace()) << ran.writes[0].why;
}

TEST_F(InPlace, DeclarationErrorsNameBothTensors) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {-1, -1});
  TensorView* i = input(f, {-1, -1}, DataType::Int64);
  TensorView* v = input(f, {-1});
  TensorView* y = ops::neg(x);
  EXPECT_NE(test::userErrorOf([&] { f.aliasOutputToInput(y, i); }).find("the dtypes differ"),
            std::string::npos);
  EXPECT_NE(test::userErrorOf([&] { f.aliasOutputToInput(y, v); }).find("the ranks differ"),
            std::string::npos);
  EXPECT_NE(test::userErrorOf([&] {
              f.aliasOutputToInput(y, ops::abs(x));
            }).find("is not a fusion input"),
            std::string::npos);
  EXPECT_NE(test::userErrorOf([&] { f.aliasOutputToInput(v, v); }).find("written into itself"),
            std::string::npos);
  f.aliasOutputToInput(y, x);
  const std::string twice = test::userErrorOf([&] { f.aliasOutputToInput(ops::exp(x), x); });
  EXPECT_NE(twice.find("an input takes one in-place output"), std::string::npos) << twice;
  EXPECT_NE(twice.find(x->toString()), std::string::npos) << twice;
}

TEST_F(InPlace, ArgumentErrorsNameBothTensors) {
  auto make = [] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    TensorView* y = input(*f, {-1, -1});
    f->aliasOutputToInput(ops::add(y, 1.0), x);
    return f;
  };
  // Another shape than the output's.
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    const std::string msg = test::userErrorOf([&] {
      cache.run(Args{random({4, 6}, 1), random({4, 5}, 2)});
    });
    EXPECT_NE(msg.find("output 0 (T"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the output has sizes [4, 5] but the input has sizes [4, 6]"),
              std::string::npos)
        << msg;
  }
  // A transposed input is written through its strides (in_place_strided_test.cpp).
  // An expanded input (stride 0): its elements share memory.
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    Tensor row = random({1, 6}, 5);
    Tensor expanded(row.storage(), DataType::Float32, {4, 6}, {0, 1});
    const std::string msg = test::userErrorOf([&] {
      cache.run(Args{expanded, random({4, 6}, 6)});
    });
    EXPECT_NE(msg.find("has stride 0 on dimension 0 (an expanded broadcast)"), std::string::npos)
        << msg;
  }
  // The same tensor passed as the written input and as another input.
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    Tensor t = random({4, 6}, 7);
    const std::string msg = test::userErrorOf([&] { cache.run(Args{t, t}); });
    EXPECT_NE(msg.find("shares memory with input 0"), std::string::npos) << msg;
  }
}

// A hand-scheduled kernel: the output is computed aside and copied into the input after the
// launch; the returned tensor is the input's.
TEST_F(InPlace, HandScheduleCopiesAfterTheLaunch) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = input(f, {-1});
    TensorView* y = ops::exp(ops::mul(x, 0.5));
    f.aliasOutputToInput(y, x);
    y->split(0, 64);
    y->axis(0)->parallelize(ir::ParallelType::BIDx);
    y->axis(1)->parallelize(ir::ParallelType::TIDx);
    transform::propagateTransforms(y);
    transform::parallelizeAllLike(y);
    transform::inlineMost(f);
  }
  exec::KernelExecutor ke;
  exec::ExecutorOptions options;
  options.poisonOutputs = true;
  ke.compile(f, testBackend(), options);
  Tensor x = random({500}, 13);
  const std::vector<Tensor> expected = eval::evaluateFusion(f, Args{x.contiguous()});
  std::vector<Tensor> outs = ke.run(Args{x});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].data(), x.data());
  auto msg = eval::expectClose(x, expected[0], eval::defaultTolerance(DataType::Float32), "x");
  EXPECT_FALSE(msg.has_value()) << *msg;
}

// The text form: "outputs: T2 into T0", printed and parsed back; an alias the fusion cannot have
// is an error at its line.
TEST_F(InPlace, TextForm) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = input(f, {-1});
    TensorView* y = input(f, {-1});
    f.aliasOutputToInput(ops::add(x, y), y);
    f.addOutput(ops::neg(x));
  }
  const std::string text = ir::printFusion(f);
  EXPECT_NE(text.find("outputs: T2 into T1, T3"), std::string::npos) << text;
  std::unique_ptr<Fusion> back = ir::parseFusion(text, "in_place.fus");
  EXPECT_EQ(ir::printFusion(*back), text);
  ASSERT_EQ(back->aliases().size(), 1u);
  EXPECT_EQ(back->aliases()[0].second, back->inputs()[1]);
  std::string bad = text;
  bad.replace(bad.find("into T1"), 7, "into T3");
  const std::string msg = test::userErrorOf([&] { (void)ir::parseFusion(bad, "bad.fus"); });
  EXPECT_NE(msg.find("bad.fus:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T3 is not a fusion input"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::runtime
