// SPDX-License-Identifier: Apache-2.0
// Pass indexing: every TensorOp becomes a scalar Store whose value reads its inputs with Loads.
//
// Indices come from index_compute: the output's loop indices are walked back to its logical
// indices, mapped to each producer's logical IDs, and turned into an offset: for parameters,
// logical index times the runtime stride (broadcast IDs contribute nothing), except where the
// contiguity flags make strides known (a contiguous innermost dim: none; contiguous dims whose
// indices come from one merged loop index: that index times one stride); dense over the
// allocation IDs for local buffers. In a peeled vector row (peel_rows.cpp) parameters, iota and
// random numbers take the row element a slot holds, local buffers the slot.
//
//   before: tensor T2 = add(T0, T1)                       (T0 [t, t], T1 [f, f], merged loop i0)
//   after:  T2[i0] = (T0[i0] + T1[(((i0 / T1.size[1]) * T1.stride[0]) +
//                                  ((i0 % T1.size[1]) * T1.stride[1]))])
#include <optional>

#include "index_compute.h"
#include "indexed_ops.h"
#include "loom/ir/exprs.h"
#include "loom/ir/transforms.h"
#include "peel_rows.h"
#include "sorts.h"
#include "welford.h"

namespace loom::lower {

namespace {

template <typename T>
const T* dyn(const ir::Expr* e) {
  return e->isA<T>() ? e->as<T>() : nullptr;
}

ir::BinaryOpType combineOp(ir::ReductionOpType op) {
  switch (op) {
    case ir::ReductionOpType::Sum: return ir::BinaryOpType::Add;
    case ir::ReductionOpType::Prod: return ir::BinaryOpType::Mul;
    case ir::ReductionOpType::Max: return ir::BinaryOpType::Max;
    case ir::ReductionOpType::Min: return ir::BinaryOpType::Min;
  }
  LOOM_UNREACHABLE();
}

// The input's value where the padded index falls inside it, `value` elsewhere: for each resized
// dim, the root index (logical - left) must be in [0, extent). The load sits in the taken branch
// of a `?:`, so it is never evaluated at a border index.
kir::Value* lowerPad(kir::Kernel& kernel, LowerContext& ctx, const ir::PadOp* pad,
                     const IndexMap& idx, kir::Value* in, kir::Value* value) {
  IndexBuilder b{kernel};
  kir::Value* inside = nullptr;
  for (ir::IterDomain* root : pad->out()->domain()->maybeRoot()) {
    bool resized = false;
    for (ir::Expr* use : root->uses()) resized |= use->isA<ir::Resize>();
    if (!resized) continue;
    kir::Value* r = idx.at(root);
    inside =
        b.logicalAnd(inside, b.logicalAnd(b.ge(r, kernel.constInt(0)),
                                          b.lt(r, ctx.lowerScalar(kernel, root->logicalExtent()))));
  }
  if (inside == nullptr) return in;
  DataType dt = pad->out()->dtype();
  return kernel.create<kir::TernaryExpr>(dt, ir::TernaryOpType::Where, inside, in, value);
}

// Input k where the output index along the cat dim falls in [left_k, left_k + extent_k): a chain
// of selects, the last input taking what is left.
kir::Value* lowerCat(kir::Kernel& kernel, LowerContext& ctx, const ir::CatOp* cat,
                     const IndexMap& idx, const std::vector<kir::Value*>& ins) {
  IndexBuilder b{kernel};
  ir::IterDomain* id = ir::TensorDomain::noReductions(cat->out()->logical()).at(size_t(cat->dim()));
  kir::Value* i = idx.at(id);
  DataType dt = cat->out()->dtype();
  kir::Value* value = ins.back();
  for (size_t k = ins.size() - 1; k-- > 0;) {
    const ir::Resize* r = cat->inputResize(k);
    LOOM_ASSERT(r != nullptr, "cat input ", k, " of ", cat->out()->toString(),
                " is not padded to the output extent in this fusion");
    kir::Value* lo = ctx.lowerScalar(kernel, r->left());
    kir::Value* hi = b.add(lo, ctx.lowerScalar(kernel, r->in()->logicalExtent()));
    kir::Value* in_range = b.logicalAnd(b.ge(i, lo), b.lt(i, hi));
    value = kernel.create<kir::TernaryExpr>(dt, ir::TernaryOpType::Where, in_range, ins[k], value);
  }
  return value;
}

// The number of random significand bits a sample of `dt` carries (include/loom/eval/philox.h).
int64_t rngDigits(DataType dt) {
  switch (dt) {
    case DataType::Float64: return 53;
    case DataType::Float32: return 24;
    case DataType::Float16: return 11;
    case DataType::BFloat16: return 8;
    default: LOOM_UNREACHABLE("random numbers of ", dt);
  }
}

// The runtime's Philox sample (runtime/random.cuh) at the element's row-major linear logical
// index, sum_d i_d * prod_{d' > d} extent_d', computed in 64 bits from the logical indices: it
// depends on nothing the schedule chose, so every schedule and backend draws the same numbers.
// A block of a larger draw (a device's shard) indexes the larger draw: i_d + offset_d in the
// global extents (RngOp::indexOffsets, ins[4..4+n) and globalExtents, ins[4+n..4+2n)).
kir::Value* lowerRng(kir::Kernel& kernel, LowerContext& ctx, const ir::RngOp* rng,
                     const IndexMap& idx, const std::vector<kir::Value*>& ins) {
  auto wide = [&](kir::Value* v) {
    return v->dtype() == DataType::Int64
               ? v
               : kernel.create<kir::UnaryExpr>(DataType::Int64, ir::UnaryOpType::Cast, v);
  };
  const bool block = rng->hasIndexOffsets();
  const size_t n = rng->indexOffsets().size();
  kir::Value* linear = nullptr;
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(rng->out()->logical());
  for (size_t d = 0; d < ids.size(); ++d) {
    ir::IterDomain* id = ids[d];
    // A Broadcast ID of an RngOp output has size 1 (ops make no expanded ones): index 0.
    if (id->isBroadcast()) continue;
    kir::Value* i = wide(idx.at(id));
    if (block) {
      i = kernel.create<kir::BinaryExpr>(DataType::Int64, ir::BinaryOpType::Add, i,
                                         wide(ins.at(4 + d)));
    }
    if (linear == nullptr) {
      linear = i;
      continue;
    }
    kir::Value* extent = block ? wide(ins.at(4 + n + d))
                               : wide(ctx.lowerScalar(kernel, id->logicalExtent()));
    linear = kernel.create<kir::BinaryExpr>(
        DataType::Int64, ir::BinaryOpType::Add,
        kernel.create<kir::BinaryExpr>(DataType::Int64, ir::BinaryOpType::Mul, linear, extent), i);
  }
  if (linear == nullptr) {
    linear = kernel.create<kir::Const>(DataType::Int64, ir::ScalarValue{int64_t(0)});
  }
  const DataType dt = rng->out()->dtype();
  const bool normal = rng->rngType() == ir::RngOpType::Normal;
  kir::Value* digits = kernel.create<kir::Const>(DataType::Int32, ir::ScalarValue{rngDigits(dt)});
  kir::Value* sample = kernel.create<kir::Call>(
      DataType::Float64, normal ? "loom_rng_normal" : "loom_rng_uniform",
      std::vector<kir::Value*>{ins[0], ins[1], linear, digits, ins[2], ins[3]});
  return dt == DataType::Float64 ? sample
                                 : kernel.create<kir::UnaryExpr>(dt, ir::UnaryOpType::Cast, sample);
}

// The consumer indices of one op: the loops' slots, and (made once, when a parameter or a
// position is read) the row elements they hold in a peeled vector row (peel_rows.h).
struct OpIndices {
  kir::Kernel& kernel;
  LowerContext& ctx;
  const kir::TensorOp* op;
  const std::vector<kir::ForLoop*>& loops;
  IndexMap slots;
  std::optional<IndexMap> elements_;

  const IndexMap& elements() {
    if (!ctx.peel.active()) return slots;
    if (!elements_) elements_ = peeledIndices(kernel, ctx, op->out, slots, loops);
    return *elements_;
  }
  // Parameters are read and written at elements, local and shared buffers at slots.
  const IndexMap& of(const ir::TensorView* tv) {
    return ctx.buffers.at(tv)->kind == kir::BufferKind::Param ? elements() : slots;
  }
};

kir::Stmt* lowerOp(kir::Kernel& kernel, LowerContext& ctx, const kir::TensorOp* op,
                   const std::vector<kir::ForLoop*>& loops) {
  if (ir::isSortExpr(op->expr)) return lowerSortRow(kernel, ctx, op, loops);  // sorts.cpp
  OpIndices at{kernel, ctx, op, loops, consumerIndices(kernel, ctx, op->out, loops), {}};
  const IndexMap& idx = at.slots;
  const kir::Buffer* out_buf = ctx.buffers.at(op->out);
  if (op->role == kir::TensorOpRole::WriteResult) {
    return kernel.create<kir::Store>(out_buf, bufferOffset(kernel, ctx, op->out, at.of(op->out)),
                                     op->acc);
  }
  std::vector<kir::Value*> ins;
  for (ir::Val* in : op->expr->inputs()) {
    if (ir::isIndexedOperand(op->expr, in)) {
      ins.push_back(nullptr);  // read at computed positions (indexed_ops.cpp)
      continue;
    }
    if (auto* p = in->dynCast<ir::TensorView>()) {
      IndexMap pidx = producerIndices(kernel, ctx, p, op->out, at.of(p));
      ins.push_back(
          kernel.create<kir::Load>(ctx.buffers.at(p), bufferOffset(kernel, ctx, p, pidx)));
    } else {
      ins.push_back(ctx.lowerScalar(kernel, in));
    }
  }
  DataType dt = op->out->dtype();
  kir::Value* value = nullptr;
  const ir::Expr* e = op->expr;
  if (auto* u = dyn<ir::UnaryOp>(e)) {
    value = kernel.create<kir::UnaryExpr>(dt, u->opType(), ins[0]);
  } else if (auto* bin = dyn<ir::BinaryOp>(e)) {
    value = kernel.create<kir::BinaryExpr>(dt, bin->opType(), ins[0], ins[1], /*total=*/true);
  } else if (auto* t = dyn<ir::TernaryOp>(e)) {
    value = kernel.create<kir::TernaryExpr>(dt, t->opType(), ins[0], ins[1], ins[2]);
  } else if (e->isA<ir::WelfordOp>()) {
    return lowerWelfordAccumulate(kernel, op, ins);  // welford.cpp
  } else if (auto* r = dyn<ir::ReductionOp>(e)) {
    LOOM_ASSERT(op->role == kir::TensorOpRole::Accumulate,
                "reduction not lowered: ", op->out->toString());
    if (op->acc == nullptr) {
      // Accumulation in the output's own buffer (loop_nests: iteration IDs inside the reduction
      // loops): out[i] = out[i] op in[i].
      kir::Value* offset = bufferOffset(kernel, ctx, op->out, at.of(op->out));
      kir::Value* prev = kernel.create<kir::Load>(out_buf, offset);
      return kernel.create<kir::Store>(
          out_buf, offset,
          kernel.create<kir::BinaryExpr>(dt, combineOp(r->opType()), prev, ins[0]));
    }
    // The accumulator may be wider than the output (16-bit results accumulate in f32).
    DataType acc_dt = op->acc->dtype();
    kir::Value* in = ins[0];
    if (in->dtype() != acc_dt)
      in = kernel.create<kir::UnaryExpr>(acc_dt, ir::UnaryOpType::Cast, in);
    return kernel.create<kir::Store>(
        op->acc, kernel.create<kir::BinaryExpr>(acc_dt, combineOp(r->opType()), op->acc, in));
  } else if (auto* scan = dyn<ir::ScanOp>(e)) {
    // The running prefix (pass scans): acc = acc op in[i]; the WriteResult after it stores it.
    LOOM_ASSERT(op->role == kir::TensorOpRole::Accumulate && op->acc != nullptr,
                "scan not lowered: ", op->out->toString());
    DataType acc_dt = op->acc->dtype();
    kir::Value* in = ins[0];
    if (in->dtype() != acc_dt)
      in = kernel.create<kir::UnaryExpr>(acc_dt, ir::UnaryOpType::Cast, in);
    return kernel.create<kir::Store>(
        op->acc, kernel.create<kir::BinaryExpr>(acc_dt, combineOp(scan->opType()), op->acc, in));
  } else if (auto* pad = dyn<ir::PadOp>(e)) {
    value = lowerPad(kernel, ctx, pad, idx, ins[0], ins[1]);
  } else if (auto* cat = dyn<ir::CatOp>(e)) {
    value = lowerCat(kernel, ctx, cat, idx, ins);
  } else if (e->isA<ir::FullOp>()) {
    value = ins[0];
  } else if (auto* iota = dyn<ir::IotaOp>(e)) {
    // start + i * step in the output's type, i the logical index (plus the index offset of a
    // device's shard of a longer iota).
    ir::IterDomain* id = ir::TensorDomain::noReductions(op->out->logical()).at(0);
    kir::Value* pos = at.elements().at(id);
    if (iota->indexOffset() != nullptr) {
      auto wide = [&](kir::Value* v) {
        return v->dtype() == DataType::Int64
                   ? v
                   : kernel.create<kir::UnaryExpr>(DataType::Int64, ir::UnaryOpType::Cast, v);
      };
      pos = kernel.create<kir::BinaryExpr>(DataType::Int64, ir::BinaryOpType::Add, wide(pos),
                                           wide(ins.at(2)));
    }
    kir::Value* i = kernel.create<kir::UnaryExpr>(dt, ir::UnaryOpType::Cast, pos);
    value = kernel.create<kir::BinaryExpr>(
        dt, ir::BinaryOpType::Add, ins[0],
        kernel.create<kir::BinaryExpr>(dt, ir::BinaryOpType::Mul, i, ins[1]));
  } else if (e->isA<ir::IndexSelectOp>() || e->isA<ir::GatherOp>()) {
    value = lowerIndexedRead(kernel, ctx, e, idx, ins[1]);
  } else if (auto* sc = dyn<ir::ScatterOp>(e)) {
    return lowerScatter(kernel, ctx, sc, idx, ins[0], out_buf,
                        bufferOffset(kernel, ctx, op->out, idx));
  } else if (auto* rng = dyn<ir::RngOp>(e)) {
    value = lowerRng(kernel, ctx, rng, at.elements(), ins);
  } else if (e->isA<ir::LoadStoreOp>() || e->isA<ir::BroadcastOp>() || e->isA<ir::SqueezeOp>() ||
             e->isA<ir::ExpandOp>() || e->isA<ir::ReshapeOp>() || e->isA<ir::SliceOp>()) {
    // Copies: the domains carry the semantics (a reshape's root -> logical splits and merges
    // give the consumer's root indices, which are the producer's logical ones; a slice's
    // Resize shifts them by its start).
    value = ins[0];
  } else {
    LOOM_THROW("lowering: ", e->opName(), " (", op->out->toString(),
               ") is not supported by the kernel executor yet");
  }
  return kernel.create<kir::Store>(out_buf, bufferOffset(kernel, ctx, op->out, at.of(op->out)),
                                   value);
}

}  // namespace

bool indexing(kir::Kernel& kernel, LowerContext& ctx) {
  bool changed = false;
  std::vector<kir::ForLoop*> loops;
  kir::forEachWithLoops(kernel.body, loops,
                        [&](kir::Scope& scope, size_t i, const std::vector<kir::ForLoop*>& stack) {
                          auto* op = scope[i]->dynCast<kir::TensorOp>();
                          if (op == nullptr) return;
                          scope[i] = lowerOp(kernel, ctx, op, stack);
                          changed = true;
                        });
  // After the loops that copied self, so the adds come after the copies (indexed_ops.h).
  changed |= appendAtomicScatters(kernel, ctx);
  return changed;
}

}  // namespace loom::lower
