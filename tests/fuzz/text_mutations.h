// SPDX-License-Identifier: Apache-2.0
// Mutations of a case's text form that hold the .fus rules on dtypes and IterTypes to account
// (docs/text-format.md "Types" and "IterTypes of op outputs"; docs/testing.md "Hardening II").
// Each mutation edits the printed fusion in one place and states what must follow:
//
//   retype     a computed tensor not defined by a cast gets another dtype: the parser rejects it
//              with a UserError at its defining line that names it;
//   literal    a typed constant (f32(0.5)) gets another dtype: rejected at its line; or is
//              written plain (0.5): parsed to the same fusion (the literal takes the op's dtype);
//   broadcast  a new broadcast ID of a broadcast output is declared an iteration ID: rejected at
//              the broadcast's line;
//   cast       an unconsumed output cast from a bit-exact value casts to another dtype, or (in a
//              third of the cases without one) a new output casts a bit-exact tensor to another
//              dtype (NaN, infinities and values out of range included): accepted, and the
//              kernels give exactly the reference's values (saturation, wrapping, one rounding).
//
// The first three only parse; `cast` compiles and runs the mutated fusion.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fusion_generator.h"
#include "loom/exec/kernel_executor.h"

namespace loom::fuzz {

/// One mutation of a case's text, and what must follow from it.
struct TextMutation {
  std::string kind;         ///< retype, literal, broadcast, cast
  std::string description;  ///< what was changed, e.g. "T7: f32 -> i32"
  std::string text;         ///< the mutated fusion text
  bool expectAccepted = false;
  int errorLine = 0;       ///< for a rejection: the line the error must point at (1-based)
  std::string errorNames;  ///< for a rejection: a name the message must contain
  std::string sameAs;      ///< for an accepted literal: the text the parse must print as
  std::string castOutput;  ///< for `cast`: the retyped output's name
};

/// The mutations of `c` (printed as `fusion_text`) for its seed: up to one of each kind that
/// applies. Deterministic in the seed.
std::vector<TextMutation> textMutations(const FuzzCase& c, const std::string& fusion_text);

/// nullopt when the parser's response to `m` is what `m` expects; else what went wrong. Parses
/// only: an accepted `cast` mutation is run by runCastMutation.
std::optional<std::string> checkParse(const TextMutation& m);

/// Runs an accepted `cast` mutation through FusionExecutorCache (outputs poisoned) and compares
/// every output with the reference evaluator on the mutated fusion: the retyped output exactly,
/// the others with the case's tolerances. nullopt when they match; else the mismatch.
std::optional<std::string> runCastMutation(const FuzzCase& c, const TextMutation& m,
                                           const std::vector<eval::Argument>& args,
                                           exec::Backend backend);

}  // namespace loom::fuzz
