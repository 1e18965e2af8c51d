// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's factories: full, iota and the random ops (Philox, as the kernels).
#include "eval/reference_runner.h"
#include "loom/eval/philox.h"
#include "loom/ir/fusion.h"

namespace loom::eval::detail {

using ir::TensorView;

void Runner::handle(ir::FullOp* e) {
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
  const Operand value = operand(e->value(), e);
  Buffer b{shape, std::vector<double>(size_t(numelOf(shape)), value.scalar)};
  if (isComplexType(e->out()->dtype())) b.makeComplex(value.complex_scalar.imag());
  if (isIntegralType(e->out()->dtype())) b.ints.assign(b.data.size(), value.int_scalar);
  define(e->out(), std::move(b));
}

void Runner::handle(ir::IotaOp* e) {
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "length");
  LOOM_CHECK(shape.size() == 1, e->toString(), ": ", e->out()->toString(), " has rank ",
             shape.size(), "; iota makes 1-D tensors");
  const Operand start_op = operand(e->start(), e);
  const Operand step_op = operand(e->step(), e);
  double start = start_op.scalar;
  double step = step_op.scalar;
  // A device's shard of a longer iota starts at its index offset.
  const int64_t first = e->indexOffset() != nullptr ? ee_.evaluateInt(e->indexOffset()) : 0;
  Buffer b{shape, std::vector<double>(size_t(shape[0]))};
  for (int64_t i = 0; i < shape[0]; ++i) b.data[size_t(i)] = start + double(first + i) * step;
  if (isIntegralType(e->out()->dtype())) {  // start + i * step in int64, wrapping
    b.ints.resize(b.data.size());
    for (int64_t i = 0; i < shape[0]; ++i) {
      b.ints[size_t(i)] = intBinary(ir::BinaryOpType::Add, start_op.int_scalar,
                                    intBinary(ir::BinaryOpType::Mul, first + i, step_op.int_scalar));
    }
  }
  define(e->out(), std::move(b));
}

void Runner::handle(ir::RngOp* e) {
  std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
  const auto seed = uint64_t(ee_.evaluateInt(e->seed()));
  const auto offset = uint64_t(ee_.evaluateInt(e->offset()));
  const double p0 = operand(e->param0(), e).scalar;
  const double p1 = operand(e->param1(), e).scalar;
  Buffer b{shape, std::vector<double>(size_t(numelOf(shape)))};
  std::vector<int64_t> offsets, global;  // a block of a larger draw (a device's shard)
  for (ir::Scalar* o : e->indexOffsets()) offsets.push_back(ee_.evaluateInt(o));
  for (ir::Scalar* g : e->globalExtents()) global.push_back(ee_.evaluateInt(g));
  for (size_t i = 0; i < b.data.size(); ++i) {
    const uint64_t index = e->hasIndexOffsets() ? rngBlockIndex(shape, offsets, global, i) : i;
    b.data[i] = rngSample(e->rngType(), e->out()->dtype(), seed, offset, index, p0, p1);
  }
  define(e->out(), std::move(b));
}

}  // namespace loom::eval::detail
