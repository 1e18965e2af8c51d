// SPDX-License-Identifier: Apache-2.0
// The cache-hint levels of fusion-input loads and fusion-output stores (LOOM_INPUT_LOAD_HINT,
// LOOM_OUTPUT_STORE_HINT in runtime/types.cuh) compile with NVRTC for sm_90 without spills.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "codegen/runtime_test_util.h"
#include "loom/support/error.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/nvrtc.h"
#endif

namespace loom::codegen {
namespace {

// Codegen's shape of a vectorized pointwise kernel: 16-, 8-, 4- and 2-byte vectors and scalars of
// every dtype a fusion input can have, read through the input helpers and written through the
// output helpers.
constexpr const char* kPointwiseHintKernel = R"(
extern "C" __global__ void hint_pointwise(loom::Tensor<float, 1, int> T0,
    loom::Tensor<__nv_bfloat16, 1, int> T1, loom::Tensor<long long, 1, int> T2,
    loom::Tensor<double, 1, int> T3, loom::Tensor<bool, 1, int> T4,
    loom::Tensor<float, 1, int> T5, loom::Tensor<__nv_bfloat16, 1, int> T6) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  float T7[4];
  {
    loom::Array<float, 4> v;
    loom::loadVectorInput(v, &T0[i * 4]);
    #pragma unroll
    for (int k = 0; k < 4; ++k) T7[k] = v[k];
  }
  __nv_bfloat16 T8[8];
  {
    loom::Array<__nv_bfloat16, 8> v;
    loom::loadVectorInput(v, &T1[i * 8]);
    #pragma unroll
    for (int k = 0; k < 8; ++k) T8[k] = v[k];
  }
  {
    loom::Array<__nv_bfloat16, 4> v;
    loom::loadVectorInput(v, &T1[i * 4 + 64]);
    T8[0] = static_cast<__nv_bfloat16>(loom::toFloat(T8[0]) + loom::toFloat(v[3]));
  }
  {
    loom::Array<__nv_bfloat16, 2> v;
    loom::loadVectorInput(v, &T1[i * 2 + 128]);
    T8[1] = static_cast<__nv_bfloat16>(loom::toFloat(T8[1]) + loom::toFloat(v[1]));
  }
  {
    loom::Array<__nv_bfloat16, 1> v;
    loom::loadVectorInput(v, &T1[i + 256]);
    T8[2] = static_cast<__nv_bfloat16>(loom::toFloat(T8[2]) + loom::toFloat(v[0]));
  }
  const float s = static_cast<float>(loom::loadInput(&T2[i])) +
                  static_cast<float>(loom::loadInput(&T3[i])) +
                  (loom::loadInput(&T4[i]) ? 1.0f : 0.0f) + loom::loadInput(&T0[i + 1]) +
                  loom::toFloat(loom::loadInput(&T1[i + 3]));
  {
    loom::Array<float, 4> v;
    #pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = T7[k] * s;
    loom::storeVectorOutput(&T5[i * 4], v);
  }
  {
    loom::Array<float, 2> v;
    v[0] = T7[0];
    v[1] = T7[1];
    loom::storeVectorOutput(&T5[i * 2 + 512], v);
  }
  {
    loom::Array<__nv_bfloat16, 8> v;
    #pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = static_cast<__nv_bfloat16>(loom::toFloat(T8[k]) * s);
    loom::storeVectorOutput(&T6[i * 8], v);
  }
  loom::storeOutput(&T5[i + 1024], static_cast<float>(s));
  loom::storeOutput(&T6[i + 1024], static_cast<__nv_bfloat16>(s));
}
)";

// Codegen's shape of the persistent layer_norm kernel: a row held in registers (16-byte input
// loads), two block reductions, 16-byte output stores.
constexpr const char* kLayerNormHintKernel = R"(
extern "C" __global__ void hint_layer_norm(loom::Tensor<float, 2, int> T0,
    loom::Tensor<float, 1, int> T1, loom::Tensor<float, 1, int> T2,
    loom::Tensor<float, 2, int> T3) {
  extern __shared__ __align__(16) char loom_smem[];
  const int row = (int)blockIdx.x;
  const int t = (int)threadIdx.x;
  float x[32];
  #pragma unroll
  for (int i = 0; i < 8; ++i) {
    loom::Array<float, 4> v;
    loom::loadVectorInput(v, &T0[(row * T0.stride[0]) + (((i * 128) + t) * 4) * T0.stride[1]]);
    #pragma unroll
    for (int k = 0; k < 4; ++k) x[i * 4 + k] = v[k];
  }
  float acc = 0.0f;
  #pragma unroll
  for (int k = 0; k < 32; ++k) acc += x[k];
  acc = loom::blockReduce<true, false, false>(acc, loom::Sum{}, 0.0f,
                                              reinterpret_cast<float*>(loom_smem));
  const float mean = acc / 4096.0f;
  float sq = 0.0f;
  #pragma unroll
  for (int k = 0; k < 32; ++k) sq += (x[k] - mean) * (x[k] - mean);
  sq = loom::blockReduce<true, false, false>(sq, loom::Sum{}, 0.0f,
                                             reinterpret_cast<float*>(loom_smem));
  const float rstd = rsqrtf(sq / 4096.0f + 1e-5f);
  #pragma unroll
  for (int i = 0; i < 8; ++i) {
    loom::Array<float, 4> w;
    loom::Array<float, 4> b;
    loom::loadVectorInput(w, &T1[(((i * 128) + t) * 4) * T1.stride[0]]);
    loom::loadVectorInput(b, &T2[(((i * 128) + t) * 4) * T2.stride[0]]);
    loom::Array<float, 4> v;
    #pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = (x[i * 4 + k] - mean) * rstd * w[k] + b[k];
    loom::storeVectorOutput(&T3[(row * T3.stride[0]) + (((i * 128) + t) * 4) * T3.stride[1]], v);
  }
}
)";

#ifdef LOOM_HAVE_CUDA_BACKEND
// Both kernels compiled with `defines` (empty: the defaults).
cuda::CompileResult compileHinted(const std::vector<std::string>& defines,
                                  const std::string& name) {
  std::string source(runtimeLibrarySource());
  source += kPointwiseHintKernel;
  source += kLayerNormHintKernel;
  cuda::NvrtcCompiler compiler(testing::testCacheDir() / "cuda");
  cuda::CompileOptions o = cuda::CompileOptions::forArch("sm_90", name);
  o.extraOptions = defines;
  return compiler.compile(source, o);
}

#define LOOM_SKIP_WITHOUT_NVRTC()                                          \
  if (!cuda::nvrtcAvailable()) {                                           \
    std::cout << "skipped: " << cuda::nvrtcUnavailableReason() << "\n";    \
    GTEST_SKIP() << cuda::nvrtcUnavailableReason();                        \
  }
#else
#define LOOM_SKIP_WITHOUT_NVRTC()                                                     \
  std::cout << "skipped: Loom was built without the CUDA backend (no toolkit headers)\n"; \
  GTEST_SKIP() << "built without the CUDA backend";
#endif

// Every load level with plain stores, and every store level with plain loads, compiles for sm_90
// with no spills in either kernel (the cubin embeds the options, so levels are not compared
// byte for byte; DefaultLevelsMatchPlainAccesses covers level 0).
TEST(CacheHintNvrtc, EveryLevelCompilesWithoutSpills) {
  LOOM_SKIP_WITHOUT_NVRTC();
#ifdef LOOM_HAVE_CUDA_BACKEND
  std::vector<std::vector<std::string>> configs;
  for (int l = 0; l <= 6; ++l) configs.push_back({"-DLOOM_INPUT_LOAD_HINT=" + std::to_string(l)});
  for (int s = 1; s <= 2; ++s) configs.push_back({"-DLOOM_OUTPUT_STORE_HINT=" + std::to_string(s)});
  for (const auto& defines : configs) {
    const cuda::CompileResult r = compileHinted(defines, "cache_hint");
    for (const char* k : {"hint_pointwise", "hint_layer_norm"}) {
      const cuda::KernelResources* res = r.kernel(k);
      ASSERT_NE(res, nullptr) << defines[0] << " " << k << ":\n" << r.log;
      EXPECT_EQ(res->spillStores, 0) << defines[0] << " " << k;
      EXPECT_EQ(res->spillLoads, 0) << defines[0] << " " << k;
      EXPECT_EQ(res->stackFrame, 0) << defines[0] << " " << k;
      std::cout << defines[0] << " " << k << ": " << res->registers << " registers\n";
    }
  }
#endif
}

// With both levels 0 the helpers are plain accesses: a kernel written with loadVector/storeVector
// and plain subscripts compiles to the same cubin as one written with the hint helpers.
TEST(CacheHintNvrtc, DefaultLevelsMatchPlainAccesses) {
  LOOM_SKIP_WITHOUT_NVRTC();
#ifdef LOOM_HAVE_CUDA_BACKEND
  const std::string hinted = R"(
extern "C" __global__ void k(loom::Tensor<float, 1, int> T0, loom::Tensor<float, 1, int> T1) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  loom::Array<float, 4> v;
  loom::loadVectorInput(v, &T0[i * 4]);
  v[0] += loom::loadInput(&T0[i + 7]);
  loom::storeVectorOutput(&T1[i * 4], v);
  loom::storeOutput(&T1[i + 4096], static_cast<float>(v[1]));
}
)";
  std::string plain = hinted;
  for (auto [from, to] : {std::pair<std::string, std::string>{"loadVectorInput", "loadVector"},
                          {"storeVectorOutput", "storeVector"},
                          {"loom::loadInput(&T0[i + 7])", "T0[i + 7]"},
                          {"loom::storeOutput(&T1[i + 4096], static_cast<float>(v[1]));",
                           "T1[i + 4096] = static_cast<float>(v[1]);"}}) {
    size_t at = plain.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    plain.replace(at, from.size(), to);
  }
  cuda::NvrtcCompiler compiler(testing::testCacheDir() / "cuda");
  auto compile = [&](const std::string& kernel) {
    return compiler.compile(std::string(runtimeLibrarySource()) + kernel,
                            cuda::CompileOptions::forArch("sm_90", "cache_hint_default"));
  };
  EXPECT_EQ(compile(hinted).cubin, compile(plain).cubin);
#endif
}

// A level without a hint implementation stops the compile with a message naming the macro.
TEST(CacheHintNvrtc, UnknownLevelIsACompileError) {
  LOOM_SKIP_WITHOUT_NVRTC();
#ifdef LOOM_HAVE_CUDA_BACKEND
  for (const char* define : {"-DLOOM_INPUT_LOAD_HINT=9", "-DLOOM_OUTPUT_STORE_HINT=5"}) {
    std::string message;
    try {
      compileHinted({define}, "cache_hint_bad");
    } catch (const UserError& e) {
      message = e.what();
    }
    const std::string macro = std::string(define).substr(2, std::string(define).find('=') - 2);
    EXPECT_NE(message.find(macro + " must be"), std::string::npos) << define << ": " << message;
  }
#endif
}

}  // namespace
}  // namespace loom::codegen
