// SPDX-License-Identifier: Apache-2.0
// The narration of `loom run` (narration.h).
#include "tools/loom/narration.h"

#include <fmt/format.h>

#include "loom/ir/ir.h"
#include "loom/support/strings.h"
#include "loom/tensor/tensor.h"

namespace loom::tools {
namespace {

// "the average of welford(T0)" for an output of a Welford, else empty.
std::string welfordRole(const ir::Val* v) {
  const ir::Expr* def = v->definition();
  if (def == nullptr || !def->isA<ir::WelfordOp>()) return "";
  const auto* w = def->as<ir::WelfordOp>();
  const std::string of = fmt::format("welford({})", w->inAvg()->toString());
  if (v == w->outAvg()) return "the average of " + of;
  if (v == w->outM2()) return "the m2 (sum of squared deviations) of " + of;
  return "the count of " + of;
}

}  // namespace

std::string backendLine(const exec::BackendChoice& choice, bool from_flag) {
  const std::string_view name = exec::backendName(choice.backend);
  if (from_flag) return fmt::format("backend: {} (--backend {})", name, name);
  return fmt::format("backend: {} ({})", name, choice.reason);
}

std::string inputsLine(const ir::Fusion& fusion, const std::vector<eval::Argument>& inputs,
                       uint64_t seed) {
  std::vector<std::string> items;
  for (size_t i = 0; i < inputs.size() && i < fusion.inputs().size(); ++i) {
    const std::string name = fusion.inputs()[i]->toString();
    if (const auto* t = std::get_if<Tensor>(&inputs[i])) {
      items.push_back(fmt::format("{} [{}] {}", name, join(t->sizes()), dataTypeName(t->dtype())));
    } else {
      items.push_back(fmt::format("{} ({})", name, eval::describeArgument(inputs[i])));
    }
  }
  return fmt::format("inputs: {}, random from seed {}", join(items), seed);
}

std::string describeOutput(const ir::Val* out) {
  const ir::Expr* def = out->definition();
  if (def == nullptr) return fmt::format("{}, a fusion input returned as is", out->toString());
  if (std::string role = welfordRole(out); !role.empty()) {
    return fmt::format("{} = {}", out->toString(), role);
  }
  std::vector<std::string> operands;
  std::vector<std::string> wheres;
  for (const ir::Val* in : def->inputs()) {
    operands.push_back(in->toString());
    if (std::string role = welfordRole(in); !role.empty()) {
      wheres.push_back(fmt::format("{} is {}", in->toString(), role));
    }
  }
  std::string text = fmt::format("{} = {}({})", out->toString(), def->opName(), join(operands));
  if (!wheres.empty()) text += ", where " + join(wheres);
  return text;
}

}  // namespace loom::tools
