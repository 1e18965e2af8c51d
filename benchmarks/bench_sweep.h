// SPDX-License-Identifier: Apache-2.0
// The shape sweep of docs/performance.md: five row-wise families (layer_norm, rms_norm, softmax,
// var_mean over the last dim, sum over dim 0) in fp32 and bf16, over row widths from 256 to
// 131072 and the widths real models use, with R x H fixed per regime; and, on request, the
// layer_norm / rms_norm backward families of issue 37 (widths 256 to 65536 and the model widths
// up to 12288). No GPU needed here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/bench_cases.h"

namespace loom::bench {

/// Bandwidth regime: R x H = 2^26 elements (256 MiB of fp32); latency regime: R x H = 2^20.
enum class Regime { Bandwidth, Latency };
inline constexpr int64_t kBandwidthElements = int64_t(1) << 26;
inline constexpr int64_t kLatencyElements = int64_t(1) << 20;

/// "bandwidth" | "latency", and back (nullopt for anything else).
std::string_view regimeName(Regime r);
std::optional<Regime> parseRegime(std::string_view name);

/// The default families in table order ("layer_norm", "rms_norm", "softmax", "var_mean",
/// "sum_dim0"), and every family the sweep knows: those and the backward families
/// ("layer_norm_bwd", "rms_norm_bwd"), which run only when named. parseFamily returns nullopt
/// for a name that is not a sweep family.
const std::vector<Op>& sweepFamilies();
const std::vector<Op>& knownSweepFamilies();
std::string_view familyName(Op op);
std::optional<Op> parseFamily(std::string_view name);
/// The known families' names, comma-separated (for messages).
std::string knownFamilyNames();

/// A family's default widths, ascending: powers of two from 256 to 131072 and the model widths
/// (768, 1536, 3072, 5120, 12288, 50257, 128256; 1024, 2048, 4096 and 8192 are powers of two
/// already); for the backward families, powers of two from 256 to 65536 and the model widths
/// up to 12288 (issue 37's range: the per-column partial sums of wider rows do not fit on chip).
std::vector<int64_t> defaultSweepWidths(Op family);

/// Rows of a `width`-wide shape in `regime`: the regime's elements / width, rounded to nearest,
/// at least 1.
int64_t sweepRows(int64_t width, Regime regime);

/// What to sweep; an empty list means every value.
struct SweepSpec {
  std::vector<Op> families;
  /// Every family's widths when given; else each family's defaultSweepWidths.
  std::vector<int64_t> widths;
  std::vector<Regime> regimes;
  /// Rows of every shape instead of the regime's (the host-backend smoke run: every shape's
  /// fusion and check, at a size the CPU runs in a moment).
  std::optional<int64_t> rows;
};

/// One shape of the sweep: a Case of shape [rows, width] and its regime. The case name is
/// "<family>_<rows>x<width>" (with "@latency" appended in the latency regime, so names are
/// unique across regimes).
struct SweepCase {
  Case c;
  Regime regime;
  int64_t rows;
  int64_t width;
};

/// The sweep in table order: regime, family, width.
std::vector<SweepCase> sweepCases(const SweepSpec& spec);

}  // namespace loom::bench
