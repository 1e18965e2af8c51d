// SPDX-License-Identifier: Apache-2.0
// Python values as Loom's: ints, numbers and device arguments, each read in one place.
//
// Every binding that takes a Python int, a Python number or a device goes through these, so the
// rules are the same everywhere: an int that does not fit int64 and a device string that is not
// "cpu", "host", "cuda" or "cuda:N" are loom.UserErrors naming the argument (never a
// std::bad_cast from nb::cast or a std::invalid_argument from std::stoi). docs/python.md lists
// the rules for users.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "bindings.h"
#include "loom/ir/scalar.h"

namespace loom::python {

/// `h` as an int64: a Python int, or an integer with __index__ (a numpy integer), never a bool or
/// a tensor. UserError naming `what` (e.g. "split: the factor") when it is something else or does
/// not fit in 64 bits. With `index` >= 0, `what` is followed by it ("execute: input 3").
int64_t int64FromPython(nb::handle h, std::string_view what, int64_t index = -1);

/// A sequence of ints (a list, a tuple, ...), each read as int64FromPython does; an entry that is
/// not one is a UserError naming `what` and the entry ("define_tensor: shape entry 2").
std::vector<int64_t> int64ListFromPython(nb::handle h, std::string_view what);

/// `h` as a number: a bool, an int (int64), a float, or a numpy integer or float; std::monostate
/// when `h` is not a number (a tensor, a string, ...). An int that does not fit in 64 bits is a
/// UserError naming `what` (and `index`, as above).
ir::ScalarValue numberFromPython(nb::handle h, std::string_view what, int64_t index = -1);

/// Where a `device` argument says to run: the host backend, or a GPU (`gpu` is nullopt for a
/// plain "cuda": the caller picks).
struct DeviceArgument {
  bool cuda = false;
  std::optional<int> gpu;
};
/// Reads a device argument: "cpu" or "host", "cuda" or "cuda:N" (N decimal digits), a
/// non-negative int N (a GPU index), or an object whose str() is one of those (torch.device).
/// UserError naming `what` otherwise (e.g. "cuda:abc", "cuda:1x", an N past int).
DeviceArgument deviceFromPython(nb::handle device, std::string_view what);

}  // namespace loom::python
