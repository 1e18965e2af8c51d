// SPDX-License-Identifier: Apache-2.0
// The generator's internals (see fusion_generator.h for what it does): the Generator class, which
// builds one FuzzCase, and the model it keeps of the tensors it built (GenTensor: dims as size
// classes, what is known of the values). Its code is split by concern:
//   generator_sizes.cpp         size classes, derived classes, constraints, sizes as scalars
//   generator_pool.cpp          the tensors built so far: adopting results, picking operands
//   generator_inputs.cpp        inputs (shapes, dtypes, layouts), scalar operands, fill values
//   generator_pointwise.cpp     pointwise op builders with their numeric rules
//   families_pointwise.cpp      unary, binary, compare, logical, where, clamp, lerp, cast, fan-out
//   families_shape.cpp          broadcast, expand, squeeze, permute, set, static reshape
//   families_reduction.cpp      reductions, welford, softmax, the norms, outer reductions
//   families_slice_pad_cat.cpp  slice, pad, cat, rotary
//   families_factory.cpp        full, iota
//   families_symbolic.cpp       dynamic reshape, expand to symbolic sizes
//   fusion_generator.cpp        the family table, the whole case, arguments, public functions
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz/fusion_generator.h"
#include "fuzz/fuzz_rng.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"

namespace loom::fuzz::detail {

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

// What the generator knows about a tensor's values (see fusion_generator.h's file comment).
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
  Exp,
  Exp2,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Silu,
  Erf,
  Gelu,
  GeluTanh,
  Neg,
  Abs,
  Relu,
  Floor,
  Ceil,
  Round,
  Sign,
  IsNan,
  IsInf,
  LogicalNot,
  // nvFuser's further elementwise ops (issue 36)
  Atan,
  Erfc,
  Asinh,
  Trunc,
  Signbit,
  IsFinite
};
enum class Bin : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Fmod,
  Maximum,
  Minimum,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or
};
enum class Red : uint8_t { Sum, Prod, Max, Min, Mean };

inline double maxFinite(DataType t) {
  switch (t) {
    case DataType::Float16: return 65504.0;
    case DataType::BFloat16:
    case DataType::Float32: return 3.0e38;
    case DataType::Float64: return 1.0e300;
    case DataType::Int32: return kInt32Limit;
    default: return kInt64Limit;
  }
}

inline double intLimit(DataType t) { return t == DataType::Int32 ? kInt32Limit : kInt64Limit; }

// a * b for bounds, where 0 * inf is 0 (a bound of 0 means the values are 0).
inline double mulBound(double a, double b) { return (a == 0 || b == 0) ? 0 : a * b; }

inline std::string shapeText(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// The shortest text that reads back as v.
inline std::string numText(double v) {
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

// What is known of the constant v (generator_inputs.cpp).
Num numOfValue(double v);
// What is known of values `in` of dtype `from` once cast to `to`; nullopt when such a cast is not
// generated (see docs/testing.md). A cast to the same dtype is no cast (generator_pointwise.cpp).
std::optional<Num> castNum(const Num& in, DataType from, DataType to);

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions& options) : rng_(seed), opts_(options) {
    c_.seed = seed;
    c_.fusion = std::make_unique<ir::Fusion>();
  }

  FuzzCase build();

  // ---- Op families: one function each, in families_*.cpp; the table is kFamilies in
  // fusion_generator.cpp.
  bool famUnaryFloat();
  bool famUnaryKeep();
  bool famPredicate();
  bool famUnaryMath();
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
  bool famTransposeTile();
  bool famChannelsLast();
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
  bool famNormBackward();
  bool famOuterPersistent();
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
  int64_t value(const GenDim& d) {
    return d.kind == DimKind::Bcast ? 1 : c_.classValues[size_t(root(d.cls))];
  }
  int64_t maxValue(const GenDim& d) {
    return d.kind == DimKind::Bcast ? 1 : c_.classMax[size_t(root(d.cls))];
  }
  bool pinned(const GenDim& d) {
    return d.kind == DimKind::Bcast || c_.classPinned[size_t(root(d.cls))];
  }
  bool mayBeZero(const GenDim& d) {
    return d.kind != DimKind::Bcast && (value(d) == 0 || !pinned(d));
  }
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
    double tol = -1;            // -1: the largest error scale of the operands (at least 1)
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
  // permute(t, perm) adopted into the pool (noted, "permute" covered); returns its index.
  int permuteOp(int src, const std::vector<int64_t>& perm);
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

}  // namespace loom::fuzz::detail
