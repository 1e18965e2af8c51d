// SPDX-License-Identifier: Apache-2.0
// The other nvFuser ops of issue 36 end to end: select (a constant position, one known at run
// time, negative positions, out of range), tril, stride_order (the output's strides), segment_set
// (the kernel count) and ceilDiv, with outputs poisoned, against the reference evaluator and
// against the rule computed directly. Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "loom/eval/compare.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

Tensor counting(const std::vector<int64_t>& shape, DataType dt = DataType::Float32) {
  Tensor t = Tensor::empty(shape, dt);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, double(i % 97) - 40.0);
  return t;
}

class LayoutOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  struct Result {
    std::vector<Tensor> outputs;
    int64_t kernels = 0;
  };
  // Runs `f` (outputs poisoned) and checks every output against the reference and the text
  // form's round trip: exactly, unless the fusion computes a transcendental (`exact` false: the
  // GPU's exp is not correctly rounded, so the dtype's tolerance).
  static Result run(std::unique_ptr<Fusion> f, const std::vector<eval::Argument>& args,
                    bool exact = true) {
    test::expectTextRoundTrip(*f, "layout.fus");
    FusionExecutorCache cache(std::move(f), poisonedOptions());
    Result r;
    r.outputs =
        test::runAndCheck(cache, args,
                          exact ? test::Tolerances(eval::Tolerance{0.0, 0.0}) : test::Tolerances())
            .outputs;
    r.kernels = cache.lastRuntime()->numKernels();
    return r;
  }
};

// select at constant positions (a slice and a squeeze: in one kernel with its consumers).
TEST_F(LayoutOps, SelectAtConstantPositions) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({4, 5, 6}).build();
    f->addInput(x);
    f->addOutput(ops::add(ops::select(x, 1, 2), 1.0));
    f->addOutput(ops::select(x, -1, -1));
    f->addOutput(ops::select(x, 0, 0));
  }
  Tensor x = counting({4, 5, 6});
  Result r = run(std::move(f), {x});
  ASSERT_EQ(r.outputs.size(), 3u);
  ASSERT_EQ(r.outputs[0].sizes(), (std::vector<int64_t>{4, 6}));
  ASSERT_EQ(r.outputs[1].sizes(), (std::vector<int64_t>{4, 5}));
  for (int64_t a = 0; a < 4; ++a) {
    for (int64_t c = 0; c < 6; ++c) {
      const std::vector<int64_t> at{a, 2, c}, out{a, c};
      EXPECT_EQ(r.outputs[0].getDouble(out), x.getDouble(at) + 1.0);
    }
    for (int64_t b = 0; b < 5; ++b) {
      const std::vector<int64_t> at{a, b, 5}, out{a, b};
      EXPECT_EQ(r.outputs[1].getDouble(out), x.getDouble(at));
    }
  }
  // The copies fuse with their consumers: select then mul is one pointwise kernel (a slice reads
  // its input from global memory, so a computed input would be a kernel of its own).
  auto g = std::make_unique<Fusion>();
  {
    FusionGuard guard(g.get());
    TensorView* y = ops::TensorBuilder().shape({4, 5, 6}).build();
    g->addInput(y);
    g->addOutput(ops::exp(ops::mul(ops::select(y, 1, -2), 2.0)));
  }
  EXPECT_EQ(run(std::move(g), {x}, /*exact=*/false).kernels, 1);
}

// A position known at run time, negative ones counting from the end; one outside [-n, n) fails
// with the value named.
TEST_F(LayoutOps, SelectAtRunTimePositions) {
  auto make = [] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    ir::Scalar* i = ir::IrBuilder::symbolic(DataType::Int64);
    f->addInput(x);
    f->addInput(i);
    f->addOutput(ops::select(x, 0, i));
    return f;
  };
  Tensor x = counting({5, 3});
  for (int64_t i : {int64_t(0), int64_t(4), int64_t(-1), int64_t(-5)}) {
    SCOPED_TRACE("index " + std::to_string(i));
    Result r = run(make(), {x, i});
    ASSERT_EQ(r.outputs[0].sizes(), (std::vector<int64_t>{3}));
    const int64_t row = i < 0 ? i + 5 : i;
    for (int64_t c = 0; c < 3; ++c) {
      const std::vector<int64_t> at{row, c};
      EXPECT_EQ(r.outputs[0].getDoubleLinear(c), x.getDouble(at));
    }
  }
  for (int64_t bad : {int64_t(5), int64_t(-6)}) {
    FusionExecutorCache cache(make(), poisonedOptions());
    const std::vector<eval::Argument> args{x, bad};
    try {
      cache.run(args);
      ADD_FAILURE() << "select at " << bad << " of 5 ran";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("index value " + std::to_string(bad)), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("(size 5)"), std::string::npos) << e.what();
    }
  }
}

TEST_F(LayoutOps, Tril) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* y = ops::TensorBuilder().rank(3).dtype(DataType::Int32).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::tril(x));
    f->addOutput(ops::tril(x, -1));
    f->addOutput(ops::tril(y, 2));
  }
  Tensor x = counting({5, 7});
  Tensor y = counting({2, 3, 6}, DataType::Int32);
  Result r = run(std::move(f), {x, y});
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 7; ++j) {
      const std::vector<int64_t> at{i, j};
      EXPECT_EQ(r.outputs[0].getDouble(at), j <= i ? x.getDouble(at) : 0.0);
      EXPECT_EQ(r.outputs[1].getDouble(at), j <= i - 1 ? x.getDouble(at) : 0.0);
    }
  }
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 6; ++j) {
        const std::vector<int64_t> at{b, i, j};
        EXPECT_EQ(r.outputs[2].getDouble(at), j - i <= 2 ? y.getDouble(at) : 0.0);
      }
    }
  }
}

// The output of stride_order is allocated with its dims in that order: its strides say so.
TEST_F(LayoutOps, StrideOrderGivesTheOutputsStrides) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(3).build();
    f->addInput(x);
    f->addOutput(ops::strideOrder(ops::add(x, 1.0), {0, 1, 2}));  // fully reversed
    f->addOutput(ops::strideOrder(x, {1, 0, 2}));                 // dim 2 outermost, then 0, then 1
    f->addOutput(ops::strideOrder(x, {2, 1, 0}));  // row-major: a plain copy's strides
  }
  Tensor x = counting({3, 4, 5});
  Result r = run(std::move(f), {x});
  EXPECT_EQ(r.outputs[0].strides(), (std::vector<int64_t>{1, 3, 12}));
  EXPECT_EQ(r.outputs[1].strides(), (std::vector<int64_t>{4, 1, 12}));
  EXPECT_EQ(r.outputs[2].strides(), (std::vector<int64_t>{20, 5, 1}));
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(r.outputs[0].getDoubleLinear(i), x.getDoubleLinear(i) + 1.0);
    EXPECT_EQ(r.outputs[1].getDoubleLinear(i), x.getDoubleLinear(i));
  }
}

// segment_set cuts the fusion: exp and neg would be one kernel without it.
TEST_F(LayoutOps, SegmentSetCutsTheFusion) {
  auto make = [](bool cut) {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    TensorView* y = ops::exp(x);
    f->addOutput(ops::neg(cut ? ops::segmentSet(y) : ops::set(y)));
    // Of a fusion input there is nothing to cut: it is already in memory.
    f->addOutput(ops::segmentSet(x));
    return f;
  };
  Tensor x = counting({6, 10});
  EXPECT_EQ(run(make(false), {x}, /*exact=*/false).kernels, 1);
  Result r = run(make(true), {x}, /*exact=*/false);
  EXPECT_EQ(r.kernels, 2);
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_FLOAT_EQ(float(r.outputs[0].getDoubleLinear(i)),
                    float(-std::exp(float(x.getDoubleLinear(i)))));
    EXPECT_EQ(r.outputs[1].getDoubleLinear(i), x.getDoubleLinear(i));
  }
}

// ceilDiv: integers round the quotient up for every sign (by zero: 0), floats take ceil(a / b).
TEST_F(LayoutOps, CeilDiv) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* a = ops::TensorBuilder().rank(1).dtype(DataType::Int64).build();
    TensorView* b = ops::TensorBuilder().rank(1).dtype(DataType::Int64).build();
    TensorView* x = ops::TensorBuilder().rank(1).build();
    f->addInput(a);
    f->addInput(b);
    f->addInput(x);
    f->addOutput(ops::ceilDiv(a, b));
    f->addOutput(ops::ceilDiv(x, 0.5));
  }
  const std::vector<int64_t> av{7, -7, 7, -7, 6, 0, 5, 9};
  const std::vector<int64_t> bv{2, 2, -2, -2, 3, 4, 0, 1};
  const std::vector<int64_t> want{4, -3, -3, 4, 2, 0, 0, 9};
  Tensor a = Tensor::empty({8}, DataType::Int64), b = Tensor::empty({8}, DataType::Int64);
  Tensor x = Tensor::empty({8}, DataType::Float32);
  for (int64_t i = 0; i < 8; ++i) {
    a.setDoubleLinear(i, double(av[size_t(i)]));
    b.setDoubleLinear(i, double(bv[size_t(i)]));
    x.setDoubleLinear(i, 0.3 * double(i) - 1.1);
  }
  Result r = run(std::move(f), {a, b, x});
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(int64_t(r.outputs[0].getDoubleLinear(i)), want[size_t(i)]) << i;
    EXPECT_EQ(r.outputs[1].getDoubleLinear(i),
              double(std::ceil(float(x.getDoubleLinear(i)) / 0.5f)))
        << i;
  }
}

}  // namespace
}  // namespace loom::runtime
