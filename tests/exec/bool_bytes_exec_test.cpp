// SPDX-License-Identifier: Apache-2.0
// Bool inputs whose bytes are not 0 or 1 (a uint8 tensor viewed as bool): any non-zero byte is
// true, as in torch, in kernels (plain and vectorized loads) and in the reference evaluator; the
// bools Loom writes are 0 or 1. Built twice like executor_test.cpp: emu and gpu (skipped without
// a GPU). Before the fix both read the byte as a C++ bool, which is undefined for other bytes:
// a cast gave 2.0 for the byte 2 and logical_not of it was true.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "exec/exec_cases.h"
#include "exec/exec_test_util.h"
#include "loom/transform/cache.h"

namespace loom::test {
namespace {

using ir::ParallelType;
using ir::TensorView;

constexpr unsigned char kBytes[] = {0, 1, 2, 3, 127, 128, 254, 255, 0, 64};
constexpr int64_t kRows = 6;
constexpr int64_t kCols = 64;

Tensor boolBytes() {
  Tensor b = Tensor::empty({kRows, kCols}, DataType::Bool);
  auto* bytes = b.dataAs<unsigned char>();
  for (int64_t i = 0; i < b.numel(); ++i) bytes[i] = kBytes[size_t(i) % std::size(kBytes)];
  return b;
}

bool truth(int64_t i) { return kBytes[size_t(i) % std::size(kBytes)] != 0; }

struct BoolCase {
  std::string name;
  // Builds the output from the bool input b and the float input x.
  std::function<TensorView*(TensorView* b, TensorView* x)> op;
  // The value element i must have.
  std::function<double(int64_t i, double x)> expected;
};

void PrintTo(const BoolCase& c, std::ostream* os) { *os << c.name; }

std::vector<BoolCase> boolCases() {
  return {
      {"Cast", [](TensorView* b, TensorView*) { return ops::cast(b, DataType::Float32); },
       [](int64_t i, double) { return truth(i) ? 1.0 : 0.0; }},
      {"LogicalNot", [](TensorView* b, TensorView*) { return ops::logicalNot(b); },
       [](int64_t i, double) { return truth(i) ? 0.0 : 1.0; }},
      {"Where", [](TensorView* b, TensorView* x) { return ops::where(b, x, 0.0); },
       [](int64_t i, double x) { return truth(i) ? x : 0.0; }},
      {"Copy", [](TensorView* b, TensorView*) { return ops::set(b); },
       [](int64_t i, double) { return truth(i) ? 1.0 : 0.0; }},
  };
}

// Checks every element of `out` (a host tensor) against the case; bool outputs must hold the
// bytes 0 or 1 exactly.
void expectValues(const BoolCase& c, const Tensor& out, const Tensor& x, const std::string& who) {
  ASSERT_EQ(out.numel(), kRows * kCols) << who;
  Tensor dense = out.contiguous();
  for (int64_t i = 0; i < dense.numel(); ++i) {
    const double want = c.expected(i, x.getDoubleLinear(i));
    ASSERT_EQ(dense.getDoubleLinear(i), want) << who << ": element " << i;
    if (dense.dtype() == DataType::Bool) {
      ASSERT_EQ(int(dense.dataAs<unsigned char>()[i]), int(want)) << who << ": byte " << i;
    }
  }
}

class BoolBytesExec : public testing::TestWithParam<BoolCase> {};

TEST_P(BoolBytesExec, AnyNonZeroByteIsTrue) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  const BoolCase& c = GetParam();
  Tensor b = boolBytes();
  Tensor x = Tensor::empty({kRows, kCols}, DataType::Float32);
  fillRandom(x, 5);
  std::vector<eval::Argument> inputs{b, x};
  for (bool vectorize : {false, true}) {
    const std::string who = c.name + (vectorize ? " (vectorized)" : " (plain)");
    ir::Fusion fusion;
    ir::FusionGuard guard(&fusion);
    auto* bt = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Bool).build();
    auto* xt = ops::TensorBuilder().shape({-1, -1}).build();
    fusion.addInput(bt);
    fusion.addInput(xt);
    fusion.addOutput(c.op(bt, xt));
    std::unique_ptr<ir::Fusion> reference = fusion.clone();

    TensorView* out = output(fusion);
    std::vector<TensorView*> cached;
    if (vectorize) {  // inputs copied into registers 4 at a time (loom::loadBoolVectorInput)
      for (TensorView* in : {bt, xt}) {
        if (!in->uses().empty()) cached.push_back(transform::cacheAfter(in));
      }
    }
    out->merge(0)->split(0, 4)->split(0, 32);
    out->axis(0)->parallelize(ParallelType::BIDx);
    out->axis(1)->parallelize(ParallelType::TIDx);
    transform::propagateTransforms(out);
    transform::parallelizeAllLike(out);
    for (TensorView* tv : cached) tv->axis(2)->parallelize(ParallelType::Vectorize);
    transform::inlineMost(fusion);

    exec::KernelExecutor ke;
    ke.compile(fusion, testBackend(), {.poisonOutputs = true});
    const std::string& text = ke.generated().kernelText;
    EXPECT_NE(text.find(vectorize ? "loom::loadBoolVectorInput" : "loom::loadBoolInput"),
              std::string::npos)
        << who << "\n"
        << text;
    std::vector<Tensor> outs = ke.run(inputs);
    ASSERT_EQ(outs.size(), 1u);
    expectValues(c, outs[0], x, who + ", kernel");
    expectValues(c, eval::evaluateFusion(*reference, inputs).at(0), x, who + ", reference");
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BoolBytesExec, testing::ValuesIn(boolCases()),
                         [](const testing::TestParamInfo<BoolCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace loom::test
