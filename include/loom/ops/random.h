// SPDX-License-Identifier: Apache-2.0
// Random numbers: counter-based (Philox4x32-10), so element i of a result is a function of the
// seed, the offset and its row-major linear index i only: the same on the host backend, the GPU
// and the reference evaluator, whatever the schedule. Seed and offset are integers or integer
// Scalars (fusion inputs, so one compiled fusion draws fresh numbers per run); the same (seed,
// offset) gives the same tensor, another offset an independent one. docs/ops.md, "Random numbers",
// states the rules for each dtype.
//
//   auto* seed = ir::IrBuilder::symbolic(DataType::Int64);
//   auto* offset = ir::IrBuilder::symbolic(DataType::Int64);
//   fusion.addInput(seed);
//   fusion.addInput(offset);
//   auto [y, mask] = ops::dropout(x, 0.1, seed, offset);
#pragma once

#include "loom/ops/operand.h"
#include "loom/ops/size.h"

namespace loom::ops {

/// Uniform in [low, high) (a 16-bit dtype may round a value up to high): RngOp Uniform.
TensorView* uniform(const SizeList& shape, Operand low, Operand high, Operand seed, Operand offset,
                    DataType dtype = DataType::Float32);
/// Normal with mean `mean` and standard deviation `std` (Box-Muller): RngOp Normal.
TensorView* normal(const SizeList& shape, Operand mean, Operand std, Operand seed, Operand offset,
                   DataType dtype = DataType::Float32);
/// torch.rand: uniform(shape, 0, 1, ...).
TensorView* rand(const SizeList& shape, Operand seed, Operand offset,
                 DataType dtype = DataType::Float32);
/// torch.randn: normal(shape, 0, 1, ...).
TensorView* randn(const SizeList& shape, Operand seed, Operand offset,
                  DataType dtype = DataType::Float32);
/// rand and randn with the sizes and dtype of `like` (a floating tensor); an expanded dim of
/// `like` gets independent values along it, as in torch.
TensorView* randLike(TensorView* like, Operand seed, Operand offset);
TensorView* randnLike(TensorView* like, Operand seed, Operand offset);

/// torch.bernoulli(p): 1 where a Float32 rand of p's shape is below p, else 0, in p's dtype.
TensorView* bernoulli(TensorView* p, Operand seed, Operand offset);

struct DropoutResult {
  TensorView* output;  ///< x * mask / (1 - p), x's dtype (computed in Float32 for 16-bit x)
  TensorView* mask;    ///< Bool: true where the element is kept
};
/// torch.nn.functional.dropout in training: each element is zeroed with probability `p` (a number
/// in [0, 1] or a floating Scalar) and the kept ones are scaled by 1 / (1 - p); p = 1 zeroes all.
/// The mask is rand < 1 - p on a Float32 rand of x's shape.
DropoutResult dropout(TensorView* x, Operand p, Operand seed, Operand offset);

}  // namespace loom::ops
