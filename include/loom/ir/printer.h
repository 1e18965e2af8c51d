// SPDX-License-Identifier: Apache-2.0
// The printer of Loom's text form (.fus): writes a whole fusion so that parseFusion rebuilds it.
//
// Names are renumbered canonically in print order (tensors T0.., IterDomains i0/r1/b2/u3..,
// symbolic scalars s0..), so the text depends only on the fusion's structure and
// print(parse(print(f))) == print(f). The grammar is in docs/text-format.md.
#pragma once

#include <string>

namespace loom::ir {

class Fusion;

/// The .fus text of `fusion`: inputs, outputs, scalars, tensors with their domains and
/// transforms, and the math exprs in Fusion::exprs() order.
std::string printFusion(const Fusion& fusion);

}  // namespace loom::ir
