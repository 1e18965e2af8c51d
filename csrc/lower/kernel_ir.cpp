// SPDX-License-Identifier: Apache-2.0
// Kernel IR helpers and the text printer used by pass tests and LOOM_DUMP=kernel_ir.
#include "loom/lower/kernel_ir.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "loom/eval/expression_evaluator.h"
#include "loom/lower/kir_walk.h"

namespace loom::kir {

std::optional<int64_t> Const::asInt() const {
  if (auto* i = std::get_if<int64_t>(&value)) return *i;
  return std::nullopt;
}

std::string_view bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Param: return "param";
    case BufferKind::Local: return "local";
    case BufferKind::Shared: return "shared";
  }
  LOOM_UNREACHABLE();
}

namespace {

std::string_view binarySymbol(ir::BinaryOpType op) {
  switch (op) {
    case ir::BinaryOpType::Add: return "+";
    case ir::BinaryOpType::Sub: return "-";
    case ir::BinaryOpType::Mul: return "*";
    case ir::BinaryOpType::Div: return "/";
    case ir::BinaryOpType::Mod: return "%";
    case ir::BinaryOpType::Lt: return "<";
    case ir::BinaryOpType::Le: return "<=";
    case ir::BinaryOpType::Gt: return ">";
    case ir::BinaryOpType::Ge: return ">=";
    case ir::BinaryOpType::Eq: return "==";
    case ir::BinaryOpType::Ne: return "!=";
    case ir::BinaryOpType::LogicalAnd: return "&&";
    case ir::BinaryOpType::LogicalOr: return "||";
    default: return "";
  }
}

// Indentation stops growing at this depth (a loop nest may be tens of thousands deep).
constexpr int kMaxIndent = 32;

// One statement; a loop or an if prints its header line only (printStmts prints bodies).
void printStmt(std::ostringstream& os, const Stmt* s, int indent) {
  std::string pad(size_t(std::min(indent, kMaxIndent)) * 2, ' ');
  switch (s->kind()) {
    case NodeKind::ForLoop: {
      auto* f = s->as<ForLoop>();
      os << pad << "for " << f->index->name << " in ";
      if (f->ptype != ir::ParallelType::Serial) {
        os << ir::parallelTypeName(f->ptype);
        for (size_t k = 0; k < f->sharedBy.size(); ++k) {  // "bulk(TIDx, TIDy)"
          os << (k == 0 ? "(" : ", ") << ir::parallelTypeName(f->sharedBy[k]);
        }
        os << (f->sharedBy.empty() ? " " : ") ");
      }
      os << toString(f->start) << " .. " << toString(f->stop) << ":\n";
      return;
    }
    case NodeKind::IfThenElse: {
      auto* i = s->as<IfThenElse>();
      os << pad << "if " << toString(i->cond) << ":\n";
      return;
    }
    case NodeKind::Allocate: {
      auto* a = s->as<Allocate>();
      os << pad << "alloc " << a->buffer->name << " : " << dataTypeName(a->buffer->dtype) << " "
         << bufferKindName(a->buffer->kind) << "[" << toString(a->buffer->size) << "]\n";
      return;
    }
    case NodeKind::DeclareVar: {
      auto* d = s->as<DeclareVar>();
      if (d->constIndex) {
        os << pad << "const " << d->var->name << " = " << toString(d->init) << "\n";
        return;
      }
      os << pad << "var " << d->var->name << " : " << dataTypeName(d->var->dtype()) << " = "
         << toString(d->init) << "\n";
      return;
    }
    case NodeKind::Store: {
      auto* st = s->as<Store>();
      os << pad;
      if (st->buffer) {
        os << st->buffer->name << "[" << toString(st->index) << "]";
      } else {
        os << st->var->name;
      }
      os << " = " << toString(st->value) << "\n";
      return;
    }
    case NodeKind::BlockSync: os << pad << "block_sync\n"; return;
    case NodeKind::BlockReduce: {
      auto* b = s->as<BlockReduce>();
      os << pad << b->acc->name << " = block_" << ir::opTypeName(b->op) << "(" << b->acc->name
         << ", init=" << toString(b->init) << ", dims=" << (b->x ? "x" : "") << (b->y ? "y" : "")
         << (b->z ? "z" : "") << ")\n";
      return;
    }
    case NodeKind::Welford: {
      auto* w = s->as<Welford>();
      os << pad << "(" << w->avg->name << ", " << w->m2->name << ", " << w->n->name << ") = ";
      switch (w->mode) {
        case WelfordMode::Update: os << "welford_update(" << toString(w->in[0]) << ")\n"; break;
        case WelfordMode::Combine:
          os << "welford_combine(" << toString(w->in[0]) << ", " << toString(w->in[1]) << ", "
             << toString(w->in[2]) << ")\n";
          break;
        case WelfordMode::Block:
          os << "block_welford(dims=" << (w->x ? "x" : "") << (w->y ? "y" : "") << (w->z ? "z" : "")
             << ")\n";
          break;
      }
      return;
    }
    case NodeKind::GridReduce: {
      auto* g = s->as<GridReduce>();
      os << pad << g->last->name << (g->all ? " = grid_all_" : " = grid_");
      if (g->isWelford()) {
        os << "welford(" << g->welford[0]->name << ", " << g->welford[1]->name << ", "
           << g->welford[2]->name;
      } else {
        os << ir::opTypeName(g->op) << "(" << g->acc->name << ", init=" << toString(g->init);
      }
      os << ", dims=" << (g->x ? "x" : "") << (g->y ? "y" : "") << (g->z ? "z" : "");
      if (g->entrance != nullptr) os << ", entrance=" << toString(g->entrance);
      os << ", work=gw" << g->work << ", sem=gs" << g->work << ")\n";
      return;
    }
    case NodeKind::Comment: os << pad << "// " << s->as<Comment>()->text << "\n"; return;
    case NodeKind::VectorCopy: {
      auto* v = s->as<VectorCopy>();
      os << pad << v->dst->name << "[" << toString(v->dstIndex) << " +: " << v->width
         << "] = " << v->src->name << "[" << toString(v->srcIndex) << " +: " << v->width << "]\n";
      return;
    }
    case NodeKind::SortRow: {
      auto* r = s->as<SortRow>();
      auto row = [](const SortRow::Row& x) {
        return x.buffer->name + "[" + toString(x.base) + " : step " + toString(x.stride) + "]";
      };
      os << pad;
      if (r->isTopK()) os << row(r->values) << ", ";
      os << row(r->indices) << " = " << (r->isTopK() ? "topk_row(" : "argsort_row(") << row(r->in)
         << ", n=" << toString(r->n);
      if (r->isTopK()) os << ", k=" << toString(r->k);
      os << (r->isTopK() ? ", largest=" : ", descending=") << (r->descending ? "true" : "false");
      if (r->blockRow > 0) os << ", block=" << r->blockRow;
      os << ")\n";
      return;
    }
    case NodeKind::ScatterAdd: {
      auto* a = s->as<ScatterAdd>();
      os << pad << a->out->name << " += scatter_atomic(" << a->index->name << ", " << a->src->name
         << ", dim=" << a->dim << ", sync=" << a->sync << ", check=" << a->site << ")\n";
      return;
    }
    case NodeKind::TensorOp: {
      auto* t = s->as<TensorOp>();
      os << pad;
      switch (t->role) {
        case TensorOpRole::Compute: os << "tensor "; break;
        case TensorOpRole::Accumulate:
          os << (t->acc ? t->acc->name : t->out->toString()) << " += ";  // null: in its buffer
          break;
        case TensorOpRole::WriteResult:
          os << t->out->toString() << " <- " << t->acc->name << " of ";
          break;
      }
      os << t->out->toString() << " = " << t->expr->opName() << "(";
      for (size_t i = 0; i < t->expr->inputs().size(); ++i) {
        os << (i ? ", " : "") << t->expr->input(i)->toString();
      }
      os << ")\n";
      return;
    }
    default: LOOM_UNREACHABLE("not a statement");
  }
}

// Statements with their bodies, with an explicit stack of open scopes.
void printStmts(std::ostringstream& os, const Scope& root, int indent) {
  struct Open {
    const Scope* scope;
    int indent;
    const IfThenElse* ite = nullptr;  ///< the if whose then-branch this is
    size_t next = 0;
  };
  std::vector<Open> stack{{&root, indent}};
  while (!stack.empty()) {
    Open& o = stack.back();
    if (o.next == o.scope->size()) {
      if (o.ite != nullptr && !o.ite->elseBody.empty()) {
        os << std::string(size_t(std::min(o.indent - 1, kMaxIndent)) * 2, ' ') << "else:\n";
        o = {&o.ite->elseBody, o.indent};
        continue;
      }
      stack.pop_back();
      continue;
    }
    const Stmt* s = (*o.scope)[o.next++];
    const int at = o.indent;
    printStmt(os, s, at);
    if (auto* f = s->dynCast<ForLoop>()) {
      stack.push_back({&f->body, at + 1});
    } else if (auto* i = s->dynCast<IfThenElse>()) {
      stack.push_back({&i->thenBody, at + 1, i});
    }
  }
}

// The pieces of one value for toString (operands written in place, without recursion).
TextPieces piecesOf(const Value* v) {
  auto lit = [](std::string t) { return TextPiece{std::move(t), nullptr}; };
  auto arg = [](const Value* x) { return TextPiece{{}, x}; };
  switch (v->kind()) {
    case NodeKind::Const: {
      auto* c = v->as<Const>();
      return {lit(ir::scalarValueToString(c->value, c->dtype()))};
    }
    case NodeKind::Var: return {lit(v->as<Var>()->name)};
    case NodeKind::NamedScalar: return {lit(v->as<NamedScalar>()->name)};
    case NodeKind::TensorSize: {
      auto* t = v->as<TensorSize>();
      return {lit(t->buffer->name + (t->isStride ? ".stride[" : ".size[") + std::to_string(t->dim) +
                  "]")};
    }
    case NodeKind::UnaryExpr: {
      auto* u = v->as<UnaryExpr>();
      std::string name(ir::opTypeName(u->op));
      if (u->op == ir::UnaryOpType::Cast) name += "<" + std::string(dataTypeName(u->dtype())) + ">";
      return {lit(name + "("), arg(u->in), lit(")")};
    }
    case NodeKind::BinaryExpr: {
      auto* b = v->as<BinaryExpr>();
      std::string_view sym = binarySymbol(b->op);
      if (!sym.empty()) {
        return {lit("("), arg(b->lhs), lit(" " + std::string(sym) + " "), arg(b->rhs), lit(")")};
      }
      return {lit(std::string(ir::opTypeName(b->op)) + "("), arg(b->lhs), lit(", "), arg(b->rhs),
              lit(")")};
    }
    case NodeKind::TernaryExpr: {
      auto* t = v->as<TernaryExpr>();
      return {lit(std::string(ir::opTypeName(t->op)) + "("), arg(t->a), lit(", "), arg(t->b),
              lit(", "), arg(t->c), lit(")")};
    }
    case NodeKind::Load: {
      auto* l = v->as<Load>();
      return {lit(l->buffer->name + "["), arg(l->index), lit("]")};
    }
    case NodeKind::Call: {
      auto* c = v->as<Call>();
      std::vector<TextPiece> pieces{lit(c->fn + "(")};
      for (size_t i = 0; i < c->args.size(); ++i) {
        if (i > 0) pieces.push_back(lit(", "));
        pieces.push_back(arg(c->args[i]));
      }
      pieces.push_back(lit(")"));
      return pieces;
    }
    case NodeKind::Misalignment: {
      auto* m = v->as<Misalignment>();
      return {lit("misalignment<" + std::to_string(m->width) + ">(&" + m->buffer->name + "["),
              arg(m->index), lit("])")};
    }
    default: LOOM_UNREACHABLE("not a value");
  }
}

}  // namespace

std::string toString(const Value* v) {
  if (v == nullptr) return "<null>";
  std::ostringstream os;
  writePieces(os, v, piecesOf);
  return os.str();
}

std::string toString(const Kernel& kernel) {
  std::ostringstream os;
  os << "kernel " << kernel.name << "(";
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const Buffer* b = kernel.params[i];
    os << (i ? ", " : "") << b->name << " : " << dataTypeName(b->dtype) << "[" << b->rank << "]";
  }
  os << ")\n";
  printStmts(os, kernel.body, 1);
  return os.str();
}

std::string toString(const Stmt* s) {
  std::ostringstream os;
  printStmts(os, Scope{const_cast<Stmt*>(s)}, 0);
  return os.str();
}

std::string headline(const Stmt* s) {
  std::ostringstream os;
  printStmt(os, s, 0);
  std::string text = os.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

Value* withOperands(Kernel& kernel, Value* v, const std::vector<Value*>& ops) {
  if (ops == operandsOf(v)) return v;
  switch (v->kind()) {
    case NodeKind::UnaryExpr:
      return kernel.create<UnaryExpr>(v->dtype(), v->as<UnaryExpr>()->op, ops[0]);
    case NodeKind::BinaryExpr:
      return kernel.create<BinaryExpr>(v->dtype(), v->as<BinaryExpr>()->op, ops[0],
                                            ops[1], v->as<BinaryExpr>()->total);
    case NodeKind::TernaryExpr:
      return kernel.create<TernaryExpr>(v->dtype(), v->as<TernaryExpr>()->op, ops[0],
                                             ops[1], ops[2]);
    case NodeKind::Load: return kernel.create<Load>(v->as<Load>()->buffer, ops[0]);
    case NodeKind::Call: return kernel.create<Call>(v->dtype(), v->as<Call>()->fn, ops);
    case NodeKind::Misalignment: {
      auto* m = v->as<Misalignment>();
      return kernel.create<Misalignment>(m->buffer, ops[0], m->width);
    }
    default: LOOM_UNREACHABLE("a value without operands has none to replace");
  }
}

std::optional<int64_t> constantLaunchExtent(const Kernel& kernel, ir::ParallelType p) {
  for (const LaunchDim& d : kernel.launch) {
    if (d.ptype != p) continue;
    // The executor launches the largest extent of the type's loops.
    std::optional<int64_t> extent;
    for (const ir::Scalar* e : d.extents) {
      auto value = eval::ExpressionEvaluator().evaluate(e);
      auto* v = value ? std::get_if<int64_t>(&*value) : nullptr;
      if (v == nullptr) return std::nullopt;
      extent = std::max(extent.value_or(0), *v);
    }
    return extent;
  }
  return 1;
}

std::optional<int64_t> constantBlockThreads(const Kernel& kernel) {
  int64_t threads = 1;
  for (ir::ParallelType p :
       {ir::ParallelType::TIDx, ir::ParallelType::TIDy, ir::ParallelType::TIDz}) {
    std::optional<int64_t> e = constantLaunchExtent(kernel, p);
    if (!e || *e < 1) return std::nullopt;
    threads *= *e;
  }
  return threads;
}

}  // namespace loom::kir
