// SPDX-License-Identifier: Apache-2.0
// The inputs `loom eval` and `loom run` make up: --sizes parsed and checked against the fusion,
// random tensors of the sizes it gives.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/eval/compare.h"
#include "loom/ir/fusion.h"

namespace loom::tools {

/// A strict integer (the whole text, in range), else a UserError "WHAT must be an integer".
int64_t parseInteger(const std::string& text, const std::string& what);
/// A strict number, else a UserError "WHAT must be a number".
double parseNumber(const std::string& text, const std::string& what);

/// "s0=4,s1=8" -> {s0: "4", s1: "8"}; a malformed item or a name given twice is a UserError.
std::map<std::string, std::string> parseSizes(const std::string& spec);

/// One argument per fusion input: tensors of the sizes the constants and `sizes` give, filled
/// with random values from `seed`; scalar inputs from `sizes`. UserErrors: a symbolic size or a
/// scalar input `sizes` does not give, a value that is not a number of the needed kind, a
/// negative size, a size whose element or byte count overflows, and, before anything is
/// allocated, sizes the fusion contradicts (what eval::ExpressionEvaluator::bindInputs checks: a
/// dim the exprs line up with a constant extent or with another input's dim, given another
/// size). Names the inputs do not use are ignored (a test gives one map for several fusions);
/// the commands refuse them first (checkSizeNames).
std::vector<eval::Argument> randomInputs(const ir::Fusion& fusion,
                                         const std::map<std::string, std::string>& sizes,
                                         uint64_t seed);

/// UserError for a name in `sizes` that is neither a symbolic size of a tensor input nor a
/// scalar input of `fusion`, listing the names it has: on the command line a typo would
/// otherwise leave the size it meant unset, or be silently unused.
void checkSizeNames(const ir::Fusion& fusion, const std::map<std::string, std::string>& sizes);

/// The check's tolerance for an output of `output_numel` elements of `dtype`: the elements
/// reduced into each are estimated as the widest input's over the output's (at least 1).
eval::Tolerance outputTolerance(const std::vector<eval::Argument>& inputs, DataType dtype,
                                int64_t output_numel);

}  // namespace loom::tools
