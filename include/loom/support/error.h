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

/// A user error that names an index out of range (a dim, an axis): Python reports it as an
/// IndexError that is also a UserError (nvFuser code catches RuntimeError, torch code IndexError).
class UserIndexError : public UserError {
  using UserError::UserError;
};

/// A user error that is a wrong kind of argument (a string where a tensor goes, a list entry that
/// is not an int): Python reports it as a TypeError that is also a UserError, as nvFuser's
/// bindings raise TypeError for an argument of the wrong type.
class UserTypeError : public UserError {
  using UserError::UserError;
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
[[noreturn]] void throwUserIndexError(const char* file, int line, const std::string& message);
[[noreturn]] void throwUserTypeError(const char* file, int line, const std::string& message);
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

/// LOOM_CHECK for an index out of range (UserIndexError).
#define LOOM_CHECK_INDEX(cond, ...)                                                    \
  do {                                                                                 \
    if (!(cond)) [[unlikely]] {                                                        \
      ::loom::detail::throwUserIndexError(__FILE__, __LINE__,                          \
                                          ::loom::detail::concat(__VA_ARGS__));        \
    }                                                                                  \
  } while (0)

/// LOOM_CHECK for an argument of the wrong kind (UserTypeError).
#define LOOM_CHECK_TYPE(cond, ...)                                                     \
  do {                                                                                 \
    if (!(cond)) [[unlikely]] {                                                        \
      ::loom::detail::throwUserTypeError(__FILE__, __LINE__,                           \
                                         ::loom::detail::concat(__VA_ARGS__));         \
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
