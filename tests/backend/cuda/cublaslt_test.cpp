// SPDX-License-Identifier: Apache-2.0
// cuBLASLt opened at run time: where the library is installed, every entry point Loom declares
// resolves (a misspelt name or a missing symbol fails here, not on the first GPU matmul); a call
// on a machine without a GPU is an error, never a crash.
#include "loom/backend/cuda/cublaslt.h"

#include <gtest/gtest.h>

#include "loom/support/error.h"

namespace loom::cuda {
namespace {

TEST(CublasLt, EveryEntryPointResolvesWhereTheLibraryIs) {
  const std::string reason = cublasLtUnavailableReason();
  if (reason.find("not found") != std::string::npos) GTEST_SKIP() << reason;
  EXPECT_EQ(reason, "");
  EXPECT_TRUE(cublasLtAvailable());
}

TEST(CublasLt, ACallWithoutAGpuIsAnError) {
  if (cudaAvailable()) GTEST_SKIP() << "a GPU is here: the gpu tier runs real calls";
  LtMatmulCall call;
  call.dRows = call.dCols = 1;
  try {
    ltMatmul(call, 0, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("cuBLASLt") != std::string::npos ||
                what.find("a GPU is required") != std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace loom::cuda
