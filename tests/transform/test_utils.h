// SPDX-License-Identifier: Apache-2.0
// Helpers for transform tests: canonical text of a tensor's schedule and error capture.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "loom/ir/ir.h"
#include "loom/support/error.h"

namespace loom::transform::test {

using namespace loom::ir;

struct DescribeOptions {
  bool types = true;      ///< include IterTypes
  bool parallel = true;   ///< include parallel types
};

/// One ID as its transform history over positions of tv's root-or-logical domain, e.g.
/// "split(L1,2,outer).o{2:iter:DIDx}". Names of IDs do not appear, so two tensors with the same
/// schedule print the same.
inline std::string describeHistory(const TensorView* tv, const IterDomain* id) {
  const auto& start = tv->domain()->maybeRoot();
  std::string body;
  auto it = std::find(start.begin(), start.end(), id);
  Expr* def = id->definition();
  if (it != start.end() || def == nullptr) {
    body = it != start.end() ? "L" + std::to_string(it - start.begin()) : "?";
  } else if (auto* s = def->dynCast<Split>()) {
    auto f = s->factor()->constInt();
    body = "split(" + describeHistory(tv, s->in()) + "," + (f ? std::to_string(*f) : "?") + "," +
           (s->innerSplit() ? "inner" : "outer") + ")." + (s->outer() == id ? "o" : "i");
  } else {
    auto* m = def->as<Merge>();
    body = "merge(" + describeHistory(tv, m->outer()) + "," + describeHistory(tv, m->inner()) + ")";
  }
  return body;
}

inline std::string describeId(const TensorView* tv, const IterDomain* id, DescribeOptions o = {}) {
  std::string body = describeHistory(tv, id);
  auto e = id->extent()->constInt();
  body += "{" + (e ? std::to_string(*e) : std::string("?"));
  if (o.types) body += ":" + std::string(iterTypeName(id->iterType()));
  if (o.parallel) body += ":" + std::string(parallelTypeName(id->parallelType()));
  return body + "}";
}

inline std::string describe(const TensorView* tv, const std::vector<IterDomain*>& ids,
                            DescribeOptions o = {}) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    out += (i ? ", " : "") + describeId(tv, ids[i], o);
  }
  return out + "]";
}

inline std::string describeLoop(const TensorView* tv, DescribeOptions o = {}) {
  return describe(tv, tv->loop(), o);
}
inline std::string describeAllocation(const TensorView* tv, DescribeOptions o = {}) {
  return describe(tv, tv->maybeAllocation(), o);
}

/// Runs f and returns the UserError message ("" when nothing was thrown).
inline std::string userError(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.message();
  }
  return "";
}

inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace loom::transform::test
