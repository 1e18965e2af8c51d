// SPDX-License-Identifier: Apache-2.0
// Execution tests of vectorized, unrolled and unswitched schedules and of the index type choice,
// built twice like executor_test.cpp: emu (host backend) and gpu (CUDA, skipped without a GPU).
#include <gtest/gtest.h>

#include <cstring>

#include "exec/exec_cases.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/transform/cache.h"
#include "loom/transform/schedule.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::test {
namespace {

using ir::ParallelType;

exec::Backend testBackend() {
#ifdef LOOM_EXEC_TEST_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

bool skipWithoutGpu() {
  if (testBackend() != exec::Backend::Cuda) return false;
#ifdef LOOM_HAVE_CUDA_BACKEND
  return !cuda::cudaAvailable();
#else
  return true;
#endif
}

#define LOOM_SKIP_WITHOUT_GPU() \
  if (skipWithoutGpu()) GTEST_SKIP() << "no GPU for the cuda backend"

Tensor randomOf(std::vector<int64_t> sizes, DataType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}

// out = (x + y) * 2 over [-1, -1] of `dtype`; x with the given contiguity (empty: contiguous).
void buildAddMul(ir::Fusion& f, DataType dtype, ir::Contiguity x_contiguity = {}) {
  auto builder = ops::TensorBuilder().shape({-1, -1}).dtype(dtype);
  if (!x_contiguity.empty()) builder.contiguity(x_contiguity);
  auto* x = builder.build();
  auto* y = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).build();
  f.addInput(x);
  f.addInput(y);
  f.addOutput(ops::cast(ops::mul(ops::add(x, y), 2.0), dtype));
}

// The vectorization pattern: inputs cached in registers by vectorized copies, math on the
// registers, the output stored by a vectorized copy of a cacheBefore buffer.
// [I0, I1] -> merge -> split(width) -> split(threads): [BIDx, TIDx, Vectorize].
void scheduleVectorized(ir::Fusion& f, int64_t width, int64_t threads) {
  auto* out = output(f);
  std::vector<ir::TensorView*> cached;
  for (ir::Val* in : std::vector<ir::Val*>(f.inputs())) {
    cached.push_back(transform::cacheAfter(in->as<ir::TensorView>()));
  }
  transform::cacheBefore(out);
  out->merge(0)->split(0, width)->split(0, threads);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  transform::propagateTransforms(out);
  transform::parallelizeAllLike(out);
  out->axis(2)->parallelize(ParallelType::Vectorize);
  for (ir::TensorView* c : cached) c->axis(2)->parallelize(ParallelType::Vectorize);
  transform::inlineMost(f);
}

// Runs the scheduled fusion (outputs poisoned) and compares with the unscheduled reference.
std::string runAndCompare(ir::Fusion& fusion, const ir::Fusion& reference,
                          const std::vector<eval::Argument>& inputs, exec::KernelExecutor& ke) {
  ke.compile(fusion, testBackend(), {.poisonOutputs = true});
  std::vector<Tensor> outs = ke.run(inputs);
  std::vector<Tensor> expected = eval::evaluateFusion(reference, inputs);
  if (outs.size() != expected.size()) return "output count differs";
  for (size_t i = 0; i < outs.size(); ++i) {
    auto tol = eval::defaultTolerance(expected[i].dtype(), 1);
    auto msg = eval::expectClose(outs[i].contiguous(), expected[i], tol, "output " + std::to_string(i));
    if (msg) return *msg + "\n" + ke.generated().kernelText;
  }
  return "";
}

// The f32 add-mul fusion vectorized by 4 over 32 threads, with its unscheduled reference.
struct Float4AddMul {
  ir::Fusion fusion;
  std::unique_ptr<ir::Fusion> reference;
  explicit Float4AddMul(ir::Contiguity x_contiguity = {}) {
    ir::FusionGuard guard(&fusion);
    buildAddMul(fusion, DataType::Float32, std::move(x_contiguity));
    reference = fusion.clone();
    scheduleVectorized(fusion, 4, 32);
  }
};

// A float x4 vectorized pointwise kernel (sizes divide) loads and stores whole vectors and
// matches the reference.
TEST(VectorizeExec, Float4Pointwise) {
  LOOM_SKIP_WITHOUT_GPU();
  Float4AddMul f;
  ir::FusionGuard guard(&f.fusion);
  exec::KernelExecutor ke;
  std::vector<eval::Argument> in{randomOf({6, 40}, DataType::Float32, 1),
                                 randomOf({6, 40}, DataType::Float32, 2)};
  EXPECT_EQ(runAndCompare(f.fusion, *f.reference, in, ke), "");
  const std::string& text = ke.generated().kernelText;
  EXPECT_NE(text.find("loom::loadVector"), std::string::npos) << text;
  EXPECT_NE(text.find("loom::storeVector"), std::string::npos) << text;
  EXPECT_NE(text.find("loom::Array<float, 4>"), std::string::npos) << text;
}

// A bf16 x8 vectorized pointwise kernel (16-byte vectors) matches the reference.
TEST(VectorizeExec, BFloat16x8Pointwise) {
  LOOM_SKIP_WITHOUT_GPU();
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  buildAddMul(fusion, DataType::BFloat16);
  auto reference = fusion.clone();
  scheduleVectorized(fusion, 8, 16);
  exec::KernelExecutor ke;
  std::vector<eval::Argument> in{randomOf({5, 64}, DataType::BFloat16, 3),
                                 randomOf({5, 64}, DataType::BFloat16, 4)};
  EXPECT_EQ(runAndCompare(fusion, *reference, in, ke), "");
  EXPECT_NE(ke.generated().kernelText.find("loom::Array<__nv_bfloat16, 8>"), std::string::npos);
}

// A vectorized input whose data pointer is not aligned to the vector is rejected before the
// launch with an error naming the tensor.
TEST(VectorizeExec, MisalignedInputIsAnError) {
  LOOM_SKIP_WITHOUT_GPU();
  Float4AddMul f;
  ir::FusionGuard guard(&f.fusion);
  exec::KernelExecutor ke;
  ke.compile(f.fusion, testBackend());
#ifndef LOOM_EXEC_TEST_CUDA  // cuda copies host inputs to fresh (aligned) device buffers
  Tensor base = randomOf({4 * 8 + 1}, DataType::Float32, 5);
  Tensor shifted(base.storage(), DataType::Float32, {4, 8}, {8, 1}, 1);  // 4 bytes off
  std::vector<eval::Argument> in{shifted, randomOf({4, 8}, DataType::Float32, 6)};
  try {
    ke.run(in);
    ADD_FAILURE() << "expected an alignment error";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("vectorized tensor T0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not aligned to the vector of 4 elements"), std::string::npos) << msg;
  }
#endif
  // An innermost size that the width does not divide is rejected too (all-or-nothing vectors).
  std::vector<eval::Argument> odd{randomOf({3, 6}, DataType::Float32, 7),
                                  randomOf({3, 6}, DataType::Float32, 8)};
  try {
    ke.run(odd);
    ADD_FAILURE() << "expected a divisibility error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("is not a multiple of the vector width 4"),
              std::string::npos)
        << e.what();
  }
}

// A vector over merged dims may cross a row boundary: [6, 70] has rows of 70 (not a multiple
// of 4) but 420 dense elements, so it runs, and right; a transposed input (not dense) is refused
// by the vector layout check even where its contiguity is declared (false) as it is.
TEST(VectorizeExec, MergedDimsVectorizeAcrossRows) {
  LOOM_SKIP_WITHOUT_GPU();
  Float4AddMul f;
  ir::FusionGuard guard(&f.fusion);
  exec::KernelExecutor ke;
  std::vector<eval::Argument> in{randomOf({6, 70}, DataType::Float32, 11),
                                 randomOf({6, 70}, DataType::Float32, 12)};
  EXPECT_EQ(runAndCompare(f.fusion, *f.reference, in, ke), "");
  std::vector<int64_t> perm{1, 0};
  std::vector<eval::Argument> transposed{randomOf({8, 6}, DataType::Float32, 13).permute(perm),
                                         randomOf({6, 8}, DataType::Float32, 14)};
#ifndef LOOM_EXEC_TEST_CUDA  // cuda copies host inputs into contiguous device buffers
  Float4AddMul strided({false, false});
  exec::KernelExecutor strided_ke;
  strided_ke.compile(strided.fusion, testBackend());
  try {
    strided_ke.run(transposed);
    ADD_FAILURE() << "expected a layout error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("vectorized tensor T0: dim 1 has stride 6"),
              std::string::npos)
        << e.what();
  }
#endif
}

// Padded rows ([6, 40] in rows of 44, declared [f, t]) vectorize over the merged dims: the
// dense rows hold a multiple of 4 and the row stride is one, so no vector crosses a row end.
// Rows whose stride is not a multiple of the width are refused.
TEST(VectorizeExec, PaddedRowsVectorizeWithinRows) {
  LOOM_SKIP_WITHOUT_GPU();
  Float4AddMul f({false, true});
  ir::FusionGuard guard(&f.fusion);
  exec::KernelExecutor ke;
  Tensor base = randomOf({6 * 44}, DataType::Float32, 15);
  std::vector<eval::Argument> in{Tensor(base.storage(), DataType::Float32, {6, 40}, {44, 1}),
                                 randomOf({6, 40}, DataType::Float32, 16)};
  EXPECT_EQ(runAndCompare(f.fusion, *f.reference, in, ke), "");
  EXPECT_NE(ke.generated().kernelText.find("loom::loadVector"), std::string::npos)
      << ke.generated().kernelText;
#ifndef LOOM_EXEC_TEST_CUDA  // cuda copies host inputs into contiguous device buffers
  Tensor odd_base = randomOf({6 * 42}, DataType::Float32, 17);
  std::vector<eval::Argument> odd{Tensor(odd_base.storage(), DataType::Float32, {6, 40}, {42, 1}),
                                  randomOf({6, 40}, DataType::Float32, 18)};
  try {
    ke.run(odd);
    ADD_FAILURE() << "expected a layout error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("stride 42 of dim 0 is not a multiple of the vector "
                                         "width 4"),
              std::string::npos)
        << e.what();
  }
#endif
}

// Rows vectorized along the row alone ([rows (BIDx), row / width (TIDx), width (Vectorize)], x
// declared with a run-time row stride) and lowered with peeled vector rows
// (LowerOptions::peelVectorRows) run right on any layout: widths below, at and around 1 to 4
// vectors, x at offsets 0 to 3 of its buffer, row strides width and width + 1 (a column slice),
// in f32 (4 a vector) and bf16 (8). No vector access is misaligned: the host backend traps on
// one, as a GPU faults.
TEST(VectorizeExec, PeeledRowsRunOnAnyLayout) {
  LOOM_SKIP_WITHOUT_GPU();
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    const int64_t v = 16 / int64_t(dataTypeSize(dtype));
    ir::Fusion fusion;
    ir::FusionGuard guard(&fusion);
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).contiguity({false, true}).build();
    fusion.addInput(x);
    fusion.addOutput(ops::cast(ops::mul(x, 2.0), dtype));
    auto reference = fusion.clone();
    auto* out = output(fusion);
    auto* xc = transform::cacheAfter(x);
    transform::cacheBefore(out);
    out->split(1, v);
    out->axis(0)->parallelize(ParallelType::BIDx);
    out->axis(1)->parallelize(ParallelType::TIDx);
    transform::propagateTransforms(out);
    transform::parallelizeAllLike(out);
    out->axis(2)->parallelize(ParallelType::Vectorize);
    xc->axis(2)->parallelize(ParallelType::Vectorize);
    transform::inlineMost(fusion);
    exec::KernelExecutor ke;
    ke.compile(fusion, testBackend(),
               {.poisonOutputs = true, .lowering = {.peelVectorRows = true}});
    EXPECT_NE(ke.generated().kernelText.find("loom::misalignment<" + std::to_string(v) + ">"),
              std::string::npos)
        << ke.generated().kernelText;
    for (int64_t width : {int64_t(1), int64_t(2), int64_t(3), v - 1, v, v + 1, 2 * v - 1, 2 * v + 1,
                          4 * v, 4 * v + 3}) {
      for (int64_t offset : {0, 1, 2, 3}) {
        for (int64_t extra : {0, 1}) {
          SCOPED_TRACE(std::string(dataTypeName(dtype)) + " width " + std::to_string(width) +
                       " offset " + std::to_string(offset) + " row stride +" +
                       std::to_string(extra));
          const int64_t rows = 7;
          Tensor base = randomOf({offset + rows * (width + extra)}, dtype, uint64_t(width));
          std::vector<eval::Argument> in{
              Tensor(base.storage(), dtype, {rows, width}, {width + extra, 1}, offset)};
          std::vector<Tensor> outs = ke.run(in);
          std::vector<Tensor> expected = eval::evaluateFusion(*reference, in);
          auto msg = eval::expectClose(outs[0].contiguous(), expected[0],
                                       eval::defaultTolerance(dtype, 1), "y");
          EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ke.generated().kernelText;
        }
      }
    }
  }
}

// Unroll and Unswitch schedules on sizes that the splits do not divide: the unrolled loop gets
// `#pragma unroll`, the unswitched nest a fast path plus the predicated tail, and every element
// is written once and right.
TEST(VectorizeExec, UnrollAndUnswitchNonDivisible) {
  LOOM_SKIP_WITHOUT_GPU();
  for (ParallelType inner : {ParallelType::Unroll, ParallelType::Unswitch}) {
    ir::Fusion fusion;
    ir::FusionGuard guard(&fusion);
    buildAddMul(fusion, DataType::Float32);
    auto reference = fusion.clone();
    auto* out = output(fusion);
    // [I0 * I1] -> [BIDx, Unswitch/Unroll(4), TIDx(32)]: 7 * 37 = 259 elements.
    out->merge(0)->split(0, 32)->split(0, 4);
    out->axis(0)->parallelize(ParallelType::BIDx);
    out->axis(1)->parallelize(inner);
    out->axis(2)->parallelize(ParallelType::TIDx);
    scheduleLike(fusion, out);
    exec::KernelExecutor ke;
    std::vector<eval::Argument> in{randomOf({7, 37}, DataType::Float32, 9),
                                   randomOf({7, 37}, DataType::Float32, 10)};
    EXPECT_EQ(runAndCompare(fusion, *reference, in, ke), "") << ir::parallelTypeName(inner);
    const std::string& text = ke.generated().kernelText;
    if (inner == ParallelType::Unroll) {
      EXPECT_NE(text.find("#pragma unroll"), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find("} else {"), std::string::npos) << text;
    }
  }
}

// Small tensors run with 32-bit index math (Tensor<T, N, int> parameters).
TEST(VectorizeExec, SmallSizesUseInt32Indices) {
  LOOM_SKIP_WITHOUT_GPU();
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  buildAddMul(fusion, DataType::Float32);
  auto reference = fusion.clone();
  scheduleVectorized(fusion, 4, 32);
  exec::KernelExecutor ke;
  std::vector<eval::Argument> in{randomOf({3, 8}, DataType::Float32, 11),
                                 randomOf({3, 8}, DataType::Float32, 12)};
  EXPECT_EQ(runAndCompare(fusion, *reference, in, ke), "");
  EXPECT_EQ(ke.kernel().indexType, DataType::Int32);
  EXPECT_NE(ke.generated().kernelText.find(", 2, int> T0"), std::string::npos);
}

#ifdef LOOM_EXEC_TEST_CUDA
// More than 2^31 elements need 64-bit index math: the executor picks Int64 from the bound sizes
// and the kernel writes the elements past 2^31 correctly (sampled; the full reference evaluator
// would be too slow). GPU only: ~8.6 GB of fp16 on host and device.
TEST(VectorizeExec, MoreThan2Pow31ElementsUseInt64) {
  LOOM_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 1000;
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({-1}).dtype(DataType::Float16).build();
  fusion.addInput(x);
  fusion.addOutput(ops::mul(x, 2.0));
  auto* out = output(fusion);
  out->split(0, 256);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  scheduleLike(fusion, out);
  Tensor t = Tensor::empty({n}, DataType::Float16);
  // Element i holds i % 2048 (exact in fp16, and so is twice it): fp16 bit patterns directly.
  auto* bits = static_cast<uint16_t*>(t.data());
  uint16_t table[2048];
  Tensor probe = Tensor::empty({1}, DataType::Float16);
  for (int v = 0; v < 2048; ++v) {
    probe.setDoubleLinear(0, double(v));
    std::memcpy(&table[v], probe.data(), 2);
  }
  for (int64_t i = 0; i < n; ++i) bits[i] = table[i % 2048];
  exec::KernelExecutor ke;
  ke.compile(fusion, testBackend());
  std::vector<eval::Argument> in{t};
  std::vector<Tensor> outs = ke.run(in);
  EXPECT_EQ(ke.kernel().indexType, DataType::Int64);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2047}, (int64_t{1} << 31) - 1,
                    int64_t{1} << 31, (int64_t{1} << 31) + 1, n - 2, n - 1}) {
    EXPECT_EQ(outs[0].getDoubleLinear(i), 2.0 * double(i % 2048)) << "element " << i;
  }
}
#endif

}  // namespace
}  // namespace loom::test
