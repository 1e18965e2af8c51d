// SPDX-License-Identifier: Apache-2.0
// Statement, Val and Expr basics.
#include "loom/ir/base.h"

#include "loom/ir/fusion.h"
#include "loom/support/strings.h"

namespace loom::ir {

std::string_view nodeKindName(NodeKind kind) {
  switch (kind) {
#define LOOM_NODE_NAME(name) \
  case NodeKind::name:       \
    return #name;
    LOOM_FOR_EACH_VAL_NODE(LOOM_NODE_NAME)
    LOOM_FOR_EACH_EXPR_NODE(LOOM_NODE_NAME)
#undef LOOM_NODE_NAME
  }
  return "?";
}

bool Val::isFusionInput() const { return fusion() != nullptr && fusion()->isInput(this); }
bool Val::isFusionOutput() const { return fusion() != nullptr && fusion()->isOutput(this); }

void Expr::replaceInput(Val* old_input, Val* new_input) {
  LOOM_ASSERT(old_input != nullptr && new_input != nullptr);
  LOOM_ASSERT(old_input->kind() == new_input->kind(), "replacing ", old_input->toString(),
              " by a node of another kind, ", new_input->toString());
  Fusion* f = fusion();
  if (f != nullptr) f->unwireExpr(this);
  for (auto& in : inputs_) {
    if (in == old_input) in = new_input;
  }
  if (f != nullptr) f->wireExpr(this);
}

std::string Expr::toString() const {
  std::vector<std::string> outs, ins;
  for (auto* o : outputs_) outs.push_back(o->toString());
  for (auto* i : inputs_) ins.push_back(i->toString());
  return join(outs) + " = " + opName() + "(" + join(ins) + ")";
}

}  // namespace loom::ir
