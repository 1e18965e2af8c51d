// SPDX-License-Identifier: Apache-2.0
// The .fus printer: canonical names, then four sections (header, scalars, tensors, math).
//
// Every tensor is one declaration line (dtype, memory type, logical domain, attributes) followed
// by indented lines for its root / allocation / loop domains and the Split/Merge/Resize exprs
// between them. An IterDomain is declared (with extent and types, `i4{s1, TIDx}`) the first time it
// is printed and referred to by name afterwards, so the reader sees each ID's details once, where
// it first matters. Names are assigned in print order, which depends only on the fusion's
// structure; that is what makes print(parse(print(f))) == print(f).
#include "loom/ir/printer.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/dispatch.h"
#include "loom/ir/fusion.h"
#include "loom/support/strings.h"

namespace loom::ir {
namespace {

char idLetter(IterType t) {
  switch (t) {
    case IterType::Iteration: return 'i';
    case IterType::Reduction: return 'r';
    case IterType::Broadcast: return 'b';
    case IterType::Symbolic: return 'u';
  }
  return '?';
}

// A constant as the parser reads it: the plain literal when its dtype is the default for the
// literal's kind (bool, i64, f64), else wrapped in the dtype: f32(0.5), i32(3).
std::string literal(const Scalar* s) {
  std::string v = scalarValueToString(s->value(), s->dtype());
  DataType plain = std::holds_alternative<bool>(s->value())      ? DataType::Bool
                   : std::holds_alternative<int64_t>(s->value()) ? DataType::Int64
                                                                 : DataType::Float64;
  if (s->dtype() == plain) return v;
  // A complex constant prints its parts in parentheses already: c64(1.0, -2.5).
  if (std::holds_alternative<std::complex<double>>(s->value())) {
    return std::string(dataTypeName(s->dtype())) + v;
  }
  return std::string(dataTypeName(s->dtype())) + "(" + v + ")";
}

bool isTransform(const Expr* e) {
  return e != nullptr && (e->isA<Split>() || e->isA<Merge>() || e->isA<Resize>());
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string flags(const std::vector<bool>& v) {
  std::vector<std::string> out;
  for (bool b : v) out.push_back(b ? "true" : "false");
  return "[" + join(out) + "]";
}

class Printer {
 public:
  explicit Printer(const Fusion& fusion) : fusion_(fusion) {}

  std::string print() {
    tvs_ = fusion_.allTvs();
    for (size_t i = 0; i < tvs_.size(); ++i) names_[tvs_[i]] = "T" + std::to_string(i);
    for (TensorView* tv : tvs_) transforms_.push_back(planTransforms(tv));
    for (Expr* e : fusion_.exprs()) {
      if (e->outputs().front()->isA<Scalar>()) continue;  // printed with the scalars
      math_.push_back(e);
    }
    collectScalars();

    std::ostringstream os;
    os << "# Loom fusion (.fus)\n";
    os << "inputs:  " << refs(fusion_.inputs()) << "\n";
    std::vector<std::string> outs;
    for (Val* v : fusion_.outputs()) {
      // An in-place output names the input whose memory it is written into.
      Val* into = fusion_.aliasedInput(v);
      outs.push_back(into == nullptr ? ref(v) : ref(v) + " into " + ref(into));
    }
    os << "outputs: " << join(outs) << "\n";
    if (!scalars_.empty()) {
      os << "\n# scalars\n";
      size_t w = 0;
      for (Scalar* s : scalars_) w = std::max(w, names_[s].size());
      for (Scalar* s : scalars_) {
        std::string dt(dataTypeName(s->dtype()));
        if (s->definition() == nullptr) {
          os << pad(names_[s], w) << " : " << dt << "\n";
        } else {
          os << pad(names_[s], w) << " : " << pad(dt, 4) << " = " << call(s->definition()) << "\n";
        }
      }
    }
    if (!tvs_.empty()) {
      os << "\n# tensors\n";
      size_t w = 0;
      for (TensorView* tv : tvs_) w = std::max(w, names_[tv].size());
      for (size_t i = 0; i < tvs_.size(); ++i) printTensor(os, tvs_[i], transforms_[i], w);
    }
    if (!math_.empty()) {
      os << "\n# math\n";
      std::vector<std::string> lhs;
      size_t w = 0;
      for (Expr* e : math_) {
        lhs.push_back(refs(e->outputs()));
        w = std::max(w, lhs.back().size());
      }
      for (size_t i = 0; i < math_.size(); ++i) {
        os << pad(lhs[i], w) << " = " << call(math_[i]) << "\n";
      }
    }
    if (!fusion_.extentRequirements().empty()) {
      // What the run's sizes must satisfy beyond the extents (ExtentRequirement): the scalar,
      // the value it must have, the extent the message reports, the message.
      os << "\n# requirements\n";
      for (const ExtentRequirement& r : fusion_.extentRequirements()) {
        os << "require " << ref(r.value) << " == " << r.expected << ", extent " << ref(r.extent)
           << ": " << quoted(r.what) << "\n";
      }
    }
    return os.str();
  }

 private:
  // Split/Merge/Resize exprs of one tensor, producers first: root -> logical, then logical ->
  // allocation and loop. Exprs already printed with an earlier tensor (shared IDs) are skipped.
  std::vector<Expr*> planTransforms(TensorView* tv) {
    std::vector<Expr*> out;
    const TensorDomain* td = tv->domain();
    if (td->hasRoot()) walkBack(td->logical(), td->root(), out);
    std::vector<IterDomain*> targets = td->allocation();
    targets.insert(targets.end(), td->loop().begin(), td->loop().end());
    walkBack(targets, td->logical(), out);
    return out;
  }

  void walkBack(const std::vector<IterDomain*>& targets, const std::vector<IterDomain*>& stop,
                std::vector<Expr*>& out) {
    std::unordered_set<const IterDomain*> stop_set(stop.begin(), stop.end());
    // Iterative post-order: an expr is emitted after the exprs defining its inputs.
    struct Frame {
      Expr* expr;
      size_t next;
    };
    for (IterDomain* target : targets) {
      if (stop_set.count(target) || !isTransform(target->definition())) continue;
      if (!planned_.insert(target->definition()).second) continue;
      std::vector<Frame> stack{{target->definition(), 0}};
      while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.next < f.expr->inputs().size()) {
          auto* in = f.expr->inputs()[f.next++]->as<IterDomain>();
          Expr* d = in->definition();
          if (!stop_set.count(in) && isTransform(d) && planned_.insert(d).second) {
            stack.push_back({d, 0});
          }
          continue;
        }
        out.push_back(f.expr);
        stack.pop_back();
      }
    }
  }

  void collectScalars() {
    for (Val* v : fusion_.inputs()) collectScalar(v);
    auto ids = [&](const std::vector<IterDomain*>& list) {
      for (IterDomain* id : list) collectId(id);
    };
    for (size_t i = 0; i < tvs_.size(); ++i) {
      const TensorDomain* td = tvs_[i]->domain();
      ids(td->logical());
      ids(td->root());
      ids(td->allocation());
      ids(td->loop());
      for (Expr* e : transforms_[i]) {
        for (Val* v : e->outputs()) collectId(v->as<IterDomain>());
        for (Val* v : e->inputs()) collectId(v->as<IterDomain>());
        for (Val* v : e->attributeVals()) collectScalar(v);
      }
    }
    for (Expr* e : math_) {
      for (Val* v : e->inputs()) collectScalar(v);
      for (Val* v : e->attributeVals()) collectScalar(v);
    }
    for (const ExtentRequirement& r : fusion_.extentRequirements()) {
      collectScalar(r.value);
      collectScalar(r.extent);
    }
  }

  // `s` as a .fus string: in quotes, with \" and \\ for a quote and a backslash (one line: a
  // newline is written as a space).
  static std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
    return out + "\"";
  }

  void collectId(IterDomain* id) {
    collectScalar(id->start());
    collectScalar(id->extent());
    collectScalar(id->expandedExtent());
  }

  // Post-order over scalar definitions, so a scalar is named after the scalars it is made from.
  // An explicit stack, not recursion: a chain of scalar ops can be tens of thousands long. A
  // scalar's name is "" while its inputs are being named.
  void collectScalar(Val* root) {
    auto pending = [&](Val* v) -> Scalar* {
      auto* s = v == nullptr ? nullptr : v->dynCast<Scalar>();
      return (s == nullptr || s->isConst() || names_.count(s)) ? nullptr : s;
    };
    std::vector<std::pair<Scalar*, bool>> stack;  // (scalar, its inputs pushed)
    if (Scalar* s = pending(root)) stack.push_back({s, false});
    while (!stack.empty()) {
      auto [s, expanded] = stack.back();
      if (expanded) {
        stack.pop_back();
        names_[s] = "s" + std::to_string(scalars_.size());
        scalars_.push_back(s);
        continue;
      }
      if (names_.count(s)) {  // reached again through another path, already named
        stack.pop_back();
        continue;
      }
      names_[s] = "";
      stack.back().second = true;
      Expr* d = s->definition();
      if (d == nullptr) continue;
      std::vector<Val*> ins;
      for (Val* in : d->inputs()) {
        LOOM_ASSERT(in->isA<Scalar>(), "scalar ", s->toString(), " is computed from ",
                    in->toString(), ", which the text form cannot express");
        ins.push_back(in);
      }
      for (Val* a : d->attributeVals()) ins.push_back(a);
      // Reversed, so the first input is named first (the order the text has always had).
      for (auto it = ins.rbegin(); it != ins.rend(); ++it) {
        if (Scalar* in = pending(*it)) stack.push_back({in, false});
      }
    }
  }

  // Reference to a tensor or scalar (constants print as literals).
  std::string ref(const Val* v) {
    if (auto* s = v->isA<Scalar>() ? v->as<Scalar>() : nullptr; s != nullptr && s->isConst()) {
      return literal(s);
    }
    if (auto* id = v->isA<IterDomain>() ? v->as<IterDomain>() : nullptr) {
      return idRef(const_cast<IterDomain*>(id));
    }
    auto it = names_.find(v);
    LOOM_ASSERT(it != names_.end() && !it->second.empty(), "the printer did not name ",
                v->toString());
    return it->second;
  }

  std::string refs(const std::vector<Val*>& vals) {
    std::vector<std::string> out;
    for (Val* v : vals) out.push_back(ref(v));
    return join(out);
  }

  // The ID's name, with its full declaration the first time it is printed.
  std::string idRef(IterDomain* id) {
    if (auto it = names_.find(id); it != names_.end()) return it->second;
    std::string name = std::string(1, idLetter(id->iterType())) + std::to_string(next_id_++);
    names_[id] = name;
    std::vector<std::string> parts{ref(id->extent())};
    if (id->hasExpandedExtent()) parts.push_back("expand=" + ref(id->expandedExtent()));
    if (id->isParallelized()) parts.emplace_back(parallelTypeName(id->parallelType()));
    if (id->isRFactorProduct()) parts.emplace_back("rf");
    if (!(id->start()->isConstInt(0) && id->start()->dtype() == kIndexType)) {
      parts.push_back("start=" + ref(id->start()));
    }
    return name + "{" + join(parts) + "}";
  }

  std::string idList(const std::vector<IterDomain*>& ids) {
    std::vector<std::string> out;
    for (IterDomain* id : ids) out.push_back(idRef(id));
    return "[" + join(out) + "]";
  }

  static std::string contiguity(const Contiguity& c) {
    std::vector<std::string> out;
    for (const auto& x : c) out.push_back(!x.has_value() ? "-" : *x ? "t" : "f");
    return "[" + join(out) + "]";
  }

  void printTensor(std::ostream& os, TensorView* tv, const std::vector<Expr*>& transforms,
                   size_t name_width) {
    const TensorDomain* td = tv->domain();
    os << pad(names_[tv], name_width) << " : " << pad(std::string(dataTypeName(tv->dtype())), 4)
       << " " << pad(std::string(memoryTypeName(tv->memoryType())), 6) << " "
       << idList(td->logical());
    if (!td->hasAllocation() &&
        td->contiguity() != TensorDomain::defaultContiguity(td->logical())) {
      os << " contig=" << contiguity(td->contiguity());
    }
    if (tv->hasDeviceMesh()) os << " mesh=" << tv->deviceMesh();
    if (tv->computeAtPosition() != 0) os << " ca=" << tv->computeAtPosition();
    if (tv->maxProducerPosition() != 0) os << " mpp=" << tv->maxProducerPosition();
    os << "\n";
    std::string indent(name_width + 3, ' ');
    if (td->hasRoot()) os << indent << "root       " << idList(td->root()) << "\n";
    if (td->hasAllocation()) {
      os << indent << "allocation " << idList(td->allocation())
         << " contig=" << contiguity(td->contiguity()) << "\n";
    }
    if (td->loop() != td->logical()) os << indent << "loop       " << idList(td->loop()) << "\n";
    for (Expr* e : transforms) {
      os << indent << refs(e->outputs()) << " = " << e->opName() << "(" << refs(e->inputs());
      if (auto* split = e->dynCast<Split>()) os << ", " << ref(split->factor());
      if (auto* resize = e->dynCast<Resize>()) {
        os << ", " << ref(resize->left()) << ", " << ref(resize->right());
      }
      os << ")\n";
    }
  }

  // "op(args)" of a math or scalar expr.
  std::string call(Expr* e) {
    std::string args = refs(e->inputs());
    // Exprs whose scalar inputs are printed as keyword arguments.
    if (auto* p = e->dynCast<PadOp>()) {
      args = ref(p->in()) + ", value=" + ref(p->value());
    } else if (auto* f = e->dynCast<FullOp>()) {
      args = "value=" + ref(f->value());
    } else if (auto* io = e->dynCast<IotaOp>()) {
      args = "start=" + ref(io->start()) + ", step=" + ref(io->step());
      if (io->indexOffset() != nullptr) args += ", index_offset=" + ref(io->indexOffset());
    } else if (auto* r = e->dynCast<RngOp>()) {
      const bool normal = r->rngType() == RngOpType::Normal;
      args = "seed=" + ref(r->seed()) + ", offset=" + ref(r->offset()) +
             (normal ? ", mean=" : ", low=") + ref(r->param0()) + (normal ? ", std=" : ", high=") +
             ref(r->param1());
      if (r->hasIndexOffsets()) {
        auto list = [&](const std::vector<Scalar*>& vals) {
          return "[" + refs(std::vector<Val*>(vals.begin(), vals.end())) + "]";
        };
        args += ", index_offsets=" + list(r->indexOffsets()) +
                ", global_extents=" + list(r->globalExtents());
      }
    } else if (isAttentionExpr(e)) {
      const size_t n = attentionTensorInputs(e);
      std::vector<Val*> tensors(e->inputs().begin(), e->inputs().begin() + long(n));
      args = refs(tensors) + ", dropout_p=" + ref(e->input(n)) +
             ", is_causal=" + ref(e->input(n + 1)) + ", scale=" + ref(e->input(n + 2)) +
             ", seed=" + ref(e->input(n + 3)) + ", offset=" + ref(e->input(n + 4));
    } else if (auto* c = e->dynCast<CatOp>()) {
      args += ", dim=" + std::to_string(c->dim());
    } else if (auto* sc = e->dynCast<ScanOp>()) {
      args += ", dim=" + std::to_string(sc->dim());
    } else if (auto* is = e->dynCast<IndexSelectOp>()) {
      args += ", dim=" + std::to_string(is->dim());
    } else if (auto* g = e->dynCast<GatherOp>()) {
      args += ", dim=" + std::to_string(g->dim());
    } else if (auto* sc = e->dynCast<ScatterOp>()) {
      args += ", dim=" + std::to_string(sc->dim());
    } else if (auto* as = e->dynCast<ArgsortOp>()) {
      args += ", dim=" + std::to_string(as->dim()) +
              ", descending=" + (as->descending() ? "true" : "false");
    } else if (auto* tk = e->dynCast<TopKOp>()) {
      args +=
          ", dim=" + std::to_string(tk->dim()) + ", largest=" + (tk->largest() ? "true" : "false");
    } else if (auto* u = e->dynCast<UnaryOp>(); u != nullptr && u->opType() == UnaryOpType::Cast) {
      args += ", " + std::string(dataTypeName(u->out()->dtype()));
    } else if (auto* r = e->dynCast<ReductionOp>()) {
      args += ", init=" + ref(r->init());
    } else if (auto* w = e->dynCast<WelfordOp>()) {
      args += ", init_avg=" + ref(w->initAvg()) + ", init_m2=" + ref(w->initM2()) +
              ", init_n=" + ref(w->initN());
    } else if (auto* b = e->dynCast<BroadcastOp>()) {
      args += ", flags=" + flags(b->isBroadcastDim());
    } else if (auto* sq = e->dynCast<SqueezeOp>()) {
      args += ", flags=" + flags(sq->isSqueezedDim());
    }
    return e->opName() + "(" + args + ")";
  }

  const Fusion& fusion_;
  std::vector<TensorView*> tvs_;
  std::vector<std::vector<Expr*>> transforms_;  // aligned with tvs_
  std::vector<Expr*> math_;
  std::vector<Scalar*> scalars_;
  std::unordered_map<const Val*, std::string> names_;
  std::unordered_set<const Expr*> planned_;
  int64_t next_id_ = 0;
};

}  // namespace

std::string printFusion(const Fusion& fusion) { return Printer(fusion).print(); }

std::string Fusion::toString() const { return printFusion(*this); }

}  // namespace loom::ir
