// SPDX-License-Identifier: Apache-2.0
// The argument checks the Communicator's collectives share (collective_checks.h).
#include "multidevice/collective_checks.h"

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::multidevice::detail {

void checkTensor(const char* what, const char* name, const Tensor& t) {
  LOOM_CHECK(t.defined(), what, ": ", name, " is an undefined tensor");
  LOOM_CHECK(t.isContiguous(), what, ": ", name, " ", describe(t), " has strides [",
             join(t.strides()), "]; collectives need contiguous tensors (strides [",
             join(Tensor::contiguousStrides(t.sizes())), "])");
}

void checkSameDevice(const char* what, const char* a_name, const Tensor& a, const char* b_name,
                     const Tensor& b) {
  LOOM_CHECK(a.device() == b.device(), what, ": ", a_name, " ", describe(a), " and ", b_name, " ",
             describe(b),
             " are on different devices; a collective's tensors are all on the host "
             "or all on one GPU");
}

void checkSameDtype(const char* what, const char* a_name, const Tensor& a, const char* b_name,
                    const Tensor& b) {
  LOOM_CHECK(a.dtype() == b.dtype(), what, ": ", b_name, " ", describe(b), " has dtype ", b.dtype(),
             ", expected ", a_name, "'s dtype ", a.dtype());
}

void checkInputOutput(const char* what, const Tensor& input, const Tensor& output) {
  checkTensor(what, "input", input);
  checkTensor(what, "output", output);
  checkSameDtype(what, "input", input, "output", output);
  checkSameDevice(what, "input", input, "output", output);
}

bool overlap(const Tensor& a, const Tensor& b) {
  auto begin = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); };
  if (bytesOf(a) == 0 || bytesOf(b) == 0) return false;
  return begin(a) < begin(b) + bytesOf(b) && begin(b) < begin(a) + bytesOf(a);
}

int64_t memberPosition(const char* what, const char* role, int64_t r, const Team& team) {
  for (size_t i = 0; i < team.size(); ++i) {
    if (team[i] == r) return int64_t(i);
  }
  LOOM_THROW(what, ": ", role, " ", r, " is not in team [", join(team), "]; ", role,
             " is a world rank of the team");
}

}  // namespace loom::multidevice::detail
