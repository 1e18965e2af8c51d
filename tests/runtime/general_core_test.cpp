// SPDX-License-Identifier: Apache-2.0
// Ordinary fusions through the automatic path, each compared with the reference evaluator:
// the failure families of the general-core issue (fan-out, unrelated output groups, reshape,
// 16-bit grid reductions, log_softmax over dim 0, expanded intermediates, non-finite scalars,
// producers inlined across broadcasts). Built twice: host backend (emu) and CUDA (gpu).
#include "runtime/general_core_fixture.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

// An intermediate read by two outputs under the vectorized pointwise schedule is computed once,
// in the loop both outputs run in (it was read outside the loop that declares it).
TEST_F(GeneralCore, IntermediateFeedsTwoOutputs) {
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).dtype(dt).build();
      f->addInput(x);
      TensorView* t = ops::add(x, 1.0);
      f->addOutput(ops::mul(t, 2.0));
      f->addOutput(ops::mul(t, 3.0));
    }
    runAndCheck(std::move(f), {randomTensor({64, 256}, 1, dt)});
  }
}

// Outputs in two groups that share no tensor: each group is its own kernel (a kernel's schedule
// propagates from one reference tensor), and the outputs reading a common input share one.
TEST_F(GeneralCore, OutputsOfUnrelatedShapes) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* y = ops::TensorBuilder().rank(1).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::exp(x));
    f->addOutput(ops::neg(y));
    f->addOutput(ops::add(x, 1.0));
    f->addOutput(ops::mul(y, 2.0));
  }
  runAndCheck(std::move(f), {randomTensor({64, 256}, 1), randomTensor({1000}, 2)});
}

// Squeeze then reduce, and unsqueeze of the squeezed tensor, in one fusion.
TEST_F(GeneralCore, SqueezeThenReduce) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 1, -1}).build();
    f->addInput(x);
    TensorView* s = ops::squeeze(x, {1});
    f->addOutput(ops::sum(s, {1}));
    f->addOutput(ops::unsqueeze(ops::exp(s), 0));
  }
  runAndCheck(std::move(f), {randomTensor({64, 1, 256}, 1)}, 256);
}

// Boolean ops feeding where, with the bool tensor an output too.
TEST_F(GeneralCore, BoolOpsWithWhere) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* y = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* c = ops::logicalAnd(ops::gt(x, 0.0), ops::logicalNot(ops::lt(y, 0.5)));
    f->addOutput(c);
    f->addOutput(ops::where(c, x, y));
  }
  runAndCheck(std::move(f), {randomTensor({64, 256}, 1), randomTensor({64, 256}, 2)});
}

// A producer without the broadcast its consumer merges with a real dim (x[N] broadcast against
// y[M, N], flattened by the 1-D schedule) runs over the consumer's M * N loop: it is indexed at
// m % N, not m (it computed wrong values silently), for divisible and odd N.
TEST_F(GeneralCore, ProducerInlinedAcrossABroadcast) {
  for (int64_t n : {16, 6, 5}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).build();
      TensorView* y = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      f->addInput(y);
      f->addOutput(ops::add(ops::broadcast(ops::exp(x), {true, false}), y));
    }
    runAndCheck(std::move(f), {randomTensor({n}, 1), randomTensor({1000, n}, 2)});
  }
}

// The same with the broadcast inner (x[N] against y[N, M]): the merged index splits as m / M.
TEST_F(GeneralCore, ProducerInlinedAcrossAnInnerBroadcast) {
  for (int64_t m : {3, 8}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).build();
      TensorView* y = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      f->addInput(y);
      f->addOutput(ops::mul(ops::broadcast(ops::sigmoid(x), {false, true}), y));
    }
    runAndCheck(std::move(f), {randomTensor({700}, 1), randomTensor({700, m}, 2)});
  }
}

// An intermediate read by an output of its own shape and, broadcast, by a larger output: the
// smaller output's loops sit inside the larger one's thread/block loops (not loops: it is
// computed redundantly and written once), with the larger output also reduced.
TEST_F(GeneralCore, IntermediateReadAtTwoBroadcastLevels) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).build();
    TensorView* y = ops::TensorBuilder().rank(3).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* e = ops::exp(x);
    TensorView* s = ops::mul(ops::broadcast(e, {true, true, false}), y);
    f->addOutput(s);
    f->addOutput(ops::sum(s, {0, 1}));
    f->addOutput(ops::neg(e));
  }
  runAndCheck(std::move(f), {randomTensor({37}, 1), randomTensor({5, 6, 37}, 2)}, 30);
}

// Reshape runs in kernels: merges and splits of dims, through the pointwise, reduction and
// normalization schedulers, before and after a reduction, and around a transpose.
TEST_F(GeneralCore, ReshapeThroughEveryScheduler) {
  auto run = [&](std::vector<int64_t> in, auto build, int64_t reduction) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().shape(in).build();
      f->addInput(x);
      f->addOutput(build(x));
    }
    runAndCheck(std::move(f), {randomTensor(in, 1)}, reduction);
  };
  run(
      {8, 12, 16},
      [](TensorView* x) {
        return ops::relu(ops::reshape(ops::exp(x), {96, 16}));
      },
      1);
  run(
      {8, 12, 16},
      [](TensorView* x) {
        return ops::sum(ops::reshape(x, {96, 16}), {1});
      },
      16);
  run(
      {8, 12, 16},
      [](TensorView* x) {
        return ops::sum(ops::reshape(ops::exp(x), {8, 192}), {1});
      },
      192);
  run(
      {8, 12, 16},
      [](TensorView* x) {
        return ops::softmax(ops::reshape(x, {8, 192}), 1);
      },
      192);
  run(
      {96, 16},
      [](TensorView* x) {
        return ops::sum(ops::reshape(x, {8, 12, 16}), {2});
      },
      16);
  run(
      {8, 12, 16},
      [](TensorView* x) { return ops::add(ops::reshape(ops::sum(x, {2}), {96}), 1.0); }, 16);
  run(
      {4, 6, 10},
      [](TensorView* x) {
        return ops::reshape(ops::transpose(ops::reshape(x, {24, 10}), 0, 1), {10, 4, 6});
      },
      1);
}

// A reshaped tensor combined with another input of its new shape, and reduced over dim 0.
TEST_F(GeneralCore, ReshapeMeetsAnotherInput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({6, 20}).build();
    TensorView* y = ops::TensorBuilder().shape({12, 10}).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* r = ops::add(ops::reshape(x, {12, 10}), y);
    f->addOutput(r);
    f->addOutput(ops::sum(r, {0}));
  }
  runAndCheck(std::move(f), {randomTensor({6, 20}, 1), randomTensor({12, 10}, 2)}, 12);
}

// max and min over every element of a 16-bit tensor: the grid reduction the scheduler picks
// accumulates in f32 (lowering refused 16-bit grid reductions).
TEST_F(GeneralCore, MaxMinOverAllOf16BitTensors) {
  for (DataType dt : {DataType::BFloat16, DataType::Float16}) {
    for (int64_t n : {256, 16384}) {
      auto f = std::make_unique<Fusion>();
      {
        FusionGuard g(f.get());
        TensorView* x = ops::TensorBuilder().rank(2).dtype(dt).build();
        f->addInput(x);
        f->addOutput(ops::max(x, {0, 1}));
        f->addOutput(ops::min(x, {0, 1}));
      }
      runAndCheck(std::move(f), {randomTensor({64, n}, 1, dt)});
    }
  }
}

// log_softmax over dim 0: its outer reductions read a row statistic broadcast along the vector
// lane, which keeps scalar loads (the scheduler vectorized a symbolic extent).
TEST_F(GeneralCore, LogSoftmaxOverDimZero) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    TensorView* m = ops::max(x, {0}, true);
    TensorView* s = ops::sub(x, m);
    f->addOutput(ops::sub(s, ops::log(ops::sum(ops::exp(s), {0}, true))));
  }
  runAndCheck(std::move(f), {randomTensor({100, 300}, 1)}, 100);
}

// An expanded (stride-0) intermediate written by one segment and read by two others keeps its
// layout across the boundary (it was written densely but declared expanded).
TEST_F(GeneralCore, ExpandedIntermediateAcrossSegments) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 1}).build();
    f->addInput(x);
    TensorView* e = ops::expand(ops::exp(x), {-1, 64});
    f->addOutput(e);
    f->addOutput(ops::sum(e, {1}));
    f->addOutput(ops::sum(e, {0}));
  }
  runAndCheck(std::move(f), {randomTensor({32, 1}, 1)}, 64);
}

// A broadcast expanded to a constant size meets an input of symbolic size (nvFuser's
// broadcast_in_dim(b, [4, 6], [1]) times x[s0, s1]): the expanded dim and s0 are one space, so
// the expand is inlined into the product's loops and its copies are predicated against the
// expanded extent (it did not lower: "local tensor ... held in the registers of the threads of
// its loop", and then computed only the first of the 4 rows). Outer and inner expanded dims,
// both pointwise schedules (a 1-D one for 6 wide rows, a 2-D one for 300).
TEST_F(GeneralCore, ConstantExpandMeetsSymbolicSizes) {
  for (int64_t width : {6, 300}) {
    auto outer = std::make_unique<Fusion>();
    {
      FusionGuard g(outer.get());
      TensorView* x = ops::TensorBuilder().rank(2).build();
      TensorView* b = ops::TensorBuilder().rank(1).build();
      outer->addInput(x);
      outer->addInput(b);
      TensorView* e = ops::expand(ops::broadcast(b, {true, false}), std::vector<int64_t>{4, width});
      outer->addOutput(ops::mul(x, e));
    }
    runAndCheck(std::move(outer), {randomTensor({4, width}, 3), randomTensor({width}, 4)});

    auto inner = std::make_unique<Fusion>();
    {
      FusionGuard g(inner.get());
      TensorView* x = ops::TensorBuilder().rank(2).build();
      TensorView* b = ops::TensorBuilder().rank(1).build();
      inner->addInput(x);
      inner->addInput(b);
      TensorView* e = ops::expand(ops::broadcast(b, {false, true}), std::vector<int64_t>{width, 4});
      inner->addOutput(ops::add(ops::exp(e), x));
    }
    runAndCheck(std::move(inner), {randomTensor({width, 4}, 5), randomTensor({width}, 6)});
  }
}

// One broadcast expanded to two extents: x[1, n] expanded to y's [a, n] and to z's [b, n]. The
// outputs share n but not their rows, so no one output's loops cover the other's: they are two
// kernels (one kernel, scheduled from y's space, computed the second expand only for the rows of
// the first and read the others from registers nobody wrote).
TEST_F(GeneralCore, OneBroadcastExpandedToTwoExtents) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({1, -1}).build();
    TensorView* y = ops::TensorBuilder().rank(2).build();
    TensorView* z = ops::TensorBuilder().rank(2).build();
    for (TensorView* tv : {x, y, z}) f->addInput(tv);
    auto sizesOf = [](TensorView* t) {
      return ops::SizeList(
          std::vector<ir::Scalar*>{t->logical()[0]->extent(), t->logical()[1]->extent()});
    };
    f->addOutput(ops::add(ops::expand(x, sizesOf(y)), y));
    f->addOutput(ops::add(ops::expand(x, sizesOf(z)), z));
  }
  runAndCheck(std::move(f),
              {randomTensor({1, 8}, 1), randomTensor({3, 8}, 2), randomTensor({5, 8}, 3)});
}

// Arithmetic on Scalars alone (ops::scalarBinary, scalarUnary, scalarCast) feeding tensor ops:
// an epsilon and a scale computed from a double input and an integer input, mixed types.
TEST_F(GeneralCore, ScalarArithmeticFeedsTensorOps) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    ir::Scalar* a = ir::IrBuilder::symbolic(DataType::Float64);
    ir::Scalar* n = ir::IrBuilder::symbolic(DataType::Int64);
    f->addInput(x);
    f->addInput(a);
    f->addInput(n);
    ir::Scalar* eps = ops::scalarBinary(ir::BinaryOpType::Add,
                                        ops::scalarBinary(ir::BinaryOpType::Mul, a, 2.0), 1e-3);
    ir::Scalar* inv = ops::scalarBinary(ir::BinaryOpType::Div, int64_t(1), n);  // true division
    ir::Scalar* root = ops::scalarUnary(ir::UnaryOpType::Sqrt, n);
    ir::Scalar* big = ops::scalarBinary(ir::BinaryOpType::Gt, n, int64_t(3));
    f->addOutput(ops::add(ops::mul(x, inv), eps));
    f->addOutput(ops::div(x, root));
    f->addOutput(ops::where(big, x, ops::neg(x)));
    f->addOutput(
        ops::mul(x, ops::scalarCast(ops::scalarUnary(ir::UnaryOpType::Floor, a), DataType::Int64)));
  }
  runAndCheck(std::move(f), {randomTensor({5, 70}, 7), 2.75, int64_t(4)});
}

// Non-finite and extreme scalars in a fusion compile and flow through (inf, -inf, nan, a
// denormal, f64 and f32 constants).
TEST_F(GeneralCore, NonFiniteScalars) {
  const double inf = std::numeric_limits<double>::infinity();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* d = ops::TensorBuilder().rank(2).dtype(DataType::Float64).build();
    f->addInput(x);
    f->addInput(d);
    f->addOutput(ops::minimum(ops::add(x, inf), std::nan("")));
    f->addOutput(ops::maximum(x, -inf));
    f->addOutput(ops::add(ops::mul(d, inf), std::numeric_limits<double>::denorm_min()));
    f->addOutput(ops::where(ops::gt(x, 0.0), inf, -inf));
  }
  runAndCheck(std::move(f),
              {randomTensor({8, 16}, 1), randomTensor({8, 16}, 2, DataType::Float64)});
}

}  // namespace
}  // namespace loom::runtime
