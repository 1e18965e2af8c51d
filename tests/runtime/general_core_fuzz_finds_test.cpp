// SPDX-License-Identifier: Apache-2.0
// The differential fuzzer's finds (tests/fuzz), each cut down to the pattern that failed and
// compared with the reference evaluator. Built twice: host backend (emu) and CUDA (gpu).
#include "runtime/general_core_fixture.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

// A reduction over the outer and inner dims of [N, 56, 2] reshaped to [2, 4, 1, 7] in the same
// kernel: the reshape's split dims, flattened back by the schedule, are one loop with the
// reduction's kept dim (they were a second loop outside the block's threads).
TEST_F(GeneralCore, ReshapeOfAReductionOverOuterAndInnerDims) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 56, 2}).build();
    f->addInput(x);
    f->addOutput(ops::reshape(ops::varMean(x, {0, 2}).var, {2, 4, 1, 7}));
  }
  runAndCheck(std::move(f), {randomTensor({36, 56, 2}, 1)}, 72);
}

// An input that meets the row only through a broadcast (its [C] against a row of [R, C]) is not
// checked by the normalization heuristic's vector width, so it is read element by element: here
// it starts 2 bytes past a 4-byte boundary.
TEST_F(GeneralCore, MisalignedInputOnlyBroadcastAgainstTheRow) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 6, 34}).build();
    TensorView* w = ops::TensorBuilder().shape({34}).dtype(DataType::BFloat16).build();
    f->addInput(x);
    f->addInput(w);
    ops::LayerNormResult ln = ops::layerNorm(x, 1, nullptr, nullptr, 0.5);
    f->addOutput(ln.y);
    f->addOutput(ops::maximum(w, ln.rstd));  // [34] against [2, 6, 1]
  }
  Tensor storage = randomTensor({35}, 2, DataType::BFloat16);
  Tensor w = Tensor::fromBlob(static_cast<char*>(storage.data()) + 2, {34}, {1}, DataType::BFloat16,
                              storage.device());
  runAndCheck(std::move(f), {randomTensor({2, 6, 34}, 1), w}, 34);
}

// A [R, 1] output of a reduction over a dim of size 0 is still written (sum = 0) although the
// kernel's row loop is empty: an output's broadcast axis is not run as the row loop.
TEST_F(GeneralCore, BroadcastOutputOfAnEmptyReduction) {
  for (int64_t n : {0, 5}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* y = ops::TensorBuilder().rank(2).build();
      TensorView* z = ops::TensorBuilder().rank(2).build();
      f->addInput(y);
      f->addInput(z);
      TensorView* a = ops::abs(ops::sum(y, {1}, /*keepdim=*/true));
      f->addOutput(a);
      f->addOutput(ops::add(a, z));  // a is read again in the reduction's kernel
    }
    runAndCheck(std::move(f), {randomTensor({7, n}, 2), randomTensor({7, n}, 3)}, 5);
  }
}

// An input covering only part of the normalization row ([1, H, 1] against rows of H x W) is read
// per element in the row's loops, not held in registers across rows in its own layout.
TEST_F(GeneralCore, InputSpanningPartOfTheRow) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({15, -1, 16}).build();
    TensorView* c = ops::TensorBuilder().shape({15, 13, 1}).build();
    TensorView* m = ops::TensorBuilder().shape({1, 13, 1}).build();
    f->addInput(x);
    f->addInput(c);
    f->addInput(m);
    TensorView* ss = ops::sum(ops::mul(x, x), {1, 2}, /*keepdim=*/true);
    TensorView* y = ops::mul(x, ops::rsqrt(ops::add(ss, 1.0)));
    f->addOutput(ops::where(ops::le(c, 0.0), y, m));
  }
  runAndCheck(
      std::move(f),
      {randomTensor({15, 13, 16}, 1), randomTensor({15, 13, 1}, 2), randomTensor({1, 13, 1}, 3)},
      208);
}

// Two outputs read inside the fusion (their vectorized stores are forked copies, so their
// producers keep their own inner loops): inlining keeps every loop orderable (a tensor feeding
// the second output would otherwise share a loop with a reader of it).
TEST_F(GeneralCore, InliningKeepsLoopsOrderable) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* a = ops::TensorBuilder().shape({-1, -1, 4, 1}).dtype(DataType::Int64).build();
    TensorView* b = ops::TensorBuilder().shape({-1, 1, 4, -1}).dtype(DataType::Int64).build();
    f->addInput(a);
    f->addInput(b);
    TensorView* ne = ops::ne(a, b);
    TensorView* m = ops::maximum(a, ops::cast(ne, DataType::Int64));
    TensorView* ab = ops::abs(m);
    f->addOutput(m);
    f->addOutput(ab);
    TensorView* gt = ops::cast(ops::gt(ab, ops::cast(ne, DataType::Int64)), DataType::Float32);
    ops::VarMeanResult r = ops::varMean(gt, {0, 1, 2, 3}, 0.0, /*keepdim=*/true);
    f->addOutput(ops::mul(ops::sub(gt, r.mean), ops::rsqrt(ops::add(r.var, 0.1))));
  }
  runAndCheck(std::move(f),
              {randomTensor({6, 4, 4, 1}, 1, DataType::Int64),
               randomTensor({6, 1, 4, 4}, 2, DataType::Int64)},
              384);
}

// A pad of a pair of pads, read back by a second segment (a cat needs its pads' inputs in
// memory): that segment's input extent is math on sizes of a fusion input it does not read, so
// the input joins the segment to bind them (it failed: "depends on values no input binds").
TEST_F(GeneralCore, SegmentInputWithADerivedExtent) {
  std::unique_ptr<Fusion> f = ir::parseFusion(R"(
inputs:  T0, T1
outputs: T8, T12
s0 : i64
s1 : i64
s2 : i64
s3 : i64  = add(s0, s0)
s4 : i64  = add(s0, s0)
s5 : i64  = add(s0, s0)
s6 : f32  = cast(s5, f32)
T0  : f32  global [i0{s0}, i1{s1}, i2{6}]
T1  : f16  global [i3{6}, i4{0}, i5{s2}]
T2  : f32  local  [i6{6}, i7{s1}, i8{s0}]
      root       [i8, i7, i6]
T3  : f32  local  [i9{6}, i10{s1}, i11{s3, rf}]
      root       [i9, i10, i12{s0}]
      i11 = resize(i12, 0, s0)
T4  : f32  local  [i13{6}, i14{s1}, i15{s4, rf}]
      root       [i13, i14, i16{s0}]
      i15 = resize(i16, s0, 0)
T5  : f32  local  [i17{6}, i18{s1}, i19{s5}]
T6  : f32  local  [i20{6}, i21{s1}, r22{s5}]
T7  : f32  local  [i23{6}, i24{s1}, b25{1}]
T8  : f32  global [i26{6}, i27{s1}, b28{1}]
T9  : f32  local  [i29{6}, i30{s1, rf}, i31{s5}]
      root       [i29, i32{s1}, i31]
      i30 = resize(i32, 0, 0)
T10 : f32  local  [i33{6}, i34{0}, i35{s2}]
T11 : f32  local  [i36{6}, i37{s1, rf}, i38{s2}]
      root       [i36, i39{0}, i38]
      i37 = resize(i39, s1, 0)
T12 : f32  global [i40{6}, i41{s1}, i42{s5}]
T2  = set(T0)
T3  = pad(T2, value=f32(0.0))
T4  = pad(T2, value=f32(0.0))
T5  = cat(T3, T4, dim=2)
T6  = sum(T5, init=f32(0.0))
T7  = broadcast(T6, flags=[false, false, true])
T8  = div(T7, s6)
T9  = pad(T5, value=f32(0.0))
T10 = cast(T1, f32)
T11 = pad(T10, value=f32(0.0))
T12 = cat(T9, T11, dim=1)
)");
  runAndCheck(std::move(f),
              {randomTensor({19, 16, 6}, 1), randomTensor({6, 0, 38}, 2, DataType::Float16)}, 38);
}

// A reshape to sizes given as Int64 scalar inputs: its index math mixes 32-bit loop indices with
// 64-bit sizes in min/max/ceil_div, which the runtime library takes in long long.
TEST_F(GeneralCore, ReshapeToScalarInputSizes) {
  std::unique_ptr<Fusion> f = ir::parseFusion(R"(
inputs:  T0, s1, s2, s3
outputs: T7, T9
s1 : i64
s2 : i64
s3 : i64
s4 : i64
s5 : i64
s6 : i64
T0 : f16  global [i0{2}, i1{s4}, i2{s5}, i3{s6}]
T2 : f32  local  [i4{2}, i5{s4}, i6{s5}, i7{s6}]
T3 : f16  local  [i8{2}, i9{s4}, i10{s5}, r11{s6}]
T4 : f16  local  [i12{2}, i13{s4}, i14{s5}, b15{1}]
T5 : f32  local  [i16{2}, i17{s4}, i18{s5}, b19{1}]
T6 : f32  local  [i20{2}, i21{s4}, i22{s5}, i23{s6}]
T7 : f32  global [i24{2}, i25{s4}, i26{s5}, i27{s6}]
T8 : f32  local  [b28{1}, u29{s1}, u30{s2}, u31{s3}, i32{2}]
     root       [i33{2}, i34{s4}, i35{s5}, i36{s6}]
T9 : bool global [b37{1}, u38{s1}, u39{s2}, u40{s3}, i41{2}]
T2 = cast(T0, f32)
T3 = max(T0, init=f16(-inf))
T4 = broadcast(T3, flags=[false, false, false, true])
T5 = cast(T4, f32)
T6 = sub(T2, T5)
T7 = exp(T6)
T8 = reshape(T6)
T9 = ge(T8, f32(-1.5))
)");
  runAndCheck(
      std::move(f),
      {randomTensor({2, 14, 16, 5}, 1, DataType::Float16), int64_t(14), int64_t(8), int64_t(10)},
      5);
}

// Outputs with zero elements and reductions over an empty dim need no kernel: a [7, 1] output
// next to a [7, 0] one is written (the kernel's loops would be empty), an empty sum is 0, an
// empty max is -inf, an empty var_mean gives var nan (0 / 0) and the mean its init value.
TEST_F(GeneralCore, EmptyOutputsAndEmptyReductions) {
  for (int64_t m : {0, 5}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).build();
      TensorView* y = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      f->addInput(y);
      TensorView* b = ops::mul(ops::broadcast(x, {false, true}), 2.0);
      f->addOutput(b);
      f->addOutput(ops::add(b, y));
      f->addOutput(ops::add(ops::sum(y, {1}), x));
      f->addOutput(ops::max(y, {1}));
      ops::VarMeanResult vm = ops::varMean(y, {1});
      f->addOutput(vm.var);
      f->addOutput(vm.mean);
    }
    runAndCheck(std::move(f), {randomTensor({7}, 1), randomTensor({7, m}, 2)}, 5);
  }
}

// The mean of samples holding inf is inf in any order: Welford's a + (x - a) / n would give
// inf - inf = NaN for a finite sample after an infinite mean.
TEST_F(GeneralCore, WelfordMeanOfInfiniteSamples) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addOutput(ops::varMean(x, {1}).mean);
    f->addOutput(ops::varMean(x, {0}).mean);
  }
  Tensor t = randomTensor({6, 40}, 1);
  auto* p = static_cast<float*>(t.data());
  p[0] = std::numeric_limits<float>::infinity();         // row 0, first: inf then finite samples
  p[45] = std::numeric_limits<float>::infinity();        // row 1, in the middle
  p[80 + 39] = -std::numeric_limits<float>::infinity();  // row 2, last
  runAndCheck(std::move(f), {t}, 40);
}

// A reshape's result broadcast against another tensor: its loops are all promoted to the
// output's, and its root indices come from its own merge ([16] back to [2, 8]).
TEST_F(GeneralCore, BroadcastReshapeInPromotedLoops) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 8}).build();
    TensorView* y = ops::TensorBuilder().shape({2, 8, 1}).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::add(ops::broadcast(ops::reshape(x, {16}), {true, true, false}), y));
  }
  runAndCheck(std::move(f), {randomTensor({2, 8}, 1), randomTensor({2, 8, 1}, 2)});
}

// x[2, 8] and reshape(x, [16]) meet in one [2, 8, 16] tensor: a schedule's merge of dims 0 and
// 1 would be the reshape's merged dim, dim 2. The reshape goes to its own segment.
TEST_F(GeneralCore, TensorMeetsItsOwnReshape) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 8}).build();
    f->addInput(x);
    TensorView* r = ops::broadcast(ops::reshape(x, {16}), {true, true, false});
    f->addOutput(ops::mul(r, ops::broadcast(ops::neg(x), {false, false, true})));
  }
  runAndCheck(std::move(f), {randomTensor({2, 8}, 1)});
}

// Two spaces meeting only through a full reduction's scalar (x[2, 3, 32] normalized by its min,
// y[63, 64] combined with that min): separate kernels, not one whose threads cover 4032 elements.
TEST_F(GeneralCore, SpacesMeetingOnlyThroughAScalar) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(3).build();
    TensorView* y = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* m = ops::min(x, {0, 1, 2});
    f->addOutput(ops::sub(x, ops::broadcast(m, {true, true, true})));
    f->addOutput(ops::mul(y, ops::broadcast(m, {true, true})));
  }
  runAndCheck(std::move(f), {randomTensor({2, 3, 32}, 1), randomTensor({63, 64}, 2)}, 192);
}

// Statistics of one row ([1, n] reduced over n) broadcast with a new leading dim: the broadcast
// at the reduced position is the row itself, not a statistic's dim (it was used for both loops).
TEST_F(GeneralCore, RowStatisticWithANewLeadingBroadcast) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({1, -1}).build();
    f->addInput(x);
    TensorView* d = ops::sub(x, ops::div(ops::sum(x, {1}, /*keepdim=*/true), 9.0));
    TensorView* v = ops::minimum(ops::div(ops::sum(ops::mul(d, d), {1}), 8.0), 3.0);
    f->addOutput(v);
    f->addOutput(ops::isNan(v));
    f->addOutput(ops::broadcast(v, {true, false}));
  }
  runAndCheck(std::move(f), {randomTensor({1, 9}, 3)}, 9);
}

// A dynamic reshape of [5, s, t] with s = 1 at run time squeezes that dim (concretization) in
// one kernel with the unsqueezed tensor: the squeezed dim, of symbolic extent, is merged away
// like a broadcast when the schedule propagates.
TEST_F(GeneralCore, SqueezeOfASymbolicDimBesideItsInput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({5, -1, -1}).build();
    f->addInput(x);
    TensorView* y = ops::mul(x, 2.0);
    f->addOutput(y);
    f->addOutput(ops::reshape(y, {5, 20, 22}));
  }
  runAndCheck(std::move(f), {randomTensor({5, 1, 440}, 1)});
}

// An [8] output computed in the loops of a [1, 4, s, 8] one (an iota broadcast against an input,
// and the iota squeezed back): it is written once, at index 0 of the dims it lacks, not by every
// iteration (padding iterations past the flattened space included, where its producers are not
// computed).
TEST_F(GeneralCore, SmallerOutputInALargerLoopIsWrittenOnce) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({1, 4, -1, 8}).build();
    f->addInput(x);
    TensorView* b =
        ops::broadcast(ops::arange(-8.0, 0.0, 1.0, DataType::Float32), {true, true, true, false});
    f->addOutput(ops::sub(b, x));
    f->addOutput(ops::squeeze(b, {0, 1, 2}));
  }
  runAndCheck(std::move(f), {randomTensor({1, 4, 5, 8}, 1)});
}

// An input expanded along a dim ([1, 10, 5, 7] to [7, 10, 5, 7]) combined with a real
// [7, 10, 5, 7] input stored dim-0-innermost: the shared loop is promoted to the real dim,
// whose history gives both tensors their indices (with the expanded broadcast as the promoted
// ID, the real tensor had none).
TEST_F(GeneralCore, ExpandedAndRealDimShareALoop) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({7, 10, 5, 7}).dtype(DataType::Float16).build();
    TensorView* y = ops::TensorBuilder().shape({1, 10, 5, 7}).dtype(DataType::BFloat16).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::isNan(x));
    // The expanded tensors come first in the loop they share with x's.
    TensorView* e = ops::cast(ops::expand(y, {7, -1, -1, -1}), DataType::Bool);
    f->addOutput(ops::logicalOr(e, ops::cast(x, DataType::Bool)));
  }
  // x's storage order is [1, 3, 2, 0] outermost first (dim 0 innermost).
  Tensor storage = randomTensor({10, 5, 7, 7}, 1, DataType::Float16);
  const std::vector<int64_t> to_logical = {3, 0, 1, 2};
  Tensor x = storage.permute(to_logical);
  runAndCheck(std::move(f), {x, randomTensor({1, 10, 5, 7}, 2, DataType::BFloat16)});
}

// A pad of an expanded dim ([31] broadcast and expanded to [31, 12, 6], padded by (-1, 1) on
// the last dim): the padded index is checked against the expanded extent (6), not the
// broadcast's 1, which made every element the pad value.
TEST_F(GeneralCore, PadOfAnExpandedDim) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({31}).build();
    f->addInput(x);
    TensorView* e = ops::expand(ops::broadcast(ops::exp(x), {false, true, true}), {31, 12, 6});
    f->addOutput(e);
    f->addOutput(ops::pad(e, {-1, 1}, 0.25));
    f->addOutput(ops::cat({e, ops::neg(e)}, 2));
  }
  runAndCheck(std::move(f), {randomTensor({31}, 1)});
}

// The rotary pattern cat([-x[:, 10:], x[:, :10]], 1) * x + ..., broadcast to [22, 58, 1]: the
// broadcast's loops are promoted to a pad's, whose range is its padded extent (58), not its
// input's (48), which had left the last 10 columns unwritten.
TEST_F(GeneralCore, RotaryCatInPromotedLoops) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({22, 58}).build();
    f->addInput(x);
    TensorView* lo = ops::slice(x, 1, 0, 10);
    TensorView* rot = ops::cat({ops::neg(ops::slice(x, 1, 10, 58)), lo}, -1);
    TensorView* y = ops::add(ops::mul(x, rot), ops::mul(rot, 1.0));
    f->addOutput(lo);
    f->addOutput(ops::sub(ops::broadcast(y, {false, false, true}), -0.75));
  }
  runAndCheck(std::move(f), {randomTensor({22, 58}, 1)});
}

// iota(4) broadcast to [1, 4, 1] feeds a transposed [4, 1, 1] output and, cast, a
// comparison with an [s, 4, t] input: the two outputs' loops cannot be one (an output's
// broadcast axis never loops over a real dim), so the [s, 4, t] side recomputes the iota and
// its broadcast in its own loops instead of reading registers other threads wrote.
TEST_F(GeneralCore, ProducerOfTwoLoopNestsIsRecomputed) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(3).dtype(DataType::Float64).build();
    TensorView* y = ops::TensorBuilder().shape({1, 4, -1}).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* io = ops::broadcast(ops::iota(4, 0, -1, DataType::Int32), {true, false, true});
    f->addOutput(
        ops::lt(ops::cast(io, DataType::Float64), ops::div(x, ops::cast(y, DataType::Float64))));
    f->addOutput(ops::permute(io, {1, 0, 2}));
  }
  runAndCheck(std::move(f),
              {randomTensor({6, 4, 20}, 1, DataType::Float64), randomTensor({1, 4, 20}, 2)});
}

// A bias-like [4] input feeds, through two broadcasts, two uses of one [5, 4] loop nest
// (out = (x + exp(b)) * float(b != 0)): the producer's schedule splits its own [4] where the
// consumers split the merged [5, 4], and inlining still puts both chains in the consumers' loops
// (the broadcast's loop pieces stand for no dim; they had been counted as one).
TEST_F(GeneralCore, BiasThroughTwoBroadcastsInOneLoopNest) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({5, 4}).build();
    TensorView* b = ops::TensorBuilder().shape({4}).build();
    f->addInput(x);
    f->addInput(b);
    TensorView* y = ops::add(x, ops::broadcast(ops::exp(b), {true, false}));
    TensorView* nz =
        ops::cast(ops::logicalOr(ops::cast(b, DataType::Bool), ops::cast(b, DataType::Bool)),
                  DataType::Float32);
    f->addOutput(y);
    f->addOutput(ops::mul(y, ops::broadcast(nz, {true, false})));
  }
  runAndCheck(std::move(f), {randomTensor({5, 4}, 1), randomTensor({4}, 2)});
}

// A sum over every dim of [24, 5] broadcast and expanded to [8, 24, 5]: the input's cache and
// the reduction's rFactor share their loops (the expanded broadcast and the reduced dim of the
// same extent are one space); the cache had been left in its own loops, its registers read by
// other threads.
TEST_F(GeneralCore, SumOverAnExpandedDim) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({24, 5}).build();
    f->addInput(x);
    TensorView* e = ops::expand(ops::broadcast(x, {true, false, false}), {8, -1, -1});
    f->addOutput(ops::sum(e, {}));
    f->addOutput(ops::sum(e, {0, 1}));
  }
  runAndCheck(std::move(f), {randomTensor({24, 5}, 1)}, 8 * 24 * 5);
}

// The same with the expanded tensor as the fusion's input (stride 0 along dim 0).
TEST_F(GeneralCore, SumOverAnExpandedInput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({1, 24, 5}).build();
    f->addInput(x);
    TensorView* e = ops::expand(x, {8, -1, -1});
    f->addOutput(ops::sum(e, {}));
  }
  runAndCheck(std::move(f), {randomTensor({1, 24, 5}, 1)}, 8 * 24 * 5);
}

// An outer (grid) reduction whose result, broadcast, meets another input's dims
// (y[14, 1, 21] >= max(x[14, 10, 1], dim 0)): the epilogue runs over dims the reduction's result
// does not have, so it gets its own kernel (it had read the result in blocks that never held
// it).
TEST_F(GeneralCore, ReductionEpilogueOverOtherDims) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 10, 1}).build();
    TensorView* y = ops::TensorBuilder().shape({14, 1, 21}).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* m = ops::max(x, {0}, /*keepdim=*/true);
    f->addOutput(ops::mul(ops::cast(ops::ge(y, m), DataType::Float32), y));
  }
  runAndCheck(std::move(f), {randomTensor({14, 10, 1}, 1), randomTensor({14, 1, 21}, 2)});
}

// An [N, 1] output also read by an [N, 3] output in one pointwise kernel: the reader uses a
// register copy (it had read global memory the kernel writes, which another thread stores a
// row later: unwritten elements for odd row starts). Several sizes through one cache.
TEST_F(GeneralCore, OutputReadByAWiderOutput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 3}).dtype(DataType::Int64).build();
    TensorView* a = ops::TensorBuilder().shape({-1, 1}).build();
    TensorView* m = ops::TensorBuilder().shape({1, 1}).build();
    f->addInput(x);
    f->addInput(a);
    f->addInput(m);
    TensorView* am = ops::mul(a, m);
    f->addOutput(am);
    f->addOutput(ops::lerp(am, ops::cast(ops::eq(x, x), DataType::Float32), 0.25));
  }
  FusionExecutorCache cache(std::move(f), options());
  for (int64_t n : {7, 34, 20, 5}) {
    Tensor x = Tensor::empty({n, 3}, DataType::Int64);
    fillRandom(x, uint64_t(n));
    std::vector<eval::Argument> args{x, randomTensor({n, 1}, 2), randomTensor({1, 1}, 3)};
    SCOPED_TRACE("n = " + std::to_string(n));
    test::runAndCheck(cache, args);
  }
}

// A reduction over max(a[1, 2, 315], b[2, 1, 1]): the two inputs map rows and columns onto each
// other permissively, so both pieces of the row split did; the block's TIDy rows are copied to
// the tensors after the reduction by their exact match (they had stayed serial, and only
// threadIdx.y == 0 stored: half the rows unwritten).
TEST_F(GeneralCore, ReductionOfInputsBroadcastAlongDifferentDims) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* a = ops::TensorBuilder().shape({1, 2, 315}).build();
    TensorView* b = ops::TensorBuilder().shape({2, 1, 1}).build();
    f->addInput(a);
    f->addInput(b);
    f->addOutput(ops::abs(ops::sum(ops::maximum(a, b), {2}, /*keepdim=*/true)));
  }
  runAndCheck(std::move(f), {randomTensor({1, 2, 315}, 1), randomTensor({2, 1, 1}, 2)}, 315);
}

// An output expanded along a new dim next to an output of as many real dims: the expanded one
// is the pointwise reference, written over its expanded dim (fuzz seed 391 is the case where
// the other reference left most of it unwritten).
TEST_F(GeneralCore, ExpandedOutputBesideAnotherOutput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 6}).dtype(DataType::Int32).build();
    f->addInput(x);
    TensorView* h = ops::cast(x, DataType::Float16);
    f->addOutput(ops::broadcast(ops::gt(h, 0.0), {true, true, false, false}));
    f->addOutput(ops::expand(ops::broadcast(h, {false, false, true}), {-1, -1, 12}));
  }
  Tensor x = Tensor::empty({6, 6}, DataType::Int32);
  fillRandom(x, 1);
  runAndCheck(std::move(f), {x});
}

// A slice to nothing read by a cat, beside a non-empty output: the empty intermediate becomes
// an empty full (remove_empty.h), never a kernel output whose empty loops would launch no
// threads for a non-empty neighbour (fuzz seed 876 had such a segment).
TEST_F(GeneralCore, EmptySliceReadByACat) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, -1}).build();
    f->addInput(x);
    TensorView* s = ops::slice(x, 1, 1, 1);
    f->addOutput(ops::cat({ops::exp(x), s, x}, 1));
    f->addOutput(ops::gt(x, 0.0));
  }
  runAndCheck(std::move(f), {randomTensor({3, 1}, 1)});
}

// One input read in two index spaces of one loop nest: x[1, 12] padded to [1, 20] and permuted
// feeds y[20, 12] = relu(max(sign(x), rsqrt(pad))) with x's 12 as y's dim 1, while the pad reads
// x at dim 0's index minus the padding. The pad's input takes the index of its own resize (it
// had taken dim 1's, its exact set's, and read x unpadded).
TEST_F(GeneralCore, PaddedInputReadInTwoIndexSpaces) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({1, 12}).build();
    f->addInput(x);
    TensorView* p = ops::pad(x, {4, 4});
    TensorView* t = ops::permute(p, {1, 0});
    TensorView* a = ops::rsqrt(t);
    f->addOutput(a);
    f->addOutput(ops::relu(ops::maximum(ops::sign(x), ops::relu(a))));
    f->addOutput(ops::set(p));
  }
  runAndCheck(std::move(f), {randomTensor({1, 12}, 1)});
}

// Outputs of zero elements whose dims are all expanded broadcasts (expand to [0, 5]) have no
// loop to leave empty: their kernel is not launched (it had stored element 0 of an empty buffer).
TEST_F(GeneralCore, EmptyExpandedOutput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({1, 1}).build();
    f->addInput(x);
    f->addOutput(ops::expand(ops::exp(x), {0, 5}));
    f->addOutput(ops::mul(x, 2.0));
  }
  runAndCheck(std::move(f), {randomTensor({1, 1}, 1)});
}

// A reshape of [s0, s1, 64] to [64] at s0 = s1 = 1 (concretized to a squeeze of dims of
// symbolic extent) under the vectorized pointwise schedule: the input is read from global
// memory, not cached (a cache would loop over the squeezed dims outside the consumer's loops,
// and its innermost loop ID, the squeezed one, was vectorized).
TEST_F(GeneralCore, SqueezeOfSymbolicDimsVectorized) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, -1, 64}).build();
    f->addInput(x);
    f->addOutput(ops::reshape(x, {64}));
  }
  runAndCheck(std::move(f), {randomTensor({1, 1, 64}, 1)});
}

// Integer division of tensors by zero and of the most negative value by -1 never traps: the
// kernel gives what the evaluator gives (docs/ops.md; on the host backend it was SIGFPE).
TEST_F(GeneralCore, IntegerDivisionNeverTraps) {
  for (const char* dt : {"i32", "i64"}) {
    const std::string t = dt;
    auto f = ir::parseFusion(
        "inputs: T0, T1\noutputs: T2, T3, T4, T5\n\n# tensors\n"
        "T0 : " +
        t + " global [i0{6}]\nT1 : " + t +
        " global [i1{6}]\n"
        "T2 : " +
        t + " global [i2{6}]\nT3 : " + t +
        " global [i3{6}]\n"
        "T4 : " +
        t + " global [i4{6}]\nT5 : " + t +
        " global [i5{6}]\n\n"
        "# math\nT2 = div(T0, T1)\nT3 = mod(T0, T1)\n"
        "T4 = ceil_div(T0, T1)\nT5 = fmod(T0, T1)\n");
    const DataType dtype = t == "i32" ? DataType::Int32 : DataType::Int64;
    Tensor a = Tensor::empty({6}, dtype);
    Tensor b = Tensor::empty({6}, dtype);
    const int64_t lo =
        t == "i32" ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    const std::vector<int64_t> av = {7, -7, lo, lo, 0, 9};
    const std::vector<int64_t> bv = {0, 0, -1, 0, 0, -2};
    for (size_t i = 0; i < av.size(); ++i) {
      if (dtype == DataType::Int32) {
        a.dataAs<int32_t>()[i] = int32_t(av[i]);
        b.dataAs<int32_t>()[i] = int32_t(bv[i]);
      } else {
        a.dataAs<int64_t>()[i] = av[i];
        b.dataAs<int64_t>()[i] = bv[i];
      }
    }
    runAndCheck(std::move(f), {a, b});
  }
}

// ceil_div of floating tensors (reachable through the text form) is ceil(a / b) in kernels as in
// the evaluator (kernels computed (a + b - 1) / b).
TEST_F(GeneralCore, FloatCeilDivMatchesTheEvaluator) {
  auto f = ir::parseFusion(
      "inputs: T0, T1\noutputs: T2\n\n# tensors\nT0 : f32 global [i0{64}]\n"
      "T1 : f32 global [i1{64}]\nT2 : f32 global [i2{64}]\n\n# math\nT2 = ceil_div(T0, T1)\n");
  Tensor a = randomTensor({64}, 1);
  Tensor b = randomTensor({64}, 2);
  for (int64_t i = 0; i < 64; ++i) {
    b.dataAs<float>()[i] =
        b.dataAs<float>()[i] >= 0 ? b.dataAs<float>()[i] + 0.5f : b.dataAs<float>()[i] - 0.5f;
  }
  runAndCheck(std::move(f), {a, b});
}

// A sum of f32 into an i64 output says where it converts: a cast of each element first, in
// kernels and in the evaluator alike (the evaluator had summed in double and converted the sum).
// The text form rejects the sum that would convert implicitly (docs/text-format.md, "Types").
TEST_F(GeneralCore, FloatSumIntoAnIntegerOutput) {
  auto f = ir::parseFusion(
      "inputs: T0\noutputs: T2\n\n# tensors\nT0 : f32 global [i0{4}, i1{64}]\n"
      "T1 : i64 local [i2{4}, i3{64}]\nT2 : i64 global [i4{4}, r5{64}]\n\n# math\n"
      "T1 = cast(T0, i64)\nT2 = sum(T1, init=0)\n");
  Tensor x = randomTensor({4, 64}, 1);
  for (int64_t i = 0; i < 4 * 64; ++i) x.dataAs<float>()[i] *= 3.0f;
  runAndCheck(std::move(f), {x}, 64);
  try {
    ir::parseFusion(
        "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}, i1{64}]\n"
        "T1 : i64 global [i2{4}, r3{64}]\nT1 = sum(T0, init=0)\n");
    FAIL() << "a sum of f32 into i64 parsed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("T0 is f32, but sum computes in i64"), std::string::npos)
        << e.what();
  }
}

// Rows holding infinities: mean, var_mean (Welford) and an outer sum give what the reference
// gives (inf, -inf, and nan where +inf meets -inf or a variance meets an infinity), for a row
// short enough to be one thread's, one block's, and several blocks'.
TEST_F(GeneralCore, RowsWithInfinities) {
  for (int64_t w : {7, 1000, 5000}) {
    SCOPED_TRACE("width " + std::to_string(w));
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      f->addOutput(ops::mean(x, {1}));
      auto vm = ops::varMean(x, {1}, 1);
      f->addOutput(vm.var);
      f->addOutput(vm.mean);
      f->addOutput(ops::sum(x, {0}));
    }
    Tensor t = randomTensor({4, w}, 43);
    const double inf = std::numeric_limits<double>::infinity();
    t.setDoubleLinear(3, inf);          // row 0: +inf
    t.setDoubleLinear(w + 2, -inf);     // row 1: -inf
    t.setDoubleLinear(2 * w + 1, inf);  // row 2: both
    t.setDoubleLinear(2 * w + 2, -inf);
    runAndCheck(std::move(f), {t}, w);
  }
}

// Reductions whose init is not the identity: a sum's init is added once, a Welford's (avg, m2, n)
// is combined once (docs/ops.md), whatever the schedule splits the reduction into (threads,
// blocks, rFactor partials each started at the init and counted it once per partial). Inner and
// outer reductions, wide ones (grid reductions), and an empty reduced dim (the init itself).
TEST_F(GeneralCore, NonIdentityReductionInits) {
  struct Case {
    int64_t rows, cols;
    int axis;
  };
  for (Case c : {Case{7, 1000, 1}, Case{4, 70000, 1}, Case{3000, 9, 0}, Case{5, 0, 1}}) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + " cols " + std::to_string(c.cols) + " axis " +
                 std::to_string(c.axis));
    const std::string r0 = c.axis == 0 ? "r" : "i";
    const std::string r1 = c.axis == 1 ? "r" : "i";
    // The reduced shape with IterDomains k and k + 1 (names are unique per fusion).
    auto shape = [&](int k) {
      return "[" + r0 + std::to_string(k) + "{" + std::to_string(c.rows) + "}, " + r1 +
             std::to_string(k + 1) + "{" + std::to_string(c.cols) + "}]";
    };
    auto sums = ir::parseFusion("inputs: T0\noutputs: T1, T2\nT0 : f32 global [i0{" +
                                std::to_string(c.rows) + "}, i1{" + std::to_string(c.cols) +
                                "}]\nT1 : f32 global " + shape(2) + "\nT2 : f32 global " +
                                shape(4) + "\nT1 = sum(T0, init=1.5)\nT2 = max(T0, init=0.25)\n");
    runAndCheck(std::move(sums), {randomTensor({c.rows, c.cols}, 40)}, c.axis ? c.cols : c.rows);
    auto welford = ir::parseFusion(
        "inputs: T0\noutputs: T1, T2, T3\nT0 : f32 global [i0{" + std::to_string(c.rows) +
        "}, i1{" + std::to_string(c.cols) + "}]\nT1 : f32 global " + shape(2) +
        "\nT2 : f32 global " + shape(4) + "\nT3 : i64 global " + shape(6) +
        "\nT1, T2, T3 = welford(T0, 0.0, 1, init_avg=2.0, init_m2=5.0, init_n=3)\n");
    runAndCheck(std::move(welford), {randomTensor({c.rows, c.cols}, 41)}, c.axis ? c.cols : c.rows);
  }
  // prod over a short row (random values in [-1, 1) would underflow a long one).
  auto prod = ir::parseFusion(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{9}, i1{24}]\nT1 : f32 global [i2{9}, "
      "r3{24}]\nT1 = prod(T0, init=-2.0)\n");
  runAndCheck(std::move(prod), {randomTensor({9, 24}, 42)}, 24);
}

}  // namespace
}  // namespace loom::runtime
