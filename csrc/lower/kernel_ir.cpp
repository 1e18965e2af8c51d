// SPDX-License-Identifier: Apache-2.0
// Kernel IR helpers and the text printer used by pass tests and LOOM_DUMP=kernel_ir.
#include "loom/lower/kernel_ir.h"

#include <algorithm>
#include <sstream>

#include "loom/eval/expression_evaluator.h"

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

void printStmts(std::ostringstream& os, const Scope& scope, int indent);

void printStmt(std::ostringstream& os, const Stmt* s, int indent) {
  std::string pad(size_t(indent) * 2, ' ');
  switch (s->kind()) {
    case NodeKind::ForLoop: {
      auto* f = s->as<ForLoop>();
      os << pad << "for " << f->index->name << " in ";
      if (f->ptype != ir::ParallelType::Serial) os << ir::parallelTypeName(f->ptype) << " ";
      os << toString(f->start) << " .. " << toString(f->stop) << ":\n";
      printStmts(os, f->body, indent + 1);
      return;
    }
    case NodeKind::IfThenElse: {
      auto* i = s->as<IfThenElse>();
      os << pad << "if " << toString(i->cond) << ":\n";
      printStmts(os, i->thenBody, indent + 1);
      if (!i->elseBody.empty()) {
        os << pad << "else:\n";
        printStmts(os, i->elseBody, indent + 1);
      }
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
      os << pad << g->last->name << " = grid_";
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

void printStmts(std::ostringstream& os, const Scope& scope, int indent) {
  for (const Stmt* s : scope) printStmt(os, s, indent);
}

}  // namespace

std::string toString(const Value* v) {
  if (v == nullptr) return "<null>";
  switch (v->kind()) {
    case NodeKind::Const: {
      auto* c = v->as<Const>();
      return ir::scalarValueToString(c->value, c->dtype());
    }
    case NodeKind::Var: return v->as<Var>()->name;
    case NodeKind::NamedScalar: return v->as<NamedScalar>()->name;
    case NodeKind::TensorSize: {
      auto* t = v->as<TensorSize>();
      return t->buffer->name + (t->isStride ? ".stride[" : ".size[") + std::to_string(t->dim) + "]";
    }
    case NodeKind::UnaryExpr: {
      auto* u = v->as<UnaryExpr>();
      std::string name(ir::opTypeName(u->op));
      if (u->op == ir::UnaryOpType::Cast) name += "<" + std::string(dataTypeName(u->dtype())) + ">";
      return name + "(" + toString(u->in) + ")";
    }
    case NodeKind::BinaryExpr: {
      auto* b = v->as<BinaryExpr>();
      std::string_view sym = binarySymbol(b->op);
      if (!sym.empty())
        return "(" + toString(b->lhs) + " " + std::string(sym) + " " + toString(b->rhs) + ")";
      return std::string(ir::opTypeName(b->op)) + "(" + toString(b->lhs) + ", " + toString(b->rhs) +
             ")";
    }
    case NodeKind::TernaryExpr: {
      auto* t = v->as<TernaryExpr>();
      return std::string(ir::opTypeName(t->op)) + "(" + toString(t->a) + ", " + toString(t->b) +
             ", " + toString(t->c) + ")";
    }
    case NodeKind::Load: {
      auto* l = v->as<Load>();
      return l->buffer->name + "[" + toString(l->index) + "]";
    }
    default: LOOM_UNREACHABLE("not a value");
  }
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
  printStmt(os, s, 0);
  return os.str();
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
