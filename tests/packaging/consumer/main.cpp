// SPDX-License-Identifier: Apache-2.0
// A program using Loom the way a framework does, through loom/loom.h and loom::loom only: it builds
// x * 2 + 1, runs it through FusionExecutorCache on the host backend and checks the result against
// the reference evaluator and against the formula. tests/packaging builds it against an installed
// Loom (find_package) and against the source tree (add_subdirectory).
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "loom/loom.h"

static_assert(LOOM_VERSION_MAJOR >= 0 && LOOM_VERSION_MINOR >= 0 && LOOM_VERSION_PATCH >= 0);

int main() {
  using namespace loom;
  auto fusion = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard guard(fusion.get());
    ir::TensorView* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float32).build();
    fusion->addInput(x);
    fusion->addOutput(ops::add(ops::mul(x, 2.0), 1.0));
  }

  Tensor x = Tensor::empty({4, 8}, DataType::Float32);
  for (int64_t i = 0; i < x.numel(); ++i) x.setDoubleLinear(i, 0.25 * double(i) - 3.0);
  const std::vector<eval::Argument> args = {x};
  const std::vector<Tensor> expected = eval::evaluateFusion(*fusion, args);

  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  const std::vector<Tensor> outs = cache.run(args);

  if (outs.size() != 1 || outs[0].sizes() != std::vector<int64_t>{4, 8}) {
    std::fprintf(stderr, "consumer: expected one [4, 8] output, got %zu\n", outs.size());
    return 1;
  }
  if (auto error = eval::expectClose(outs[0], expected[0],
                                     eval::defaultTolerance(DataType::Float32), "x * 2 + 1")) {
    std::fprintf(stderr, "consumer: %s\n", error->c_str());
    return 1;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double want = 2.0 * x.getDoubleLinear(i) + 1.0;  // exact in float for these inputs
    if (outs[0].getDoubleLinear(i) != want) {
      std::fprintf(stderr, "consumer: element %lld is %g, expected %g\n", (long long)i,
                   outs[0].getDoubleLinear(i), want);
      return 1;
    }
  }
  std::printf("loom %s: x * 2 + 1 on [4, 8] through FusionExecutorCache (host) matches\n",
              LOOM_VERSION_STRING);
  return 0;
}
