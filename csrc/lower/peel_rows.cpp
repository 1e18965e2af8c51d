// SPDX-License-Identifier: Apache-2.0
// Pass peel_rows and the rotated row index of peeled vector rows (LowerOptions::peelVectorRows).
//
// A row whose start is not aligned to the vector (a width prime to it, a view at an odd offset)
// is rotated by the misalignment s of its start in the anchor input: slot q holds element q - s,
// and the s slots in front of the first aligned vector hold the row's last s elements. Loops,
// predicates and register buffers keep the slot space of the aligned schedule (the same trip
// counts, one vector of slots per aligned vector of the anchor); only parameter accesses, and
// iota and random numbers (which read positions), see element indices. Every vector copy along
// the row checks at run time that its elements are adjacent and its address aligned, and copies
// element by element otherwise (vectorize.cpp): the head (the vector holding the wrap), the tail
// (a partial last vector), and the vectors of a tensor whose rows lie at another alignment than
// the anchor's (a weight, an output beside an input view at an odd offset).
//
//   slot:     0  1  2  3 |  4  5  6  7 |  8  9 10 11 | 12 13 14 15    row of 13 elements, s = 3
//   element: 10 11 12  0 |  1  2  3  4 |  5  6  7  8 |  9  -  -  -
//            head: by element  body: aligned vectors      tail: by element
#include "peel_rows.h"

#include <algorithm>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/exprs.h"
#include "loom/ir/logical_map.h"
#include "loom/ir/transforms.h"

namespace loom::lower {

namespace {

// A tensor with a vector copy: the loop ID right of all others is a Vectorize loop split from
// `row` by `width`.
struct VectorTensor {
  const ir::TensorView* tv = nullptr;
  ir::IterDomain* row = nullptr;  ///< the split's input (null: not split directly)
  int64_t width = 0;
  const ir::TensorView* input = nullptr;  ///< the fusion input a copy reads, if it is one
};

std::vector<VectorTensor> vectorTensors(const LowerContext& ctx) {
  std::vector<VectorTensor> out;
  for (ir::TensorView* tv : ctx.fusion.allTvs()) {
    if (tv->nDims() == 0) continue;
    ir::IterDomain* v = tv->axis(-1);
    if (ctx.loopParallelType(v) != ir::ParallelType::Vectorize) continue;
    VectorTensor t;
    t.tv = tv;
    t.width = eval::ExpressionEvaluator().evaluateInt(ctx.loopRepresentative(v)->extent());
    auto* split = v->definition() != nullptr ? v->definition()->dynCast<ir::Split>() : nullptr;
    if (split != nullptr && split->inner() == v) t.row = split->in();
    const std::vector<ir::IterDomain*>& logical = tv->logical();
    if (std::find(logical.begin(), logical.end(), t.row) == logical.end()) t.row = nullptr;
    auto* copy =
        tv->definition() != nullptr ? tv->definition()->dynCast<ir::LoadStoreOp>() : nullptr;
    auto* in = copy != nullptr ? copy->input(0)->dynCast<ir::TensorView>() : nullptr;
    if (in != nullptr && in->isFusionInput()) t.input = in;
    out.push_back(t);
  }
  return out;
}

int64_t realDims(const ir::TensorView* tv) {
  int64_t n = 0;
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) n += !id->isBroadcast();
  return n;
}

// Ops whose lowering reads positions other than through parameter offsets, iota or random
// numbers: they would need the rotated index in places this pass does not give it.
bool readsPositions(const ir::Expr* e) {
  return e->isA<ir::PadOp>() || e->isA<ir::CatOp>() || e->isA<ir::SliceOp>() ||
         e->isA<ir::ReshapeOp>() || e->isA<ir::ScanOp>() || e->isA<ir::IndexSelectOp>() ||
         e->isA<ir::GatherOp>() || e->isA<ir::ScatterOp>();
}

// The first of tv's root-or-logical IDs along the peeled row, or null.
ir::IterDomain* rowIdOf(const LowerContext& ctx, const ir::TensorView* tv) {
  const transform::IdGraph& exact = ctx.loopGraph().exact();
  for (ir::IterDomain* id : tv->domain()->maybeRoot()) {
    if (!id->isBroadcast() && exact.areMapped(id, ctx.peel.rowId)) return id;
  }
  return nullptr;
}

// The shift s of the row the loops are in: the misalignment of its start in the anchor, read at
// the anchor's row indices (the reader's, from the enclosing loops or the thread and block
// indices); 0 when the row is shorter than s (the rotation needs s <= row).
kir::Value* rowShift(kir::Kernel& kernel, LowerContext& ctx,
                     const std::vector<kir::ForLoop*>& loops) {
  const PeeledRow& peel = ctx.peel;
  IndexBuilder b{kernel};
  IndexMap reader = consumerIndices(kernel, ctx, peel.reader, loops);
  IndexMap start;
  for (auto [p, c] : ir::pairwiseLogicalMap(peel.anchor, peel.reader)) {
    if (p->isBroadcast() || c == peel.rowId) {
      start[p] = kernel.constInt(0);
      continue;
    }
    auto it = reader.find(c);
    LOOM_CHECK(it != reader.end(),
               "lowering: a peeled vector row (LowerOptions::peelVectorRows) needs the row of ",
               peel.anchor->toString(), " where the row's tensors are indexed, but ",
               c->toString(), " of ", peel.reader->toString(),
               " has no index there (its loop neither encloses them nor is a thread or block "
               "index); peel rows whose iteration is parallel, or inline into the row's loops");
    start[p] = it->second;
  }
  kir::Value* offset = bufferOffset(kernel, ctx, peel.anchor, start);
  kir::Value* s = kernel.create<kir::Misalignment>(ctx.buffers.at(peel.anchor), offset, peel.width);
  kir::Value* row = ctx.lowerScalar(kernel, peel.rowId->extent());
  if (auto* c = row->dynCast<kir::Const>(); c != nullptr && c->asInt().value_or(0) >= peel.width) {
    return s;
  }
  return kernel.create<kir::TernaryExpr>(kIndexType, ir::TernaryOpType::Where, b.ge(row, s), s,
                                         kernel.constInt(0));
}

}  // namespace

bool peelRows(kir::Kernel& /*kernel*/, LowerContext& ctx) {
  if (!ctx.options.peelVectorRows) return false;
  std::vector<VectorTensor> vts = vectorTensors(ctx);
  // The anchor: the input copy with the most real dims (x of layer_norm, not its weight), first
  // in input order on a tie.
  const VectorTensor* anchor = nullptr;
  auto inputPos = [&](const ir::TensorView* in) {
    const auto& ins = ctx.fusion.inputs();
    return std::find(ins.begin(), ins.end(), in) - ins.begin();
  };
  for (const VectorTensor& t : vts) {
    if (t.input == nullptr || t.row == nullptr) continue;
    if (anchor == nullptr || realDims(t.input) > realDims(anchor->input) ||
        (realDims(t.input) == realDims(anchor->input) &&
         inputPos(t.input) < inputPos(anchor->input))) {
      anchor = &t;
    }
  }
  if (anchor == nullptr) return false;  // no vectorized input row: nothing to peel
  PeeledRow& peel = ctx.peel;
  peel.anchor = anchor->input;
  peel.reader = anchor->tv;
  peel.rowId = anchor->row;
  peel.width = anchor->width;
  const transform::IdGraph& exact = ctx.loopGraph().exact();
  for (const VectorTensor& t : vts) {
    if (t.row != nullptr && exact.areMapped(t.row, peel.rowId)) {
      peel.vectorTvs.insert(t.tv);
      continue;
    }
    // Its slots are rotated like the row's, but its vector is not split from the row alone.
    LOOM_CHECK(rowIdOf(ctx, t.tv) == nullptr, "lowering: ", t.tv->toString(),
               " is vectorized along the peeled row of ", peel.anchor->toString(),
               " (LowerOptions::peelVectorRows), but its vector ID is not split from that row's "
               "ID alone; a peeled row's vectors split the one row ID");
  }
  for (const ir::Expr* e : ctx.exprs) {
    LOOM_CHECK(!readsPositions(e),
               "lowering: peeled vector rows (LowerOptions::peelVectorRows) do not support ",
               e->opName(), " (", e->output(0)->toString(), "): it reads positions along the row");
  }
  return false;
}

IndexMap peeledIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                       const IndexMap& idx, const std::vector<kir::ForLoop*>& loops) {
  if (!ctx.peel.active()) return idx;
  ir::IterDomain* h = rowIdOf(ctx, tv);
  if (h == nullptr) return idx;
  auto it = idx.find(h);
  LOOM_ASSERT(it != idx.end(), "peeled row: no slot index for ", h->toString(), " of ",
              tv->toString());
  IndexBuilder b{kernel};
  kir::Value* q = it->second;
  kir::Value* s = rowShift(kernel, ctx, loops);
  kir::Value* wrap =
      kernel.create<kir::TernaryExpr>(kIndexType, ir::TernaryOpType::Where, b.lt(q, s),
                                      ctx.lowerScalar(kernel, h->extent()), kernel.constInt(0));
  IndexMap out = idx;
  out[h] = b.add(b.sub(q, s), wrap);
  return out;
}

}  // namespace loom::lower
