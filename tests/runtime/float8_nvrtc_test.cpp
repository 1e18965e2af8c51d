// SPDX-License-Identifier: Apache-2.0
// Kernels on the 8-bit floats (runtime/types.cuh's loom::Float8_e4m3fn / Float8_e5m2) compile
// with NVRTC for sm_90, as scheduled by the pointwise and reduction schedulers: checked where CI
// has NVRTC but no GPU (the gpu tier runs them: loom_float8_gpu_tests).
#include <gtest/gtest.h>

#include "loom/backend/cuda/nvrtc.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/registry.h"

namespace loom::runtime {
namespace {

using ir::TensorView;

void expectCompiles(ir::Fusion& fusion, const std::vector<eval::Argument>& args) {
  scheduler::SchedulerRuntimeInfo info(fusion, args);
  scheduler::scheduleFusion(fusion, info);
  auto kernel = lower::lowerFusion(fusion, DumpOptions());
  codegen::GeneratedKernel g = codegen::generateKernel(*kernel);
  EXPECT_NE(g.source.find("loom::Float8_e"), std::string::npos);
  cuda::NvrtcCompiler compiler(std::nullopt);
  cuda::CompileResult r =
      compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
  ASSERT_NE(r.kernel(g.name), nullptr) << r.log << "\n" << g.source;
}

// Casts both ways, arithmetic in f32 and a typed constant, in one vectorized pointwise kernel.
TEST(Float8Nvrtc, PointwiseKernelCompiles) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  ir::Fusion f;
  ir::FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float8_e4m3fn).build();
  TensorView* y = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float8_e5m2).build();
  f.addInput(x);
  f.addInput(y);
  TensorView* s = ops::add(ops::mul(x, y), ir::IrBuilder::constant(0.5));
  f.addOutput(ops::cast(s, DataType::Float8_e4m3fn));
  f.addOutput(ops::cast(ops::cast(x, DataType::Float64), DataType::Float8_e5m2));
  f.addOutput(ops::cast(y, DataType::BFloat16));
  f.addOutput(
      ops::where(ops::gt(x, ir::IrBuilder::constant(1.0)), x,
                 ops::full({64, 256}, ir::IrBuilder::constant(448.0), DataType::Float8_e4m3fn)));
  expectCompiles(f, {Tensor::empty({64, 256}, DataType::Float8_e4m3fn),
                     Tensor::empty({64, 256}, DataType::Float8_e5m2)});
}

// A sum (in f32) of an 8-bit row cast back, by the reduction scheduler.
TEST(Float8Nvrtc, SumKernelCompiles) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  ir::Fusion f;
  ir::FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float8_e5m2).build();
  f.addInput(x);
  f.addOutput(ops::cast(ops::sum(x, {1}), DataType::Float8_e5m2));
  expectCompiles(f, {Tensor::empty({128, 4096}, DataType::Float8_e5m2)});
}

// A max (in the type itself, its comparisons through float) of an 8-bit row.
TEST(Float8Nvrtc, MaxKernelCompiles) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  ir::Fusion f;
  ir::FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float8_e4m3fn).build();
  f.addInput(x);
  f.addOutput(ops::max(x, {1}));
  expectCompiles(f, {Tensor::empty({128, 4096}, DataType::Float8_e4m3fn)});
}

}  // namespace
}  // namespace loom::runtime
