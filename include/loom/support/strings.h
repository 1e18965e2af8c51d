// SPDX-License-Identifier: Apache-2.0
// Small string helpers used across layers.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

/// Joins the elements of a range, streamed with operator<<, with a separator.
template <typename Range>
std::string join(const Range& range, std::string_view sep = ", ") {
  std::ostringstream os;
  bool first = true;
  for (const auto& x : range) {
    if (!first) os << sep;
    first = false;
    os << x;
  }
  return os.str();
}

/// Splits on a single character; empty pieces are kept.
std::vector<std::string> split(std::string_view s, char sep);

/// Removes leading and trailing whitespace.
std::string_view trim(std::string_view s);

}  // namespace loom
