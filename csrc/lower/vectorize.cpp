// SPDX-License-Identifier: Apache-2.0
// Pass vectorize: a Vectorize loop of one copy between a parameter and a local buffer becomes one
// VectorCopy (a single vector load or store) guarded by an all-or-nothing predicate.
//
// Runs after indexing, so the loop body is `T1[f(i)] = T0[g(i)]`, maybe inside the predicate
// `if p(i)`. The copy starts at i = 0 (f(0), g(0)); the predicate is evaluated at the vector's
// last element i = width - 1: the logical index grows with the innermost (vectorized) index, so
// when the last element is in range all are. A vector whose tail is out of range is skipped as a
// whole, so the executor requires the logical dims the vectorized ID is merged from to be dense
// in memory with a total size that is a multiple of the width (with its data pointer and other
// strides), and reports the tensor otherwise. Merged dims are fine: a vector that crosses a row
// boundary of dense memory reads the right elements, and its last element's predicate holds.
// Vectorize loops that are not such a copy (math between local buffers), and copies whose shared
// side is not laid out along the loop (a tile read across its rows), stay serial loops, which
// codegen unrolls.
//
// Along a peeled row (LowerOptions::peelVectorRows, peel_rows.cpp) no layout is assumed: the copy
// is the VectorCopy where the vector's last element is in range, its parameter offsets at i = 0
// and i = width - 1 lie width - 1 apart (adjacent elements: the rotated row does not wrap inside
// it, no dim steps) and the address at i = 0 is aligned to the vector; elsewhere it is the loop,
// element by element under the per-element predicate (the row's head and tail).
//
//   if ((((i0 * 4) + 3) < 13) && ((g(3) - g(0)) == 3) && (misalignment<4>(&T0[g(0)]) == 0)):
//     T1[0 +: 4] = T0[g(0) +: 4]
//   else:
//     for i2 in Unroll 0 .. 4:
//       if ((i0 * 4) + i2) < 13:
//         T1[i2] = T0[g(i2)]
//
//   before: for i2 in Vectorize 0 .. 4:            after:  if (((i0 * 4) + 3) < T0.size[0]):
//             if ((i0 * 4) + i2) < T0.size[0]:               T1[0 +: 4] = T0[((i0 * 4) * T0.stride[0]) +: 4]
//               T1[i2] = T0[(((i0 * 4) + i2) * T0.stride[0])]
#include <algorithm>
#include <initializer_list>
#include <utility>

#include "index_compute.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"

namespace loom::lower {

namespace {

// Positions (among the non-reduction logical dims of `tv`) of the logical IDs that `id` is split
// and merged from, outermost first. Broadcast dims are left out: kernels index them at 0 (an
// expanded one's elements share one address), so a vector never steps along them.
void spannedDims(const ir::TensorView* tv, ir::IterDomain* id, std::vector<int64_t>& dims) {
  const auto logical = ir::TensorDomain::noReductions(tv->logical());
  // Depth first, a merge's outer before its inner, with an explicit stack (the split chain
  // behind a loop ID may be long).
  std::vector<ir::IterDomain*> work{id};
  while (!work.empty()) {
    ir::IterDomain* x = work.back();
    work.pop_back();
    auto it = std::find(logical.begin(), logical.end(), x);
    if (it != logical.end()) {
      if (!x->isBroadcast()) dims.push_back(it - logical.begin());
      continue;
    }
    ir::Expr* def = x->definition();
    if (def == nullptr) continue;
    if (auto* split = def->dynCast<ir::Split>()) {
      work.push_back(split->in());
    } else if (auto* merge = def->dynCast<ir::Merge>()) {
      work.push_back(merge->inner());
      work.push_back(merge->outer());
    }
  }
}

struct Vectorizer {
  kir::Kernel& kernel;
  const LowerContext& ctx;
  bool changed = false;

  // The single Store of `loop` and its predicate (null when unpredicated), or null.
  static kir::Store* singleCopy(kir::ForLoop* loop, kir::Value** cond) {
    *cond = nullptr;
    if (loop->body.size() != 1) return nullptr;
    kir::Stmt* s = loop->body[0];
    if (auto* ite = s->dynCast<kir::IfThenElse>()) {
      if (ite->thenBody.size() != 1 || !ite->elseBody.empty()) return nullptr;
      *cond = ite->cond;
      s = ite->thenBody[0];
    }
    auto* st = s->dynCast<kir::Store>();
    if (st == nullptr || st->buffer == nullptr || !st->value->isA<kir::Load>()) return nullptr;
    const kir::Buffer* src = st->value->as<kir::Load>()->buffer;
    if (src->dtype != st->buffer->dtype) return nullptr;
    bool dst_param = st->buffer->kind == kir::BufferKind::Param;
    bool src_param = src->kind == kir::BufferKind::Param;
    return dst_param || src_param ? st : nullptr;
  }

  kir::Stmt* rewrite(kir::ForLoop* loop) {
    auto width = loop->stop->isA<kir::Const>() ? loop->stop->as<kir::Const>()->asInt() : std::nullopt;
    LOOM_ASSERT(width.has_value(), "vectorized loop without a constant extent");
    kir::Value* cond = nullptr;
    kir::Store* st = singleCopy(loop, &cond);
    if (st == nullptr) return nullptr;
    int64_t bytes = *width * int64_t(dataTypeSize(st->buffer->dtype));
    LOOM_CHECK(bytes <= 16 && (bytes & (bytes - 1)) == 0, "lowering: vectorized copy to ",
               st->buffer->name, " moves ", bytes, " bytes (", *width, " x ",
               dataTypeName(st->buffer->dtype),
               "); a vector access moves 1, 2, 4, 8 or 16 bytes: change the split factor");
    const kir::Load* load = st->value->as<kir::Load>();
    // A shared side is copied element by element from consecutive slots, so its buffer must be
    // laid out along this loop: a shared tile read in another order than it was written (a
    // transpose) has its lanes a row apart; the loop then stays element by element.
    for (const kir::Buffer* b : {st->buffer, load->buffer}) {
      if (b->kind == kir::BufferKind::Shared &&
          (b->allocIds.empty() || ctx.loopGroup(b->allocIds.back()) != ctx.loopGroup(loop->id))) {
        return nullptr;
      }
    }
    std::unordered_map<const kir::Var*, kir::Value*> first{{loop->index, kernel.constInt(0)}};
    std::unordered_map<const kir::Var*, kir::Value*> last{{loop->index, kernel.constInt(*width - 1)}};
    auto* copy = kernel.create<kir::VectorCopy>(
        st->buffer, substitute(kernel, st->index, first), load->buffer,
        substitute(kernel, load->index, first), *width);
    // The loop is the innermost loop ID of the stored tensor; a cached input's logical dims are
    // the input's, position for position.
    const ir::TensorView* looped = st->buffer->tv;
    std::vector<int64_t> dims;
    spannedDims(looped, looped->loop().back(), dims);
    const bool peeled = ctx.peel.vectorTvs.count(looped) != 0;
    for (const kir::Buffer* b : {st->buffer, load->buffer}) {
      if (b->kind == kir::BufferKind::Param) kernel.vectorized.push_back({b, *width, dims, peeled});
    }
    if (peeled) {
      return peel(loop, copy, {{st->buffer, st->index}, {load->buffer, load->index}}, cond, first,
                  last);
    }
    if (cond == nullptr) return copy;
    auto* ite = kernel.create<kir::IfThenElse>(substitute(kernel, cond, last));
    ite->thenBody.push_back(copy);
    return ite;
  }

  // A vector copy along a peeled row (peel_rows.cpp): the vector access where the whole vector
  // is in range, its parameter elements are adjacent (the row does not wrap inside it, a dim does
  // not step) and its address is aligned; element by element (the loop, unrolled) elsewhere.
  kir::Stmt* peel(kir::ForLoop* loop, kir::VectorCopy* copy,
                  std::initializer_list<std::pair<const kir::Buffer*, kir::Value*>> sides,
                  kir::Value* cond, const std::unordered_map<const kir::Var*, kir::Value*>& first,
                  const std::unordered_map<const kir::Var*, kir::Value*>& last) {
    IndexBuilder b{kernel};
    kir::Value* whole = cond == nullptr ? nullptr : substitute(kernel, cond, last);
    for (auto [buf, index] : sides) {
      if (buf->kind != kir::BufferKind::Param) continue;
      kir::Value* from = substitute(kernel, index, first);
      kir::Value* to = substitute(kernel, index, last);
      whole = b.logicalAnd(whole, b.eq(b.sub(to, from), kernel.constInt(copy->width - 1)));
      whole = b.logicalAnd(whole, b.eq(kernel.create<kir::Misalignment>(buf, from, copy->width),
                                       kernel.constInt(0)));
    }
    auto* ite = kernel.create<kir::IfThenElse>(whole);
    ite->thenBody.push_back(copy);
    auto* elements = kernel.create<kir::ForLoop>(loop->index, loop->start, loop->stop,
                                                 ir::ParallelType::Unroll, loop->id);
    elements->body = loop->body;
    ite->elseBody.push_back(elements);
    return ite;
  }

  // Every vectorized loop, walked with an explicit stack of open scopes (a nest may be deep).
  void visit(kir::Scope& body) {
    std::vector<std::pair<kir::Scope*, size_t>> stack{{&body, 0}};
    while (!stack.empty()) {
      if (stack.back().second >= stack.back().first->size()) {
        stack.pop_back();
        continue;
      }
      kir::Stmt*& s = (*stack.back().first)[stack.back().second++];
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        if (f->ptype == ir::ParallelType::Vectorize) {
          if (kir::Stmt* r = rewrite(f)) {
            s = r;
            changed = true;
            continue;
          }
        }
        stack.push_back({&f->body, 0});
      } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
        stack.push_back({&ite->elseBody, 0});
        stack.push_back({&ite->thenBody, 0});
      }
    }
  }
};

}  // namespace

bool vectorize(kir::Kernel& kernel, LowerContext& ctx) {
  Vectorizer v{kernel, ctx};
  v.visit(kernel.body);
  return v.changed;
}

}  // namespace loom::lower
