// SPDX-License-Identifier: Apache-2.0
// loom_reduction_order_bench: a sum over the dim that is outermost in memory, written two ways
// that compute the same numbers: over a permute of the input (the dim is innermost logically) and
// directly over the leading dim. Times FusionExecutorCache::run (median of --reps runs after a
// warm-up, host tensors in and out), host backend by default (--backend cuda on the GPU machine). Not a test; the figures
// are in docs/performance.md ("Reductions in memory order").
//
//   loom_reduction_order_bench [--reps N] [--backend host|cuda]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/tensor/tensor.h"

namespace {

using loom::Tensor;
using loom::ir::Fusion;
using loom::ir::TensorView;

struct Case {
  std::string name;
  std::vector<int64_t> sizes;  // of the row-major input
  std::function<TensorView*(TensorView*)> body;
};

double medianMs(loom::runtime::FusionExecutorCache& cache, const Tensor& x, int reps,
                std::vector<Tensor>& outs) {
  const std::vector<loom::eval::Argument> args{x};
  outs = cache.run(args);  // compile
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    outs = cache.run(args);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  loom::exec::Backend backend = loom::exec::Backend::Host;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend = std::strcmp(argv[++i], "cuda") == 0 ? loom::exec::Backend::Cuda
                                                     : loom::exec::Backend::Host;
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--backend host|cuda]\n", argv[0]);
      return 2;
    }
  }
  namespace ops = loom::ops;
  const std::vector<Case> cases{
      // The matmul rFactor's partial sum: [512, 256] x [256, 256], k in 4 blocks.
      {"partials [4, 512, 256]: sum(permute(p, [1, 2, 0]), -1)", {4, 512, 256},
       [](TensorView* p) { return ops::sum(ops::permute(p, {1, 2, 0}), {-1}); }},
      {"partials [4, 512, 256]: sum(p, 0)", {4, 512, 256},
       [](TensorView* p) { return ops::sum(p, {0}); }},
      {"x [2048, 1024]: sum(permute(x, [1, 0]), 1)", {2048, 1024},
       [](TensorView* x) { return ops::sum(ops::permute(x, {1, 0}), {1}); }},
      {"x [2048, 1024]: sum(x, 0)", {2048, 1024}, [](TensorView* x) { return ops::sum(x, {0}); }},
  };
  int status = 0;
  for (const Case& c : cases) {
    auto fusion = std::make_unique<Fusion>();
    {
      loom::ir::FusionGuard g(fusion.get());
      TensorView* x = ops::TensorBuilder().shape(std::vector<int64_t>(c.sizes.size(), -1)).build();
      fusion->addInput(x);
      fusion->addOutput(c.body(x));
    }
    Tensor x = Tensor::empty(c.sizes, loom::DataType::Float32);
    loom::fillRandom(x, 1);
    const std::vector<loom::eval::Argument> args{x};
    std::vector<Tensor> expected = loom::eval::evaluateFusion(*fusion, args);
    loom::runtime::RuntimeOptions options;
    options.backend = backend;
    loom::runtime::FusionExecutorCache cache(std::move(fusion), options);
    std::vector<Tensor> outs;
    const double ms = medianMs(cache, x, reps, outs);
    std::string params;
    for (const auto& r : cache.lastRuntime()->lastRun()) params += r.params;
    while (!params.empty() && params.back() == '\n') params.pop_back();
    auto err = loom::eval::expectClose(
        outs[0], expected[0],
        loom::eval::defaultTolerance(loom::DataType::Float32, c.sizes.front()), "sum");
    if (err) {
      std::printf("%s: FAILED %s\n", c.name.c_str(), err->c_str());
      status = 1;
      continue;
    }
    std::printf("%-55s %10.3f ms  (%s)\n", c.name.c_str(), ms, params.c_str());
  }
  return status;
}
