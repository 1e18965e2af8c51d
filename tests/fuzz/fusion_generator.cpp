// SPDX-License-Identifier: Apache-2.0
// The fuzzer's generator (see fusion_generator.h): the table of op families, the whole case
// (inputs, families applied, outputs, names), the arguments of each run and the public functions.
// The Generator's parts are in generator_internal.h and the files it lists.
#include "fuzz/fusion_generator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "fuzz/fuzz_rng.h"
#include "fuzz/generator_internal.h"
#include "loom/ir/ir.h"
#include "loom/tensor/tensor.h"

namespace loom::fuzz {
namespace detail {
namespace {

using FamilyFn = bool (Generator::*)();

struct Family {
  std::string_view name;
  double weight;
  FamilyFn fn;  // nullptr: a TODO entry, not generated yet
  std::string_view covers;
};

// ------------------------------------------------------------------------------------------------
// The op families. To add an op: write one bool Generator::famX() in the families_*.cpp of its
// kind, declared in generator_internal.h (return false when nothing in the pool fits), and add a
// row here. Rows with a null function are planned families (TODO) that need ops Loom does not
// have yet; they are listed so that coverage reports name them.
// ------------------------------------------------------------------------------------------------
const Family kFamilies[] = {
    {"unary_float", 10, &Generator::famUnaryFloat,
     "exp exp2 log log2 sqrt rsqrt reciprocal sin cos tanh sigmoid silu erf gelu(+tanh)"},
    {"unary_keep", 6, &Generator::famUnaryKeep, "neg abs relu floor ceil round sign"},
    {"predicate", 3, &Generator::famPredicate, "isNan isInf logicalNot"},
    // Weight 0 by default so that every recorded seed keeps its fusion; the loom_fuzz_emu_ops
    // batch weights it up (tests/fuzz/CMakeLists.txt).
    {"unary_math", 0, &Generator::famUnaryMath, "atan erfc asinh trunc signbit isfinite"},
    {"binary", 16, &Generator::famBinary, "add sub mul div pow fmod maximum minimum"},
    {"special_scalar", 4, &Generator::famSpecialScalar,
     "binary ops with inf, -inf, NaN, -0, subnormal or large integer constants"},
    {"compare", 5, &Generator::famCompare, "eq ne lt le gt ge"},
    {"logical", 2, &Generator::famLogical, "logicalAnd logicalOr"},
    {"where", 4, &Generator::famWhere, "where"},
    {"clamp", 3, &Generator::famClamp, "clamp"},
    {"lerp", 2, &Generator::famLerp, "lerp"},
    {"cast", 6, &Generator::famCast, "cast between all dtypes"},
    {"broadcast", 4, &Generator::famBroadcast, "broadcast unsqueeze"},
    {"broadcast_in_dim", 2, &Generator::famBroadcastInDim, "broadcastInDim"},
    {"expand", 3, &Generator::famExpand, "expand"},
    {"squeeze", 2, &Generator::famSqueeze, "squeeze"},
    {"permute", 4, &Generator::famPermute, "permute transpose"},
    // Weight 0 by default (recorded seeds keep their fusions); loom_fuzz_emu_transpose weights it
    // up.
    {"transpose_tile", 0, &Generator::famTransposeTile,
     "a transpose of two dims of 32 or more (the transpose scheduler's tiles), of a new input or "
     "a pool tensor, with a pointwise op before it"},
    // Weight 0 by default (recorded seeds keep their fusions); loom_fuzz_emu_transpose weights it
    // up.
    {"channels_last", 0, &Generator::famChannelsLast,
     "NC[D]HW <-> N[D]HWC of a new input with images narrower than a tile (the transpose "
     "scheduler's merged dims), optionally with a per-channel bias"},
    {"set", 1, &Generator::famSet, "set"},
    {"reshape", 3, &Generator::famReshape, "static reshape (constant sizes)"},
    {"reduce", 10, &Generator::famReduce, "sum prod max min mean, one or several axes, keepdim"},
    {"welford", 3, &Generator::famWelford, "welford varMean variance"},
    {"softmax", 3, &Generator::famSoftmax, "softmax logSoftmax"},
    {"layer_norm", 2, &Generator::famLayerNorm, "layerNorm (weight, bias optional)"},
    {"rms_norm", 2, &Generator::famRmsNorm, "rmsNorm (weight optional)"},
    {"bias_gelu", 1, &Generator::famBiasGelu, "biasGelu"},
    {"norm_pattern", 5, &Generator::famNormPattern,
     "reduction then pointwise with its input (x - max(x), x / (|sum(x)| + 1), ...)"},
    {"outer_reduction", 3, &Generator::famOuterReduction,
     "reduction over dim 0, optionally combined with its input"},
    // Weight 0 by default (added after seeds were recorded); loom_fuzz_emu_norm_backward weights it.
    {"norm_backward", 0, &Generator::famNormBackward,
     "layer_norm / rms_norm backward (weight, bias optional): per-row and per-column reductions "
     "of the same data"},
    // Weight 0 by default (recorded seeds keep their fusions); loom_fuzz_emu_outer_persistent
    // weights it up.
    {"outer_persistent", 0, &Generator::famOuterPersistent,
     "a statistic over the leading dims broadcast back against its input (x - mean(x, outer "
     "dims)), optionally normalized by a second statistic of the centered data (batch-norm)"},
    {"broadcast_combine", 4, &Generator::famBroadcastCombine,
     "a lower-rank or broadcast tensor against a larger one"},
    {"fan_out", 3, &Generator::famFanOut, "one intermediate feeding two consumers"},
    // The ops with Resize IDs, factories and symbolic sizes: together in about a quarter of the
    // cases.
    {"slice", 0.8, &Generator::famSlice,
     "slice, constant or scalar-input bounds (negative, clamped, empty), one or several dims"},
    {"pad", 0.6, &Generator::famPad,
     "pad, torch-order widths (negative crops, scalar inputs, fewer pairs than dims), any value"},
    {"cat", 0.6, &Generator::famCat,
     "cat of 2-4 tensors along any dim: pool tensors, slices, new inputs of symbolic extent and "
     "other dtypes"},
    {"rotary", 0.25, &Generator::famRotary,
     "cat([-x[..., h:], x[..., :h]], -1), then x * c + rot * s"},
    {"full", 0.45, &Generator::famFull,
     "full zeros ones, constant or scalar sizes (a tensor's shape or new), alone or as operands"},
    {"iota", 0.45, &Generator::famIota,
     "iota arange (int and float dtypes, fractional steps, scalar lengths), broadcast and "
     "combined"},
    {"reshape_symbolic", 0.5, &Generator::famReshapeSymbolic,
     "dynamic reshape: symbolic extents, scalar sizes, -1, merges, splits, sizes 1 at run time"},
    {"expand_symbolic", 0.4, &Generator::famExpandSymbolic,
     "expand to scalar sizes (scalar inputs, extents) or -1"},
};

}  // namespace

// ---- The whole case ---------------------------------------------------------------------------

FuzzCase Generator::build() {
  ir::FusionGuard guard(c_.fusion.get());
  makeInputs();
  std::vector<double> weights;
  for (const Family& f : kFamilies) {
    auto it = opts_.familyWeights.find(std::string(f.name));
    double w = it != opts_.familyWeights.end() ? it->second : f.weight;
    weights.push_back(f.fn != nullptr ? w : 0.0);
  }
  if (std::all_of(weights.begin(), weights.end(), [](double w) { return w <= 0; })) {
    throw GeneratorError("every op family has weight 0");
  }
  const int64_t steps = rng_.chance(0.6)
                            ? rng_.range(opts_.minSteps, std::min<int64_t>(10, opts_.maxSteps))
                            : rng_.range(opts_.minSteps, opts_.maxSteps);
  for (int64_t s = 0; s < steps; ++s) {
    for (int attempt = 0; attempt < 12; ++attempt) {
      const Family& f = kFamilies[rng_.weighted(weights)];
      family_ = std::string(f.name);
      if ((this->*f.fn)()) break;
    }
  }
  // Outputs: every computed tensor nothing uses (a few at most), some intermediates that have
  // consumers (fan-out), sometimes an input (an output that is an input).
  std::vector<int> outs;
  std::vector<int> leaves;
  for (size_t i = 0; i < ts_.size(); ++i) {
    if (ts_[i].input < 0 && ts_[i].uses == 0) leaves.push_back(int(i));
  }
  if (leaves.size() > 6) leaves.erase(leaves.begin(), leaves.end() - 6);
  for (size_t i = 0; i < ts_.size(); ++i) {
    const GenTensor& t = ts_[i];
    bool leaf = std::find(leaves.begin(), leaves.end(), int(i)) != leaves.end();
    if (leaf) {
      outs.push_back(int(i));
    } else if (t.input < 0 && t.uses > 0 && rng_.chance(0.12)) {
      outs.push_back(int(i));
      c_.features.insert("fan-out");
    } else if (t.input >= 0 && rng_.chance(0.06)) {
      outs.push_back(int(i));
      c_.features.insert("output-is-input");
    }
  }
  if (outs.empty()) {
    outs.push_back(int(ts_.size()) - 1);
    if (ts_.back().input >= 0) c_.features.insert("output-is-input");
  }
  for (const GenTensor& t : ts_) {
    if (t.uses >= 2 && t.input < 0) c_.features.insert("fan-out");
  }
  if (outs.size() >= 2) c_.features.insert("multi-output");
  for (int o : outs) {
    const GenTensor& t = ts_[size_t(o)];
    c_.fusion->addOutput(t.tv);
    OutputSpec spec;
    spec.reductionClasses = t.red;
    spec.tolScale = t.tol;
    spec.isInput = t.input >= 0;
    spec.lowPrecision = !t.num.exact && t.num.lowp;
    spec.coarsestInexact = coarsestInexactUpstream(o);
    c_.outputs.push_back(spec);
  }
  std::unordered_map<const TensorView*, bool> exact;  // before dead code goes with its tensors
  for (const GenTensor& t : ts_) exact[t.tv] = t.num.exact;
  c_.fusion->removeDeadCode();
  // The steps name tensors as the printer does (T<i> in allTvs() order), so that they can be
  // read next to the printed fusion; tensors that ended up unused are marked.
  std::map<std::string, std::string> canonical;
  const std::vector<TensorView*> tvs = c_.fusion->allTvs();
  for (size_t i = 0; i < tvs.size(); ++i) canonical[tvs[i]->toString()] = "T" + std::to_string(i);
  {
    // Scalar inputs: the names the printer's "inputs:" line gives them.
    std::istringstream text(c_.fusion->toString());
    std::string line;
    while (std::getline(text, line)) {
      if (line.rfind("inputs:", 0) != 0) continue;
      std::istringstream names(line.substr(7));
      std::string n;
      for (ir::Val* in : c_.fusion->inputs()) {
        if (!(names >> n)) break;
        if (!n.empty() && n.back() == ',') n.pop_back();
        canonical[in->toString()] = n;
      }
      break;
    }
  }
  static const std::regex tensor_name("\\b[Ts][0-9]+\\b");
  for (std::string& step : c_.steps) {
    std::string out;
    auto begin = std::sregex_iterator(step.begin(), step.end(), tensor_name);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      out += step.substr(last, size_t(it->position()) - last);
      auto found = canonical.find(it->str());
      out += found != canonical.end() ? found->second : "(unused " + it->str() + ")";
      last = size_t(it->position() + it->length());
    }
    step = out + step.substr(last);
  }
  for (size_t i = 0; i < c_.outputs.size(); ++i) {
    c_.outputs[i].name = canonical[c_.fusion->outputs()[i]->toString()];
  }
  for (size_t i = 0; i < tvs.size(); ++i) {
    if (auto it = exact.find(tvs[i]); it != exact.end() && it->second) {
      c_.exactTensors.insert("T" + std::to_string(i));
    }
  }
  // Flatten the class forest: classRoot[i] is i's root from now on.
  for (size_t i = 0; i < c_.classRoot.size(); ++i) c_.classRoot[i] = root(int(i));
  c_.resizedRun = rng_.chance(0.3);
  return std::move(c_);
}

}  // namespace detail

namespace {

using detail::Family;
using detail::Generator;
using detail::kFamilies;
using detail::kInf;
using detail::kNaN;
using detail::shapeText;

// ---- Arguments ------------------------------------------------------------------------------

double denormalOf(DataType t) {
  switch (t) {
    case DataType::Float16: return 0x1p-20;
    case DataType::Float64: return 0x1p-1030;
    default: return 0x1p-130;
  }
}

void fillValues(Tensor& t, ValueKind kind, Rng& rng) {
  const int64_t n = t.numel();
  const DataType dt = t.dtype();
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (isFloatingType(dt)) {
      v = rng.uniform() * 2.0 - 1.0;
      if (kind == ValueKind::Wide) v *= 64.0;
      if (kind == ValueKind::Special && rng.chance(0.12)) {
        const double d = denormalOf(dt);
        const double specials[] = {kNaN, kInf, -kInf, 0.0, -0.0, d, -d};
        v = specials[rng.below(std::size(specials))];
      }
    } else if (isIntegralType(dt)) {
      int64_t lim =
          kind == ValueKind::LargeInt ? (dt == DataType::Int32 ? (1LL << 20) : (1LL << 40)) : 8;
      v = double(rng.range(-lim, lim - 1));
    } else {
      v = rng.chance(0.5) ? 1.0 : 0.0;
    }
    t.setDoubleLinear(i, v);
  }
}

Tensor makeTensor(const InputSpec& in, const std::vector<int64_t>& sizes, uint64_t seed) {
  const auto rank = int64_t(sizes.size());
  const InputLayout& l = in.layout;
  std::vector<int64_t> strides(size_t(rank), 0);
  int64_t running = l.innerStep;
  for (int64_t i = rank - 1; i >= 0; --i) {
    const auto d = size_t(l.storageOrder[size_t(i)]);
    if (l.zeroStride[d]) continue;
    strides[d] = running;
    running *= std::max<int64_t>(1, sizes[d] + l.padding[d]);
  }
  int64_t span = 1;
  bool empty = false;
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[size_t(d)] == 0) empty = true;
    span += (sizes[size_t(d)] - 1) * strides[size_t(d)];
  }
  if (empty) span = 1;
  // The whole storage (padding included) is part of the layout, so out-of-view reads hit poison.
  const int64_t storage_elems = l.offset + std::max(span, running) + 1;
  auto storage = Storage::allocateHost(size_t(storage_elems) * dataTypeSize(in.dtype));
  Tensor all(storage, in.dtype, {storage_elems}, {1}, 0);
  poison(all);
  Tensor t(storage, in.dtype, sizes, strides, l.offset);
  Rng rng(seed);
  fillValues(t, in.values, rng);
  return t;
}

}  // namespace

std::string_view valueKindName(ValueKind k) {
  switch (k) {
    case ValueKind::Normal: return "normal";
    case ValueKind::Wide: return "wide";
    case ValueKind::Special: return "special";
    case ValueKind::LargeInt: return "large-int";
  }
  return "?";
}

FuzzCase generateCase(uint64_t seed, const GeneratorOptions& options) {
  Generator g(seed, options);
  return g.build();
}

std::optional<std::vector<int64_t>> resizedClassValues(const FuzzCase& c,
                                                       const GeneratorOptions& options) {
  // The free classes: those the inputs' sizes (and size scalars) depend on, through derived
  // classes too, that are neither pinned nor derived.
  std::set<int> free;
  std::set<int> seen;
  std::function<void(int)> visit = [&](int cls) {
    const int r = c.classRoot[size_t(cls)];
    if (!seen.insert(r).second) return;
    auto f = c.classFormulas.find(r);
    if (f != c.classFormulas.end()) {
      for (const auto& [t, k] : f->second.terms) visit(t);
    } else if (!c.classPinned[size_t(r)]) {
      free.insert(r);
    }
  };
  for (const InputSpec& in : c.inputs) {
    for (int cls : in.sizeClass) {
      if (cls >= 0) visit(cls);
    }
    if (!in.isTensor && in.scalarClass >= 0) visit(in.scalarClass);
  }
  if (free.empty()) return std::nullopt;
  Rng rng(deriveSeed(c.seed, 0x5e5e));
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::vector<int64_t> v = c.classValues;
    bool changed = false;
    for (int cls : free) {
      int64_t hi = c.classMax[size_t(cls)];
      double r = rng.uniform();
      int64_t nv = r < 0.05 ? 0 : (r < 0.15 ? 1 : rng.range(std::min<int64_t>(2, hi), hi));
      changed = changed || nv != v[size_t(cls)];
      v[size_t(cls)] = nv;
    }
    if (!changed) continue;
    // Derived classes follow; each must stay a size within its bound, and every constraint hold.
    bool ok = true;
    std::map<int, int64_t> memo;
    std::function<int64_t(int)> size_of = [&](int cls) -> int64_t {
      const int r = c.classRoot[size_t(cls)];
      auto f = c.classFormulas.find(r);
      if (f == c.classFormulas.end()) return v[size_t(r)];
      if (auto m = memo.find(r); m != memo.end()) return m->second;
      const ClassFormula& fm = f->second;
      int64_t out;
      if (fm.product) {
        double p = double(fm.factor);
        for (const auto& [t, k] : fm.terms) p *= double(size_of(t));
        if (p > 0x1p50) {
          ok = false;
          p = 0;
        }
        const auto whole = int64_t(p);
        if (whole % fm.divisor != 0) ok = false;
        out = whole / fm.divisor;
      } else {
        out = fm.offset;
        for (const auto& [t, k] : fm.terms) out += k * size_of(t);
      }
      if (out < 0 || out > c.classMax[size_t(r)]) ok = false;
      memo[r] = out;
      return out;
    };
    for (const auto& [r, f] : c.classFormulas) v[size_t(r)] = size_of(r);
    for (size_t i = 0; i < v.size(); ++i) v[i] = v[size_t(c.classRoot[i])];
    for (const ClassConstraint& k : c.classConstraints) {
      int64_t sum = k.offset;
      for (const auto& [t, m] : k.terms) sum += m * v[size_t(c.classRoot[size_t(t)])];
      if (k.modulus == 0 ? sum < 0 : sum % k.modulus != 0) ok = false;
    }
    if (!ok) continue;
    for (const auto& classes : c.tensorClasses) {
      double n = 1;
      for (int cls : classes) {
        n *= cls < 0 ? 1.0 : double(std::max<int64_t>(1, v[size_t(c.classRoot[size_t(cls)])]));
      }
      if (n > double(options.maxIntermediateNumel)) ok = false;
    }
    for (const InputSpec& in : c.inputs) {
      double n = 1;
      for (int cls : in.sizeClass) {
        n *= cls < 0 ? 1.0 : double(std::max<int64_t>(1, v[size_t(c.classRoot[size_t(cls)])]));
      }
      if (n > double(options.maxInputNumel)) ok = false;
    }
    if (ok) return v;
  }
  return std::nullopt;
}

std::vector<eval::Argument> makeArguments(const FuzzCase& c, std::span<const int64_t> class_values,
                                          int run) {
  std::vector<eval::Argument> args;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& in = c.inputs[i];
    if (!in.isTensor) {
      double v = in.scalarValues[std::min(size_t(run), in.scalarValues.size() - 1)];
      if (in.scalarClass >= 0) {
        v = double(in.scalarCoef * class_values[size_t(c.classRoot[size_t(in.scalarClass)])] +
                   in.scalarOffset);
      }
      if (in.dtype == DataType::Float64) {
        args.emplace_back(v);
      } else if (in.dtype == DataType::Int64) {
        args.emplace_back(int64_t(v));
      } else {
        args.emplace_back(v != 0);
      }
      continue;
    }
    std::vector<int64_t> sizes;
    for (int cls : in.sizeClass) {
      sizes.push_back(cls < 0 ? 1 : class_values[size_t(c.classRoot[size_t(cls)])]);
    }
    args.emplace_back(makeTensor(in, sizes, deriveSeed(c.seed, uint64_t(run) * 64 + i)));
  }
  return args;
}

eval::Tolerance outputTolerance(const FuzzCase& c, size_t i, DataType dtype,
                                std::span<const int64_t> class_values) {
  const OutputSpec& o = c.outputs.at(i);
  double n = 1;
  for (int cls : o.reductionClasses) {
    n *= double(std::max<int64_t>(1, class_values[size_t(c.classRoot[size_t(cls)])]));
  }
  n = std::min(n, 1e15);
  if (dtype == DataType::Float64 && o.lowPrecision) dtype = DataType::Float32;
  eval::Tolerance tol = eval::defaultTolerance(dtype, int64_t(n));
  if (isFloatingType(dtype)) {
    eval::Tolerance coarse = eval::defaultTolerance(o.coarsestInexact, int64_t(n));
    tol.rtol = std::max(tol.rtol, coarse.rtol);
    tol.atol = std::max(tol.atol, coarse.atol);
  }
  tol.rtol *= o.tolScale;
  tol.atol *= o.tolScale;
  return tol;
}

std::string describeArguments(const FuzzCase& c, std::span<const eval::Argument> args) {
  std::ostringstream os;
  for (size_t i = 0; i < args.size() && i < c.inputs.size(); ++i) {
    const InputSpec& in = c.inputs[i];
    os << "  input " << i << ": ";
    if (!in.isTensor) {
      os << eval::describeArgument(args[i]) << "\n";
      continue;
    }
    const Tensor& t = std::get<Tensor>(args[i]);
    os << "sizes " << shapeText(t.sizes()) << " strides " << shapeText(t.strides()) << " offset "
       << t.offset() << " " << dataTypeName(t.dtype()) << ", declared " << shapeText(in.declared);
    if (!in.strideOrder.empty()) os << " stride order " << shapeText(in.strideOrder);
    os << ", values " << valueKindName(in.values) << "\n";
  }
  return os.str();
}

std::vector<FamilyInfo> opFamilies() {
  std::vector<FamilyInfo> out;
  for (const Family& f : kFamilies) out.push_back({f.name, f.weight, f.fn != nullptr, f.covers});
  return out;
}

}  // namespace loom::fuzz
