// SPDX-License-Identifier: Apache-2.0
// Pass allocations: local and shared buffers for intermediates, placed inside their compute-at
// loop.
//
// A tensor inlined at position p is computed and consumed inside the loops of its loop IDs
// [0, p), so its buffer is declared in that scope (LowerContext::scopes, from the loop graph;
// p = 0: the kernel body) before the first statement computing it, and holds
// one element per iteration of its loop IDs [p, n) that each thread runs itself: reduction,
// broadcast and thread/block IDs are left out. Sizes must be constants (registers). A shared
// tensor (MemoryType::Shared) also allocates its thread-parallel IDs, inside the compute-at
// position too (one element per thread of the block), and gets a 16-byte aligned byte offset after
// the previous shared tensors; the kernel places them after the block-reduction scratch
// (Kernel::sharedTensorBytes).
//
//   before: for i0 in BIDx 0 .. 8:          after:  for i0 in BIDx 0 .. 8:
//             for i1 in 0 .. 4:                       alloc T1 : f32 local[4]
//               tensor T1 = exp(T0)                   for i1 in 0 .. 4:
//             for i2 in 0 .. 4: ...                     tensor T1 = exp(T0)
//
// Whether the threads that read a buffer are the ones that wrote it was checked before (pass
// memory_reads).
//
// Padded rows: a shared buffer whose trailing allocation IDs come from one logical ID alone (a
// row) and that has allocation IDs outside them (several rows) may be read down its columns (a
// transpose tile written by rows and read by columns, or written by columns and read by rows). When
// a row spans an even number of 4-byte banks, consecutive rows start on banks of one parity and a
// column walk of a warp meets the same banks several times; each row is then padded by one bank
// (one element for 8-byte types), so the row stride is odd in banks and a column hits 32 different
// banks. Elements of one row stay adjacent, so vector copies within a row are unchanged.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "loom/eval/expression_evaluator.h"
#include "index_compute.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

// Whether `id` is split and merged from `from` alone (an explicit stack: split chains are long).
bool derivesOnlyFrom(ir::IterDomain* id, const ir::IterDomain* from) {
  std::vector<ir::IterDomain*> work{id};
  while (!work.empty()) {
    ir::IterDomain* x = work.back();
    work.pop_back();
    if (x == from) continue;
    ir::Expr* def = x->definition();
    if (def == nullptr) return false;
    for (ir::Val* in : def->inputs()) {
      if (auto* in_id = in->dynCast<ir::IterDomain>()) work.push_back(in_id);
    }
  }
  return true;
}

// The element strides of a shared buffer with padded rows (the file comment), or empty (dense).
std::vector<int64_t> paddedRowStrides(const ir::TensorView* tv,
                                      const std::vector<ir::IterDomain*>& alloc,
                                      const std::vector<int64_t>& extents) {
  if (alloc.size() < 2) return {};
  const ir::IterDomain* inner = nullptr;  // the logical ID the innermost allocation ID comes from
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
    if (!id->isBroadcast() && derivesOnlyFrom(alloc.back(), id)) inner = id;
  }
  if (inner == nullptr) return {};
  size_t row_ids = 0;
  int64_t row = 1;
  while (row_ids < alloc.size() && derivesOnlyFrom(alloc[alloc.size() - 1 - row_ids], inner)) {
    row *= extents[alloc.size() - 1 - row_ids];
    ++row_ids;
  }
  if (row_ids == 0 || row_ids == alloc.size()) return {};
  const auto item = int64_t(dataTypeSize(tv->dtype()));
  const int64_t row_bytes = row * item;
  if (row_bytes % 8 != 0) return {};  // rows off the bank grid, or an odd number of banks
  const int64_t pad = item <= 4 ? 4 / item : 1;
  std::vector<int64_t> strides(alloc.size());
  int64_t stride = 1;
  for (size_t k = alloc.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= extents[k];
    if (k == alloc.size() - row_ids) stride += pad;  // the row stride, padded
  }
  return strides;
}

struct Allocator {
  kir::Kernel& kernel;
  LowerContext& ctx;
  std::unordered_set<const ir::TensorView*> done;
  bool changed = false;

  kir::Buffer* makeLocal(const ir::TensorView* tv) {
    kir::Buffer* b = kernel.createBuffer();
    b->tv = tv;
    b->name = tv->toString();
    b->dtype = tv->dtype();
    bool shared = tv->memoryType() == ir::MemoryType::Shared;
    b->kind = shared ? kir::BufferKind::Shared : kir::BufferKind::Local;
    int64_t size = 1;
    std::vector<int64_t> extents;
    // A shared buffer may have extents known at launch only (a hand schedule keeping a row of
    // run-time length in shared memory): it goes after the constant-size ones.
    std::vector<const ir::Scalar*> symbolic;
    // A shared buffer holds the elements of every thread of the block, so its thread IDs are
    // allocated too, inside the compute-at position as well (each thread of the loop is there at
    // once: leaving them out gave every thread one shared element); blocks have their own shared
    // memory.
    for (int64_t k = shared ? 0 : tv->computeAtPosition(); k < tv->nDims(); ++k) {
      ir::IterDomain* id = tv->axis(k);
      // The loop's type: a serial ID inlined into a consumer's thread loop runs on its threads.
      ir::ParallelType p = ctx.loopParallelType(id);
      const bool inlined = k < tv->computeAtPosition();
      bool allocated = shared ? (inlined ? ir::isThreadDim(p) : !ir::isBlockDim(p))
                              : !ir::isThreadOrBlockDim(p);
      if (id->isReduction() || id->isBroadcast() || !allocated) continue;
      // Constant folding of split extents (ceilDiv(200, 128)) without any runtime binding.
      eval::ExpressionEvaluator ee;
      auto value = ee.evaluate(id->extent());
      std::optional<int64_t> extent;
      if (value && std::holds_alternative<int64_t>(*value)) extent = std::get<int64_t>(*value);
      if (!extent.has_value() && shared) {
        symbolic.push_back(id->extent());
        b->allocIds.push_back(id);
        continue;
      }
      LOOM_CHECK(extent.has_value(), "lowering: local tensor ", tv->toString(), " axis ", k,
                 " has the symbolic extent ", id->extent()->toString(),
                 "; inline it further (computeAt), parallelize that axis or keep the tensor in "
                 "shared memory so that its buffer's size is known");
      size *= *extent;
      extents.push_back(*extent);
      b->allocIds.push_back(id);
    }
    if (!symbolic.empty()) return makeDynamicShared(b, size, symbolic);
    if (shared) {
      b->allocStrides = paddedRowStrides(tv, b->allocIds, extents);
      if (!b->allocStrides.empty()) size = b->allocStrides.front() * extents.front();
    }
    b->size = kernel.constInt(size);
    if (shared) {  // 16-byte aligned slots, one per shared tensor (no reuse across lifetimes)
      b->smemOffset = kernel.sharedTensorBytes;
      int64_t bytes = size * int64_t(dataTypeSize(b->dtype));
      kernel.sharedTensorBytes += (bytes + 15) / 16 * 16;
    }
    ctx.buffers[tv] = b;
    return b;
  }

  // A shared buffer of `elements` times the symbolic extents: its offset follows the dynamic
  // buffers before it; the executor adds every one's bytes to the launch (Kernel::dynamicShared).
  kir::Buffer* makeDynamicShared(kir::Buffer* b, int64_t elements,
                                 const std::vector<const ir::Scalar*>& symbolic) {
    IndexBuilder ib{kernel};
    kir::Value* n = kernel.constInt(elements);
    for (const ir::Scalar* e : symbolic) n = ib.mul(n, ctx.lowerScalar(kernel, e));
    b->size = n;
    const auto item = int64_t(dataTypeSize(b->dtype));
    b->dynamicSmemOffset = dynamic_bytes != nullptr ? dynamic_bytes : kernel.constInt(0);
    kir::Value* bytes = ib.mul(ib.div(ib.add(ib.mul(n, kernel.constInt(item)), kernel.constInt(15)),
                                      kernel.constInt(16)),
                               kernel.constInt(16));
    dynamic_bytes = ib.add(b->dynamicSmemOffset, bytes);
    kernel.dynamicShared.push_back({symbolic, elements, item});
    ctx.buffers[b->tv] = b;
    return b;
  }
  kir::Value* dynamic_bytes = nullptr;  ///< bytes of the dynamic shared buffers made so far

  // One walk over the statements in program order with an explicit stack of open scopes (a
  // loop nest may be tens of thousands deep): each tensor's buffer is declared in its scope,
  // right before the statement there that holds the first op computing it.
  void visit(kir::Scope& body) {
    struct Open {
      kir::Scope* scope;
      const kir::ForLoop* enclosing;
      bool loopBody = false;
      size_t next = 0;  ///< the statement after the one being walked
    };
    std::vector<Open> stack{{&body, nullptr}};
    std::unordered_map<const kir::ForLoop*, size_t> depth_of{{nullptr, 0}};
    while (!stack.empty()) {
      Open& o = stack.back();
      if (o.next >= o.scope->size()) {
        if (o.loopBody) depth_of.erase(o.enclosing);
        stack.pop_back();
        continue;
      }
      kir::Stmt* s = (*o.scope)[o.next++];
      if (auto* op = s->dynCast<kir::TensorOp>()) {
        allocate(op->out, stack, depth_of);
      } else if (auto* f = s->dynCast<kir::ForLoop>()) {
        depth_of[f] = stack.size();
        stack.push_back({&f->body, f, true});
      } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
        // Branches belong to the scope around the if; the else-branch is walked second.
        const kir::ForLoop* enclosing = o.enclosing;
        stack.push_back({&i->elseBody, enclosing});
        stack.push_back({&i->thenBody, enclosing});
      }
    }
  }

  template <typename Stack>
  void allocate(const ir::TensorView* tv, Stack& stack,
                const std::unordered_map<const kir::ForLoop*, size_t>& depth_of) {
    if (done.count(tv) || ctx.buffers.count(tv)) return;  // params have buffers
    auto scope = ctx.scopes.find(tv);
    if (scope == ctx.scopes.end()) return;
    auto at = depth_of.find(scope->second);
    if (at == depth_of.end()) return;  // not inside its scope here
    // The first open scope of that loop (an if's branches share it): the statement walked
    // there is the one holding this op.
    size_t k = at->second;
    auto& open = stack[k];
    done.insert(tv);
    open.scope->insert(open.scope->begin() + int64_t(open.next - 1),
                       kernel.create<kir::Allocate>(makeLocal(tv)));
    ++open.next;
    changed = true;
  }
};

}  // namespace

bool allocations(kir::Kernel& kernel, LowerContext& ctx) {
  Allocator a{kernel, ctx, {}};
  a.visit(kernel.body);
  for (const ir::Expr* e : ctx.exprs) {
    auto* tv = e->output(0)->as<ir::TensorView>();
    LOOM_ASSERT(ctx.buffers.count(tv), "no allocation scope found for ", tv->toString());
  }
  return a.changed;
}

}  // namespace loom::lower
