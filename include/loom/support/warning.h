// SPDX-License-Identifier: Apache-2.0
// Warnings: one line on stderr, for conditions Loom works around (a damaged or untrusted cache).
#pragma once

#include <string_view>

namespace loom {

/// Prints "loom: warning: <message>" as one line on stderr (one write, so lines from several
/// threads do not interleave).
void warn(std::string_view message);

/// Like warn, but only the first time this process sees exactly this message.
void warnOnce(std::string_view message);

}  // namespace loom
