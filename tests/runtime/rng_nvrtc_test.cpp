// SPDX-License-Identifier: Apache-2.0
// The random-number kernels (runtime/random.cuh through kir::Call) compile with NVRTC for sm_90
// without spills, as scheduled by the pointwise and reduction schedulers: checked where CI has
// NVRTC but no GPU (the gpu tier runs them).
#include <gtest/gtest.h>

#include "loom/backend/cuda/nvrtc.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ir/scalar_math.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/registry.h"

namespace loom::runtime {
namespace {

using ir::TensorView;

// Schedules the fusion for `args`, generates its kernel and compiles it for sm_90.
void expectCompiles(ir::Fusion& fusion, const std::vector<eval::Argument>& args) {
  scheduler::SchedulerRuntimeInfo info(fusion, args);
  scheduler::scheduleFusion(fusion, info);
  auto kernel = lower::lowerFusion(fusion, DumpOptions());
  codegen::GeneratedKernel g = codegen::generateKernel(*kernel);
  EXPECT_NE(g.source.find("loom_rng_"), std::string::npos);
  cuda::NvrtcCompiler compiler(std::nullopt);
  cuda::CompileResult r =
      compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
  const cuda::KernelResources* res = r.kernel(g.name);
  ASSERT_NE(res, nullptr) << r.log;
  EXPECT_FALSE(r.hasSpills()) << r.log;
}

// Every distribution and dtype in a vectorized pointwise kernel, with run-time seed and offset.
TEST(RngNvrtc, PointwiseKernelCompiles) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  ir::Fusion f;
  ir::FusionGuard g(&f);
  auto* seed = ir::IrBuilder::symbolic(DataType::Int64);
  auto* offset = ir::IrBuilder::symbolic(DataType::Int64);
  f.addInput(seed);
  f.addInput(offset);
  TensorView* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::BFloat16).build();
  f.addInput(x);
  f.addOutput(ops::add(x, ops::randLike(x, seed, offset)));
  // Each output reads x too: one kernel.
  f.addOutput(ops::add(x, ops::uniform({64, 256}, -1.0, 1.0, seed, offset, DataType::Float64)));
  f.addOutput(ops::add(x, ops::randn({64, 256}, seed, offset, DataType::Float16)));
  f.addOutput(ops::add(x, ops::normal({64, 256}, 1.0, 3.0, seed, offset, DataType::Float32)));
  expectCompiles(f, {int64_t{1}, int64_t{2}, Tensor::empty({64, 256}, DataType::BFloat16)});
}

// Dropout feeding a sum: the rand computed inside the reduction kernel.
TEST(RngNvrtc, DropoutBeforeASumCompiles) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  ir::Fusion f;
  ir::FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().shape({-1, -1}).build();
  f.addInput(x);
  f.addOutput(ops::sum(ops::dropout(x, 0.1, 3, 4).output, {1}));
  expectCompiles(f, {Tensor::empty({128, 4096}, DataType::Float32)});
}

// A device's block of a larger draw (what localize_shards makes of a draw sharded on rows over
// four devices, as device 2): run-time index offsets and global extents in the Philox index.
TEST(RngNvrtc, BlockOfALargerDrawCompiles) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  ir::Fusion f;
  ir::FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().shape({-1, -1}).build();
  f.addInput(x);
  TensorView* r = ops::randLike(x, 3, 4);
  f.addOutput(ops::add(x, r));
  ir::Expr* def = r->definition();
  auto* rng = def->as<ir::RngOp>();
  std::vector<ir::Scalar*> keys{rng->seed(), rng->offset(), rng->param0(), rng->param1()};
  f.removeExpr(def);
  ir::Scalar* rows = x->logical()[0]->extent();
  ir::Scalar* cols = x->logical()[1]->extent();
  using ir::IrBuilder;
  ir::IrBuilder::create<ir::RngOp>(
      r, ir::RngOpType::Uniform, keys[0], keys[1], keys[2], keys[3],
      std::vector<ir::Scalar*>{ir::scalar_math::mul(IrBuilder::index(2), rows), IrBuilder::index(0)},
      std::vector<ir::Scalar*>{ir::scalar_math::mul(rows, IrBuilder::index(4)), cols});
  expectCompiles(f, {Tensor::empty({64, 256}, DataType::Float32)});
}

}  // namespace
}  // namespace loom::runtime
