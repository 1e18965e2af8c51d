// SPDX-License-Identifier: Apache-2.0
// The .fus lexer.
#include "ir/text_lexer.h"

#include <cctype>

#include "loom/support/error.h"

namespace loom::ir::text {

std::string location(std::string_view filename, int line, int col) {
  return std::string(filename) + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
}

std::vector<Token> tokenize(std::string_view text, std::string_view filename) {
  std::vector<Token> out;
  size_t i = 0;
  int line = 1;
  int col = 1;
  auto isDigit = [&](size_t k) { return k < text.size() && std::isdigit((unsigned char)text[k]); };
  auto push = [&](Token::Kind kind, size_t begin, size_t end) {
    out.push_back({kind, std::string(text.substr(begin, end - begin)), line, col});
    col += int(end - begin);
    i = end;
  };
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      out.push_back({Token::Kind::Newline, "\\n", line, col});
      ++i;
      ++line;
      col = 1;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      ++col;
    } else if (c == '#' || (c == '/' && i + 1 < text.size() && text[i + 1] == '/')) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (std::isalpha((unsigned char)c) || c == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum((unsigned char)text[j]) || text[j] == '_')) ++j;
      push(Token::Kind::Ident, i, j);
    } else if (std::isdigit((unsigned char)c) || (c == '-' && isDigit(i + 1))) {
      size_t j = i + 1;
      while (isDigit(j)) ++j;
      if (j < text.size() && text[j] == '.') {
        ++j;
        while (isDigit(j)) ++j;
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
        if (isDigit(k)) {
          j = k;
          while (isDigit(j)) ++j;
        }
      }
      push(Token::Kind::Number, i, j);
    } else if (c == '"') {
      std::string value;
      size_t j = i + 1;
      while (j < text.size() && text[j] != '"' && text[j] != '\n') {
        if (text[j] == '\\' && j + 1 < text.size() && (text[j + 1] == '"' || text[j + 1] == '\\')) {
          ++j;
        }
        value += text[j++];
      }
      if (j >= text.size() || text[j] != '"') {
        std::string msg = location(filename, line, col) + "a string that does not end on its line";
        throw UserError(msg, msg);
      }
      out.push_back({Token::Kind::String, std::move(value), line, col});
      col += int(j + 1 - i);
      i = j + 1;
    } else if (std::string_view("()[]{},=:-").find(c) != std::string_view::npos) {
      push(Token::Kind::Punct, i, i + 1);
    } else {
      std::string msg =
          location(filename, line, col) + "unexpected character '" + std::string(1, c) + "'";
      throw UserError(msg, msg);
    }
  }
  if (out.empty() || out.back().kind != Token::Kind::Newline) {
    out.push_back({Token::Kind::Newline, "\\n", line, col});
  }
  out.push_back({Token::Kind::End, "end of file", line, col});
  return out;
}

}  // namespace loom::ir::text
