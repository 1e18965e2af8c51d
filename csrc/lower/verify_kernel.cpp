// SPDX-License-Identifier: Apache-2.0
// The kernel-IR verifier (verify_kernel.h): one walk over the statements with the variables and
// allocations visible at each point, throwing on the first broken rule.
#include "loom/lower/verify_kernel.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/lower/kir_walk.h"
#include "loom/lower/lower.h"
#include "loom/support/error.h"

namespace loom::lower {
namespace {

// Where pass `name` stands in the pipeline; npos when it is not there.
size_t pipelinePosition(std::string_view name) {
  const std::vector<Pass>& passes = pipeline().passes();
  for (size_t i = 0; i < passes.size(); ++i) {
    if (passes[i].name == name) return i;
  }
  return std::string_view::npos;
}

// True when `pass` has run once the pipeline is past `after` (every pass, for a name that is not
// in the pipeline).
bool passRan(std::string_view pass, std::string_view after) {
  size_t a = pipelinePosition(after);
  if (a == std::string_view::npos) return true;
  size_t p = pipelinePosition(pass);
  return p != std::string_view::npos && p <= a;
}

// A statement on one line: loops and ifs print their header only.
std::string oneLine(const kir::Stmt* s) {
  const bool body = s->isA<kir::ForLoop>() || s->isA<kir::IfThenElse>();
  return kir::headline(s) + (body ? " ..." : "");
}

enum class VarKind : uint8_t { LoopIndex, ConstIndex, Mutable, ScalarParam };

std::string_view varKindName(VarKind k) {
  switch (k) {
    case VarKind::LoopIndex: return "loop index";
    case VarKind::ConstIndex: return "const index variable";
    case VarKind::Mutable: return "variable";
    case VarKind::ScalarParam: return "scalar parameter";
  }
  LOOM_UNREACHABLE();
}

class Verifier {
 public:
  Verifier(const kir::Kernel& kernel, std::string_view pass)
      : kernel_(kernel),
        pass_(pass),
        allocations_ran_(passRan("allocations", pass)),
        reductions_ran_(passRan("reductions", pass)),
        indexing_ran_(passRan("indexing", pass)) {
    for (const kir::Buffer* b : kernel.params) params_.insert(b);
    for (const auto& b : kernel.buffers()) {
      if (b->tv != nullptr) tv_buffers_[b->tv].push_back(b.get());
    }
  }

  void run() {
    // Parameters share the kernel's one namespace with buffers and variables.
    for (const kir::Buffer* b : kernel_.params) declareName(b->name, "parameter");
    for (const kir::Kernel::GridScratch& g : kernel_.gridScratch) {
      declareName(g.name, "grid scratch parameter");
    }
    for (const auto& param : kernel_.scalarParams) {
      if (param.second == nullptr) fail("complete", nullptr, "a scalar parameter has no variable");
      declare(param.second, VarKind::ScalarParam);
    }
    visitScope(kernel_.body);
  }

 private:
  // ---- visible declarations (undone when their scope closes) ----------------------------------

  struct Mark {
    size_t vars, names, buffers;
  };
  Mark mark() const { return {var_log_.size(), name_log_.size(), buffer_log_.size()}; }
  void release(const Mark& m) {
    while (var_log_.size() > m.vars) {
      vars_.erase(var_log_.back());
      var_log_.pop_back();
    }
    while (name_log_.size() > m.names) {
      names_.erase(name_log_.back());
      name_log_.pop_back();
    }
    while (buffer_log_.size() > m.buffers) {
      allocated_.erase(buffer_log_.back());
      buffer_log_.pop_back();
    }
  }

  void declareName(const std::string& name, std::string_view what) {
    if (auto it = names_.find(name); it != names_.end()) {
      fail("declared-once", current_,
           concat(what, " ", name, " has the name of the ", it->second, " visible here"));
    }
    names_.emplace(name, what);
    name_log_.push_back(name);
  }

  void declare(const kir::Var* v, VarKind kind) {
    if (auto it = vars_.find(v); it != vars_.end()) {
      fail("declared-once", current_,
           concat(varKindName(kind), " ", v->name, " is declared again where its declaration as a ",
                  varKindName(it->second), " is visible"));
    }
    vars_.emplace(v, kind);
    var_log_.push_back(v);
    declareName(v->name, varKindName(kind));
  }

  // ---- reporting --------------------------------------------------------------------------------

  template <typename... Args>
  static std::string concat(const Args&... args) {
    return detail::concat(args...);
  }

  [[noreturn]] void fail(std::string_view rule, const kir::Stmt* at,
                         const std::string& what) const {
    std::string msg = concat("kernel IR after pass '", pass_, "' breaks rule ", rule, ": ", what);
    if (at != nullptr) msg += "\n  at: " + oneLine(at);
    for (auto it = enclosing_.rbegin(); it != enclosing_.rend(); ++it) {
      if (*it != at) msg += "\n  in: " + oneLine(*it);
    }
    detail::throwInternalError(__FILE__, __LINE__, "kernel IR verifier", msg);
  }

  void require(const void* p, const char* what) const {
    if (p == nullptr) fail("complete", current_, concat("the statement lacks ", what));
  }

  // ---- values -----------------------------------------------------------------------------------

  // Every value `v` is built from (each distinct one once, with an explicit stack: an index may
  // be tens of thousands deep).
  void read(const kir::Value* v, const char* what) {
    require(v, what);
    std::unordered_set<const kir::Value*> seen;
    std::vector<std::pair<const kir::Value*, const char*>> work{{v, what}};
    while (!work.empty()) {
      auto [x, label] = work.back();
      work.pop_back();
      if (!seen.insert(x).second) continue;
      readOne(x, label);
      if (auto* l = x->dynCast<kir::Load>()) {
        work.push_back({l->index, "an index"});
        continue;
      }
      for (const kir::Value* in : kir::operandsOf(x)) {
        require(in, label);
        work.push_back({in, label});
      }
    }
  }

  // The rule of one value, its operands aside.
  void readOne(const kir::Value* v, const char* what) {
    switch (v->kind()) {
      case kir::NodeKind::Const:
      case kir::NodeKind::NamedScalar:
      case kir::NodeKind::UnaryExpr:
      case kir::NodeKind::BinaryExpr:
      case kir::NodeKind::TernaryExpr:
      case kir::NodeKind::Call: return;
      case kir::NodeKind::Var: {
        auto* var = v->as<kir::Var>();
        if (!vars_.count(var)) {
          fail("var-declared", current_,
               concat(var->name, " is read (in ", what, " ", kir::toString(v),
                      ") but is no enclosing loop's index, no DeclareVar before it in this or an "
                      "enclosing scope and no scalar parameter"));
        }
        return;
      }
      case kir::NodeKind::TensorSize: {
        auto* t = v->as<kir::TensorSize>();
        require(t->buffer, "a buffer");
        if (t->buffer->kind != kir::BufferKind::Param || !params_.count(t->buffer)) {
          fail("param-buffer", current_,
               concat(kir::toString(v), " is the size or stride of ",
                      kir::bufferKindName(t->buffer->kind), " buffer ", t->buffer->name,
                      ", which is not a kernel parameter"));
        }
        return;
      }
      case kir::NodeKind::Load: {
        auto* l = v->as<kir::Load>();
        require(l->buffer, "a buffer");
        require(l->index, "an index");
        access(l->buffer, "read");
        return;
      }
      case kir::NodeKind::Misalignment: {
        auto* m = v->as<kir::Misalignment>();
        require(m->buffer, "a buffer");
        require(m->index, "an index");
        if (m->buffer->kind != kir::BufferKind::Param || !params_.count(m->buffer)) {
          fail("param-buffer", current_,
               concat(kir::toString(v), " asks the alignment of ",
                      kir::bufferKindName(m->buffer->kind), " buffer ", m->buffer->name,
                      ", which is not a kernel parameter"));
        }
        return;
      }
      default: fail("complete", current_, "a value of a statement kind");
    }
  }

  // A Var assigned by the current statement.
  void write(const kir::Var* v, const char* what) {
    require(v, what);
    auto it = vars_.find(v);
    if (it == vars_.end()) {
      fail("var-declared", current_,
           concat(v->name, " is assigned (", what,
                  ") but is no enclosing loop's index, no DeclareVar before it in this or an "
                  "enclosing scope and no scalar parameter"));
    }
    if (it->second == VarKind::LoopIndex || it->second == VarKind::ConstIndex) {
      fail("index-readonly", current_,
           concat(varKindName(it->second), " ", v->name, " is assigned (", what, ")"));
    }
  }

  void access(const kir::Buffer* b, const char* how) {
    if (b->kind == kir::BufferKind::Param) {
      if (!params_.count(b)) {
        fail("param-buffer", current_,
             concat("param buffer ", b->name, " is ", how, " but is not a kernel parameter"));
      }
      return;
    }
    if (!allocated_.count(b)) {
      fail("buffer-allocated", current_,
           concat(kir::bufferKindName(b->kind), " buffer ", b->name, " is ", how,
                  " with no Allocate of it before, in this or an enclosing scope"));
    }
  }

  // The tensor of a TensorOp: one of its buffers must be usable here.
  void accessTensor(const ir::TensorView* tv, const char* how) {
    auto it = tv_buffers_.find(tv);
    if (it == tv_buffers_.end()) {
      // Welford siblings other than output 0 get their buffers in `reductions`.
      if (!reductions_ran_) return;
      fail("buffer-allocated", current_,
           concat("tensor ", tv->toString(), " is ", how, " but has no buffer"));
    }
    for (const kir::Buffer* b : it->second) {
      if (b->kind == kir::BufferKind::Param ? params_.count(b) != 0 : allocated_.count(b) != 0) {
        return;
      }
    }
    access(it->second.front(), how);  // fails with the first buffer's rule
  }

  // ---- statements -------------------------------------------------------------------------------

  void collective(const kir::Stmt* s, const char* what) {
    for (const kir::Stmt* e : enclosing_) {
      if (e->isA<kir::IfThenElse>()) {
        fail("collective-unconditional", s,
             concat(what, " is inside an IfThenElse (", oneLine(e),
                    "); every thread of the block must reach it"));
      }
    }
  }

  // The statements of `root` with an explicit stack of open scopes (a loop nest may be tens of
  // thousands deep). A scope's declarations are undone when it closes; the loop or if owning it
  // encloses its statements meanwhile.
  void visitScope(const kir::Scope& root) {
    struct Open {
      const kir::Scope* scope;
      const kir::Stmt* owner = nullptr;   ///< pushed on enclosing_ while the scope is open
      const kir::Var* index = nullptr;    ///< a loop body: its index is declared in it
      bool started = false;
      Mark mark{};
      size_t next = 0;
    };
    std::vector<Open> stack;
    stack.push_back({&root});
    while (!stack.empty()) {
      Open& o = stack.back();
      if (!o.started) {
        o.started = true;
        if (o.owner != nullptr) enclosing_.push_back(o.owner);
        o.mark = mark();
        if (o.index != nullptr) {
          current_ = o.owner;
          declare(o.index, VarKind::LoopIndex);
        }
      }
      if (o.next == o.scope->size()) {
        release(o.mark);
        if (o.owner != nullptr) enclosing_.pop_back();
        stack.pop_back();
        continue;
      }
      const kir::Stmt* s = (*o.scope)[o.next++];
      if (s == nullptr) fail("complete", nullptr, "a scope holds a null statement");
      visit(s);
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        stack.push_back({&f->body, s, f->index});
      } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
        stack.push_back({&i->elseBody, s});
        stack.push_back({&i->thenBody, s});
      }
    }
  }

  void visit(const kir::Stmt* s) {
    current_ = s;
    switch (s->kind()) {
      case kir::NodeKind::ForLoop: visitLoop(s); return;
      case kir::NodeKind::IfThenElse: {
        auto* i = s->as<kir::IfThenElse>();
        read(i->cond, "the condition");
        return;  // visitScope walks the branches
      }
      case kir::NodeKind::Allocate: visitAllocate(s); return;
      case kir::NodeKind::DeclareVar: {
        auto* d = s->as<kir::DeclareVar>();
        require(d->var, "a variable");
        read(d->init, "the initial value");
        declare(d->var, d->constIndex ? VarKind::ConstIndex : VarKind::Mutable);
        return;
      }
      case kir::NodeKind::Store: {
        auto* st = s->as<kir::Store>();
        if ((st->buffer == nullptr) == (st->var == nullptr)) {
          fail("complete", s, "a Store writes either a buffer element or a variable");
        }
        read(st->value, "the stored value");
        if (st->buffer != nullptr) {
          read(st->index, "an index");
          access(st->buffer, "written");
        } else {
          write(st->var, "by a Store");
        }
        return;
      }
      case kir::NodeKind::BlockSync: collective(s, "a BlockSync"); return;
      case kir::NodeKind::BlockReduce: {
        auto* b = s->as<kir::BlockReduce>();
        collective(s, "a BlockReduce");
        read(b->init, "the initial value");
        require(b->acc, "an accumulator");
        read(b->acc, "the accumulator");
        write(b->acc, "the accumulator of a BlockReduce");
        return;
      }
      case kir::NodeKind::Welford: visitWelford(s); return;
      case kir::NodeKind::GridReduce: visitGridReduce(s); return;
      case kir::NodeKind::Comment: return;
      case kir::NodeKind::TensorOp: visitTensorOp(s); return;
      case kir::NodeKind::VectorCopy: {
        auto* v = s->as<kir::VectorCopy>();
        require(v->src, "a source buffer");
        require(v->dst, "a destination buffer");
        read(v->srcIndex, "an index");
        read(v->dstIndex, "an index");
        access(v->src, "read");
        access(v->dst, "written");
        return;
      }
      case kir::NodeKind::SortRow: {
        auto* r = s->as<kir::SortRow>();
        require(r->in.buffer, "an input buffer");
        require(r->indices.buffer, "an indices buffer");
        for (kir::Value** v : const_cast<kir::SortRow*>(r)->valueSlots()) read(*v, "a row value");
        access(r->in.buffer, "read");
        access(r->indices.buffer, "written");
        if (r->isTopK()) access(r->values.buffer, "written");
        return;
      }
      case kir::NodeKind::ScatterAdd: {
        auto* a = s->as<kir::ScatterAdd>();
        require(a->out, "an output buffer");
        require(a->index, "an index buffer");
        require(a->src, "a source buffer");
        access(a->index, "read");
        access(a->src, "read");
        access(a->out, "written");
        return;
      }
      default: fail("complete", s, "a value where a statement belongs");
    }
  }

  // A loop: its bounds, and a parallel loop not nested in one of its type (visitScope walks the
  // body, with the index declared).
  void visitLoop(const kir::Stmt* s) {
    auto* f = s->as<kir::ForLoop>();
    require(f->index, "a loop index");
    read(f->start, "the loop start");
    read(f->stop, "the loop stop");
    if (f->isParallel()) {
      for (const kir::Stmt* e : enclosing_) {
        auto* outer = e->dynCast<kir::ForLoop>();
        if (outer != nullptr && outer->ptype == f->ptype) {
          fail("parallel-not-nested", s,
               concat(ir::parallelTypeName(f->ptype), " loop ", f->index->name,
                      " is inside another ", ir::parallelTypeName(f->ptype), " loop (",
                      oneLine(outer), ")"));
        }
      }
    }
  }

  // An allocation: of a local or shared buffer, once where it is visible.
  void visitAllocate(const kir::Stmt* s) {
    auto* a = s->as<kir::Allocate>();
    require(a->buffer, "a buffer");
    if (a->buffer->kind == kir::BufferKind::Param) {
      fail("param-buffer", s, concat("param buffer ", a->buffer->name, " is allocated"));
    }
    read(a->buffer->size, "the buffer size");
    if (allocated_.count(a->buffer)) {
      fail("declared-once", s,
           concat("buffer ", a->buffer->name,
                  " is allocated again where its allocation is visible"));
    }
    declareName(a->buffer->name,
                a->buffer->kind == kir::BufferKind::Local ? "local buffer" : "shared buffer");
    allocated_.insert(a->buffer);
    buffer_log_.push_back(a->buffer);
  }

  // A Welford update, combine or block step: its inputs and its three accumulators.
  void visitWelford(const kir::Stmt* s) {
    auto* w = s->as<kir::Welford>();
    if (w->mode == kir::WelfordMode::Block) collective(s, "a block Welford");
    int inputs = w->mode == kir::WelfordMode::Update    ? 1
                 : w->mode == kir::WelfordMode::Combine ? 3
                                                        : 0;
    for (int k = 0; k < inputs; ++k) read(w->in[k], "a Welford input");
    for (const kir::Var* v : {w->avg, w->m2, w->n}) {
      require(v, "a Welford accumulator");
      read(v, "a Welford accumulator");
      write(v, "a Welford accumulator");
    }
  }

  // A grid reduction: its scratch buffers, accumulators and last-block flag.
  void visitGridReduce(const kir::Stmt* s) {
    auto* g = s->as<kir::GridReduce>();
    collective(s, "a GridReduce");
    if (g->work < 0 || size_t(2 * g->work + 1) >= kernel_.gridScratch.size()) {
      fail("grid-scratch", s,
           concat("call site ", g->work, " has no work and semaphore buffers (",
                  kernel_.gridScratch.size(), " grid scratch buffers)"));
    }
    if (g->entrance != nullptr) read(g->entrance, "the entrance");
    if (g->isWelford()) {
      for (const kir::Var* v : g->welford) {
        require(v, "a Welford accumulator");
        read(v, "a Welford accumulator");
        write(v, "a Welford accumulator of a GridReduce");
      }
    } else {
      read(g->init, "the initial value");
      require(g->acc, "an accumulator");
      read(g->acc, "the accumulator");
      write(g->acc, "the accumulator of a GridReduce");
    }
    write(g->last, "the last-block flag of a GridReduce");
  }

  // A pre-indexing tensor op: none left after indexing; its tensors accessed once allocated.
  void visitTensorOp(const kir::Stmt* s) {
    auto* t = s->as<kir::TensorOp>();
    if (indexing_ran_) {
      fail("no-tensor-op", s, "a TensorOp is left after indexing");
    }
    require(t->expr, "a tensor expr");
    require(t->out, "an output tensor");
    for (const kir::Var* v : {t->acc, t->m2, t->n}) {
      if (v == nullptr) continue;
      read(v, "the accumulator");
      if (t->role == kir::TensorOpRole::Accumulate) write(v, "the accumulator of a TensorOp");
    }
    if (allocations_ran_) {
      // A WriteResult reads only its accumulator.
      if (t->role != kir::TensorOpRole::WriteResult) {
        for (ir::Val* in : t->expr->inputs()) {
          if (auto* tv = in->dynCast<ir::TensorView>()) accessTensor(tv, "read");
        }
      }
      // An accumulation into a Var writes its tensor only in the WriteResult.
      bool writes = t->role != kir::TensorOpRole::Accumulate || t->acc == nullptr;
      if (writes) accessTensor(t->out, "written");
    }
  }

  const kir::Kernel& kernel_;
  std::string_view pass_;
  bool allocations_ran_;
  bool reductions_ran_;
  bool indexing_ran_;
  std::unordered_set<const kir::Buffer*> params_;
  std::unordered_map<const ir::TensorView*, std::vector<const kir::Buffer*>> tv_buffers_;

  std::unordered_map<const kir::Var*, VarKind> vars_;
  std::vector<const kir::Var*> var_log_;
  std::unordered_map<std::string, std::string> names_;  ///< name -> what holds it
  std::vector<std::string> name_log_;
  std::unordered_set<const kir::Buffer*> allocated_;
  std::vector<const kir::Buffer*> buffer_log_;

  std::vector<const kir::Stmt*> enclosing_;  ///< loops and ifs around the current statement
  const kir::Stmt* current_ = nullptr;
};

}  // namespace

void verifyKernel(const kir::Kernel& kernel, std::string_view after_pass) {
  Verifier(kernel, after_pass).run();
}

}  // namespace loom::lower
