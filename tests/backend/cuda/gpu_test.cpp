// SPDX-License-Identifier: Apache-2.0
// CUDA backend on a real GPU: memory, copies, launches and launch errors (label gpu).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cuda/test_kernels.h"
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/module.h"
#include "loom/backend/cuda/nvrtc.h"

namespace loom::cuda {
namespace {

#define SKIP_WITHOUT_GPU()                                        \
  if (!cudaAvailable() || !nvrtcAvailable()) {                    \
    std::string why = cudaAvailable() ? nvrtcUnavailableReason()  \
                                      : unavailableReason();      \
    std::cout << "skipped: " << why << "\n";                      \
    GTEST_SKIP() << why;                                          \
  }

// Compiles a test kernel for the GPU's own arch (no disk cache) and loads it on GPU 0.
Module loadKernel(const std::string& name) {
  NvrtcCompiler compiler(std::nullopt);
  CompileResult r = compiler.compile(test::readKernel(name + ".cu"), CompileOptions::forArch("", name));
  EXPECT_FALSE(r.hasSpills()) << r.log;
  return Module(r.cubin, 0);
}

Tensor randomHost(int64_t n, uint64_t seed) {
  Tensor t = Tensor::empty({n}, DataType::Float32);
  fillRandom(t, seed);
  return t;
}

// The device reports a real architecture, and the compile arch follows it.
TEST(CudaGpu, DevicePropertiesNameTheArch) {
  SKIP_WITHOUT_GPU();
  DeviceProperties p = deviceProperties(0);
  EXPECT_GE(p.major, 7);
  EXPECT_EQ(p.arch().rfind("sm_", 0), 0u);
  EXPECT_GT(p.totalMemory, size_t(0));
  std::cout << "GPU 0: " << p.name << " " << p.arch() << ", " << p.multiprocessors << " SMs\n";
}

// Host -> device -> host copies return the same bytes, for contiguous and strided views.
TEST(CudaGpu, CopiesRoundTrip) {
  SKIP_WITHOUT_GPU();
  Tensor host = Tensor::empty({3, 5}, DataType::Float32);
  fillRandom(host, 1);
  Tensor dev = toDevice(host);
  EXPECT_TRUE(dev.device().isCuda());
  Tensor back = toHost(dev);
  for (int64_t i = 0; i < host.numel(); ++i) {
    EXPECT_EQ(back.getDoubleLinear(i), host.getDoubleLinear(i)) << i;
  }
  std::vector<int64_t> perm = {1, 0};
  Tensor transposed = toHost(toDevice(host.permute(perm)));
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<int64_t> a = {i, j}, b = {j, i};
      EXPECT_EQ(transposed.getDouble(a), host.getDouble(b));
    }
  }
}

// A vector-add kernel launched on an explicit stream writes every output element correctly.
TEST(CudaGpu, VectorAddMatchesHost) {
  SKIP_WITHOUT_GPU();
  Module module = loadKernel("vector_add");
  Function f = module.function("vector_add");
  Stream stream = Stream::create(0);
  long long n = 100003;  // not a multiple of the block size
  Tensor a = randomHost(n, 2), b = randomHost(n, 3);
  Tensor da = toDevice(a, 0, stream.handle()), db = toDevice(b, 0, stream.handle());
  Tensor dout = emptyCuda({n}, DataType::Float32, 0, stream.handle());
  fillBytes(dout, 0xff, stream.handle());  // NaN: an element never written fails the check
  void* pa = da.data();
  void* pb = db.data();
  void* pout = dout.data();
  void* args[] = {&pa, &pb, &pout, &n};
  LaunchConfig config(Dim3(unsigned((n + 255) / 256)), Dim3(256));
  f.launch(config, args, stream);
  stream.synchronize();
  Tensor out = toHost(dout, stream.handle());
  for (int64_t i = 0; i < n; ++i) {
    float expected = a.dataAs<float>()[i] + b.dataAs<float>()[i];
    ASSERT_EQ(out.dataAs<float>()[i], expected) << "element " << i;
  }
}

// A launch with more than 48 KiB of dynamic shared memory raises the kernel's limit first.
TEST(CudaGpu, LargeDynamicSharedMemoryLaunches) {
  SKIP_WITHOUT_GPU();
  DeviceProperties p = deviceProperties(0);
  int perBlock = 20000;  // 80,000 bytes of shared memory
  if (p.maxSharedMemoryPerBlockOptin < size_t(perBlock) * 4) {
    GTEST_SKIP() << "the GPU allows only " << p.maxSharedMemoryPerBlockOptin << " bytes";
  }
  Module module = loadKernel("block_sum");
  Function f = module.function("block_sum");
  int blocks = 3;
  Tensor in = randomHost(int64_t(blocks) * perBlock, 4);
  Tensor din = toDevice(in);
  Tensor dpartial = emptyCuda({blocks}, DataType::Float32);
  void* pin = din.data();
  void* ppartial = dpartial.data();
  void* args[] = {&pin, &ppartial, &perBlock};
  f.launch(LaunchConfig(Dim3(unsigned(blocks)), Dim3(128), size_t(perBlock) * 4),
           args, Stream::legacyDefault());
  Tensor partial = toHost(dpartial);
  for (int b = 0; b < blocks; ++b) {
    double expected = 0;
    for (int i = 0; i < perBlock; ++i) expected += in.dataAs<float>()[int64_t(b) * perBlock + i];
    EXPECT_NEAR(partial.dataAs<float>()[b], expected, 1e-2) << "block " << b;
  }
}

// A launch the driver rejects (too many threads per block) names the kernel and its launch.
TEST(CudaGpu, LaunchErrorNamesKernelAndConfig) {
  SKIP_WITHOUT_GPU();
  Module module = loadKernel("vector_add");
  Function f = module.function("vector_add");
  Tensor dout = emptyCuda({8}, DataType::Float32);
  void* p = dout.data();
  long long n = 8;
  void* args[] = {&p, &p, &p, &n};
  try {
    f.launch(LaunchConfig(Dim3(1), Dim3(4096)), args, Stream::legacyDefault());
    FAIL() << "expected a launch failure";
  } catch (const CudaError& e) {
    std::string msg = e.message();
    EXPECT_NE(msg.find("launching kernel 'vector_add'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("block (4096, 1, 1)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << msg;
  }
}

// Looking up a kernel the module lacks is a user error that mentions name mangling.
TEST(CudaGpu, MissingKernelIsAUserError) {
  SKIP_WITHOUT_GPU();
  Module module = loadKernel("vector_add");
  try {
    module.function("vectorAdd");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'vectorAdd' is not in the module"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::cuda
