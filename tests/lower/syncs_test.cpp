// SPDX-License-Identifier: Apache-2.0
// Rules of the parallel-correctness passes: syncs (RAW, WAR, loop-carried, never inside a
// predicate), thread_predicates (single writers, padded parallel loops) and shared allocations.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"
#include "loom/transform/cache.h"

namespace loom::test {
namespace {

struct SyncKernel {
  kir::Kernel k;
  kir::Buffer* smem = nullptr;
  kir::Buffer* out = nullptr;
  kir::Value* tid = nullptr;
  SyncKernel() {
    smem = k.createBuffer();
    smem->name = "T5";
    smem->kind = kir::BufferKind::Shared;
    smem->size = k.constInt(4);
    out = k.createBuffer();
    out->name = "T6";
    out->kind = kir::BufferKind::Local;
    tid = k.create<kir::NamedScalar>("threadIdx.x");
  }
  kir::Stmt* write() { return k.create<kir::Store>(smem, tid, k.create<kir::Const>(DataType::Float32, 1.0)); }
  kir::Stmt* read() { return k.create<kir::Store>(out, tid, k.create<kir::Load>(smem, k.constInt(3))); }
  bool run() {
    ir::Fusion fusion;
    lower::LowerContext ctx(fusion);
    return lower::syncs(k, ctx);
  }
};

// syncs puts a block_sync before a read of a shared buffer written earlier by another thread (RAW)
// and before a write of a shared buffer read earlier (WAR).
TEST(LowerSyncs, RawAndWarInOneScope) {
  SyncKernel s;
  s.k.body = {s.write(), s.read(), s.write()};
  EXPECT_TRUE(s.run());
  EXPECT_EQ(kir::toString(s.k),
            "kernel loom_kernel()\n"
            "  T5[threadIdx.x] = 1.0\n"
            "  block_sync\n"
            "  T6[threadIdx.x] = T5[3]\n"
            "  block_sync\n"
            "  T5[threadIdx.x] = 1.0\n");
}

// A serial loop whose next iteration rewrites what this iteration read ends its body with a sync
// (loop-carried WAR); a block reduction counts as a barrier.
TEST(LowerSyncs, LoopCarriedWar) {
  SyncKernel s;
  auto* loop = s.k.create<kir::ForLoop>(s.k.newVar(kIndexType, "i"), s.k.constInt(0),
                                        s.k.constInt(3), ir::ParallelType::Serial, nullptr);
  loop->body = {s.write(), s.read()};
  s.k.body = {loop};
  EXPECT_TRUE(s.run());
  EXPECT_EQ(kir::toString(s.k),
            "kernel loom_kernel()\n"
            "  for i0 in 0 .. 3:\n"
            "    T5[threadIdx.x] = 1.0\n"
            "    block_sync\n"
            "    T6[threadIdx.x] = T5[3]\n"
            "    block_sync\n");
}

// A loop reading a pending write, with no barrier of its own, gets the barrier in front of it
// once, not before the read in each of its iterations.
TEST(LowerSyncs, OneBarrierBeforeALoopWithoutBarriers) {
  SyncKernel s;
  auto* loop = s.k.create<kir::ForLoop>(s.k.newVar(kIndexType, "i"), s.k.constInt(0),
                                        s.k.constInt(4), ir::ParallelType::Serial, nullptr);
  loop->body = {s.read()};
  s.k.body = {s.write(), loop};
  EXPECT_TRUE(s.run());
  EXPECT_EQ(kir::toString(s.k),
            "kernel loom_kernel()\n"
            "  T5[threadIdx.x] = 1.0\n"
            "  block_sync\n"
            "  for i0 in 0 .. 4:\n"
            "    T6[threadIdx.x] = T5[3]\n");
}

// A barrier never goes inside a predicate: the sync for a predicated read precedes the if.
TEST(LowerSyncs, NeverInsideAPredicate) {
  SyncKernel s;
  auto* ite = s.k.create<kir::IfThenElse>(s.k.constBool(true));
  ite->thenBody = {s.read()};
  s.k.body = {s.write(), ite};
  EXPECT_TRUE(s.run());
  EXPECT_EQ(kir::toString(s.k),
            "kernel loom_kernel()\n"
            "  T5[threadIdx.x] = 1.0\n"
            "  block_sync\n"
            "  if true:\n"
            "    T6[threadIdx.x] = T5[3]\n");
}

// A vector load into a shared buffer (a transpose tile's rows) is a write: the read of another
// thread's element waits for it.
TEST(LowerSyncs, VectorCopyIntoSharedIsAWrite) {
  SyncKernel s;
  kir::Buffer* in = s.k.createBuffer();
  in->name = "T0";
  in->kind = kir::BufferKind::Param;
  in->isFusionInput = true;
  s.k.body = {s.k.create<kir::VectorCopy>(s.smem, s.k.constInt(0), in, s.k.constInt(0), 4),
              s.read()};
  EXPECT_TRUE(s.run());
  EXPECT_EQ(kir::toString(s.k),
            "kernel loom_kernel()\n"
            "  T5[0 +: 4] = T0[0 +: 4]\n"
            "  block_sync\n"
            "  T6[threadIdx.x] = T5[3]\n");
}

// Local buffers are per thread: no sync between their writes and reads.
TEST(LowerSyncs, LocalBuffersNeedNoSync) {
  SyncKernel s;
  s.smem->kind = kir::BufferKind::Local;
  s.k.body = {s.write(), s.read()};
  EXPECT_FALSE(s.run());
}

// thread_predicates guards each op under a parallel loop narrower than another loop of the same
// type by index < its extent.
TEST(LowerThreadPredicates, MismatchedExtentsArePadded) {
  auto f = mismatchedThreadLoops();
  std::string after = lowerAround(*f, "thread_predicates").after;
  EXPECT_NE(after.find("for i1 in TIDx 0 .. 128:\n      if (i1 < 128):\n        tensor T2"),
            std::string::npos) << after;
  EXPECT_NE(after.find("for i3 in TIDx 0 .. 96:\n      if (i3 < 96):\n        tensor T3"),
            std::string::npos) << after;
}

// thread_predicates lets only threadIdx.x == 0 store a global tensor that is not parallelized on
// the launched TIDx (a serial sum next to a TIDx-parallel tensor).
TEST(LowerThreadPredicates, SerialGlobalWriteBySingleThread) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  f->addInput(x);
  auto* s = ops::sum(x, {1});
  auto* e = ops::exp(x);
  f->addOutput(s);
  f->addOutput(e);
  e->axis(1)->parallelize(ir::ParallelType::TIDx);
  std::string after = lowerAround(*f, "thread_predicates").after;
  EXPECT_NE(after.find("    if (threadIdx.x == 0):\n      T1 <- acc"), std::string::npos) << after;
  EXPECT_EQ(after.find("if (threadIdx.x == 0):\n        tensor T2"), std::string::npos) << after;
}

// exp(x[4, 32]) through a shared copy of x, both on [BIDx, TIDx], the copy computed at `ca`.
std::unique_ptr<ir::Fusion> sharedCopyFusion(int64_t ca) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  f->addInput(x);
  auto* out = ops::exp(x);
  f->addOutput(out);
  auto* c = transform::cacheAfter(x, ir::MemoryType::Shared);
  for (auto* t : {c, out}) {
    t->axis(0)->parallelize(ir::ParallelType::BIDx);
    t->axis(1)->parallelize(ir::ParallelType::TIDx);
  }
  transform::computeAt(c, out, ca);
  return f;
}

// The fully lowered kernel of sharedCopyFusion(ca), after checking that allocations gave the
// shared copy one element per thread of its TIDx axis (32 floats, 128 bytes).
std::string loweredWithPerThreadSharedBuffer(int64_t ca) {
  auto f = sharedCopyFusion(ca);
  auto kernel = lower::lowerFusionUntil(*f, "allocations");
  std::string text = kir::toString(*kernel);
  EXPECT_NE(text.find("alloc T2 : f32 shared[32]"), std::string::npos) << text;
  EXPECT_EQ(kernel->sharedTensorBytes, 128);
  return kir::toString(*lower::lowerFusion(*f, DumpOptions()));
}

// allocations gives a shared tensor one element per thread of its TIDx axis and a byte offset.
TEST(LowerAllocations, SharedTensorIncludesThreadAxes) {
  std::string full = loweredWithPerThreadSharedBuffer(1);
  EXPECT_NE(full.find("block_sync"), std::string::npos) << full;
}

// A shared tensor inlined past its TIDx axis still gets one element per thread (it got one
// element that every thread wrote and read).
TEST(LowerAllocations, SharedTensorInlinedPastThreadAxis) {
  std::string full = loweredWithPerThreadSharedBuffer(2);
  EXPECT_NE(full.find("T2[i1] = T0["), std::string::npos) << full;
  EXPECT_NE(full.find("exp(T2[i1])"), std::string::npos) << full;
}

// A shared tensor written by the blocks of its BIDx loop and read by a consumer that runs that
// axis serially (each block would read rows other blocks wrote into their own shared memory) is
// refused by name.
TEST(LowerAllocations, SharedTensorReadAcrossBlocksIsRefused) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  f->addInput(x);
  auto* out = ops::exp(x);
  f->addOutput(out);
  auto* c = transform::cacheAfter(x, ir::MemoryType::Shared);
  c->axis(0)->parallelize(ir::ParallelType::BIDx);
  c->axis(1)->parallelize(ir::ParallelType::TIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  std::string msg;
  try {
    lower::lowerFusion(*f, DumpOptions());
  } catch (const UserError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("shared tensor T2 is held in the shared memory of the blocks of its loop"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("other blocks would read that memory"), std::string::npos) << msg;
}

// A shared tile [rows (TIDy), cols (TIDx)] read down its columns by a transposed consumer: rows
// of an even number of banks get one bank of padding (odd row stride), so a warp's column walk
// meets 32 banks; rows of an odd number of banks stay dense.
TEST(LowerAllocations, SharedRowsReadDownColumnsArePadded) {
  for (auto [cols, size] : {std::pair<int64_t, int64_t>{32, 4 * 33}, {16, 4 * 17}, {31, 4 * 31}}) {
    auto f = std::make_unique<ir::Fusion>();
    ir::FusionGuard guard(f.get());
    auto* x = ops::TensorBuilder().shape({4, cols}).build();
    f->addInput(x);
    auto* out = ops::transpose(x, 0, 1);
    f->addOutput(out);
    auto* c = transform::cacheAfter(x, ir::MemoryType::Shared);
    c->axis(0)->parallelize(ir::ParallelType::TIDy);
    c->axis(1)->parallelize(ir::ParallelType::TIDx);
    out->axis(0)->parallelize(ir::ParallelType::TIDx);
    out->axis(1)->parallelize(ir::ParallelType::TIDy);
    auto kernel = lower::lowerFusion(*f, DumpOptions());
    std::string text = kir::toString(*kernel);
    EXPECT_NE(text.find("alloc T2 : f32 shared[" + std::to_string(size) + "]"), std::string::npos)
        << text;
    EXPECT_EQ(kernel->sharedTensorBytes, (size * 4 + 15) / 16 * 16);
    if (cols == 32) {  // row stride 33 on both sides of the tile
      EXPECT_NE(text.find("T2[((i0 * 33) + i1)] = T0["), std::string::npos) << text;
      EXPECT_NE(text.find("= T2[((i3 * 33) + i2)]"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace loom::test
