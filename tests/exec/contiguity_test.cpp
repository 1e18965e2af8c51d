// SPDX-License-Identifier: Apache-2.0
// Contiguity against real strides (exec/contiguity.h): the flags strides prove, the strides the
// kernel is given, and KernelExecutor's check of input tensors against the declared flags (host
// backend; on cuda, host inputs are copied to the device with their layout, so the same check
// applies).
#include <gtest/gtest.h>

#include "exec/exec_cases.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/contiguity.h"
#include "loom/exec/kernel_executor.h"

namespace loom::test {
namespace {

using ir::ParallelType;

Tensor viewOf(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t storage,
              uint64_t seed) {
  Tensor base = randomTensor({storage}, seed);
  return Tensor(base.storage(), DataType::Float32, std::move(sizes), std::move(strides));
}

std::string flagsOf(const ir::TensorView* tv, const Tensor& t) {
  return exec::contiguityString(exec::contiguityFromStrides(tv, t.sizes(), t.strides()));
}

// Flags follow the rule per allocation dim, innermost first: stride == size * stride of the next
// inner non-broadcast dim (1 innermost); size-1 dims always hold, broadcast dims have none.
TEST(Contiguity, FlagsFromStrides) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().rank(2).build();
  std::vector<int64_t> swap{1, 0};
  EXPECT_EQ(flagsOf(x, randomTensor({4, 6}, 1)), "[t, t]");
  EXPECT_EQ(flagsOf(x, randomTensor({6, 4}, 1).permute(swap)), "[f, f]");
  EXPECT_EQ(flagsOf(x, viewOf({4, 6}, {8, 1}, 32, 1)), "[f, t]");    // padded rows
  EXPECT_EQ(flagsOf(x, viewOf({4, 6}, {12, 2}, 48, 1)), "[t, f]");   // every other column
  EXPECT_EQ(flagsOf(x, viewOf({4, 6}, {0, 1}, 6, 1)), "[f, t]");     // expanded rows
  EXPECT_EQ(flagsOf(x, viewOf({4, 1}, {1, 7}, 4, 1)), "[t, t]");     // size 1: any stride
  // Allocation order [I1, I0]: a transposed tensor is contiguous in it.
  auto* xt = ops::TensorBuilder().rank(2).strideOrder({1, 0}).build();
  EXPECT_EQ(flagsOf(xt, randomTensor({6, 4}, 1).permute(swap)), "[t, t]");
  EXPECT_EQ(flagsOf(xt, randomTensor({4, 6}, 1)), "[f, f]");
  // A broadcast dim has no flag and is skipped: dim 0 is dense with dim 2.
  auto* xb = ops::TensorBuilder().shape({-1, 1, -1}).build();
  EXPECT_EQ(flagsOf(xb, viewOf({4, 1, 6}, {6, 0, 1}, 24, 1)), "[t, -, t]");
}

// The kernel gets a size-1 dim's stride as the rule implies it, so offsets over a contiguous
// run that contains it stay right; other strides pass unchanged.
TEST(Contiguity, KernelStridesNormalizeSizeOneDims) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().rank(3).build();
  std::vector<int64_t> sizes{3, 1, 5}, strides{5, 99, 1};
  EXPECT_EQ(exec::kernelStrides(x, sizes, strides), (std::vector<int64_t>{5, 5, 1}));
  std::vector<int64_t> padded{8, 99, 1};
  EXPECT_EQ(exec::kernelStrides(x, sizes, padded), (std::vector<int64_t>{8, 5, 1}));
}

// exp(x) * 2 over x[-1 x rank] declared with `contiguity` (empty: contiguous), flattened and
// split by 128 on BIDx/TIDx.
std::unique_ptr<ir::Fusion> flatPointwise(int64_t rank, ir::Contiguity contiguity = {}) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto builder = ops::TensorBuilder().rank(rank);
  if (!contiguity.empty()) builder.contiguity(contiguity);
  auto* x = builder.build();
  f->addInput(x);
  auto* out = ops::mul(ops::exp(x), 2.0);
  f->addOutput(out);
  out->flatten()->split(0, 128);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  scheduleLike(*f, out);
  return f;
}

std::string errorOf(const ir::Fusion& f, const Tensor& x) {
  exec::KernelExecutor ke;
  ke.compile(f, exec::Backend::Host);
  std::vector<eval::Argument> in{x};
  try {
    ke.run(in);
  } catch (const UserError& e) {
    EXPECT_EQ(ke.numPlans(), 0);  // nothing is kept for rejected inputs
    return e.what();
  }
  return "";
}

// A transposed tensor for a fusion declared contiguous: the message names the input, the dim,
// the stride needed and the one given, the flags the strides have, and where to declare them.
TEST(Contiguity, ExecutorRejectsTransposedInputDeclaredContiguous) {
  auto f = flatPointwise(2);
  std::vector<int64_t> swap{1, 0};
  std::string msg = errorOf(*f, randomTensor({7, 4}, 2).permute(swap));
  EXPECT_NE(msg.find("input 0 (T0): dimension 1 is declared contiguous, which needs stride 1 "
                     "(it is the innermost dimension), but the tensor has stride 4"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("sizes [4, 7], strides [1, 4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[f, f] in allocation order"), std::string::npos) << msg;
  EXPECT_NE(msg.find("contig=... in .fus"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TensorView::setContiguity"), std::string::npos) << msg;
}

// Padded rows for a fusion declared [t, t]: the outer dim is the one named, with the stride that
// density with the inner dim needs.
TEST(Contiguity, ExecutorRejectsPaddedRowsDeclaredContiguous) {
  auto f = flatPointwise(2);
  std::string msg = errorOf(*f, viewOf({4, 6}, {8, 1}, 32, 3));
  EXPECT_NE(msg.find("input 0 (T0): dimension 0 is declared contiguous, which needs stride 6 "
                     "(dense with dimension 1 (size 6)), but the tensor has stride 8"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("[f, t] in allocation order"), std::string::npos) << msg;
  // Declared [f, t], the same tensor runs; a strided innermost dim does not.
  auto padded = flatPointwise(2, {false, true});
  EXPECT_EQ(errorOf(*padded, viewOf({4, 6}, {8, 1}, 32, 3)), "");
  std::string inner = errorOf(*padded, viewOf({4, 6}, {12, 2}, 48, 3));
  EXPECT_NE(inner.find("dimension 1 is declared contiguous, which needs stride 1"),
            std::string::npos)
      << inner;
}

// Runs `f` on `x` with outputs poisoned and compares with the reference evaluator.
void expectRunsRight(const ir::Fusion& f, const ir::Fusion& reference, const Tensor& x) {
  exec::KernelExecutor ke;
  ke.compile(f, exec::Backend::Host, {.poisonOutputs = true});
  std::vector<eval::Argument> in{x};
  std::vector<Tensor> outs = ke.run(in);
  std::vector<Tensor> expected = eval::evaluateFusion(reference, in);
  ASSERT_EQ(outs.size(), 1u);
  auto msg = eval::expectClose(outs[0], expected[0], eval::defaultTolerance(DataType::Float32, 1),
                               "output");
  EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ke.generated().kernelText;
}

// Size-1 dims are lenient: [3, 1, 5] with stride 99 on the size-1 dim passes the contiguous
// declaration, and the kernel (one linear offset over all three dims) reads the right elements.
TEST(Contiguity, SizeOneDimsAreLenientAndIndexRight) {
  auto f = flatPointwise(3);
  std::unique_ptr<ir::Fusion> reference;
  {
    ir::Fusion plain;
    ir::FusionGuard guard(&plain);
    auto* x = ops::TensorBuilder().rank(3).build();
    plain.addInput(x);
    plain.addOutput(ops::mul(ops::exp(x), 2.0));
    reference = plain.clone();
  }
  expectRunsRight(*f, *reference, viewOf({3, 1, 5}, {5, 99, 1}, 15, 4));
  // Every other column, declared [t, f, f]: dims 0 and 1 fold into one index times dim 1's
  // stride, which the kernel gets as 10 (what dim 0's density with it implies), not 99.
  auto strided = flatPointwise(3, {true, false, false});
  expectRunsRight(*strided, *reference, viewOf({3, 1, 5}, {10, 99, 2}, 30, 5));
  exec::KernelExecutor ke;
  ke.compile(*strided, exec::Backend::Host);
  std::vector<eval::Argument> in{viewOf({3, 1, 5}, {10, 99, 2}, 30, 5)};
  (void)ke.run(in);
  const std::string& text = ke.generated().kernelText;
  EXPECT_NE(text.find(" * T0.stride[1])"), std::string::npos) << text;
  EXPECT_EQ(text.find("T0.stride[0]"), std::string::npos) << text;
}

}  // namespace
}  // namespace loom::test
