// SPDX-License-Identifier: Apache-2.0
// Pass syncs: BlockSyncs for read-after-write, write-after-read and loop-carried hazards on memory
// that threads of a block share.
//
// Shared buffers and global buffers the kernel writes (a value stored by one thread and read by
// another) are tracked, through Stores, Loads and VectorCopys (a vectorized copy into a shared
// tile writes it). Walking a scope, the buffers read and written since the last barrier are
// pending; a statement that reads a pending write (RAW) or writes a pending read (WAR) gets a
// BlockSync in front, and so does a loop holding such a statement and no barrier of its own (one
// barrier before the loop instead of one per iteration). BlockReduce ends with a barrier, so it
// clears the pending sets. A serial loop is walked with the pending sets of the code before it (its
// first iteration); then, when what is pending at the end of its body conflicts with what the body
// touches before its first barrier (the next iteration), a BlockSync ends the body (loop-carried).
// Parallel loops are not loops (one iteration per thread). IfThenElse bodies are never entered: a
// barrier must be reached by every thread, so it goes in front of the whole predicated statement.
//
//   before: for i0 in 0 .. 4:             after:  for i0 in 0 .. 4:
//             T3[tid] = ...                         T3[tid] = ...
//             T4[...] = T3[(127 - tid)]             block_sync              (RAW)
//                                                   T4[...] = T3[(127 - tid)]
//                                                   block_sync              (WAR, next iteration)
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/lower/kir_walk.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

using BufferSet = std::unordered_set<const kir::Buffer*>;

bool tracked(const kir::Buffer* b) {
  return b->kind == kir::BufferKind::Shared ||
         (b->kind == kir::BufferKind::Param && !b->isFusionInput);
}

void valueReads(kir::Value* v, BufferSet& reads) {
  if (v == nullptr) return;
  for (const kir::Value* x : kir::postOrder(v)) {
    auto* load = x->dynCast<kir::Load>();
    if (load != nullptr && tracked(load->buffer)) reads.insert(load->buffer);
  }
}

// The tracked accesses of one statement itself (not of the statements nested in it).
void directAccesses(const kir::Stmt* s, BufferSet& reads, BufferSet& writes) {
  if (auto* st = s->dynCast<kir::Store>()) {
    if (st->buffer && tracked(st->buffer)) writes.insert(st->buffer);
    valueReads(st->index, reads);
    valueReads(st->value, reads);
  } else if (auto* v = s->dynCast<kir::VectorCopy>()) {
    // A vector load into a shared tile (or a store out of one) is an access like any other.
    if (tracked(v->dst)) writes.insert(v->dst);
    if (tracked(v->src)) reads.insert(v->src);
    valueReads(v->dstIndex, reads);
    valueReads(v->srcIndex, reads);
  } else if (auto* d = s->dynCast<kir::DeclareVar>()) {
    valueReads(d->init, reads);
  } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
    valueReads(i->cond, reads);
  } else if (auto* r = s->dynCast<kir::SortRow>()) {
    if (tracked(r->in.buffer)) reads.insert(r->in.buffer);
    for (const kir::SortRow::Row* out : {&r->values, &r->indices}) {
      if (out->buffer != nullptr && tracked(out->buffer)) writes.insert(out->buffer);
    }
    for (kir::Value** v : const_cast<kir::SortRow*>(r)->valueSlots()) valueReads(*v, reads);
  } else if (auto* a = s->dynCast<kir::ScatterAdd>()) {
    for (const kir::Buffer* in : {a->index, a->src}) {
      if (tracked(in)) reads.insert(in);
    }
    if (tracked(a->out)) writes.insert(a->out);
  }
}

// Every tracked access of a statement (all of its nested statements).
void accesses(const kir::Stmt* stmt, BufferSet& reads, BufferSet& writes) {
  auto one = [&](const kir::Stmt* s) { directAccesses(s, reads, writes); };
  one(stmt);
  if (auto* f = stmt->dynCast<kir::ForLoop>()) {
    kir::forEachStmt(f->body, one);
  } else if (auto* i = stmt->dynCast<kir::IfThenElse>()) {
    kir::forEachStmt(i->thenBody, one);
    kir::forEachStmt(i->elseBody, one);
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

// What a loop's body (nested loops and ifs included) reads and writes, and whether it holds a
// barrier (BlockSync, BlockReduce).
struct LoopSummary {
  BufferSet reads, writes;
  bool barrier = false;
};

// The summary of every loop, built bottom-up in one walk with an explicit stack (a loop nest may
// be tens of thousands deep: each loop's sets are merged into its parent's once, never walked
// again per enclosing loop).
std::unordered_map<const kir::ForLoop*, LoopSummary> summarizeLoops(kir::Scope& body) {
  std::unordered_map<const kir::ForLoop*, LoopSummary> out;
  LoopSummary top;
  auto of = [&](const kir::ForLoop* l) -> LoopSummary& { return l == nullptr ? top : out[l]; };
  struct Frame {
    const kir::Scope* scope;
    const kir::ForLoop* loop;  ///< the innermost loop around the scope (null: the kernel body)
    bool loopBody;             ///< the scope is `loop`'s body (not an if branch inside it)
    size_t next = 0;
  };
  std::vector<Frame> stack{{&body, nullptr, false}};
  while (!stack.empty()) {
    if (stack.back().next >= stack.back().scope->size()) {
      const Frame done = stack.back();
      stack.pop_back();
      if (done.loopBody && !stack.empty()) {
        // (References to unordered_map elements stay valid when it rehashes.)
        const LoopSummary& child = of(done.loop);
        LoopSummary& parent = of(stack.back().loop);
        parent.reads.insert(child.reads.begin(), child.reads.end());
        parent.writes.insert(child.writes.begin(), child.writes.end());
        parent.barrier = parent.barrier || child.barrier;
      }
      continue;
    }
    const kir::Stmt* s = (*stack.back().scope)[stack.back().next++];
    const kir::ForLoop* loop = stack.back().loop;
    LoopSummary& sum = of(loop);
    if (s->isA<kir::BlockSync>() || s->isA<kir::BlockReduce>()) sum.barrier = true;
    directAccesses(s, sum.reads, sum.writes);
    if (const auto* f = s->dynCast<kir::ForLoop>()) {
      of(f);
      stack.push_back({&f->body, f, true});
    } else if (const auto* i = s->dynCast<kir::IfThenElse>()) {
      stack.push_back({&i->elseBody, loop, false});
      stack.push_back({&i->thenBody, loop, false});
    }
  }
  return out;
}

struct SyncInserter {
  kir::Kernel& kernel;
  bool changed = false;
  std::unordered_map<const kir::ForLoop*, LoopSummary> loops;  ///< before any sync is inserted

  // Walks `body` from no pending accesses, with an explicit stack of open loop bodies (a nest may
  // be deep): a loop's body starts from the pending sets before the loop, and what it leaves is
  // folded into the scope around it when it is done.
  void visit(kir::Scope& body) {
    struct Open {
      kir::Scope* scope;
      kir::ForLoop* loop;  ///< null for the kernel body
      size_t next = 0;
      State st;
    };
    std::vector<Open> stack;
    stack.push_back({&body, nullptr, 0, State{}});
    while (true) {
      Open& o = stack.back();
      if (o.next >= o.scope->size()) {
        if (o.loop == nullptr) return;
        State done = std::move(o.st);
        kir::ForLoop* f = o.loop;
        stack.pop_back();
        endLoop(f, std::move(done), stack.back().st);
        continue;
      }
      kir::Scope& scope = *o.scope;
      const size_t i = o.next++;
      kir::Stmt* s = scope[i];
      if (s->isA<kir::BlockSync>() || s->isA<kir::BlockReduce>()) {
        o.st.barrier();
        continue;
      }
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        // A loop that conflicts with what is pending and holds no barrier of its own gets the
        // barrier in front of it: once, instead of before its conflicting statement in every
        // iteration (a transpose tile read element by element in a vector loop synced 16 times).
        const LoopSummary& sum = loops.at(f);
        if (!sum.barrier &&
            (intersects(sum.reads, o.st.writes) || intersects(sum.writes, o.st.reads))) {
          scope.insert(scope.begin() + int64_t(i), kernel.create<kir::BlockSync>());
          ++o.next;
          o.st.barrier();
          changed = true;
        }
        State inner;
        inner.reads = o.st.reads;
        inner.writes = o.st.writes;
        stack.push_back({&f->body, f, 0, std::move(inner)});
        continue;
      }
      BufferSet reads, writes;
      accesses(s, reads, writes);
      if (intersects(reads, o.st.writes) || intersects(writes, o.st.reads)) {
        scope.insert(scope.begin() + int64_t(i), kernel.create<kir::BlockSync>());
        ++o.next;
        o.st.barrier();
        changed = true;
      }
      o.st.touch(reads, writes);
    }
  }

  // Folds the state `body` at the end of loop `f`'s body into `st`, the state of its scope.
  void endLoop(kir::ForLoop* f, State body, State& st) {
    if (!f->isParallel() &&
        (intersects(body.writes, body.headReads) || intersects(body.reads, body.headWrites))) {
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
  }
};

}  // namespace

bool syncs(kir::Kernel& kernel, LowerContext& /*ctx*/) {
  SyncInserter s{kernel, false, summarizeLoops(kernel.body)};
  s.visit(kernel.body);
  return s.changed;
}

}  // namespace loom::lower
