// SPDX-License-Identifier: Apache-2.0
// The parser of Loom's text form (.fus): rebuilds a fusion from what printFusion writes.
//
// It creates raw IR nodes (TensorView, IterDomain, Split, Merge, UnaryOp, ...), sets inputs and
// outputs, and runs ir::verify. Every problem in the text is a UserError whose message starts
// with "file:line:col: ". The grammar is in docs/text-format.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace loom::ir {

class Fusion;

/// Parses a whole fusion. Nodes keep the numbers written in the text (T3 is TensorView 3).
std::unique_ptr<Fusion> parseFusion(std::string_view text,
                                    std::string_view filename = "<string>");

/// Reads and parses a .fus file; a missing or unreadable file is a UserError naming it.
std::unique_ptr<Fusion> parseFusionFile(const std::string& path);

}  // namespace loom::ir
