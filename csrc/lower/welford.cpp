// SPDX-License-Identifier: Apache-2.0
// Welford helpers: the accumulation statement built at indexing, and the runtime triple's layout.
#include "welford.h"

#include <algorithm>

#include "loom/ir/exprs.h"

namespace loom::lower {

kir::Stmt* lowerWelfordAccumulate(kir::Kernel& kernel, const kir::TensorOp* op,
                                  const std::vector<kir::Value*>& ins) {
  const auto* w = op->expr->as<ir::WelfordOp>();
  LOOM_ASSERT(op->role == kir::TensorOpRole::Accumulate && op->m2 && op->n,
              "Welford not lowered by the reductions pass: ", op->out->toString());
  // A raw input is one sample per element (m2 = 0, n = 1): the cheaper update suffices.
  bool raw = w->hasRawInput();
  auto* s = kernel.create<kir::Welford>(raw ? kir::WelfordMode::Update : kir::WelfordMode::Combine,
                                        op->acc, op->m2, op->n);
  s->in[0] = ins.at(0);
  if (!raw) {
    s->in[1] = ins.at(1);
    s->in[2] = ins.at(2);
  }
  return s;
}

int64_t welfordBytes(DataType avg, DataType n) {
  int64_t t = int64_t(dataTypeSize(avg));
  int64_t c = int64_t(dataTypeSize(n));
  int64_t align = std::max(t, c);
  int64_t off = (2 * t + c - 1) / c * c + c;
  return (off + align - 1) / align * align;
}

DataType accumulatorType(DataType dtype) {
  if (isReducedPrecision(dtype)) return DataType::Float32;
  // Bool and the 8- and 16-bit integers accumulate in int (every value fits exactly).
  if (dtype == DataType::Bool || (isIntegralType(dtype) && dataTypeSize(dtype) < 4)) {
    return DataType::Int32;
  }
  return dtype;
}

std::string scratchCType(DataType dtype) {
  switch (dtype) {
    case DataType::Float32: return "float";
    case DataType::Float64: return "double";
    case DataType::Int32: return "int";
    case DataType::Int64: return "long long";
    case DataType::UInt32: return "unsigned";
    case DataType::UInt64: return "unsigned long long";
    case DataType::ComplexFloat: return "loom::Complex<float>";
    case DataType::ComplexDouble: return "loom::Complex<double>";
    default: break;
  }
  LOOM_ASSERT(false, "grid reduction scratch of ", dataTypeName(dtype),
              " (16-bit and bool reductions accumulate in a wider type)");
  LOOM_UNREACHABLE();
}

}  // namespace loom::lower
