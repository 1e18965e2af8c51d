// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's reductions (sum, prod, max, min; exact for integers, sum and prod of
// complex values), Welford and scans, each computed in double or int64 and rounded by define().
#include <algorithm>
#include <cmath>

#include "eval/reference_runner.h"
#include "loom/ir/fusion.h"
#include "loom/support/strings.h"

namespace loom::eval::detail {

using ir::TensorView;

namespace {

/// Chan et al.'s combination of two partial (avg, m2, n) statistics.
struct Welford {
  double avg = 0.0;
  double m2 = 0.0;
  double n = 0.0;
  void combine(double b_avg, double b_m2, double b_n) {
    if (b_n == 0.0) return;
    double total = n + b_n;
    double delta = b_avg - avg;
    double f = b_n / total;
    double step = delta * f;
    // An infinite mean against another: the weighted sum, order independent (welford.cuh).
    avg = step - step == 0.0 ? avg + step : avg * (1.0 - f) + b_avg * f;
    m2 += b_m2 + delta * delta * (n * b_n / total);
    n = total;
  }
};

/// The Welford output that shows the reduction best: the first one that still has Reduction
/// IDs (clearReductionIterDomains may have removed them from some siblings).
const TensorView* welfordReference(const ir::WelfordOp* e) {
  for (const TensorView* tv : {e->outAvg(), e->outM2(), e->outN()}) {
    if (tv->domain()->hasReduction()) return tv;
  }
  return e->outAvg();
}

}  // namespace

void Runner::handle(ir::ReductionOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  ReductionSpace space(e, e->out(), e->in(), in.shape, ee_);
  Buffer result{space.outShape(), {}};
  // The init, the input and the output have one dtype (ir::verify); the init as a kernel holds
  // it, rounded to that dtype.
  if (isComplexType(e->out()->dtype())) {
    defineComplexReduction(e, in, space);
    return;
  }
  if (isIntegralType(e->out()->dtype())) {
    defineIntReduction(e, in, space);
    return;
  }
  const double init = roundToDtype(ee_.evaluateDouble(e->init()), e->init()->dtype());
  result.data.assign(size_t(numelOf(result.shape)), init);
  ir::ReductionOpType op = e->opType();
  space.forEach({rowMajorStrides(in.shape)}, [&](int64_t o, const std::vector<int64_t>& i) {
    double& acc = result.data[size_t(o)];
    double x = in.data[size_t(i[0])];
    switch (op) {
      case ir::ReductionOpType::Sum: acc += x; break;
      case ir::ReductionOpType::Prod: acc *= x; break;
      case ir::ReductionOpType::Max: acc = floatBinary(ir::BinaryOpType::Max, acc, x); break;
      case ir::ReductionOpType::Min: acc = floatBinary(ir::BinaryOpType::Min, acc, x); break;
    }
  });
  define(e->out(), std::move(result));
}

void Runner::defineIntReduction(ir::ReductionOp* e, const Buffer& in, ReductionSpace& space) {
  auto init = ee_.evaluate(e->init());
  LOOM_CHECK(init.has_value(), e->toString(), ": the init is not bound");
  Buffer result{space.outShape(), {}};
  result.ints.assign(size_t(numelOf(result.shape)), normalizeScalarInt(*init, e->init()->dtype()));
  result.data.resize(result.ints.size());
  const ir::BinaryOpType op = e->opType() == ir::ReductionOpType::Sum    ? ir::BinaryOpType::Add
                              : e->opType() == ir::ReductionOpType::Prod ? ir::BinaryOpType::Mul
                              : e->opType() == ir::ReductionOpType::Max  ? ir::BinaryOpType::Max
                                                                         : ir::BinaryOpType::Min;
  space.forEach({rowMajorStrides(in.shape)}, [&](int64_t o, const std::vector<int64_t>& i) {
    int64_t& acc = result.ints[size_t(o)];
    acc = intBinary(op, acc, in.intAt(size_t(i[0])), e->out()->dtype());
  });
  define(e->out(), std::move(result));
}

void Runner::defineComplexReduction(ir::ReductionOp* e, const Buffer& in, ReductionSpace& space) {
  auto init = ee_.evaluate(e->init());
  LOOM_CHECK(init.has_value(), e->toString(), ": the init is not bound");
  const Complex init_value = roundComplex(scalarToComplex(*init), e->init()->dtype());
  std::vector<Complex> acc(size_t(numelOf(space.outShape())), init_value);
  const ir::ReductionOpType op = e->opType();
  LOOM_CHECK(op == ir::ReductionOpType::Sum || op == ir::ReductionOpType::Prod, e->toString(),
             ": only sum and prod are defined for complex values");
  space.forEach({rowMajorStrides(in.shape)}, [&](int64_t o, const std::vector<int64_t>& i) {
    const Complex x = in.at(size_t(i[0]));
    if (op == ir::ReductionOpType::Sum) {
      acc[size_t(o)] += x;
    } else {
      acc[size_t(o)] *= x;
    }
  });
  Buffer result{space.outShape(), {}};
  result.complex = true;
  for (const Complex& z : acc) {
    result.data.push_back(z.real());
    result.imag.push_back(z.imag());
  }
  define(e->out(), std::move(result));
}

// Each row along the scan dim runs from the op's identity, in double; define() rounds every
// prefix to the output dtype.
void Runner::handle(ir::ScanOp* e) {
  const Buffer& in = bufferOf(e->in(), e);
  Buffer out{in.shape, std::vector<double>(in.data.size())};
  const auto d = size_t(e->dim());
  LOOM_ASSERT(d < in.shape.size(), e->toString(), ": scan dim out of range");
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < d; ++k) outer *= in.shape[k];
  for (size_t k = d + 1; k < in.shape.size(); ++k) inner *= in.shape[k];
  const int64_t len = in.shape[d];
  const ir::ReductionOpType op = e->opType();
  const double identity = op == ir::ReductionOpType::Sum    ? 0.0
                          : op == ir::ReductionOpType::Prod ? 1.0
                          : op == ir::ReductionOpType::Max  ? -HUGE_VAL
                                                            : HUGE_VAL;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = identity;
      for (int64_t k = 0; k < len; ++k) {
        const auto at = size_t((o * len + k) * inner + i);
        const double x = in.data[at];
        switch (op) {
          case ir::ReductionOpType::Sum: acc += x; break;
          case ir::ReductionOpType::Prod: acc *= x; break;
          case ir::ReductionOpType::Max: acc = floatBinary(ir::BinaryOpType::Max, acc, x); break;
          case ir::ReductionOpType::Min: acc = floatBinary(ir::BinaryOpType::Min, acc, x); break;
        }
        out.data[at] = acc;
      }
    }
  }
  define(e->out(), std::move(out));
}

void Runner::handle(ir::WelfordOp* e) {
  auto* avg_in = e->inAvg()->dynCast<TensorView>();
  LOOM_CHECK(avg_in != nullptr, e->toString(), ": the avg input must be a tensor");
  const Buffer& x = bufferOf(avg_in, e);
  ReductionSpace space(e, welfordReference(e), avg_in, x.shape, ee_);
  const std::vector<int64_t>& out_shape = space.outShape();
  size_t n_out = size_t(numelOf(out_shape));
  auto x_strides = rowMajorStrides(x.shape);
  Welford init{ee_.evaluateDouble(e->initAvg()), ee_.evaluateDouble(e->initM2()),
               ee_.evaluateDouble(e->initN())};
  std::vector<Welford> acc(n_out);

  if (e->hasRawInput()) {
    // Two passes in double (mean, then squared deviations with a compensation term), which is
    // stable for data with a large offset, e.g. 1e6 + small noise. Masked points (padding of
    // a non-divisible split) are not visited, so they do not count.
    std::vector<double> sum(n_out, 0.0), count(n_out, 0.0), dev(n_out, 0.0);
    space.forEach({x_strides}, [&](int64_t o, const std::vector<int64_t>& i) {
      sum[size_t(o)] += x.data[size_t(i[0])];
      count[size_t(o)] += 1.0;
    });
    for (size_t i = 0; i < n_out; ++i) acc[i].avg = count[i] > 0 ? sum[i] / count[i] : 0.0;
    space.forEach({x_strides}, [&](int64_t o, const std::vector<int64_t>& i) {
      double d = x.data[size_t(i[0])] - acc[size_t(o)].avg;
      acc[size_t(o)].m2 += d * d;
      dev[size_t(o)] += d;
    });
    for (size_t i = 0; i < n_out; ++i) {
      acc[i].n = count[i];
      if (count[i] > 0) acc[i].m2 -= dev[i] * dev[i] / count[i];
      Welford w = init;
      w.combine(acc[i].avg, acc[i].m2, acc[i].n);
      acc[i] = w;
    }
  } else {
    Operand m2 = operand(e->inM2(), e);
    Operand n = operand(e->inN(), e);
    std::vector<int64_t> m2_strides(x.shape.size(), 0), n_strides(x.shape.size(), 0);
    auto strideOf = [&](const Operand& op, std::vector<int64_t>& s, ir::Val* v) {
      if (op.buffer == nullptr) return;
      LOOM_CHECK(stretchStrides(op.buffer->shape, x.shape, s), e->toString(), ": ", v->toString(),
                 " has shape [", join(op.buffer->shape), "], avg has [", join(x.shape), "]");
    };
    strideOf(m2, m2_strides, e->inM2());
    strideOf(n, n_strides, e->inN());
    std::fill(acc.begin(), acc.end(), init);
    space.forEach({x_strides, m2_strides, n_strides},
                  [&](int64_t o, const std::vector<int64_t>& i) {
                    double m2v = m2.buffer ? m2.buffer->data[size_t(i[1])] : m2.scalar;
                    double nv = n.buffer ? n.buffer->data[size_t(i[2])] : n.scalar;
                    acc[size_t(o)].combine(x.data[size_t(i[0])], m2v, nv);
                  });
  }
  Buffer avg{out_shape, {}}, m2{out_shape, {}}, count{out_shape, {}};
  for (const Welford& w : acc) {
    avg.data.push_back(w.avg);
    m2.data.push_back(w.m2);
    count.data.push_back(w.n);
  }
  define(e->outAvg(), std::move(avg));
  define(e->outM2(), std::move(m2));
  define(e->outN(), std::move(count));
}

}  // namespace loom::eval::detail
