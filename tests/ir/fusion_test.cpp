// SPDX-License-Identifier: Apache-2.0
// Fusion basics: building, SSA, traversal, clone, equality, dead code, verifier.
#include <gtest/gtest.h>

#include "loom/ir/ir.h"

namespace loom::ir {
namespace {

TensorView* makeInput(std::vector<int64_t> sizes, DataType dtype = DataType::Float32) {
  std::vector<IterDomain*> ids;
  for (int64_t s : sizes) ids.push_back(IterDomain::create(IrBuilder::index(s)));
  auto* tv = IrBuilder::create<TensorView>(IrBuilder::create<TensorDomain>(ids), dtype,
                                           MemoryType::Global);
  FusionGuard::current()->addInput(tv);
  return tv;
}

TensorView* unaryLike(TensorView* in, UnaryOpType op) {
  std::vector<IterDomain*> ids;
  for (auto* id : in->logical()) ids.push_back(id->cloneWithoutDefinition());
  auto* out = IrBuilder::create<TensorView>(IrBuilder::create<TensorDomain>(ids), in->dtype());
  IrBuilder::create<UnaryOp>(op, out, in);
  return out;
}

// A fusion built through the builder is SSA and verifies.
TEST(FusionTest, BuildTraverseVerify) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({4, 8});
  auto* t1 = unaryLike(t0, UnaryOpType::Exp);
  auto* t2 = unaryLike(t1, UnaryOpType::Neg);
  f.addOutput(t2);
  EXPECT_EQ(t1->definition()->as<UnaryOp>()->in(), t0);
  ASSERT_EQ(t0->uses().size(), 1u);
  auto exprs = f.exprs();
  ASSERT_EQ(exprs.size(), 2u);
  EXPECT_EQ(exprs[0]->output(0), t1);
  EXPECT_NO_THROW(verify(f));
}

// exprs() and allTvs() are memoized: every kind of graph change shows in the next call (new
// exprs, redefinition, replaced inputs, output list edits, dead-code removal).
TEST(FusionTest, TraversalsFollowEveryGraphChange) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({4});
  auto* t1 = unaryLike(t0, UnaryOpType::Exp);
  f.addOutput(t1);
  EXPECT_EQ(f.exprs().size(), 1u);
  EXPECT_EQ(f.allTvs().size(), 2u);

  auto* t2 = unaryLike(t1, UnaryOpType::Neg);
  EXPECT_EQ(f.exprs().size(), 1u);  // t2 is not an output yet
  f.addOutput(t2);
  ASSERT_EQ(f.exprs().size(), 2u);
  EXPECT_EQ(f.exprs()[1]->output(0), t2);
  EXPECT_EQ(f.allTvs().size(), 3u);

  auto* t3 = unaryLike(t0, UnaryOpType::Log);
  t2->definition()->replaceInput(t1, t3);  // t2 = neg(log(t0)): both branches still reach outputs
  ASSERT_EQ(f.exprs().size(), 3u);
  EXPECT_EQ(f.exprs()[1]->output(0), t3);

  f.removeOutput(t1);
  EXPECT_EQ(f.exprs().size(), 2u);
  EXPECT_EQ(f.allTvs().size(), 3u);  // t0, t3, t2

  IrBuilder::create<UnaryOp>(UnaryOpType::Abs, t2, t0);  // redefinition: t2 = abs(t0)
  ASSERT_EQ(f.exprs().size(), 1u);
  EXPECT_EQ(f.exprs()[0]->as<UnaryOp>()->opType(), UnaryOpType::Abs);

  f.replaceOutput(t2, t3);
  ASSERT_EQ(f.exprs().size(), 1u);
  EXPECT_EQ(f.exprs()[0]->output(0), t3);
  f.removeDeadCode();
  EXPECT_EQ(f.exprs().size(), 1u);
  EXPECT_EQ(f.allTvs(), (std::vector<TensorView*>{t0, t3}));
  EXPECT_NO_THROW(verify(f));
}

// A clone is structurally equal to its source and independent of it.
TEST(FusionTest, CloneIsEqual) {
  Fusion f;
  {
    FusionGuard g(&f);
    auto* t0 = makeInput({4, 8});
    auto* t1 = unaryLike(t0, UnaryOpType::Exp);
    t1->split(1, 4);
    t1->merge(0);
    f.addOutput(t1);
  }
  auto c = f.clone();
  std::string why;
  EXPECT_TRUE(structurallyEqual(f, *c, &why)) << why;
  EXPECT_NO_THROW(verify(*c));
  {
    FusionGuard g(c.get());
    c->outputs()[0]->as<TensorView>()->split(0, 2);
  }
  EXPECT_FALSE(structurallyEqual(f, *c, &why));
  EXPECT_FALSE(why.empty());
}

// copyInto's cloner maps every source statement to its copy, and still does after the source
// drops statements (their positions in the source move down).
TEST(FusionTest, ClonerLookupSurvivesSourceChanges) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({3});
  auto* dead = unaryLike(t0, UnaryOpType::Log);
  auto* t1 = unaryLike(t0, UnaryOpType::Exp);
  auto* t2 = unaryLike(t1, UnaryOpType::Neg);
  f.addOutput(t2);
  Fusion copy;
  IrCloner cloner = f.copyInto(copy);
  for (TensorView* tv : {t0, dead, t1, t2}) {
    TensorView* c = cloner.lookup(tv);
    ASSERT_NE(c, nullptr) << tv->toString();
    EXPECT_EQ(c->fusion(), &copy);
    EXPECT_EQ(c->name(), tv->name());
  }
  EXPECT_EQ(cloner.lookup(t2->definition())->fusion(), &copy);
  f.removeDeadCode();  // the log and its output leave f: t1, t2 and their exprs move down
  EXPECT_EQ(cloner.lookup(t1)->name(), t1->name());
  EXPECT_EQ(cloner.lookup(t2), copy.outputs()[0]);
  EXPECT_EQ(cloner.lookup(t2->definition()), copy.outputs()[0]->definition());
  // Statements of another fusion are never confused with those positions.
  Fusion other;
  FusionGuard g2(&other);
  auto* stranger = makeInput({3});
  EXPECT_EQ(cloner.lookup(stranger), nullptr);
}

// Dead code removal keeps what outputs need and drops the rest.
TEST(FusionTest, DeadCodeRemoval) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({3});
  auto* t1 = unaryLike(t0, UnaryOpType::Exp);
  unaryLike(t0, UnaryOpType::Log);  // dead
  f.addOutput(t1);
  int64_t before = f.numStatements();
  f.removeDeadCode();
  EXPECT_LT(f.numStatements(), before);
  EXPECT_EQ(t0->uses().size(), 1u);
  EXPECT_NO_THROW(verify(f));
}

// A new definition of a value replaces the old one (SSA).
TEST(FusionTest, RedefinitionReplaces) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({3});
  auto* t1 = unaryLike(t0, UnaryOpType::Exp);
  IrBuilder::create<UnaryOp>(UnaryOpType::Neg, t1, t0);
  EXPECT_EQ(t1->definition()->as<UnaryOp>()->opType(), UnaryOpType::Neg);
  EXPECT_EQ(t0->uses().size(), 1u);
}

// Building IR with no active fusion is a user error.
TEST(FusionTest, NoActiveFusion) {
  try {
    IrBuilder::index(1);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no active fusion"), std::string::npos);
  }
}

// A padded copy of `in`: root mirrors in, logical is Resize(root, left, right) (a PadOp).
TensorView* padded(TensorView* in, int64_t left, int64_t right) {
  IterDomain* root = in->logical()[0]->cloneWithoutDefinition();
  IterDomain* out = IterDomain::resize(root, IrBuilder::index(left), IrBuilder::index(right), true);
  auto* tv = IrBuilder::create<TensorView>(
      IrBuilder::create<TensorDomain>(std::vector<IterDomain*>{root}, std::vector<IterDomain*>{out},
                                      std::vector<IterDomain*>{}, std::vector<IterDomain*>{}),
      in->dtype());
  IrBuilder::create<PadOp>(tv, in, IrBuilder::constant(0.0, DataType::Float32));
  return tv;
}

// Resize folds constant extents (left + extent + right) and rejects a negative one; the
// verifier accepts it from root to logical, and a clone is structurally equal.
TEST(FusionTest, ResizeRootToLogical) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({8});
  auto* t1 = padded(t0, 2, -3);
  f.addOutput(t1);
  EXPECT_EQ(t1->logical()[0]->extent()->constInt(), 7);
  EXPECT_TRUE(t1->logical()[0]->isIteration());
  EXPECT_NO_THROW(verify(f));
  auto copy = f.clone();
  std::string why;
  EXPECT_TRUE(structurallyEqual(f, *copy, &why)) << why;
  IterDomain* id = IterDomain::create(IrBuilder::index(2));
  try {
    IterDomain::resize(id, IrBuilder::index(-2), IrBuilder::index(-1));
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gives the negative extent -1"), std::string::npos)
        << e.what();
  }
}

// A loop domain may not be derived through a Resize (only Split/Merge of logical).
TEST(FusionTest, ResizeNotInLoop) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({8});
  auto* t1 = unaryLike(t0, UnaryOpType::Neg);
  f.addOutput(t1);
  IterDomain* r = IterDomain::resize(t1->logical()[0], IrBuilder::index(1), IrBuilder::index(0));
  t1->domain()->setLoopDomain({r});
  EXPECT_THROW(verify(f), InternalError);
}

}  // namespace
}  // namespace loom::ir
