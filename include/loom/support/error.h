// SPDX-License-Identifier: Apache-2.0
// Loom's two error channels: user errors (bad input, illegal schedules) and internal invariants.
//
//   LOOM_CHECK(cond, "tensor ", tv->name(), " has rank ", r, ", expected 3");   // -> UserError
//   LOOM_ASSERT(cond, "loop domain lost an ID");                               // -> InternalError
//
// Both throw; the message starts with the file:line of the failed check, then the text built from
// the arguments (streamed with operator<<). Internal errors add a request to report the bug.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace loom {

/// Base of every exception Loom throws.
class Error : public std::runtime_error {
 public:
  Error(std::string what, std::string message, std::string reason = {})
      : std::runtime_error(std::move(what)),
        message_(std::move(message)),
        reason_(reason.empty() ? message_ : std::move(reason)) {}
  /// The message without the "file:line: " prefix.
  const std::string& message() const { return message_; }
  /// Only the text the failed check was given (for an internal error: without the
  /// "internal error (cond)" and "please report" wrapping), for callers that re-report it.
  const std::string& reason() const { return reason_; }

 private:
  std::string message_;
  std::string reason_;
};

/// The caller did something wrong: wrong rank, dtype, axis, an illegal schedule, a bad file.
class UserError : public Error {
  using Error::Error;
};

/// Loom broke one of its own invariants; this is a bug in Loom.
class InternalError : public Error {
  using Error::Error;
};

/// A feature or platform capability is not available here (for example: no GPU driver).
class UnavailableError : public Error {
  using Error::Error;
};

namespace detail {

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (void)(os << ... << args);
  return os.str();
}

[[noreturn]] void throwUserError(const char* file, int line, const std::string& message);
[[noreturn]] void throwInternalError(const char* file, int line, const char* cond,
                                     const std::string& message);
[[noreturn]] void throwUnavailable(const char* file, int line, const std::string& message);

}  // namespace detail
}  // namespace loom

#define LOOM_CHECK(cond, ...)                                                          \
  do {                                                                                 \
    if (!(cond)) [[unlikely]] {                                                        \
      ::loom::detail::throwUserError(__FILE__, __LINE__,                               \
                                     ::loom::detail::concat(__VA_ARGS__));             \
    }                                                                                  \
  } while (0)

#define LOOM_ASSERT(cond, ...)                                                         \
  do {                                                                                 \
    if (!(cond)) [[unlikely]] {                                                        \
      ::loom::detail::throwInternalError(__FILE__, __LINE__, #cond,                    \
                                         ::loom::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                                  \
  } while (0)

/// Unconditional user error.
#define LOOM_THROW(...) \
  ::loom::detail::throwUserError(__FILE__, __LINE__, ::loom::detail::concat(__VA_ARGS__))

/// Unconditional internal error (unreachable code).
#define LOOM_UNREACHABLE(...)                                        \
  ::loom::detail::throwInternalError(__FILE__, __LINE__, "unreachable", \
                                     ::loom::detail::concat("" __VA_OPT__(, ) __VA_ARGS__))
