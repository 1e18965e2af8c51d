// SPDX-License-Identifier: Apache-2.0
// FusionExecutorCache end to end on the host backend: automatic scheduling, cache hits, kernel
// reuse across sizes with equal heuristics, and input validation.
#include "loom/runtime/fusion_executor_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "loom/eval/compare.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/segmenter/segmenter.h"
#include "loom/support/dump_sink.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using test::expectMatchesReference;
using test::hostOptions;
using test::randomTensor;
using test::runAndCheck;

// relu(x + y) over two symbolic 2-D inputs.
std::unique_ptr<Fusion> pointwiseFusion() {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  TensorView* x = ops::TensorBuilder().rank(2).build();
  TensorView* y = ops::TensorBuilder().rank(2).build();
  f->addInput(x);
  f->addInput(y);
  f->addOutput(ops::relu(ops::add(x, y)));
  return f;
}

std::unique_ptr<scheduler::HeuristicParams> paramsFor(const Fusion& f,
                                                      const std::vector<eval::Argument>& args) {
  segmenter::SegmentedFusion sf = segmenter::segmentFusion(f, args);
  EXPECT_EQ(sf.size(), 1);
  return sf.segments().at(0).kernel()->params->clone();
}

// A pointwise fusion runs through the cache, matches the reference, and the second run with
// the same layout is a hit on the same runtime.
TEST(FusionExecutorCache, PointwiseRunsAndHits) {
  FusionExecutorCache cache(pointwiseFusion(), hostOptions());
  std::vector<eval::Argument> args{randomTensor({4, 64}, 1), randomTensor({4, 64}, 2)};
  std::vector<Tensor> outs = cache.run(args);
  expectMatchesReference(cache.fusion(), args, outs, 1);
  const FusionKernelRuntime* first = cache.lastRuntime();
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->lastRun().size(), 1u);
  EXPECT_EQ(first->lastRun()[0].scheduler, "pointwise");
  EXPECT_EQ(first->lastRun()[0].backend, exec::Backend::Host);

  std::vector<eval::Argument> again{randomTensor({4, 64}, 3), randomTensor({4, 64}, 4)};
  outs = cache.run(again);
  expectMatchesReference(cache.fusion(), again, outs, 1);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.lastRuntime(), first);
}

// A new size whose heuristics come out equal reuses the compiled kernels (a new key, no new
// runtime); one whose heuristics differ compiles a new runtime.
TEST(FusionExecutorCache, ReusesKernelsWhenHeuristicsAreEqual) {
  FusionExecutorCache cache(pointwiseFusion(), hostOptions());
  std::vector<eval::Argument> a{randomTensor({4, 64}, 5), randomTensor({4, 64}, 6)};
  std::vector<eval::Argument> b{randomTensor({6, 64}, 7), randomTensor({6, 64}, 8)};
  std::vector<eval::Argument> c{randomTensor({3, 63}, 9), randomTensor({3, 63}, 10)};
  auto pa = paramsFor(cache.fusion(), a);
  auto pb = paramsFor(cache.fusion(), b);
  auto pc = paramsFor(cache.fusion(), c);
  ASSERT_TRUE(pa->sameAs(*pb)) << pa->toString() << " vs " << pb->toString();
  ASSERT_FALSE(pa->sameAs(*pc)) << pa->toString();

  runAndCheck(cache, a, 1);
  const FusionKernelRuntime* first = cache.lastRuntime();
  runAndCheck(cache, b, 1);
  EXPECT_EQ(cache.lastRuntime(), first);
  EXPECT_EQ(cache.numRuntimes(), 1);
  EXPECT_EQ(cache.numKeys(), 2);
  runAndCheck(cache, c, 1);
  EXPECT_NE(cache.lastRuntime(), first);
  EXPECT_EQ(cache.numRuntimes(), 2);
  EXPECT_EQ(cache.misses(), 3);
}

// An inner sum is scheduled by the reduction scheduler and matches the reference.
TEST(FusionExecutorCache, InnerSumRuns) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addOutput(ops::sum(x, {1}));
  }
  FusionExecutorCache cache(std::move(f), hostOptions());
  std::vector<eval::Argument> args{randomTensor({5, 300}, 11)};
  std::vector<Tensor> outs = cache.run(args);
  expectMatchesReference(cache.fusion(), args, outs, 300);
  ASSERT_EQ(cache.lastRuntime()->lastRun().size(), 1u);
  EXPECT_EQ(cache.lastRuntime()->lastRun()[0].scheduler, "reduction");
}

// LOOM_DUMP=scheduler_params on the automatic path (here through RuntimeOptions::dump, which
// stands in for the environment): each segment's parameters, once per compiled runtime, into the
// dump sink; nothing on a cache hit, nothing when the option is off.
TEST(FusionExecutorCache, SchedulerParamsAreDumpedPerSegment) {
  RuntimeOptions options = hostOptions();
  options.dump = DumpOptions::parse("scheduler_params");
  std::ostringstream dumped;
  {
    ScopedDumpSink into(dumped);
    FusionExecutorCache cache(pointwiseFusion(), options);
    std::vector<eval::Argument> args{randomTensor({4, 64}, 31), randomTensor({4, 64}, 32)};
    runAndCheck(cache, args, 1);
    std::string params = cache.lastRuntime()->lastRun()[0].params;
    if (params.back() != '\n') params += '\n';
    EXPECT_EQ(dumped.str(), "segment 0 (pointwise): " + params);
    (void)cache.run(args);
    EXPECT_EQ(dumped.str(), "segment 0 (pointwise): " + params) << "a hit prints nothing";
  }
  EXPECT_NE(dumped.str().find("Pointwise: "), std::string::npos) << dumped.str();

  std::ostringstream silent;
  ScopedDumpSink into(silent);
  RuntimeOptions quiet = hostOptions();
  quiet.dump = DumpOptions{};
  FusionExecutorCache cache(pointwiseFusion(), quiet);
  std::vector<eval::Argument> args{randomTensor({4, 64}, 33), randomTensor({4, 64}, 34)};
  (void)cache.run(args);
  EXPECT_EQ(silent.str(), "");
}

// Parameter overrides set heuristic fields before scheduling (here a 64-thread inner reduction
// instead of the heuristic's choice): the kernel uses them and still matches the reference; a
// name no segment's parameters have is a UserError listing the segments' schedulers.
TEST(FusionExecutorCache, ParamOverridesSetHeuristicFields) {
  auto build = [] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addOutput(ops::sum(x, {1}));
    return f;
  };
  RuntimeOptions tuned = hostOptions();
  tuned.paramOverrides = {{"bdimx", 64}, {"unroll", 1}};
  FusionExecutorCache cache(build(), tuned);
  std::vector<eval::Argument> args{randomTensor({5, 3000}, 13)};
  std::vector<Tensor> outs = cache.run(args);
  expectMatchesReference(cache.fusion(), args, outs, 3000);
  const std::string& params = cache.lastRuntime()->lastRun().at(0).params;
  EXPECT_NE(params.find("bdimx=64"), std::string::npos) << params;
  EXPECT_NE(params.find("unroll=1"), std::string::npos) << params;
  EXPECT_EQ(cache.lastRuntime()->lastRun().at(0).launch.block[0], 64u);

  RuntimeOptions wrong = hostOptions();
  wrong.paramOverrides = {{"persistent_batch", 2}};
  FusionExecutorCache bad(build(), wrong);
  try {
    bad.run(args);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("parameter override 'persistent_batch=2' names no field"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("(reduction)"), std::string::npos) << msg;
  }
}

Tensor viewOf(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides,
              int64_t offset = 0) {
  return Tensor(base.storage(), base.dtype(), std::move(sizes), std::move(strides), offset);
}

// The kernel text of the last run's only segment.
const std::string& lastKernel(FusionExecutorCache& cache) {
  return cache.lastRuntime()->executor(0).generated().kernelText;
}

// Inputs of any layout run through the cache with the default (contiguous) declaration: each
// key's copy gets the contiguity its strides prove, so a transposed, sliced or expanded (stride
// 0) x is read through its strides, and a contiguous x after them still without any.
TEST(FusionExecutorCache, AnyStridedInputRunsWithTheDefaultDeclaration) {
  FusionExecutorCache cache(pointwiseFusion(), hostOptions());
  std::vector<int64_t> swap{1, 0};
  // Which strides the kernel reads x through: none when contiguous; the row stride when rows are
  // dense inside but not with each other; only the column stride for every other column (rows
  // dense with the strided columns: one linear index).
  struct Layout {
    const char* name;
    Tensor x;
    bool stride0, stride1;
  };
  std::vector<Layout> layouts{
      {"contiguous", randomTensor({4, 64}, 20), false, false},
      {"transposed", randomTensor({64, 4}, 21).permute(swap), true, true},
      {"column slice", viewOf(randomTensor({4, 80}, 22), {4, 64}, {80, 1}, 5), true, false},
      {"every other column", viewOf(randomTensor({4, 128}, 23), {4, 64}, {128, 2}, 1), false, true},
      {"expanded row", viewOf(randomTensor({64}, 24), {4, 64}, {0, 1}), true, false},
      {"contiguous again", randomTensor({4, 64}, 25), false, false}};
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    std::vector<eval::Argument> args{l.x, randomTensor({4, 64}, 26)};
    runAndCheck(cache, args, 1);
    const std::string& text = lastKernel(cache);
    // y is always contiguous: never a stride of T1's innermost dim.
    EXPECT_EQ(text.find("T1.stride[1]"), std::string::npos) << text;
    EXPECT_EQ(text.find("T0.stride[0]") != std::string::npos, l.stride0) << text;
    EXPECT_EQ(text.find("T0.stride[1]") != std::string::npos, l.stride1) << text;
  }
  // Five keys (the last layout repeats the first) and five runtimes: contiguity [t, t], [f, f],
  // [f, t], [t, f], and [f, t] again for the expanded row (stride 0), whose aligned data
  // vectorizes where the column slice (5 elements off) does not.
  EXPECT_EQ(cache.numKeys(), 5);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.numRuntimes(), 5);
}

// A reduction over a transposed input and over a row slice, through the cache.
TEST(FusionExecutorCache, InnerSumOfStridedInputs) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addOutput(ops::sum(x, {1}));
  }
  FusionExecutorCache cache(std::move(f), hostOptions());
  std::vector<int64_t> swap{1, 0};
  for (const Tensor& x : {randomTensor({300, 5}, 27).permute(swap),
                          viewOf(randomTensor({5, 320}, 28), {5, 300}, {320, 1}, 7)}) {
    std::vector<eval::Argument> args{x};
    runAndCheck(cache, args, 300);
  }
}

// Inputs that do not match the fusion are UserErrors naming what was expected, as in
// KernelExecutor, and nothing is cached for them.
TEST(FusionExecutorCache, ValidatesInputs) {
  FusionExecutorCache cache(pointwiseFusion(), hostOptions());
  std::vector<eval::Argument> args{randomTensor({4, 64}, 12),
                                   Tensor::empty({4, 64}, DataType::Float64)};
  try {
    cache.run(args);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("dtype"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cache.numKeys(), 0);
}

// Sizes that disagree across inputs (the two operands of one add, a size-1 operand where no
// broadcast is declared) are UserErrors naming both inputs, found before anything is compiled or
// launched, and nothing is cached for them; after a good run, a bad key is still checked.
TEST(FusionExecutorCache, InputsWhoseSizesDisagree) {
  FusionExecutorCache cache(pointwiseFusion(), hostOptions());
  auto expectDisagree = [&](std::vector<int64_t> xs, std::vector<int64_t> ys) {
    std::vector<eval::Argument> args{randomTensor(xs, 20), randomTensor(ys, 21)};
    try {
      cache.run(args);
      FAIL() << "expected a UserError";
    } catch (const UserError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("shapes disagree in"), std::string::npos) << msg;
      EXPECT_NE(msg.find("from input 0 (T0)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("from input 1 (T1)"), std::string::npos) << msg;
    }
  };
  expectDisagree({4, 64}, {4, 1});
  expectDisagree({4, 64}, {1, 64});
  expectDisagree({4, 64}, {4, 128});
  EXPECT_EQ(cache.numKeys(), 0);
  std::vector<eval::Argument> good{randomTensor({4, 64}, 22), randomTensor({4, 64}, 23)};
  runAndCheck(cache, good, 1);
  expectDisagree({4, 64}, {4, 32});
  EXPECT_EQ(cache.numKeys(), 1);
}

// 0-size tensors through every scheduler: an empty output launches nothing (a launch of 0 blocks
// is not allowed), and a reduction over an empty axis still writes its init value (sum 0, var and
// mean NaN, as torch) into a non-empty output.
TEST(FusionExecutorCache, ZeroSizeTensorsRunAndMatchTheReference) {
  using Build = std::function<void(Fusion&, TensorView*)>;
  const std::vector<std::pair<Build, std::vector<int64_t>>> cases = {
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::relu(ops::add(x, x))); }, {0, 5}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {1})); }, {4, 0}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {1})); }, {0, 8}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {0})); }, {0, 8}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {0})); }, {8, 0}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::softmax(x, 1)); }, {0, 8}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::softmax(x, 1)); }, {4, 0}},
      {[](Fusion& f, TensorView* x) {
         ops::VarMeanResult vm = ops::varMean(x, {1});
         f.addOutput(vm.var);
         f.addOutput(vm.mean);
       },
       {4, 0}},
      {[](Fusion& f, TensorView* x) {
         ops::VarMeanResult vm = ops::varMean(x, {1});
         f.addOutput(vm.var);
         f.addOutput(vm.mean);
       },
       {0, 8}},
      {[](Fusion& f, TensorView* x) { f.addOutput(ops::layerNorm(x, 1, nullptr, nullptr).y); },
       {0, 8}},
  };
  for (const auto& [build, sizes] : cases) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      build(*f, x);
    }
    const std::string what = f->toString();
    FusionExecutorCache cache(std::move(f), hostOptions());
    std::vector<eval::Argument> args{randomTensor(sizes, 5)};
    std::vector<Tensor> outs;
    ASSERT_NO_THROW(outs = cache.run(args)) << what;
    expectMatchesReference(cache.fusion(), args, outs, 1);
  }
}

}  // namespace
}  // namespace loom::runtime
