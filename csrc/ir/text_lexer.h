// SPDX-License-Identifier: Apache-2.0
// Tokens of the .fus text form. Private to the parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::ir::text {

struct Token {
  enum class Kind { Ident, Number, Punct, String, Newline, End };
  Kind kind;
  std::string text;
  int line;
  int col;
};

/// Splits `text` into tokens. A String is "..." on one line with \" and \\ for a quote and a
/// backslash; its token's text is what it says. Comments (`#` or `//` to the end of the line,
/// outside strings) are dropped;
/// newlines are tokens because each declaration or expr is one line. A character that starts
/// no token is a UserError at its position.
std::vector<Token> tokenize(std::string_view text, std::string_view filename);

/// "file:line:col: " for messages.
std::string location(std::string_view filename, int line, int col);

}  // namespace loom::ir::text
