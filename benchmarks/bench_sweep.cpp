// SPDX-License-Identifier: Apache-2.0
// The shape sweep's shapes (bench_sweep.h).
#include "benchmarks/bench_sweep.h"

#include <algorithm>
#include <cmath>

#include "loom/support/error.h"

namespace loom::bench {

std::string_view regimeName(Regime r) {
  return r == Regime::Bandwidth ? "bandwidth" : "latency";
}

std::optional<Regime> parseRegime(std::string_view name) {
  if (name == "bandwidth") return Regime::Bandwidth;
  if (name == "latency") return Regime::Latency;
  return std::nullopt;
}

const std::vector<Op>& sweepFamilies() {
  static const std::vector<Op> families = {Op::LayerNorm, Op::RmsNorm, Op::Softmax, Op::VarMean,
                                           Op::SumDim0};
  return families;
}

const std::vector<Op>& knownSweepFamilies() {
  static const std::vector<Op> families = [] {
    std::vector<Op> all = sweepFamilies();
    all.push_back(Op::LayerNormBwd);
    all.push_back(Op::RmsNormBwd);
    return all;
  }();
  return families;
}

std::string knownFamilyNames() {
  std::string names;
  for (Op op : knownSweepFamilies()) {
    if (!names.empty()) names += ", ";
    names += familyName(op);
  }
  return names;
}

std::string_view familyName(Op op) {
  switch (op) {
    case Op::LayerNorm: return "layer_norm";
    case Op::RmsNorm: return "rms_norm";
    case Op::Softmax: return "softmax";
    case Op::VarMean: return "var_mean";
    case Op::SumDim0: return "sum_dim0";
    case Op::GeluTanhBias: return "gelu_tanh_bias";
    case Op::Linear: return "linear";
    case Op::LinearGeluTanh: return "linear_gelu_tanh";
    case Op::Transpose: return "transpose";
    case Op::GeluBiasTranspose: return "gelu_bias_t";
    case Op::Copy: return "copy";
    case Op::ToChannelsLast: return "to_nhwc";
    case Op::BatchNormFwdNchw: return "bn_fwd_nchw";
    case Op::BatchNormFwdNhwc: return "bn_fwd_nhwc";
    case Op::BatchNormBwdNchw: return "bn_bwd_nchw";
    case Op::BatchNormBwdNhwc: return "bn_bwd_nhwc";
    case Op::LayerNormBwd: return "layer_norm_bwd";
    case Op::RmsNormBwd: return "rms_norm_bwd";
    case Op::IndexAdd: return "index_add";
  }
  LOOM_ASSERT(false, "unknown benchmark op");
  return "";
}

std::optional<Op> parseFamily(std::string_view name) {
  for (Op op : knownSweepFamilies()) {
    if (familyName(op) == name) return op;
  }
  return std::nullopt;
}

std::vector<int64_t> defaultSweepWidths(Op family) {
  const bool backward = isNormBackward(family);
  const int64_t widest = backward ? 65536 : 131072;
  std::vector<int64_t> widths;
  for (int64_t w = 256; w <= widest; w *= 2) widths.push_back(w);
  for (int64_t w : {768, 1536, 3072, 5120, 12288, 50257, 128256}) {
    if (w <= widest && (!backward || w <= 12288)) widths.push_back(w);
  }
  std::sort(widths.begin(), widths.end());
  return widths;
}

int64_t sweepRows(int64_t width, Regime regime) {
  LOOM_CHECK(width > 0, "a sweep width must be positive, got ", width);
  int64_t elements = regime == Regime::Bandwidth ? kBandwidthElements : kLatencyElements;
  return std::max<int64_t>(1, std::llround(double(elements) / double(width)));
}

std::vector<SweepCase> sweepCases(const SweepSpec& spec) {
  const std::vector<Op>& families = spec.families.empty() ? sweepFamilies() : spec.families;
  std::vector<Regime> regimes = spec.regimes;
  if (regimes.empty()) regimes = {Regime::Bandwidth, Regime::Latency};
  std::vector<SweepCase> out;
  for (Regime regime : regimes) {
    for (Op op : families) {
      for (int64_t width : spec.widths.empty() ? defaultSweepWidths(op) : spec.widths) {
        int64_t rows = spec.rows.value_or(sweepRows(width, regime));
        std::string family(familyName(op));
        std::string name = family + "_" + std::to_string(rows) + "x" + std::to_string(width);
        if (regime == Regime::Latency) name += "@latency";
        std::string label = family + ", [" + std::to_string(rows) + ", " + std::to_string(width) +
                            "], " + std::string(regimeName(regime));
        out.push_back({Case{name, op, {rows, width}, label}, regime, rows, width});
      }
    }
  }
  return out;
}

}  // namespace loom::bench
