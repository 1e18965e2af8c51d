// SPDX-License-Identifier: Apache-2.0
// Constants in generated code hold exactly their value: a fusion adding each constant to -0.0
// (0, false) returns its bits, and the hand-built literal kernel stores them (and max/where/
// accumulators of them) with either index type. NaN is only checked as NaN. Built twice: the host
// backend (emu) and, with LOOM_LITERAL_TEST_CUDA, CUDA (gpu; the fusion tests only, skipped
// without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "codegen/literal_cases.h"
#include "codegen/runtime_test_util.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ops/arith.h"
#include "loom/ops/tensor_builder.h"
#include "loom/tensor/half.h"
#ifdef LOOM_LITERAL_TEST_CUDA
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::codegen {
namespace {

using testing::LiteralCase;
using testing::literalCases;

#ifdef LOOM_LITERAL_TEST_CUDA
constexpr exec::Backend kBackend = exec::Backend::Cuda;
#define LOOM_SKIP_WITHOUT_BACKEND() \
  if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason()
#else
constexpr exec::Backend kBackend = exec::Backend::Host;
#define LOOM_SKIP_WITHOUT_BACKEND() (void)0
#endif

// The element `i` of a host buffer of `dtype`, as its storage bits.
uint64_t storedBits(const void* data, DataType dtype, int64_t i) {
  uint64_t bits = 0;
  size_t size = dataTypeSize(dtype);
  std::memcpy(&bits, static_cast<const char*>(data) + size_t(i) * size, size);
  return bits;
}

bool isNanBits(uint64_t bits, DataType dtype) {
  switch (dtype) {
    case DataType::Float64: return std::isnan(std::bit_cast<double>(bits));
    case DataType::Float32: return std::isnan(std::bit_cast<float>(uint32_t(bits)));
    case DataType::Float16: return std::isnan(halfBitsToFloat(uint16_t(bits)));
    case DataType::BFloat16: return std::isnan(bfloat16BitsToFloat(uint16_t(bits)));
    default: return false;
  }
}

void expectValue(const LiteralCase& c, uint64_t bits, const std::string& where) {
  if (c.nan) {
    EXPECT_TRUE(isNanBits(bits, c.dtype))
        << where << ": " << c.literal << " stored 0x" << std::hex << bits;
  } else {
    EXPECT_EQ(bits, c.bits) << where << ": " << c.literal << " (" << dataTypeName(c.dtype) << ")";
  }
}

// out_k = x + c_k (x || c_k for bools) on the host backend, with x = -0.0 (0, false): -0.0 + c is
// exactly c for every floating c (-0.0 + -0.0 stays -0.0), so each output holds its constant.
TEST(ScalarLiteralExec, FusionReturnsEveryConstantExactly) {
  LOOM_SKIP_WITHOUT_BACKEND();
  std::vector<LiteralCase> cases = literalCases();
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  std::vector<eval::Argument> inputs;
  std::vector<ir::TensorView*> xs;
  for (DataType dt : testing::kLiteralDtypes) {
    ir::TensorView* x = ops::TensorBuilder().shape({2}).dtype(dt).build();
    fusion.addInput(x);
    xs.push_back(x);
    Tensor t = Tensor::empty({2}, dt);
    if (isFloatingType(dt)) {
      // -0.0 in every floating format is the sign bit alone.
      uint64_t sign = uint64_t(1) << (8 * dataTypeSize(dt) - 1);
      for (int64_t i = 0; i < 2; ++i) {
        std::memcpy(static_cast<char*>(t.data()) + i * int64_t(dataTypeSize(dt)), &sign,
                    dataTypeSize(dt));
      }
    } else {
      std::memset(t.data(), 0, 2 * dataTypeSize(dt));
    }
    inputs.push_back(t);
  }
  // ir::Scalar holds an integer value of a floating constant as a double (rounded once), so
  // integers past 2^53 only reach the literal exactly in the kir test below.
  std::erase_if(cases, [](const LiteralCase& c) {
    auto* i = std::get_if<int64_t>(&c.value);
    const int64_t exact = int64_t{1} << 53;
    return isFloatingType(c.dtype) && i != nullptr && (*i > exact || *i < -exact);
  });
  for (const LiteralCase& c : cases) {
    ir::TensorView* x = xs[size_t(testing::literalParam(c.dtype))];
    ir::TensorView* out = ops::TensorBuilder().shape({2}).dtype(c.dtype).build();
    auto op = c.dtype == DataType::Bool ? ir::BinaryOpType::LogicalOr : ir::BinaryOpType::Add;
    ir::IrBuilder::create<ir::BinaryOp>(op, out, x, ir::IrBuilder::constant(c.value, c.dtype));
    fusion.addOutput(out);
  }
  exec::KernelExecutor ke;
  ke.compile(fusion, kBackend, {.poisonOutputs = true});
  std::vector<Tensor> outs = ke.run(inputs);
  ASSERT_EQ(outs.size(), cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    for (int64_t i = 0; i < 2; ++i) {
      expectValue(cases[k], storedBits(outs[k].data(), cases[k].dtype, i),
                  "output " + std::to_string(k));
    }
  }
  if (HasFailure()) std::cout << ke.generated().kernelText;
}

// Int64 data next to Int64 constants in an Int32-index kernel (the executor picks Int32 for
// small sizes, where index constants are ints): the runtime's two-operand templates (loom_max,
// loom_min, the loom_fmod overloads) get long long constants, so the kernel compiles and
// computes in 64 bits.
TEST(ScalarLiteralExec, Int64DataWithConstantsInInt32IndexKernel) {
  LOOM_SKIP_WITHOUT_BACKEND();
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  ir::TensorView* x = ops::TensorBuilder().shape({4}).dtype(DataType::Int64).build();
  fusion.addInput(x);
  const int64_t big = int64_t{1} << 40;
  fusion.addOutput(ops::maximum(x, int64_t{5}));
  fusion.addOutput(ops::clamp(x, int64_t{-3}, big));
  fusion.addOutput(ops::fmod(x, int64_t{7}));
  fusion.addOutput(ops::minimum(x, std::numeric_limits<int64_t>::min()));
  Tensor t = Tensor::empty({4}, DataType::Int64);
  const int64_t values[4] = {-(int64_t{1} << 41), -1, 9, int64_t{1} << 50};
  std::memcpy(t.data(), values, sizeof(values));
  exec::KernelExecutor ke;
  ke.compile(fusion, kBackend, {.poisonOutputs = true});
  std::vector<eval::Argument> inputs = {t};
  std::vector<Tensor> outs = ke.run(inputs);
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_NE(ke.generated().kernelText.find("loom::Tensor<long long, 1, int> T0"), std::string::npos)
      << ke.generated().kernelText;
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t v = values[i];
    EXPECT_EQ(outs[0].dataAs<int64_t>()[i], std::max<int64_t>(v, 5)) << i;
    EXPECT_EQ(outs[1].dataAs<int64_t>()[i], std::clamp<int64_t>(v, -3, big)) << i;
    EXPECT_EQ(outs[2].dataAs<int64_t>()[i], v % 7) << i;
    EXPECT_EQ(outs[3].dataAs<int64_t>()[i], std::numeric_limits<int64_t>::min()) << i;
  }
  if (HasFailure()) std::cout << ke.generated().kernelText;
}

#ifndef LOOM_LITERAL_TEST_CUDA
// The literal kernel (literal_cases.h) stores each constant, max(constant, constant),
// where(true, constant, ...) and an accumulator initialized to it, exactly, with Int64 and Int32
// indices (Int64 constants are ints in the latter).
TEST(ScalarLiteralEmu, LiteralKernelStoresEveryConstantExactly) {
  std::vector<LiteralCase> cases = literalCases();
  std::vector<int64_t> slots = testing::literalSlots(cases);
  for (DataType index_type : {DataType::Int64, DataType::Int32}) {
    auto kernel = testing::literalKernel(index_type);
    GeneratedKernel g = generateKernel(*kernel);
    backend::HostCompileOptions o;
    o.cacheDir = testing::testCacheDir() / "host";
    auto module = backend::HostModule::load(g.source, g.name, o);
    // loom::Tensor<T, 1, IndexT>: the pointer, then size[1] and stride[1] of the index type.
    std::vector<std::vector<char>> data;
    std::vector<std::vector<char>> structs;
    std::vector<void*> args;
    for (DataType dt : testing::kLiteralDtypes) {
      data.emplace_back(size_t(testing::kLiteralSlots) * dataTypeSize(dt), char(0x7f));
      std::vector<char> s(24, 0);
      void* ptr = data.back().data();
      std::memcpy(s.data(), &ptr, sizeof(ptr));
      if (index_type == DataType::Int64) {
        int64_t dims[2] = {testing::kLiteralSlots, 1};
        std::memcpy(s.data() + 8, dims, sizeof(dims));
      } else {
        int32_t dims[2] = {int32_t(testing::kLiteralSlots), 1};
        std::memcpy(s.data() + 8, dims, sizeof(dims));
      }
      structs.push_back(std::move(s));
    }
    for (auto& s : structs) args.push_back(s.data());
    module->launch({1}, {1}, 0, args.data());
    for (size_t i = 0; i < cases.size(); ++i) {
      const LiteralCase& c = cases[i];
      const void* p = data[size_t(testing::literalParam(c.dtype))].data();
      std::string where = std::string(dataTypeName(index_type)) + " index, slot ";
      expectValue(c, storedBits(p, c.dtype, slots[i]), where + std::to_string(slots[i]));
      int64_t at = testing::kLiteralSlots / 4 + 3 * slots[i];
      for (int64_t k = c.dtype == DataType::Bool ? 1 : 0; k < 3; ++k) {
        expectValue(c, storedBits(p, c.dtype, at + k), where + std::to_string(at + k));
      }
    }
    if (HasFailure()) std::cout << g.kernelText;
  }
}
#endif

}  // namespace
}  // namespace loom::codegen
