// SPDX-License-Identifier: Apache-2.0
// Raw-IR builders (no ops layer) and the round-trip check shared by the .fus text tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/support/error.h"

namespace loom::ir::test {

inline TensorView* makeTv(std::vector<IterDomain*> ids, DataType dtype,
                          MemoryType mem = MemoryType::Local) {
  return IrBuilder::create<TensorView>(IrBuilder::create<TensorDomain>(std::move(ids)), dtype,
                                       mem);
}

/// A global input tensor with the given extents (Iteration IDs).
inline TensorView* makeInput(std::vector<Scalar*> extents, DataType dtype = DataType::Float32) {
  std::vector<IterDomain*> ids;
  for (Scalar* e : extents) ids.push_back(IterDomain::create(e));
  auto* tv = makeTv(ids, dtype, MemoryType::Global);
  FusionGuard::current()->addInput(tv);
  return tv;
}

/// Fresh copies of `tv`'s logical IDs without reductions (what a pointwise consumer gets).
inline std::vector<IterDomain*> copyIds(TensorView* tv) {
  std::vector<IterDomain*> ids;
  for (IterDomain* id : TensorDomain::noReductions(tv->logical())) {
    ids.push_back(id->cloneWithoutDefinition());
  }
  return ids;
}

inline TensorView* pointwise(TensorView* in, UnaryOpType op) {
  auto* out = makeTv(copyIds(in), in->dtype());
  IrBuilder::create<UnaryOp>(op, out, in);
  return out;
}

inline TensorView* cast(TensorView* in, DataType dtype) {
  auto* out = makeTv(copyIds(in), dtype);
  IrBuilder::create<UnaryOp>(UnaryOpType::Cast, out, in);
  return out;
}

inline TensorView* binary(TensorView* a, Val* b, BinaryOpType op) {
  auto* out = makeTv(copyIds(a), a->dtype());
  IrBuilder::create<BinaryOp>(op, out, a, b);
  return out;
}

/// 2-D transpose: root mirrors the input, logical is the root reversed.
inline TensorView* permute(TensorView* in) {
  auto root = copyIds(in);
  std::vector<IterDomain*> logical(root.rbegin(), root.rend());
  auto* out = IrBuilder::create<TensorView>(
      IrBuilder::create<TensorDomain>(root, logical, std::vector<IterDomain*>{},
                                      std::vector<IterDomain*>{}),
      in->dtype());
  IrBuilder::create<LoadStoreOp>(LoadStoreOpType::Set, out, in);
  return out;
}

/// 2-D -> 1-D reshape: the logical ID is the merge of the two root IDs.
inline TensorView* reshapeMerge(TensorView* in) {
  auto root = copyIds(in);
  IterDomain* merged = IterDomain::merge(root[0], root[1], /*rfactor_product=*/true);
  auto* out = IrBuilder::create<TensorView>(
      IrBuilder::create<TensorDomain>(root, std::vector<IterDomain*>{merged},
                                      std::vector<IterDomain*>{}, std::vector<IterDomain*>{}),
      in->dtype());
  IrBuilder::create<ReshapeOp>(out, in);
  return out;
}

/// Copies of `in`'s IDs with the last one turned into a Reduction ID.
inline std::vector<IterDomain*> reducedIds(TensorView* in) {
  auto ids = copyIds(in);
  IterDomain* last = ids.back();
  ids.back() = last->cloneWithIterType(IterType::Reduction);
  return ids;
}

inline TensorView* sumLast(TensorView* in) {
  auto* out = makeTv(reducedIds(in), in->dtype());
  IrBuilder::create<ReductionOp>(ReductionOpType::Sum, IrBuilder::constant(0.0, in->dtype()), out,
                                 in);
  return out;
}

/// Welford over the last axis of a raw input of a floating dtype: {avg, m2, n}.
inline std::vector<TensorView*> welford(TensorView* in) {
  const DataType t = in->dtype();
  auto* avg = makeTv(reducedIds(in), t);
  auto* m2 = makeTv(reducedIds(in), t);
  auto* n = makeTv(reducedIds(in), DataType::Int64);
  IrBuilder::create<WelfordOp>(avg, m2, n, in, IrBuilder::constant(0.0, t),
                               IrBuilder::constant(int64_t(1)), IrBuilder::constant(0.0, t),
                               IrBuilder::constant(0.0, t), IrBuilder::constant(int64_t(0)));
  return {avg, m2, n};
}

/// Appends a Broadcast ID.
inline TensorView* broadcastLast(TensorView* in) {
  auto ids = copyIds(in);
  std::vector<bool> flags(ids.size(), false);
  ids.push_back(IterDomain::create(IrBuilder::index(1), IterType::Broadcast));
  flags.push_back(true);
  auto* out = makeTv(ids, in->dtype());
  IrBuilder::create<BroadcastOp>(out, in, flags);
  return out;
}

/// Expands the last (broadcast) ID to `extent`.
inline TensorView* expandLast(TensorView* in, Scalar* extent) {
  auto ids = copyIds(in);
  IterDomain* last = ids.back();
  ids.back() = IrBuilder::create<IterDomain>(last->start(), last->extent(), IterType::Broadcast,
                                             ParallelType::Serial, extent);
  auto* out = makeTv(ids, in->dtype());
  IrBuilder::create<ExpandOp>(out, in);
  return out;
}

/// The message of the UserError parsing `text` throws, or "" when it parses.
inline std::string parseError(const std::string& text) {
  try {
    parseFusion(text, "bad.fus");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

/// print(parse(print(f))) == print(f) and parse(print(f)) is structurally equal to f.
inline void expectRoundTrip(const Fusion& f) {
  std::string text = printFusion(f);
  std::unique_ptr<Fusion> g;
  try {
    g = parseFusion(text, "roundtrip.fus");
  } catch (const std::exception& e) {
    FAIL() << e.what() << "\n" << text;
  }
  EXPECT_EQ(printFusion(*g), text);
  std::string why;
  EXPECT_TRUE(structurallyEqual(*g, f, &why)) << why << "\n" << text;
}

}  // namespace loom::ir::test
