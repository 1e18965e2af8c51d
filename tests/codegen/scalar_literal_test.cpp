// SPDX-License-Identifier: Apache-2.0
// Constants in generated code: the literal of every dtype and special value (golden text), and
// a kernel using all of them compiles with NVRTC for sm_90 without warnings (skipped without
// NVRTC). The emu test (scalar_literal_emu_test.cpp) checks the values a kernel stores.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <limits>

#include "codegen/literal_cases.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/support/error.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/nvrtc.h"
#endif

namespace loom::codegen {
namespace {

using ::testing::HasSubstr;
using testing::literalCases;
using testing::literalKernel;

// Every constant prints as the literal of exactly its dtype and value (Int64-index kernel).
TEST(ScalarLiteral, EveryDtypeAndSpecialValue) {
  for (const testing::LiteralCase& c : literalCases()) {
    EXPECT_EQ(scalarLiteral(c.dtype, c.value, DataType::Int64), c.literal)
        << dataTypeName(c.dtype) << " " << ir::scalarValueToString(c.value, c.dtype);
  }
}

// In an Int32-index kernel, Int64 constants that fit an int are ints (index math stays 32-bit);
// larger ones keep LL, and no other dtype changes.
TEST(ScalarLiteral, Int64ConstantsInInt32IndexKernels) {
  auto lit = [](int64_t v) {
    return scalarLiteral(DataType::Int64, ir::ScalarValue{v}, DataType::Int32);
  };
  EXPECT_EQ(lit(0), "0");
  EXPECT_EQ(lit(-5), "(-5)");
  EXPECT_EQ(lit(std::numeric_limits<int32_t>::max()), "2147483647");
  EXPECT_EQ(lit(std::numeric_limits<int32_t>::min()), "(-2147483647 - 1)");
  EXPECT_EQ(lit(int64_t{2147483648}), "2147483648LL");
  EXPECT_EQ(lit(std::numeric_limits<int64_t>::min()), "(-9223372036854775807LL - 1LL)");
  for (const testing::LiteralCase& c : literalCases()) {
    if (c.dtype == DataType::Int64) continue;
    EXPECT_EQ(scalarLiteral(c.dtype, c.value, DataType::Int32), c.literal);
  }
}

// A constant without a value is an internal error naming its dtype.
TEST(ScalarLiteral, ConstantWithoutValueIsInternalError) {
  try {
    scalarLiteral(DataType::Float32, ir::ScalarValue{}, DataType::Int64);
    ADD_FAILURE() << "no error";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.message(), HasSubstr("a f32 constant without a value"));
  }
}

// Codegen prints kir::Const values through scalarLiteral: stores, max, where and accumulator
// initializations of the literal kernel show them.
TEST(ScalarLiteral, KernelTextUsesTheLiterals) {
  auto kernel = literalKernel(DataType::Int64);
  const std::string text = generateKernel(*kernel).kernelText;
  for (const char* line :
       {"  T0[6LL] = static_cast<double>((-0x1.b9cd1295941p-1030));",
        "  T1[2LL] = static_cast<float>(__int_as_float(0x7f800000));",
        "  T2[1LL] = static_cast<__half>(__half(1.0009766f));",
        "  T4[2LL] = static_cast<long long>((-9223372036854775807LL - 1LL));",
        "  T5[2LL] = static_cast<int>((-2147483647 - 1));", "  T6[2LL] = static_cast<bool>(true);",
        "static_cast<__half>(loom_max(T2[3LL], __half(65504.0f)))",
        "static_cast<float>((T6[0LL] ? (-0.0f) : T1[7LL]))"}) {
    EXPECT_THAT(text, HasSubstr(line)) << text;
  }
}

#ifdef LOOM_HAVE_CUDA_BACKEND
#define LOOM_SKIP_WITHOUT_NVRTC()                                       \
  if (!cuda::nvrtcAvailable()) {                                        \
    std::cout << "skipped: " << cuda::nvrtcUnavailableReason() << "\n"; \
    GTEST_SKIP() << cuda::nvrtcUnavailableReason();                     \
  }
#else
#define LOOM_SKIP_WITHOUT_NVRTC()                                                         \
  std::cout << "skipped: Loom was built without the CUDA backend (no toolkit headers)\n"; \
  GTEST_SKIP() << "built without the CUDA backend";
#endif

// The literal kernel compiles with NVRTC for sm_90 with either index type, with no warning (an
// out-of-range or underflowing literal would give one).
TEST(ScalarLiteralNvrtc, CompilesForSm90WithoutWarnings) {
  LOOM_SKIP_WITHOUT_NVRTC();
#ifdef LOOM_HAVE_CUDA_BACKEND
  for (DataType index_type : {DataType::Int64, DataType::Int32}) {
    auto kernel = literalKernel(index_type);
    GeneratedKernel g = generateKernel(*kernel);
    cuda::NvrtcCompiler compiler(std::nullopt);  // uncached, so the log is NVRTC's own
    cuda::CompileResult r =
        compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
    EXPECT_NE(r.kernel(g.name), nullptr) << r.log;
    EXPECT_THAT(r.log, ::testing::Not(HasSubstr("warning"))) << g.kernelText;
  }
#endif
}

}  // namespace
}  // namespace loom::codegen
