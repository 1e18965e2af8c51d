// SPDX-License-Identifier: Apache-2.0
// Checked indexed reads of gather / index_select / take_along_axis / embedding and the serial
// search of scatter (indexed_ops.h).
//
//   gather T2 = gather(T0, T1, dim=1):
//     T2[i] = (loom_index_check(T1[i], T0.size[1], 0)
//                ? T0[(i0 * T0.stride[0]) + ((long long)T1[i] * T0.stride[1])] : 0.0f)
#include "indexed_ops.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/tensor_domain.h"

namespace loom::lower {

namespace {

std::vector<ir::IterDomain*> dimsOf(const ir::TensorView* tv) {
  return ir::TensorDomain::noReductions(tv->logical());
}

// The tensor a user named: schedulers read fusion inputs through register caches (copies), and
// index_select's index is the user's broadcast to the output's rank.
std::string userName(const ir::TensorView* tv) {
  while (tv->definition() != nullptr &&
         (tv->definition()->isA<ir::LoadStoreOp>() || tv->definition()->isA<ir::BroadcastOp>())) {
    tv = tv->definition()->input(0)->as<ir::TensorView>();
  }
  return tv->toString();
}

kir::Value* zeroOf(kir::Kernel& kernel, DataType dt) {
  if (dt == DataType::Bool) return kernel.create<kir::Const>(dt, ir::ScalarValue{false});
  if (isIntegralType(dt)) return kernel.create<kir::Const>(dt, ir::ScalarValue{int64_t(0)});
  return kernel.create<kir::Const>(dt, ir::ScalarValue{0.0});
}

// `loom_index_check(value, extent, site)` (runtime/index.cuh; it records a failure in the
// kernel's `loom_index_error` words): true when the value lies in [0, extent). A new check site
// names the op and tensors for the executor's message.
kir::Value* checkedIn(kir::Kernel& kernel, LowerContext& ctx, const ir::Expr* e,
                      const ir::TensorView* index, const ir::TensorView* indexed, int64_t dim,
                      kir::Value* value) {
  const ir::Scalar* extent = dimsOf(indexed).at(size_t(dim))->logicalExtent();
  const auto site = int64_t(kernel.indexChecks.size());
  kernel.indexChecks.push_back({e->opName(), userName(index), userName(indexed), dim, extent});
  return kernel.create<kir::Call>(
      DataType::Bool, "loom_index_check",
      std::vector<kir::Value*>{value, ctx.lowerScalar(kernel, extent),
                               kernel.create<kir::Const>(DataType::Int32, ir::ScalarValue{site})});
}

kir::Value* asIndex(kir::Kernel& kernel, kir::Value* v) {
  return kernel.create<kir::UnaryExpr>(kIndexType, ir::UnaryOpType::Cast, v);
}

}  // namespace

kir::Value* lowerIndexedRead(kir::Kernel& kernel, LowerContext& ctx, const ir::Expr* e,
                             const IndexMap& idx, kir::Value* index_value) {
  const auto* out = e->output(0)->as<ir::TensorView>();
  const auto* lookup = e->input(0)->as<ir::TensorView>();
  const auto* index = e->input(1)->as<ir::TensorView>();
  const std::vector<ir::IterDomain*> o = dimsOf(out);
  const std::vector<ir::IterDomain*> l = dimsOf(lookup);
  const auto* is = e->dynCast<ir::IndexSelectOp>();
  const int64_t dim = is != nullptr ? is->dim() : e->as<ir::GatherOp>()->dim();
  // index_select puts index's span where lookup's `dim` was: lookup dims after it move by the
  // span's length - 1 in the output.
  const int64_t shift = is != nullptr ? int64_t(o.size()) - int64_t(l.size()) : 0;
  IndexMap lidx;
  for (size_t d = 0; d < l.size(); ++d) {
    if (int64_t(d) == dim) {
      lidx[l[d]] = asIndex(kernel, index_value);
      continue;
    }
    const size_t od = int64_t(d) < dim ? d : size_t(int64_t(d) + shift);
    lidx[l[d]] = l[d]->isBroadcast() ? kernel.constInt(0) : idx.at(o.at(od));
  }
  kir::Value* ok = checkedIn(kernel, ctx, e, index, lookup, dim, index_value);
  kir::Value* read =
      kernel.create<kir::Load>(ctx.buffers.at(lookup), bufferOffset(kernel, ctx, lookup, lidx));
  const DataType dt = out->dtype();
  return kernel.create<kir::TernaryExpr>(dt, ir::TernaryOpType::Where, ok, read,
                                         zeroOf(kernel, dt));
}

kir::Stmt* lowerScatter(kir::Kernel& kernel, LowerContext& ctx, const ir::ScatterOp* sc,
                        const IndexMap& idx, kir::Value* self_value, const kir::Buffer* out,
                        kir::Value* offset) {
  LOOM_ASSERT(self_value != nullptr, sc->toString(), ": the input ", sc->self()->toString(),
              " is also read at indexed positions (ops::scatter copies it)");
  if (sc->atomic()) return kernel.create<kir::Store>(out, offset, self_value);
  IndexBuilder b{kernel};
  const std::vector<ir::IterDomain*> o = dimsOf(sc->out());
  const std::vector<ir::IterDomain*> x = dimsOf(sc->index());
  const std::vector<ir::IterDomain*> s = dimsOf(sc->src());
  const auto dim = size_t(sc->dim());
  const DataType dt = sc->out()->dtype();
  // 16-bit sums accumulate in f32, as reductions do (one rounding at the end).
  const DataType acc_dt = isReducedPrecision(dt) ? DataType::Float32 : dt;
  auto as = [&](kir::Value* v, DataType t) {
    return v->dtype() == t ? v : kernel.create<kir::UnaryExpr>(t, ir::UnaryOpType::Cast, v);
  };
  auto* block = kernel.create<kir::IfThenElse>(kernel.constBool(true));
  kir::Var* acc = kernel.newVar(acc_dt, "acc");
  block->thenBody.push_back(kernel.create<kir::DeclareVar>(acc, as(self_value, acc_dt)));
  kir::Var* k = kernel.newVar(kIndexType, "i");
  auto* loop = kernel.create<kir::ForLoop>(k, kernel.constInt(0),
                                           ctx.lowerScalar(kernel, x[dim]->logicalExtent()),
                                           ir::ParallelType::Serial, x[dim]);
  // Index (and src) positions: the element's coordinates off `dim`, k along it; positions past
  // index's extent off `dim` hold no index element.
  IndexMap xidx, sidx;
  kir::Value* inside = nullptr;
  for (size_t d = 0; d < o.size(); ++d) {
    kir::Value* c = d == dim ? static_cast<kir::Value*>(k) : idx.at(o[d]);
    xidx[x[d]] = x[d]->isBroadcast() ? kernel.constInt(0) : c;
    sidx[s[d]] = s[d]->isBroadcast() ? kernel.constInt(0) : c;
    if (d != dim) {
      inside = b.logicalAnd(inside, b.lt(c, ctx.lowerScalar(kernel, x[d]->logicalExtent())));
    }
  }
  kir::Value* v = kernel.create<kir::Load>(ctx.buffers.at(sc->index()),
                                           bufferOffset(kernel, ctx, sc->index(), xidx));
  kir::Value* hit =
      b.logicalAnd(checkedIn(kernel, ctx, sc, sc->index(), sc->self(), int64_t(dim), v),
                   b.eq(asIndex(kernel, v), idx.at(o[dim])));
  auto* on_hit = kernel.create<kir::IfThenElse>(hit);
  kir::Value* src = as(kernel.create<kir::Load>(ctx.buffers.at(sc->src()),
                                                bufferOffset(kernel, ctx, sc->src(), sidx)),
                       acc_dt);
  on_hit->thenBody.push_back(kernel.create<kir::Store>(
      acc, sc->accumulate()
               ? kernel.create<kir::BinaryExpr>(acc_dt, ir::BinaryOpType::Add, acc, src)
               : src));
  if (inside != nullptr) {
    auto* guard = kernel.create<kir::IfThenElse>(inside);
    guard->thenBody.push_back(on_hit);
    loop->body.push_back(guard);
  } else {
    loop->body.push_back(on_hit);
  }
  block->thenBody.push_back(loop);
  block->thenBody.push_back(kernel.create<kir::Store>(out, offset, as(acc, dt)));
  return block;
}

bool appendAtomicScatters(kir::Kernel& kernel, LowerContext& ctx) {
  std::string sync;
  for (const ir::Expr* e : ctx.exprs) {
    const auto* sc = e->dynCast<ir::ScatterOp>();
    if (sc == nullptr || !sc->atomic()) continue;
    auto param = [&](const ir::TensorView* tv, const char* role) {
      const kir::Buffer* buf = ctx.buffers.at(tv);
      LOOM_CHECK(buf->kind == kir::BufferKind::Param, "lowering: the atomic ", sc->opName(),
                 " of ", sc->out()->toString(), " ", role, " ", userName(tv), " in ",
                 kir::bufferKindName(buf->kind),
                 " memory; its adds reach the whole tensor, which must be in global memory (a "
                 "fusion input or output of the kernel)");
      return buf;
    };
    const kir::Buffer* out = param(sc->out(), "writes");
    const kir::Buffer* index = param(sc->index(), "reads");
    const kir::Buffer* src = param(sc->src(), "reads");
    if (sync.empty()) {
      // One pair of gridSync words per launch serves every barrier of the kernel (grid.cuh).
      sync = "gsync";
      kernel.gridScratch.push_back({sync, "unsigned", 8, true, 1, true});
      kernel.cooperative = true;
    }
    if (isReducedPrecision(sc->out()->dtype())) {
      // 16-bit sums go through an f32 copy of out (runtime scatterAddAtomicWide), which reads
      // self's parameter itself. Its size: a float per thread of the grid and iteration of out's
      // serial loops, at least one per element of out.
      (void)param(sc->self(), "reads");
      LOOM_CHECK(std::none_of(kernel.gridScratch.begin(), kernel.gridScratch.end(),
                              [](const kir::Kernel::GridScratch& g) { return g.name == "gacc"; }),
                 "lowering: a kernel holds one atomic scatter_add of a 16-bit dtype, not also ",
                 sc->out()->toString());
      std::vector<const ir::Scalar*> serial;
      for (ir::IterDomain* id : sc->out()->loop()) {
        if (!ir::isThreadOrBlockDim(ctx.loopParallelType(id))) serial.push_back(id->extent());
      }
      kernel.gridScratch.push_back({"gacc", "float", 4, false, 1, false, serial});
    }
    const auto dim = sc->dim();
    const auto site = int64_t(kernel.indexChecks.size());
    kernel.indexChecks.push_back({sc->opName(), userName(sc->index()), userName(sc->self()), dim,
                                  dimsOf(sc->self()).at(size_t(dim))->logicalExtent()});
    kernel.body.push_back(kernel.create<kir::ScatterAdd>(sc, out, index, src, dim, sync, site));
  }
  return !sync.empty();
}

}  // namespace loom::lower
