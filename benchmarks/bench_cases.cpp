// SPDX-License-Identifier: Apache-2.0
// The benchmark cases: fusions built with the ops layer, inputs, byte counts and output checks.
#include "benchmarks/bench_cases.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <sstream>

#include "loom/ir/ir.h"
#include "loom/ops/ops.h"

namespace loom::bench {
namespace {

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

const std::vector<Case>& allCases() {
  static const std::vector<Case> cases = {
      {"var_mean_1x2048x12288", Op::VarMean, {1, 2048, 12288}, "var_mean dim 2, [1, 2048, 12288]"},
      {"var_mean_16x2048x12288",
       Op::VarMean,
       {16, 2048, 12288},
       "var_mean dim 2, [16, 2048, 12288]"},
      {"layer_norm_16384x4096", Op::LayerNorm, {16384, 4096}, "layer_norm, [16384, 4096]"},
      {"rms_norm_16384x4096", Op::RmsNorm, {16384, 4096}, "rms_norm, [16384, 4096]"},
      {"softmax_16384x4096", Op::Softmax, {16384, 4096}, "softmax dim -1, [16384, 4096]"},
      {"gelu_tanh_bias_16384x4096",
       Op::GeluTanhBias,
       {16384, 4096},
       "gelu_tanh(x + bias), [16384, 4096]"},
      {"sum_dim0_16384x4096", Op::SumDim0, {16384, 4096}, "sum dim 0, [16384, 4096]"},
      // A GPT-3 / Llama MLP up-projection: cuBLASLt with the bias epilogue against F.linear.
      {"linear_8192x4096x16384",
       Op::Linear,
       {8192, 4096, 16384},
       "linear [8192, 4096] x [16384, 4096]^T + bias"},
      // The same with torch's F.gelu(F.linear(...), approximate='tanh') after it: fp32 is one
      // matmul segment (cuBLASLt's GELU_BIAS epilogue); bf16 keeps the gelu a Loom kernel.
      {"linear_gelu_tanh_8192x4096x16384",
       Op::LinearGeluTanh,
       {8192, 4096, 16384},
       "gelu_tanh(linear [8192, 4096] x [16384, 4096]^T + bias)"},
      // The transpose scheduler (issue 37): a square transpose and two model widths (GPT-2's
      // 768, GPT-3's 12288), alone and behind a bias + gelu.
      {"transpose_8192x8192", Op::Transpose, {8192, 8192}, "x^T, [8192, 8192]"},
      {"transpose_16384x768", Op::Transpose, {16384, 768}, "x^T, [16384, 768]"},
      {"transpose_4096x12288", Op::Transpose, {4096, 12288}, "x^T, [4096, 12288]"},
      {"gelu_bias_t_8192x8192",
       Op::GeluBiasTranspose,
       {8192, 8192},
       "gelu_tanh(x + bias)^T, [8192, 8192]"},
      {"gelu_bias_t_16384x768",
       Op::GeluBiasTranspose,
       {16384, 768},
       "gelu_tanh(x + bias)^T, [16384, 768]"},
      {"gelu_bias_t_4096x12288",
       Op::GeluBiasTranspose,
       {4096, 12288},
       "gelu_tanh(x + bias)^T, [4096, 12288]"},
      // What the transposes are measured against: a plain copy of the same bytes.
      {"copy_8192x8192", Op::Copy, {8192, 8192}, "copy, [8192, 8192]"},
      // NCHW -> NHWC at ResNet's stage shapes: 7 x 7 and 14 x 14 images tile C against H * W.
      {"to_nhwc_256x512x7x7", Op::ToChannelsLast, {256, 512, 7, 7}, "NCHW->NHWC, [256, 512, 7, 7]"},
      {"to_nhwc_256x256x14x14", Op::ToChannelsLast, {256, 256, 14, 14},
       "NCHW->NHWC, [256, 256, 14, 14]"},
      {"to_nhwc_128x64x56x56", Op::ToChannelsLast, {128, 64, 56, 56},
       "NCHW->NHWC, [128, 64, 56, 56]"},
      // The outer-persistent scheduler (issue 37): batch-norm of a ResNet-50 stage, both formats.
      {"bn_fwd_nchw_32x256x56x56", Op::BatchNormFwdNchw, {32, 256, 56, 56},
       "batch_norm fwd, NCHW [32, 256, 56, 56]"},
      {"bn_fwd_nhwc_32x256x56x56", Op::BatchNormFwdNhwc, {32, 256, 56, 56},
       "batch_norm fwd, NHWC [32, 256, 56, 56]"},
      {"bn_bwd_nchw_32x256x56x56", Op::BatchNormBwdNchw, {32, 256, 56, 56},
       "batch_norm bwd, NCHW [32, 256, 56, 56]"},
      {"bn_bwd_nhwc_32x256x56x56", Op::BatchNormBwdNhwc, {32, 256, 56, 56},
       "batch_norm bwd, NHWC [32, 256, 56, 56]"},
      // The inner-outer-persistent scheduler (issue 37): layer_norm and rms_norm backward at
      // R x H = 2^26, and GPT-2's width.
      {"layer_norm_bwd_16384x4096", Op::LayerNormBwd, {16384, 4096},
       "layer_norm bwd, [16384, 4096]"},
      {"rms_norm_bwd_16384x4096", Op::RmsNormBwd, {16384, 4096}, "rms_norm bwd, [16384, 4096]"},
      {"layer_norm_bwd_65536x768", Op::LayerNormBwd, {65536, 768}, "layer_norm bwd, [65536, 768]"},
      // Embedding backward (issue 30's atomic scatter_add): GPT-2's vocabulary, 32768 tokens.
      {"index_add_32768x1024_into_50257", Op::IndexAdd, {32768, 1024, 50257},
       "index_add dim 0, [32768, 1024] into [50257, 1024]"},
  };
  return cases;
}

const Case* findCase(std::string_view name) {
  for (const Case& c : allCases()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

DataType parseDtype(std::string_view name) {
  if (name == "fp32") return DataType::Float32;
  if (name == "bf16") return DataType::BFloat16;
  LOOM_THROW("unknown benchmark dtype '", name, "' (expected fp32 or bf16)");
}

std::string dtypeLabel(DataType dtype) {
  LOOM_CHECK(dtype == DataType::Float32 || dtype == DataType::BFloat16,
             "benchmarks run in fp32 or bf16, not ", dataTypeName(dtype));
  return dtype == DataType::Float32 ? "fp32" : "bf16";
}

std::vector<std::vector<int64_t>> inputShapes(Op op, const std::vector<int64_t>& shape) {
  std::vector<int64_t> cols = {shape.back()};
  if (op == Op::Linear || op == Op::LinearGeluTanh) {
    return {{shape[0], shape[1]}, {shape[2], shape[1]}, {shape[2]}};
  }
  if (op == Op::IndexAdd) return indexAddInputShapes(shape);
  if (isBatchNorm(op)) return batchNormInputShapes(op, shape);
  if (isNormBackward(op)) return normBackwardInputShapes(op, shape);
  switch (op) {
    case Op::LayerNorm: return {shape, cols, cols};
    case Op::RmsNorm:
    case Op::GeluTanhBias:
    case Op::GeluBiasTranspose: return {shape, cols};
    default: return {shape};
  }
}

std::vector<std::vector<int64_t>> outputShapes(Op op, const std::vector<int64_t>& shape) {
  if (isBatchNorm(op)) return batchNormOutputShapes(op, shape);
  if (isNormBackward(op)) return normBackwardOutputShapes(op, shape);
  if (op == Op::VarMean) {
    std::vector<int64_t> kept(shape.begin(), shape.end() - 1);
    return {kept, kept};
  }
  if (op == Op::SumDim0) return {std::vector<int64_t>(shape.begin() + 1, shape.end())};
  if (op == Op::Linear || op == Op::LinearGeluTanh) return {{shape[0], shape[2]}};
  if (op == Op::IndexAdd) return {{shape[2], shape[1]}};
  if (op == Op::Transpose || op == Op::GeluBiasTranspose) return {{shape[1], shape[0]}};
  if (op == Op::ToChannelsLast) return {{shape[0], shape[2], shape[3], shape[1]}};
  return {shape};
}

int64_t ioBytes(Op op, const std::vector<int64_t>& shape, DataType dtype) {
  int64_t elements = 0;
  for (const auto& s : inputShapes(op, shape)) elements += numel(s);
  for (const auto& s : outputShapes(op, shape)) elements += numel(s);
  // index_add's ids are Int64 whatever the case's dtype.
  const int64_t ids = op == Op::IndexAdd ? shape[0] : 0;
  return (elements - ids) * int64_t(dataTypeSize(dtype)) + ids * 8;
}

std::unique_ptr<ir::Fusion> buildFusion(Op op, const std::vector<int64_t>& shape, DataType dtype) {
  auto fusion = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(fusion.get());
  if (op == Op::IndexAdd) {
    buildIndexAdd(dtype, shape, *fusion);
    return fusion;
  }
  std::vector<ir::TensorView*> in;
  for (const auto& s : inputShapes(op, shape)) {
    in.push_back(ops::TensorBuilder().shape(s).dtype(dtype).build());
    fusion->addInput(in.back());
  }
  int64_t last = int64_t(shape.size()) - 1;
  if (isBatchNorm(op)) {
    buildBatchNorm(op, dtype, *fusion, in);
    return fusion;
  }
  if (isNormBackward(op)) {
    buildNormBackward(op, dtype, *fusion, in);
    return fusion;
  }
  switch (op) {
    case Op::VarMean: {
      auto r = ops::varMean(in[0], {last});
      fusion->addOutput(r.var);
      fusion->addOutput(r.mean);
      break;
    }
    case Op::LayerNorm:
      fusion->addOutput(ops::layerNorm(in[0], 1, in[1], in[2], kNormEps).y);
      break;
    case Op::RmsNorm: fusion->addOutput(ops::rmsNorm(in[0], 1, in[1], kNormEps)); break;
    case Op::Softmax: fusion->addOutput(ops::softmax(in[0], -1)); break;
    case Op::GeluTanhBias:
      fusion->addOutput(ops::biasGelu(in[0], in[1], ops::GeluApproximation::Tanh));
      break;
    case Op::SumDim0:
      // ops::sum accumulates bf16 in fp32 and returns fp32; torch.sum returns the input's dtype.
      fusion->addOutput(ops::cast(ops::sum(in[0], {0}), dtype));
      break;
    case Op::Linear: fusion->addOutput(ops::linear(in[0], in[1], in[2])); break;
    case Op::LinearGeluTanh:
      // As torch on bf16: the product read in f32, the gelu, the result in the input's dtype.
      fusion->addOutput(ops::cast(ops::gelu(ops::cast(ops::linear(in[0], in[1], in[2]),
                                                      DataType::Float32),
                                            ops::GeluApproximation::Tanh),
                                  dtype));
      break;
    // The transposes and the format change are copies into the new order (a `set` of the
    // permute), as torch's .contiguous(): a bare permute output is returned as a view of x
    // (docs/python.md, "Outputs that are views of inputs"), which moves no bytes.
    case Op::Transpose: fusion->addOutput(ops::set(ops::transpose(in[0], 0, 1))); break;
    case Op::Copy: fusion->addOutput(ops::set(in[0])); break;
    case Op::ToChannelsLast:
      fusion->addOutput(ops::set(ops::permute(in[0], {0, 2, 3, 1})));
      break;
    case Op::GeluBiasTranspose:
      fusion->addOutput(
          ops::transpose(ops::biasGelu(in[0], in[1], ops::GeluApproximation::Tanh), 0, 1));
      break;
    default: LOOM_UNREACHABLE("batch-norm and norm-backward cases are built above");
  }
  return fusion;
}

std::vector<Tensor> makeInputs(Op op, const std::vector<int64_t>& shape, DataType dtype,
                               uint64_t seed) {
  // A prime: no row length (4096, 12288) divides it, so rows do not repeat.
  constexpr int64_t kBlock = 4194301;
  if (op == Op::IndexAdd) return makeIndexAddInputs(shape, dtype, seed);
  std::vector<Tensor> out;
  for (const auto& s : inputShapes(op, shape)) {
    Tensor t = Tensor::empty(s, dtype);
    uint64_t tensorSeed = seed + out.size();
    if (t.numel() <= kBlock) {
      fillRandom(t, tensorSeed);
    } else {
      Tensor block = Tensor::empty({kBlock}, dtype);
      fillRandom(block, tensorSeed);
      auto* dst = static_cast<char*>(t.data());
      size_t total = size_t(t.numel()) * t.itemSize();
      size_t blockBytes = size_t(kBlock) * block.itemSize();
      for (size_t done = 0; done < total; done += blockBytes) {
        std::memcpy(dst + done, block.data(), std::min(blockBytes, total - done));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

// Absolute and relative tolerance of one comparison.
struct Tol {
  double atol;
  double rtol;
};

// Keeps the first failure and counts the values compared.
class Checker {
 public:
  explicit Checker(DataType dtype) : bf16_(dtype == DataType::BFloat16) {}

  bool failed() const { return !failure_.empty(); }

  // |got - want| <= atol + rtol * |want|, with the tolerance for the data's dtype: bf16 outputs
  // are rounded to 8 significant bits, so their relative error is up to 2^-9.
  void near(const std::string& what, double got, double want, Tol fp32, Tol bf16) {
    if (failed()) return;
    Tol t = bf16_ ? bf16 : fp32;
    ++compared_;
    if (std::abs(got - want) <= t.atol + t.rtol * std::abs(want)) return;
    std::ostringstream os;
    os.precision(8);
    os << what << ": got " << got << ", expected " << want << " (atol " << t.atol << ", rtol "
       << t.rtol << ")";
    failure_ = os.str();
  }

  CheckResult result(const std::string& summary) const {
    if (failed()) return {false, failure_};
    return {true, summary + " (" + std::to_string(compared_) + " values compared)"};
  }

 private:
  bool bf16_;
  std::string failure_;
  int64_t compared_ = 0;
};

// Tolerances: fp32 results see only fp32 rounding in the kernel; values near 1 in magnitude.
constexpr Tol kUnit32{1e-4, 1e-4};
constexpr Tol kUnit16{1e-2, 1e-2};

// Every element of a contiguous fp32 or bf16 host tensor is finite; else the first bad index.
int64_t firstNonFinite(const Tensor& t) {
  int64_t n = t.numel();
  if (t.dtype() == DataType::Float32) {
    const auto* p = t.dataAs<const uint32_t>();
    for (int64_t i = 0; i < n; ++i) {
      if ((p[i] & 0x7f800000u) == 0x7f800000u) return i;
    }
  } else if (t.dtype() == DataType::BFloat16) {
    const auto* p = t.dataAs<const uint16_t>();
    for (int64_t i = 0; i < n; ++i) {
      if ((p[i] & 0x7f80u) == 0x7f80u) return i;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(t.getDoubleLinear(i))) return i;
    }
  }
  return -1;
}

std::vector<double> row(const Tensor& t, int64_t r, int64_t cols) {
  std::vector<double> out(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) out[size_t(j)] = t.getDoubleLinear(r * cols + j);
  return out;
}

double meanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double gelu(double v) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}

}  // namespace

namespace {

// Linear (and gelu_tanh of it): a few outputs of the first and last rows recomputed in double.
CheckResult checkLinear(bool gelu_tanh, DataType dtype, const std::vector<Tensor>& inputs,
                        const Tensor& out) {
  const Tensor& x = inputs.at(0);
  const Tensor& w = inputs.at(1);
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  Checker ck(dtype);
  for (int64_t r : {int64_t(0), m - 1}) {
    for (int64_t j : {int64_t(0), n / 2, n - 1}) {
      double want = inputs.at(2).getDoubleLinear(j);
      for (int64_t p = 0; p < k; ++p) {
        want += x.getDoubleLinear(r * k + p) * w.getDoubleLinear(j * k + p);
      }
      if (gelu_tanh) {
        const double c = std::sqrt(2.0 / std::numbers::pi);
        want = 0.5 * want * (1.0 + std::tanh(c * (want + 0.044715 * want * want * want)));
      }
      // A sum of k products of values in [-1, 1) is about sqrt(k) / 3 in magnitude.
      ck.near("linear row " + std::to_string(r) + " col " + std::to_string(j),
              out.getDoubleLinear(r * n + j), want, {1e-3, 1e-4}, {5e-2, 1e-2});
    }
  }
  return ck.result("outputs of rows 0 and M-1 match a double-precision dot product");
}

// Transposes: rows 0, R/2 and R-1 of x (through gelu(x + bias)) are columns of y.
CheckResult checkTranspose(bool gelu_bias, DataType dtype, const std::vector<Tensor>& inputs,
                           const Tensor& out) {
  const Tensor& x = inputs.at(0);
  const int64_t rows = x.size(0), cols = x.size(1);
  Checker ck(dtype);
  for (int64_t r : {int64_t(0), rows / 2, rows - 1}) {
    for (int64_t j = 0; j < cols; ++j) {
      double want = x.getDoubleLinear(r * cols + j);
      if (gelu_bias) want = gelu(want + inputs.at(1).getDoubleLinear(j));
      ck.near("y[" + std::to_string(j) + ", " + std::to_string(r) + "]",
              out.getDoubleLinear(j * rows + r), want, kUnit32, kUnit16);
    }
  }
  return ck.result("columns 0, R/2, R-1 of the output match rows of the input in double");
}

// NCHW -> NHWC: planes (n, c) for n in {0, N-1} and c in {0, C/2, C-1}, every pixel.
CheckResult checkChannelsLast(DataType dtype, const Tensor& x, const Tensor& out) {
  const int64_t n_ = x.size(0), c_ = x.size(1), h_ = x.size(2), w_ = x.size(3);
  Checker ck(dtype);
  for (int64_t n : {int64_t(0), n_ - 1}) {
    for (int64_t c : {int64_t(0), c_ / 2, c_ - 1}) {
      for (int64_t p = 0; p < h_ * w_; ++p) {
        const double want = x.getDoubleLinear((n * c_ + c) * h_ * w_ + p);
        ck.near("y[" + std::to_string(n) + ", pixel " + std::to_string(p) + ", " +
                    std::to_string(c) + "]",
                out.getDoubleLinear((n * h_ * w_ + p) * c_ + c), want, {0, 0}, {0, 0});
      }
    }
  }
  return ck.result("channel planes 0, C/2, C-1 of images 0 and N-1 are exact in the NHWC output");
}

}  // namespace

CheckResult checkOutputs(Op op, DataType dtype, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& outputs) {
  std::vector<int64_t> shape = inputs.at(0).sizes();
  if (op == Op::Linear || op == Op::LinearGeluTanh) shape.push_back(inputs.at(1).size(0));
  if (op == Op::IndexAdd) shape = {inputs.at(1).size(0), shape[1], shape[0]};  // [T, H, V]
  if (isBatchNorm(op) && (op == Op::BatchNormFwdNhwc || op == Op::BatchNormBwdNhwc)) {
    shape = {shape[0], shape[3], shape[1], shape[2]};  // the case shape is [N, C, H, W]
  }
  auto wantShapes = outputShapes(op, shape);
  if (outputs.size() != wantShapes.size()) {
    return {false, "expected " + std::to_string(wantShapes.size()) + " outputs, got " +
                       std::to_string(outputs.size())};
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    if (!o.defined() || !o.device().isCpu()) return {false, "output " + std::to_string(i) +
                                                                " is not a host tensor"};
    if (o.sizes() != wantShapes[i] || o.dtype() != dtype) {
      return {false, "output " + std::to_string(i) + " is " + describe(o) + ", expected " +
                         shapeText(wantShapes[i]) + " " + std::string(dataTypeName(dtype))};
    }
    // Every case writes its outputs densely, as its torch side (.contiguous()) does: a strided
    // output is a view that moved no bytes, so its time would not be the case's.
    if (!o.isContiguous()) {
      return {false, "output " + std::to_string(i) + " is " + describe(o) +
                         ", not contiguous (a view, not the copy the case times)"};
    }
    outs.push_back(o);
    if (int64_t bad = firstNonFinite(outs.back()); bad >= 0) {
      return {false, "output " + std::to_string(i) + " element " + std::to_string(bad) + " is " +
                         std::to_string(outs.back().getDoubleLinear(bad)) +
                         " (not finite: unwritten or wrong)"};
    }
  }
  if (op == Op::Linear || op == Op::LinearGeluTanh) {
    return checkLinear(op == Op::LinearGeluTanh, dtype, inputs, outs[0]);
  }
  if (op == Op::Transpose || op == Op::GeluBiasTranspose) {
    return checkTranspose(op == Op::GeluBiasTranspose, dtype, inputs, outs[0]);
  }
  if (op == Op::ToChannelsLast) return checkChannelsLast(dtype, inputs.at(0), outs[0]);
  if (op == Op::IndexAdd) return checkIndexAdd(dtype, inputs, outs[0]);
  if (isBatchNorm(op)) return checkBatchNorm(op, dtype, inputs, outs);
  if (isNormBackward(op)) return checkNormBackward(op, dtype, inputs, outs);
  const Tensor& x = inputs[0];
  int64_t cols = shape.back();
  int64_t rows = x.numel() / std::max<int64_t>(cols, 1);
  std::vector<int64_t> checkRows = {0, rows / 2, rows - 1};
  checkRows.erase(std::unique(checkRows.begin(), checkRows.end()), checkRows.end());
  Checker ck(dtype);
  auto at = [](int64_t r, int64_t j) {
    return "row " + std::to_string(r) + " col " + std::to_string(j);
  };

  if (op == Op::SumDim0) {
    for (int64_t j : {int64_t(0), cols / 2, cols - 1}) {
      double s = 0;
      for (int64_t r = 0; r < rows; ++r) s += x.getDoubleLinear(r * cols + j);
      // A column sum of 16384 values in [-1, 1) is about 100 in magnitude.
      ck.near("sum col " + std::to_string(j), outs[0].getDoubleLinear(j), s, {2e-3, 1e-4},
              kUnit16);
    }
    return ck.result("sum of columns 0, C/2, C-1 in double");
  }

  for (int64_t r : checkRows) {
    std::vector<double> xr = row(x, r, cols);
    double mean = meanOf(xr);
    double m2 = 0, sq = 0;
    for (double v : xr) {
      m2 += (v - mean) * (v - mean);
      sq += v * v;
    }
    switch (op) {
      case Op::VarMean:
        ck.near("var row " + std::to_string(r), outs[0].getDoubleLinear(r),
                m2 / double(cols - 1), {1e-5, 1e-4}, {1e-3, 1e-2});
        ck.near("mean row " + std::to_string(r), outs[1].getDoubleLinear(r), mean, {1e-5, 1e-4},
                {1e-3, 1e-2});
        break;
      case Op::LayerNorm: {
        double rstd = 1.0 / std::sqrt(m2 / double(cols) + kNormEps);
        for (int64_t j = 0; j < cols; ++j) {
          double want = (xr[size_t(j)] - mean) * rstd * inputs[1].getDoubleLinear(j) +
                        inputs[2].getDoubleLinear(j);
          ck.near("layer_norm " + at(r, j), outs[0].getDoubleLinear(r * cols + j), want, kUnit32,
                  kUnit16);
        }
        break;
      }
      case Op::RmsNorm: {
        double rrms = 1.0 / std::sqrt(sq / double(cols) + kNormEps);
        for (int64_t j = 0; j < cols; ++j) {
          double want = xr[size_t(j)] * rrms * inputs[1].getDoubleLinear(j);
          ck.near("rms_norm " + at(r, j), outs[0].getDoubleLinear(r * cols + j), want, kUnit32,
                  kUnit16);
        }
        break;
      }
      case Op::Softmax: {
        double mx = *std::max_element(xr.begin(), xr.end());
        double denom = 0;
        for (double v : xr) denom += std::exp(v - mx);
        double total = 0;
        for (int64_t j = 0; j < cols; ++j) {
          double got = outs[0].getDoubleLinear(r * cols + j);
          total += got;
          // Softmax values are about 1/cols: an absolute tolerance would accept anything.
          ck.near("softmax " + at(r, j), got, std::exp(xr[size_t(j)] - mx) / denom, {1e-9, 1e-4},
                  {1e-7, 1e-2});
        }
        ck.near("softmax row " + std::to_string(r) + " sum", total, 1.0, {1e-4, 0}, {1e-2, 0});
        break;
      }
      case Op::GeluTanhBias:
        for (int64_t j = 0; j < cols; ++j) {
          double want = gelu(xr[size_t(j)] + inputs[1].getDoubleLinear(j));
          ck.near("gelu " + at(r, j), outs[0].getDoubleLinear(r * cols + j), want, kUnit32, kUnit16);
        }
        break;
      case Op::Copy:
        for (int64_t j = 0; j < cols; ++j) {
          ck.near("copy " + at(r, j), outs[0].getDoubleLinear(r * cols + j), xr[size_t(j)],
                  {0, 0}, {0, 0});
        }
        break;
      default: break;  // checked above (sums over dim 0, linear, transposes, batch-norm)
    }
  }
  return ck.result("all outputs finite; rows 0, N/2, N-1 match a double-precision computation");
}

}  // namespace loom::bench
