// SPDX-License-Identifier: Apache-2.0
// Pass syncs: BlockSyncs for read-after-write, write-after-read and loop-carried hazards on memory
// that threads of a block share.
//
// Shared buffers and global buffers the kernel writes (a value stored by one thread and read by
// another) are tracked. Walking a scope, the buffers read and written since the last barrier are
// pending; a statement that reads a pending write (RAW) or writes a pending read (WAR) gets a
// BlockSync in front. BlockReduce ends with a barrier, so it clears the pending sets. A serial
// loop is walked with the pending sets of the code before it (its first iteration); then, when
// what is pending at the end of its body conflicts with what the body touches before its first
// barrier (the next iteration), a BlockSync ends the body (loop-carried). Parallel loops are not
// loops (one iteration per thread). IfThenElse bodies are never entered: a barrier must be
// reached by every thread, so it goes in front of the whole predicated statement.
//
//   before: for i0 in 0 .. 4:             after:  for i0 in 0 .. 4:
//             T3[tid] = ...                         T3[tid] = ...
//             T4[...] = T3[(127 - tid)]             block_sync              (RAW)
//                                                   T4[...] = T3[(127 - tid)]
//                                                   block_sync              (WAR, next iteration)
#include <unordered_set>

#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

using BufferSet = std::unordered_set<const kir::Buffer*>;

bool tracked(const kir::Buffer* b) {
  return b->kind == kir::BufferKind::Shared ||
         (b->kind == kir::BufferKind::Param && !b->isFusionInput);
}

void valueReads(const kir::Value* v, BufferSet& reads) {
  if (v == nullptr) return;
  switch (v->kind()) {
    case kir::NodeKind::Load:
      if (tracked(v->as<kir::Load>()->buffer)) reads.insert(v->as<kir::Load>()->buffer);
      valueReads(v->as<kir::Load>()->index, reads);
      return;
    case kir::NodeKind::UnaryExpr: valueReads(v->as<kir::UnaryExpr>()->in, reads); return;
    case kir::NodeKind::BinaryExpr:
      valueReads(v->as<kir::BinaryExpr>()->lhs, reads);
      valueReads(v->as<kir::BinaryExpr>()->rhs, reads);
      return;
    case kir::NodeKind::TernaryExpr:
      valueReads(v->as<kir::TernaryExpr>()->a, reads);
      valueReads(v->as<kir::TernaryExpr>()->b, reads);
      valueReads(v->as<kir::TernaryExpr>()->c, reads);
      return;
    default: return;
  }
}

// Every tracked access of a statement (all of its nested statements).
void accesses(const kir::Stmt* s, BufferSet& reads, BufferSet& writes) {
  if (auto* st = s->dynCast<kir::Store>()) {
    if (st->buffer && tracked(st->buffer)) writes.insert(st->buffer);
    valueReads(st->index, reads);
    valueReads(st->value, reads);
  } else if (auto* d = s->dynCast<kir::DeclareVar>()) {
    valueReads(d->init, reads);
  } else if (auto* f = s->dynCast<kir::ForLoop>()) {
    for (const kir::Stmt* c : f->body) accesses(c, reads, writes);
  } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
    valueReads(i->cond, reads);
    for (const kir::Stmt* c : i->thenBody) accesses(c, reads, writes);
    for (const kir::Stmt* c : i->elseBody) accesses(c, reads, writes);
  }
}

bool intersects(const BufferSet& a, const BufferSet& b) {
  for (const kir::Buffer* x : a) {
    if (b.count(x)) return true;
  }
  return false;
}

// What is pending (read/written since the last barrier) and what a scope touched before its first
// barrier (`head*`, for the loop-carried check).
struct State {
  BufferSet reads, writes;
  BufferSet headReads, headWrites;
  bool synced = false;
  void barrier() {
    reads.clear();
    writes.clear();
    synced = true;
  }
  void touch(const BufferSet& r, const BufferSet& w) {
    reads.insert(r.begin(), r.end());
    writes.insert(w.begin(), w.end());
    if (!synced) {
      headReads.insert(r.begin(), r.end());
      headWrites.insert(w.begin(), w.end());
    }
  }
};

struct SyncInserter {
  kir::Kernel& kernel;
  bool changed = false;

  // Walks `scope` starting from the pending sets of `in`; returns the state at its end.
  State visit(kir::Scope& scope, const State& in) {
    State st;
    st.reads = in.reads;
    st.writes = in.writes;
    for (size_t i = 0; i < scope.size(); ++i) {
      kir::Stmt* s = scope[i];
      if (s->isA<kir::BlockSync>() || s->isA<kir::BlockReduce>()) {
        st.barrier();
        continue;
      }
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        State body = visit(f->body, st);
        if (!f->isParallel() && (intersects(body.writes, body.headReads) ||
                                 intersects(body.reads, body.headWrites))) {
          f->body.push_back(kernel.create<kir::BlockSync>());
          changed = true;
          body.barrier();
        }
        if (!st.synced) {
          st.headReads.insert(body.headReads.begin(), body.headReads.end());
          st.headWrites.insert(body.headWrites.begin(), body.headWrites.end());
        }
        if (body.synced) {
          st.synced = true;
          st.reads = body.reads;
          st.writes = body.writes;
        } else {
          st.touch(body.reads, body.writes);
        }
        continue;
      }
      BufferSet reads, writes;
      accesses(s, reads, writes);
      if (intersects(reads, st.writes) || intersects(writes, st.reads)) {
        scope.insert(scope.begin() + int64_t(i), kernel.create<kir::BlockSync>());
        ++i;
        st.barrier();
        changed = true;
      }
      st.touch(reads, writes);
    }
    return st;
  }
};

}  // namespace

bool syncs(kir::Kernel& kernel, LowerContext& /*ctx*/) {
  SyncInserter s{kernel};
  s.visit(kernel.body, State{});
  return s.changed;
}

}  // namespace loom::lower
