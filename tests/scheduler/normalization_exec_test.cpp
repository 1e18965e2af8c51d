// SPDX-License-Identifier: Apache-2.0
// Fusions scheduled by the inner-persistent scheduler, lowered and run (host backend in the emu
// suite, the GPU in its gpu twin), compared with the reference evaluator on the unscheduled
// original.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "backend_available.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/normalization.h"
#include "loom/segmenter/welford_translation.h"

namespace loom::scheduler {
namespace {

using namespace loom::ir;

Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed,
                    DataType dtype = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}

// Schedules a copy of `original` (its Welfords translated first when `translate`), runs it
// (outputs poisoned) and compares with the untranslated original; "" when it matches. The kernel
// text goes to *kernel when given.
std::string runScheduled(const Fusion& original, const std::vector<eval::Argument>& args,
                         int64_t reduction_size, std::string* kernel = nullptr,
                         bool translate = false, DeviceInfo device = {}) {
  std::unique_ptr<Fusion> f = original.clone();
  if (translate) {
    std::string why;
    if (!segmenter::translateApplicableWelford(*f, args, {}, &why)) return "not translated: " + why;
  }
  SchedulerRuntimeInfo info(*f, args, device);
  auto params = innerPersistentHeuristics(*f, info);
  scheduleInnerPersistent(*f, *params);
  exec::KernelExecutor ke;
  ke.compile(*f, test::suiteBackend(),
             {.poisonOutputs = true, .lowering = {.peelVectorRows = params->peelVectorRows()}});
  std::vector<Tensor> outs = ke.run(args);
  if (kernel != nullptr) *kernel = ke.generated().kernelText;
  std::vector<Tensor> expected = eval::evaluateFusion(original, args);
  for (size_t i = 0; i < outs.size(); ++i) {
    auto tol = eval::defaultTolerance(expected[i].dtype(), reduction_size);
    if (auto msg = eval::expectClose(outs[i].contiguous(), expected[i], tol,
                                     "output " + std::to_string(i))) {
      return *msg + "\n" + params->toString() + "\n" + ke.generated().kernelText;
    }
  }
  return "";
}

// layer_norm over the last dim with weight and bias; outputs y, mean, rstd (mean and rstd are
// also read inside the fusion).
// Symbolic sizes unless `rows` and `width` are given (the vector copies need constant sizes).
std::unique_ptr<Fusion> layerNormFusion(DataType dtype, int64_t rows = -1, int64_t width = -1) {
  auto f = std::make_unique<Fusion>();
  FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
  auto* w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
  auto* b = ops::TensorBuilder().shape({width}).dtype(dtype).build();
  f->addInput(x);
  f->addInput(w);
  f->addInput(b);
  auto r = ops::layerNorm(x, 1, w, b);
  f->addOutput(r.y);
  f->addOutput(r.mean);
  f->addOutput(r.rstd);
  return f;
}

std::vector<eval::Argument> layerNormArgs(int64_t rows, int64_t width, DataType dtype) {
  return {randomTensor({rows, width}, 21, dtype), randomTensor({width}, 22, dtype),
          randomTensor({width}, 23, dtype)};
}

// The kernel body (after the runtime library the text may start with).
std::string kernelBody(const std::string& text) {
  size_t at = text.find("__global__ void loom_kernel");
  return at == std::string::npos ? text : text.substr(at);
}

// Names of the last `n` loom::Tensor parameters of the kernel signature.
std::vector<std::string> lastParams(const std::string& body, size_t n) {
  std::vector<std::string> names;
  std::string sig = body.substr(0, body.find(')'));
  for (size_t at = sig.find("> "); at != std::string::npos; at = sig.find("> ", at + 1)) {
    size_t end = sig.find_first_of(",)", at);
    names.push_back(sig.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2));
  }
  if (names.size() > n) names.erase(names.begin(), names.end() - int64_t(n));
  return names;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Softmax scheduled with a persistent batch, vectorized input loads and a block reduction runs
// on the host backend and matches the reference.
TEST(InnerPersistentExec, Softmax) {
  Fusion f;
  {
    FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, 1));
  }
  EXPECT_EQ(runScheduled(f, {randomTensor({6, 1000}, 1)}, 1000), "");
}

// Softmax rows as wide as GPT-2's vocabulary (50257, prime to every vector width) in one kernel:
// exp(x - max) is recomputed from x, so the row held in shared memory is x alone (196 KB of fp32,
// which fits the H200's 227 KB; x and the exp together would not).
TEST(InnerPersistentExec, VocabularyWideSoftmaxHoldsOneRow) {
  Fusion f;
  {
    FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({3, 50257}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, 1));
  }
  std::vector<eval::Argument> args = {randomTensor({3, 50257}, 5)};
  SchedulerRuntimeInfo info(f, args);
  std::string why;
  ASSERT_TRUE(innerPersistentRunTimeCheck(f, info, &why)) << why;
  EXPECT_EQ(innerPersistentHeuristics(f, info)->buffer_bytes_per_row, 50257 * 4);
  EXPECT_EQ(runScheduled(f, args, 50257), "");
}

// Rows wider than shared memory (layer_norm and rms_norm of [9, 70001] fp32, bf16 and with the
// weights) run in one kernel that reads each row again per pass, and match the reference.
TEST(InnerPersistentExec, ReloadedWideRows) {
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    const int64_t width = dtype == DataType::Float32 ? 70001 : 140001;
    auto ln = layerNormFusion(dtype, 9, width);
    std::vector<eval::Argument> args = layerNormArgs(9, width, dtype);
    SchedulerRuntimeInfo info(*ln, args);
    EXPECT_TRUE(innerPersistentHeuristics(*ln, info)->reload_rows) << dataTypeName(dtype);
    EXPECT_EQ(runScheduled(*ln, args, width), "") << dataTypeName(dtype);

    Fusion rms;
    {
      FusionGuard guard(&rms);
      auto* x = ops::TensorBuilder().shape({9, width}).dtype(dtype).build();
      auto* w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
      rms.addInput(x);
      rms.addInput(w);
      rms.addOutput(ops::rmsNorm(x, 1, w, 1e-5));
    }
    EXPECT_EQ(runScheduled(rms, {args[0], args[1]}, width), "") << dataTypeName(dtype);
  }
}

// Narrow rows share a block (TIDy) and a prime width leaves a masked remainder.
TEST(InnerPersistentExec, SoftmaxNarrowPrimeRows) {
  Fusion f;
  {
    FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, 1));
  }
  EXPECT_EQ(runScheduled(f, {randomTensor({300, 13}, 2)}, 13), "");
}

// layer_norm's mean and rstd outputs are forked: the normalization reads registers, each
// statistic is stored once per row, no block sync is left in the kernel body, the output y is
// written with vector stores and the batch loops are unrolled.
TEST(InnerPersistentExec, LayerNormForkedStatisticsAndVectorStores) {
  auto f = layerNormFusion(DataType::Float32, 5, 1024);
  std::string kernel;
  EXPECT_EQ(runScheduled(*f, layerNormArgs(5, 1024, DataType::Float32), 1024, &kernel), "");
  std::string body = kernelBody(kernel);
  EXPECT_EQ(count(body, "__syncthreads"), 0u) << body;
  EXPECT_NE(body.find("loom::storeVector"), std::string::npos) << body;
  EXPECT_NE(body.find("#pragma unroll\n"), std::string::npos) << body;
  // The statistic outputs are the kernel's last two parameters: each appears in one store only.
  for (const std::string& param : lastParams(body, 2)) {
    EXPECT_EQ(count(body, param + "["), 1u) << param << "\n" << body;
  }
}

// layer_norm on rows that do not divide the vector width (2 and 1 wide), and in bf16.
TEST(InnerPersistentExec, LayerNormOddRowsAndBf16) {
  auto f32 = layerNormFusion(DataType::Float32);
  EXPECT_EQ(runScheduled(*f32, layerNormArgs(3, 1030, DataType::Float32), 1030), "");
  EXPECT_EQ(runScheduled(*f32, layerNormArgs(4, 1001, DataType::Float32), 1001), "");
  auto bf16 = layerNormFusion(DataType::BFloat16);
  EXPECT_EQ(runScheduled(*bf16, layerNormArgs(3, 2048, DataType::BFloat16), 2048), "");
  EXPECT_EQ(runScheduled(*bf16, layerNormArgs(2, 999, DataType::BFloat16), 999), "");
}

// layer_norm with its Welford translated to two passes runs and matches the Welford original
// (the lowering must not place `x - mean` in a loop of its own before the rstd chain).
TEST(InnerPersistentExec, TranslatedLayerNorm) {
  auto f = layerNormFusion(DataType::Float32);
  std::string kernel;
  EXPECT_EQ(runScheduled(*f, layerNormArgs(4, 1000, DataType::Float32), 1000, &kernel, true), "");
  EXPECT_EQ(kernelBody(kernel).find("welford"), std::string::npos) << kernel;
}

// var_mean (translated) and rms_norm in bf16, with a row that does not divide the vector.
TEST(InnerPersistentExec, VarMeanAndRmsNormBf16) {
  Fusion vm;
  {
    FusionGuard guard(&vm);
    auto* x = ops::TensorBuilder().shape({-1, -1, -1}).dtype(DataType::BFloat16).build();
    vm.addInput(x);
    auto r = ops::varMean(x, {2});
    vm.addOutput(r.var);
    vm.addOutput(r.mean);
  }
  EXPECT_EQ(runScheduled(vm, {randomTensor({2, 3, 1000}, 31, DataType::BFloat16)}, 1000, nullptr,
                         true),
            "");
  Fusion rms;
  {
    FusionGuard guard(&rms);
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::BFloat16).build();
    auto* w = ops::TensorBuilder().shape({-1}).dtype(DataType::BFloat16).build();
    rms.addInput(x);
    rms.addInput(w);
    rms.addOutput(ops::rmsNorm(x, 1, w));
  }
  std::string kernel;
  EXPECT_EQ(runScheduled(rms, {randomTensor({4, 1024}, 32, DataType::BFloat16),
                               randomTensor({1024}, 33, DataType::BFloat16)},
                         1024, &kernel),
            "");
  EXPECT_EQ(runScheduled(rms, {randomTensor({3, 1001}, 34, DataType::BFloat16),
                               randomTensor({1001}, 35, DataType::BFloat16)},
                         1001),
            "");
}

// Register arrays of the kernel body: element type and length, e.g. {"__nv_bfloat16", 32}.
std::vector<std::pair<std::string, int64_t>> registerArrays(const std::string& body) {
  std::vector<std::pair<std::string, int64_t>> arrays;
  static const std::regex decl(R"((float|__nv_bfloat16|__half) T[0-9]+\[([0-9]+)\])");
  for (std::sregex_iterator it(body.begin(), body.end(), decl), end; it != end; ++it) {
    arrays.emplace_back((*it)[1].str(), std::stoll((*it)[2].str()));
  }
  return arrays;
}

// The largest register array of `type` in the kernel body (0 when none).
int64_t largestArray(const std::string& body, const std::string& type) {
  int64_t n = 0;
  for (const auto& [t, len] : registerArrays(body)) {
    if (t == type) n = std::max(n, len);
  }
  return n;
}

std::unique_ptr<Fusion> bf16VarMean() {
  auto f = std::make_unique<Fusion>();
  Fusion& vm = *f;
  FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({-1, -1, -1}).dtype(DataType::BFloat16).build();
  vm.addInput(x);
  auto r = ops::varMean(x, {2});
  vm.addOutput(r.var);
  vm.addOutput(r.mean);
  return f;
}

// The persistent row of a bf16 var_mean or layer_norm is the bf16 input cache (a bf16 register
// array of a thread's whole batch), not its fp32 cast: each use recomputes the cast, so no fp32
// array longer than one element remains (layer_norm's weight and bias stay bf16 too).
TEST(InnerPersistentExec, Bf16PersistentBufferIsBf16Array) {
  std::string kernel;
  auto vm = bf16VarMean();
  EXPECT_EQ(runScheduled(*vm, {randomTensor({2, 3, 2048}, 51, DataType::BFloat16)}, 2048, &kernel,
                         true),
            "");
  std::string body = kernelBody(kernel);
  EXPECT_EQ(largestArray(body, "__nv_bfloat16"), 16) << body;  // 2048 / 128 threads
  EXPECT_EQ(largestArray(body, "float"), 1) << body;
  auto ln = layerNormFusion(DataType::BFloat16);
  EXPECT_EQ(runScheduled(*ln, layerNormArgs(3, 4096, DataType::BFloat16), 4096, &kernel), "");
  body = kernelBody(kernel);
  EXPECT_EQ(largestArray(body, "__nv_bfloat16"), 32) << body;  // x, weight and bias
  int64_t rows_of_32 = 0;
  for (const auto& [type, len] : registerArrays(body)) rows_of_32 += len == 32 ? 1 : 0;
  EXPECT_EQ(rows_of_32, 3) << body;
  EXPECT_EQ(largestArray(body, "float"), 1) << body;
}

// fp32 rows have nothing to project: the input cache itself is the persistent fp32 array.
TEST(InnerPersistentExec, Fp32PersistentBufferUnchanged) {
  std::string kernel;
  auto ln = layerNormFusion(DataType::Float32);
  EXPECT_EQ(runScheduled(*ln, layerNormArgs(3, 4096, DataType::Float32), 4096, &kernel), "");
  EXPECT_EQ(largestArray(kernelBody(kernel), "float"), 32) << kernel;
}

// Many latency-bound bf16 rows (a 2-SM device, so 8 rows are "many") take 64 values per thread;
// they run and match the reference, with rows that do not divide the vector or the threads.
TEST(InnerPersistentExec, LatencyBoundBf16RowsRun) {
  DeviceInfo two_sms;
  two_sms.sm_count = 2;
  std::string kernel;
  auto vm = bf16VarMean();
  EXPECT_EQ(runScheduled(*vm, {randomTensor({2, 4, 8200}, 61, DataType::BFloat16)}, 8200, &kernel,
                         true, two_sms),
            "");
  EXPECT_EQ(largestArray(kernelBody(kernel), "__nv_bfloat16"), 64) << kernel;
  auto ln = layerNormFusion(DataType::BFloat16);
  EXPECT_EQ(runScheduled(*ln, layerNormArgs(9, 1000, DataType::BFloat16), 1000, nullptr, false,
                         two_sms),
            "");
}

}  // namespace
}  // namespace loom::scheduler
