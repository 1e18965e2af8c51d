// SPDX-License-Identifier: Apache-2.0
// Builds the text of Loom's exceptions.
#include "loom/support/error.h"

#include <cstring>

namespace loom::detail {
namespace {

// Paths are shortened to start at the project's top folders so messages stay readable.
std::string_view shortPath(const char* file) {
  std::string_view f(file);
  for (std::string_view top : {"csrc/", "include/", "tests/", "tools/"}) {
    auto pos = f.rfind(top);
    if (pos != std::string_view::npos) return f.substr(pos);
  }
  return f;
}

}  // namespace

void throwUserError(const char* file, int line, const std::string& message) {
  throw UserError(concat(shortPath(file), ":", line, ": ", message), message);
}

void throwUserIndexError(const char* file, int line, const std::string& message) {
  throw UserIndexError(concat(shortPath(file), ":", line, ": ", message), message);
}

void throwUserTypeError(const char* file, int line, const std::string& message) {
  throw UserTypeError(concat(shortPath(file), ":", line, ": ", message), message);
}

void throwInternalError(const char* file, int line, const char* cond, const std::string& message) {
  std::string text = concat("internal error (", cond, ")");
  if (!message.empty()) text += ": " + message;
  text += ". This is a bug in Loom; please report it with the fusion that triggered it.";
  throw InternalError(concat(shortPath(file), ":", line, ": ", text), text,
                      message.empty() ? std::string(cond) : message);
}

void throwUnavailable(const char* file, int line, const std::string& message) {
  throw UnavailableError(concat(shortPath(file), ":", line, ": ", message), message);
}

}  // namespace loom::detail
