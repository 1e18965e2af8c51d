// SPDX-License-Identifier: Apache-2.0
// The fuzzer's generator: from one 64-bit seed, a random small fusion built with the ops API,
// and the shapes, layouts and values of its inputs for each run.
//
//   fuzz::FuzzCase c = fuzz::generateCase(seed);
//   std::vector<eval::Argument> args = fuzz::makeArguments(c, c.classValues, /*run=*/0);
//
// The generator works in "op families" (fusion_generator.cpp, kFamilies): each is one function
// that picks operands among the tensors built so far and adds one op or a small pattern of ops,
// or declines when nothing fits. A family has a weight; adding an op to the fuzzer is adding one
// function and one row to that table.
//
// Sizes are "size classes": every non-broadcast dimension refers to a class, and dimensions that
// must be equal at run time (operands of a pointwise op, a layer_norm weight and its input) share
// one. A class whose extent is a constant in the IR is pinned; the others may take other values in
// a later run (FuzzCase::resizedRun), which checks that kernels reused for new sizes stay right.
// Some classes are derived from others (a cat's extent is the sum of its inputs', a slice's the
// extent minus its bounds, a reshape's merged dim a product) and follow them in that run; size
// scalars (scalar inputs used as sizes, bounds or widths) take their values from classes too, and
// constraints (a bound inside its extent, a split that divides) keep every run's shapes valid.
//
// The generator keeps the comparison with the reference evaluator meaningful: it tracks for each
// tensor whether its values are bit-exact in every correct implementation (only correctly rounded
// ops on exact operands), a bound on their magnitude and whether NaN/inf may occur. Discontinuous
// ops (comparisons, floor, casts to integers, ...) and ops that amplify errors (log, rsqrt,
// division by a tensor, ...) only take exact operands; reductions only take operands of bounded
// magnitude (the generator clamps first otherwise). Domains where a correct kernel and the
// reference legitimately disagree are never generated; the list is in docs/testing.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/eval/compare.h"
#include "loom/ir/fusion.h"

namespace loom::fuzz {

/// The generator broke one of its own rules (a bug in the fuzzer, not in Loom).
class GeneratorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GeneratorOptions {
  int64_t minSteps = 1;   ///< op-family applications per fusion (a family may add several ops)
  int64_t maxSteps = 25;
  int64_t maxTensorInputs = 3;
  int64_t maxInputNumel = 4096;          ///< elements of one input tensor
  int64_t maxIntermediateNumel = 16384;  ///< elements of any tensor the fusion computes
  /// Weight overrides by family name (0 disables a family); see opFamilies().
  std::map<std::string, double> familyWeights;
};

/// How an input's values are drawn.
enum class ValueKind : uint8_t {
  Normal,    ///< floats uniform in [-1, 1), integers in [-8, 8), fair bools
  Wide,      ///< floats: Normal times 64 (exact)
  Special,   ///< floats: Normal with NaN, +-inf, +-0, subnormals sprinkled in
  LargeInt,  ///< integers up to +-2^20 (Int32) or +-2^40 (Int64)
};
std::string_view valueKindName(ValueKind k);

/// Where an input's elements lie in its storage. Applied to whatever sizes a run uses.
struct InputLayout {
  std::vector<int64_t> storageOrder;  ///< dims from outermost to innermost in memory
  std::vector<int64_t> padding;       ///< extra elements per dim: a slice of a larger tensor
  std::vector<bool> zeroStride;       ///< dims read with stride 0 (an expanded view)
  int64_t offset = 0;                 ///< elements before element [0, ...] (misaligns)
  int64_t innerStep = 1;              ///< stride of the innermost stored dim
};

struct InputSpec {
  bool isTensor = true;
  DataType dtype = DataType::Float32;
  // Tensors.
  std::vector<int64_t> declared;   ///< TensorBuilder sizes: -1 symbolic, 1 broadcast, n constant
  std::vector<int> sizeClass;      ///< per dim; -1 for a declared broadcast (size 1)
  std::vector<int64_t> strideOrder;  ///< declared allocation order (TensorBuilder), or empty
  InputLayout layout;
  ValueKind values = ValueKind::Normal;
  // Scalars: the value of each run.
  std::vector<double> scalarValues;
  // Size scalars (Int64 inputs giving a size, bound or width): when scalarClass >= 0 the value of
  // a run is scalarCoef * (size of class scalarClass) + scalarOffset, so that it follows the sizes
  // of the resized run; scalarValues is then unused.
  int scalarClass = -1;
  int64_t scalarCoef = 1;
  int64_t scalarOffset = 0;
};

/// A size class whose size follows from others (the extent of a slice, pad or cat, a dim a
/// dynamic reshape merged or split): sum of coefficient * size + offset, or
/// factor * product of sizes / divisor.
struct ClassFormula {
  bool product = false;
  std::vector<std::pair<int, int64_t>> terms;  ///< (class, coefficient; 1 in a product)
  int64_t offset = 0;   ///< sums
  int64_t factor = 1;   ///< products
  int64_t divisor = 1;  ///< products
};

/// A condition every run's sizes must meet (a slice bound inside its extent, a -1 of a reshape
/// that stays inferable, a split size that divides): sum of coefficient * size + offset >= 0, or,
/// with a modulus, that sum divisible by it.
struct ClassConstraint {
  std::vector<std::pair<int, int64_t>> terms;
  int64_t offset = 0;
  int64_t modulus = 0;
};

/// What the comparison of one fusion output needs.
struct OutputSpec {
  std::vector<int> reductionClasses;  ///< the reduction size is the product of their sizes
  double tolScale = 1.0;              ///< multiplies defaultTolerance's rtol and atol
  /// A Float64 output computed partly in lower precision: compared with Float32's tolerance.
  bool lowPrecision = false;
  /// The coarsest floating type an inexact value upstream was held in (Float64 when none was):
  /// rounding to it can land one of its ulps apart in correct implementations (an average that
  /// is a tie in Float16, computed exactly by the reference and to Float32 by a kernel), so the
  /// output is compared with that type's tolerance when it is looser than its own.
  DataType coarsestInexact = DataType::Float64;
  bool isInput = false;
  std::string name;  ///< as the printed fusion names it (T<i>)
};

struct FuzzCase {
  uint64_t seed = 0;
  std::unique_ptr<ir::Fusion> fusion;
  std::vector<InputSpec> inputs;  ///< in fusion input order
  std::vector<OutputSpec> outputs;  ///< in fusion output order
  // Size classes (see the file comment), indexed by class id; classRoot[i] is the class i was
  // merged into.
  std::vector<int> classRoot;
  std::vector<int64_t> classValues;  ///< sizes of the first runs
  std::vector<int64_t> classMax;     ///< largest size the numeric bounds allowed for
  std::vector<bool> classPinned;
  std::map<int, ClassFormula> classFormulas;  ///< derived classes (roots), by class
  std::vector<ClassConstraint> classConstraints;
  /// Per tensor the generator built: its dims' classes (-1: size 1), to bound sizes of a rerun.
  std::vector<std::vector<int>> tensorClasses;
  /// Printed names (T<i>) of the tensors the generator built whose values are bit-exact in every
  /// correct implementation (the text mutations cast only those).
  std::set<std::string> exactTensors;
  std::vector<std::string> steps;   ///< one line per op family applied
  std::set<std::string> features;   ///< shapes of fusion covered on purpose ("fan-out", ...)
  bool resizedRun = false;          ///< also run with other sizes for unpinned classes
};

/// Builds the case of `seed`. Throws GeneratorError (or an ops UserError) on a generator bug.
FuzzCase generateCase(uint64_t seed, const GeneratorOptions& options = {});

/// Sizes for the resized run: new values for the unpinned classes the inputs use (derived
/// classes follow their formulas), within the element limits and the constraints; nullopt when
/// the case has no such class or no draw fits.
std::optional<std::vector<int64_t>> resizedClassValues(const FuzzCase& c,
                                                       const GeneratorOptions& options = {});

/// The arguments of run `run` (0: first, 1: same layout new values, 2: resized) for class sizes
/// `class_values`: tensors with the case's layouts, storage outside each view filled with
/// NaN / a marker so that out-of-view reads show up.
std::vector<eval::Argument> makeArguments(const FuzzCase& c, std::span<const int64_t> class_values,
                                          int run);

/// The tolerance of output `i`: defaultTolerance(dtype, reduction size) scaled by tolScale.
eval::Tolerance outputTolerance(const FuzzCase& c, size_t i, DataType dtype,
                                std::span<const int64_t> class_values);

/// One line per argument: shape, strides, offset, dtype, value kind (or a scalar's value).
std::string describeArguments(const FuzzCase& c, std::span<const eval::Argument> args);

/// The op families: name, default weight, and whether the family is implemented yet (TODO
/// entries are listed with weight 0 until the ops exist).
struct FamilyInfo {
  std::string_view name;
  double weight;
  bool implemented;
  std::string_view covers;
};
std::vector<FamilyInfo> opFamilies();

}  // namespace loom::fuzz
