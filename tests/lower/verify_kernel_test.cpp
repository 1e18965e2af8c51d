// SPDX-License-Identifier: Apache-2.0
// The kernel-IR verifier (lower::verifyKernel): hand-built kernels breaking each rule are
// rejected with a message naming the pass, the rule and the statement; correct kernels pass.
#include "loom/lower/verify_kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "loom/ir/builder.h"
#include "loom/support/error.h"
#include "lower/lower_test_util.h"

namespace loom::lower {
namespace {

using ::testing::HasSubstr;

// The message of the InternalError verifyKernel throws ("" and a test failure when none).
std::string violation(const kir::Kernel& k, std::string_view pass = "test_pass") {
  try {
    verifyKernel(k, pass);
  } catch (const InternalError& e) {
    return e.message();
  }
  ADD_FAILURE() << "verifyKernel accepted:\n" << kir::toString(k);
  return "";
}

// A small kernel to break: parameters T0 (input) and T1 (output), f32 [8].
struct Builder {
  kir::Kernel k;
  kir::Buffer* in = param("T0", true);
  kir::Buffer* out = param("T1", false);

  kir::Buffer* param(const char* name, bool input) {
    kir::Buffer* b = k.createBuffer();
    b->name = name;
    b->rank = 1;
    b->isFusionInput = input;
    b->isFusionOutput = !input;
    k.params.push_back(b);
    return b;
  }
  kir::Buffer* local(const char* name, int64_t size) {
    kir::Buffer* b = k.createBuffer();
    b->name = name;
    b->kind = kir::BufferKind::Local;
    b->size = k.constInt(size);
    return b;
  }
  kir::ForLoop* loop(kir::Var* index, int64_t stop, ir::ParallelType p = ir::ParallelType::Serial) {
    return k.create<kir::ForLoop>(index, k.constInt(0), k.constInt(stop), p, nullptr);
  }
  kir::Var* index(const char* name = "i") { return k.newVar(kIndexType, name); }
  kir::Value* load(const kir::Buffer* b, kir::Value* i) { return k.create<kir::Load>(b, i); }
  kir::Stmt* store(const kir::Buffer* b, kir::Value* i, kir::Value* v) {
    return k.create<kir::Store>(b, i, v);
  }
  kir::Value* f32(double v) { return k.create<kir::Const>(DataType::Float32, ir::ScalarValue{v}); }
  kir::Value* add(kir::Value* a, kir::Value* b) {
    return k.create<kir::BinaryExpr>(a->dtype(), ir::BinaryOpType::Add, a, b);
  }
  kir::Value* lt(kir::Value* a, kir::Value* b) {
    return k.create<kir::BinaryExpr>(DataType::Bool, ir::BinaryOpType::Lt, a, b);
  }
  kir::Value* tid() { return k.create<kir::NamedScalar>("threadIdx.x"); }
};

// A kernel using every statement kind correctly passes: loop indices, an accumulator, a local
// buffer allocated in the loop that uses it, a const index, a block reduction outside any if.
TEST(VerifyKernel, CorrectKernelPasses) {
  Builder b;
  kir::Kernel& k = b.k;
  k.gridScratch.push_back({"gw0", "float", 4, false});
  k.gridScratch.push_back({"gs0", "unsigned", 4, true});
  kir::Var* last = k.newVar(DataType::Bool, "last");
  k.body.push_back(k.create<kir::DeclareVar>(last, k.constBool(false)));
  kir::Var* i0 = b.index();
  kir::ForLoop* bid = b.loop(i0, 8, ir::ParallelType::BIDx);
  k.body.push_back(bid);
  kir::Buffer* t2 = b.local("T2", 4);
  bid->body.push_back(k.create<kir::Allocate>(t2));
  kir::Var* i1 = b.index();
  kir::ForLoop* fill = b.loop(i1, 4);
  fill->body.push_back(b.store(t2, i1, b.load(b.in, i1)));
  bid->body.push_back(fill);
  kir::Var* acc = k.newVar(DataType::Float32, "acc");
  bid->body.push_back(k.create<kir::DeclareVar>(acc, b.f32(0.0)));
  kir::Var* i2 = b.index();
  kir::ForLoop* sum = b.loop(i2, 4);
  kir::Var* c = k.newVar(kIndexType, "i");
  sum->body.push_back(k.create<kir::DeclareVar>(c, b.add(i2, i0), true));
  auto* guard = k.create<kir::IfThenElse>(b.lt(c, k.constInt(10)));
  guard->thenBody.push_back(k.create<kir::Store>(acc, b.add(acc, b.load(t2, i2))));
  sum->body.push_back(guard);
  bid->body.push_back(sum);
  bid->body.push_back(k.create<kir::BlockSync>());
  bid->body.push_back(
      k.create<kir::BlockReduce>(ir::ReductionOpType::Sum, acc, b.f32(0.0), true, false, false));
  bid->body.push_back(
      k.create<kir::GridReduce>(ir::ReductionOpType::Sum, acc, b.f32(0.0), last, 0));
  auto* write = k.create<kir::IfThenElse>(last);
  write->thenBody.push_back(b.store(b.out, i0, acc));
  bid->body.push_back(write);
  EXPECT_NO_THROW(verifyKernel(k, "test_pass")) << kir::toString(k);
}

// Kernels lowered from scheduled fusions keep every rule after every pass.
TEST(VerifyKernel, LoweredKernelsPassAfterEveryPass) {
  for (auto make : {test::splitPointwise, test::blockSum, test::mismatchedThreadLoops}) {
    auto f = make();
    for (const Pass& p : pipeline()) {
      auto kernel = lowerFusionUntil(*f, p.name);
      EXPECT_NO_THROW(verifyKernel(*kernel, p.name)) << p.name << ":\n" << kir::toString(*kernel);
    }
  }
}

// The passes the verifier keys rules on (TensorOp buffers from `allocations` and `reductions` on,
// no TensorOp from `indexing` on) are in the pipeline.
TEST(VerifyKernel, PassesItKeysOnExist) {
  for (std::string_view name : {"allocations", "reductions", "indexing"}) {
    bool found = false;
    for (const Pass& p : pipeline()) found = found || p.name == name;
    EXPECT_TRUE(found) << name;
  }
}

// var-declared: a kernel reading a loop index outside its loop is rejected; the message names the
// pass, the rule, the variable and the statement.
TEST(VerifyKernel, VarReadOutsideItsLoop) {
  Builder b;
  kir::Var* i0 = b.index();
  b.k.body.push_back(b.loop(i0, 8));
  b.k.body.push_back(b.store(b.out, i0, b.load(b.in, b.k.constInt(0))));
  std::string msg = violation(b.k, "loop_nests");
  EXPECT_THAT(msg, HasSubstr("kernel IR after pass 'loop_nests' breaks rule var-declared: i0 is "
                             "read (in an index i0)"));
  EXPECT_THAT(msg, HasSubstr("at: T1[i0] = T0[0]"));
}

// var-declared: a variable used before its DeclareVar, or assigned without one.
TEST(VerifyKernel, VarUsedBeforeDeclaration) {
  Builder b;
  kir::Var* acc = b.k.newVar(DataType::Float32, "acc");
  b.k.body.push_back(b.store(b.out, b.k.constInt(0), acc));
  b.k.body.push_back(b.k.create<kir::DeclareVar>(acc, b.f32(1.0)));
  EXPECT_THAT(violation(b.k), HasSubstr("breaks rule var-declared: acc0 is read"));

  Builder c;
  kir::Var* v = c.k.newVar(DataType::Float32, "acc");
  c.k.body.push_back(c.k.create<kir::Store>(v, c.f32(1.0)));
  EXPECT_THAT(violation(c.k), HasSubstr("breaks rule var-declared: acc0 is assigned (by a Store)"));
}

// var-declared: a variable declared inside one branch is not visible in the other, nor after.
TEST(VerifyKernel, VarDeclaredInsideAnIfIsNotVisibleAfterIt) {
  Builder b;
  kir::Var* t = b.k.newVar(DataType::Float32, "t");
  auto* ite = b.k.create<kir::IfThenElse>(b.lt(b.tid(), b.k.constInt(4)));
  ite->thenBody.push_back(b.k.create<kir::DeclareVar>(t, b.f32(2.0)));
  b.k.body.push_back(ite);
  b.k.body.push_back(b.store(b.out, b.k.constInt(0), t));
  std::string msg = violation(b.k);
  EXPECT_THAT(msg, HasSubstr("breaks rule var-declared: t0 is read (in the stored value t0)"));
}

// Scalar parameters are declared for the whole kernel.
TEST(VerifyKernel, ScalarParamsAreDeclared) {
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  Builder b;
  kir::Var* s = b.k.create<kir::Var>(DataType::Float32, "loom_s0");
  b.k.scalarParams.emplace_back(ir::IrBuilder::symbolic(DataType::Float32), s);
  b.k.body.push_back(b.store(b.out, b.k.constInt(0), s));
  EXPECT_NO_THROW(verifyKernel(b.k, "test_pass"));
}

// declared-once: a DeclareVar of a variable already visible, and a second variable of the same
// name as a visible one, are rejected; the same variable declared in two sibling scopes is fine.
TEST(VerifyKernel, VarDeclaredTwice) {
  Builder b;
  kir::Var* acc = b.k.newVar(DataType::Float32, "acc");
  b.k.body.push_back(b.k.create<kir::DeclareVar>(acc, b.f32(0.0)));
  kir::Var* i0 = b.index();
  kir::ForLoop* l = b.loop(i0, 4);
  l->body.push_back(b.k.create<kir::DeclareVar>(acc, b.f32(1.0)));
  b.k.body.push_back(l);
  EXPECT_THAT(violation(b.k),
              HasSubstr("breaks rule declared-once: variable acc0 is declared again where its "
                        "declaration as a variable is visible"));

  Builder c;
  kir::Var* i = c.index();
  kir::ForLoop* outer = c.loop(i, 4);
  outer->body.push_back(c.loop(c.k.create<kir::Var>(kIndexType, i->name), 2));
  c.k.body.push_back(outer);
  EXPECT_THAT(violation(c.k), HasSubstr("breaks rule declared-once: loop index i0 has the name of "
                                        "the loop index visible here"));

  Builder d;
  kir::Var* t = d.k.newVar(DataType::Float32, "t");
  auto* ite = d.k.create<kir::IfThenElse>(d.lt(d.tid(), d.k.constInt(4)));
  ite->thenBody.push_back(d.k.create<kir::DeclareVar>(t, d.f32(0.0)));
  ite->elseBody.push_back(d.k.create<kir::DeclareVar>(t, d.f32(1.0)));
  d.k.body.push_back(ite);
  EXPECT_NO_THROW(verifyKernel(d.k, "test_pass"));
}

// declared-once: a local buffer named like a parameter would hide it (the kernel would read the
// local array where it meant the parameter).
TEST(VerifyKernel, LocalBufferNamedLikeAParameter) {
  Builder b;
  kir::Buffer* t0 = b.local("T0", 1);
  kir::Var* i0 = b.index();
  kir::ForLoop* l = b.loop(i0, 8);
  l->body.push_back(b.k.create<kir::Allocate>(t0));
  b.k.body.push_back(l);
  std::string msg = violation(b.k, "allocations");
  EXPECT_THAT(msg, HasSubstr("breaks rule declared-once: local buffer T0 has the name of the "
                             "parameter visible here"));
  EXPECT_THAT(msg, HasSubstr("at: alloc T0 : f32 local[1]"));
}

// buffer-allocated: a local buffer read outside the loop that allocates it is rejected.
TEST(VerifyKernel, LocalBufferReadOutsideItsAllocationScope) {
  Builder b;
  kir::Buffer* t2 = b.local("T2", 1);
  kir::Var* i0 = b.index();
  kir::ForLoop* l = b.loop(i0, 8);
  l->body.push_back(b.k.create<kir::Allocate>(t2));
  l->body.push_back(b.store(t2, b.k.constInt(0), b.load(b.in, i0)));
  b.k.body.push_back(l);
  kir::Var* i1 = b.index();
  kir::ForLoop* use = b.loop(i1, 8);
  use->body.push_back(b.store(b.out, i1, b.load(t2, b.k.constInt(0))));
  b.k.body.push_back(use);
  std::string msg = violation(b.k, "allocations");
  EXPECT_THAT(msg, HasSubstr("after pass 'allocations' breaks rule buffer-allocated: local buffer "
                             "T2 is read with no Allocate of it before"));
  EXPECT_THAT(msg, HasSubstr("at: T1[i1] = T2[0]\n  in: for i1 in 0 .. 8: ..."));
}

// buffer-allocated: a local buffer written before its Allocate; and allocated twice.
TEST(VerifyKernel, LocalBufferWrittenBeforeAllocationOrAllocatedTwice) {
  Builder b;
  kir::Buffer* t2 = b.local("T2", 1);
  b.k.body.push_back(b.store(t2, b.k.constInt(0), b.f32(1.0)));
  b.k.body.push_back(b.k.create<kir::Allocate>(t2));
  EXPECT_THAT(violation(b.k),
              HasSubstr("breaks rule buffer-allocated: local buffer T2 is written with no "
                        "Allocate"));

  Builder c;
  kir::Buffer* t3 = c.local("T3", 1);
  c.k.body.push_back(c.k.create<kir::Allocate>(t3));
  c.k.body.push_back(c.k.create<kir::Allocate>(t3));
  EXPECT_THAT(violation(c.k), HasSubstr("breaks rule declared-once: buffer T3 is allocated again"));
}

// buffer-allocated: once `allocations` ran, the tensors of TensorOps need their buffers too
// (before it, they need none).
TEST(VerifyKernel, TensorOpBufferWithoutAllocation) {
  auto f = test::splitPointwise();
  auto kernel = lowerFusionUntil(*f, "allocations");
  // Drop every Allocate.
  std::function<void(kir::Scope&)> drop = [&](kir::Scope& scope) {
    std::erase_if(scope, [](kir::Stmt* s) { return s->isA<kir::Allocate>(); });
    for (kir::Stmt* s : scope) {
      if (auto* l = s->dynCast<kir::ForLoop>()) drop(l->body);
      if (auto* i = s->dynCast<kir::IfThenElse>()) {
        drop(i->thenBody);
        drop(i->elseBody);
      }
    }
  };
  drop(kernel->body);
  EXPECT_NO_THROW(verifyKernel(*kernel, "loop_nests"));
  std::string msg = violation(*kernel, "allocations");
  EXPECT_THAT(msg, HasSubstr("breaks rule buffer-allocated: local buffer T1 is written with no "
                             "Allocate"));
  EXPECT_THAT(msg, HasSubstr("at: tensor T1"));
}

// param-buffer: a Param buffer that is not a kernel parameter, and the size of a local buffer.
TEST(VerifyKernel, ParamBufferNotAParameter) {
  Builder b;
  kir::Buffer* stray = b.k.createBuffer();
  stray->name = "T9";
  b.k.body.push_back(b.store(b.out, b.k.constInt(0), b.load(stray, b.k.constInt(0))));
  EXPECT_THAT(violation(b.k), HasSubstr("breaks rule param-buffer: param buffer T9 is read but is "
                                        "not a kernel parameter"));

  Builder c;
  kir::Buffer* t2 = c.local("T2", 4);
  c.k.body.push_back(c.k.create<kir::Allocate>(t2));
  c.k.body.push_back(c.store(c.out, c.k.create<kir::TensorSize>(t2, 0, false), c.f32(0.0)));
  EXPECT_THAT(violation(c.k), HasSubstr("breaks rule param-buffer: T2.size[0] is the size or "
                                        "stride of local buffer T2"));
}

// collective-unconditional: BlockSync, BlockReduce, block Welford and GridReduce inside an if.
TEST(VerifyKernel, CollectiveInsideIf) {
  auto guarded = [](Builder& b, kir::Stmt* s) {
    auto* ite = b.k.create<kir::IfThenElse>(b.lt(b.tid(), b.k.constInt(4)));
    ite->thenBody.push_back(s);
    b.k.body.push_back(ite);
  };
  {
    Builder b;
    guarded(b, b.k.create<kir::BlockSync>());
    std::string msg = violation(b.k, "syncs");
    EXPECT_THAT(msg, HasSubstr("after pass 'syncs' breaks rule collective-unconditional: a "
                               "BlockSync is inside an IfThenElse (if (threadIdx.x < 4): ...)"));
    EXPECT_THAT(msg, HasSubstr("at: block_sync"));
  }
  {
    Builder b;
    kir::Var* acc = b.k.newVar(DataType::Float32, "acc");
    b.k.body.push_back(b.k.create<kir::DeclareVar>(acc, b.f32(0.0)));
    guarded(b, b.k.create<kir::BlockReduce>(ir::ReductionOpType::Max, acc, b.f32(0.0), true, false,
                                            false));
    EXPECT_THAT(violation(b.k),
                HasSubstr("rule collective-unconditional: a BlockReduce is inside"));
  }
  {
    Builder b;
    kir::Var* v[3];
    for (auto*& x : v) {
      x = b.k.newVar(DataType::Float32, "w");
      b.k.body.push_back(b.k.create<kir::DeclareVar>(x, b.f32(0.0)));
    }
    auto* w = b.k.create<kir::Welford>(kir::WelfordMode::Block, v[0], v[1], v[2]);
    w->x = true;
    guarded(b, w);
    EXPECT_THAT(violation(b.k),
                HasSubstr("rule collective-unconditional: a block Welford is inside"));
  }
  {
    Builder b;
    b.k.gridScratch.push_back({"gw0", "float", 4, false});
    b.k.gridScratch.push_back({"gs0", "unsigned", 4, true});
    kir::Var* acc = b.k.newVar(DataType::Float32, "acc");
    kir::Var* last = b.k.newVar(DataType::Bool, "last");
    b.k.body.push_back(b.k.create<kir::DeclareVar>(acc, b.f32(0.0)));
    b.k.body.push_back(b.k.create<kir::DeclareVar>(last, b.k.constBool(false)));
    guarded(b, b.k.create<kir::GridReduce>(ir::ReductionOpType::Sum, acc, b.f32(0.0), last, 0));
    EXPECT_THAT(violation(b.k), HasSubstr("rule collective-unconditional: a GridReduce is inside"));
  }
}

// no-tensor-op: a TensorOp left after indexing is rejected (before indexing it is the norm).
TEST(VerifyKernel, TensorOpAfterIndexing) {
  auto f = test::splitPointwise();
  auto kernel = lowerFusionUntil(*f, "unswitch");
  EXPECT_NO_THROW(verifyKernel(*kernel, "unswitch"));
  std::string msg = violation(*kernel, "indexing");
  EXPECT_THAT(msg, HasSubstr("after pass 'indexing' breaks rule no-tensor-op: a TensorOp is left "
                             "after indexing"));
  EXPECT_THAT(msg, HasSubstr("at: tensor T1 = exp(T0)"));
}

// index-readonly: a loop index or a const index variable assigned.
TEST(VerifyKernel, LoopIndexAssigned) {
  Builder b;
  kir::Var* i0 = b.index();
  kir::ForLoop* l = b.loop(i0, 8);
  l->body.push_back(b.k.create<kir::Store>(i0, b.k.constInt(3)));
  b.k.body.push_back(l);
  EXPECT_THAT(violation(b.k),
              HasSubstr("breaks rule index-readonly: loop index i0 is assigned (by a Store)"));

  Builder c;
  kir::Var* ci = c.k.newVar(kIndexType, "i");
  c.k.body.push_back(c.k.create<kir::DeclareVar>(ci, c.k.constInt(2), true));
  c.k.body.push_back(c.k.create<kir::Store>(ci, c.k.constInt(3)));
  EXPECT_THAT(violation(c.k), HasSubstr("breaks rule index-readonly: const index variable i0 is "
                                        "assigned"));
}

// parallel-not-nested: a TIDx loop inside a TIDx loop (through a serial one) is rejected; TIDx
// inside BIDx is fine.
TEST(VerifyKernel, SameParallelTypeNested) {
  Builder b;
  kir::Var* i0 = b.index();
  kir::Var* i1 = b.index();
  kir::Var* i2 = b.index();
  kir::ForLoop* outer = b.loop(i0, 32, ir::ParallelType::TIDx);
  kir::ForLoop* mid = b.loop(i1, 2);
  mid->body.push_back(b.loop(i2, 32, ir::ParallelType::TIDx));
  outer->body.push_back(mid);
  b.k.body.push_back(outer);
  EXPECT_THAT(violation(b.k), HasSubstr("breaks rule parallel-not-nested: TIDx loop i2 is inside "
                                        "another TIDx loop (for i0 in TIDx 0 .. 32: ...)"));

  Builder c;
  kir::ForLoop* bid = c.loop(c.index(), 8, ir::ParallelType::BIDx);
  bid->body.push_back(c.loop(c.index(), 32, ir::ParallelType::TIDx));
  c.k.body.push_back(bid);
  EXPECT_NO_THROW(verifyKernel(c.k, "test_pass"));
}

// grid-scratch: a GridReduce whose call site has no scratch buffers.
TEST(VerifyKernel, GridReduceWithoutScratch) {
  Builder b;
  kir::Var* acc = b.k.newVar(DataType::Float32, "acc");
  kir::Var* last = b.k.newVar(DataType::Bool, "last");
  b.k.body.push_back(b.k.create<kir::DeclareVar>(acc, b.f32(0.0)));
  b.k.body.push_back(b.k.create<kir::DeclareVar>(last, b.k.constBool(false)));
  b.k.body.push_back(
      b.k.create<kir::GridReduce>(ir::ReductionOpType::Sum, acc, b.f32(0.0), last, 1));
  EXPECT_THAT(violation(b.k), HasSubstr("breaks rule grid-scratch: call site 1 has no work and "
                                        "semaphore buffers (0 grid scratch buffers)"));
}

// complete: a statement missing a value it needs.
TEST(VerifyKernel, MissingValue) {
  Builder b;
  b.k.body.push_back(b.store(b.out, nullptr, b.f32(1.0)));
  EXPECT_THAT(violation(b.k), HasSubstr("breaks rule complete: the statement lacks an index"));
}

}  // namespace
}  // namespace loom::lower
