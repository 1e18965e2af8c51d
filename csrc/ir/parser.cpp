// SPDX-License-Identifier: Apache-2.0
// The .fus parser: one line at a time, building raw IR nodes as it goes.
//
// Names must be defined before they are used, except in the `inputs:` / `outputs:` lines, which
// are resolved at the end. A tensor declaration opens a block: the `root` / `allocation` /
// `loop` lines and Split/Merge lines that follow belong to it, and the TensorView is built when
// the next scalar, tensor or math line (or the end of the file) closes the block, because a
// TensorDomain needs all four domains at once.
#include "loom/ir/parser.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "ir/text_lexer.h"
#include "ir/verify_exprs.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/fusion.h"
#include "loom/ir/verifier.h"
#include "loom/support/strings.h"

namespace loom::ir {
namespace {

using text::Token;
using Kind = Token::Kind;

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

// One argument of a call: a value, a dtype name, or a list of booleans.
struct Arg {
  std::string key;  // empty for positional arguments
  const Token* tok;
  Val* val = nullptr;
  std::optional<ScalarValue> literal;  // a plain literal (2, 0.5, true): it takes the op's dtype
  std::optional<DataType> dtype;
  std::optional<std::vector<bool>> flags;
};

struct PendingTensor {
  int64_t number;
  const Token* tok;
  DataType dtype;
  MemoryType memory;
  std::vector<IterDomain*> root, logical, allocation, loop;
  std::optional<Contiguity> contiguity, alloc_contiguity;
  DeviceMesh mesh;
  int64_t ca = 0, mpp = 0;
  bool has_loop = false;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename)
      : filename_(filename), toks_(text::tokenize(text, filename)) {
    fusion_ = std::make_unique<Fusion>();
    // Constants get names above every scalar number in the text, so names stay unique.
    for (const Token& t : toks_) {
      auto n = t.kind == Kind::Ident ? splitName(t.text) : std::nullopt;
      if (n && n->first == 's') next_const_ = std::max(next_const_, n->second + 1);
    }
  }

  std::unique_ptr<Fusion> run() {
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

 private:
  // ---- tokens and errors
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool isPunct(const char* p, size_t k = 0) const {
    return peek(k).kind == Kind::Punct && peek(k).text == p;
  }
  bool accept(const char* p) {
    if (!isPunct(p)) return false;
    next();
    return true;
  }
  const Token& expect(const char* p) {
    if (!isPunct(p)) fail(peek(), "expected '", p, "', got '", peek().text, "'");
    return next();
  }
  const Token& expectIdent(const char* what) {
    if (peek().kind != Kind::Ident) fail(peek(), "expected ", what, ", got '", peek().text, "'");
    return next();
  }
  void expectEndOfLine() {
    if (peek().kind != Kind::Newline) {
      fail(peek(), "expected the end of the line, got '", peek().text, "'");
    }
    next();
  }

  template <typename... Args>
  [[noreturn]] void fail(const Token& t, const Args&... args) const {
    std::string msg = text::location(filename_, t.line, t.col) + detail::concat(args...);
    throw UserError(msg, msg);
  }

  // Runs `f`, reporting a UserError it throws at `t`.
  template <typename F>
  void located(const Token& t, F&& f) const {
    try {
      f();
    } catch (const UserError& e) {
      fail(t, e.message());
    }
  }

  template <typename T, typename... A>
  T* make(std::optional<int64_t> name, A&&... args) {
    T* node = new T(std::forward<A>(args)...);
    fusion_->registerStatement(node, name);
    return node;
  }

  // ---- lines
  void parseLine() {
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

  void parseIoLine() {
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

  void parseScalarDecl() {
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

  void parseTensorDecl() {
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

  void parseDomainLine() {
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

  void parseTransformLine() {
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
      fail(first, op.text, " has ", n_out, " output", n_out == 1 ? "" : "s", ", got ",
           outs.size());
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

  void parseMathLine() {
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

  // ---- the block of the tensor being declared
  void finishTensor() {
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
      fail(t, "contig= on the declaration line is for the logical domain; with an allocation "
              "domain, write contig= on the allocation line");
    }
    Contiguity contig;
    if (p.alloc_contiguity) contig = *p.alloc_contiguity;
    if (p.contiguity) contig = *p.contiguity;
    TensorView* tv = nullptr;
    located(t, [&] {
      auto* td = make<TensorDomain>(std::nullopt, p.root, p.logical, p.allocation, p.loop,
                                    contig);
      tv = make<TensorView>(p.number, td, p.dtype, p.memory);
    });
    tv->setDeviceMesh(p.mesh);
    tv->setComputeAtPosition(p.ca);
    tv->setMaxProducerPosition(p.mpp);
    tensors_[p.number] = {tv, &t};
  }

  // Every ID of `to` must be reachable from `from` through the Split/Merge lines seen so far.
  void checkDerived(const Token& t, const std::vector<IterDomain*>& from,
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

  // ---- IterDomains
  std::vector<IterDomain*> parseIdList() {
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

  // A reference `i3`, or a declaration `i3{extent, attrs...}`.
  IterDomain* parseIdItem() {
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

  IterDomain* parseIdRef() {
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

  // mesh=[0, 1] or, for an N-D mesh, nested lists of equal length: mesh=[[0, 1], [2, 3]].
  DeviceMesh parseMesh(const Token& key) {
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
        fail(open, "the lists of a device mesh must have equal lengths: ", n, " vs ",
             shape[depth]);
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

  Contiguity parseContiguity() {
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

  // ---- scalars and values
  DataType parseDtype() {
    const Token& t = expectIdent("a data type");
    auto d = parseDataType(t.text);
    if (!d) fail(t, "unknown data type '", t.text, "'");
    return *d;
  }

  int64_t parseInt() {
    const Token& t = next();
    int64_t v = 0;
    auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (t.kind != Kind::Number || res.ec != std::errc() ||
        res.ptr != t.text.data() + t.text.size()) {
      fail(t, "expected an integer, got '", t.text, "'");
    }
    return v;
  }

  Scalar* constant(ScalarValue v, DataType dtype) { return make<Scalar>(next_const_++, dtype, v); }

  // A plain literal: 4, -1, 2.5, 1e-05, true, false, inf, -inf, nan.
  std::optional<ScalarValue> parseLiteral() {
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

  static DataType plainType(const ScalarValue& v) {
    return std::holds_alternative<bool>(v)      ? DataType::Bool
           : std::holds_alternative<int64_t>(v) ? DataType::Int64
                                                : DataType::Float64;
  }

  // A literal, a typed literal such as f32(0.5), or a scalar name.
  Scalar* parseScalarOperand() {
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
      bool ok = isFloatingType(*d) ? plain != DataType::Bool
                                   : (isIntegralType(*d) ? plain == DataType::Int64
                                                         : plain == DataType::Bool);
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

  // The rest of c64(re, im) after its first literal `re`: the imaginary part is optional
  // (c64(2.0) is 2 + 0i). Each part is a number (integers are read as doubles).
  Scalar* parseComplexConstant(const Token& re_tok, const ScalarValue& re, DataType dtype) {
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

  Scalar* parseIndexOperand(const char* what) {
    const Token& t = peek();
    Scalar* s = parseScalarOperand();
    if (!isIntegralType(s->dtype())) {
      fail(t, what, " must be an integer scalar, got ", dataTypeName(s->dtype()));
    }
    return s;
  }

  // A tensor or scalar name (does not consume the token).
  Val* lookupVal(const Token& t) {
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

  Arg parseArg() {
    Arg a;
    if (peek().kind == Kind::Ident && isPunct("=", 1)) {
      a.key = next().text;
      next();
    }
    a.tok = &peek();
    if (isPunct("[")) {
      next();
      std::vector<bool> flags;
      if (!isPunct("]")) {
        do {
          const Token& f = next();
          if (f.text != "true" && f.text != "false") {
            fail(f, "expected true or false, got '", f.text, "'");
          }
          flags.push_back(f.text == "true");
        } while (accept(","));
      }
      expect("]");
      a.flags = std::move(flags);
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

  // A plain literal argument takes dtype `c`, the dtype its op computes in (as a Python number
  // does in torch), where that keeps its value: an integer literal becomes a float, a bool
  // literal anything, but a fractional literal is no integer, an integer no bool, and an integer
  // outside i32 no i32. Other arguments keep their dtype (the op's rule checks them).
  // `from` is the value whose dtype `c` is (the output, or what a comparison compares with);
  // null for the Bool operands of logical ops and conditions.
  void adopt(Arg& a, DataType c, std::string_view op, const Val* from) {
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

  // An integer constant must fit its dtype (i32: the kernel and the reference would otherwise
  // disagree on how it narrows).
  void checkRange(const Token& t, const ScalarValue& v, DataType dtype) {
    const auto* i = std::get_if<int64_t>(&v);
    if (dtype != DataType::Int32 || i == nullptr) return;
    if (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max()) {
      fail(t, "the literal ", t.text, " is out of the range of i32");
    }
  }

  // Parses "op(args)" and builds the expr whose outputs are `outs`.
  struct Call;
  void buildCall(const std::vector<Val*>& outs, const Token& line_tok);
  Expr* buildMathOp(Call& c);
  Expr* buildShapeOp(Call& c);
  int64_t dimArg(Call& c);
  bool boolArg(Call& c, const std::string& key);

  const Token& verifyLocation(const std::string& msg) {
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

  std::string filename_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::unique_ptr<Fusion> fusion_;
  int64_t next_const_ = 0;
  std::map<int64_t, std::pair<TensorView*, const Token*>> tensors_;
  std::map<int64_t, std::pair<Scalar*, const Token*>> scalars_;
  std::map<int64_t, std::pair<IterDomain*, const Token*>> ids_;
  std::unordered_map<const IterDomain*, std::string> idNames_;
  std::optional<PendingTensor> pending_;
  std::vector<std::pair<const Token*, bool>> io_;
  std::vector<std::pair<const Token*, const Token*>> aliases_;  // (output, input) of "T3 into T0"
};

// One call's arguments, with the checks and conversions every op applies to them.
struct Parser::Call {
  Parser& p;
  const Token& op;
  const Token& line;
  const std::vector<Val*>& outs;
  std::vector<Arg> pos;
  std::map<std::string, Arg> kw;

  const std::string& name() const { return op.text; }

  void need(size_t n_in, size_t n_out, const std::vector<std::string>& keys) const {
    if (pos.size() != n_in) {
      p.fail(op, name(), " takes ", n_in, " operand", n_in == 1 ? "" : "s", ", got ", pos.size());
    }
    if (outs.size() != n_out) {
      p.fail(line, name(), " has ", n_out, " output", n_out == 1 ? "" : "s", ", got ",
             outs.size());
    }
    for (const auto& [k, a] : kw) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        p.fail(*a.tok, "unknown argument '", k, "' of ", name());
      }
    }
    for (const auto& k : keys) {
      if (!kw.count(k)) p.fail(op, name(), " needs the argument ", k, "=");
    }
  }
  Val* val(const Arg& a) const {
    if (a.val == nullptr) p.fail(*a.tok, "expected a tensor or scalar operand of ", name());
    return a.val;
  }
  TensorView* tensorIn(const Arg& a) const {
    Val* v = val(a);
    if (!v->isA<TensorView>()) p.fail(*a.tok, name(), " needs a tensor operand");
    return v->as<TensorView>();
  }
  TensorView* tensorOut(size_t i) const {
    if (!outs[i]->isA<TensorView>()) p.fail(line, name(), " outputs tensors, not scalars");
    return outs[i]->as<TensorView>();
  }
  Scalar* scalarArg(const std::string& key) const {
    const Arg& a = kw.at(key);
    if (a.val == nullptr || !a.val->isA<Scalar>()) p.fail(*a.tok, key, " must be a scalar");
    return a.val->as<Scalar>();
  }
  // A scalar keyword argument that must have the output's dtype (pad value, full value, iota
  // start and step).
  Scalar* typedScalarArg(const std::string& key) const {
    Scalar* v = scalarArg(key);
    if (v->dtype() != outs[0]->dtype()) {
      p.fail(*kw.at(key).tok, key, " of ", name(), " is ", dataTypeName(v->dtype()), " but ",
             line.text, " is declared ", dataTypeName(outs[0]->dtype()));
    }
    return v;
  }
  std::vector<bool> flagsArg() const {
    const Arg& a = kw.at("flags");
    if (!a.flags) p.fail(*a.tok, "flags must be a list such as [true, false]");
    return *a.flags;
  }
  // Plain literals take the dtype the op computes in (Parser::adopt).
  void adopt(Arg& a, DataType c, const Val* from) { p.adopt(a, c, name(), from); }
  void adoptAll(std::vector<Arg>& args, DataType c, const Val* from) {
    for (Arg& a : args) adopt(a, c, from);
  }
  void adoptKey(const std::string& key, DataType c, const Val* from) {
    if (auto it = kw.find(key); it != kw.end()) adopt(it->second, c, from);
  }
};

void Parser::buildCall(const std::vector<Val*>& outs, const Token& line_tok) {
  const Token& op = expectIdent("an op name");
  expect("(");
  Call c{*this, op, line_tok, outs, {}, {}};
  if (!isPunct(")")) {
    do {
      Arg a = parseArg();
      if (a.key.empty()) {
        if (!c.kw.empty()) fail(*a.tok, "positional operand after a keyword argument");
        c.pos.push_back(std::move(a));
      } else {
        if (c.kw.count(a.key)) fail(*a.tok, "argument '", a.key, "' given twice");
        std::string key = a.key;
        c.kw.emplace(key, std::move(a));
      }
    } while (accept(","));
  }
  expect(")");
  Expr* made = buildMathOp(c);
  if (made == nullptr) made = buildShapeOp(c);
  if (made == nullptr) fail(op, "unknown op '", op.text, "'");
  if (auto problem = mathExprProblem(made)) fail(op, *problem);
}

// Pointwise ops, reductions and Welford; null for other names.
Expr* Parser::buildMathOp(Call& c) {
  const std::string& name = c.name();
  auto& pos = c.pos;
  const auto& outs = c.outs;
  const Token& line_tok = c.line;
  std::optional<int64_t> none;
  const DataType out_dtype = outs.empty() ? DataType::Float64 : outs[0]->dtype();
  const Val* out0 = outs.empty() ? nullptr : outs[0];
  if (name == "cast") {
    c.need(2, 1, {});
    if (!pos[1].dtype) fail(*pos[1].tok, "the second operand of cast is a data type");
    if (*pos[1].dtype != outs[0]->dtype()) {
      fail(*pos[1].tok, "cast to ", dataTypeName(*pos[1].dtype), " but ", line_tok.text,
           " is declared ", dataTypeName(outs[0]->dtype()));
    }
    return make<UnaryOp>(none, UnaryOpType::Cast, outs[0], c.val(pos[0]));
  } else if (auto u = parseUnaryOpType(name)) {
    c.need(1, 1, {});
    if (*u == UnaryOpType::LogicalNot) {
      c.adoptAll(pos, DataType::Bool, nullptr);
    } else if (!isUnaryTest(*u)) {
      c.adoptAll(pos, out_dtype, out0);
    }
    return make<UnaryOp>(none, *u, outs[0], c.val(pos[0]));
  } else if (auto b = parseBinaryOpType(name)) {
    c.need(2, 1, {});
    if (*b == BinaryOpType::LogicalAnd || *b == BinaryOpType::LogicalOr) {
      c.adoptAll(pos, DataType::Bool, nullptr);
    } else if (!isPredicateOp(*b)) {
      c.adoptAll(pos, out_dtype, out0);
    } else if (pos[0].literal.has_value() != pos[1].literal.has_value()) {
      // A comparison's literal takes the dtype of the value it is compared with.
      const Val* other = c.val(pos[pos[0].literal ? 1 : 0]);
      c.adoptAll(pos, other->dtype(), other);
    }
    return make<BinaryOp>(none, *b, outs[0], c.val(pos[0]), c.val(pos[1]));
  } else if (auto t = parseTernaryOpType(name)) {
    c.need(3, 1, {});
    if (*t == TernaryOpType::Where) c.adopt(pos[0], DataType::Bool, nullptr);
    for (size_t i = *t == TernaryOpType::Where ? 1 : 0; i < pos.size(); ++i) {
      c.adopt(pos[i], out_dtype, out0);
    }
    return make<TernaryOp>(none, *t, outs[0], c.val(pos[0]), c.val(pos[1]), c.val(pos[2]));
  } else if (auto r = parseReductionOpType(name)) {
    c.need(1, 1, {"init"});
    c.adoptKey("init", out_dtype, out0);
    return make<ReductionOp>(none, *r, c.scalarArg("init"), c.tensorOut(0), c.tensorIn(pos[0]));
  } else if (auto scan = parseScanOpName(name)) {
    c.need(1, 1, {"dim"});
    const Arg& d = c.kw.at("dim");
    auto dim =
        d.val != nullptr && d.val->isA<Scalar>() ? d.val->as<Scalar>()->constInt() : std::nullopt;
    if (!dim || !isIntegralType(d.val->dtype()) || *dim < 0) {
      fail(*d.tok, "dim must be a non-negative integer constant");
    }
    fusion_->removeVal(d.val);  // the constant is an attribute, not a node of the fusion
    return make<ScanOp>(none, *scan, c.tensorOut(0), c.tensorIn(pos[0]), *dim);
  } else if (name == "welford") {
    c.need(3, 3, {"init_avg", "init_m2", "init_n"});
    c.adopt(pos[1], outs[1]->dtype(), outs[1]);
    c.adopt(pos[2], outs[2]->dtype(), outs[2]);
    c.adoptKey("init_avg", outs[0]->dtype(), outs[0]);
    c.adoptKey("init_m2", outs[1]->dtype(), outs[1]);
    c.adoptKey("init_n", outs[2]->dtype(), outs[2]);
    return make<WelfordOp>(none, c.tensorOut(0), c.tensorOut(1), c.tensorOut(2), c.val(pos[0]),
                           c.val(pos[1]), c.val(pos[2]), c.scalarArg("init_avg"), c.scalarArg("init_m2"),
                           c.scalarArg("init_n"));
  } else if (name == "matmul") {
    c.need(2, 1, {});
    return make<MatmulOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), c.tensorIn(pos[1]));
  } else if (name == "linear") {
    c.need(pos.size() == 3 ? 3 : 2, 1, {});  // the bias is optional
    return make<LinearOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), c.tensorIn(pos[1]),
                          pos.size() == 3 ? c.tensorIn(pos[2]) : nullptr);
  }
  return nullptr;
}

// The `dim=` attribute of cat and the indexing ops: a non-negative integer constant, which is
// an attribute, not a node of the fusion.
int64_t Parser::dimArg(Call& c) {
  const Arg& d = c.kw.at("dim");
  auto dim =
      d.val != nullptr && d.val->isA<Scalar>() ? d.val->as<Scalar>()->constInt() : std::nullopt;
  if (!dim || !isIntegralType(d.val->dtype()) || *dim < 0) {
    fail(*d.tok, "dim must be a non-negative integer constant");
  }
  fusion_->removeVal(d.val);
  return *dim;
}

// A `key=true` / `key=false` attribute (argsort's descending, topk's largest): a Bool constant,
// which is an attribute, not a node of the fusion.
bool Parser::boolArg(Call& c, const std::string& key) {
  const Arg& a = c.kw.at(key);
  const auto* s = a.val != nullptr ? a.val->dynCast<Scalar>() : nullptr;
  const bool* v = s != nullptr && s->isConst() ? std::get_if<bool>(&s->value()) : nullptr;
  if (v == nullptr) fail(*a.tok, key, " must be true or false");
  const bool value = *v;
  fusion_->removeVal(a.val);
  return value;
}

// Shape ops, pad, cat, the indexing ops and the factories; null for other names.
Expr* Parser::buildShapeOp(Call& c) {
  const std::string& name = c.name();
  auto& pos = c.pos;
  std::optional<int64_t> none;
  const DataType out_dtype = c.outs.empty() ? DataType::Float64 : c.outs[0]->dtype();
  const Val* out0 = c.outs.empty() ? nullptr : c.outs[0];
  if (name == "broadcast" || name == "squeeze") {
    c.need(1, 1, {"flags"});
    if (name == "broadcast") {
      return make<BroadcastOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), c.flagsArg());
    } else {
      return make<SqueezeOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), c.flagsArg());
    }
  } else if (name == "expand") {
    c.need(1, 1, {});
    return make<ExpandOp>(none, c.tensorOut(0), c.tensorIn(pos[0]));
  } else if (name == "reshape") {
    c.need(1, 1, {});
    return make<ReshapeOp>(none, c.tensorOut(0), c.tensorIn(pos[0]));
  } else if (name == "set" || name == "segment_set") {
    c.need(1, 1, {});
    return make<LoadStoreOp>(none, LoadStoreOpType::Set, c.tensorOut(0), c.tensorIn(pos[0]),
                             name == "segment_set");
  } else if (name == "slice") {
    c.need(1, 1, {});
    return make<SliceOp>(none, c.tensorOut(0), c.tensorIn(pos[0]));
  } else if (name == "pad") {
    c.need(1, 1, {"value"});
    c.adoptKey("value", out_dtype, out0);
    return make<PadOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), c.typedScalarArg("value"));
  } else if (name == "cat") {
    if (pos.empty()) fail(c.op, "cat takes at least one operand, got 0");
    c.need(pos.size(), 1, {"dim"});
    std::vector<TensorView*> ins;
    for (const Arg& a : pos) ins.push_back(c.tensorIn(a));
    return make<CatOp>(none, c.tensorOut(0), ins, dimArg(c));
  } else if (name == "full") {
    c.need(0, 1, {"value"});
    c.adoptKey("value", out_dtype, out0);
    return make<FullOp>(none, c.tensorOut(0), c.typedScalarArg("value"));
  } else if (name == "iota") {
    c.need(0, 1, {"start", "step"});
    c.adoptKey("start", out_dtype, out0);
    c.adoptKey("step", out_dtype, out0);
    return make<IotaOp>(none, c.tensorOut(0), c.typedScalarArg("start"), c.typedScalarArg("step"));
  } else if (name == "index_select" || name == "gather" || name == "take_along_axis") {
    c.need(2, 1, {"dim"});
    const int64_t dim = dimArg(c);
    TensorView* lookup = c.tensorIn(pos[0]);
    TensorView* index = c.tensorIn(pos[1]);
    if (name == "index_select")
      return make<IndexSelectOp>(none, c.tensorOut(0), lookup, index, dim);
    return make<GatherOp>(none, c.tensorOut(0), lookup, index, dim, name == "take_along_axis");
  } else if (name == "argsort") {
    c.need(1, 1, {"dim", "descending"});
    const int64_t dim = dimArg(c);
    return make<ArgsortOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), dim, boolArg(c, "descending"));
  } else if (name == "topk") {
    c.need(2, 2, {"dim", "largest"});
    const int64_t dim = dimArg(c);
    const bool largest = boolArg(c, "largest");
    c.adopt(pos[1], DataType::Int64, nullptr);
    Val* k = c.val(pos[1]);
    if (!k->isA<Scalar>()) fail(*pos[1].tok, "k of topk must be a scalar");
    return make<TopKOp>(none, c.tensorOut(0), c.tensorOut(1), c.tensorIn(pos[0]), k->as<Scalar>(),
                        dim, largest);
  } else if (name == "scatter" || name == "scatter_add") {
    c.need(3, 1, {"dim"});
    const int64_t dim = dimArg(c);
    return make<ScatterOp>(none, c.tensorOut(0), c.tensorIn(pos[0]), c.tensorIn(pos[1]),
                           c.tensorIn(pos[2]), dim, name == "scatter_add");
  } else if (name == "uniform" || name == "normal") {
    const bool normal = name == "normal";
    const char* p0 = normal ? "mean" : "low";
    const char* p1 = normal ? "std" : "high";
    c.need(0, 1, {"seed", "offset", p0, p1});
    c.adoptKey("seed", DataType::Int64, nullptr);
    c.adoptKey("offset", DataType::Int64, nullptr);
    c.adoptKey(p0, DataType::Float64, nullptr);
    c.adoptKey(p1, DataType::Float64, nullptr);
    return make<RngOp>(none, c.tensorOut(0), normal ? RngOpType::Normal : RngOpType::Uniform,
                       c.scalarArg("seed"), c.scalarArg("offset"), c.scalarArg(p0),
                       c.scalarArg(p1));
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<Fusion> parseFusion(std::string_view text, std::string_view filename) {
  return Parser(text, filename).run();
}

std::unique_ptr<Fusion> parseFusionFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "cannot open fusion file '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseFusion(ss.str(), path);
}

}  // namespace loom::ir
