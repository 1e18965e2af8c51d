// SPDX-License-Identifier: Apache-2.0
// The .fus parser's state and its steps, private to the parser. parser.cpp reads the lines,
// tensor blocks, IterDomains and scalars; parser_ops.cpp turns one "op(args)" call into its expr.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/text_lexer.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/fusion.h"
#include "loom/support/strings.h"

namespace loom::ir::text {

// One argument of a call: a value, a dtype name, a list of booleans or a list of scalars (an
// empty list is both).
struct Arg {
  std::string key;  // empty for positional arguments
  const Token* tok;
  Val* val = nullptr;
  std::optional<ScalarValue> literal;  // a plain literal (2, 0.5, true): it takes the op's dtype
  std::optional<DataType> dtype;
  std::optional<std::vector<bool>> flags;
  std::optional<std::vector<Scalar*>> scalars;
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
  Parser(std::string_view text, std::string_view filename);

  /// Parses the whole text; the fusion is verified before it is returned.
  std::unique_ptr<Fusion> run();

 private:
  using Kind = Token::Kind;

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
  void parseLine();

  void parseIoLine();
  void parseRequirementLine();

  void parseScalarDecl();

  void parseTensorDecl();

  void parseDomainLine();

  void parseTransformLine();

  void parseMathLine();

  // ---- the block of the tensor being declared
  void finishTensor();

  // Every ID of `to` must be reachable from `from` through the Split/Merge lines seen so far.
  void checkDerived(const Token& t, const std::vector<IterDomain*>& from,
                    const std::vector<IterDomain*>& to, const char* from_name, const char* to_name);

  // ---- IterDomains
  std::vector<IterDomain*> parseIdList();

  // A reference `i3`, or a declaration `i3{extent, attrs...}`.
  IterDomain* parseIdItem();

  IterDomain* parseIdRef();

  // mesh=[0, 1] or, for an N-D mesh, nested lists of equal length: mesh=[[0, 1], [2, 3]].
  DeviceMesh parseMesh(const Token& key);

  Contiguity parseContiguity();

  // ---- scalars and values
  DataType parseDtype();

  int64_t parseInt();

  Scalar* constant(ScalarValue v, DataType dtype) { return make<Scalar>(next_const_++, dtype, v); }

  // A plain literal: 4, -1, 2.5, 1e-05, true, false, inf, -inf, nan.
  std::optional<ScalarValue> parseLiteral();

  static DataType plainType(const ScalarValue& v);

  // A literal, a typed literal such as f32(0.5), or a scalar name.
  Scalar* parseScalarOperand();

  // The rest of c64(re, im) after its first literal `re`: the imaginary part is optional
  // (c64(2.0) is 2 + 0i). Each part is a number (integers are read as doubles).
  Scalar* parseComplexConstant(const Token& re_tok, const ScalarValue& re, DataType dtype);

  Scalar* parseIndexOperand(const char* what);

  // A tensor or scalar name (does not consume the token).
  Val* lookupVal(const Token& t);

  Arg parseArg();

  // A plain literal argument takes dtype `c`, the dtype its op computes in (as a Python number
  // does in torch), where that keeps its value: an integer literal becomes a float, a bool
  // literal anything, but a fractional literal is no integer, an integer no bool, and an integer
  // outside i32 no i32. Other arguments keep their dtype (the op's rule checks them).
  // `from` is the value whose dtype `c` is (the output, or what a comparison compares with);
  // null for the Bool operands of logical ops and conditions.
  void adopt(Arg& a, DataType c, std::string_view op, const Val* from);

  // An integer constant must fit its dtype (i32: the kernel and the reference would otherwise
  // disagree on how it narrows).
  void checkRange(const Token& t, const ScalarValue& v, DataType dtype);

  // Parses "op(args)" and builds the expr whose outputs are `outs`.
  struct Call;
  void buildCall(const std::vector<Val*>& outs, const Token& line_tok);
  Expr* buildMathOp(Call& c);
  Expr* buildShapeOp(Call& c);
  int64_t dimArg(Call& c);
  bool boolArg(Call& c, const std::string& key);

  const Token& verifyLocation(const std::string& msg);

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
      p.fail(line, name(), " has ", n_out, " output", n_out == 1 ? "" : "s", ", got ", outs.size());
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
  // A list of integer scalars ("index_offsets=[s3, 0]"); plain literals are i64 constants.
  std::vector<Scalar*> indexListArg(const std::string& key) const {
    const Arg& a = kw.at(key);
    if (!a.scalars) p.fail(*a.tok, key, " must be a list of integer scalars such as [s3, 0]");
    return *a.scalars;
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

}  // namespace loom::ir::text
