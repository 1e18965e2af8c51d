// SPDX-License-Identifier: Apache-2.0
// The benchmark cases of shared/docs/performance.md: their fusions (built with the ops layer),
// byte counts, random inputs and a double-precision spot check of their outputs. No GPU needed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/bench_report.h"
#include "loom/ir/fusion.h"
#include "loom/tensor/tensor.h"

namespace loom::bench {

/// Transpose: y = x^T ([R, C] -> [C, R], written contiguous); GeluBiasTranspose:
/// y = gelu_tanh(x + bias)^T (bias [C]), the transpose scheduler's two cases (issue 37).
/// Copy: y = x, the device's copy bandwidth that the transposes are measured against.
/// ToChannelsLast: y = x.permute(0, 2, 3, 1) of [N, C, H, W], written contiguous ([N, H, W, C]):
/// the memory-format change, with images narrower than a tile (the transpose scheduler's
/// merged dims) and wider ones.
/// BatchNorm{Fwd,Bwd}{Nchw,Nhwc}: batch-norm forward (training statistics, then y) and backward
/// (dx, grad weight, grad bias) of the case shape [N, C, H, W], stored NCHW or channels last
/// ([N, H, W, C]) (the outer-persistent scheduler, issue 37; bench_cases_batch_norm.cpp).
/// LayerNormBwd / RmsNormBwd: grad input, grad weight (and layer_norm's grad bias) of [R, H] rows
/// (the inner-outer-persistent scheduler, issue 37; bench_cases_norm_backward.cpp).
/// IndexAdd: x.index_add(0, ids, src) of case shape [T, H, V]: x [V, H], Int64 ids [T] in
/// [0, V), src [T, H] (embedding backward; the scatter scheduler's atomic kernel, issue 30;
/// bench_cases_index_add.cpp).
enum class Op {
  VarMean,
  LayerNorm,
  RmsNorm,
  Softmax,
  GeluTanhBias,
  SumDim0,
  Linear,
  LinearGeluTanh,
  Transpose,
  GeluBiasTranspose,
  Copy,
  ToChannelsLast,
  BatchNormFwdNchw,
  BatchNormFwdNhwc,
  BatchNormBwdNchw,
  BatchNormBwdNhwc,
  LayerNormBwd,
  RmsNormBwd,
  IndexAdd
};

/// Epsilon of layer_norm and rms_norm, as the torch baseline passes it.
inline constexpr double kNormEps = 1e-5;

/// One case: an op on a fixed input shape; the dtype is chosen separately. Names are those of
/// benchmarks/compare.py, shared by every JSON file.
struct Case {
  std::string name;
  Op op;
  std::vector<int64_t> shape;  ///< of the main input; Linear, LinearGeluTanh: [m, k, n] (x [m, k], w [n, k])
  std::string label;           ///< what the table prints
};

/// The cases in the table order of performance.md.
const std::vector<Case>& allCases();
/// The case named `name`, or nullptr.
const Case* findCase(std::string_view name);

/// "fp32" -> Float32, "bf16" -> BFloat16; UserError otherwise.
DataType parseDtype(std::string_view name);
/// Float32 -> "fp32", BFloat16 -> "bf16".
std::string dtypeLabel(DataType dtype);

/// Shapes the fusion of `op` reads (main input, then per-column vectors) and writes, for a main
/// input of `shape`; they match the torch calls (var_mean and sum drop the reduced dims).
std::vector<std::vector<int64_t>> inputShapes(Op op, const std::vector<int64_t>& shape);
std::vector<std::vector<int64_t>> outputShapes(Op op, const std::vector<int64_t>& shape);

/// Bytes moved by an ideal kernel: each input read once plus each output written once
/// (compare.io_bytes).
int64_t ioBytes(Op op, const std::vector<int64_t>& shape, DataType dtype);

/// The unscheduled fusion of `op` on a main input of `shape` in `dtype`, with the ops calls of
/// tools/loom/gen_examples.cpp but the outputs torch returns: layer_norm only y (not mean and
/// rstd), sum in the input's dtype (a cast of the fp32 sum for bf16), and torch's eps for
/// rms_norm (1e-5, not the ops default 1e-6).
std::unique_ptr<ir::Fusion> buildFusion(Op op, const std::vector<int64_t>& shape, DataType dtype);

/// Contiguous random host inputs (uniform in [-1, 1), rounded to `dtype`) for the fusion above.
/// Large tensors repeat a random block of a few million elements, whose length is not a multiple
/// of any row length, so filling a 400M-element input takes a moment rather than tens of seconds.
std::vector<Tensor> makeInputs(Op op, const std::vector<int64_t>& shape, DataType dtype,
                               uint64_t seed);

/// Result of checking a run's outputs.
struct CheckResult {
  bool ok = true;
  std::string detail;  ///< what was checked, or the first failure
};

/// Checks host copies of the outputs against the inputs: shapes and dtypes, every element
/// finite, and a few rows (the first and the last) or columns recomputed in double with
/// tolerances for the dtype; softmax rows must also sum to 1.
CheckResult checkOutputs(Op op, DataType dtype, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& outputs);

/// The batch-norm cases' pieces (bench_cases_batch_norm.cpp), used by the functions above: every
/// tensor in the case's dtype (torch's non-mixed batch_norm), statistics computed in fp32.
bool isBatchNorm(Op op);
std::vector<std::vector<int64_t>> batchNormInputShapes(Op op, const std::vector<int64_t>& nchw);
std::vector<std::vector<int64_t>> batchNormOutputShapes(Op op, const std::vector<int64_t>& nchw);
void buildBatchNorm(Op op, DataType dtype, ir::Fusion& fusion,
                    const std::vector<ir::TensorView*>& inputs);
CheckResult checkBatchNorm(Op op, DataType dtype, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& outputs);

/// The norm-backward cases' pieces (bench_cases_norm_backward.cpp), used by the functions above:
/// dy, x, the weight (and layer_norm's saved mean and rstd, [R, 1]) in the case's dtype.
bool isNormBackward(Op op);
std::vector<std::vector<int64_t>> normBackwardInputShapes(Op op, const std::vector<int64_t>& rh);
std::vector<std::vector<int64_t>> normBackwardOutputShapes(Op op, const std::vector<int64_t>& rh);
void buildNormBackward(Op op, DataType dtype, ir::Fusion& fusion,
                       const std::vector<ir::TensorView*>& inputs);
CheckResult checkNormBackward(Op op, DataType dtype, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs);

/// The index_add case's pieces (bench_cases_index_add.cpp): its inputs (the ids Int64), fusion
/// and check, used by the functions above.
std::vector<std::vector<int64_t>> indexAddInputShapes(const std::vector<int64_t>& thv);
void buildIndexAdd(DataType dtype, const std::vector<int64_t>& thv, ir::Fusion& fusion);
std::vector<Tensor> makeIndexAddInputs(const std::vector<int64_t>& thv, DataType dtype,
                                       uint64_t seed);
CheckResult checkIndexAdd(DataType dtype, const std::vector<Tensor>& inputs, const Tensor& out);

/// One case in one dtype.
struct CaseResult {
  std::string name;
  std::string dtype;  ///< "fp32" | "bf16"
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  std::vector<double> repsUs;  ///< event time of each timed repetition
  Summary us;
  int64_t kernels = 0;
  std::string schedulers;  ///< the scheduler of each kernel, "+"-joined
  std::string params;      ///< each kernel's heuristic parameters (HeuristicParams::toString)
  double firstRunMs = 0;   ///< wall time of the first (compiling) run, disk cache as found
  CheckResult check;
  std::string error;  ///< what was thrown, if anything; then no times

  bool ok() const { return error.empty() && check.ok; }
};

}  // namespace loom::bench
