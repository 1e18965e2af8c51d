// SPDX-License-Identifier: Apache-2.0
// The .fus parser: one line at a time, building raw IR nodes as it goes.
//
// Names must be defined before they are used, except in the `inputs:` / `outputs:` lines, which
// are resolved at the end. A tensor declaration opens a block: the `root` / `allocation` /
// `loop` lines and Split/Merge lines that follow belong to it, and the TensorView is built when
// the next scalar, tensor or math line (or the end of the file) closes the block, because a
// TensorDomain needs all four domains at once. The parser's state is parser_impl.h; the ops a math
// line calls are built in parser_ops.cpp.
#include "loom/ir/parser.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "ir/parser_impl.h"
#include "ir/verify_exprs.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/verifier.h"

namespace loom::ir {
namespace text {
namespace {

// "T12" -> ('T', 12) for names made of one letter and digits.
std::optional<std::pair<char, int64_t>> splitName(const std::string& s) {
  if (s.size() < 2 || !std::isalpha((unsigned char)s[0])) return std::nullopt;
  int64_t n = 0;
  auto res = std::from_chars(s.data() + 1, s.data() + s.size(), n);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return std::make_pair(s[0], n);
}

std::optional<IterType> iterTypeOfLetter(char c) {
  switch (c) {
    case 'i': return IterType::Iteration;
    case 'r': return IterType::Reduction;
    case 'b': return IterType::Broadcast;
    case 'u': return IterType::Symbolic;
    default: return std::nullopt;
  }
}

}  // namespace

Parser::Parser(std::string_view text, std::string_view filename)
    : filename_(filename), toks_(tokenize(text, filename)) {
  fusion_ = std::make_unique<Fusion>();
  // Constants get names above every scalar number in the text, so names stay unique. A number
  // beyond the names a fusion takes (Fusion's range check rejects it with a UserError where it is
  // declared) is left out here, where adding one to it would overflow.
  constexpr int64_t kLargestName = int64_t{1} << 62;
  for (const Token& t : toks_) {
    auto n = t.kind == Kind::Ident ? splitName(t.text) : std::nullopt;
    if (n && n->first == 's' && n->second >= 0 && n->second < kLargestName) {
      next_const_ = std::max(next_const_, n->second + 1);
    }
  }
}

std::unique_ptr<Fusion> Parser::run() {
  FusionGuard guard(fusion_.get());
  while (peek().kind != Kind::End) parseLine();
  finishTensor();
  for (const auto& entry : io_) {
    Val* v = lookupVal(*entry.first);
    const bool is_input = entry.second;
    located(*entry.first, [&] { is_input ? fusion_->addInput(v) : fusion_->addOutput(v); });
  }
  for (const auto& [out, in] : aliases_) {
    Val* o = lookupVal(*out);
    Val* i = lookupVal(*in);
    located(*in, [&] { fusion_->aliasOutputToInput(o, i); });
  }
  try {
    verify(*fusion_);
  } catch (const InternalError& e) {
    fail(verifyLocation(e.reason()), "invalid fusion: ", e.reason());
  }
  return std::move(fusion_);
}

void Parser::parseLine() {
  const Token& t = peek();
  if (t.kind == Kind::Newline) {
    next();
    return;
  }
  if (t.kind != Kind::Ident) fail(t, "expected a declaration or an expr, got '", t.text, "'");
  if ((t.text == "inputs" || t.text == "outputs") && isPunct(":", 1)) {
    finishTensor();
    parseIoLine();
    return;
  }
  if (t.text == "root" || t.text == "allocation" || t.text == "loop") {
    parseDomainLine();
    return;
  }
  if (t.text == "require") {
    finishTensor();
    parseRequirementLine();
    return;
  }
  auto n = splitName(t.text);
  if (n && n->first == 'T') {
    finishTensor();
    if (isPunct(":", 1)) {
      parseTensorDecl();
    } else {
      parseMathLine();
    }
    return;
  }
  if (n && n->first == 's') {
    finishTensor();
    parseScalarDecl();
    return;
  }
  if (n && iterTypeOfLetter(n->first)) {
    parseTransformLine();
    return;
  }
  fail(t, "expected a declaration or an expr, got '", t.text, "'");
}

void Parser::parseIoLine() {
  bool is_input = next().text == "inputs";
  expect(":");
  if (peek().kind != Kind::Newline) {
    do {
      const Token& name = expectIdent("a tensor or scalar name");
      io_.emplace_back(&name, is_input);
      // "T3 into T0": output T3 is written into input T0's memory (an in-place update).
      if (!is_input && peek().kind == Kind::Ident && peek().text == "into") {
        next();
        aliases_.emplace_back(&name, &expectIdent("the input the output is written into"));
      }
    } while (accept(","));
  }
  expectEndOfLine();
}

// "require s5 == 2, extent s1: "message"": a condition on the run's sizes (ExtentRequirement).
void Parser::parseRequirementLine() {
  next();
  Scalar* value = parseScalarOperand();
  expect("=");
  expect("=");
  const int64_t expected = parseInt();
  expect(",");
  const Token& kw = expectIdent("'extent'");
  if (kw.text != "extent") fail(kw, "expected 'extent', got '", kw.text, "'");
  Scalar* extent = parseScalarOperand();
  expect(":");
  const Token& what = peek();
  if (what.kind != Kind::String) {
    fail(what, "expected the requirement's message in quotes, got '", what.text, "'");
  }
  next();
  expectEndOfLine();
  fusion_->addExtentRequirement({value, expected, extent, what.text});
}

void Parser::parseScalarDecl() {
  const Token& name_tok = next();
  int64_t number = splitName(name_tok.text)->second;
  if (auto it = scalars_.find(number); it != scalars_.end()) {
    fail(name_tok, "redefinition of ", name_tok.text, " (first defined at ",
         it->second.second->line, ":", it->second.second->col, ")");
  }
  expect(":");
  DataType dtype = parseDtype();
  auto* s = make<Scalar>(number, dtype);
  scalars_[number] = {s, &name_tok};
  if (accept("=")) {
    buildCall({s}, name_tok);
    // Names resolve to earlier lines only, so a scalar's own name is the one way to a cycle.
    for (Val* in : s->definition()->inputs()) {
      if (in == s) fail(name_tok, name_tok.text, " is used in its own definition");
    }
  }
  expectEndOfLine();
}

void Parser::parseTensorDecl() {
  const Token& name_tok = next();
  int64_t number = splitName(name_tok.text)->second;
  if (auto it = tensors_.find(number); it != tensors_.end()) {
    fail(name_tok, "redefinition of ", name_tok.text, " (first defined at ",
         it->second.second->line, ":", it->second.second->col, ")");
  }
  expect(":");
  PendingTensor p{};
  p.number = number;
  p.tok = &name_tok;
  p.dtype = parseDtype();
  const Token& mem = expectIdent("a memory type (local, shared, global)");
  auto m = parseMemoryType(mem.text);
  if (!m) fail(mem, "unknown memory type '", mem.text, "' (expected local, shared or global)");
  p.memory = *m;
  p.logical = parseIdList();
  while (peek().kind == Kind::Ident) {
    const Token& key = next();
    expect("=");
    if (key.text == "contig") {
      p.contiguity = parseContiguity();
    } else if (key.text == "mesh") {
      p.mesh = parseMesh(key);
    } else if (key.text == "ca") {
      p.ca = parseInt();
    } else if (key.text == "mpp") {
      p.mpp = parseInt();
    } else {
      fail(key, "unknown tensor attribute '", key.text, "' (expected contig, mesh, ca or mpp)");
    }
  }
  expectEndOfLine();
  pending_ = std::move(p);
}

void Parser::parseDomainLine() {
  const Token& kw = next();
  if (!pending_) fail(kw, "'", kw.text, "' must follow a tensor declaration");
  PendingTensor& p = *pending_;
  std::vector<IterDomain*> ids = parseIdList();
  if (kw.text == "root") {
    p.root = std::move(ids);
  } else if (kw.text == "allocation") {
    p.allocation = std::move(ids);
    if (peek().kind == Kind::Ident && peek().text == "contig") {
      next();
      expect("=");
      p.alloc_contiguity = parseContiguity();
    }
  } else {
    p.loop = std::move(ids);
    p.has_loop = true;
  }
  expectEndOfLine();
}

void Parser::parseTransformLine() {
  const Token& first = peek();
  std::vector<IterDomain*> outs;
  std::vector<const Token*> out_toks;
  do {
    out_toks.push_back(&peek());
    outs.push_back(parseIdItem());
  } while (accept(","));
  expect("=");
  const Token& op = expectIdent("split, outer_split, merge or resize");
  bool is_split = op.text == "split" || op.text == "outer_split";
  bool is_resize = op.text == "resize";
  if (!is_split && !is_resize && op.text != "merge") {
    fail(op, "unknown transform '", op.text, "' (expected split, outer_split, merge or resize)");
  }
  size_t n_out = is_split ? 2 : 1;
  if (outs.size() != n_out) {
    fail(first, op.text, " has ", n_out, " output", n_out == 1 ? "" : "s", ", got ", outs.size());
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i]->definition() != nullptr) {
      fail(*out_toks[i], out_toks[i]->text, " already has a definition");
    }
  }
  expect("(");
  IterDomain* in0 = parseIdRef();
  expect(",");
  Expr* made = nullptr;
  if (is_resize) {
    Scalar* left = parseIndexOperand("the left width of resize");
    expect(",");
    Scalar* right = parseIndexOperand("the right width of resize");
    expect(")");
    made = make<Resize>(std::nullopt, outs[0], in0, left, right);
  } else if (is_split) {
    const Token& ftok = peek();
    Scalar* factor = parseScalarOperand();
    if (!isIntegralType(factor->dtype())) fail(ftok, "split factor must be an integer");
    expect(")");
    made = make<Split>(std::nullopt, outs[0], outs[1], in0, factor, op.text == "split");
  } else {
    IterDomain* in1 = parseIdRef();
    expect(")");
    made = make<Merge>(std::nullopt, outs[0], in0, in1);
  }
  if (auto problem = transformProblem(made)) fail(op, *problem);
  if (auto problem = extentProblem(made)) fail(op, *problem);
  expectEndOfLine();
}

void Parser::parseMathLine() {
  const Token& first = peek();
  std::vector<Val*> outs;
  do {
    const Token& t = expectIdent("a tensor name");
    Val* v = lookupVal(t);
    if (v->definition() != nullptr) fail(t, t.text, " already has a definition");
    outs.push_back(v);
  } while (accept(","));
  expect("=");
  buildCall(outs, first);
  expectEndOfLine();
}

void Parser::finishTensor() {
  if (!pending_) return;
  PendingTensor p = std::move(*pending_);
  pending_.reset();
  const Token& t = *p.tok;
  // A dynamic reshape's logical IDs are fresh (declared here, derived from nothing); the
  // verifier checks that such a tensor is defined by a reshape.
  bool fresh_logical =
      !p.logical.empty() && std::all_of(p.logical.begin(), p.logical.end(), [&](IterDomain* id) {
        return id->definition() == nullptr &&
               std::find(p.root.begin(), p.root.end(), id) == p.root.end();
      });
  if (!p.root.empty() && !fresh_logical) {
    checkDerived(t, p.root, p.logical, "root", "logical");
  }
  if (p.has_loop) checkDerived(t, p.logical, p.loop, "logical", "loop");
  if (!p.allocation.empty()) checkDerived(t, p.logical, p.allocation, "logical", "allocation");
  if (p.contiguity && !p.allocation.empty()) {
    fail(t,
         "contig= on the declaration line is for the logical domain; with an allocation "
         "domain, write contig= on the allocation line");
  }
  Contiguity contig;
  if (p.alloc_contiguity) contig = *p.alloc_contiguity;
  if (p.contiguity) contig = *p.contiguity;
  TensorView* tv = nullptr;
  located(t, [&] {
    auto* td = make<TensorDomain>(std::nullopt, p.root, p.logical, p.allocation, p.loop, contig);
    tv = make<TensorView>(p.number, td, p.dtype, p.memory);
  });
  tv->setDeviceMesh(p.mesh);
  tv->setComputeAtPosition(p.ca);
  tv->setMaxProducerPosition(p.mpp);
  tensors_[p.number] = {tv, &t};
}

void Parser::checkDerived(const Token& t, const std::vector<IterDomain*>& from,
                          const std::vector<IterDomain*>& to, const char* from_name,
                          const char* to_name) {
  std::unordered_set<const IterDomain*> seen(from.begin(), from.end());
  std::vector<const IterDomain*> work(from.begin(), from.end());
  while (!work.empty()) {
    const IterDomain* id = work.back();
    work.pop_back();
    for (Expr* use : id->uses()) {
      bool ready = true;
      for (Val* in : use->inputs()) ready = ready && seen.count(in->as<IterDomain>());
      if (!ready) continue;
      for (Val* o : use->outputs()) {
        if (seen.insert(o->as<IterDomain>()).second) work.push_back(o->as<IterDomain>());
      }
    }
  }
  for (IterDomain* id : to) {
    if (!seen.count(id)) {
      fail(t, t.text, ": ", to_name, " ID ", idNames_.at(id), " is not derived from the ",
           from_name, " domain by the split/merge/resize lines of this tensor");
    }
  }
}

std::vector<IterDomain*> Parser::parseIdList() {
  std::vector<IterDomain*> ids;
  expect("[");
  if (!isPunct("]")) {
    do {
      ids.push_back(parseIdItem());
    } while (accept(","));
  }
  expect("]");
  return ids;
}

IterDomain* Parser::parseIdItem() {
  if (!isPunct("{", 1)) return parseIdRef();
  const Token& t = expectIdent("an IterDomain name");
  auto n = splitName(t.text);
  if (!n || !iterTypeOfLetter(n->first)) fail(t, "expected an IterDomain name, got '", t.text, "'");
  if (auto it = ids_.find(n->second); it != ids_.end()) {
    fail(t, "redefinition of IterDomain ", t.text, " (first defined at ", it->second.second->line,
         ":", it->second.second->col, ")");
  }
  IterType type = *iterTypeOfLetter(n->first);
  expect("{");
  Scalar* extent = parseIndexOperand("extent");
  Scalar* expanded = nullptr;
  Scalar* start = nullptr;
  ParallelType ptype = ParallelType::Serial;
  bool rf = false;
  while (accept(",")) {
    const Token& a = expectIdent("an IterDomain attribute");
    if (a.text == "expand" || a.text == "start") {
      expect("=");
      if (a.text == "expand" && type != IterType::Broadcast) {
        fail(a, "only broadcast IDs (b...) have an expanded extent");
      }
      (a.text == "expand" ? expanded : start) = parseIndexOperand(a.text.c_str());
    } else if (a.text == "rf") {
      rf = true;
    } else if (auto pt = parseParallelType(a.text)) {
      ptype = *pt;
    } else {
      fail(a, "unknown IterDomain attribute '", a.text,
           "' (expected a parallel type, rf, expand= or start=)");
    }
  }
  expect("}");
  if (start == nullptr) start = constant(0, kIndexType);
  auto* id = make<IterDomain>(n->second, start, extent, type, ParallelType::Serial, expanded, rf);
  located(t, [&] { id->parallelize(ptype); });
  ids_[n->second] = {id, &t};
  idNames_[id] = t.text;
  return id;
}

IterDomain* Parser::parseIdRef() {
  const Token& t = expectIdent("an IterDomain name");
  auto n = splitName(t.text);
  if (!n || !iterTypeOfLetter(n->first)) fail(t, "expected an IterDomain name, got '", t.text, "'");
  auto it = ids_.find(n->second);
  if (it == ids_.end()) fail(t, "undefined IterDomain ", t.text);
  IterDomain* id = it->second.first;
  if (id->iterType() != *iterTypeOfLetter(n->first)) {
    fail(t, t.text, " names ", idNames_.at(id), ", a ", iterTypeName(id->iterType()),
         " IterDomain; write ", idNames_.at(id));
  }
  return id;
}

DeviceMesh Parser::parseMesh(const Token& key) {
  std::vector<int64_t> devices;
  std::vector<int64_t> shape;  // learned from the first list at each depth
  auto list = [&](auto&& self, size_t depth) -> void {
    const Token& open = peek();
    expect("[");
    if (depth >= 3) fail(open, "a device mesh has at most 3 axes (DIDx, DIDy, DIDz)");
    int64_t n = 0;
    const bool nested = isPunct("[");
    if (!isPunct("]")) {
      do {
        if (nested) {
          self(self, depth + 1);
        } else {
          devices.push_back(parseInt());
        }
        ++n;
      } while (accept(","));
    }
    if (shape.size() <= depth) shape.resize(depth + 1, -1);
    if (shape[depth] < 0) shape[depth] = n;
    if (shape[depth] != n) {
      fail(open, "the lists of a device mesh must have equal lengths: ", n, " vs ", shape[depth]);
    }
    expect("]");
  };
  list(list, 0);
  try {
    return devices.empty() ? DeviceMesh() : DeviceMesh(std::move(devices), std::move(shape));
  } catch (const UserError& e) {
    fail(key, e.reason());
  }
}

Contiguity Parser::parseContiguity() {
  Contiguity c;
  expect("[");
  if (!isPunct("]")) {
    do {
      const Token& t = next();
      if (t.text == "t" || t.text == "f") {
        c.push_back(t.text == "t");
      } else if (t.text == "-") {
        c.push_back(std::nullopt);
      } else {
        fail(t, "expected a contiguity flag (t, f or -), got '", t.text, "'");
      }
    } while (accept(","));
  }
  expect("]");
  return c;
}

DataType Parser::parseDtype() {
  const Token& t = expectIdent("a data type");
  auto d = parseDataType(t.text);
  if (!d) fail(t, "unknown data type '", t.text, "'");
  return *d;
}

int64_t Parser::parseInt() {
  const Token& t = next();
  int64_t v = 0;
  auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (t.kind != Kind::Number || res.ec != std::errc() || res.ptr != t.text.data() + t.text.size()) {
    fail(t, "expected an integer, got '", t.text, "'");
  }
  return v;
}

std::optional<ScalarValue> Parser::parseLiteral() {
  const Token& t = peek();
  if (t.kind == Kind::Number) {
    next();
    bool is_float = t.text.find_first_of(".eE") != std::string::npos;
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (!is_float) {
      int64_t v = 0;
      auto res = std::from_chars(b, e, v);
      if (res.ec != std::errc() || res.ptr != e) fail(t, "bad integer literal '", t.text, "'");
      return ScalarValue(v);
    }
    double v = 0;
    auto res = std::from_chars(b, e, v);
    if (res.ec != std::errc() || res.ptr != e) fail(t, "bad number literal '", t.text, "'");
    return ScalarValue(v);
  }
  if (t.kind == Kind::Ident) {
    if (t.text == "true" || t.text == "false") {
      next();
      return ScalarValue(t.text == "true");
    }
    if (t.text == "inf" || t.text == "nan") {
      next();
      return ScalarValue(t.text == "inf" ? std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::quiet_NaN());
    }
  }
  if (isPunct("-") && peek(1).kind == Kind::Ident && peek(1).text == "inf") {
    next();
    next();
    return ScalarValue(-std::numeric_limits<double>::infinity());
  }
  return std::nullopt;
}

DataType Parser::plainType(const ScalarValue& v) {
  return std::holds_alternative<bool>(v)      ? DataType::Bool
         : std::holds_alternative<int64_t>(v) ? DataType::Int64
                                              : DataType::Float64;
}

Scalar* Parser::parseScalarOperand() {
  const Token& t = peek();
  if (auto v = parseLiteral()) return constant(*v, plainType(*v));
  if (t.kind != Kind::Ident) fail(t, "expected a scalar, got '", t.text, "'");
  if (auto d = parseDataType(t.text); d && isPunct("(", 1)) {
    next();
    next();
    const Token& lt = peek();
    auto v = parseLiteral();
    if (!v) fail(lt, "expected a literal, got '", lt.text, "'");
    if (isComplexType(*d)) return parseComplexConstant(lt, *v, *d);
    DataType plain = plainType(*v);
    bool ok = isFloatingType(*d)
                  ? plain != DataType::Bool
                  : (isIntegralType(*d) ? plain == DataType::Int64 : plain == DataType::Bool);
    if (!ok) fail(lt, "literal ", lt.text, " is not a valid ", dataTypeName(*d), " constant");
    if (isFloatingType(*d) && plain == DataType::Int64) {
      v = ScalarValue(double(std::get<int64_t>(*v)));
    }
    checkRange(lt, *v, *d);
    expect(")");
    return constant(*v, *d);
  }
  Val* v = lookupVal(t);
  if (!v->isA<Scalar>()) fail(t, "expected a scalar, got tensor ", t.text);
  next();
  return v->as<Scalar>();
}

Scalar* Parser::parseComplexConstant(const Token& re_tok, const ScalarValue& re, DataType dtype) {
  auto part = [&](const Token& t, const ScalarValue& v) -> double {
    if (const auto* i = std::get_if<int64_t>(&v)) return double(*i);
    if (const auto* x = std::get_if<double>(&v)) return *x;
    fail(t, "literal ", t.text, " is not a part of a ", dataTypeName(dtype), " constant");
  };
  const double real = part(re_tok, re);
  double imag = 0.0;
  if (accept(",")) {
    const Token& it = peek();
    auto v = parseLiteral();
    if (!v)
      fail(it, "expected the imaginary part of a ", dataTypeName(dtype), " constant, got '",
           it.text, "'");
    imag = part(it, *v);
  }
  expect(")");
  return constant(std::complex<double>(real, imag), dtype);
}

Scalar* Parser::parseIndexOperand(const char* what) {
  const Token& t = peek();
  Scalar* s = parseScalarOperand();
  if (!isIntegralType(s->dtype())) {
    fail(t, what, " must be an integer scalar, got ", dataTypeName(s->dtype()));
  }
  return s;
}

Val* Parser::lookupVal(const Token& t) {
  auto n = splitName(t.text);
  if (n && n->first == 'T') {
    if (auto it = tensors_.find(n->second); it != tensors_.end()) return it->second.first;
  } else if (n && n->first == 's') {
    if (auto it = scalars_.find(n->second); it != scalars_.end()) return it->second.first;
  } else {
    fail(t, "expected a tensor or scalar name, got '", t.text, "'");
  }
  fail(t, "undefined name ", t.text);
}

Arg Parser::parseArg() {
  Arg a;
  if (peek().kind == Kind::Ident && isPunct("=", 1)) {
    a.key = next().text;
    next();
  }
  a.tok = &peek();
  if (isPunct("[")) {
    next();
    std::vector<bool> flags;
    std::vector<Scalar*> scalars;
    const bool boolean = peek().text == "true" || peek().text == "false";
    if (!isPunct("]")) {
      do {
        if (!boolean) {
          // Integer scalars (index offsets, extents): a plain literal is an i64 constant.
          const Token& t = peek();
          auto v = parseLiteral();
          Scalar* s = v ? constant(*v, plainType(*v)) : parseScalarOperand();
          if (!isIntegralType(s->dtype())) {
            fail(t, "expected an integer scalar in the list, got '", t.text, "'");
          }
          scalars.push_back(s);
          continue;
        }
        const Token& f = next();
        if (f.text != "true" && f.text != "false") {
          fail(f, "expected true or false, got '", f.text, "'");
        }
        flags.push_back(f.text == "true");
      } while (accept(","));
    }
    expect("]");
    if (boolean || scalars.empty()) a.flags = std::move(flags);
    if (!boolean) a.scalars = std::move(scalars);
    return a;
  }
  auto n = peek().kind == Kind::Ident ? splitName(peek().text) : std::nullopt;
  if (n && n->first == 'T') {
    a.val = lookupVal(next());
    return a;
  }
  if (auto d = parseDataType(peek().text); d && peek().kind == Kind::Ident && !isPunct("(", 1)) {
    next();
    a.dtype = d;
    return a;
  }
  if (auto v = parseLiteral()) {
    a.literal = *v;
    a.val = constant(*v, plainType(*v));
    return a;
  }
  a.val = parseScalarOperand();
  return a;
}

void Parser::adopt(Arg& a, DataType c, std::string_view op, const Val* from) {
  if (!a.literal || a.val == nullptr || a.val->dtype() == c) return;
  const DataType plain = a.val->dtype();
  const bool fits = isFloatingType(c) || isComplexType(c) || plain == DataType::Bool ||
                    (plain == DataType::Int64 && isIntegralType(c));
  if (!fits) {
    fail(*a.tok, "the literal ", a.tok->text, " is not a value of ", dataTypeName(c),
         ", the dtype ", op, " computes in here (",
         from != nullptr ? "that of " + from->toString() + "; " : std::string(),
         plain == DataType::Int64 ? "write true or false)" : "cast the other operands first)");
  }
  ScalarValue v = *a.literal;
  if (isFloatingType(c) && plain == DataType::Int64) v = double(std::get<int64_t>(v));
  checkRange(*a.tok, v, c);
  fusion_->removeVal(a.val);
  a.val = constant(v, c);
}

void Parser::checkRange(const Token& t, const ScalarValue& v, DataType dtype) {
  const auto* i = std::get_if<int64_t>(&v);
  if (!isIntegralType(dtype) || integerBits(dtype) == 64 || i == nullptr) return;
  // Signed types take their range; unsigned ones theirs and the negative values of the same
  // width, which wrap (u8(-1) is 255). A u64 literal is any int64: its bits (u64(-1) is 2^64 - 1).
  const int bits = integerBits(dtype);
  const int64_t lo = -(int64_t(1) << (bits - 1));
  const int64_t hi = isUnsignedType(dtype) ? (int64_t(1) << bits) - 1 : -lo - 1;
  if (*i < lo || *i > hi) {
    fail(t, "the literal ", t.text, " is out of the range of ", dataTypeName(dtype));
  }
}

const Token& Parser::verifyLocation(const std::string& msg) {
  // The verifier names the offending tensor first (T3: ...); point at its declaration.
  for (size_t i = 0; i + 1 < msg.size(); ++i) {
    if (msg[i] != 'T' || !std::isdigit((unsigned char)msg[i + 1])) continue;
    if (i > 0 && std::isalnum((unsigned char)msg[i - 1])) continue;
    int64_t n = 0;
    std::from_chars(msg.data() + i + 1, msg.data() + msg.size(), n);
    if (auto it = tensors_.find(n); it != tensors_.end()) return *it->second.second;
  }
  return toks_.front();
}

}  // namespace text

std::unique_ptr<Fusion> parseFusion(std::string_view text, std::string_view filename) {
  return text::Parser(text, filename).run();
}
std::unique_ptr<Fusion> parseFusionFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "cannot open fusion file '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseFusion(ss.str(), path);
}

}  // namespace loom::ir
