// SPDX-License-Identifier: Apache-2.0
// The fuzzer's generator (see fusion_generator.h): inputs, size classes, numeric bounds, and one
// function per op family, listed with their weights in kFamilies.
#include "fuzz/fusion_generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>

#include "fuzz/fuzz_rng.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ir/scalar_math.h"
#include "loom/ops/ops.h"
#include "loom/support/error.h"
#include "loom/tensor/tensor.h"

namespace loom::fuzz {
namespace {

using ir::TensorView;
using ops::Operand;
using ops::PromotionKind;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Largest magnitude an inexact tensor may have: beyond it rounding differences exceed the
// absolute tolerance.
constexpr double kInexactMag = 16.0;
// Largest magnitude of the input of a floating reduction (clamped down otherwise).
constexpr double kReduceMag = 8.0;
// Largest tolerance multiplier an output may need; ops that would need more are not generated.
constexpr double kMaxTolScale = 64.0;
constexpr double kInt32Limit = 2147483647.0;
// The reference holds integers as doubles (exact below 2^53): integer values stay below 2^50.
constexpr double kInt64Limit = 0x1p50;

enum class DimKind : uint8_t { Iter, Bcast, Expanded };

struct GenDim {
  DimKind kind = DimKind::Iter;
  int cls = -1;  // size class; -1 for Bcast
};

// What the generator knows about a tensor's values (see the header's file comment).
struct Num {
  bool exact = true;     // bit-identical in every correct implementation
  double mag = 1.0;      // bound of |finite values| (inf: unknown)
  bool special = false;  // NaN or inf may occur
  double minAbs = 0.0;   // lower bound of |values| (0: none known)
  bool product = false;  // the result of a mul: an add of it may be contracted to an FMA
  // Inexact values whose error comes from a computation below Float64 (a Float64 output of them
  // is compared with the tolerance of Float32). Set by adopt().
  bool lowp = false;
  // The sign of a zero may differ between correct implementations (max/min reductions pick
  // between -0 and +0 in any order): 1/x, rsqrt, pow and division by it are not generated.
  bool zsign = false;

  Num() = default;
  Num(bool e, double m, bool s, double lo, bool p)
      : exact(e), mag(m), special(s), minAbs(lo), product(p) {}
};

struct GenTensor {
  TensorView* tv = nullptr;
  std::vector<GenDim> dims;
  Num num;
  std::vector<int> red;  // classes of the reductions upstream
  double tol = 1.0;      // tolerance multiplier its values need
  int uses = 0;
  int input = -1;  // index into FuzzCase::inputs, -1 when computed
};

// An operand under consideration: a tensor of the pool or a scalar Val.
struct Opnd {
  ir::Val* val = nullptr;
  int tensor = -1;
  Num num;
  bool isConst = false;
  double value = 0.0;  // of a constant
};

enum class Un : uint8_t {
  Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Reciprocal, Sin, Cos, Tanh, Sigmoid, Silu, Erf, Gelu,
  GeluTanh, Neg, Abs, Relu, Floor, Ceil, Round, Sign, IsNan, IsInf, LogicalNot
};
enum class Bin : uint8_t {
  Add, Sub, Mul, Div, Pow, Fmod, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge, And, Or
};
enum class Red : uint8_t { Sum, Prod, Max, Min, Mean };

const char* unName(Un u) {
  static const char* names[] = {"exp",  "exp2",  "log",     "log2",  "sqrt",  "rsqrt",
                                "reciprocal", "sin", "cos", "tanh", "sigmoid", "silu", "erf",
                                "gelu", "gelu_tanh", "neg", "abs", "relu", "floor", "ceil",
                                "round", "sign", "isnan", "isinf", "logical_not"};
  return names[size_t(u)];
}
const char* binName(Bin b) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "fmod", "maximum", "minimum",
                                "eq",  "ne",  "lt",  "le",  "gt",  "ge",   "logical_and",
                                "logical_or"};
  return names[size_t(b)];
}
const char* redName(Red r) {
  static const char* names[] = {"sum", "prod", "max", "min", "mean"};
  return names[size_t(r)];
}

double maxFinite(DataType t) {
  switch (t) {
    case DataType::Float16: return 65504.0;
    case DataType::BFloat16:
    case DataType::Float32: return 3.0e38;
    case DataType::Float64: return 1.0e300;
    case DataType::Int32: return kInt32Limit;
    default: return kInt64Limit;
  }
}

double intLimit(DataType t) { return t == DataType::Int32 ? kInt32Limit : kInt64Limit; }

// a * b for bounds, where 0 * inf is 0 (a bound of 0 means the values are 0).
double mulBound(double a, double b) { return (a == 0 || b == 0) ? 0 : a * b; }

std::string shapeText(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// The shortest text that reads back as v.
std::string numText(double v) {
  std::string out;
  for (int precision = 6; precision <= 17; ++precision) {
    std::ostringstream os;
    os.precision(precision);
    os << v;
    out = os.str();
    if (std::isnan(v) || std::strtod(out.c_str(), nullptr) == v) break;
  }
  return out;
}

class Generator;
using FamilyFn = bool (Generator::*)();

struct Family {
  std::string_view name;
  double weight;
  FamilyFn fn;  // nullptr: a TODO entry, not generated yet
  std::string_view covers;
};

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions& options) : rng_(seed), opts_(options) {
    c_.seed = seed;
    c_.fusion = std::make_unique<ir::Fusion>();
  }

  FuzzCase build();

  // ---- Op families (one function each; the table is kFamilies below). ----
  bool famUnaryFloat();
  bool famUnaryKeep();
  bool famPredicate();
  bool famBinary();
  bool famSpecialScalar();
  bool famCompare();
  bool famLogical();
  bool famWhere();
  bool famClamp();
  bool famLerp();
  bool famCast();
  bool famBroadcast();
  bool famBroadcastInDim();
  bool famExpand();
  bool famSqueeze();
  bool famPermute();
  bool famSet();
  bool famReshape();
  bool famReduce();
  bool famWelford();
  bool famSoftmax();
  bool famLayerNorm();
  bool famRmsNorm();
  bool famBiasGelu();
  bool famNormPattern();
  bool famOuterReduction();
  bool famBroadcastCombine();
  bool famFanOut();
  bool famSlice();
  bool famPad();
  bool famCat();
  bool famRotary();
  bool famFull();
  bool famIota();
  bool famReshapeSymbolic();
  bool famExpandSymbolic();

 private:
  // ---- Size classes.
  int newClass(int64_t value, bool pinned, int64_t max_value);
  int root(int c);
  int64_t value(const GenDim& d) { return d.kind == DimKind::Bcast ? 1 : c_.classValues[size_t(root(d.cls))]; }
  int64_t maxValue(const GenDim& d) {
    return d.kind == DimKind::Bcast ? 1 : c_.classMax[size_t(root(d.cls))];
  }
  bool pinned(const GenDim& d) { return d.kind == DimKind::Bcast || c_.classPinned[size_t(root(d.cls))]; }
  bool mayBeZero(const GenDim& d) { return d.kind != DimKind::Bcast && (value(d) == 0 || !pinned(d)); }
  // Pins a class (its size stays in every run); a derived class pins what it derives from and
  // becomes an ordinary pinned class.
  void pin(int c);
  void unify(int a, int b);
  // ---- Derived classes and constraints (see ClassFormula, ClassConstraint).
  using Terms = std::vector<std::pair<int, int64_t>>;
  bool derived(int c) { return c_.classFormulas.count(root(c)) > 0; }
  bool dependsOn(int c, int target);
  int constClass(int64_t v) { return newClass(v, true, v); }
  // A class of size sum(coefficient * size) + offset: an existing class when the sum is one,
  // a pinned class when it is constant, else a derived class.
  int sumClass(const Terms& terms, int64_t offset);
  // A class of size factor * product(sizes) / divisor (the divisor must divide it).
  int productClass(const std::vector<int>& classes, int64_t factor, int64_t divisor);
  // Every run must keep sum(coefficient * size) + offset >= 0 (or divisible by modulus).
  void require(const Terms& terms, int64_t offset, int64_t modulus = 0);
  // The size of a dim as terms plus an offset: a broadcast is the constant 1.
  Terms termsOf(const GenDim& d, int64_t* offset) {
    if (d.kind == DimKind::Bcast) {
      *offset += 1;
      return {};
    }
    return {{d.cls, 1}};
  }
  int64_t numel(const std::vector<GenDim>& dims) {
    int64_t n = 1;
    for (const GenDim& d : dims) n *= value(d);
    return n;
  }
  double maxNumel(const std::vector<GenDim>& dims) {
    double n = 1;
    for (const GenDim& d : dims) n *= double(maxValue(d));
    return n;
  }
  double redProduct(const std::vector<int>& red) {
    double n = 1;
    for (int c : red) n *= double(std::max<int64_t>(1, c_.classMax[size_t(root(c))]));
    return n;
  }
  // Size budgets count a 0 as 1: a tensor of shape [0, 5000, 5000] is empty, but what is computed
  // from it (a reduction over the 0) is not.
  bool fits(const std::vector<GenDim>& dims) {
    int64_t n = 1;
    for (const GenDim& d : dims) n *= std::max<int64_t>(1, value(d));
    return n <= opts_.maxIntermediateNumel;
  }

  // ---- The pool of tensors.
  int adopt(TensorView* tv, std::vector<GenDim> dims, Num num, std::vector<int> red, double tol);
  // Whether an inexact tensor's error may come from math below Float64: a pool tensor upstream
  // that is inexact and low precision, or a computed tensor of a 16- or 32-bit float type.
  bool upstreamLowPrecision(TensorView* tv);
  DataType coarsestInexactUpstream(int t);
  // A random tensor satisfying `ok` (recent and unused ones preferred), or -1.
  int pick(const std::function<bool(const GenTensor&)>& ok = nullptr);
  // A tensor that broadcasts with `a` (other than a, when possible), or -1.
  int partner(int a, const std::function<bool(const GenTensor&)>& ok = nullptr);
  Opnd tensorOpnd(int t) {
    Opnd o;
    o.val = ts_[size_t(t)].tv;
    o.tensor = t;
    o.num = ts_[size_t(t)].num;
    return o;
  }
  double errScale(const Opnd& o) {
    if (o.tensor < 0) return 0;
    const GenTensor& t = ts_[size_t(o.tensor)];
    return (t.num.exact && t.red.empty()) ? 0 : t.tol;
  }
  std::optional<std::vector<GenDim>> broadcastShape(const std::vector<int>& tensors);
  void commitShape(const std::vector<int>& tensors);
  void note(const std::string& line) { c_.steps.push_back("[" + family_ + "] " + line); }
  std::string name(int t) { return ts_[size_t(t)].tv->toString(); }

  // ---- Sizes given as Scalars.
  // An Int64 scalar fusion input worth coef * size(cls) + offset in every run (cls -1: the
  // constant `offset`).
  ir::Scalar* sizeScalar(int cls, int64_t coef, int64_t offset);
  ir::Scalar* extentScalar(int t, size_t d) {
    return ir::TensorDomain::noReductions(ts_[size_t(t)].tv->logical())[d]->logicalExtent();
  }
  // A Size equal to class cls's size in every run: a constant (pinned classes, when allowed),
  // the extent of a tensor with a dim of that class, or a size scalar.
  ops::Size sizeFor(int cls, bool allow_const);
  // A pad or full value for dtype dt: a constant (non-finite ones for floats) or a scalar input
  // whose dtype converts cleanly; with what is known of it once cast to dt.
  Opnd fillValue(DataType dt, bool allow_special);

  // ---- Slice and cat.
  struct SliceBound {
    ops::Size start = int64_t(0);
    ops::Size stop = int64_t(0);
    int cls = -1;  // the class of the sliced dim
  };
  // Bounds for slicing dim d of tensor t that stay valid in every run, or nullopt.
  std::optional<SliceBound> sliceBound(int t, size_t d, bool allow_scalar);
  int sliceOp(int t, const std::vector<std::pair<size_t, SliceBound>>& bounds);
  // cat of pool tensors (equal sizes except at dim), or -1 when their values do not cast cleanly.
  int catOp(const std::vector<int>& parts, int64_t dim, int64_t spelled);

  // ---- Scalars.
  Opnd constant(double v);
  Opnd constant(int64_t v);
  Opnd constant(bool v);
  // A scalar operand that suits a tensor of dtype `dt`: a constant (sometimes special: inf, NaN,
  // -0, subnormal, large integer) or a scalar fusion input.
  Opnd randomScalar(DataType dt, bool allow_special);
  Opnd constantOfCategory(DataType ct, double v);

  // ---- Inputs.
  void makeInputs();
  int addTensorInput(const std::vector<int>& classes, DataType dtype, bool static_sizes);
  void addScalarInput();
  int64_t drawSize();
  DataType drawDtype();
  InputLayout drawLayout(const std::vector<int64_t>& declared);

  // ---- Op builders with their numeric rules; each returns the new tensor or -1 (declined).
  struct Result {
    Num num;
    double tol = -1;  // -1: the largest error scale of the operands (at least 1)
    bool keepsZeroSign = true;  // false: the result's zeros have a known sign (abs, relu)
  };
  using Rule = std::function<std::optional<Result>(DataType compute)>;
  using Build = std::function<TensorView*(const std::vector<Operand>&)>;
  int pointwise(std::string_view what, const std::vector<Opnd>& operands, DataType compute,
                const Rule& rule, const Build& build);
  int unaryOp(Un u, int t);
  int binaryOp(Bin b, const Opnd& x, const Opnd& y);
  int whereOp(const Opnd& cond, const Opnd& a, const Opnd& b);
  int clampOp(const Opnd& x, const Opnd& lo, const Opnd& hi);
  int lerpOp(const Opnd& a, const Opnd& b, const Opnd& w);
  int castOp(int t, DataType to);
  // Clamps t to [-bound, bound] when its magnitude exceeds `limit`; returns t or the clamp.
  int bounded(int t, double limit, double bound, bool clamp_inf = false);
  int reduceOp(Red r, int t, std::vector<int64_t> axes, bool keepdim);
  int broadcastOp(int t, const std::vector<bool>& flags);
  std::vector<int64_t> randomAxes(int64_t rank, bool allow_all);
  std::vector<int64_t> spell(const std::vector<int64_t>& axes, int64_t rank);
  // A weight (or bias) for a normalization of t's last n dims: a pool tensor of exactly those
  // dims, a new input, or -1.
  int normParam(int t, int64_t n);

  Rng rng_;
  const GeneratorOptions& opts_;
  FuzzCase c_;
  std::vector<GenTensor> ts_;
  std::map<const TensorView*, int> pool_index_;
  std::vector<int> scalar_inputs_;  // indices into c_.inputs
  std::vector<ir::Val*> scalar_vals_;
  int64_t tensor_inputs_ = 0;
  std::string family_ = "input";  // the family being applied, for the step notes
};

// ------------------------------------------------------------------------------------------------
// The op families. To add an op: write one bool Generator::famX() (return false when nothing in
// the pool fits) and add a row here. Rows with a null function are planned families (TODO) that
// need ops Loom does not have yet; they are listed so that coverage reports name them.
// ------------------------------------------------------------------------------------------------
const Family kFamilies[] = {
    {"unary_float", 10, &Generator::famUnaryFloat,
     "exp exp2 log log2 sqrt rsqrt reciprocal sin cos tanh sigmoid silu erf gelu(+tanh)"},
    {"unary_keep", 6, &Generator::famUnaryKeep, "neg abs relu floor ceil round sign"},
    {"predicate", 3, &Generator::famPredicate, "isNan isInf logicalNot"},
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

// ---- Size classes ---------------------------------------------------------------------------

int Generator::newClass(int64_t value, bool pinned, int64_t max_value) {
  c_.classRoot.push_back(int(c_.classRoot.size()));
  c_.classValues.push_back(value);
  c_.classPinned.push_back(pinned);
  c_.classMax.push_back(pinned ? value : std::max(value, max_value));
  return int(c_.classRoot.size()) - 1;
}

int Generator::root(int c) {
  while (c_.classRoot[size_t(c)] != c) {
    c_.classRoot[size_t(c)] = c_.classRoot[size_t(c_.classRoot[size_t(c)])];
    c = c_.classRoot[size_t(c)];
  }
  return c;
}

void Generator::pin(int c) {
  int r = root(c);
  auto f = c_.classFormulas.find(r);
  if (f != c_.classFormulas.end()) {
    const ClassFormula formula = f->second;
    c_.classFormulas.erase(f);
    for (const auto& [t, k] : formula.terms) pin(t);
  }
  c_.classPinned[size_t(r)] = true;
  c_.classMax[size_t(r)] = c_.classValues[size_t(r)];
}

bool Generator::dependsOn(int c, int target) {
  int r = root(c);
  if (r == root(target)) return true;
  auto f = c_.classFormulas.find(r);
  if (f == c_.classFormulas.end()) return false;
  for (const auto& [t, k] : f->second.terms) {
    if (dependsOn(t, target)) return true;
  }
  return false;
}

void Generator::unify(int a, int b) {
  a = root(a);
  b = root(b);
  if (a == b) return;
  if (c_.classValues[size_t(a)] != c_.classValues[size_t(b)]) {
    throw GeneratorError("unify: size classes of different sizes");
  }
  if (derived(a) || derived(b)) {
    // A free class may follow a derived one; anything else is fixed for good.
    const int d = derived(a) ? a : b;
    const int f = d == a ? b : a;
    if (!derived(f) && !c_.classPinned[size_t(f)] && !dependsOn(d, f)) {
      c_.classRoot[size_t(f)] = d;
      c_.classMax[size_t(d)] = std::min(c_.classMax[size_t(d)], c_.classMax[size_t(f)]);
      return;
    }
    pin(a);
    pin(b);
  }
  c_.classRoot[size_t(b)] = a;
  c_.classPinned[size_t(a)] = c_.classPinned[size_t(a)] || c_.classPinned[size_t(b)];
  c_.classMax[size_t(a)] = std::min(c_.classMax[size_t(a)], c_.classMax[size_t(b)]);
  if (c_.classPinned[size_t(a)]) c_.classMax[size_t(a)] = c_.classValues[size_t(a)];
}

int Generator::sumClass(const Terms& terms, int64_t offset) {
  std::map<int, int64_t> coef;  // by root
  std::function<void(int, int64_t)> add = [&](int c, int64_t k) {
    const int r = root(c);
    if (c_.classPinned[size_t(r)]) {
      offset += k * c_.classValues[size_t(r)];
      return;
    }
    auto f = c_.classFormulas.find(r);
    if (f != c_.classFormulas.end() && !f->second.product) {
      const ClassFormula formula = f->second;
      for (const auto& [t, m] : formula.terms) add(t, k * m);
      offset += k * formula.offset;
      return;
    }
    coef[r] += k;
  };
  for (const auto& [c, k] : terms) add(c, k);
  Terms out;
  int64_t value = offset;
  int64_t max_value = offset;
  for (const auto& [r, k] : coef) {
    if (k == 0) continue;
    out.emplace_back(r, k);
    value += k * c_.classValues[size_t(r)];
    if (k > 0) max_value += k * c_.classMax[size_t(r)];
  }
  if (value < 0) throw GeneratorError("a derived size class would be negative");
  if (out.empty()) return constClass(value);
  if (out.size() == 1 && out[0].second == 1 && offset == 0) return out[0].first;
  const int c = newClass(value, false, std::max(value, max_value));
  ClassFormula f;
  f.terms = std::move(out);
  f.offset = offset;
  c_.classFormulas[c] = f;
  return c;
}

int Generator::productClass(const std::vector<int>& classes, int64_t factor, int64_t divisor) {
  std::vector<int> free;
  int64_t value = factor;
  double max_value = double(factor);
  for (int c : classes) {
    const int r = root(c);
    value *= c_.classValues[size_t(r)];
    if (c_.classPinned[size_t(r)]) {
      factor *= c_.classValues[size_t(r)];
      max_value *= double(c_.classValues[size_t(r)]);
    } else {
      free.push_back(r);
      max_value *= double(c_.classMax[size_t(r)]);
    }
  }
  if (divisor <= 0 || value % divisor != 0) {
    throw GeneratorError("a derived size class does not divide");
  }
  value /= divisor;
  if (free.empty()) return constClass(value);
  if (free.size() == 1 && factor == divisor) return free[0];
  max_value = std::min(max_value / double(divisor), 0x1p40);
  const int c = newClass(value, false, std::max(value, int64_t(max_value)));
  ClassFormula f;
  f.product = true;
  for (int r : free) f.terms.emplace_back(r, 1);
  f.factor = factor;
  f.divisor = divisor;
  c_.classFormulas[c] = f;
  return c;
}

void Generator::require(const Terms& terms, int64_t offset, int64_t modulus) {
  ClassConstraint k;
  k.offset = offset;
  k.modulus = modulus;
  int64_t now = offset;
  bool all_pinned = true;
  for (const auto& [c, m] : terms) {
    now += m * c_.classValues[size_t(root(c))];
    all_pinned = all_pinned && c_.classPinned[size_t(root(c))];
    k.terms.emplace_back(c, m);
  }
  if (modulus == 0 ? now < 0 : now % modulus != 0) {
    throw GeneratorError("a size constraint does not hold for the first run");
  }
  if (!all_pinned) c_.classConstraints.push_back(std::move(k));
}

// ---- The pool ---------------------------------------------------------------------------------

int Generator::adopt(TensorView* tv, std::vector<GenDim> dims, Num num, std::vector<int> red,
                     double tol) {
  auto ids = ir::TensorDomain::noReductions(tv->logical());
  auto fail = [&](const std::string& why) {
    std::ostringstream os;
    os << "the generator's model of " << tv->toString() << " is wrong: " << why << " (family "
       << family_ << ", defined by " << (tv->definition() ? tv->definition()->toString() : "-")
       << "); steps so far:";
    for (const std::string& s : c_.steps) os << "\n  " << s;
    throw GeneratorError(os.str());
  };
  if (ids.size() != dims.size()) {
    fail("rank " + std::to_string(ids.size()) + ", expected " + std::to_string(dims.size()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    ir::IterDomain* id = ids[i];
    DimKind k = id->isBroadcast() ? (id->hasExpandedExtent() ? DimKind::Expanded : DimKind::Bcast)
                                  : DimKind::Iter;
    if (k != dims[i].kind) fail("the kind of dim " + std::to_string(i) + " differs");
    auto c = id->logicalExtent()->constInt();
    if (k == DimKind::Bcast) {
      if (c != 1) fail("broadcast dim " + std::to_string(i) + " is not of size 1");
      continue;
    }
    if (c.has_value()) {
      if (*c != value(dims[i])) {
        fail("dim " + std::to_string(i) + " has constant size " + std::to_string(*c) +
             ", expected " + std::to_string(value(dims[i])));
      }
      pin(dims[i].cls);
    }
  }
  if (!(num.mag < 1e300)) num.mag = kInf;
  if (!num.exact) num.lowp = tv->dtype() != DataType::Float64 || upstreamLowPrecision(tv);
  if (tol > kMaxTolScale) throw GeneratorError("tolerance scale above the limit was adopted");
  pool_index_[tv] = int(ts_.size());
  GenTensor t;
  t.tv = tv;
  t.dims = std::move(dims);
  t.num = num;
  t.red = std::move(red);
  t.tol = std::max(1.0, tol);
  ts_.push_back(std::move(t));
  std::vector<int> classes;
  for (const GenDim& d : ts_.back().dims) classes.push_back(d.kind == DimKind::Bcast ? -1 : d.cls);
  c_.tensorClasses.push_back(std::move(classes));
  return int(ts_.size()) - 1;
}

DataType Generator::coarsestInexactUpstream(int t) {
  // Machine epsilon orders the floating types: BFloat16 is the coarsest.
  auto coarser = [](DataType a, DataType b) {
    auto eps = [](DataType d) {
      switch (d) {
        case DataType::BFloat16: return 0x1p-8;
        case DataType::Float16: return 0x1p-11;
        case DataType::Float32: return 0x1p-24;
        default: return 0x1p-53;
      }
    };
    return eps(a) > eps(b) ? a : b;
  };
  DataType result = DataType::Float64;
  std::vector<ir::Val*> stack{ts_[size_t(t)].tv};
  std::set<ir::Val*> seen;
  while (!stack.empty()) {
    ir::Val* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    auto* tv = v->as<TensorView>();
    // Tensors inside a composite op are not in the pool: walked through, judged by what the
    // pool knows above and below them.
    auto it = pool_index_.find(tv);
    if (it != pool_index_.end()) {
      const GenTensor& g = ts_[size_t(it->second)];
      if (!g.num.exact && isFloatingType(tv->dtype())) result = coarser(result, tv->dtype());
    }
    ir::Expr* def = tv->definition();
    if (def == nullptr) continue;
    for (ir::Val* in : def->inputs()) {
      if (in->isA<TensorView>()) stack.push_back(in);
    }
  }
  return result;
}

bool Generator::upstreamLowPrecision(TensorView* tv) {
  std::vector<ir::Val*> stack{tv};
  std::set<ir::Val*> seen;
  while (!stack.empty()) {
    ir::Val* v = stack.back();
    stack.pop_back();
    ir::Expr* def = v->definition();
    if (def == nullptr) continue;
    for (ir::Val* in : def->inputs()) {
      auto* t = in->dynCast<TensorView>();
      if (t == nullptr || !seen.insert(t).second) continue;
      auto it = pool_index_.find(t);
      if (it != pool_index_.end()) {
        const Num& n = ts_[size_t(it->second)].num;
        if (!n.exact && n.lowp) return true;
        continue;
      }
      if (isFloatingType(t->dtype()) && t->dtype() != DataType::Float64) return true;
      stack.push_back(t);
    }
  }
  return false;
}

int Generator::pick(const std::function<bool(const GenTensor&)>& ok) {
  std::vector<double> w(ts_.size(), 0.0);
  bool any = false;
  for (size_t i = 0; i < ts_.size(); ++i) {
    if (ok && !ok(ts_[i])) continue;
    w[i] = (1.0 + 0.3 * double(i)) * (ts_[i].uses == 0 ? 3.0 : 1.0);
    any = true;
  }
  if (!any) return -1;
  return int(rng_.weighted(w));
}

int Generator::partner(int a, const std::function<bool(const GenTensor&)>& ok) {
  std::vector<double> w(ts_.size(), 0.0);
  bool any = false;
  for (size_t i = 0; i < ts_.size(); ++i) {
    if (ok && !ok(ts_[i])) continue;
    auto shape = broadcastShape({a, int(i)});
    if (!shape || !fits(*shape)) continue;
    w[i] = (int(i) == a ? 0.3 : 1.0 + 0.2 * double(i)) * (ts_[i].uses == 0 ? 2.0 : 1.0);
    any = true;
  }
  if (!any) return -1;
  return int(rng_.weighted(w));
}

std::optional<std::vector<GenDim>> Generator::broadcastShape(const std::vector<int>& tensors) {
  size_t rank = 0;
  for (int t : tensors) rank = std::max(rank, ts_[size_t(t)].dims.size());
  std::vector<GenDim> out(rank, GenDim{DimKind::Bcast, -1});
  for (size_t pos = 0; pos < rank; ++pos) {
    std::optional<int64_t> sized;
    bool any_iter = false;
    for (int t : tensors) {
      const auto& dims = ts_[size_t(t)].dims;
      if (pos + dims.size() < rank) continue;
      const GenDim& d = dims[pos + dims.size() - rank];
      if (d.kind == DimKind::Bcast) continue;
      int64_t s = value(d);
      if (sized && *sized != s) return std::nullopt;
      sized = s;
      if (d.kind == DimKind::Iter && !any_iter) {
        out[pos] = d;
        any_iter = true;
      } else if (!any_iter && out[pos].kind == DimKind::Bcast) {
        out[pos] = d;
      }
    }
  }
  return out;
}

void Generator::commitShape(const std::vector<int>& tensors) {
  size_t rank = 0;
  for (int t : tensors) rank = std::max(rank, ts_[size_t(t)].dims.size());
  for (size_t pos = 0; pos < rank; ++pos) {
    int first = -1;
    for (int t : tensors) {
      const auto& dims = ts_[size_t(t)].dims;
      if (pos + dims.size() < rank) continue;
      const GenDim& d = dims[pos + dims.size() - rank];
      if (d.kind == DimKind::Bcast) continue;
      if (first < 0) {
        first = d.cls;
      } else {
        unify(first, d.cls);
      }
    }
  }
}

// ---- Scalars ----------------------------------------------------------------------------------

Num numOfValue(double v) {
  Num n;
  if (std::isnan(v) || std::isinf(v) || std::fabs(v) > 3.0e38) {
    n.special = true;
    n.mag = 0;
    n.minAbs = 0;
    return n;
  }
  n.mag = std::fabs(v);
  // Values that become 0 in Float32 bound nothing away from zero.
  n.minAbs = std::fabs(v) < 1e-30 ? 0.0 : std::fabs(v);
  return n;
}

Opnd Generator::constant(double v) {
  Opnd o;
  o.val = ir::IrBuilder::constant(v);
  o.isConst = true;
  o.value = v;
  o.num = numOfValue(v);
  return o;
}
Opnd Generator::constant(int64_t v) {
  Opnd o;
  o.val = ir::IrBuilder::constant(v);
  o.isConst = true;
  o.value = double(v);
  o.num = numOfValue(double(v));
  return o;
}
Opnd Generator::constant(bool v) {
  Opnd o;
  o.val = ir::IrBuilder::constant(v);
  o.isConst = true;
  o.value = v ? 1.0 : 0.0;
  o.num = numOfValue(o.value);
  return o;
}

Opnd Generator::constantOfCategory(DataType ct, double v) {
  if (isFloatingType(ct)) return constant(v);
  if (isBooleanType(ct)) return constant(v != 0);
  return constant(int64_t(v));
}

Opnd Generator::randomScalar(DataType dt, bool allow_special) {
  if (!scalar_inputs_.empty() && rng_.chance(0.25)) {
    size_t k = rng_.below(scalar_inputs_.size());
    const InputSpec& in = c_.inputs[size_t(scalar_inputs_[k])];
    Opnd o;
    o.val = scalar_vals_[k];
    Num n;
    n.mag = 0;
    n.minAbs = kInf;
    for (double v : in.scalarValues) {
      Num m = numOfValue(v);
      n.special = n.special || m.special;
      n.mag = std::max(n.mag, m.mag);
      n.minAbs = std::min(n.minAbs, m.special ? 0.0 : m.minAbs);
    }
    o.num = n;
    return o;
  }
  // Category of the constant.
  double r = rng_.uniform();
  int cat;  // 0 double, 1 int, 2 bool
  if (isFloatingType(dt)) {
    cat = r < 0.8 ? 0 : (r < 0.95 ? 1 : 2);
  } else if (isIntegralType(dt)) {
    cat = r < 0.6 ? 1 : (r < 0.95 ? 0 : 2);
  } else {
    cat = r < 0.4 ? 2 : (r < 0.7 ? 1 : 0);
  }
  if (cat == 2) return constant(rng_.chance(0.5));
  if (cat == 1) {
    static const std::vector<int64_t> small = {0, 1, 2, -1, -3, 5, 7, 3};
    static const std::vector<int64_t> large = {2147483647LL, -2147483648LL, 1LL << 40,
                                               -(1LL << 40), (1LL << 52) - 1, 65536, 1000003};
    return constant(allow_special && rng_.chance(0.15) ? rng_.pick(large) : rng_.pick(small));
  }
  static const std::vector<double> normal = {0.5, 2.0, -1.5, 3.0, 0.25, -0.75, 1.0, 10.0, 0.0,
                                             -2.0, 0.1};
  static const std::vector<double> special = {kInf, -kInf, kNaN, -0.0, 1e-40, -1e-40, 1e-310,
                                              6e-8, 65504.0, 1e10, 3.0e38, 70000.0};
  return constant(allow_special && rng_.chance(0.15) ? rng_.pick(special) : rng_.pick(normal));
}

// ---- Inputs -----------------------------------------------------------------------------------

int64_t Generator::drawSize() {
  double r = rng_.uniform();
  if (r < 0.04) return 0;
  if (r < 0.16) return 1;
  if (r < 0.55) return rng_.range(2, 8);
  if (r < 0.85) return rng_.range(9, 64);
  // Log-uniform up to 1500: block and grid reductions.
  return int64_t(std::exp(std::log(65.0) + rng_.uniform() * (std::log(1500.0) - std::log(65.0))));
}

DataType Generator::drawDtype() {
  static const DataType types[] = {DataType::Bool,    DataType::Int32,   DataType::Int64,
                                   DataType::Float16, DataType::BFloat16, DataType::Float32,
                                   DataType::Float64};
  static const double weights[] = {1, 1, 1, 2, 2, 5, 1};
  return types[rng_.weighted(weights)];
}

InputLayout Generator::drawLayout(const std::vector<int64_t>& declared) {
  const auto rank = int64_t(declared.size());
  InputLayout l;
  l.storageOrder.resize(size_t(rank));
  std::iota(l.storageOrder.begin(), l.storageOrder.end(), int64_t(0));
  l.padding.assign(size_t(rank), 0);
  l.zeroStride.assign(size_t(rank), false);
  if (rank >= 2 && rng_.chance(0.25)) l.storageOrder = rng_.permutation(rank);
  if (rank >= 1 && rng_.chance(0.2)) l.padding[rng_.below(uint64_t(rank))] = rng_.range(1, 5);
  if (rng_.chance(0.15)) l.offset = rng_.range(1, 7);
  for (int64_t d = 0; d < rank; ++d) {
    if (declared[size_t(d)] != 1 && rng_.chance(0.08)) l.zeroStride[size_t(d)] = true;
  }
  if (rank >= 1 && rng_.chance(0.07)) l.innerStep = 2;
  return l;
}

int Generator::addTensorInput(const std::vector<int>& classes, DataType dtype, bool static_sizes) {
  InputSpec in;
  in.dtype = dtype;
  std::vector<GenDim> dims;
  for (int cls : classes) {
    if (cls < 0) {
      in.declared.push_back(1);
      in.sizeClass.push_back(-1);
      dims.push_back({DimKind::Bcast, -1});
      continue;
    }
    int64_t v = c_.classValues[size_t(root(cls))];
    bool constant = v != 1 && (static_sizes || c_.classPinned[size_t(root(cls))] || rng_.chance(0.3));
    in.declared.push_back(constant ? v : -1);
    in.sizeClass.push_back(cls);
    if (constant) pin(cls);
    dims.push_back({DimKind::Iter, cls});
  }
  in.layout = drawLayout(in.declared);
  bool permuted = !std::is_sorted(in.layout.storageOrder.begin(), in.layout.storageOrder.end());
  if (permuted && rng_.chance(0.1)) in.strideOrder = in.layout.storageOrder;
  Num num;
  if (isFloatingType(dtype)) {
    double r = rng_.uniform();
    in.values = r < 0.75 ? ValueKind::Normal : (r < 0.85 ? ValueKind::Wide : ValueKind::Special);
    num.mag = in.values == ValueKind::Wide ? 64.0 : 1.0;
    num.special = in.values == ValueKind::Special;
  } else if (isIntegralType(dtype)) {
    in.values = rng_.chance(0.15) ? ValueKind::LargeInt : ValueKind::Normal;
    num.mag = in.values == ValueKind::LargeInt ? (dtype == DataType::Int32 ? 0x1p20 : 0x1p40) : 8.0;
  } else {
    num.mag = 1.0;
  }
  ops::TensorBuilder b;
  b.shape(in.declared).dtype(dtype);
  if (!in.strideOrder.empty()) b.strideOrder(in.strideOrder);
  TensorView* tv = b.build();
  c_.fusion->addInput(tv);
  c_.inputs.push_back(in);
  int t = adopt(tv, dims, num, {}, 1.0);
  ts_[size_t(t)].input = int(c_.inputs.size()) - 1;
  note(name(t) + " = input " + shapeText(in.declared) + " " + std::string(dataTypeName(dtype)) +
       ", values " + std::string(valueKindName(in.values)));
  ++tensor_inputs_;
  if (permuted) c_.features.insert("permuted-input");
  if (std::any_of(in.layout.padding.begin(), in.layout.padding.end(), [](int64_t p) { return p > 0; }))
    c_.features.insert("sliced-input");
  if (in.layout.offset > 0) c_.features.insert("offset-input");
  if (std::find(in.layout.zeroStride.begin(), in.layout.zeroStride.end(), true) !=
      in.layout.zeroStride.end())
    c_.features.insert("expanded-input");
  if (!in.strideOrder.empty()) c_.features.insert("declared-stride-order");
  return t;
}

void Generator::addScalarInput() {
  InputSpec in;
  in.isTensor = false;
  double r = rng_.uniform();
  in.dtype = r < 0.7 ? DataType::Float64 : (r < 0.9 ? DataType::Int64 : DataType::Bool);
  for (int run = 0; run < 3; ++run) {
    double v;
    if (in.dtype == DataType::Float64) {
      static const std::vector<double> vals = {0.5, -2.0, 1.25, 3.0, 0.0, -0.5, 0.75};
      v = rng_.chance(0.1) ? rng_.pick(std::vector<double>{kInf, -kInf, kNaN}) : rng_.pick(vals);
    } else if (in.dtype == DataType::Int64) {
      v = double(rng_.pick(std::vector<int64_t>{0, 1, 2, -3, 5, 7}));
    } else {
      v = rng_.chance(0.5) ? 1.0 : 0.0;
    }
    in.scalarValues.push_back(v);
  }
  ir::Scalar* s = ir::IrBuilder::symbolic(in.dtype);
  c_.fusion->addInput(s);
  c_.inputs.push_back(in);
  scalar_inputs_.push_back(int(c_.inputs.size()) - 1);
  scalar_vals_.push_back(s);
  c_.features.insert("scalar-input");
  note(s->toString() + " = scalar input " + std::string(dataTypeName(in.dtype)));
}

void Generator::makeInputs() {
  static const double count_weights[] = {0.35, 0.4, 0.25};
  int64_t n = int64_t(rng_.weighted(count_weights)) + 1;
  n = std::min(n, opts_.maxTensorInputs);
  const bool static_sizes = rng_.chance(0.25);
  static const double rank_weights[] = {0.05, 0.15, 0.35, 0.3, 0.15};
  const auto base_rank = int64_t(rng_.weighted(rank_weights));
  auto draw_shape = [&](int64_t rank) {
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < rank; ++i) sizes.push_back(drawSize());
    auto product = [&] {
      int64_t p = 1;
      for (int64_t s : sizes) p *= std::max<int64_t>(1, s);
      return p;
    };
    while (product() > opts_.maxInputNumel) {
      auto it = std::max_element(sizes.begin(), sizes.end());
      *it = std::max<int64_t>(2, *it / 2);
    }
    return sizes;
  };
  auto new_classes = [&](const std::vector<int64_t>& sizes) {
    std::vector<int> classes;
    for (int64_t s : sizes) classes.push_back(newClass(s, false, std::max<int64_t>(2 * s + 3, 8)));
    return classes;
  };
  std::vector<int> base = new_classes(draw_shape(base_rank));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int> classes;
    if (i == 0 || rng_.chance(0.7)) {
      // Related: a right-aligned part of the base shape, some dims broadcast.
      auto rank = int64_t(base.size());
      if (i > 0 && rank > 0 && rng_.chance(0.4)) rank = rng_.range(0, rank);
      classes.assign(base.end() - rank, base.end());
      for (int& c : classes) {
        if (i > 0 && rng_.chance(0.15)) c = -1;
      }
    } else {
      classes = new_classes(draw_shape(int64_t(rng_.weighted(rank_weights))));
    }
    for (int& c : classes) {
      // A size-1 dim is a declared broadcast (TensorBuilder's 1) or a symbolic size bound to 1.
      if (c >= 0 && c_.classValues[size_t(root(c))] == 1 && (static_sizes || rng_.chance(0.5))) c = -1;
    }
    addTensorInput(classes, drawDtype(), static_sizes);
  }
  if (rng_.chance(0.2)) addScalarInput();
  for (const GenTensor& t : ts_) {
    for (const GenDim& d : t.dims) {
      if (d.kind != DimKind::Bcast && value(d) == 0) c_.features.insert("zero-size");
    }
  }
}

// ---- Pointwise builders ---------------------------------------------------------------------

int Generator::pointwise(std::string_view what, const std::vector<Opnd>& operands,
                         DataType compute, const Rule& rule, const Build& build) {
  std::vector<int> tensors;
  for (const Opnd& o : operands) {
    if (o.tensor >= 0) tensors.push_back(o.tensor);
  }
  if (tensors.empty()) return -1;
  auto shape = broadcastShape(tensors);
  if (!shape || !fits(*shape)) return -1;
  std::optional<Result> res = rule(compute);
  if (!res) return -1;
  double tol = res->tol;
  if (tol < 0) {
    tol = 1.0;
    for (const Opnd& o : operands) tol = std::max(tol, errScale(o));
  }
  if (tol > kMaxTolScale) return -1;
  if (res->keepsZeroSign && isFloatingType(compute)) {
    for (const Opnd& o : operands) res->num.zsign = res->num.zsign || o.num.zsign;
  } else {
    res->num.zsign = false;
  }
  // Reduction sizes: those of the operand with the largest.
  std::vector<int> red;
  for (int t : tensors) {
    if (redProduct(ts_[size_t(t)].red) > redProduct(red)) red = ts_[size_t(t)].red;
  }
  std::vector<Operand> args;
  for (const Opnd& o : operands) args.emplace_back(o.val);
  TensorView* out = build(args);
  commitShape(tensors);
  // Shapes again after unification (classes may have merged).
  shape = broadcastShape(tensors);
  std::set<int> distinct(tensors.begin(), tensors.end());
  if (distinct.size() >= 2) {
    c_.features.insert("fan-in");
    for (int t : distinct) {
      if (numel(ts_[size_t(t)].dims) < numel(*shape) || ts_[size_t(t)].dims.size() < shape->size())
        c_.features.insert("broadcast-against-larger");
    }
  }
  for (int t : tensors) ++ts_[size_t(t)].uses;
  int idx = adopt(out, *shape, res->num, red, tol);
  std::ostringstream os;
  os << name(idx) << " = " << what << "(";
  for (size_t i = 0; i < operands.size(); ++i) {
    os << (i ? ", " : "");
    if (operands[i].tensor >= 0) {
      os << name(operands[i].tensor);
    } else if (operands[i].isConst) {
      os << numText(operands[i].value);
    } else {
      os << operands[i].val->toString();
    }
  }
  os << ")";
  note(os.str());
  return idx;
}

int Generator::unaryOp(Un u, int t) {
  const GenTensor& x = ts_[size_t(t)];
  const DataType dt = x.tv->dtype();
  if (u == Un::Neg && dt == DataType::Bool) return -1;
  const bool floating = u <= Un::GeluTanh;
  std::array<Operand, 1> ops_arr{Operand(x.tv)};
  const DataType ct =
      ops::computeType(ops_arr, floating ? PromotionKind::IntToFloat : PromotionKind::Default);
  const Num in = x.num;
  auto rule = [&, u, in](DataType compute) -> std::optional<Result> {
    Result r;
    Num& o = r.num;
    o = in;
    o.product = false;
    const bool fl = isFloatingType(compute);
    const double lim = maxFinite(compute);
    switch (u) {
      case Un::Exp:
      case Un::Exp2: {
        if (!in.exact && in.mag > 4) return std::nullopt;
        double m = u == Un::Exp ? std::exp(std::min(in.mag, 1000.0))
                                : std::exp2(std::min(in.mag, 1000.0));
        o.exact = false;
        o.mag = m > lim ? kInf : m;
        o.special = in.special || m > lim;
        o.minAbs = std::isfinite(m) && m < 1e30 ? 1.0 / m : 0.0;
        return r;
      }
      case Un::Log:
      case Un::Log2:
        if (!in.exact) return std::nullopt;
        o = Num{false, 800.0, true, 0.0, false};
        return r;
      case Un::Sqrt:
        if (!in.exact) return std::nullopt;
        o = Num{true, std::sqrt(in.mag), true, std::sqrt(in.minAbs), false};
        return r;
      case Un::Rsqrt:
        if (!in.exact || in.zsign) return std::nullopt;
        o = Num{false, in.minAbs > 0 ? 1.0 / std::sqrt(in.minAbs) : kInf, true,
                std::isfinite(in.mag) && in.mag > 0 ? 1.0 / std::sqrt(in.mag) : 0.0, false};
        return r;
      case Un::Reciprocal:
        if (!in.exact || in.zsign) return std::nullopt;
        o = Num{true, in.minAbs > 0 ? 1.0 / in.minAbs : kInf, in.special || in.minAbs == 0,
                std::isfinite(in.mag) && in.mag > 0 ? 1.0 / in.mag : 0.0, false};
        return r;
      case Un::Sin:
      case Un::Cos:
        if (!in.exact && in.mag > 4) return std::nullopt;
        o = Num{false, 1.0, in.special, 0.0, false};
        return r;
      case Un::Tanh:
      case Un::Sigmoid:
      case Un::Erf:
        if (!in.exact && in.mag > 64) return std::nullopt;
        o = Num{false, 1.0, in.special, 0.0, false};
        return r;
      case Un::Silu:
        if (!in.exact && in.mag > 16) return std::nullopt;
        o = Num{false, in.mag, in.special, 0.0, false};
        return r;
      case Un::Gelu:
      case Un::GeluTanh:
        if (!in.exact && in.mag > 8) return std::nullopt;
        o = Num{false, in.mag, in.special || in.mag > 1e12, 0.0, false};
        return r;
      case Un::Neg:
        return r;
      case Un::Abs:
        r.keepsZeroSign = false;
        return r;
      case Un::Relu:
        o.minAbs = 0;
        r.keepsZeroSign = false;
        return r;
      case Un::Floor:
      case Un::Ceil:
      case Un::Round:
        if (fl && !in.exact) return std::nullopt;
        o.mag = in.mag + 1;
        o.minAbs = 0;
        return r;
      case Un::Sign:
        if (fl && !in.exact) return std::nullopt;
        o.mag = 1;
        o.minAbs = 0;
        return r;
      case Un::IsNan:
      case Un::IsInf:
        o = Num{};
        return r;
      case Un::LogicalNot:
        if (isFloatingType(dt) && !in.exact) return std::nullopt;
        o = Num{};
        return r;
    }
    return std::nullopt;
  };
  auto build = [u](const std::vector<Operand>& a) -> TensorView* {
    TensorView* x = a[0].tensor();
    switch (u) {
      case Un::Exp: return ops::exp(x);
      case Un::Exp2: return ops::exp2(x);
      case Un::Log: return ops::log(x);
      case Un::Log2: return ops::log2(x);
      case Un::Sqrt: return ops::sqrt(x);
      case Un::Rsqrt: return ops::rsqrt(x);
      case Un::Reciprocal: return ops::reciprocal(x);
      case Un::Sin: return ops::sin(x);
      case Un::Cos: return ops::cos(x);
      case Un::Tanh: return ops::tanh(x);
      case Un::Sigmoid: return ops::sigmoid(x);
      case Un::Silu: return ops::silu(x);
      case Un::Erf: return ops::erf(x);
      case Un::Gelu: return ops::gelu(x, ops::GeluApproximation::None);
      case Un::GeluTanh: return ops::gelu(x, ops::GeluApproximation::Tanh);
      case Un::Neg: return ops::neg(x);
      case Un::Abs: return ops::abs(x);
      case Un::Relu: return ops::relu(x);
      case Un::Floor: return ops::floor(x);
      case Un::Ceil: return ops::ceil(x);
      case Un::Round: return ops::round(x);
      case Un::Sign: return ops::sign(x);
      case Un::IsNan: return ops::isNan(x);
      case Un::IsInf: return ops::isInf(x);
      case Un::LogicalNot: return ops::logicalNot(x);
    }
    return nullptr;
  };
  return pointwise(unName(u), {tensorOpnd(t)}, ct, rule, build);
}

int Generator::binaryOp(Bin b, const Opnd& x, const Opnd& y) {
  if (x.tensor < 0 && y.tensor < 0) return -1;
  const bool logical = b == Bin::And || b == Bin::Or;
  const bool comparison = b >= Bin::Eq && b <= Bin::Ge;
  PromotionKind kind = b == Bin::Div ? PromotionKind::IntToFloat
                       : comparison  ? PromotionKind::Comparison
                                     : PromotionKind::Default;
  std::array<Operand, 2> ops_arr{Operand(x.val), Operand(y.val)};
  const DataType ct = logical ? DataType::Bool : ops::computeType(ops_arr, kind);
  const Num p = x.num, q = y.num;
  const double ex = errScale(x), ey = errScale(y);
  auto dtypeOf = [](const Opnd& o) { return o.val->dtype(); };
  const bool x_float = isFloatingType(dtypeOf(x)), y_float = isFloatingType(dtypeOf(y));
  auto rule = [&](DataType compute) -> std::optional<Result> {
    Result r;
    Num& o = r.num;
    const bool fl = isFloatingType(compute);
    const bool boolean = compute == DataType::Bool;
    const double lim = maxFinite(compute);
    o.exact = p.exact && q.exact;
    o.special = p.special || q.special;
    o.minAbs = 0;
    switch (b) {
      case Bin::Add:
      case Bin::Sub:
        o.mag = p.mag + q.mag;
        // a * b + c may be contracted to one FMA (NVRTC does by default): not bit-exact.
        if (p.product || q.product) o.exact = false;
        if (fl) {
          if (!o.exact && o.mag > kInexactMag) return std::nullopt;
          if (o.mag > lim) o.special = true;
        } else if (!boolean && o.mag > intLimit(compute)) {
          return std::nullopt;
        }
        break;
      case Bin::Mul:
        o.mag = mulBound(p.mag, q.mag);
        o.minAbs = p.minAbs * q.minAbs;
        o.product = true;
        if (fl) {
          if (!o.exact && o.mag > kInexactMag) return std::nullopt;
          if (o.mag > lim) o.special = true;
          if ((p.special && q.mag == 0) || (q.special && p.mag == 0)) o.special = true;
        } else if (!boolean && o.mag > intLimit(compute)) {
          return std::nullopt;
        }
        r.tol = std::max({1.0, ex * std::max(1.0, q.mag), ey * std::max(1.0, p.mag)});
        break;
      case Bin::Div: {
        // Always floating (true division).
        if (y.isConst) {
          double v = std::fabs(y.value);
          if (!p.exact && !(v >= 1.0 / 16)) return std::nullopt;
          o.mag = (v > 0 && std::isfinite(v)) ? p.mag / v : (v == 0 ? kInf : 0.0);
          o.special = o.special || v == 0 || !std::isfinite(o.mag);
          o.minAbs = std::isfinite(v) && v > 0 ? p.minAbs / v : 0.0;
          r.tol = std::max(1.0, ex / std::min(1.0, std::max(v, 1e-300)));
        } else {
          // A denominator must be exact or bounded away from 0 (else errors are amplified).
          bool safe_den = q.minAbs >= 0.5;
          if (q.zsign && !safe_den) return std::nullopt;
          if (!q.exact && !safe_den) return std::nullopt;
          if (!p.exact && !safe_den) return std::nullopt;
          o.mag = q.minAbs > 0 ? p.mag / q.minAbs : kInf;
          o.special = o.special || q.minAbs == 0;
          o.minAbs = std::isfinite(q.mag) && q.mag > 0 ? p.minAbs / q.mag : 0.0;
          r.tol = std::max({1.0, ex / std::min(1.0, std::max(q.minAbs, 1e-300)),
                            safe_den ? ey * p.mag / (q.minAbs * q.minAbs) : 0.0});
        }
        if (r.tol > kMaxTolScale) return std::nullopt;
        break;
      }
      case Bin::Pow:
        if (fl) {
          // Small constant integer exponents keep errors small; any other power must be exact.
          bool small_exp = y.isConst && (y.value == 0 || y.value == 1 || y.value == 2 || y.value == 3);
          if ((p.zsign || q.zsign) && !small_exp) return std::nullopt;
          if (!(p.exact && q.exact) && !(small_exp && p.mag <= 2)) return std::nullopt;
          o.exact = false;
          o.mag = small_exp ? std::pow(std::max(p.mag, 1.0), y.value) : kInf;
          o.special = o.special || !small_exp || o.mag > lim;
        } else if (boolean) {
          o.mag = 1;
        } else {
          // Integer powers: a constant exponent 0..3 whose result stays in range (kernels compute
          // them through powf/pow, exact only below 2^24).
          if (!y.isConst || y.value < 0 || y.value > 3 || x.tensor < 0) return std::nullopt;
          o.mag = std::pow(std::max(p.mag, 1.0), y.value);
          if (o.mag > 16777216.0) return std::nullopt;
        }
        break;
      case Bin::Fmod:
        if (fl) {
          if (!(p.exact && q.exact)) return std::nullopt;
          o.mag = p.mag;
          o.special = true;
        } else {
          // Integer remainders are defined for every divisor (docs/ops.md: by 0 gives 0), so a
          // tensor divisor, zeros included, is fine: the result is no larger than the dividend.
          if (boolean || x.tensor < 0) return std::nullopt;
          if (y.isConst) {
            if (std::fabs(y.value) > intLimit(compute)) return std::nullopt;
            o.mag = y.value == 0 ? p.mag : std::min(p.mag, std::fabs(y.value));
            if (y.value == 0) c_.features.insert("int-remainder-by-zero");
          } else {
            o.mag = p.mag;
            c_.features.insert("int-remainder-by-tensor");
          }
        }
        break;
      case Bin::Maximum:
      case Bin::Minimum:
        o.mag = std::max(p.mag, q.mag);
        if (boolean) o.mag = 1;
        break;
      case Bin::Eq:
      case Bin::Ne:
      case Bin::Lt:
      case Bin::Le:
      case Bin::Gt:
      case Bin::Ge:
        if (!(p.exact && q.exact)) return std::nullopt;
        o = Num{};
        r.tol = 1;
        break;
      case Bin::And:
      case Bin::Or:
        if ((x_float && !p.exact) || (y_float && !q.exact)) return std::nullopt;
        o = Num{};
        r.tol = 1;
        break;
    }
    if (boolean && !comparison && !logical) {
      o.mag = 1;
      o.minAbs = 0;
    }
    return r;
  };
  auto build = [b](const std::vector<Operand>& a) -> TensorView* {
    switch (b) {
      case Bin::Add: return ops::add(a[0], a[1]);
      case Bin::Sub: return ops::sub(a[0], a[1]);
      case Bin::Mul: return ops::mul(a[0], a[1]);
      case Bin::Div: return ops::div(a[0], a[1]);
      case Bin::Pow: return ops::pow(a[0], a[1]);
      case Bin::Fmod: return ops::fmod(a[0], a[1]);
      case Bin::Maximum: return ops::maximum(a[0], a[1]);
      case Bin::Minimum: return ops::minimum(a[0], a[1]);
      case Bin::Eq: return ops::eq(a[0], a[1]);
      case Bin::Ne: return ops::ne(a[0], a[1]);
      case Bin::Lt: return ops::lt(a[0], a[1]);
      case Bin::Le: return ops::le(a[0], a[1]);
      case Bin::Gt: return ops::gt(a[0], a[1]);
      case Bin::Ge: return ops::ge(a[0], a[1]);
      case Bin::And: return ops::logicalAnd(a[0], a[1]);
      case Bin::Or: return ops::logicalOr(a[0], a[1]);
    }
    return nullptr;
  };
  return pointwise(binName(b), {x, y}, ct, rule, build);
}

int Generator::whereOp(const Opnd& cond, const Opnd& a, const Opnd& b) {
  if (cond.val->dtype() != DataType::Bool) return -1;
  std::array<Operand, 2> ops_arr{Operand(a.val), Operand(b.val)};
  const DataType ct = ops::computeType(ops_arr, PromotionKind::Default);
  const Num p = a.num, q = b.num;
  auto rule = [&](DataType compute) -> std::optional<Result> {
    Result r;
    r.num.exact = p.exact && q.exact;
    r.num.mag = std::max(p.mag, q.mag);
    r.num.special = p.special || q.special;
    r.num.minAbs = std::min(p.minAbs, q.minAbs);
    if (!r.num.exact && r.num.mag > kInexactMag) return std::nullopt;
    if (compute == DataType::Bool) r.num.mag = 1;
    return r;
  };
  auto build = [](const std::vector<Operand>& o) { return ops::where(o[0], o[1], o[2]); };
  return pointwise("where", {cond, a, b}, ct, rule, build);
}

int Generator::clampOp(const Opnd& x, const Opnd& lo, const Opnd& hi) {
  std::array<Operand, 3> ops_arr{Operand(x.val), Operand(lo.val), Operand(hi.val)};
  const DataType ct = ops::computeType(ops_arr, PromotionKind::Default);
  const Num p = x.num, l = lo.num, h = hi.num;
  const bool const_bounds = lo.isConst && hi.isConst;
  const double lv = lo.value, hv = hi.value;
  auto rule = [&](DataType compute) -> std::optional<Result> {
    Result r;
    r.num.exact = p.exact && l.exact && h.exact;
    r.num.special = p.special || l.special || h.special;
    r.num.mag = std::max(l.mag, h.mag);
    if (l.special || h.special) r.num.mag = std::max(r.num.mag, p.mag);
    if (!r.num.exact && r.num.mag > kInexactMag) return std::nullopt;
    if (const_bounds && lv > 0 && lv <= hv && !isIntegralType(compute)) r.num.minAbs = lv;
    if (const_bounds && isIntegralType(compute) && lv >= 1 && lv <= hv) r.num.minAbs = lv;
    if (compute == DataType::Bool) r.num.mag = 1;
    return r;
  };
  auto build = [](const std::vector<Operand>& o) { return ops::clamp(o[0], o[1], o[2]); };
  return pointwise("clamp", {x, lo, hi}, ct, rule, build);
}

int Generator::lerpOp(const Opnd& a, const Opnd& b, const Opnd& w) {
  std::array<Operand, 3> ops_arr{Operand(a.val), Operand(b.val), Operand(w.val)};
  const DataType ct = ops::computeType(ops_arr, PromotionKind::IntToFloat);
  const Num p = a.num, q = b.num, s = w.num;
  const double e = std::max({errScale(a), errScale(b), errScale(w)});
  auto rule = [&](DataType) -> std::optional<Result> {
    if (p.mag > 8 || q.mag > 8 || s.mag > 2) return std::nullopt;
    if (!s.exact && (p.mag + q.mag) > 8) return std::nullopt;
    Result r;
    r.num.exact = false;
    r.num.mag = p.mag + s.mag * (p.mag + q.mag);
    r.num.special = p.special || q.special || s.special;
    r.tol = std::max(1.0, e * std::max(1.0, s.mag) * 2);
    return r;
  };
  auto build = [](const std::vector<Operand>& o) { return ops::lerp(o[0], o[1], o[2]); };
  return pointwise("lerp", {a, b, w}, ct, rule, build);
}

// What is known of values `in` of dtype `from` once cast to `to`; nullopt when such a cast is not
// generated (see docs/testing.md). A cast to the same dtype is no cast.
std::optional<Num> castNum(const Num& in, DataType from, DataType to) {
  if (from == to) return in;
  Num o = in;
  o.product = false;
  if (isFloatingType(from) && !isFloatingType(to)) {
    // Truncation and != 0 are discontinuous; out-of-range and NaN conversions are undefined.
    if (!in.exact) return std::nullopt;
    if (isIntegralType(to) && (in.special || !(in.mag < intLimit(to)))) return std::nullopt;
  }
  if (from == DataType::Int64 && to == DataType::Int32 && !(in.mag <= kInt32Limit)) {
    return std::nullopt;
  }
  if (isReducedPrecision(to) &&
      (from == DataType::Float64 || (!isFloatingType(from) && !(in.mag <= 16777216.0)))) {
    // Kernels may convert through Float32 (the host emulation does): two roundings, which the
    // reference's direct conversion does not have.
    o.exact = false;
  }
  if (to == DataType::Bool) {
    o = Num{};
  } else if (isIntegralType(to)) {
    o.mag = std::min(in.mag, intLimit(to));
    o.zsign = false;
  } else if (in.mag > maxFinite(to)) {
    o.special = true;
  }
  if (isFloatingType(to) && !o.exact && in.mag > kInexactMag) return std::nullopt;
  return o;
}

int Generator::castOp(int t, DataType to) {
  GenTensor x = ts_[size_t(t)];
  const DataType from = x.tv->dtype();
  if (from == to) return -1;
  std::optional<Num> cast_num = castNum(x.num, from, to);
  if (!cast_num) return -1;
  const Num o = *cast_num;
  TensorView* out = ops::cast(x.tv, to);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, x.dims, o, x.red, x.tol);
  note(name(idx) + " = cast(" + name(t) + ", " + std::string(dataTypeName(to)) + ")");
  return idx;
}

int Generator::bounded(int t, double limit, double bound, bool clamp_inf) {
  const GenTensor& x = ts_[size_t(t)];
  if (x.num.mag <= limit && !(clamp_inf && x.num.special)) return t;
  DataType dt = x.tv->dtype();
  Opnd lo = constantOfCategory(dt, -bound), hi = constantOfCategory(dt, bound);
  return clampOp(tensorOpnd(t), lo, hi);
}

int Generator::broadcastOp(int t, const std::vector<bool>& flags) {
  const GenTensor& x = ts_[size_t(t)];
  std::vector<GenDim> dims;
  size_t next = 0;
  for (bool f : flags) dims.push_back(f ? GenDim{DimKind::Bcast, -1} : x.dims[next++]);
  if (next != x.dims.size()) return -1;
  TensorView* out = ops::broadcast(x.tv, flags);
  if (out == x.tv) return t;
  ++ts_[size_t(t)].uses;
  GenTensor copy = ts_[size_t(t)];
  int idx = adopt(out, dims, copy.num, copy.red, copy.tol);
  std::string f;
  for (bool b : flags) f += b ? "B" : "-";
  note(name(idx) + " = broadcast(" + name(t) + ", " + f + ")");
  return idx;
}

// ---- Reductions -------------------------------------------------------------------------------

std::vector<int64_t> Generator::randomAxes(int64_t rank, bool allow_all) {
  if (rank == 0) return {};
  if (allow_all && rng_.chance(0.12)) return {};
  std::vector<int64_t> axes;
  double r = rng_.uniform();
  if (r < 0.45) {
    axes.push_back(rank - 1);
  } else if (r < 0.65) {
    axes.push_back(0);
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (rng_.chance(0.5)) axes.push_back(d);
    }
    if (axes.empty()) axes.push_back(int64_t(rng_.below(uint64_t(rank))));
  }
  return axes;
}

std::vector<int64_t> Generator::spell(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out = axes;
  if (rng_.chance(0.2)) {
    for (int64_t& a : out) a -= rank;
  }
  if (out.size() > 1 && rng_.chance(0.3)) std::reverse(out.begin(), out.end());
  return out;
}

int Generator::reduceOp(Red r, int t, std::vector<int64_t> axes, bool keepdim) {
  {
    const GenTensor& x = ts_[size_t(t)];
    const auto rank = int64_t(x.dims.size());
    if (rank == 0 && !axes.empty()) return -1;
    std::vector<bool> reduced(size_t(rank), axes.empty());
    for (int64_t a : axes) reduced[size_t(a)] = true;
    double n_max = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[size_t(d)]) n_max *= double(maxValue(x.dims[size_t(d)]));
    }
    const DataType dt = x.tv->dtype();
    const bool float_like = isFloatingType(dt) || r == Red::Mean;
    // Bound the input first where the reduction needs it.
    if ((r == Red::Sum || r == Red::Mean) && float_like) {
      t = bounded(t, kReduceMag, rng_.chance(0.5) ? 4.0 : 1.0);
    } else if (r == Red::Sum && !float_like && dt != DataType::Bool) {
      if (x.num.mag * n_max > kInt64Limit) t = bounded(t, 0, 7.0);
    } else if (r == Red::Prod) {
      if (float_like) {
        // Infinities too: inf times a product that underflows in Float32 (but not in the
        // reference's Float64) is NaN in one and inf in the other.
        t = bounded(t, 1.0, 1.0, /*clamp_inf=*/true);
      } else if (dt != DataType::Bool && std::pow(std::max(x.num.mag, 1.0), n_max) > kInt64Limit) {
        t = bounded(t, 1.0, 1.0);
      }
    }
    if (t < 0) return -1;
  }
  const GenTensor& x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t a : axes) reduced[size_t(a)] = true;
  std::vector<GenDim> dims;
  std::vector<int> red = x.red;
  double n_max = 1;
  bool may_be_empty = false;
  bool outer = rank >= 2 && reduced[0];
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (!reduced[size_t(d)]) {
      dims.push_back(g);
      continue;
    }
    if (keepdim) dims.push_back({DimKind::Bcast, -1});
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
    n_max *= double(maxValue(g));
    may_be_empty = may_be_empty || mayBeZero(g);
  }
  const DataType dt = x.tv->dtype();
  Num o = x.num;
  o.product = false;
  o.minAbs = 0;
  double tol = std::max(errScale(tensorOpnd(t)), std::max(1.0, std::min(x.num.mag, kReduceMag)));
  switch (r) {
    case Red::Sum:
      if (isFloatingType(dt)) {
        o.exact = false;
        o.mag = n_max * x.num.mag;
      } else {
        o.exact = true;
        o.mag = n_max * (dt == DataType::Bool ? 1.0 : x.num.mag);
        tol = 1;
      }
      break;
    case Red::Mean:
      o.exact = false;
      o.special = x.num.special || may_be_empty;
      break;
    case Red::Prod:
      if (isFloatingType(dt)) {
        o.exact = false;
        o.mag = 1;
      } else {
        o.exact = true;
        o.mag = dt == DataType::Bool ? 1.0 : std::pow(std::max(x.num.mag, 1.0), n_max);
        tol = 1;
      }
      break;
    case Red::Max:
    case Red::Min:
      tol = std::max(1.0, errScale(tensorOpnd(t)));
      if (isFloatingType(dt)) o.zsign = true;
      if (may_be_empty) {
        if (isFloatingType(dt)) {
          o.special = true;
        } else if (dt != DataType::Bool) {
          o.mag = dt == DataType::Int32 ? 0x1p31 : 0x1p63;
        }
      }
      break;
  }
  if (tol > kMaxTolScale) return -1;
  std::vector<int64_t> spelled = spell(axes, rank);
  TensorView* out = nullptr;
  // A third of the floating sums (not keepdim) start at the init 1.5 instead of 0: the
  // reference adds it once, kernels must too (reduction_inits.h). Chosen without a random draw,
  // so the other seeds' fusions stay as they were.
  const bool with_init = r == Red::Sum && isFloatingType(dt) && !keepdim && ts_.size() % 3 == 1;
  if (with_init) o.mag += 1.5;
  switch (r) {
    case Red::Sum: out = ops::sum(x.tv, spelled, keepdim); break;
    case Red::Prod: out = ops::prod(x.tv, spelled, keepdim); break;
    case Red::Max: out = ops::max(x.tv, spelled, keepdim); break;
    case Red::Min: out = ops::min(x.tv, spelled, keepdim); break;
    case Red::Mean: out = ops::mean(x.tv, spelled, keepdim); break;
  }
  if (with_init) {
    if (auto* sum = out->definition()->dynCast<ir::ReductionOp>()) {
      ir::TensorView* in = sum->in();
      c_.fusion->removeExpr(sum);
      ir::IrBuilder::create<ir::ReductionOp>(
          ir::ReductionOpType::Sum, ir::IrBuilder::constant(ir::ScalarValue(1.5), out->dtype()),
          out, in);
      c_.features.insert("reduction-init");
    }
  }
  ++ts_[size_t(t)].uses;
  if (outer) c_.features.insert("outer-reduction");
  if (isReducedPrecision(dt)) c_.features.insert("16-bit-reduction");
  if (rank > 0) c_.features.insert("reduction");
  int idx = adopt(out, dims, o, red, tol);
  note(name(idx) + " = " + redName(r) + "(" + name(t) + ", " + shapeText(spelled) +
       (keepdim ? ", keepdim" : "") + ")");
  return idx;
}

// ---- Families -------------------------------------------------------------------------------

bool Generator::famUnaryFloat() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::Exp,  Un::Exp2, Un::Log,     Un::Log2,    Un::Sqrt,
                                Un::Rsqrt, Un::Reciprocal, Un::Sin, Un::Cos, Un::Tanh,
                                Un::Sigmoid, Un::Silu, Un::Erf, Un::Gelu, Un::GeluTanh};
  Un u = ops_list[rng_.below(std::size(ops_list))];
  return unaryOp(u, t) >= 0;
}

bool Generator::famUnaryKeep() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::Neg,  Un::Abs,   Un::Relu, Un::Floor,
                                Un::Ceil, Un::Round, Un::Sign};
  return unaryOp(ops_list[rng_.below(std::size(ops_list))], t) >= 0;
}

bool Generator::famPredicate() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::IsNan, Un::IsInf, Un::LogicalNot};
  return unaryOp(ops_list[rng_.below(std::size(ops_list))], t) >= 0;
}

bool Generator::famBinary() {
  int a = pick();
  if (a < 0) return false;
  static const Bin ops_list[] = {Bin::Add, Bin::Sub, Bin::Mul,     Bin::Div,
                                 Bin::Pow, Bin::Fmod, Bin::Maximum, Bin::Minimum};
  static const double weights[] = {4, 3, 4, 2, 1, 1, 2, 2};
  Bin b = ops_list[rng_.weighted(weights)];
  Opnd x = tensorOpnd(a), y;
  int p = rng_.chance(0.35) ? -1 : partner(a);
  y = p >= 0 ? tensorOpnd(p) : randomScalar(ts_[size_t(a)].tv->dtype(), false);
  if (y.tensor < 0 && rng_.chance(0.2)) std::swap(x, y);
  return binaryOp(b, x, y) >= 0;
}

bool Generator::famSpecialScalar() {
  int a = pick();
  if (a < 0) return false;
  static const Bin ops_list[] = {Bin::Add, Bin::Sub, Bin::Mul, Bin::Div, Bin::Maximum,
                                 Bin::Minimum, Bin::Eq, Bin::Lt, Bin::Ge, Bin::Ne};
  Bin b = ops_list[rng_.below(std::size(ops_list))];
  Opnd y = randomScalar(ts_[size_t(a)].tv->dtype(), true);
  Opnd x = tensorOpnd(a);
  if (rng_.chance(0.25)) std::swap(x, y);
  int r = binaryOp(b, x, y);
  if (r >= 0) c_.features.insert("special-scalar");
  return r >= 0;
}

bool Generator::famCompare() {
  auto exact = [](const GenTensor& t) { return t.num.exact; };
  int a = pick(exact);
  if (a < 0) return false;
  static const Bin ops_list[] = {Bin::Eq, Bin::Ne, Bin::Lt, Bin::Le, Bin::Gt, Bin::Ge};
  Bin b = ops_list[rng_.below(std::size(ops_list))];
  int p = rng_.chance(0.4) ? -1 : partner(a, exact);
  Opnd y = p >= 0 ? tensorOpnd(p) : randomScalar(ts_[size_t(a)].tv->dtype(), true);
  Opnd x = tensorOpnd(a);
  if (y.tensor < 0 && rng_.chance(0.2)) std::swap(x, y);
  return binaryOp(b, x, y) >= 0;
}

bool Generator::famLogical() {
  auto ok = [](const GenTensor& t) { return t.num.exact; };
  int a = pick(ok);
  if (a < 0) return false;
  int p = rng_.chance(0.3) ? -1 : partner(a, ok);
  Opnd y = p >= 0 ? tensorOpnd(p) : constant(rng_.chance(0.5));
  return binaryOp(rng_.chance(0.5) ? Bin::And : Bin::Or, tensorOpnd(a), y) >= 0;
}

bool Generator::famWhere() {
  int c = pick([](const GenTensor& t) { return t.tv->dtype() == DataType::Bool; });
  if (c < 0) {
    // Make a condition first.
    int a = pick([](const GenTensor& t) { return t.num.exact; });
    if (a < 0) return false;
    c = binaryOp(rng_.chance(0.5) ? Bin::Gt : Bin::Le, tensorOpnd(a), constant(0.0));
    if (c < 0) return false;
  }
  int a = rng_.chance(0.25) ? -1 : partner(c);
  int b = rng_.chance(0.35) ? -1 : partner(c);
  DataType dt = a >= 0 ? ts_[size_t(a)].tv->dtype() : DataType::Float32;
  Opnd x = a >= 0 ? tensorOpnd(a) : randomScalar(dt, true);
  Opnd y = b >= 0 ? tensorOpnd(b) : randomScalar(dt, true);
  return whereOp(tensorOpnd(c), x, y) >= 0;
}

bool Generator::famClamp() {
  int t = pick();
  if (t < 0) return false;
  DataType dt = ts_[size_t(t)].tv->dtype();
  if (dt == DataType::Bool) return false;
  Opnd lo, hi;
  if (rng_.chance(0.2)) {
    int p = partner(t);
    int q = partner(t);
    if (p < 0 || q < 0) return false;
    lo = tensorOpnd(p);
    hi = tensorOpnd(q);
  } else {
    static const std::vector<std::pair<double, double>> bounds = {
        {-1, 1}, {0, 4}, {-0.5, 0.25}, {0.5, 2}, {-3, 7}, {2, -2}, {-100, 100}, {1, 8}};
    auto [l, h] = rng_.pick(bounds);
    lo = constantOfCategory(dt, l);
    hi = constantOfCategory(dt, h);
  }
  return clampOp(tensorOpnd(t), lo, hi) >= 0;
}

bool Generator::famLerp() {
  int a = pick([](const GenTensor& t) { return t.num.mag <= 8; });
  if (a < 0) return false;
  int b = rng_.chance(0.3) ? -1 : partner(a, [](const GenTensor& t) { return t.num.mag <= 8; });
  Opnd y = b >= 0 ? tensorOpnd(b) : constant(rng_.pick(std::vector<double>{1.0, -0.5, 2.0}));
  Opnd w;
  int c = rng_.chance(0.3) ? partner(a, [](const GenTensor& t) { return t.num.mag <= 2; }) : -1;
  w = c >= 0 ? tensorOpnd(c) : constant(rng_.pick(std::vector<double>{0.25, 0.5, 0.75, 1.5, -0.5}));
  return lerpOp(tensorOpnd(a), y, w) >= 0;
}

bool Generator::famCast() {
  int t = pick();
  if (t < 0) return false;
  static const DataType types[] = {DataType::Bool,    DataType::Int32,   DataType::Int64,
                                   DataType::Float16, DataType::BFloat16, DataType::Float32,
                                   DataType::Float64};
  return castOp(t, types[rng_.below(std::size(types))]) >= 0;
}

bool Generator::famBroadcast() {
  int t = pick([](const GenTensor& g) { return g.dims.size() < 4; });
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  if (rng_.chance(0.5)) {
    // unsqueeze, with a negative position sometimes.
    int64_t d = rng_.range(0, rank);
    std::vector<bool> flags(size_t(rank + 1), false);
    flags[size_t(d)] = true;
    const GenTensor& x = ts_[size_t(t)];
    std::vector<GenDim> dims = x.dims;
    dims.insert(dims.begin() + d, GenDim{DimKind::Bcast, -1});
    int64_t spelled = rng_.chance(0.3) ? d - (rank + 1) : d;
    TensorView* out = ops::unsqueeze(x.tv, spelled);
    ++ts_[size_t(t)].uses;
    GenTensor copy = ts_[size_t(t)];
    int idx = adopt(out, dims, copy.num, copy.red, copy.tol);
    note(name(idx) + " = unsqueeze(" + name(t) + ", " + std::to_string(spelled) + ")");
    return true;
  }
  int64_t add = rank <= 2 && rng_.chance(0.4) ? 2 : 1;
  std::vector<bool> flags(size_t(rank + add), false);
  std::vector<int64_t> pos = rng_.permutation(rank + add);
  for (int64_t i = 0; i < add; ++i) flags[size_t(pos[size_t(i)])] = true;
  return broadcastOp(t, flags) >= 0;
}

bool Generator::famBroadcastInDim() {
  int t = pick([](const GenTensor& g) { return g.dims.size() < 4; });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  const int64_t out_rank = rng_.range(std::max<int64_t>(rank, 1), 4);
  // Increasing positions for x's dims.
  std::vector<int64_t> all = rng_.permutation(out_rank);
  std::vector<int64_t> pos(all.begin(), all.begin() + rank);
  std::sort(pos.begin(), pos.end());
  std::vector<int64_t> shape(static_cast<size_t>(out_rank));
  std::vector<GenDim> dims(static_cast<size_t>(out_rank));
  std::vector<bool> mapped(size_t(out_rank), false);
  for (int64_t i = 0; i < rank; ++i) mapped[size_t(pos[size_t(i)])] = true;
  auto stretch_size = [&]() -> int64_t {
    // Often the size of a dim some tensor already has, so that the result combines.
    if (rng_.chance(0.6)) {
      const GenTensor& other = ts_[rng_.below(ts_.size())];
      for (const GenDim& d : other.dims) {
        if (d.kind != DimKind::Bcast && value(d) > 1 && rng_.chance(0.5)) return value(d);
      }
    }
    return rng_.range(1, 12);
  };
  int64_t j = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (mapped[size_t(d)]) {
      const GenDim& g = x.dims[size_t(j++)];
      if (g.kind == DimKind::Bcast && rng_.chance(0.5)) {
        int64_t s = stretch_size();
        shape[size_t(d)] = s;
        dims[size_t(d)] = s == 1 ? GenDim{DimKind::Bcast, -1}
                                 : GenDim{DimKind::Expanded, newClass(s, true, s)};
      } else {
        shape[size_t(d)] = pinned(g) ? value(g) : -1;
        dims[size_t(d)] = g;
      }
    } else {
      int64_t s = rng_.chance(0.2) ? 1 : stretch_size();
      shape[size_t(d)] = s;
      dims[size_t(d)] = s == 1 ? GenDim{DimKind::Bcast, -1}
                               : GenDim{DimKind::Expanded, newClass(s, true, s)};
    }
  }
  if (!fits(dims)) return false;
  TensorView* out = ops::broadcastInDim(x.tv, shape, pos);
  if (out == x.tv) return false;
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = broadcast_in_dim(" + name(t) + ", " + shapeText(shape) + ", " +
       shapeText(pos) + ")");
  return true;
}

bool Generator::famExpand() {
  int t = pick([](const GenTensor& g) {
    return g.dims.size() < 4 || std::any_of(g.dims.begin(), g.dims.end(), [](const GenDim& d) {
             return d.kind == DimKind::Bcast;
           });
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  int64_t lead = rank < 4 && rng_.chance(0.3) ? 1 : 0;
  std::vector<int64_t> sizes;
  std::vector<GenDim> dims;
  bool any = false;
  auto size_for = [&](int64_t pos_from_right) -> int64_t {
    // Prefer a size some other tensor has at this (right-aligned) position.
    std::vector<int64_t> cands;
    for (const GenTensor& g : ts_) {
      auto r = int64_t(g.dims.size());
      if (pos_from_right < r) {
        const GenDim& d = g.dims[size_t(r - 1 - pos_from_right)];
        if (d.kind != DimKind::Bcast && value(d) > 1) cands.push_back(value(d));
      }
    }
    if (!cands.empty() && rng_.chance(0.7)) return rng_.pick(cands);
    return rng_.range(2, 16);
  };
  for (int64_t i = 0; i < lead; ++i) {
    int64_t s = size_for(rank + lead - 1 - i);
    sizes.push_back(s);
    dims.push_back({DimKind::Expanded, newClass(s, true, s)});
    any = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind == DimKind::Bcast && rng_.chance(0.7)) {
      int64_t s = size_for(rank - 1 - d);
      sizes.push_back(s);
      dims.push_back({DimKind::Expanded, newClass(s, true, s)});
      any = true;
    } else {
      sizes.push_back(-1);
      dims.push_back(g);
    }
  }
  if (!any || !fits(dims)) return false;
  TensorView* out = ops::expand(x.tv, sizes);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = expand(" + name(t) + ", " + shapeText(sizes) + ")");
  c_.features.insert("expand");
  return true;
}

bool Generator::famSqueeze() {
  // Size 1 in the IR: a broadcast, or an iteration dim of constant extent 1.
  auto squeezable = [](const GenTensor& g, size_t d) {
    ir::IterDomain* id = ir::TensorDomain::noReductions(g.tv->logical())[d];
    return !id->hasExpandedExtent() && id->logicalExtent()->constInt() == 1;
  };
  int t = pick([&](const GenTensor& g) {
    for (size_t d = 0; d < g.dims.size(); ++d) {
      if (squeezable(g, d)) return true;
    }
    return false;
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<int64_t> which;
  std::vector<GenDim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (squeezable(x, size_t(d)) && (which.empty() || rng_.chance(0.5))) {
      which.push_back(rng_.chance(0.2) ? d - rank : d);
    } else {
      dims.push_back(x.dims[size_t(d)]);
    }
  }
  TensorView* out = ops::squeeze(x.tv, which);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = squeeze(" + name(t) + ", " + shapeText(which) + ")");
  return true;
}

bool Generator::famPermute() {
  int t = pick([](const GenTensor& g) { return g.dims.size() >= 2; });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<int64_t> perm;
  TensorView* out;
  std::string text;
  if (rng_.chance(0.4)) {
    int64_t a = int64_t(rng_.below(uint64_t(rank)));
    int64_t b = (a + 1 + int64_t(rng_.below(uint64_t(rank - 1)))) % rank;
    perm.resize(size_t(rank));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    std::swap(perm[size_t(a)], perm[size_t(b)]);
    int64_t sa = rng_.chance(0.3) ? a - rank : a;
    out = ops::transpose(x.tv, sa, b);
    text = "transpose(" + name(t) + ", " + std::to_string(sa) + ", " + std::to_string(b) + ")";
  } else {
    perm = rng_.permutation(rank);
    out = ops::permute(x.tv, perm);
    text = "permute(" + name(t) + ", " + shapeText(perm) + ")";
  }
  std::vector<GenDim> dims;
  for (int64_t p : perm) dims.push_back(x.dims[size_t(p)]);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = " + text);
  c_.features.insert("permute");
  return true;
}

bool Generator::famSet() {
  int t = pick();
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  TensorView* out = ops::set(x.tv);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, x.dims, x.num, x.red, x.tol);
  note(name(idx) + " = set(" + name(t) + ")");
  return true;
}

bool Generator::famReshape() {
  // reshape needs constant extents in the IR (a pinned class is not enough: the tensor's own
  // extent may still be symbolic).
  int t = pick([this](const GenTensor& g) {
    for (const GenDim& d : g.dims) {
      if (d.kind == DimKind::Expanded) return false;
    }
    for (ir::IterDomain* id : ir::TensorDomain::noReductions(g.tv->logical())) {
      if (!id->logicalExtent()->constInt().has_value()) return false;
    }
    return numel(g.dims) > 0;
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  int64_t numel_x = numel(x.dims);
  // Prime factors of the element count, dealt into 1-4 dims, with some 1s.
  std::vector<int64_t> primes;
  for (int64_t n = numel_x, p = 2; n > 1;) {
    if (p * p > n) {
      primes.push_back(n);
      break;
    }
    if (n % p == 0) {
      primes.push_back(p);
      n /= p;
    } else {
      ++p;
    }
  }
  int64_t rank = rng_.range(1, 4);
  std::vector<int64_t> sizes(size_t(rank), 1);
  for (int64_t p : primes) sizes[rng_.below(uint64_t(rank))] *= p;
  if (rank < 4 && rng_.chance(0.2)) sizes.insert(sizes.begin() + int64_t(rng_.below(uint64_t(rank + 1))), 1);
  std::vector<int64_t> spelled = sizes;
  if (rng_.chance(0.3)) spelled[rng_.below(spelled.size())] = -1;
  std::vector<GenDim> dims;
  for (int64_t s : sizes) {
    dims.push_back(s == 1 ? GenDim{DimKind::Bcast, -1} : GenDim{DimKind::Iter, newClass(s, true, s)});
  }
  TensorView* out = ops::reshape(x.tv, spelled);
  // Sizes equal to x's give a copy (a dim of constant extent 1 stays an Iteration dim).
  if (out->definition() != nullptr && out->definition()->isA<ir::LoadStoreOp>()) dims = x.dims;
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = reshape(" + name(t) + ", " + shapeText(spelled) + ")");
  c_.features.insert("reshape");
  return true;
}

bool Generator::famReduce() {
  int t = -1;
  if (rng_.chance(0.3)) {
    t = pick([](const GenTensor& g) { return isReducedPrecision(g.tv->dtype()); });
  }
  if (t < 0) t = pick();
  if (t < 0) return false;
  static const Red kinds[] = {Red::Sum, Red::Prod, Red::Max, Red::Min, Red::Mean};
  static const double weights[] = {4, 1, 2, 2, 2};
  Red r = kinds[rng_.weighted(weights)];
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  return reduceOp(r, t, randomAxes(rank, true), rng_.chance(0.35)) >= 0;
}

bool Generator::famWelford() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  t = bounded(t, 4.0, 4.0);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<int64_t> axes = randomAxes(rank, false);
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : axes) reduced[size_t(a)] = true;
  double n_max = 1;
  bool may_be_empty = false;
  std::vector<int> red = x.red;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[size_t(d)]) continue;
    const GenDim& g = x.dims[size_t(d)];
    n_max *= double(maxValue(g));
    may_be_empty = may_be_empty || mayBeZero(g);
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
  }
  const double m = x.num.mag;
  const double tol = std::max({errScale(tensorOpnd(t)) * 2 * std::max(1.0, m), m * m, 1.0});
  if (tol > kMaxTolScale) return false;
  auto dims_for = [&](bool keepdim) {
    std::vector<GenDim> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[size_t(d)]) {
        dims.push_back(x.dims[size_t(d)]);
      } else if (keepdim) {
        dims.push_back({DimKind::Bcast, -1});
      }
    }
    return dims;
  };
  Num mean_num{false, m, x.num.special || may_be_empty, 0.0, false};
  // var = m2 / max(N - correction, 0): inf or NaN when N <= correction.
  Num var_num{false, 4 * m * m + 1, true, 0.0, false};
  std::vector<int64_t> spelled = spell(axes, rank);
  double r = rng_.uniform();
  ++ts_[size_t(t)].uses;
  if (rank >= 2 && reduced[0]) c_.features.insert("outer-reduction");
  c_.features.insert("welford");
  if (r < 0.35) {
    ops::WelfordResult w = ops::welford(x.tv, spelled);
    auto dims = dims_for(false);
    int a = adopt(w.avg, dims, mean_num, red, tol);
    int m2 = adopt(w.m2, dims, Num{false, n_max * 4 * m * m, x.num.special, 0.0, false}, red,
                   tol);
    int n = adopt(w.n, dims, Num{true, n_max, false, 0.0, false}, {}, 1.0);
    note(name(a) + ", " + name(m2) + ", " + name(n) + " = welford(" + name(t) + ", " +
         shapeText(spelled) + ")");
    return true;
  }
  double correction = rng_.pick(std::vector<double>{0.0, 1.0, 1.0, 2.0});
  bool keepdim = rng_.chance(0.35);
  if (r < 0.7) {
    ops::VarMeanResult vm = ops::varMean(x.tv, spelled, correction, keepdim);
    auto dims = dims_for(keepdim);
    int v = adopt(vm.var, dims, var_num, red, tol);
    int mu = adopt(vm.mean, dims, mean_num, red, tol);
    note(name(v) + ", " + name(mu) + " = var_mean(" + name(t) + ", " + shapeText(spelled) +
         ", correction " + numText(correction) + (keepdim ? ", keepdim" : "") + ")");
    return true;
  }
  TensorView* v = ops::variance(x.tv, spelled, correction, keepdim);
  int vi = adopt(v, dims_for(keepdim), var_num, red, tol);
  note(name(vi) + " = variance(" + name(t) + ", " + shapeText(spelled) + ", correction " +
       numText(correction) + (keepdim ? ", keepdim" : "") + ")");
  return true;
}

bool Generator::famSoftmax() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  if (!ts_[size_t(t)].num.exact) t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  int64_t d = rng_.chance(0.6) ? rank - 1 : int64_t(rng_.below(uint64_t(rank)));
  int64_t spelled = rng_.chance(0.3) ? d - rank : d;
  const GenDim& g = x.dims[size_t(d)];
  std::vector<int> red = x.red;
  if (g.kind != DimKind::Bcast) red.push_back(g.cls);
  double tol = std::max(1.0, errScale(tensorOpnd(t)) * 2);
  if (tol > kMaxTolScale) return false;
  bool log = rng_.chance(0.4);
  TensorView* out = log ? ops::logSoftmax(x.tv, spelled) : ops::softmax(x.tv, spelled);
  Num o;
  o.exact = false;
  o.special = x.num.special || (log && mayBeZero(g));
  o.mag = log ? 2 * std::min(x.num.mag, 1e30) + std::log(double(maxValue(g)) + 1) + 1 : 1.0;
  ++ts_[size_t(t)].uses;
  if (rank >= 2 && d == 0) c_.features.insert("outer-reduction");
  if (isReducedPrecision(x.tv->dtype())) c_.features.insert("16-bit-reduction");
  c_.features.insert("normalization");
  int idx = adopt(out, x.dims, o, red, tol);
  note(name(idx) + " = " + (log ? "log_softmax(" : "softmax(") + name(t) + ", " +
       std::to_string(spelled) + ")");
  return true;
}

int Generator::normParam(int t, int64_t n) {
  const GenTensor x = ts_[size_t(t)];
  std::vector<GenDim> want(x.dims.end() - n, x.dims.end());
  auto matches = [&](const GenTensor& g) {
    if (int64_t(g.dims.size()) != n || g.num.mag > 4 || !g.num.exact) return false;
    for (int64_t i = 0; i < n; ++i) {
      const GenDim& a = g.dims[size_t(i)];
      const GenDim& b = want[size_t(i)];
      if ((a.kind == DimKind::Bcast) != (b.kind == DimKind::Bcast)) return false;
      if (a.kind != DimKind::Bcast && value(a) != value(b)) return false;
      if (a.kind == DimKind::Expanded || b.kind == DimKind::Expanded) return false;
    }
    return true;
  };
  int p = pick(matches);
  if (p >= 0 && rng_.chance(0.7)) {
    for (int64_t i = 0; i < n; ++i) {
      if (want[size_t(i)].kind != DimKind::Bcast) unify(ts_[size_t(p)].dims[size_t(i)].cls, want[size_t(i)].cls);
    }
    return p;
  }
  if (tensor_inputs_ >= opts_.maxTensorInputs) return -1;
  if (std::any_of(want.begin(), want.end(), [](const GenDim& d) { return d.kind == DimKind::Expanded; }))
    return -1;
  int64_t elems = 1;
  for (const GenDim& d : want) elems *= std::max<int64_t>(1, value(d));
  if (elems > opts_.maxInputNumel) return -1;
  std::vector<int> classes;
  for (const GenDim& d : want) classes.push_back(d.kind == DimKind::Bcast ? -1 : d.cls);
  static const DataType types[] = {DataType::Float32, DataType::Float16, DataType::BFloat16,
                                   DataType::Float64};
  int w = addTensorInput(classes, types[rng_.below(4)], false);
  // Keep weights well conditioned: an input weight of Wide or Special values is clamped.
  if (ts_[size_t(w)].num.mag > 4 || ts_[size_t(w)].num.special) {
    w = clampOp(tensorOpnd(w), constant(-2.0), constant(2.0));
    if (w >= 0 && ts_[size_t(w)].num.special) return -1;
  }
  return w;
}

bool Generator::famLayerNorm() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  int64_t n = rng_.chance(0.6) ? 1 : rng_.range(1, rank);
  int w = rng_.chance(0.6) ? normParam(t, n) : -1;
  int b = rng_.chance(0.5) ? normParam(t, n) : -1;
  const GenTensor x = ts_[size_t(t)];
  double eps = rng_.pick(std::vector<double>{0.1, 0.5});
  std::vector<int> red = x.red;
  double n_max = 1;
  std::vector<GenDim> stat_dims = x.dims;
  for (int64_t d = rank - n; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
    n_max *= double(maxValue(g));
    stat_dims[size_t(d)] = {DimKind::Bcast, -1};
  }
  double wmag = w >= 0 ? ts_[size_t(w)].num.mag : 1.0;
  double bmag = b >= 0 ? ts_[size_t(b)].num.mag : 0.0;
  double amp = 1.0 / std::sqrt(eps);
  double tol = std::max(errScale(tensorOpnd(t)), std::max(1.0, x.num.mag)) * amp * std::max(1.0, wmag);
  if (tol > kMaxTolScale) return false;
  ops::LayerNormResult r = ops::layerNorm(x.tv, n, w >= 0 ? ts_[size_t(w)].tv : nullptr,
                                          b >= 0 ? ts_[size_t(b)].tv : nullptr, eps);
  ++ts_[size_t(t)].uses;
  if (w >= 0) ++ts_[size_t(w)].uses;
  if (b >= 0) ++ts_[size_t(b)].uses;
  Num y{false, std::min(std::sqrt(n_max), 2 * x.num.mag * amp) * wmag + bmag, x.num.special, 0.0, false};
  int yi = adopt(r.y, x.dims, y, red, tol);
  std::string outs = name(yi);
  if (rng_.chance(0.4)) {
    int mi = adopt(r.mean, stat_dims, Num{false, x.num.mag, x.num.special, 0.0, false}, red, tol);
    int ri = adopt(r.rstd, stat_dims, Num{false, amp, x.num.special, 0.0, false}, red, tol);
    outs += ", " + name(mi) + ", " + name(ri);
  }
  c_.features.insert("normalization");
  if (isReducedPrecision(x.tv->dtype())) c_.features.insert("16-bit-reduction");
  note(outs + " = layer_norm(" + name(t) + ", " + std::to_string(n) + ", " +
       (w >= 0 ? name(w) : "none") + ", " + (b >= 0 ? name(b) : "none") + ", eps " + numText(eps) +
       ")");
  return true;
}

bool Generator::famRmsNorm() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  int64_t n = rng_.chance(0.6) ? 1 : rng_.range(1, rank);
  int w = rng_.chance(0.6) ? normParam(t, n) : -1;
  const GenTensor x = ts_[size_t(t)];
  double eps = rng_.pick(std::vector<double>{0.5, 1.0});
  std::vector<int> red = x.red;
  double n_max = 1;
  for (int64_t d = rank - n; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
    n_max *= double(maxValue(g));
  }
  double wmag = w >= 0 ? ts_[size_t(w)].num.mag : 1.0;
  double amp = 1.0 / std::sqrt(eps);
  double tol = std::max(errScale(tensorOpnd(t)), std::max(1.0, x.num.mag)) * amp * 2 * std::max(1.0, wmag);
  if (tol > kMaxTolScale) return false;
  TensorView* out = ops::rmsNorm(x.tv, n, w >= 0 ? ts_[size_t(w)].tv : nullptr, eps);
  ++ts_[size_t(t)].uses;
  if (w >= 0) ++ts_[size_t(w)].uses;
  Num y{false, std::min(std::sqrt(n_max), x.num.mag * amp) * wmag, x.num.special, 0.0, false};
  int yi = adopt(out, x.dims, y, red, tol);
  c_.features.insert("normalization");
  note(name(yi) + " = rms_norm(" + name(t) + ", " + std::to_string(n) + ", " +
       (w >= 0 ? name(w) : "none") + ", eps " + numText(eps) + ")");
  return true;
}

bool Generator::famBiasGelu() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty() && g.num.mag <= 4; });
  if (t < 0) return false;
  int b = partner(t, [&](const GenTensor& g) {
    return g.dims.size() <= ts_[size_t(t)].dims.size() && g.num.mag <= 4;
  });
  if (b < 0) b = normParam(t, 1);
  if (b < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const GenTensor& bias = ts_[size_t(b)];
  if (bias.dims.size() > x.dims.size()) return false;
  auto shape = broadcastShape({t, b});
  if (!shape || !fits(*shape)) return false;
  if ((!x.num.exact || !bias.num.exact) && x.num.mag + bias.num.mag > 8) return false;
  double tol = std::max({1.0, errScale(tensorOpnd(t)), errScale(tensorOpnd(b))}) * 2;
  if (tol > kMaxTolScale) return false;
  bool tanh_approx = rng_.chance(0.5);
  TensorView* out = ops::biasGelu(x.tv, bias.tv,
                                  tanh_approx ? ops::GeluApproximation::Tanh
                                              : ops::GeluApproximation::None);
  commitShape({t, b});
  shape = broadcastShape({t, b});
  ++ts_[size_t(t)].uses;
  ++ts_[size_t(b)].uses;
  std::vector<int> red = redProduct(x.red) >= redProduct(bias.red) ? x.red : bias.red;
  Num o{false, x.num.mag + bias.num.mag, x.num.special || bias.num.special, 0.0, false};
  int idx = adopt(out, *shape, o, red, tol);
  note(name(idx) + " = bias_gelu(" + name(t) + ", " + name(b) +
       (tanh_approx ? ", tanh)" : ")"));
  return true;
}

bool Generator::famNormPattern() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  std::vector<int64_t> axes = rng_.chance(0.6) ? std::vector<int64_t>{rank - 1} : randomAxes(rank, false);
  std::sort(axes.begin(), axes.end());
  static const Red kinds[] = {Red::Max, Red::Sum, Red::Mean, Red::Min};
  Red r = kinds[rng_.below(4)];
  // Reductions bound their input themselves; keep the bounded input to combine with.
  if (r == Red::Sum || r == Red::Mean) t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  bool keepdim = rng_.chance(0.6);
  int s = reduceOp(r, t, axes, keepdim);
  if (s < 0) return false;
  if (!keepdim) {
    // Broadcast back by hand, as frontends do.
    std::vector<bool> flags(size_t(rank), false);
    for (int64_t a : axes) flags[size_t(a)] = true;
    s = broadcastOp(s, flags);
    if (s < 0) return false;
  }
  c_.features.insert("normalization");
  double m = rng_.uniform();
  if (r == Red::Max || r == Red::Min) {
    int d = binaryOp(Bin::Sub, tensorOpnd(t), tensorOpnd(s));
    if (d < 0) return false;
    if (m < 0.5) unaryOp(Un::Exp, d);
    return true;
  }
  if (m < 0.4) return binaryOp(Bin::Sub, tensorOpnd(t), tensorOpnd(s)) >= 0;
  if (m < 0.7) return binaryOp(Bin::Mul, tensorOpnd(t), tensorOpnd(s)) >= 0;
  // x / (|s| + 1): a denominator bounded away from zero.
  int a = unaryOp(Un::Abs, s);
  if (a < 0) return false;
  int den = binaryOp(Bin::Add, tensorOpnd(a), constant(1.0));
  if (den < 0) return false;
  ts_[size_t(den)].num.minAbs = std::max(ts_[size_t(den)].num.minAbs, 1.0);
  return binaryOp(Bin::Div, tensorOpnd(t), tensorOpnd(den)) >= 0;
}

bool Generator::famOuterReduction() {
  int t = pick([](const GenTensor& g) { return g.dims.size() >= 2; });
  if (t < 0) return false;
  static const Red kinds[] = {Red::Sum, Red::Max, Red::Mean, Red::Min};
  Red r = kinds[rng_.below(4)];
  if (r == Red::Sum || r == Red::Mean) t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  int s = reduceOp(r, t, {0}, rng_.chance(0.4));
  if (s < 0) return false;
  if (rng_.chance(0.5)) {
    // The reduced row broadcasts against the input (dim 0 is the leading one).
    binaryOp(rng_.chance(0.5) ? Bin::Sub : Bin::Mul, tensorOpnd(t), tensorOpnd(s));
  }
  return true;
}

bool Generator::famBroadcastCombine() {
  int s = pick([](const GenTensor& g) {
    return g.dims.size() < 4 || std::any_of(g.dims.begin(), g.dims.end(), [](const GenDim& d) {
             return d.kind == DimKind::Bcast;
           });
  });
  if (s < 0) return false;
  int64_t small = numel(ts_[size_t(s)].dims);
  int l = partner(s, [&](const GenTensor& g) {
    return numel(g.dims) > small || g.dims.size() > ts_[size_t(s)].dims.size();
  });
  if (l < 0) return false;
  static const Bin ops_list[] = {Bin::Add, Bin::Mul, Bin::Sub, Bin::Maximum};
  Bin b = ops_list[rng_.below(4)];
  return rng_.chance(0.5) ? binaryOp(b, tensorOpnd(s), tensorOpnd(l)) >= 0
                          : binaryOp(b, tensorOpnd(l), tensorOpnd(s)) >= 0;
}

bool Generator::famFanOut() {
  int t = pick([](const GenTensor& g) { return g.input < 0; });
  if (t < 0) return false;
  static const Un first[] = {Un::Neg, Un::Abs, Un::Relu, Un::Tanh, Un::Sigmoid, Un::Exp};
  int a = unaryOp(first[rng_.below(std::size(first))], t);
  int b = binaryOp(rng_.chance(0.5) ? Bin::Mul : Bin::Add, tensorOpnd(t),
                   randomScalar(ts_[size_t(t)].tv->dtype(), false));
  if (a >= 0 || b >= 0) c_.features.insert("fan-out");
  return a >= 0 || b >= 0;
}

// ---- Sizes given as Scalars -------------------------------------------------------------------

ir::Scalar* Generator::sizeScalar(int cls, int64_t coef, int64_t offset) {
  InputSpec in;
  in.isTensor = false;
  in.dtype = DataType::Int64;
  in.scalarClass = cls;
  in.scalarCoef = coef;
  in.scalarOffset = offset;
  const int64_t v = cls >= 0 ? coef * c_.classValues[size_t(root(cls))] + offset : offset;
  in.scalarValues.assign(3, double(v));
  ir::Scalar* s = ir::IrBuilder::symbolic(DataType::Int64);
  c_.fusion->addInput(s);
  c_.inputs.push_back(in);
  c_.features.insert("size-scalar");
  std::string how = cls < 0 ? "constant" : "follows the sizes";
  note(s->toString() + " = size scalar input " + std::to_string(v) + " (" + how + ")");
  return s;
}

ops::Size Generator::sizeFor(int cls, bool allow_const) {
  const int r = root(cls);
  if (allow_const && c_.classPinned[size_t(r)] && rng_.chance(0.6)) {
    return ops::Size(c_.classValues[size_t(r)]);
  }
  std::vector<ir::Scalar*> extents;
  for (size_t t = 0; t < ts_.size(); ++t) {
    const GenTensor& g = ts_[t];
    for (size_t d = 0; d < g.dims.size(); ++d) {
      if (g.dims[d].kind != DimKind::Bcast && root(g.dims[d].cls) == r) {
        extents.push_back(extentScalar(int(t), d));
      }
    }
  }
  if (!extents.empty() && rng_.chance(0.5)) {
    ir::Scalar* e = rng_.pick(extents);
    if (allow_const || !e->isConst()) return ops::Size(e);
  }
  return ops::Size(sizeScalar(cls, 1, 0));
}

Opnd Generator::fillValue(DataType dt, bool allow_special) {
  auto compatible = [&](DataType s) {
    // Float64 scalars (NaN, inf, fractions) only fill floating tensors.
    return isFloatingType(dt) || s != DataType::Float64;
  };
  std::vector<size_t> inputs;
  for (size_t k = 0; k < scalar_inputs_.size(); ++k) {
    if (compatible(c_.inputs[size_t(scalar_inputs_[k])].dtype)) inputs.push_back(k);
  }
  Opnd o;
  if (!inputs.empty() && rng_.chance(0.2)) {
    const size_t k = rng_.pick(inputs);
    const InputSpec& in = c_.inputs[size_t(scalar_inputs_[k])];
    o.val = scalar_vals_[k];
    o.num.mag = 0;
    o.num.minAbs = kInf;
    for (double v : in.scalarValues) {
      Num m = numOfValue(v);
      o.num.special = o.num.special || m.special || std::fabs(v) > maxFinite(dt);
      o.num.mag = std::max(o.num.mag, m.mag);
      o.num.minAbs = std::min(o.num.minAbs, m.special ? 0.0 : m.minAbs);
    }
    if (dt == DataType::Bool) o.num = Num{};
    return o;
  }
  if (dt == DataType::Bool) return constant(rng_.chance(0.5));
  if (isIntegralType(dt)) {
    static const std::vector<int64_t> small = {0, 1, -3, 7, 100, -1};
    int64_t v = rng_.pick(small);
    if (allow_special && rng_.chance(0.15)) v = dt == DataType::Int32 ? (1LL << 20) : (1LL << 40);
    return constant(v);
  }
  // Values every float dtype holds exactly, and some that overflow Float16 (65536, 2^33).
  static const std::vector<double> normal = {0.0, 1.0, -1.5, 0.5, 2.0, -0.0, 0.25};
  static const std::vector<double> special = {kInf, -kInf, kNaN, 65536.0, 0x1p33, -0x1p33};
  const double v = allow_special && rng_.chance(0.3) ? rng_.pick(special) : rng_.pick(normal);
  o = constant(v);
  if (std::fabs(v) > maxFinite(dt)) {
    o.num.special = true;
    o.num.mag = 0;
    o.num.minAbs = 0;
  }
  return o;
}

// ---- Slice and cat ------------------------------------------------------------------------------

std::optional<Generator::SliceBound> Generator::sliceBound(int t, size_t d, bool allow_scalar) {
  const GenDim g = ts_[size_t(t)].dims[d];
  int64_t off = 0;
  const Terms n = termsOf(g, &off);  // the extent is n + off
  const int64_t N = value(g);
  const int64_t n_max = maxValue(g);
  ir::Scalar* extent = extentScalar(t, d);
  auto fixed = [&](int64_t v) -> ops::Size {
    return allow_scalar && rng_.chance(0.25) ? ops::Size(sizeScalar(-1, 0, v)) : ops::Size(v);
  };
  // "To the end": the extent itself, or a bound past any size the dim may take.
  auto to_end = [&]() -> ops::Size {
    return rng_.chance(0.7) ? ops::Size(extent) : fixed(int64_t(1) << 20);
  };
  auto with = [&](Terms terms, int64_t k, int64_t c) {
    terms.emplace_back(k, c);
    return terms;
  };
  SliceBound b;
  const double r = rng_.uniform();
  if (r < 0.15) {  // [0:k] (or [-1000:k], which clamps to 0)
    const int64_t k = rng_.range(0, N);
    b.start = rng_.chance(0.2) && n_max <= 1000 ? ops::Size(int64_t(-1000)) : ops::Size(int64_t(0));
    b.stop = fixed(k);
    require(n, off - k);
    b.cls = constClass(k);
  } else if (r < 0.3) {  // [-k:]
    if (N < 1) return std::nullopt;
    const int64_t k = rng_.range(1, N);
    b.start = fixed(-k);
    b.stop = to_end();
    require(n, off - k);
    b.cls = constClass(k);
  } else if (r < 0.45) {  // [s:]
    const int64_t s = rng_.range(0, N);
    b.start = fixed(s);
    b.stop = to_end();
    require(n, off - s);
    b.cls = sumClass(n, off - s);
  } else if (r < 0.58) {  // [:-e]
    if (N < 1) return std::nullopt;
    const int64_t e = rng_.range(1, N);
    b.stop = fixed(-e);
    require(n, off - e);
    b.cls = sumClass(n, off - e);
  } else if (r < 0.7) {  // [s:-e] or [s:t]
    if (N >= 1 && rng_.chance(0.5)) {
      const int64_t e = rng_.range(1, N);
      const int64_t s = rng_.range(0, N - e);
      b.start = fixed(s);
      b.stop = fixed(-e);
      require(n, off - s - e);
      b.cls = sumClass(n, off - s - e);
    } else {
      const int64_t s = rng_.range(0, N);
      const int64_t stop = rng_.range(s, N);
      b.start = fixed(s);
      b.stop = fixed(stop);
      require(n, off - stop);
      b.cls = constClass(stop - s);
    }
  } else if (r < 0.8) {  // stop before start: empty whatever the size
    int64_t s, stop;
    if (rng_.chance(0.5)) {
      s = rng_.range(1, 6);
      stop = rng_.range(0, s - 1);
    } else {
      s = -rng_.range(1, 3);
      stop = s - rng_.range(1, 3);
    }
    b.start = fixed(s);
    b.stop = fixed(stop);
    b.cls = constClass(0);
    c_.features.insert("slice-empty");
  } else if (allow_scalar) {  // a bound that follows a class of its own (the resized run moves it)
    const double q = rng_.uniform();
    if (q < 0.4) {  // [S:]
      const int64_t s = rng_.range(0, N);
      const int k = newClass(s, false, s + 4);
      b.start = ops::Size(sizeScalar(k, 1, 0));
      b.stop = to_end();
      require(with(n, k, -1), off);
      b.cls = sumClass(with(n, k, -1), off);
    } else if (q < 0.7) {  // [-K:]
      if (N < 1) return std::nullopt;
      const int64_t kv = rng_.range(1, N);
      const int k = newClass(kv, false, kv + 4);
      b.start = ops::Size(sizeScalar(k, -1, 0));
      b.stop = to_end();
      require({{k, 1}}, -1);
      require(with(n, k, -1), off);
      b.cls = k;
    } else {  // [:K]
      const int64_t kv = rng_.range(0, N);
      const int k = newClass(kv, false, kv + 4);
      b.stop = ops::Size(sizeScalar(k, 1, 0));
      require(with(n, k, -1), off);
      b.cls = k;
    }
    c_.features.insert("slice-scalar-bound");
  } else {
    return std::nullopt;
  }
  return b;
}

int Generator::sliceOp(int t, const std::vector<std::pair<size_t, SliceBound>>& bounds) {
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  TensorView* out = nullptr;
  std::string text;
  if (bounds.size() == 1 && rng_.chance(0.4)) {
    const auto d = int64_t(bounds[0].first);
    const int64_t spelled = rng_.chance(0.4) ? d - rank : d;
    const SliceBound& b = bounds[0].second;
    out = ops::slice(x.tv, spelled, b.start, b.stop);
    text = std::to_string(spelled) + ", " + b.start.toString() + ", " + b.stop.toString();
  } else {
    std::vector<ops::Size> starts, stops;
    for (int64_t d = 0; d < rank; ++d) {
      starts.emplace_back(int64_t(0));
      stops.emplace_back(extentScalar(t, size_t(d)));
    }
    for (const auto& [d, b] : bounds) {
      starts[d] = b.start;
      stops[d] = b.stop;
    }
    ops::SizeList s(starts), e(stops);
    out = ops::slice(x.tv, s, e);
    text = s.toString() + ", " + e.toString();
  }
  std::vector<GenDim> dims = x.dims;
  const bool sliced = out->definition() != nullptr && out->definition()->isA<ir::SliceOp>();
  for (const auto& [d, b] : bounds) {
    // A dim sliced whole (constant bounds 0 and its extent) stays what it was.
    if (sliced && out->logical()[d] != out->root()[d]) dims[d] = GenDim{DimKind::Iter, b.cls};
  }
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = slice(" + name(t) + ", " + text + ")");
  c_.features.insert("slice");
  if (x.input >= 0) c_.features.insert("slice-of-input");
  return idx;
}

int Generator::catOp(const std::vector<int>& parts, int64_t dim, int64_t spelled) {
  const auto d = size_t(dim);
  const size_t rank = ts_[size_t(parts[0])].dims.size();
  std::vector<Operand> operands;
  std::vector<TensorView*> tvs;
  for (int p : parts) {
    operands.emplace_back(ts_[size_t(p)].tv);
    tvs.push_back(ts_[size_t(p)].tv);
  }
  const DataType dtype = ops::resultType(operands);
  Num o;
  o.mag = 0;
  o.minAbs = kInf;
  double tol = 1;
  std::vector<int> red;
  bool mixed = false;
  Terms cat_terms;
  int64_t cat_offset = 0;
  for (int p : parts) {
    const GenTensor& g = ts_[size_t(p)];
    if (g.dims.size() != rank) throw GeneratorError("cat of tensors of different ranks");
    mixed = mixed || g.tv->dtype() != dtype;
    std::optional<Num> n = castNum(g.num, g.tv->dtype(), dtype);
    if (!n) return -1;
    o.exact = o.exact && n->exact;
    o.mag = std::max(o.mag, n->mag);
    o.special = o.special || n->special;
    o.minAbs = std::min(o.minAbs, n->minAbs);
    o.product = o.product || n->product;
    o.zsign = o.zsign || n->zsign;
    tol = std::max(tol, g.tol);
    if (redProduct(g.red) > redProduct(red)) red = g.red;
    for (const auto& term : termsOf(g.dims[d], &cat_offset)) cat_terms.push_back(term);
  }
  if (!std::isfinite(o.minAbs)) o.minAbs = 0;
  if (!o.exact && o.mag > kInexactMag) return -1;
  // The other dims: equal sizes (checked by the callers), one class from now on; the output dim
  // as a pointwise op would choose it.
  std::vector<GenDim> dims(rank, GenDim{DimKind::Bcast, -1});
  for (size_t pos = 0; pos < rank; ++pos) {
    if (pos == d) continue;
    int first = -1;
    // A broadcast does not stretch in a cat: the others' size there stays 1.
    const bool bcast = std::any_of(parts.begin(), parts.end(), [&](int p) {
      return ts_[size_t(p)].dims[pos].kind == DimKind::Bcast;
    });
    for (int p : parts) {
      if (bcast && ts_[size_t(p)].dims[pos].kind != DimKind::Bcast) pin(ts_[size_t(p)].dims[pos].cls);
    }
    for (int p : parts) {
      const GenDim& g = ts_[size_t(p)].dims[pos];
      if (g.kind == DimKind::Bcast) continue;
      if (value(g) != value(ts_[size_t(parts[0])].dims[pos])) {
        throw GeneratorError("cat of tensors whose sizes differ outside the cat dim");
      }
      if (first < 0) {
        first = g.cls;
      } else {
        unify(first, g.cls);
      }
      if (g.kind == DimKind::Iter || dims[pos].kind == DimKind::Bcast) {
        if (dims[pos].kind != DimKind::Iter) dims[pos] = g;
      }
    }
  }
  dims[d] = GenDim{DimKind::Iter, sumClass(cat_terms, cat_offset)};
  if (!fits(dims)) return -1;
  TensorView* out = ops::cat(tvs, spelled);
  for (int p : parts) ++ts_[size_t(p)].uses;
  int idx = adopt(out, dims, o, red, tol);
  std::string names;
  for (int p : parts) names += (names.empty() ? "" : ", ") + name(p);
  note(name(idx) + " = cat([" + names + "], " + std::to_string(spelled) + ")");
  c_.features.insert("cat");
  if (mixed) c_.features.insert("cat-mixed-dtype");
  if (!pinned(dims[d])) c_.features.insert("cat-symbolic-extent");
  return idx;
}

// ---- Families of the ops with Resize IDs, factories and symbolic sizes ------------------------

bool Generator::famSlice() {
  auto ok = [](const GenTensor& g) { return !g.dims.empty(); };
  int t = rng_.chance(0.3) ? pick([&](const GenTensor& g) { return ok(g) && g.input >= 0; }) : -1;
  if (t < 0) t = pick(ok);
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  std::vector<size_t> which;
  if (rank >= 2 && rng_.chance(0.3)) {
    for (int64_t d = 0; d < rank; ++d) {
      if (rng_.chance(0.5)) which.push_back(size_t(d));
    }
  }
  if (which.empty()) {
    which.push_back(rng_.chance(0.5) ? size_t(rank - 1) : size_t(rng_.below(uint64_t(rank))));
  }
  std::vector<std::pair<size_t, SliceBound>> bounds;
  for (size_t d : which) {
    if (auto b = sliceBound(t, d, true)) bounds.emplace_back(d, *b);
  }
  if (bounds.empty()) return false;
  if (bounds.size() >= 2) c_.features.insert("slice-several-dims");
  return sliceOp(t, bounds) >= 0;
}

bool Generator::famPad() {
  auto ok = [](const GenTensor& g) { return !g.dims.empty(); };
  int t = rng_.chance(0.3) ? pick([&](const GenTensor& g) { return ok(g) && g.input >= 0; }) : -1;
  if (t < 0) t = pick(ok);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  const int64_t pairs = rng_.chance(0.6) ? 1 : rng_.range(1, rank);
  std::vector<ops::Size> widths;
  std::vector<int> classes(size_t(rank), -1);  // the class of each padded dim
  std::vector<GenDim> dims = x.dims;
  bool cropped = false;
  for (int64_t k = 0; k < pairs; ++k) {
    const auto d = size_t(rank - 1 - k);
    if (k > 0 && rng_.chance(0.3)) {
      widths.emplace_back(int64_t(0));
      widths.emplace_back(int64_t(0));
      continue;
    }
    int64_t off = 0;
    Terms terms = termsOf(x.dims[d], &off);
    std::vector<ops::Size> lr;
    for (int side = 0; side < 2; ++side) {
      const double r = rng_.uniform();
      int64_t w;
      if (r < 0.25) {
        w = 0;
      } else if (r < 0.6) {
        w = rng_.range(1, 3);
      } else if (r < 0.85) {
        w = -rng_.range(1, 2);
      } else if (r < 0.93) {  // a width that follows a class of its own
        const int64_t v = rng_.range(0, 3);
        const int c = newClass(v, false, 5);
        lr.emplace_back(sizeScalar(c, 1, 0));
        terms.emplace_back(c, 1);
        continue;
      } else {
        w = rng_.range(4, 8);
      }
      lr.push_back(rng_.chance(0.2) ? ops::Size(sizeScalar(-1, 0, w)) : ops::Size(w));
      off += w;
      cropped = cropped || w < 0;
    }
    int64_t now = off;
    for (const auto& [c, m] : terms) now += m * c_.classValues[size_t(root(c))];
    if (now < 0) return false;  // cropped below zero
    require(terms, off);
    widths.push_back(lr[0]);
    widths.push_back(lr[1]);
    classes[d] = sumClass(terms, off);
    dims[d] = GenDim{DimKind::Iter, classes[d]};
  }
  if (!fits(dims)) return false;
  const Opnd v = fillValue(x.tv->dtype(), true);
  ops::SizeList w(widths);
  TensorView* out = ops::pad(x.tv, w, Operand(v.val));
  const bool padded = out->definition() != nullptr && out->definition()->isA<ir::PadOp>();
  for (int64_t d = 0; d < rank; ++d) {
    if (!padded || out->logical()[size_t(d)] == out->root()[size_t(d)]) dims[size_t(d)] = x.dims[size_t(d)];
  }
  Num o = x.num;
  if (padded) {
    o.mag = std::max(o.mag, v.num.mag);
    o.special = o.special || v.num.special;
    o.minAbs = std::min(o.minAbs, v.num.minAbs);
    if (x.tv->dtype() == DataType::Bool) o = Num{};
  }
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, o, x.red, x.tol);
  note(name(idx) + " = pad(" + name(t) + ", " + w.toString() + ", " +
       (v.isConst ? numText(v.value) : v.val->toString()) + ")");
  c_.features.insert("pad");
  if (cropped) c_.features.insert("pad-negative");
  if (pairs < rank) c_.features.insert("pad-fewer-pairs");
  if (v.num.special) c_.features.insert("pad-special-value");
  return true;
}

bool Generator::famCat() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  const int64_t d = rng_.chance(0.5) ? rank - 1 : int64_t(rng_.below(uint64_t(rank)));
  const int64_t spelled = rng_.chance(0.35) ? d - rank : d;
  static const double count_weights[] = {0.6, 0.3, 0.1};
  const size_t n = rng_.weighted(count_weights) + 2;
  auto matches = [&](const GenTensor& g) {
    if (g.dims.size() != x.dims.size()) return false;
    for (int64_t pos = 0; pos < rank; ++pos) {
      if (pos != d && value(g.dims[size_t(pos)]) != value(x.dims[size_t(pos)])) return false;
    }
    return true;
  };
  std::vector<int> parts{t};
  while (parts.size() < n) {
    const double r = rng_.uniform();
    int p = -1;
    if (r < 0.35) {
      p = pick(matches);
    } else if (r < 0.5) {
      p = rng_.pick(parts);
    } else if (r < 0.75) {
      if (auto b = sliceBound(t, size_t(d), true)) p = sliceOp(t, {{size_t(d), *b}});
    } else if (tensor_inputs_ < opts_.maxTensorInputs) {
      // A new input of symbolic extent along the cat dim, often of another dtype.
      std::vector<int> classes;
      const int64_t v = rng_.chance(0.1) ? 0 : rng_.range(1, 12);
      int64_t elems = std::max<int64_t>(v, 1);
      for (int64_t pos = 0; pos < rank; ++pos) {
        const GenDim& g = x.dims[size_t(pos)];
        if (pos == d) {
          classes.push_back(-2);
        } else {
          classes.push_back(g.kind == DimKind::Bcast ? -1 : g.cls);
          elems *= std::max<int64_t>(value(g), 1);
        }
      }
      if (elems <= opts_.maxInputNumel) {
        classes[size_t(d)] = newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
        p = addTensorInput(classes, rng_.chance(0.5) ? x.tv->dtype() : drawDtype(), false);
      }
    }
    parts.push_back(p >= 0 ? p : t);
  }
  if (rng_.chance(0.3)) std::swap(parts[0], parts[rng_.below(parts.size())]);
  return catOp(parts, d, spelled) >= 0;
}

bool Generator::famRotary() {
  int t = pick([this](const GenTensor& g) {
    return !g.dims.empty() && g.tv->dtype() != DataType::Bool &&
           g.dims.back().kind != DimKind::Bcast && value(g.dims.back()) >= 2 &&
           (g.num.exact || g.num.mag <= kInexactMag);
  });
  if (t < 0) return false;
  const auto last = ts_[size_t(t)].dims.size() - 1;
  const GenDim g = ts_[size_t(t)].dims[last];
  const int64_t n = value(g);
  const int64_t h = rng_.chance(0.6) ? n / 2 : rng_.range(1, n - 1);
  require({{g.cls, 1}}, -h);
  const ops::Size hs = rng_.chance(0.25) ? ops::Size(sizeScalar(-1, 0, h)) : ops::Size(h);
  SliceBound lo, hi;
  lo.stop = hs;
  lo.cls = constClass(h);
  hi.start = hs;
  hi.stop = ops::Size(extentScalar(t, last));
  hi.cls = sumClass({{g.cls, 1}}, -h);
  int a = sliceOp(t, {{last, lo}});
  int b = sliceOp(t, {{last, hi}});
  int nb = unaryOp(Un::Neg, b);
  if (nb < 0) return false;
  int rot = catOp({nb, a}, int64_t(last), -1);
  if (rot < 0) return false;
  c_.features.insert("rotary");
  if (rng_.chance(0.4)) return true;
  // x * cos + rot * sin, with bounded factors (pool tensors or constants).
  auto factor = [&](int like) -> Opnd {
    int p = rng_.chance(0.5) ? partner(like, [](const GenTensor& f) { return f.num.mag <= 2; }) : -1;
    return p >= 0 ? tensorOpnd(p) : constant(rng_.pick(std::vector<double>{0.5, -0.75, 1.0}));
  };
  int xc = binaryOp(Bin::Mul, tensorOpnd(t), factor(t));
  int rs = binaryOp(Bin::Mul, tensorOpnd(rot), factor(rot));
  if (xc < 0 || rs < 0) return true;
  binaryOp(Bin::Add, tensorOpnd(xc), tensorOpnd(rs));
  return true;
}

bool Generator::famFull() {
  std::vector<ops::Size> shape;
  std::vector<GenDim> dims;
  const int p = rng_.chance(0.65) ? pick([](const GenTensor& g) { return g.dims.size() <= 4; }) : -1;
  if (p >= 0) {
    // p's shape (some dims 1), so that the result combines with it.
    const std::vector<GenDim> like = ts_[size_t(p)].dims;
    for (const GenDim& g : like) {
      if (g.kind == DimKind::Bcast || rng_.chance(0.15)) {
        shape.emplace_back(int64_t(1));
        dims.push_back({DimKind::Bcast, -1});
      } else {
        shape.push_back(sizeFor(g.cls, true));
        // A constant 1 (a pinned size 1) is a broadcast.
        dims.push_back(shape.back().constant() == 1 ? GenDim{DimKind::Bcast, -1}
                                                    : GenDim{DimKind::Iter, g.cls});
      }
    }
  } else {
    const int64_t rank = rng_.range(0, 3);
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t v = rng_.chance(0.1) ? 0 : rng_.range(1, 24);
      if (rng_.chance(0.5)) {
        shape.emplace_back(v);
        dims.push_back(v == 1 ? GenDim{DimKind::Bcast, -1} : GenDim{DimKind::Iter, constClass(v)});
      } else {
        const int c = newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
        shape.emplace_back(sizeScalar(c, 1, 0));
        dims.push_back({DimKind::Iter, c});
        c_.features.insert("full-scalar-size");
      }
    }
  }
  if (!fits(dims)) return false;
  static const DataType types[] = {DataType::Bool,    DataType::Int32,   DataType::Int64,
                                   DataType::Float16, DataType::BFloat16, DataType::Float32,
                                   DataType::Float64};
  const DataType dt = p >= 0 && rng_.chance(0.5) ? ts_[size_t(p)].tv->dtype()
                                                 : types[rng_.below(std::size(types))];
  ops::SizeList sizes(shape);
  TensorView* out;
  Num o;
  std::string what;
  const double r = rng_.uniform();
  if (r < 0.2) {
    out = ops::zeros(sizes, dt);
    o = Num{true, 0.0, false, 0.0, false};
    what = "zeros(";
  } else if (r < 0.4) {
    out = ops::ones(sizes, dt);
    o = Num{true, 1.0, false, 1.0, false};
    what = "ones(";
  } else {
    const Opnd v = fillValue(dt, true);
    out = ops::full(sizes, Operand(v.val), dt);
    o = v.num;
    if (dt == DataType::Bool) o = Num{};
    what = "full(" + std::string(v.isConst ? numText(v.value) : v.val->toString()) + ", ";
  }
  int f = adopt(out, dims, o, {}, 1.0);
  note(name(f) + " = " + what + sizes.toString() + ", " + std::string(dataTypeName(dt)) + ")");
  c_.features.insert("full");
  if (p >= 0 && rng_.chance(0.6)) {
    static const Bin ops_list[] = {Bin::Add, Bin::Mul, Bin::Sub, Bin::Maximum, Bin::Minimum};
    const Bin b = ops_list[rng_.below(std::size(ops_list))];
    if (rng_.chance(0.5)) {
      binaryOp(b, tensorOpnd(p), tensorOpnd(f));
    } else {
      binaryOp(b, tensorOpnd(f), tensorOpnd(p));
    }
    c_.features.insert("full-operand");
  }
  return true;
}

// Whether v is a value of dtype dt (finite, with few enough significant bits).
bool representable(double v, DataType dt) {
  if (v == 0) return true;
  if (!std::isfinite(v) || std::fabs(v) > maxFinite(dt)) return false;
  int bits = 53;
  double smallest = 0x1p-1022;
  switch (dt) {
    case DataType::Float16: bits = 11; smallest = 0x1p-14; break;
    case DataType::BFloat16: bits = 8; smallest = 0x1p-126; break;
    case DataType::Float32: bits = 24; smallest = 0x1p-126; break;
    case DataType::Float64: break;
    default: return v == std::trunc(v) && std::fabs(v) <= intLimit(dt);
  }
  if (std::fabs(v) < smallest) return false;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);
  const double scaled = std::ldexp(m, bits);
  return scaled == std::trunc(scaled);
}

// v rounded to dtype dt (the rounding iota applies to start and step), as far as it matters
// here: exact values stay, others are marked by `exact`.
double roundedTo(double v, DataType dt, bool* exact) {
  if (representable(v, dt)) return v;
  *exact = false;
  return dt == DataType::Float32 ? double(float(v)) : v;
}

bool Generator::famIota() {
  // Along a dim of a pool tensor (then broadcast and combined with it), or on its own.
  int p = -1;
  size_t pd = 0;
  if (rng_.chance(0.55)) {
    p = pick([](const GenTensor& g) {
      return std::any_of(g.dims.begin(), g.dims.end(),
                         [](const GenDim& d) { return d.kind != DimKind::Bcast; });
    });
  }
  if (p >= 0) {
    std::vector<size_t> cands;
    const auto& pdims = ts_[size_t(p)].dims;
    for (size_t d = 0; d < pdims.size(); ++d) {
      if (pdims[d].kind != DimKind::Bcast) cands.push_back(d);
    }
    pd = rng_.pick(cands);
  }
  static const DataType int_types[] = {DataType::Int32, DataType::Int64};
  static const DataType float_types[] = {DataType::Float32, DataType::Float16, DataType::BFloat16,
                                         DataType::Float64};
  TensorView* out = nullptr;
  int len_cls = -1;  // -1: a constant length 1 (a broadcast)
  double start = 0, step = 1;
  DataType dt = DataType::Int64;
  std::string text;
  const double r = rng_.uniform();
  if (p >= 0 || r < 0.45) {
    // iota(length, start, step, dtype), or arange(0, length) with a Scalar end.
    ops::Size length = int64_t(0);
    if (p >= 0) {
      len_cls = ts_[size_t(p)].dims[pd].cls;
      length = sizeFor(len_cls, true);
    } else {
      const int64_t v = rng_.chance(0.1) ? rng_.range(0, 1) : rng_.range(2, 40);
      if (rng_.chance(0.5)) {
        len_cls = v == 1 ? -1 : constClass(v);
        length = ops::Size(v);
      } else {
        len_cls = newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
        length = ops::Size(sizeScalar(len_cls, 1, 0));
        c_.features.insert("iota-scalar-length");
      }
    }
    const bool floating = rng_.chance(0.5);
    if (floating) {
      static const std::vector<double> starts = {0.0, 0.5, -1.25, 2.0, -8.0};
      static const std::vector<double> steps = {1.0, 0.5, 0.25, -0.75, 0.1, 2.0};
      dt = float_types[rng_.below(std::size(float_types))];
      start = rng_.pick(starts);
      step = rng_.pick(steps);
    } else {
      static const std::vector<int64_t> starts = {0, 1, -3, 5};
      static const std::vector<int64_t> steps = {1, 2, -1, 3};
      dt = int_types[rng_.below(std::size(int_types))];
      start = double(rng_.pick(starts));
      step = double(rng_.pick(steps));
    }
    ir::Scalar* ls = length.scalar();
    if (ls != nullptr && !floating && start == 0 && step == 1 && rng_.chance(0.4)) {
      out = ops::arange(int64_t(0), Operand(ls), int64_t(1), dt);
      text = "arange(0, " + length.toString() + ", 1, " + std::string(dataTypeName(dt)) + ")";
    } else {
      Operand s0 = floating ? Operand(start) : Operand(int64_t(start));
      Operand st = floating ? Operand(step) : Operand(int64_t(step));
      out = ops::iota(length, s0, st, dt);
      text = "iota(" + length.toString() + ", " + numText(start) + ", " + numText(step) + ", " +
             std::string(dataTypeName(dt)) + ")";
    }
    if (len_cls >= 0 && value(GenDim{DimKind::Iter, len_cls}) == 1 && length.isConst()) len_cls = -1;
  } else {
    // arange with constant bounds (fractional steps, empty and negative ranges), sometimes with
    // a Scalar end that follows a class of its own.
    struct Range {
      double start, end, step;
    };
    static const std::vector<Range> ranges = {
        {0, 5, 1},   {2, 9, 3},     {5, 0, -1},     {0, 3, 0.25}, {-1, 2.5, 0.5},
        {0, 1, 0.1}, {1.5, -2, -0.5}, {3, 3, 1},    {0, 40, 1},   {-4, 4, 0.75}};
    const Range rg = rng_.pick(ranges);
    const bool ints = rg.start == std::trunc(rg.start) && rg.end == std::trunc(rg.end) &&
                      rg.step == std::trunc(rg.step);
    if (ints && rng_.chance(0.4)) {
      // arange(s, E) with E a size scalar worth s + (a size of its own): that size is the length.
      const int64_t s = int64_t(std::min(rg.start, rg.end));
      const int64_t len = rng_.range(0, 20);
      len_cls = newClass(len, false, std::max<int64_t>(2 * len + 3, 8));
      ir::Scalar* e = sizeScalar(len_cls, 1, s);
      dt = rng_.chance(0.5) ? DataType::Int64 : DataType::Float32;
      out = ops::arange(s, Operand(e), int64_t(1), dt);
      start = double(s);
      step = 1;
      text = "arange(" + std::to_string(s) + ", " + e->toString() + ", 1, " +
             std::string(dataTypeName(dt)) + ")";
      c_.features.insert("iota-scalar-length");
    } else {
      std::optional<DataType> want;
      if (rng_.chance(0.4)) {
        want = ints && rng_.chance(0.5) ? int_types[rng_.below(2)]
                                        : float_types[rng_.below(std::size(float_types))];
      }
      dt = want.value_or(ints ? DataType::Int64 : DataType::Float32);
      if (isIntegralType(dt) && !ints) return false;  // fractional values cast to integers
      const auto len = int64_t(std::ceil((rg.end - rg.start) / rg.step));
      len_cls = len == 1 ? -1 : constClass(len);
      start = rg.start;
      step = rg.step;
      Operand a = ints ? Operand(int64_t(rg.start)) : Operand(rg.start);
      Operand b = ints ? Operand(int64_t(rg.end)) : Operand(rg.end);
      Operand c = ints ? Operand(int64_t(rg.step)) : Operand(rg.step);
      out = ops::arange(a, b, c, want);
      text = "arange(" + numText(rg.start) + ", " + numText(rg.end) + ", " + numText(rg.step) +
             (want ? ", " + std::string(dataTypeName(*want)) : std::string()) + ")";
      if (rg.step != std::trunc(rg.step)) c_.features.insert("arange-fractional");
    }
  }
  // What is known of the values start + i * step (start and step rounded to dt first).
  const int64_t n_max = len_cls < 0 ? 1 : maxValue(GenDim{DimKind::Iter, len_cls});
  bool exact = true;
  const double s0 = roundedTo(start, dt, &exact);
  const double st = roundedTo(step, dt, &exact);
  Num o;
  o.mag = 0;
  o.minAbs = kInf;
  for (int64_t i = 0; i < std::max<int64_t>(n_max, 1); ++i) {
    const double v = s0 + double(i) * st;
    exact = exact && representable(v, dt) && representable(double(i) * st, dt) &&
            representable(v, DataType::Float32);
    o.mag = std::max(o.mag, std::fabs(v));
    o.minAbs = std::min(o.minAbs, std::fabs(v));
  }
  o.exact = exact;
  if (!exact) o.minAbs = 0;
  if (o.mag > maxFinite(dt)) return false;
  if (!exact && o.mag > kInexactMag) return false;
  std::vector<GenDim> dims{len_cls < 0 ? GenDim{DimKind::Bcast, -1} : GenDim{DimKind::Iter, len_cls}};
  int idx = adopt(out, dims, o, {}, 1.0);
  note(name(idx) + " = " + text);
  c_.features.insert("iota");
  if (isFloatingType(dt)) c_.features.insert("iota-float");
  if (p >= 0) {
    // Broadcast along p's dim pd and combine with p (an index, a mask, an offset).
    const size_t prank = ts_[size_t(p)].dims.size();
    std::vector<bool> flags(prank, true);
    flags[pd] = false;
    int b = broadcastOp(idx, flags);
    if (b < 0) return true;
    static const Bin ops_list[] = {Bin::Add, Bin::Sub, Bin::Mul, Bin::Lt, Bin::Ge, Bin::Maximum};
    const Bin op = ops_list[rng_.below(std::size(ops_list))];
    int c = rng_.chance(0.5) ? binaryOp(op, tensorOpnd(p), tensorOpnd(b))
                             : binaryOp(op, tensorOpnd(b), tensorOpnd(p));
    if (c >= 0) c_.features.insert("iota-combined");
  } else if (rng_.chance(0.5)) {
    int q = partner(idx);
    if (q >= 0 && q != idx) {
      binaryOp(rng_.chance(0.5) ? Bin::Add : Bin::Mul, tensorOpnd(q), tensorOpnd(idx));
    }
  }
  return true;
}

bool Generator::famReshapeSymbolic() {
  int t = pick([](const GenTensor& g) {
    return std::any_of(g.dims.begin(), g.dims.end(),
                       [](const GenDim& d) { return d.kind == DimKind::Iter; }) &&
           std::none_of(g.dims.begin(), g.dims.end(),
                        [](const GenDim& d) { return d.kind == DimKind::Expanded; });
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  // Atoms: x's non-broadcast dims, some split in two by a constant that divides them.
  struct Atom {
    int cls;
    int64_t dim;  // x's dim it is, -1 for a piece of a split
  };
  std::vector<Atom> atoms;
  bool split = false;
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind == DimKind::Bcast) continue;
    const int64_t v = value(g);
    if (rng_.chance(0.3)) {
      std::vector<int64_t> divisors;
      for (int64_t a : {2, 3, 4}) {
        if (v % a == 0) divisors.push_back(a);
      }
      if (!divisors.empty()) {
        const int64_t a = rng_.pick(divisors);
        if (!pinned(g)) require({{g.cls, 1}}, 0, a);
        Atom piece{constClass(a), -1};
        Atom rest{productClass({g.cls}, 1, a), -1};
        if (rng_.chance(0.5)) std::swap(piece, rest);
        atoms.push_back(piece);
        atoms.push_back(rest);
        split = true;
        continue;
      }
    }
    atoms.push_back({g.cls, d});
  }
  if (atoms.size() >= 2 && rng_.chance(0.25)) {
    std::vector<int64_t> perm = rng_.permutation(int64_t(atoms.size()));
    std::vector<Atom> shuffled;
    for (int64_t i : perm) shuffled.push_back(atoms[size_t(i)]);
    atoms = shuffled;
  }
  // Output dims: groups of adjacent atoms (merged), and size-1 dims here and there.
  struct Out {
    ops::Size size = int64_t(1);
    GenDim dim;
    bool one = false;  // an inserted size-1 dim
  };
  std::vector<Out> outs;
  bool merged = false;
  std::vector<std::vector<Atom>> groups;
  for (const Atom& a : atoms) {
    if (!groups.empty() && rng_.chance(0.35)) {
      groups.back().push_back(a);
      merged = true;
    } else {
      groups.push_back({a});
    }
  }
  for (const auto& group : groups) {
    Out o;
    std::vector<int> classes;
    bool from_dims = true;
    for (const Atom& a : group) {
      classes.push_back(a.cls);
      from_dims = from_dims && a.dim >= 0;
    }
    const int cls = group.size() == 1 ? group[0].cls : productClass(classes, 1, 1);
    o.dim = GenDim{DimKind::Iter, cls};
    if (group.size() == 1 && group[0].dim >= 0 && rng_.chance(0.4)) {
      o.size = ops::Size(extentScalar(t, size_t(group[0].dim)));
    } else if (group.size() >= 2 && from_dims && rng_.chance(0.4)) {
      ir::Scalar* e = extentScalar(t, size_t(group[0].dim));
      for (size_t i = 1; i < group.size(); ++i) {
        e = ir::scalar_math::mul(e, extentScalar(t, size_t(group[i].dim)));
      }
      o.size = ops::Size(e);
    } else {
      o.size = sizeFor(cls, true);
    }
    outs.push_back(o);
  }
  const int ones = rng_.chance(0.3) ? int(rng_.range(1, 2)) : 0;
  for (int i = 0; i < ones; ++i) {
    Out o;
    o.one = true;
    if (rng_.chance(0.5)) {
      o.dim = GenDim{DimKind::Bcast, -1};
    } else {
      // 1 at run time only: a Symbolic dim that concretization makes a broadcast.
      o.size = ops::Size(sizeScalar(-1, 0, 1));
      o.dim = GenDim{DimKind::Iter, constClass(1)};
      c_.features.insert("reshape-size-1-at-run-time");
    }
    outs.insert(outs.begin() + int64_t(rng_.below(outs.size() + 1)), o);
  }
  // One size may be -1 when the others can never be 0 (else it would infer 0).
  std::vector<size_t> groups_at;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].one) groups_at.push_back(i);
  }
  if (!groups_at.empty() && rng_.chance(0.45)) {
    const size_t m = rng_.pick(groups_at);
    bool ok = true;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (i != m && outs[i].dim.kind != DimKind::Bcast && value(outs[i].dim) < 1) ok = false;
    }
    if (ok) {
      for (size_t i = 0; i < outs.size(); ++i) {
        if (i != m && outs[i].dim.kind != DimKind::Bcast && !pinned(outs[i].dim)) {
          require({{outs[i].dim.cls, 1}}, -1);
        }
      }
      outs[m].size = ops::Size(int64_t(-1));
      c_.features.insert("reshape-minus-one");
    }
  }
  // Dynamic: some input extent or some size is a Scalar that is not a constant.
  bool dynamic = std::any_of(outs.begin(), outs.end(), [](const Out& o) {
    return o.size.scalar() != nullptr && !o.size.isConst();
  });
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(x.tv->logical())) {
    dynamic = dynamic || !id->logicalExtent()->isConst();
  }
  if (!dynamic) {
    for (Out& o : outs) {
      if (!o.one && o.size.isConst() && o.size.constant() != -1) {
        o.size = ops::Size(sizeScalar(o.dim.cls, 1, 0));
        dynamic = true;
        break;
      }
    }
  }
  if (!dynamic) return false;
  std::vector<ops::Size> sizes;
  std::vector<GenDim> dims;
  for (const Out& o : outs) {
    sizes.push_back(o.size);
    // A constant 1 is a broadcast; any other size an Iteration (or Symbolic) dim.
    if (o.size.constant() == 1) {
      dims.push_back({DimKind::Bcast, -1});
    } else {
      dims.push_back(o.dim.kind == DimKind::Bcast ? GenDim{DimKind::Iter, constClass(1)} : o.dim);
    }
  }
  if (!fits(dims)) return false;
  ops::SizeList list(sizes);
  TensorView* out = ops::reshape(x.tv, list);
  // x's own extents give a copy, whose dims are x's.
  if (out->definition() != nullptr && out->definition()->isA<ir::LoadStoreOp>()) dims = x.dims;
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = reshape(" + name(t) + ", " + list.toString() + ")");
  c_.features.insert("dynamic-reshape");
  if (merged) c_.features.insert("reshape-merge");
  if (split) c_.features.insert("reshape-split");
  return true;
}

bool Generator::famExpandSymbolic() {
  auto symbolic = [](const GenTensor& g, size_t d) {
    return ir::TensorDomain::noReductions(g.tv->logical())[d]->isSymbolic();
  };
  int t = pick([&](const GenTensor& g) {
    if (g.dims.size() < 4) return true;
    for (size_t d = 0; d < g.dims.size(); ++d) {
      if (g.dims[d].kind == DimKind::Bcast || symbolic(g, d)) return true;
    }
    return false;
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  // A class for the size at a (right-aligned) position: often one a tensor already has there.
  auto class_at = [&](int64_t pos_from_right) -> int {
    std::vector<int> cands;
    for (const GenTensor& g : ts_) {
      auto r = int64_t(g.dims.size());
      if (pos_from_right < r) {
        const GenDim& d = g.dims[size_t(r - 1 - pos_from_right)];
        if (d.kind != DimKind::Bcast) cands.push_back(d.cls);
      }
    }
    if (!cands.empty() && rng_.chance(0.7)) return rng_.pick(cands);
    const int64_t v = rng_.chance(0.1) ? rng_.range(0, 1) : rng_.range(2, 16);
    return newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
  };
  auto scalar_size = [&](int cls) {
    ops::Size s = sizeFor(cls, false);
    return s.isConst() ? ops::Size(sizeScalar(cls, 1, 0)) : s;
  };
  const int64_t lead = rank < 4 && rng_.chance(0.3) ? 1 : 0;
  std::vector<ops::Size> sizes;
  std::vector<GenDim> dims;
  for (int64_t i = 0; i < lead; ++i) {
    const int c = class_at(rank + lead - 1 - i);
    sizes.push_back(scalar_size(c));
    dims.push_back({DimKind::Expanded, c});
  }
  bool expanded = lead > 0;
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind == DimKind::Bcast && rng_.chance(0.7)) {
      const int c = class_at(rank - 1 - d);
      sizes.push_back(scalar_size(c));
      dims.push_back({DimKind::Expanded, c});
      expanded = true;
    } else if (g.kind == DimKind::Iter && symbolic(x, size_t(d)) && rng_.chance(0.5)) {
      // A Symbolic dim (a dynamic reshape's) given its own size.
      sizes.push_back(scalar_size(g.cls));
      dims.push_back(g);
    } else if (g.kind == DimKind::Iter && rng_.chance(0.15)) {
      sizes.emplace_back(extentScalar(t, size_t(d)));
      dims.push_back(g);
    } else {
      sizes.emplace_back(int64_t(-1));
      dims.push_back(g);
    }
  }
  if (std::all_of(sizes.begin(), sizes.end(), [](const ops::Size& s) { return s.isConst(); })) {
    return false;
  }
  if (!fits(dims)) return false;
  ops::SizeList list(sizes);
  TensorView* out = ops::expand(x.tv, list);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = expand(" + name(t) + ", " + list.toString() + ")");
  c_.features.insert(expanded ? "symbolic-expand" : "symbolic-expand-keep");
  return true;
}

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
  const int64_t steps = rng_.chance(0.6) ? rng_.range(opts_.minSteps, std::min<int64_t>(10, opts_.maxSteps))
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
  // Flatten the class forest: classRoot[i] is i's root from now on.
  for (size_t i = 0; i < c_.classRoot.size(); ++i) c_.classRoot[i] = root(int(i));
  c_.resizedRun = rng_.chance(0.3);
  return std::move(c_);
}

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
      int64_t lim = kind == ValueKind::LargeInt ? (dt == DataType::Int32 ? (1LL << 20) : (1LL << 40)) : 8;
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
