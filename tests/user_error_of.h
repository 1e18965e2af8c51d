// SPDX-License-Identifier: Apache-2.0
// The message of the UserError a call throws, "" when it throws none (other exceptions pass).
#pragma once

#include <functional>
#include <string>

#include "loom/support/error.h"

namespace loom::test {

inline std::string userErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace loom::test
