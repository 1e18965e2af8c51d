// SPDX-License-Identifier: Apache-2.0
// Pass memory_reads: a global intermediate written and read in one kernel is read only by the
// block that wrote it (no grid-wide barrier), and the schedules that break that are refused by
// name. The local and shared rules are in syncs_test.cpp and passes_test.cpp.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"

namespace loom::test {
namespace {

std::string lowerError(const ir::Fusion& f) {
  try {
    lower::lowerFusion(f, DumpOptions());
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// x[4, 32] -> T2 = set(x) in global memory, rows on BIDx -> exp(T2) with rows on BIDy.
std::unique_ptr<ir::Fusion> globalCopy(ir::ParallelType consumer_rows) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  f->addInput(x);
  auto* out = ops::exp(x);
  f->addOutput(out);
  auto* c = transform::cacheAfter(x, ir::MemoryType::Global);
  c->axis(0)->parallelize(ir::ParallelType::BIDx);
  c->axis(1)->parallelize(ir::ParallelType::TIDx);
  if (consumer_rows != ir::ParallelType::Serial) out->axis(0)->parallelize(consumer_rows);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  return f;
}

// Rows on BIDx on both sides: each block reads the rows it wrote (the syncs pass orders the
// threads of the block).
TEST(LowerMemoryReads, GlobalIntermediateInTheSameBlocksIsAccepted) {
  auto f = globalCopy(ir::ParallelType::BIDx);
  EXPECT_EQ(lowerError(*f), "");
  std::string text = kir::toString(*lower::lowerFusion(*f, DumpOptions()));
  EXPECT_NE(text.find("block_sync"), std::string::npos) << text;
}

// The consumer runs the rows serially in every block: block 0 would read rows blocks 1-3 write.
TEST(LowerMemoryReads, GlobalIntermediateReadAcrossBlocksIsRefused) {
  auto f = globalCopy(ir::ParallelType::Serial);
  std::string msg = lowerError(*f);
  EXPECT_NE(msg.find("lowering: global tensor T2 is written by the blocks of its loop"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("read in the same kernel by T1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no grid-wide barrier"), std::string::npos) << msg;
}

// The producer has no BIDy loop, so only blocks with blockIdx.y == 0 write it; the consumer's
// rows on BIDy launch four blocks along y, which read it.
TEST(LowerMemoryReads, GlobalIntermediateWrittenByBlockZeroOnlyIsRefused) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  f->addInput(x);
  auto* out = ops::exp(x);
  f->addOutput(out);
  auto* c = transform::cacheAfter(x, ir::MemoryType::Global);
  c->axis(1)->parallelize(ir::ParallelType::TIDx);
  out->axis(0)->parallelize(ir::ParallelType::BIDy);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  std::string msg = lowerError(*f);
  EXPECT_NE(msg.find("lowering: global tensor T2 "), std::string::npos) << msg;
  EXPECT_NE(msg.find("BIDy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no grid-wide barrier"), std::string::npos) << msg;
}

// A broadcast loop ID on BIDx does not spread a tensor over the blocks: thread_predicates leaves
// its global writes to block 0, so other blocks reading it in the same kernel is refused (it gave
// NaNs on the GPU; the host backend's sequential blocks hid it).
TEST(LowerMemoryReads, BroadcastOnABlockDimDoesNotSpreadTheWrites) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* bias = ops::TensorBuilder().shape({32}).build();
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  f->addInput(bias);
  f->addInput(x);
  auto* b = ops::broadcast(bias, {true, false});
  auto* out = ops::add(x, b);
  f->addOutput(out);
  b->setMemoryType(ir::MemoryType::Global);
  b->axis(0)->parallelize(ir::ParallelType::BIDx);  // the broadcast [1] on BIDx
  b->axis(1)->parallelize(ir::ParallelType::TIDx);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  std::string msg = lowerError(*f);
  EXPECT_NE(msg.find("global tensor T2 is not spread over BIDx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("which the kernel launches"), std::string::npos) << msg;
}

// A global bias broadcast inlined into the [rows * cols] loops of its consumer (merged with the
// broadcast row dim, split onto BIDx/TIDx) is written by the row-0 iterations only; the other
// blocks read it (NaNs on the GPU). Refused; kept local it is fine.
TEST(LowerMemoryReads, GlobalInlinedIntoALargerSpaceIsRefused) {
  for (ir::MemoryType memory : {ir::MemoryType::Global, ir::MemoryType::Local}) {
    auto f = std::make_unique<ir::Fusion>();
    ir::FusionGuard guard(f.get());
    auto* x = ops::TensorBuilder().shape({6, 300}).build();
    auto* bias = ops::TensorBuilder().shape({300}).build();
    f->addInput(x);
    f->addInput(bias);
    auto* b = ops::broadcast(bias, {true, false});
    auto* out = ops::add(x, b);
    f->addOutput(out);
    b->setMemoryType(memory);
    for (ir::TensorView* tv : {b, out}) {
      tv->merge(0);
      tv->split(0, 128);
      tv->axis(0)->parallelize(ir::ParallelType::BIDx);
      tv->axis(1)->parallelize(ir::ParallelType::TIDx);
    }
    transform::inlineAt(b, 2);
    std::string msg = lowerError(*f);
    if (memory == ir::MemoryType::Local) {
      EXPECT_EQ(msg, "");
      continue;
    }
    EXPECT_NE(msg.find("global tensor T2 runs in the loop of"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a larger space than its own"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace loom::test
