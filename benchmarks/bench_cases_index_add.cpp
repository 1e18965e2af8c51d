// SPDX-License-Identifier: Apache-2.0
// The index_add benchmark case (issue 30's atomic scatter_add): embedding backward, the rows of a
// [V, H] gradient that [T] token ids pick getting the [T, H] incoming rows added
// (x.index_add(0, ids, src) in torch; scatter_add along dim 0 with the ids broadcast along H in
// Loom), with Int64 ids drawn uniformly from [0, V) and a double-precision check of a few rows.
#include <cmath>
#include <random>
#include <string>

#include "benchmarks/bench_cases.h"
#include "loom/ops/indexing.h"
#include "loom/ops/shape.h"
#include "loom/ops/tensor_builder.h"

namespace loom::bench {

// The case shape is [T, H, V].
std::vector<std::vector<int64_t>> indexAddInputShapes(const std::vector<int64_t>& thv) {
  return {{thv[2], thv[1]}, {thv[0]}, {thv[0], thv[1]}};  // x, ids, src
}

void buildIndexAdd(DataType dtype, const std::vector<int64_t>& thv, ir::Fusion& fusion) {
  const std::vector<std::vector<int64_t>> shapes = indexAddInputShapes(thv);
  ir::TensorView* x = ops::TensorBuilder().shape(shapes[0]).dtype(dtype).build();
  ir::TensorView* ids = ops::TensorBuilder().shape(shapes[1]).dtype(DataType::Int64).build();
  ir::TensorView* src = ops::TensorBuilder().shape(shapes[2]).dtype(dtype).build();
  for (ir::TensorView* tv : {x, ids, src}) fusion.addInput(tv);
  ir::TensorView* index =
      ops::expand(ops::broadcast(ids, {false, true}), std::vector<int64_t>{-1, thv[1]});
  fusion.addOutput(ops::scatterAdd(x, 0, index, src));
}

std::vector<Tensor> makeIndexAddInputs(const std::vector<int64_t>& thv, DataType dtype,
                                       uint64_t seed) {
  const std::vector<std::vector<int64_t>> shapes = indexAddInputShapes(thv);
  std::vector<Tensor> out;
  Tensor x = Tensor::empty(shapes[0], dtype);
  fillRandom(x, seed);
  Tensor ids = Tensor::empty(shapes[1], DataType::Int64);
  std::mt19937_64 rng(seed + 1);
  std::uniform_int_distribution<int64_t> pick(0, thv[2] - 1);
  for (int64_t i = 0; i < thv[0]; ++i) ids.dataAs<int64_t>()[i] = pick(rng);
  Tensor src = Tensor::empty(shapes[2], dtype);
  fillRandom(src, seed + 2);
  return {x, ids, src};
}

CheckResult checkIndexAdd(DataType dtype, const std::vector<Tensor>& inputs, const Tensor& out) {
  const Tensor& x = inputs.at(0);
  const Tensor& ids = inputs.at(1);
  const Tensor& src = inputs.at(2);
  const int64_t v = x.size(0), h = x.size(1), t = ids.size(0);
  const auto* id = ids.dataAs<const int64_t>();
  // Rows 0 and V-1 (perhaps not picked) and the rows of the first and last tokens.
  std::vector<int64_t> rows{0, v - 1, id[0], id[t - 1]};
  const bool bf16 = dtype == DataType::BFloat16;
  std::string failure;
  int64_t compared = 0;
  for (int64_t r : rows) {
    for (int64_t j : {int64_t(0), h / 2, h - 1}) {
      double want = x.getDoubleLinear(r * h + j);
      int64_t hits = 0;
      for (int64_t k = 0; k < t; ++k) {
        if (id[k] != r) continue;
        want += src.getDoubleLinear(k * h + j);
        ++hits;
      }
      // Sums of a few values in [-1, 1), rounded once to the dtype (f32 order-dependent adds).
      const double tol = bf16 ? 1e-2 * double(hits + 1) + 1e-2 * std::abs(want)
                              : 1e-5 * double(hits + 1) + 1e-5 * std::abs(want);
      const double got = out.getDoubleLinear(r * h + j);
      ++compared;
      if (failure.empty() && std::abs(got - want) > tol) {
        failure = "index_add row " + std::to_string(r) + " col " + std::to_string(j) + ": got " +
                  std::to_string(got) + ", expected " + std::to_string(want);
      }
    }
  }
  if (!failure.empty()) return {false, failure};
  return {true, "rows 0, V-1 and the first and last tokens' rows match a double-precision sum (" +
                    std::to_string(compared) + " values compared)"};
}

}  // namespace loom::bench
