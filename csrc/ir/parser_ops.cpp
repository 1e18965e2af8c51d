// SPDX-License-Identifier: Apache-2.0
// The .fus parser's calls: "op(args)" on a math line becomes the expr whose outputs the line
// declares, after the checks each op applies to its arguments (parser_impl.h, Parser::Call).
#include <algorithm>

#include "ir/parser_impl.h"
#include "ir/verify_exprs.h"
#include "loom/ir/dispatch.h"

namespace loom::ir::text {

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
                           c.val(pos[1]), c.val(pos[2]), c.scalarArg("init_avg"),
                           c.scalarArg("init_m2"), c.scalarArg("init_n"));
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
  } else if (name == "set" || name == "segment_set" || name == "tma_copy") {
    c.need(1, 1, {});
    return make<LoadStoreOp>(none,
                             name == "tma_copy" ? LoadStoreOpType::TmaCopy : LoadStoreOpType::Set,
                             c.tensorOut(0), c.tensorIn(pos[0]), name == "segment_set");
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
    const bool shifted = c.kw.count("index_offset") != 0;
    c.need(0, 1,
           shifted ? std::vector<std::string>{"start", "step", "index_offset"}
                   : std::vector<std::string>{"start", "step"});
    c.adoptKey("start", out_dtype, out0);
    c.adoptKey("step", out_dtype, out0);
    c.adoptKey("index_offset", kIndexType, nullptr);
    return make<IotaOp>(none, c.tensorOut(0), c.typedScalarArg("start"), c.typedScalarArg("step"),
                        shifted ? c.scalarArg("index_offset") : nullptr);
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
  } else if (name == "sdpfa_fwd" || name == "sdpfa_bwd") {
    const bool fwd = name == "sdpfa_fwd";
    c.need(fwd ? 3 : 6, fwd ? 2 : 3, {"dropout_p", "is_causal", "scale", "seed", "offset"});
    c.adoptKey("dropout_p", DataType::Float64, nullptr);
    c.adoptKey("is_causal", DataType::Bool, nullptr);
    c.adoptKey("scale", DataType::Float64, nullptr);
    c.adoptKey("seed", DataType::Int64, nullptr);
    c.adoptKey("offset", DataType::Int64, nullptr);
    Scalar* p = c.scalarArg("dropout_p");
    Scalar* causal = c.scalarArg("is_causal");
    Scalar* scale = c.scalarArg("scale");
    Scalar* seed = c.scalarArg("seed");
    Scalar* offset = c.scalarArg("offset");
    if (fwd) {
      return make<SdpaFwdOp>(none, c.tensorOut(0), c.tensorOut(1), c.tensorIn(pos[0]),
                             c.tensorIn(pos[1]), c.tensorIn(pos[2]), p, causal, scale, seed,
                             offset);
    }
    return make<SdpaBwdOp>(none, c.tensorOut(0), c.tensorOut(1), c.tensorOut(2), c.tensorIn(pos[0]),
                           c.tensorIn(pos[1]), c.tensorIn(pos[2]), c.tensorIn(pos[3]),
                           c.tensorIn(pos[4]), c.tensorIn(pos[5]), p, causal, scale, seed, offset);
  } else if (name == "uniform" || name == "normal") {
    const bool normal = name == "normal";
    const char* p0 = normal ? "mean" : "low";
    const char* p1 = normal ? "std" : "high";
    // A block of a larger draw (a device's shard) names both lists or neither.
    const bool block = c.kw.count("index_offsets") != 0 || c.kw.count("global_extents") != 0;
    std::vector<std::string> keys{"seed", "offset", p0, p1};
    if (block) keys.insert(keys.end(), {"index_offsets", "global_extents"});
    c.need(0, 1, keys);
    c.adoptKey("seed", DataType::Int64, nullptr);
    c.adoptKey("offset", DataType::Int64, nullptr);
    c.adoptKey(p0, DataType::Float64, nullptr);
    c.adoptKey(p1, DataType::Float64, nullptr);
    std::vector<Scalar*> offsets, extents;
    if (block) {
      offsets = c.indexListArg("index_offsets");
      extents = c.indexListArg("global_extents");
      if (offsets.size() != extents.size()) {
        fail(*c.kw.at("global_extents").tok, name, " has ", offsets.size(),
             " index offsets but ", extents.size(), " global extents (one each per dim)");
      }
    }
    return make<RngOp>(none, c.tensorOut(0), normal ? RngOpType::Normal : RngOpType::Uniform,
                       c.scalarArg("seed"), c.scalarArg("offset"), c.scalarArg(p0),
                       c.scalarArg(p1), std::move(offsets), std::move(extents));
  }
  return nullptr;
}

}  // namespace loom::ir::text
