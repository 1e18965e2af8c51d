// SPDX-License-Identifier: Apache-2.0
// The options of one execute() call: nvFuser's _enable_options and _disable_options mapped onto
// Loom's. Enable names are the LOOM_DUMP names (with their "(arg,...)" form), the LOOM_DEBUG
// names and poison_outputs (outputs NaN-filled before each launch, so elements a kernel does not
// write show); disable names are the optional passes LOOM_DISABLE takes, and nvFuser's names of
// the three Loom has too (expr_simplify, index_hoist, predicate_elimination). Any other name is
// a UserError listing these.
#pragma once

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/support/options.h"

namespace loom::python {

struct CallOptions {
  DumpOptions dump;
  DebugOptions debug;
  std::unordered_set<std::string> disabled;  ///< pass names (aliases resolved)
  bool poisonOutputs = false;
  /// The names, sorted and normalized: calls with equal keys share compiled kernels.
  std::string key;
  bool empty() const { return key.empty(); }
};

CallOptions parseCallOptions(const std::vector<std::string>& enable,
                             const std::vector<std::string>& disable);

/// The names parseCallOptions takes: (enable names, disable names), for docs and errors.
std::pair<std::vector<std::string>, std::vector<std::string>> callOptionNames();

}  // namespace loom::python
