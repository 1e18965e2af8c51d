// SPDX-License-Identifier: Apache-2.0
// The fusion's inputs (count, shapes, dtypes, storage layouts, value kinds), scalar inputs,
// and scalar operands: constants, random scalars, pad and full values.
#include <algorithm>
#include <numeric>

#include "fuzz/generator_internal.h"
#include "loom/ir/builder.h"

namespace loom::fuzz::detail {

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
    static const std::vector<int64_t> large = {
        2147483647LL, -2147483648LL, 1LL << 40, -(1LL << 40), (1LL << 52) - 1, 65536, 1000003};
    return constant(allow_special && rng_.chance(0.15) ? rng_.pick(large) : rng_.pick(small));
  }
  static const std::vector<double> normal = {0.5, 2.0,  -1.5, 3.0,  0.25, -0.75,
                                             1.0, 10.0, 0.0,  -2.0, 0.1};
  static const std::vector<double> special = {kInf,   -kInf, kNaN,    -0.0, 1e-40,  -1e-40,
                                              1e-310, 6e-8,  65504.0, 1e10, 3.0e38, 70000.0};
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
  static const DataType types[] = {DataType::Bool,    DataType::Int32,    DataType::Int64,
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
    bool constant =
        v != 1 && (static_sizes || c_.classPinned[size_t(root(cls))] || rng_.chance(0.3));
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
  if (std::any_of(in.layout.padding.begin(), in.layout.padding.end(),
                  [](int64_t p) { return p > 0; }))
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
      if (c >= 0 && c_.classValues[size_t(root(c))] == 1 && (static_sizes || rng_.chance(0.5)))
        c = -1;
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

}  // namespace loom::fuzz::detail
