// SPDX-License-Identifier: Apache-2.0
// matmul and linear end to end: each is a segment of its own (segmenter::MatmulWork) run by
// MatmulSegmentExecutor, checked against the reference evaluator (double precision) with the
// outputs poisoned, for 1-D, 2-D and batched broadcast shapes, transposed and strided inputs,
// linear with and without a bias, f32 / bf16 / f16, fusions where pointwise kernels surround
// the matmul, and the epilogues its GEMM applies (bias, relu, gelu_tanh, a cast). Built twice: host
// backend (emu: the blocked host GEMM) and CUDA (gpu: cuBLASLt).
#include <gtest/gtest.h>

#include <numeric>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/gemm.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/runtime/matmul_executor.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

class MatmulExec : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static TensorView* input(Fusion& f, int64_t rank, DataType dtype) {
    TensorView* tv = ops::TensorBuilder().rank(rank).dtype(dtype).build();
    f.addInput(tv);
    return tv;
  }
  // Symbolic sizes, except that a size-1 dim is declared a broadcast (as nvFuser's frontend
  // declares one): only those stretch against the other operand's batch dims.
  static TensorView* input(Fusion& f, const std::vector<int64_t>& shape, DataType dtype) {
    std::vector<int64_t> sizes;
    for (int64_t s : shape) sizes.push_back(s == 1 ? 1 : -1);
    TensorView* tv = ops::TensorBuilder().shape(sizes).dtype(dtype).build();
    f.addInput(tv);
    return tv;
  }

  // Runs the fusion on `args` through a cache (poisoned outputs) and compares every output with
  // the reference evaluator at the tolerance of a `k`-term reduction; returns the cache's last
  // runtime's segment kinds ("kernel", "matmul", ...).
  static std::vector<std::string> check(std::unique_ptr<Fusion> fusion,
                                        const std::vector<eval::Argument>& args, int64_t k,
                                        RuntimeOptions options = poisonedOptions()) {
    FusionExecutorCache cache(std::move(fusion), options);
    std::vector<std::string> kinds;
    for (const SegmentRecord& r : test::runAndCheck(cache, args, k).segments) {
      kinds.push_back(r.kind);
    }
    return kinds;
  }

  // matmul of operands of these shapes and dtype.
  static void checkMatmul(std::vector<int64_t> a_shape, std::vector<int64_t> b_shape,
                          DataType dtype, uint64_t seed) {
    SCOPED_TRACE("matmul [" + join(a_shape) + "] x [" + join(b_shape) + "] " +
                 std::string(dataTypeName(dtype)));
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* a = input(*fusion, a_shape, dtype);
      TensorView* b = input(*fusion, b_shape, dtype);
      fusion->addOutput(ops::matmul(a, b));
    }
    const int64_t k = a_shape.back();
    std::vector<eval::Argument> args{test::randomTensor(a_shape, dtype, seed),
                                     test::randomTensor(b_shape, dtype, seed + 1)};
    EXPECT_EQ(check(std::move(fusion), args, k), std::vector<std::string>{"matmul"});
  }
};

TEST_F(MatmulExec, VectorsMatricesAndBroadcastBatchesMatchReference) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7}, {7}},                 // dot: a 0-D result
      {{5}, {5, 3}},              // a row: [3]
      {{4, 5}, {5}},              // a column: [4]
      {{33, 70}, {70, 65}},       // more than one tile of the host GEMM in m and n
      {{2, 1, 3, 4}, {3, 4, 5}},  // batch dims broadcast both ways: [2, 3, 3, 5]
      {{2, 3, 4}, {4, 6}},        // a shared weight: [2, 3, 6]
      {{4}, {2, 4, 3}},           // a row against a batch: [2, 3]
      {{3, 2, 4}, {1, 4, 5}},     // a size-1 batch dim: [3, 2, 5]
      {{300}, {300, 2}},          // k past one panel (256)
  };
  uint64_t seed = 1;
  for (const auto& [a, b] : shapes) checkMatmul(a, b, DataType::Float32, seed += 2);
}

TEST_F(MatmulExec, HalfTypesAccumulateInF32) {
  for (DataType d : {DataType::BFloat16, DataType::Float16}) {
    checkMatmul({6, 40}, {40, 9}, d, 11);
    checkMatmul({2, 3, 16}, {2, 16, 5}, d, 13);
  }
}

TEST_F(MatmulExec, TransposedAndStridedInputsReadInPlace) {
  // a^T and b^T views (column-major), and a view with a row stride past its width.
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* a = input(*fusion, 2, DataType::Float32);
    TensorView* b = input(*fusion, 3, DataType::Float32);
    fusion->addOutput(ops::matmul(a, b));
  }
  Tensor a_t = test::randomTensor({9, 6}, DataType::Float32, 21);  // a is its transpose [6, 9]
  const std::vector<int64_t> swap{1, 0};
  Tensor b_base =
      test::randomTensor({2, 5, 9}, DataType::Float32, 22);  // b [2, 9, 5] as a permuted view
  const std::vector<int64_t> perm{0, 2, 1};
  std::vector<eval::Argument> args{a_t.permute(swap), b_base.permute(perm)};
  EXPECT_EQ(check(std::move(fusion), args, 9), std::vector<std::string>{"matmul"});

  auto sliced = std::make_unique<Fusion>();
  {
    FusionGuard g(sliced.get());
    TensorView* a = input(*sliced, 2, DataType::Float32);
    TensorView* b = input(*sliced, 2, DataType::Float32);
    sliced->addOutput(ops::matmul(a, b));
  }
  Tensor wide = test::randomTensor({4, 16}, DataType::Float32, 23);
  // Every second column of `wide`: strides [16, 2], no unit-strided dim.
  Tensor every_second(wide.storage(), DataType::Float32, {4, 8}, {16, 2});
  std::vector<eval::Argument> args2{every_second,
                                    test::randomTensor({8, 3}, DataType::Float32, 24)};
  EXPECT_EQ(check(std::move(sliced), args2, 8), std::vector<std::string>{"matmul"});
}

TEST_F(MatmulExec, LinearWithAndWithoutBiasMatchesReference) {
  for (DataType d : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
    SCOPED_TRACE(std::string(dataTypeName(d)));
    for (int bias_rank : {-1, 0, 1}) {  // -1: no bias
      auto fusion = std::make_unique<Fusion>();
      {
        FusionGuard g(fusion.get());
        TensorView* x = input(*fusion, 3, d);
        TensorView* w = input(*fusion, 2, d);
        TensorView* bias = bias_rank < 0 ? nullptr : input(*fusion, bias_rank, d);
        fusion->addOutput(ops::linear(x, w, bias));
      }
      std::vector<eval::Argument> args{test::randomTensor({2, 5, 24}, d, 31),
                                       test::randomTensor({7, 24}, d, 32)};
      if (bias_rank == 0) args.emplace_back(test::randomTensor({}, d, 33));
      if (bias_rank == 1) args.emplace_back(test::randomTensor({7}, d, 33));
      EXPECT_EQ(check(std::move(fusion), args, 24), std::vector<std::string>{"matmul"});
    }
  }
  // A 1-D input and a 1-D weight: a dot product with a 0-D bias.
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* x = input(*fusion, 1, DataType::Float32);
    TensorView* w = input(*fusion, 1, DataType::Float32);
    TensorView* bias = input(*fusion, 0, DataType::Float32);
    fusion->addOutput(ops::linear(x, w, bias));
  }
  std::vector<eval::Argument> args{test::randomTensor({12}, DataType::Float32, 41),
                                   test::randomTensor({12}, DataType::Float32, 42),
                                   test::randomTensor({}, DataType::Float32, 43)};
  EXPECT_EQ(check(std::move(fusion), args, 12), std::vector<std::string>{"matmul"});
}

TEST_F(MatmulExec, PointwiseAroundAMatmulIsThreeSegments) {
  // relu(x * 2) feeds the linear; its result goes through tanh: kernel, matmul, kernel.
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* x = input(*fusion, 2, DataType::BFloat16);
    TensorView* w = input(*fusion, 2, DataType::BFloat16);
    TensorView* bias = input(*fusion, 1, DataType::BFloat16);
    TensorView* h = ops::cast(ops::relu(ops::mul(x, 2.0)), DataType::BFloat16);
    TensorView* y = ops::linear(h, w, bias);
    fusion->addOutput(ops::cast(ops::tanh(y), DataType::BFloat16));
  }
  std::vector<eval::Argument> args{test::randomTensor({8, 32}, DataType::BFloat16, 51),
                                   test::randomTensor({16, 32}, DataType::BFloat16, 52),
                                   test::randomTensor({16}, DataType::BFloat16, 53)};
  EXPECT_EQ(check(std::move(fusion), args, 32),
            (std::vector<std::string>{"kernel", "matmul", "kernel"}));
}

TEST_F(MatmulExec, ContractedSizesThatDifferAtRunTimeAreUserErrors) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* a = input(*fusion, 2, DataType::Float32);
    TensorView* b = input(*fusion, 2, DataType::Float32);
    fusion->addOutput(ops::matmul(a, b));
  }
  FusionExecutorCache cache(std::move(fusion), poisonedOptions());
  std::vector<eval::Argument> args{test::randomTensor({3, 4}, DataType::Float32, 1),
                                   test::randomTensor({5, 2}, DataType::Float32, 2)};
  const std::string msg = loom::test::userErrorOf([&] { (void)cache.run(args); });
  EXPECT_NE(msg.find("matmul: the contracted sizes differ: T0 [3, 4] has 4 in its last dim, "
                     "T1 [5, 2] has 5 in its second-to-last dim"),
            std::string::npos)
      << msg;
}

TEST_F(MatmulExec, AKernelOfAMatmulIsAUserError) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard g(fusion.get());
  TensorView* a = input(*fusion, 2, DataType::Float32);
  TensorView* b = input(*fusion, 2, DataType::Float32);
  fusion->addOutput(ops::matmul(a, b));
  exec::KernelExecutor ke;
  const std::string msg = loom::test::userErrorOf(
      [&] { ke.compile(*fusion, exec::makeComputeDevice(testBackend()), {}); });
  EXPECT_NE(msg.find("has no kernel form: matmul and linear run as segments of their own"),
            std::string::npos)
      << msg;
}

// The epilogues (segmenter/matmul_epilogue.h): each fusion is one matmul segment whose GEMM
// applies the bias, the activation and the cast back; against the reference evaluator (which
// rounds a bf16 / f16 product before reading it in f32, where the segment rounds once: within
// the tolerance of the 16-bit output).
class MatmulEpilogueExec : public MatmulExec {
 protected:
  // Runs and checks `fusion`; expects one matmul segment whose parameters are `params`.
  static void expectOneSegment(std::unique_ptr<Fusion> fusion,
                               const std::vector<eval::Argument>& args, int64_t k,
                               const std::string& params) {
    FusionExecutorCache cache(std::move(fusion), poisonedOptions());
    const test::CheckedRun run = test::runAndCheck(cache, args, k);
    ASSERT_EQ(run.segments.size(), 1u);
    EXPECT_EQ(run.segments[0].kind, "matmul");
    EXPECT_EQ(run.segments[0].params, params);
  }
  // x [2, 5, 48] and w [24, 48] (and a bias [24]) of `d`.
  static std::vector<eval::Argument> linearArgs(DataType d, bool bias, uint64_t seed) {
    std::vector<eval::Argument> args{test::randomTensor({2, 5, 48}, d, seed),
                                     test::randomTensor({24, 48}, d, seed + 1)};
    if (bias) args.emplace_back(test::randomTensor({24}, d, seed + 2));
    return args;
  }
};

TEST_F(MatmulEpilogueExec, LinearGeluTanhMatchesReference) {
  // gelu(linear(x, w), approximate='tanh'): CUBLASLT_EPILOGUE_GELU (GELU_BIAS with a bias).
  for (bool bias : {false, true}) {
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* x = input(*fusion, 3, DataType::Float32);
      TensorView* w = input(*fusion, 2, DataType::Float32);
      TensorView* b = bias ? input(*fusion, 1, DataType::Float32) : nullptr;
      fusion->addOutput(ops::gelu(ops::linear(x, w, b), ops::GeluApproximation::Tanh));
    }
    expectOneSegment(std::move(fusion), linearArgs(DataType::Float32, bias, 71), 48,
                     bias ? "linear with bias + gelu_tanh in the epilogue"
                          : "linear with gelu_tanh in the epilogue");
  }
}

TEST_F(MatmulEpilogueExec, LinearReluMatchesReference) {
  // relu(linear(x, w, b)): CUBLASLT_EPILOGUE_RELU_BIAS; on bf16 / f16 products as they are.
  for (DataType d : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
    SCOPED_TRACE(std::string(dataTypeName(d)));
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* x = input(*fusion, 3, d);
      TensorView* w = input(*fusion, 2, d);
      TensorView* b = input(*fusion, 1, d);
      // ops::relu computes a bf16 / f16 product in f32; cast back, the GEMM writes d.
      fusion->addOutput(ops::cast(ops::relu(ops::linear(x, w, b)), d));
    }
    expectOneSegment(std::move(fusion), linearArgs(d, true, 81), 48,
                     "linear with bias + relu in the epilogue");
  }
}

TEST_F(MatmulEpilogueExec, HalfLinearBiasGeluCastKeepsTheGeluAKernel) {
  // The bf16 MLP's first half: linear with a bias, read in f32, the tanh gelu, cast back. Only
  // the bias joins the GEMM (a gelu would miss the product's 16-bit rounding).
  for (DataType d : {DataType::BFloat16, DataType::Float16}) {
    SCOPED_TRACE(std::string(dataTypeName(d)));
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* x = input(*fusion, 3, d);
      TensorView* w = input(*fusion, 2, d);
      TensorView* b = input(*fusion, 1, d);
      TensorView* y = ops::gelu(ops::cast(ops::linear(x, w, b), DataType::Float32),
                                ops::GeluApproximation::Tanh);
      fusion->addOutput(ops::cast(y, d));
    }
    EXPECT_EQ(check(std::move(fusion), linearArgs(d, true, 101), 48),
              (std::vector<std::string>{"matmul", "kernel"}));
  }
}

TEST_F(MatmulEpilogueExec, HalfMatmulCastBackWithoutActivationStaysAsItIs) {
  // cast(cast(matmul(a, b), f32), bf16) with nothing between: no epilogue to apply; the casts
  // stay a kernel (the GEMM writes bf16 either way), and the result is the reference's.
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* a = input(*fusion, 3, DataType::BFloat16);
    TensorView* b = input(*fusion, 3, DataType::BFloat16);
    fusion->addOutput(
        ops::cast(ops::cast(ops::matmul(a, b), DataType::Float32), DataType::BFloat16));
  }
  std::vector<eval::Argument> args{test::randomTensor({3, 17, 40}, DataType::BFloat16, 91),
                                   test::randomTensor({3, 40, 9}, DataType::BFloat16, 92)};
  EXPECT_EQ(check(std::move(fusion), args, 40), (std::vector<std::string>{"matmul", "kernel"}));
}

TEST_F(MatmulEpilogueExec, ErfGeluAndASharedProductStayKernels) {
  // The erf gelu has no cuBLASLt epilogue; a product also returned must be written as it is.
  for (bool erf : {true, false}) {
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* x = input(*fusion, 3, DataType::Float32);
      TensorView* w = input(*fusion, 2, DataType::Float32);
      TensorView* y = ops::linear(x, w);
      fusion->addOutput(
          ops::gelu(y, erf ? ops::GeluApproximation::None : ops::GeluApproximation::Tanh));
      if (!erf) fusion->addOutput(y);
    }
    EXPECT_EQ(check(std::move(fusion), linearArgs(DataType::Float32, false, 111), 48),
              (std::vector<std::string>{"matmul", "kernel"}));
  }
}

#ifndef LOOM_RUNTIME_TEST_CUDA
// The host backend, but its GEMM reads operands only as cuBLASLt does (exec::blasOperand): the
// executor's dense copies run here as they would before a cuBLASLt call.
class BlasRulesDevice final : public exec::ComputeDevice {
 public:
  exec::Backend backend() const override { return host_->backend(); }
  int index() const override { return 0; }
  Device tensorDevice() const override { return host_->tensorDevice(); }
  std::optional<cuda::DeviceProperties> gpuProperties() const override { return std::nullopt; }
  codegen::CodegenOptions codegenOptions() const override { return host_->codegenOptions(); }
  void require(std::string_view purpose) const override { host_->require(purpose); }
  std::unique_ptr<exec::LoadedKernel> load(const codegen::GeneratedKernel& kernel,
                                           PhaseTimer& timer) const override {
    return host_->load(kernel, timer);
  }
  Tensor empty(std::span<const int64_t> sizes, DataType dtype, CUstream s) const override {
    return host_->empty(sizes, dtype, s);
  }
  void zero(const Tensor& t, CUstream s) const override { host_->zero(t, s); }
  void poison(const Tensor& t, CUstream s) const override { host_->poison(t, s); }
  void copyBytes(void* dst, const void* src, size_t n, CUstream s) const override {
    host_->copyBytes(dst, src, n, s);
  }
  void copyElements(const Tensor& dst, const Tensor& src, CUstream s) const override {
    host_->copyElements(dst, src, s);
  }
  Tensor copyForOutput(const Tensor& t, CUstream s) const override {
    return host_->copyForOutput(t, s);
  }
  void gemm(const exec::GemmProblem& p, CUstream s) const override {
    // What cuBLASLt would be handed: every operand readable, the bias packed.
    const ir::MatmulGeometry& g = p.geometry;
    EXPECT_TRUE(exec::blasOperand(g.m, g.k, g.a.row, g.a.col).has_value());
    EXPECT_TRUE(exec::blasOperand(g.k, g.n, g.b.row, g.b.col).has_value());
    EXPECT_TRUE(!g.hasBias || g.n == 1 || g.biasStride == 1);
    host_->gemm(p, s);
  }
  bool gemmReads(int64_t rows, int64_t cols, int64_t rs, int64_t cs) const override {
    return exec::blasOperand(rows, cols, rs, cs).has_value();
  }
  std::vector<eval::Argument> copyIn(const ir::Fusion& f, std::span<const eval::Argument> args,
                                     CUstream s) const override {
    return host_->copyIn(f, args, s);
  }
  void copyOut(std::vector<Tensor>& outs, CUstream s) const override { host_->copyOut(outs, s); }

 private:
  std::shared_ptr<const exec::ComputeDevice> host_ = exec::makeComputeDevice(exec::Backend::Host);
};

TEST_F(MatmulExec, OperandsCuBlasLtCannotReadAreCopiedDenseFirst) {
  RuntimeOptions options = poisonedOptions();
  options.device = std::make_shared<BlasRulesDevice>();
  // a with no unit-strided dim, b an expanded broadcast inside the matrix, a 0-D bias.
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* x = input(*fusion, 2, DataType::Float32);
    TensorView* w = input(*fusion, 2, DataType::Float32);
    TensorView* bias = input(*fusion, 0, DataType::Float32);
    fusion->addOutput(ops::linear(x, w, bias));
  }
  Tensor wide = test::randomTensor({4, 16}, DataType::Float32, 61);
  Tensor x(wide.storage(), DataType::Float32, {4, 8}, {16, 2});
  Tensor w = test::randomTensor({3, 8}, DataType::Float32, 65);  // read as it is
  Tensor row = test::randomTensor({8}, DataType::Float32, 62);
  Tensor w_rows(row.storage(), DataType::Float32, {3, 8}, {0, 1});  // one row repeated: ld 0
  Tensor col = test::randomTensor({3}, DataType::Float32, 63);
  Tensor w_k(col.storage(), DataType::Float32, {3, 8}, {1, 0});  // a broadcast along k
  for (const Tensor& weight : {w, w_rows, w_k}) {
    std::vector<eval::Argument> args{x, weight, test::randomTensor({}, DataType::Float32, 64)};
    auto copy = fusion->clone();
    std::vector<Tensor> expected = eval::evaluateFusion(*copy, args);
    FusionExecutorCache cache(std::move(copy), options);
    Tensor got = cache.run(args).at(0);
    auto problem =
        eval::expectClose(got, expected[0], eval::defaultTolerance(DataType::Float32, 8), "linear");
    EXPECT_FALSE(problem.has_value()) << *problem;
    const FusionKernelRuntime* rt = cache.lastRuntime();
    ASSERT_EQ(rt->numMatmuls(), 1);
    const auto& mm = dynamic_cast<const MatmulSegmentExecutor&>(rt->segmentExecutor(0));
    // x and the bias always; the weight when a dim of it has stride 0.
    EXPECT_EQ(mm.denseCopies(), weight.stride(0) == 0 || weight.stride(1) == 0 ? 3 : 2);
    EXPECT_NE(rt->hostProgram().find("linear with bias in the epilogue by the host GEMM on host: "
                                     "T0, T1, T2 -> T3"),
              std::string::npos)
        << rt->hostProgram();
  }
}

#endif

}  // namespace
}  // namespace loom::runtime
