// SPDX-License-Identifier: Apache-2.0
// The definition part of the Python translation (translate.h): inputs, one fd.ops call per math
// expr, outputs. Each call is the one that builds that expr again: operands already have the
// op's compute type (the casts ops insert are exprs of their own and are printed as casts), so
// the replayed op inserts nothing; sizes are the Scalars or constants the op was given (an
// index cast ops made is unwrapped, a slice bound is read back from its normalization).
#include "translate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::python {

namespace {

using ir::IterDomain;
using ir::Scalar;
using ir::TensorView;

std::string pyDtype(DataType t) {
  switch (t) {
    case DataType::Float64: return "DataType.Double";
    case DataType::Float32: return "DataType.Float";
    case DataType::Float16: return "DataType.Half";
    case DataType::BFloat16: return "DataType.BFloat16";
    case DataType::Int64: return "DataType.Int";
    case DataType::Int32: return "DataType.Int32";
    case DataType::Bool: return "DataType.Bool";
    case DataType::Int8: return "DataType.Char";
    case DataType::Int16: return "DataType.Short";
    case DataType::UInt8: return "DataType.Byte";
    case DataType::UInt16: return "DataType.UInt16";
    case DataType::UInt32: return "DataType.UInt32";
    case DataType::UInt64: return "DataType.UInt64";
    case DataType::ComplexFloat: return "DataType.ComplexFloat";
    case DataType::ComplexDouble: return "DataType.ComplexDouble";
    case DataType::Float8_e4m3fn: return "DataType.Float8_e4m3fn";
    case DataType::Float8_e5m2: return "DataType.Float8_e5m2";
    default: break;
  }
  LOOM_THROW("the type ", t, " has no DataType name in the Python frontend");
}

std::string pyFloat(double d) {
  if (std::isnan(d)) return "float(\"nan\")";
  if (std::isinf(d)) return d > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// A constant as a Python number of the constant's kind.
std::string literal(const Scalar* s) {
  const ir::ScalarValue& v = s->value();
  if (isBooleanType(s->dtype())) {
    bool b = false;
    if (const bool* x = std::get_if<bool>(&v)) b = *x;
    if (const int64_t* x = std::get_if<int64_t>(&v)) b = *x != 0;
    if (const double* x = std::get_if<double>(&v)) b = *x != 0.0;
    return b ? "True" : "False";
  }
  if (isFloatingType(s->dtype())) return pyFloat(s->constDouble().value());
  if (isComplexType(s->dtype())) {  // complex(re, im): each part as a Python float writes it
    const auto* z = std::get_if<std::complex<double>>(&v);
    const std::complex<double> c =
        z != nullptr ? *z : std::complex<double>(s->constDouble().value());
    return "complex(" + pyFloat(c.real()) + ", " + pyFloat(c.imag()) + ")";
  }
  return std::to_string(s->constInt().value());
}


// The type of the constant a Python number of `t`'s kind makes.
DataType numberType(DataType t) {
  if (isBooleanType(t)) return DataType::Bool;
  if (isComplexType(t)) return DataType::ComplexDouble;
  if (isFloatingType(t)) return DataType::Float64;
  return DataType::Int64;
}

// A constant as nvFuser prints it in define_scalar: a float with six significant digits and its
// point (C's %#g: 3.00000, 1.00000e-05). Where six digits would change the value, all the digits
// it needs: the printed definition must rebuild the same fusion.
std::string nvNumber(const Scalar* s) {
  if (!isFloatingType(s->dtype())) return literal(s);
  const double d = s->constDouble().value();
  if (std::isnan(d) || std::isinf(d)) return literal(s);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%#g", d);
  return std::strtod(buf, nullptr) == d ? std::string(buf) : literal(s);
}

std::string pyBool(bool b) { return b ? "True" : "False"; }

std::string pyList(const std::vector<std::string>& items) { return "[" + join(items) + "]"; }

// The fd.ops name of a binary op: the IR's name, except nvFuser's spelling of ceil_div.
std::string pyBinaryName(ir::BinaryOpType op) {
  return op == ir::BinaryOpType::CeilDiv ? "ceilDiv" : std::string(ir::opTypeName(op));
}

std::string pyContiguity(const std::optional<bool>& c) {
  return c.has_value() ? pyBool(*c) : "None";
}

// Positions of `flags` that are true.
std::vector<std::string> positions(const std::vector<bool>& flags) {
  std::vector<std::string> out;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i]) out.push_back(std::to_string(i));
  }
  return out;
}

// Positions of the Reduction IDs of `tv`'s logical domain.
std::vector<std::string> reducedDims(const TensorView* tv) {
  std::vector<bool> flags;
  for (const IterDomain* id : tv->logical()) flags.push_back(id->isReduction());
  return positions(flags);
}

const ir::BinaryOp* binaryDef(const Scalar* s, ir::BinaryOpType op) {
  const ir::Expr* d = s->definition();
  const auto* b = d == nullptr ? nullptr : dyn<ir::BinaryOp>(d);
  return b != nullptr && b->opType() == op ? b : nullptr;
}

const Scalar* asScalar(const ir::Val* v) { return v->as<Scalar>(); }

double valueAsDouble(const ir::ScalarValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return double(*i);
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const auto* c = std::get_if<std::complex<double>>(&v); c != nullptr && c->imag() == 0.0) {
    return c->real();
  }
  return std::nan("");
}

// True when the reduction starts from the identity of its op, as the reductions ops make do.
bool sameIdentity(const ir::ReductionOp* r) {
  const Scalar* init = r->init();
  return init->isConst() && valueAsDouble(init->value()) ==
                                valueAsDouble(ir::reductionIdentity(r->opType(), init->dtype()));
}

template <typename... T>
bool isOneOf(const ir::Expr* e) {
  return (e->isA<T>() || ...);
}

}  // namespace

std::string translateFusion(const ir::Fusion& fusion, std::string_view function_name,
                            const DefinitionFacts& facts) {
  return Translator(fusion, facts).run(function_name);
}

std::string Translator::keyOperand(const ir::Val* v) {
  auto it = facts_.derived.find(v);
  return it != facts_.derived.end() ? tensor(it->second) : operand(v);
}

void Translator::translateOutputs() {
  for (const ir::Val* v : fusion_.outputs()) {
    const ir::Val* into = fusion_.aliasedInput(v);
    if (facts_.returns.has_value() && into == nullptr) continue;  // printed as a return below
    emit("fd.add_output(" + tensor(v) + (into == nullptr ? "" : ", alias_input=" + tensor(into)) +
         ")");
  }
  if (!facts_.returns.has_value()) return;
  for (const ir::Val* v : *facts_.returns) emit("fd.add_output(" + tensor(v) + ")");
}

std::string Translator::rngKey(const ir::Val* seed, const ir::Val* offset,
                               std::string_view seed_name, std::string_view offset_name) {
  if (facts_.drawn.count(seed) != 0 && facts_.drawn.count(offset) != 0) return "";
  return ", " + std::string(seed_name) + "=" + operand(seed) + ", " + std::string(offset_name) +
         "=" + operand(offset);
}

std::string Translator::run(std::string_view function_name) {
  for (const ir::Expr* e : fusion_.exprs()) {
    if (const auto* cat = dyn<ir::CatOp>(e)) {
      for (size_t k = 0; k < cat->numInputs(); ++k) {
        const ir::Expr* pad = cat->in(k)->definition();
        LOOM_CHECK(pad != nullptr && pad->isA<ir::PadOp>(), "cat input ", cat->in(k)->toString(),
                   " is not padded by the cat");
        cat_pads_.insert(pad);
      }
    }
  }
  findSdpaKeys();
  numberScalars();
  for (const ir::Val* v : fusion_.inputs()) defineInput(v);
  for (const ir::Expr* e : fusion_.exprs()) translateExpr(e);
  translateOutputs();
  translateSchedule();

  std::ostringstream os;
  os << "def " << function_name << "(fd : FusionDefinition) -> None :\n";
  std::vector<std::string> direct;
  for (const char* n : {"MemoryType", "ParallelType", "inline_most"}) {
    if (imports_.count(n) != 0) direct.emplace_back(n);
  }
  if (!direct.empty()) os << "    from loom.direct import " << join(direct) << "\n";
  if (imports_.count("DeviceMesh") != 0) {
    os << "    from loom.direct.multidevice import DeviceMesh\n";
  }
  for (const std::string& line : lines_) os << "    " << line << "\n";
  if (lines_.empty()) os << "    pass\n";
  return os.str();
}

// Tensors are named by their number in the fusion (creation order, as nvFuser's tv<N>), scalars
// by the number nvFuser's counter would have given them (numberScalars).
std::string Translator::define(const ir::Val* v, char prefix) {
  std::string name = prefix == 'T' ? "tv" + std::to_string(v->name()) : scalarName(v->as<Scalar>());
  names_[v] = name;
  return name;
}

std::string Translator::scalarName(const Scalar* s) {
  auto it = scalar_numbers_.find(s);
  return "c" + std::to_string(it != scalar_numbers_.end() ? it->second : next_scalar_++);
}

// nvFuser names a scalar by its Val counter, which every scalar it makes advances: each dim of a
// defined tensor (its extent, made before the tensor's IDs), the fusion's zero (made with the
// first ID) and one (the first size-1 dim or broadcast), each scalar input and constant, and the
// init of each reduction. Walking the statements in creation order with those rules gives the
// numbers nvFuser prints for the fusions users write (print(fd) in nvFuser's tests); a scalar the
// walk does not number gets one past them all.
void Translator::numberScalars() {
  int64_t counter = 0;
  bool zero = false;
  bool one = false;
  auto number = [&](const Scalar* s) {
    if (scalar_numbers_.try_emplace(s, counter).second) ++counter;
  };
  for (const ir::Statement* st : fusion_.statements()) {
    if (const auto* tv = dyn<TensorView>(st)) {
      if (!fusion_.isInput(tv)) continue;
      bool has_one = false;
      for (const IterDomain* id : tv->logical()) {
        const Scalar* e = id->hasExpandedExtent() ? id->expandedExtent() : id->extent();
        if (!e->isConst() && e->definition() == nullptr) number(e);
        else ++counter;  // a constant size: nvFuser makes a Val for it too
        has_one = has_one || (id->isBroadcast() && !id->hasExpandedExtent());
      }
      if (!tv->logical().empty() && !zero) zero = true, ++counter;
      if (has_one && !one) one = true, ++counter;
    } else if (const auto* s = dyn<Scalar>(st)) {
      if (fusion_.isInput(s)) number(s);
    } else if (const auto* e = dyn<ir::Expr>(st)) {
      if (e->outputs().empty() || !e->outputs().front()->isA<TensorView>()) continue;
      for (const ir::Val* in : e->inputs()) {
        if (const auto* s = dyn<Scalar>(in); s != nullptr && s->isConst()) number(s);
      }
      if (e->isA<ir::ReductionOp>()) ++counter;  // its init value
      if (e->isA<ir::BroadcastOp>() && !one) one = true, ++counter;
    }
  }
  next_scalar_ = counter;
}

std::string Translator::tensor(const ir::Val* v) const {
  auto it = names_.find(v);
  LOOM_CHECK(v->isA<TensorView>() && it != names_.end(), v->toString(),
             " is used where the translation has not defined it");
  return it->second;
}

std::string Translator::operand(const ir::Val* v) {
  if (v->isA<TensorView>()) return tensor(v);
  return scalar(asScalar(v), Use::TensorOperand);
}

void Translator::noteExtents(const TensorView* tv) {
  const std::string& name = names_.at(tv);
  auto ids = ir::TensorDomain::noReductions(tv->logical());
  for (size_t i = 0; i < ids.size(); ++i) {
    const Scalar* e = ids[i]->hasExpandedExtent() ? ids[i]->expandedExtent() : ids[i]->extent();
    if (!e->isConst()) extents_.try_emplace(e, name, int64_t(i));
  }
}

void Translator::defineInput(const ir::Val* v) {
  if (facts_.drawn.count(v) != 0) return;  // the random op that uses it draws it again
  if (facts_.derived.count(v) != 0) return;  // read from a tensor input, printed where it is used
  if (const auto* s = dyn<Scalar>(v)) {
    const std::string dtype =
        facts_.indexScalars.count(s) != 0 ? std::string("DataType.Index") : pyDtype(s->dtype());
    emit(define(s, 'S') + " = fd.define_scalar(None, dtype=" + dtype + ")");
    return;
  }
  const auto* tv = v->as<TensorView>();
  const auto& logical = tv->logical();
  std::vector<std::string> shape;
  for (const IterDomain* id : logical) {
    LOOM_CHECK(!id->isReduction(), "input ", tv->toString(),
               " has a reduction dim, which define_tensor cannot declare");
    // An expanded broadcast is declared by its expanded size and no contiguity (nvFuser's form).
    const Scalar* e = id->hasExpandedExtent() ? id->expandedExtent() : id->extent();
    if (id->isBroadcast() && !id->hasExpandedExtent()) {
      LOOM_CHECK(e->isConstInt(1), "input ", tv->toString(), " has a broadcast of extent ",
                 e->toString());
      shape.emplace_back("1");
    } else if (auto c = e->constInt()) {
      LOOM_CHECK(*c != 1, "input ", tv->toString(), " has a dim of constant size 1 that is not a ",
                 "broadcast");
      shape.push_back(std::to_string(*c));
    } else {
      LOOM_CHECK(e->definition() == nullptr, "input ", tv->toString(), " has the computed extent ",
                 e->toString());
      shape.emplace_back("-1");
    }
  }
  // Contiguity in allocation order when a stride order is printed (nvFuser's form), else per
  // logical dim; the domain keeps it in allocation order.
  const auto& alloc = tv->maybeAllocation();
  const ir::Contiguity& contiguity = tv->contiguity();
  const bool ordered = tv->domain()->hasAllocation();
  std::vector<std::string> contig(logical.size());
  std::vector<std::string> stride_order(logical.size());
  for (size_t k = 0; k < alloc.size(); ++k) {
    size_t pos = 0;
    while (pos < logical.size() && logical[pos] != alloc[k]) ++pos;
    LOOM_CHECK(pos < logical.size(), "input ", tv->toString(),
               " is allocated in IDs other than its logical ones");
    contig[ordered ? k : pos] = pyContiguity(
        k < contiguity.size() ? contiguity[k] : std::optional<bool>(!alloc[k]->isBroadcast()));
    stride_order[pos] = std::to_string(alloc.size() - 1 - k);
  }
  std::string line = define(tv, 'T') + " = fd.define_tensor(shape=" + pyList(shape) +
                     ", contiguity=" + pyList(contig) + ", dtype=" + pyDtype(tv->dtype()) +
                     ", is_cpu=" + (facts_.cpuScalars.count(tv) != 0 ? "True" : "False");
  if (tv->domain()->hasAllocation()) line += ", stride_order=" + pyList(stride_order);
  emit(line + ")");
  noteExtents(tv);
}

std::string Translator::scalar(const Scalar* s, Use use) {
  if (s->isConst()) {
    // Defined before its first use, as nvFuser prints every constant. An operand of a tensor op
    // takes the type a Python number of its value has (what giving the number to the op makes);
    // a Scalar operand or object keeps its own.
    const DataType t = use == Use::TensorOperand ? numberType(s->dtype()) : s->dtype();
    if (t != s->dtype()) {  // the number the constant was made from, named apart from it
      auto [it, fresh] = number_names_.try_emplace(s);
      if (fresh) {
        it->second = scalarName(s);
        emit(it->second + " = fd.define_scalar(" + nvNumber(s) + ", dtype=" + pyDtype(t) + ")");
      }
      return it->second;
    }
    if (auto it = names_.find(s); it != names_.end()) return it->second;
    std::string name = define(s, 'S');
    emit(name + " = fd.define_scalar(" + nvNumber(s) + ", dtype=" + pyDtype(t) + ")");
    return name;
  }
  if (auto it = names_.find(s); it != names_.end()) return it->second;
  if (auto it = extents_.find(s); it != extents_.end()) {
    std::string name = define(s, 'S');
    emit(name + " = fd.ops.size(" + it->second.first +
         ", dim=" + std::to_string(it->second.second) + ")");
    return name;
  }
  LOOM_CHECK(s->definition() != nullptr, "the scalar ", s->toString(),
             " is neither an input, a constant, an extent of a tensor defined before it is "
             "used, nor computed from those");
  return scalarExpr(s);
}

std::string Translator::scalarExpr(const Scalar* s) {
  const ir::Expr* e = s->definition();
  if (const auto* u = dyn<ir::UnaryOp>(e)) {
    std::string x = scalar(asScalar(u->in()), Use::ScalarObject);
    if (u->opType() == ir::UnaryOpType::Cast) {
      std::string name = define(s, 'S');
      emit(name + " = fd.ops.cast(" + x + ", dtype=" + pyDtype(s->dtype()) + ")");
      return name;
    }
    std::string name = define(s, 'S');
    emit(name + " = fd.ops." + std::string(ir::opTypeName(u->opType())) + "(" + x + ")");
    return name;
  }
  if (const auto* b = dyn<ir::BinaryOp>(e)) {
    // fd.ops on Scalars (ops::scalarBinary) casts both operands to their promoted type; the
    // expr replays as it is only when they have it already.
    const DataType t = b->lhs()->dtype();
    const ir::BinaryOpType op = b->opType();
    const bool logical = op == ir::BinaryOpType::LogicalAnd || op == ir::BinaryOpType::LogicalOr;
    // fd.ops.div of integers truncates, as Div does; mod is fd.ops.mod; ceil_div fd.ops.ceilDiv.
    LOOM_CHECK(b->rhs()->dtype() == t && (!logical || t == DataType::Bool) &&
                   s->dtype() == (ir::isPredicateOp(op) ? DataType::Bool : t),
               "the scalar ", s->toString(), " = ", e->toString(),
               " is index math that the Python frontend's scalar ops do not build");
    std::string x = scalar(asScalar(b->lhs()), Use::ScalarOperand);
    std::string y = scalar(asScalar(b->rhs()), Use::ScalarOperand);
    std::string name = define(s, 'S');
    emit(name + " = fd.ops." + pyBinaryName(op) + "(" + x + ", " + y + ")");
    return name;
  }
  LOOM_THROW("the scalar ", s->toString(), " = ", e->toString(),
             " has no form in the Python frontend's scalar ops");
}

std::string Translator::size(const Scalar* s) {
  if (auto c = s->constInt()) return std::to_string(*c);
  // ops::Size::toScalar casts an integer Scalar of another type to an index: give the original.
  // It casts a floating Scalar too, requiring its value to be an integer (a requirement on that
  // Scalar says so): giving the original makes the same call check it again, where printing the
  // cast would truncate. (An explicit cast of a Scalar also used as a size would print as the
  // Scalar: the rebuilt fusion then has a requirement more, and print(fd) takes the text form.)
  const ir::Expr* d = s->definition();
  if (const auto* u = d == nullptr ? nullptr : dyn<ir::UnaryOp>(d);
      u != nullptr && u->opType() == ir::UnaryOpType::Cast && u->in()->dtype() != s->dtype() &&
      names_.count(s) == 0 && extents_.count(s) == 0 &&
      (isIntegralType(u->in()->dtype()) || checkedFloatingSize(asScalar(u->in())))) {
    return scalar(asScalar(u->in()), Use::ScalarObject);
  }
  return scalar(s, Use::ScalarObject);
}

bool Translator::checkedFloatingSize(const Scalar* f) const {
  return isFloatingType(f->dtype()) &&
         requirementOn(f, "the size " + f->toString() + " is a floating Scalar") != nullptr;
}

void Translator::translateExpr(const ir::Expr* e) {
  if (e->outputs().front()->isA<Scalar>()) return;  // scalar math: printed where it is used
  if (cat_pads_.count(e) != 0) return;              // made by fd.ops.cat
  if (sdpa_key_exprs_.count(e) != 0) return;        // made by fd.ops.sdpfa_fwd
  if (made_by_broadcast_in_dim_.count(e) != 0) return;  // printed with its broadcast
  if (isOneOf<ir::UnaryOp, ir::BinaryOp, ir::TernaryOp, ir::ReductionOp, ir::WelfordOp>(e)) {
    translateMath(e);
  } else if (isOneOf<ir::BroadcastOp, ir::SqueezeOp, ir::ExpandOp, ir::ReshapeOp, ir::LoadStoreOp>(
                 e)) {
    translateShapeOp(e);
  } else if (isOneOf<ir::SliceOp, ir::PadOp, ir::CatOp>(e)) {
    translateResizeOp(e);
  } else {
    translateOtherOp(e);
  }
  for (const ir::Val* out : e->outputs()) {
    // An output another call's line defines instead (broadcast_in_dim's broadcast) has no name.
    if (names_.count(out) != 0) noteExtents(out->as<TensorView>());
  }
}

void Translator::translateMath(const ir::Expr* e) {
  if (const auto* u = dyn<ir::UnaryOp>(e)) {
    std::string x = tensor(u->in());
    if (u->opType() == ir::UnaryOpType::Cast) {
      emit(define(u->out(), 'T') + " = fd.ops.cast(" + x + ", dtype=" + pyDtype(u->out()->dtype()) +
           ")");
    } else {
      emit(define(u->out(), 'T') + " = fd.ops." + std::string(ir::opTypeName(u->opType())) + "(" +
           x + ")");
    }
    return;
  }
  if (const auto* b = dyn<ir::BinaryOp>(e)) {
    std::string x = operand(b->lhs());
    std::string y = operand(b->rhs());
    emit(define(b->out(), 'T') + " = fd.ops." + pyBinaryName(b->opType()) + "(" + x + ", " + y +
         ")");
    return;
  }
  if (const auto* t = dyn<ir::TernaryOp>(e)) {
    // where of two Scalars takes their dtype (ops::selectionType), so a constant whose dtype a
    // Python number does not carry must be given as a typed Scalar.
    bool typed = t->opType() == ir::TernaryOpType::Where && !t->b()->isA<TensorView>() &&
                 !t->c()->isA<TensorView>();
    auto value = [&](const ir::Val* v) {
      return typed ? scalar(asScalar(v), Use::ScalarOperand) : operand(v);
    };
    std::string a = operand(t->a());
    std::string b = value(t->b());
    std::string c = value(t->c());
    emit(define(t->out(), 'T') + " = fd.ops." + std::string(ir::opTypeName(t->opType())) + "(" + a +
         ", " + b + ", " + c + ")");
    return;
  }
  if (const auto* r = dyn<ir::ReductionOp>(e)) {
    LOOM_CHECK(sameIdentity(r) && r->in()->dtype() == r->out()->dtype() &&
                   !r->in()->domain()->hasReduction(),
               "'", e->toString(), "' is not a reduction fd.ops makes (its init ",
               r->init()->toString(), ", its types or an rFactor)");
    std::string x = tensor(r->in());
    emit(define(r->out(), 'T') + " = fd.ops." + std::string(ir::opTypeName(r->opType())) + "(" + x +
         ", dims=" + pyList(reducedDims(r->out())) + ", dtype=" + pyDtype(r->out()->dtype()) +
         ")");
    return;
  }
  const auto* w = e->as<ir::WelfordOp>();
  LOOM_CHECK(w->hasRawInput() && w->hasIdentityInit() && w->inAvg()->isA<TensorView>() &&
                 !w->inAvg()->as<TensorView>()->domain()->hasReduction(),
             "'", e->toString(), "' is a Welford of partial results, which fd.ops does not make");
  std::string x = tensor(w->inAvg());
  std::string avg = define(w->outAvg(), 'T');
  std::string m2 = define(w->outM2(), 'T');
  std::string n = define(w->outN(), 'T');
  emit(avg + ", " + m2 + ", " + n + " = fd.ops.welford(" + x +
       ", dims=" + pyList(reducedDims(w->outAvg())) + ")");
}

bool Translator::printBroadcastInDim(const ir::TensorView* in, const std::vector<bool>& fresh,
                                     const ir::TensorView* result) {
  std::optional<std::vector<std::string>> shape = broadcastInDimShape(in, fresh, result);
  if (!shape) return false;
  std::vector<std::string> dims;
  for (size_t d = 0; d < fresh.size(); ++d) {
    if (!fresh[d]) dims.push_back(std::to_string(d));
  }
  emit(define(result, 'T') + " = fd.ops.broadcast_in_dim(" + tensor(in) +
       ", shape=" + pyList(*shape) + ", broadcast_dims=" + pyList(dims) + ")");
  return true;
}

void Translator::translateShapeOp(const ir::Expr* e) {
  if (const auto* b = dyn<ir::BroadcastOp>(e)) {
    const auto& uses = b->out()->uses();
    const auto* expand = uses.size() == 1 && !madeByBroadcastInDim(b->out())
                             ? dyn<ir::ExpandOp>(uses.front())
                             : nullptr;  // a broadcast that is a whole call is printed alone
    if (printBroadcastInDim(b->in(), b->isBroadcastDim(),
                            expand != nullptr ? expand->out() : b->out())) {
      if (expand != nullptr) made_by_broadcast_in_dim_.insert(expand);
      return;
    }
    std::vector<std::string> flags;
    for (bool f : b->isBroadcastDim()) flags.push_back(pyBool(f));
    emit(define(b->out(), 'T') + " = fd.ops.broadcast(" + tensor(b->in()) +
         ", is_broadcast_dim=" + pyList(flags) + ")");
    return;
  }
  if (const auto* q = dyn<ir::SqueezeOp>(e)) {
    // ops::squeeze removes an expanded broadcast only when asked.
    bool expanded = false;
    for (const IterDomain* id : q->squeezedIds()) expanded = expanded || id->hasExpandedExtent();
    emit(define(q->out(), 'T') + " = fd.ops.squeeze(" + tensor(q->in()) + ", dims=" +
         pyList(positions(q->isSqueezedDim())) + (expanded ? ", squeeze_expanded=True)" : ")"));
    return;
  }
  if (const auto* x = dyn<ir::ExpandOp>(e)) {
    auto in = ir::TensorDomain::noReductions(x->in()->logical());
    auto out = ir::TensorDomain::noReductions(x->out()->logical());
    LOOM_CHECK(in.size() == out.size(), "'", e->toString(), "' changes the rank");
    // broadcast_in_dim that adds no dim (but stretches one and requires sizes) is this expand.
    if (printBroadcastInDim(x->in(), std::vector<bool>(out.size(), false), x->out())) return;
    std::vector<std::string> shape;
    for (size_t i = 0; i < in.size(); ++i) {
      const IterDomain* a = in[i];
      const IterDomain* o = out[i];
      if (o->extent() == a->extent() && o->iterType() == a->iterType() &&
          o->expandedExtent() == a->expandedExtent()) {
        // Kept as it is, or expanded to a size it must already have (the requirement
        // ops::expand added, naming this expand's output, which the same call adds again).
        const auto r = requiredSize(a->extent(), "expand to " + x->out()->toString() +
                                                     ": dimension " + std::to_string(i) + " of ");
        shape.push_back(!r                     ? "-1"
                        : r->scalar != nullptr ? size(r->scalar)
                                               : std::to_string(r->value));
      } else if (a->isBroadcast() && o->isBroadcast() && o->hasExpandedExtent()) {
        shape.push_back(size(o->expandedExtent()));
      } else {
        shape.push_back(size(o->extent()));
      }
    }
    std::string t = tensor(x->in());
    emit(define(x->out(), 'T') + " = fd.ops.expand(" + t + ", shape=" + pyList(shape) + ")");
    return;
  }
  if (const auto* r = dyn<ir::ReshapeOp>(e)) {
    std::vector<std::string> shape;
    for (const IterDomain* id : ir::TensorDomain::noReductions(r->out()->logical())) {
      const Scalar* s = id->logicalExtent();  // an expanded broadcast kept whole: its size
      if (auto c = s->constInt()) {
        shape.push_back(std::to_string(*c));
        continue;
      }
      LOOM_CHECK(r->isDynamic(), "'", e->toString(),
                 "' is a static reshape to a symbolic size (a sharded split), which "
                 "fd.ops.reshape does not make");
      // The size ops::reshape inferred for a -1: the element count over the other sizes.
      shape.push_back(binaryDef(s, ir::BinaryOpType::Div) != nullptr && s->dtype() == kIndexType
                          ? "-1"
                          : size(s));
    }
    std::string t = tensor(r->in());
    emit(define(r->out(), 'T') + " = fd.ops.reshape(" + t + ", new_shape=" + pyList(shape) + ")");
    return;
  }
  const auto* s = e->as<ir::LoadStoreOp>();
  const ir::TensorDomain* td = s->out()->domain();
  LOOM_CHECK(s->opType() == ir::LoadStoreOpType::Set, "'", e->toString(), "': a TMA copy ",
             "(cache_after / cache_before with LoadStoreOpType.tma) is a schedule step ",
             "nvFuser's definitions cannot hold");
  if (s->isSegmentBoundary()) {
    emit(define(s->out(), 'T') + " = fd.ops.segment_set(" + tensor(s->in()) + ")");
    return;
  }
  if (!td->hasRoot() && td->hasAllocation()) {
    // ops::strideOrder: each dim's place from the innermost in the allocation.
    const std::vector<IterDomain*> logical = ir::TensorDomain::noReductions(td->logical());
    const std::vector<IterDomain*>& alloc = td->allocation();
    std::vector<std::string> order;
    for (const IterDomain* id : logical) {
      auto at = std::find(alloc.begin(), alloc.end(), id);
      LOOM_CHECK(at != alloc.end(), "'", e->toString(), "': the allocation of ",
                 s->out()->toString(), " is not a permutation of its dims");
      order.push_back(std::to_string(alloc.end() - at - 1));
    }
    emit(define(s->out(), 'T') + " = fd.ops.stride_order(" + tensor(s->in()) +
         ", stride_order=" + pyList(order) + ")");
    return;
  }
  if (!td->hasRoot()) {
    // broadcast_in_dim that adds and stretches no dim but requires sizes is such a copy.
    const std::vector<bool> none(ir::TensorDomain::noReductions(td->logical()).size(), false);
    if (printBroadcastInDim(s->in(), none, s->out())) return;
    emit(define(s->out(), 'T') + " = fd.ops.set(" + tensor(s->in()) + ")");
    return;
  }
  std::vector<std::string> dims;
  for (const IterDomain* id : td->logical()) {
    size_t k = 0;
    while (k < td->root().size() && td->root()[k] != id) ++k;
    LOOM_CHECK(k < td->root().size(), "'", e->toString(), "' is not a permutation");
    dims.push_back(std::to_string(k));
  }
  emit(define(s->out(), 'T') + " = fd.ops.permute(" + tensor(s->in()) + ", dims=" + pyList(dims) +
       ")");
}

// The bound the user gave slice, from its normalization (ops::slice's normalizeBound).
std::string Translator::sliceBound(const SliceBound& b, const Scalar* extent) {
  if (b.value.has_value()) return std::to_string(*b.value);
  const Scalar* bound = b.scalar;
  if (bound->isConst() || bound == extent) return size(bound);
  // min(b, extent) for a constant b > 0.
  if (const auto* m = binaryDef(bound, ir::BinaryOpType::Min)) {
    if (m->rhs() == extent && asScalar(m->lhs())->isConst()) return size(asScalar(m->lhs()));
    // min(max(where(s < 0, s + extent, s), 0), extent) for a Scalar s.
    const auto* mx = binaryDef(asScalar(m->lhs()), ir::BinaryOpType::Max);
    const ir::Expr* w = mx == nullptr ? nullptr : asScalar(mx->lhs())->definition();
    if (const auto* t = w == nullptr ? nullptr : dyn<ir::TernaryOp>(w)) {
      if (t->opType() == ir::TernaryOpType::Where) return size(asScalar(t->c()));
    }
  }
  // max(b + extent, 0) for a constant b < 0.
  if (const auto* mx = binaryDef(bound, ir::BinaryOpType::Max)) {
    if (const auto* a = binaryDef(asScalar(mx->lhs()), ir::BinaryOpType::Add)) {
      if (a->rhs() == extent && asScalar(a->lhs())->isConst()) return size(asScalar(a->lhs()));
    }
  }
  LOOM_THROW("the slice bound ", bound->toString(), " is not one fd.ops.slice makes");
}

void Translator::translateSlice(const ir::SliceOp* sl) {
  const ir::TensorDomain* td = sl->out()->domain();
  std::vector<std::string> starts, stops;
  for (size_t d = 0; d < td->root().size(); ++d) {
    IterDomain* root = td->root()[d];
    const Scalar* extent = root->extent();
    const IterDomain* out = td->logical()[d];
    if (out == root) {
      starts.emplace_back("0");
      stops.push_back(size(extent));
      continue;
    }
    const auto* rz = dyn<ir::Resize>(out->definition());
    LOOM_CHECK(rz != nullptr && rz->in() == root, "'", sl->toString(), "' is not a slice");
    // left = 0 - start, right = stop - extent (folded when constant).
    SliceBound start, stop;
    if (auto l = rz->left()->constInt()) {
      start.value = -*l;
    } else if (const auto* s = binaryDef(rz->left(), ir::BinaryOpType::Sub)) {
      start.scalar = asScalar(s->rhs());
    }
    if (auto r = rz->right()->constInt(); r && *r == 0) {
      stop.scalar = extent;
    } else if (r && extent->constInt()) {
      stop.value = *r + *extent->constInt();
    } else if (const auto* s = binaryDef(rz->right(), ir::BinaryOpType::Sub)) {
      stop.scalar = asScalar(s->lhs());
    }
    LOOM_CHECK((start.value || start.scalar) && (stop.value || stop.scalar), "'", sl->toString(),
               "' has slice ranges fd.ops.slice does not make");
    // An empty range is kept so by stop = max(stop, start).
    if (const auto* mx = stop.scalar ? binaryDef(stop.scalar, ir::BinaryOpType::Max) : nullptr;
        mx != nullptr && start.scalar != nullptr && mx->rhs() == start.scalar) {
      stop.scalar = asScalar(mx->lhs());
    }
    starts.push_back(sliceBound(start, extent));
    stops.push_back(sliceBound(stop, extent));
  }
  emit(define(sl->out(), 'T') + " = fd.ops.slice(" + tensor(sl->in()) +
       ", start_indices=" + pyList(starts) + ", end_indices=" + pyList(stops) + ")");
}

void Translator::translatePad(const ir::PadOp* p) {
  const ir::TensorDomain* td = p->out()->domain();
  std::vector<std::string> widths;  // (left, right) of the last dim first, as torch
  size_t outermost = td->root().size();
  for (size_t d = 0; d < td->root().size(); ++d) {
    if (td->logical()[d] != td->root()[d]) {
      outermost = d;
      break;
    }
  }
  for (size_t d = td->root().size(); d-- > outermost;) {
    const IterDomain* out = td->logical()[d];
    if (out == td->root()[d]) {
      widths.insert(widths.end(), {"0", "0"});
      continue;
    }
    const auto* rz = dyn<ir::Resize>(out->definition());
    LOOM_CHECK(rz != nullptr, "'", p->toString(), "' is not a pad");
    widths.push_back(size(rz->left()));
    widths.push_back(size(rz->right()));
  }
  std::string t = tensor(p->in());
  std::string v = operand(p->value());
  emit(define(p->out(), 'T') + " = fd.ops.pad(" + t + ", pad_widths=" + pyList(widths) +
       ", value=" + v + ")");
}

void Translator::translateResizeOp(const ir::Expr* e) {
  if (const auto* sl = dyn<ir::SliceOp>(e)) {
    translateSlice(sl);
    return;
  }
  if (const auto* p = dyn<ir::PadOp>(e)) {
    translatePad(p);
    return;
  }
  if (const auto* c = dyn<ir::CatOp>(e)) {
    std::vector<std::string> ins;
    for (size_t k = 0; k < c->numInputs(); ++k) {
      ins.push_back(tensor(c->in(k)->definition()->as<ir::PadOp>()->in()));
    }
    emit(define(c->out(), 'T') + " = fd.ops.cat(" + pyList(ins) +
         ", dim=" + std::to_string(c->dim()) + ")");
    return;
  }
  LOOM_THROW("'", e->toString(), "' is not a resize op");
}

namespace {

// fd.ops.select with a position known at run time is an IndexSelectOp of a 0-D index (under the
// broadcast the op adds), a full of the wrapped position `raw + size * (raw < 0 && raw >= -size)`
// (ops::select); index_select broadcasts a 0-D index to length 1 first. The raw position of such
// a select, or null.
const Scalar* selectPosition(const ir::IndexSelectOp* is) {
  const ir::TensorView* index = is->index();
  if (index->definition() != nullptr && index->definition()->isA<ir::BroadcastOp>()) {
    index = index->definition()->as<ir::BroadcastOp>()->in();
  }
  if (!ir::TensorDomain::noReductions(index->logical()).empty()) return nullptr;
  const auto* full =
      index->definition() == nullptr ? nullptr : dyn<ir::FullOp>(index->definition());
  if (full == nullptr) return nullptr;
  const ir::BinaryOp* at = binaryDef(full->value(), ir::BinaryOpType::Add);
  return at == nullptr ? nullptr : asScalar(at->lhs());
}

}  // namespace

// Factories, scans, random numbers, indexing and matmul.
void Translator::translateOtherOp(const ir::Expr* e) {
  if (const auto* f = dyn<ir::FullOp>(e)) {
    std::vector<std::string> shape;
    for (const IterDomain* id : ir::TensorDomain::noReductions(f->out()->logical())) {
      shape.push_back(size(id->extent()));
    }
    std::string v = operand(f->value());
    emit(define(f->out(), 'T') + " = fd.ops.full(shape=" + pyList(shape) + ", fill_value=" + v +
         ", dtype=" + pyDtype(f->out()->dtype()) + ")");
    return;
  }
  if (const auto* io = dyn<ir::IotaOp>(e)) {
    auto ids = ir::TensorDomain::noReductions(io->out()->logical());
    LOOM_CHECK(ids.size() == 1, "'", e->toString(), "' is not 1-D");
    LOOM_CHECK(io->indexOffset() == nullptr, "'", e->toString(),
               "' is a device's shard of an iota (a local program): it has no Python form");
    std::string length = size(ids[0]->extent());
    std::string start = operand(io->start());
    std::string step = operand(io->step());
    emit(define(io->out(), 'T') + " = fd.ops.iota(" + length + ", " + start + ", " + step +
         ", dtype=" + pyDtype(io->out()->dtype()) + ")");
    return;
  }
  if (const auto* sc = dyn<ir::ScanOp>(e)) {
    emit(define(sc->out(), 'T') + " = fd.ops." + sc->opName() + "(" + tensor(sc->in()) +
         ", dim=" + std::to_string(sc->dim()) + ")");
    return;
  }
  if (const auto* r = dyn<ir::RngOp>(e)) {
    LOOM_CHECK(!r->hasIndexOffsets(), "'", e->toString(),
               "' is a device's shard of a draw (a local program): it has no Python form");
    std::vector<std::string> shape;
    for (const IterDomain* id : ir::TensorDomain::noReductions(r->out()->logical())) {
      shape.push_back(size(id->extent()));
    }
    const char* op = r->rngType() == ir::RngOpType::Uniform ? "uniform" : "normal";
    emit(define(r->out(), 'T') + " = fd.ops." + op + "(" + operand(r->param0()) + ", " +
         operand(r->param1()) + ", shape=" + pyList(shape) +
         ", dtype=" + pyDtype(r->out()->dtype()) +
         rngKey(r->seed(), r->offset(), "rng_seed", "rng_offset") + ")");
    return;
  }
  if (const auto* is = dyn<ir::IndexSelectOp>(e)) {
    if (const Scalar* raw = selectPosition(is)) {
      emit(define(is->out(), 'T') + " = fd.ops.select(" + tensor(is->lookup()) + ", " +
           scalar(raw, Use::ScalarObject) + ", dim=" + std::to_string(is->dim()) + ")");
      return;
    }
    // ops put the index's broadcast in; the frontend ops take the index as the user gave it.
    const ir::TensorView* index = is->index();
    if (index->definition() != nullptr && index->definition()->isA<ir::BroadcastOp>()) {
      index = index->definition()->as<ir::BroadcastOp>()->in();
    }
    const size_t rank = ir::TensorDomain::noReductions(index->logical()).size();
    if (rank > 1) {
      emit(define(is->out(), 'T') + " = fd.ops.embedding_fwd(" + tensor(index) + ", " +
           tensor(is->lookup()) + ", None, None, 2.0, False, False)");
    } else {
      emit(define(is->out(), 'T') + " = fd.ops.index_select(" + tensor(is->lookup()) + ", " +
           tensor(index) + ", dim=" + std::to_string(is->dim()) + ")");
    }
    return;
  }
  if (const auto* as = dyn<ir::ArgsortOp>(e)) {
    emit(define(as->out(), 'T') + " = fd.ops.argsort(" + tensor(as->in()) +
         ", dim=" + std::to_string(as->dim()) +
         ", descending=" + (as->descending() ? "True" : "False") + ", stable=True)");
    return;
  }
  if (const auto* tk = dyn<ir::TopKOp>(e)) {
    std::string in = tensor(tk->in());
    std::string k = size(tk->k());
    std::string values = define(tk->values(), 'T');
    emit(values + ", " + define(tk->indices(), 'T') + " = fd.ops.topk(" + in + ", " + k +
         ", dim=" + std::to_string(tk->dim()) + ", largest=" + (tk->largest() ? "True" : "False") +
         ", sorted=True)");
    return;
  }
  if (const auto* g = dyn<ir::GatherOp>(e)) {
    emit(define(g->out(), 'T') + " = fd.ops." + g->opName() + "(" + tensor(g->lookup()) + ", " +
         tensor(g->index()) + ", dim=" + std::to_string(g->dim()) + ")");
    return;
  }
  if (const auto* sc = dyn<ir::ScatterOp>(e)) {
    emit(define(sc->out(), 'T') + " = fd.ops." + sc->opName() + "(" + tensor(sc->self()) + ", " +
         tensor(sc->index()) + ", " + tensor(sc->src()) + ", dim=" + std::to_string(sc->dim()) +
         ")");
    return;
  }
  if (const auto* mm = dyn<ir::MatmulOp>(e)) {
    emit(define(mm->out(), 'T') + " = fd.ops.matmul(" + tensor(mm->a()) + ", " + tensor(mm->b()) +
         ")");
    return;
  }
  if (const auto* lin = dyn<ir::LinearOp>(e)) {
    // nvFuser's direct bindings print the bias as a keyword argument.
    const std::string bias = lin->hasBias() ? ", bias=" + tensor(lin->bias()) : std::string();
    emit(define(lin->out(), 'T') + " = fd.ops.linear(" + tensor(lin->x()) + ", " +
         tensor(lin->w()) + bias + ")");
    return;
  }
  if (const auto* fwd = dyn<ir::SdpaFwdOp>(e)) {
    std::string args = tensor(fwd->query()) + ", " + tensor(fwd->key()) + ", " +
                       tensor(fwd->value()) + ", dropout_p=" + operand(fwd->dropoutP()) +
                       ", is_causal=" + operand(fwd->isCausal()) +
                       ", scale=" + operand(fwd->scale()) +
                       rngKey(fwd->seed(), fwd->offset(), "rng_seed", "rng_offset");
    std::string out = define(fwd->attnOut(), 'T');
    out += ", " + define(fwd->logSumexp(), 'T');
    auto keys = sdpa_keys_.find(fwd);
    for (int k = 0; k < 2; ++k) {
      const ir::Val* key = keys == sdpa_keys_.end() ? nullptr
                           : k == 0                 ? keys->second.first
                                                    : keys->second.second;
      out += ", " + (key != nullptr ? define(key, 'T') : std::string("_"));
    }
    emit(out + " = fd.ops.sdpfa_fwd(" + args + ")");
    return;
  }
  if (const auto* bwd = dyn<ir::SdpaBwdOp>(e)) {
    std::string args =
        tensor(bwd->gradOutput()) + ", " + tensor(bwd->query()) + ", " + tensor(bwd->key()) + ", " +
        tensor(bwd->value()) + ", " + tensor(bwd->attnOut()) + ", " + tensor(bwd->logSumexp()) +
        ", dropout_p=" + operand(bwd->dropoutP()) + ", is_causal=" + operand(bwd->isCausal()) +
        ", philox_seed=" + bwdKey(bwd, true) + ", philox_offset=" + bwdKey(bwd, false) +
        ", scale=" + operand(bwd->scale());
    std::string dq = define(bwd->output(0), 'T');
    std::string dk = define(bwd->output(1), 'T');
    emit(dq + ", " + dk + ", " + define(bwd->output(2), 'T') + " = fd.ops.sdpfa_bwd(" + args + ")");
    return;
  }
  LOOM_THROW("'", e->toString(), "' has no form in the Python frontend");
}

}  // namespace loom::python
