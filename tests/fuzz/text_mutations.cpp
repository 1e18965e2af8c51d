// SPDX-License-Identifier: Apache-2.0
// Text mutations of a case (see text_mutations.h).
#include "fuzz/text_mutations.h"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "fuzz/fuzz_rng.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/support/error.h"

namespace loom::fuzz {
namespace {

constexpr const char* kFile = "mutated.fus";

// The types before issue 36's integer types (the first nine of kAllDataTypes): a mutation of a
// recorded seed picks the same type as when it was recorded.
const std::vector<DataType> kDtypes(std::begin(kAllDataTypes), std::begin(kAllDataTypes) + 9);

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string joinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// Where each tensor is declared and defined in the printed text (0-based line numbers).
struct TextIndex {
  std::map<int64_t, size_t> declaration;
  std::map<int64_t, size_t> definition;
  std::vector<std::string> lines;
};

TextIndex indexText(const std::string& text) {
  TextIndex ix;
  ix.lines = splitLines(text);
  static const std::regex decl("^T([0-9]+)\\s*:");
  static const std::regex def("^T[0-9]+(\\s*,\\s*T[0-9]+)*\\s*=");
  static const std::regex name("T([0-9]+)");
  for (size_t i = 0; i < ix.lines.size(); ++i) {
    const std::string& l = ix.lines[i];
    std::smatch m;
    if (std::regex_search(l, m, decl)) {
      ix.declaration[std::stoll(m[1])] = i;
    } else if (std::regex_search(l, m, def)) {
      const std::string outs = m.str(0);
      for (auto it = std::sregex_iterator(outs.begin(), outs.end(), name);
           it != std::sregex_iterator(); ++it) {
        ix.definition[std::stoll((*it)[1])] = i;
      }
    }
  }
  return ix;
}

// The declaration line of T<n> with its dtype replaced.
std::string retypedDeclaration(const std::string& line, DataType to) {
  static const std::regex dtype("^(T[0-9]+\\s*:\\s*)([a-z0-9]+)");
  return std::regex_replace(line, dtype, "$1" + std::string(dataTypeName(to)),
                            std::regex_constants::format_first_only);
}

bool definedByCast(const ir::TensorView* tv) {
  const auto* u = tv->definition() == nullptr ? nullptr : tv->definition()->dynCast<ir::UnaryOp>();
  return u != nullptr && u->opType() == ir::UnaryOpType::Cast;
}

// A tensor whose definition has a tensor among the values it computes from (not a where's
// condition): retyping it breaks that line's dtype rule whatever its consumers are.
bool retypeRejects(const ir::TensorView* tv) {
  const ir::Expr* d = tv->definition();
  if (d == nullptr || definedByCast(tv)) return false;
  const auto* t = d->dynCast<ir::TernaryOp>();
  const size_t first = t != nullptr && t->opType() == ir::TernaryOpType::Where ? 1 : 0;
  for (size_t i = first; i < d->inputs().size(); ++i) {
    if (d->input(i)->isA<ir::TensorView>()) return true;
  }
  return false;
}

std::optional<TextMutation> retype(const ir::Fusion& f, const TextIndex& ix, Rng& rng) {
  std::vector<ir::TensorView*> candidates;
  for (ir::TensorView* tv : f.allTvs()) {
    if (retypeRejects(tv) && ix.declaration.count(tv->name()) && ix.definition.count(tv->name())) {
      candidates.push_back(tv);
    }
  }
  if (candidates.empty()) return std::nullopt;
  ir::TensorView* tv = rng.pick(candidates);
  DataType to = tv->dtype();
  while (to == tv->dtype()) to = rng.pick(kDtypes);
  TextMutation m;
  m.kind = "retype";
  m.description = tv->toString() + ": " + std::string(dataTypeName(tv->dtype())) + " -> " +
                  std::string(dataTypeName(to));
  std::vector<std::string> lines = ix.lines;
  const size_t d = ix.declaration.at(tv->name());
  lines[d] = retypedDeclaration(lines[d], to);
  m.text = joinLines(lines);
  m.errorLine = int(ix.definition.at(tv->name())) + 1;
  m.errorNames = tv->toString();
  return m;
}

std::optional<TextMutation> literal(const std::string& text, const TextIndex& ix, Rng& rng) {
  // Typed constants in math and scalar lines: f32(0.5), i32(3), bf16(-inf).
  static const std::regex typed("\\b(i32|i64|f16|bf16|f32|f64)\\(([^()]*)\\)");
  static const std::regex math_or_scalar("^(T[0-9]+(\\s*,\\s*T[0-9]+)*|s[0-9]+\\s*:[^=]*)\\s*=");
  struct Hit {
    size_t line;
    size_t pos, len;
    std::string dtype, value;
  };
  std::vector<Hit> hits;
  for (size_t i = 0; i < ix.lines.size(); ++i) {
    const std::string& l = ix.lines[i];
    if (!std::regex_search(l, math_or_scalar)) continue;
    for (auto it = std::sregex_iterator(l.begin(), l.end(), typed); it != std::sregex_iterator();
         ++it) {
      hits.push_back({i, size_t(it->position()), size_t(it->length()), (*it)[1], (*it)[2]});
    }
  }
  if (hits.empty()) return std::nullopt;
  const Hit& h = rng.pick(hits);
  TextMutation m;
  m.kind = "literal";
  std::vector<std::string> lines = ix.lines;
  std::string replacement;
  if (rng.chance(0.5)) {
    replacement = h.value;
    m.expectAccepted = true;
    m.sameAs = text;
  } else {
    static const std::vector<std::string> names = {"i32", "i64", "f16", "bf16", "f32", "f64"};
    std::string to = h.dtype;
    while (to == h.dtype) to = rng.pick(names);
    replacement = to + "(" + h.value + ")";
    m.errorLine = int(h.line) + 1;
  }
  m.description =
      "line " + std::to_string(h.line + 1) + ": " + h.dtype + "(" + h.value + ") -> " + replacement;
  lines[h.line].replace(h.pos, h.len, replacement);
  m.text = joinLines(lines);
  return m;
}

std::optional<TextMutation> broadcastId(const ir::Fusion& f, const std::string& text,
                                        const TextIndex& ix, Rng& rng) {
  struct Hit {
    const ir::TensorView* out;
    const ir::IterDomain* id;
  };
  std::vector<Hit> hits;
  for (ir::Expr* e : f.exprs()) {
    const auto* b = e->dynCast<ir::BroadcastOp>();
    if (b == nullptr || !ix.declaration.count(b->out()->name())) continue;
    const std::vector<ir::IterDomain*>& ids = b->out()->domain()->maybeRoot();
    for (size_t i = 0; i < ids.size() && i < b->isBroadcastDim().size(); ++i) {
      if (!b->isBroadcastDim()[i] || !ids[i]->isBroadcast() || ids[i]->hasExpandedExtent()) {
        continue;
      }
      // Named once in the whole text: only the declaration changes.
      const std::regex word("\\bb" + std::to_string(ids[i]->name()) + "\\b");
      auto n = std::distance(std::sregex_iterator(text.begin(), text.end(), word),
                             std::sregex_iterator());
      if (n == 1) hits.push_back({b->out(), ids[i]});
    }
  }
  if (hits.empty()) return std::nullopt;
  const Hit& h = rng.pick(hits);
  const std::string from = "b" + std::to_string(h.id->name());
  const std::string to = "i" + std::to_string(h.id->name());
  TextMutation m;
  m.kind = "broadcast";
  m.description = h.out->toString() + ": the new broadcast ID " + from + " declared " + to;
  std::vector<std::string> lines = ix.lines;
  std::string& decl = lines[ix.declaration.at(h.out->name())];
  decl = std::regex_replace(decl, std::regex("\\b" + from + "\\b"), to);
  m.text = joinLines(lines);
  m.errorLine = int(ix.definition.at(h.out->name())) + 1;
  m.errorNames = h.out->toString();
  return m;
}

std::optional<TextMutation> castTarget(const FuzzCase& c, const ir::Fusion& f, const TextIndex& ix,
                                       Rng& rng) {
  std::vector<ir::TensorView*> candidates;
  for (ir::TensorView* tv : f.allTvs()) {
    if (!definedByCast(tv) || !tv->uses().empty() || !tv->isFusionOutput()) continue;
    const ir::Val* in = tv->definition()->input(0);
    if (!in->isA<ir::TensorView>() || !c.exactTensors.count(in->toString())) continue;
    if (ix.declaration.count(tv->name()) && ix.definition.count(tv->name())) {
      candidates.push_back(tv);
    }
  }
  if (candidates.empty()) return std::nullopt;
  ir::TensorView* tv = rng.pick(candidates);
  DataType to = tv->dtype();
  while (to == tv->dtype()) to = rng.pick(kDtypes);
  TextMutation m;
  m.kind = "cast";
  m.expectAccepted = true;
  m.castOutput = tv->toString();
  m.description = tv->toString() + " = cast(" + tv->definition()->input(0)->toString() + ", " +
                  std::string(dataTypeName(to)) + ") instead of " +
                  std::string(dataTypeName(tv->dtype()));
  std::vector<std::string> lines = ix.lines;
  const size_t d = ix.declaration.at(tv->name());
  lines[d] = retypedDeclaration(lines[d], to);
  std::string& def = lines[ix.definition.at(tv->name())];
  def = std::regex_replace(def, std::regex(",\\s*[a-z0-9]+\\)\\s*$"),
                           ", " + std::string(dataTypeName(to)) + ")");
  m.text = joinLines(lines);
  return m;
}

// The text of an extent: a constant's value or a scalar's name (the parser kept the numbers).
std::string extentText(const ir::Scalar* s) {
  return s->isConst() ? ir::scalarValueToString(s->value(), s->dtype()) : s->toString();
}

// A new output T<n> = cast(T<k>, D) of a bit-exact tensor T<k>, for cases without an unconsumed
// cast to retype.
std::optional<TextMutation> addedCast(const FuzzCase& c, const ir::Fusion& f,
                                      const std::string& text, const TextIndex& ix, Rng& rng) {
  std::vector<ir::TensorView*> candidates;
  for (ir::TensorView* tv : f.allTvs()) {
    if (c.exactTensors.count(tv->toString()) && ix.declaration.count(tv->name())) {
      candidates.push_back(tv);
    }
  }
  if (candidates.empty() || ix.declaration.empty()) return std::nullopt;
  ir::TensorView* src = rng.pick(candidates);
  DataType to = src->dtype();
  while (to == src->dtype()) to = rng.pick(kDtypes);
  // Fresh numbers: past every tensor and every IterDomain of the text.
  int64_t tensor = ix.declaration.rbegin()->first + 1;
  int64_t id = 0;
  static const std::regex id_name("\\b[irbu]([0-9]+)\\b");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), id_name);
       it != std::sregex_iterator(); ++it) {
    id = std::max<int64_t>(id, std::stoll((*it)[1]) + 1);
  }
  std::string ids;
  for (const ir::IterDomain* d : ir::TensorDomain::noReductions(src->logical())) {
    ids += std::string(ids.empty() ? "" : ", ") +
           (d->isBroadcast()  ? "b"
            : d->isSymbolic() ? "u"
                              : "i") +
           std::to_string(id++) + "{" + extentText(d->extent());
    if (d->hasExpandedExtent()) ids += ", expand=" + extentText(d->expandedExtent());
    ids += "}";
  }
  const std::string name = "T" + std::to_string(tensor);
  const std::string dtype(dataTypeName(to));
  std::vector<std::string> lines = ix.lines;
  for (std::string& l : lines) {
    if (l.rfind("outputs:", 0) == 0) l += ", " + name;
  }
  // The declaration goes after the whole tensor section (a tensor's root, loop and transform
  // lines follow its declaration line), right before the first math line.
  size_t first_math = lines.size();
  for (const auto& [n, line] : ix.definition) first_math = std::min(first_math, line);
  lines.insert(lines.begin() + int64_t(first_math), name + " : " + dtype + " global [" + ids + "]");
  lines.push_back(name + " = cast(" + src->toString() + ", " + dtype + ")");
  TextMutation m;
  m.kind = "cast";
  m.expectAccepted = true;
  m.castOutput = name;
  m.description = "a new output " + name + " = cast(" + src->toString() + ", " + dtype + ")";
  m.text = joinLines(lines);
  return m;
}

}  // namespace

std::vector<TextMutation> textMutations(const FuzzCase& c, const std::string& fusion_text) {
  std::unique_ptr<ir::Fusion> f = ir::parseFusion(fusion_text, "case.fus");
  const TextIndex ix = indexText(fusion_text);
  Rng rng(deriveSeed(c.seed, 0x44545950));  // "DTYP"
  std::vector<TextMutation> out;
  if (auto m = retype(*f, ix, rng)) out.push_back(std::move(*m));
  if (auto m = literal(fusion_text, ix, rng)) out.push_back(std::move(*m));
  if (auto m = broadcastId(*f, fusion_text, ix, rng)) out.push_back(std::move(*m));
  if (auto m = castTarget(c, *f, ix, rng)) {
    out.push_back(std::move(*m));
  } else if (rng.chance(1.0 / 3)) {
    if (auto added = addedCast(c, *f, fusion_text, ix, rng)) out.push_back(std::move(*added));
  }
  return out;
}

std::optional<std::string> checkParse(const TextMutation& m) {
  try {
    std::unique_ptr<ir::Fusion> f = ir::parseFusion(m.text, kFile);
    if (!m.expectAccepted) return "accepted";
    if (!m.sameAs.empty() && ir::printFusion(*f) != m.sameAs) {
      return "parsed to another fusion:\n" + ir::printFusion(*f);
    }
    return std::nullopt;
  } catch (const UserError& e) {
    const std::string msg = e.message();
    if (m.expectAccepted) return "rejected: " + msg;
    static const std::regex where("^mutated\\.fus:([0-9]+):[0-9]+: ");
    std::smatch s;
    if (!std::regex_search(msg, s, where)) return "an error without a location: " + msg;
    if (std::stoi(s[1]) != m.errorLine) {
      return "rejected at line " + s.str(1) + " instead of " + std::to_string(m.errorLine) + ": " +
             msg;
    }
    if (!m.errorNames.empty() &&
        !std::regex_search(msg, std::regex("\\b" + m.errorNames + "\\b"))) {
      return "the message does not name " + m.errorNames + ": " + msg;
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string("rejected without a UserError: ") + e.what();
  }
}

std::optional<std::string> runCastMutation(const FuzzCase& c, const TextMutation& m,
                                           const std::vector<eval::Argument>& args,
                                           exec::Backend backend) {
  std::unique_ptr<ir::Fusion> f = ir::parseFusion(m.text, kFile);
  std::vector<Tensor> expected = eval::evaluateFusion(*f, args);
  runtime::RuntimeOptions ro;
  ro.backend = backend;
  ro.executor.poisonOutputs = true;
  runtime::FusionExecutorCache cache(std::move(f), ro);
  std::vector<Tensor> actual = cache.run(args);
  // The case's outputs, and an added cast last.
  if (actual.size() != expected.size() || actual.size() < c.outputs.size()) {
    return std::to_string(actual.size()) + " outputs, expected " + std::to_string(expected.size());
  }
  std::string problems;
  for (size_t i = 0; i < actual.size(); ++i) {
    const std::string name = i < c.outputs.size() ? c.outputs[i].name : m.castOutput;
    // The cast of a bit-exact value is a function of that value: no tolerance.
    eval::Tolerance tol = name == m.castOutput
                              ? eval::Tolerance{0.0, 0.0}
                              : outputTolerance(c, i, expected[i].dtype(), c.classValues);
    if (auto err = eval::expectClose(actual[i], expected[i], tol, name)) problems += *err + "\n";
  }
  if (problems.empty()) return std::nullopt;
  return problems;
}

}  // namespace loom::fuzz
