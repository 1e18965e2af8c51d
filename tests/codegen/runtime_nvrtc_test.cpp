// SPDX-License-Identifier: Apache-2.0
// Every runtime helper, as instantiated by the test kernels, compiles with NVRTC for sm_90 without
// register spills.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "codegen/runtime_test_util.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/nvrtc.h"
#endif

namespace loom::codegen {
namespace {

// All test kernels (one program: the runtime, then each kernel) compile for sm_90, and ptxas
// reports no spill stores or loads for any of them.
TEST(RuntimeNvrtc, AllTestKernelsCompileForSm90WithoutSpills) {
#ifndef LOOM_HAVE_CUDA_BACKEND
  std::cout << "skipped: Loom was built without the CUDA backend (no toolkit headers)\n";
  GTEST_SKIP() << "built without the CUDA backend";
#else
  if (!cuda::nvrtcAvailable()) {
    std::cout << "skipped: " << cuda::nvrtcUnavailableReason() << "\n";
    GTEST_SKIP() << cuda::nvrtcUnavailableReason();
  }
  std::string source(runtimeLibrarySource());
  for (const auto& k : testing::allTestKernels()) source += k.source;
  cuda::NvrtcCompiler compiler(testing::testCacheDir() / "cuda");
  const cuda::CompileResult r =
      compiler.compile(source, cuda::CompileOptions::forArch("sm_90", "runtime_test_kernels"));
  EXPECT_EQ(r.arch, "sm_90");
  for (const auto& k : testing::allTestKernels()) {
    const cuda::KernelResources* res = r.kernel(k.name);
    ASSERT_NE(res, nullptr) << k.name << " missing from the ptxas report:\n" << r.log;
    EXPECT_EQ(res->spillStores, 0) << k.name;
    EXPECT_EQ(res->spillLoads, 0) << k.name;
    EXPECT_EQ(res->stackFrame, 0) << k.name;
    EXPECT_GT(res->registers, 0) << k.name;
    std::cout << k.name << ": " << res->registers << " registers\n";
  }
  EXPECT_FALSE(r.hasSpills()) << r.log;
#endif
}

}  // namespace
}  // namespace loom::codegen
