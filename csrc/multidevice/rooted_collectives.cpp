// SPDX-License-Identifier: Apache-2.0
// The Communicator's rooted collectives (communicator.h): gather, scatter and reduce. Who passes
// which tensor says who takes part, so the checks here are mostly about roles: the root passes its
// own tensor, every other member the tensor of its side, and the root's count of senders or
// receivers follows from whether it passes that side's tensor too.
#include <cstdint>

#include "loom/multidevice/communicator.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "multidevice/collective_checks.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {

using detail::checkInputOutput;
using detail::checkTensor;
using detail::memberPosition;
using detail::overlap;

namespace {

// The words of one rooted collective's roles, for its messages.
struct Roles {
  const char* what;        // "gather"
  const char* sideTensor;  // what a sender or receiver passes: "input"
  const char* sideVerb;    // what it does: "sends"
  const char* sideNoun;    // "sender"
  const char* rootTensor;  // what the root always passes: "output"
  const char* rootVerb;    // what the root does with it: "receives the gathered tensor"
};

constexpr Roles kGather = {"gather", "input",  "sends",
                           "sender", "output", "receives the gathered tensor"};
constexpr Roles kScatter = {"scatter",  "output", "receives",
                            "receiver", "input",  "holds the tensor to scatter"};
constexpr Roles kReduce = {"reduce", "input",  "sends",
                           "sender", "output", "receives the reduction"};

// Where the caller stands in a rooted collective, once its pointers passed checkRoles.
struct Standing {
  int64_t root = 0;            // the root's position
  bool isRoot = false;         // the caller is the root
  bool rootTakesPart = false;  // on the root: it passes the side tensor too
  int64_t parts = 0;           // on the root: the number of senders (receivers)
};

// Checks that the root passes `rootTensor` and every other member `sideTensor` and nothing else;
// the null pointers are what tells the roles apart, so a misplaced one is the caller's mistake.
Standing checkRoles(const Roles& r, const Team& team, int64_t me, int64_t position, int64_t root,
                    const Tensor* side, const Tensor* own) {
  Standing s;
  s.root = memberPosition(r.what, "root", root, team);
  s.isRoot = position == s.root;
  if (!s.isRoot) {
    LOOM_CHECK(own == nullptr, r.what, ": rank ", me, " passes an ", r.rootTensor,
               " but is not the root (", root, "); only the root ", r.rootVerb);
    LOOM_CHECK(side != nullptr, r.what, ": rank ", me, " passes no ", r.sideTensor,
               "; every member of team [", join(team), "] but the root (", root, ") ", r.sideVerb);
    return s;
  }
  LOOM_CHECK(own != nullptr, r.what, ": the root (rank ", me, ") passes no ", r.rootTensor,
             "; the root ", r.rootVerb);
  s.rootTakesPart = side != nullptr;
  s.parts = int64_t(team.size()) - (s.rootTakesPart ? 0 : 1);
  LOOM_CHECK(s.parts > 0, r.what, ": no member ", r.sideVerb, ": the root (rank ", me,
             ") passes no ", r.sideTensor, " and is the only member of team [", join(team), "]");
  return s;
}

// On the root: `whole` (gather's output, scatter's input) holds one block of `block` (the
// root's own side tensor, when it takes part) per sender or receiver.
void checkBlocks(const Roles& r, const Team& team, const Standing& s, const Tensor& whole,
                 const Tensor* block) {
  const char* wholeName = r.rootTensor;
  if (block != nullptr) {
    LOOM_CHECK(whole.numel() == s.parts * block->numel(), r.what, ": ", wholeName, " ",
               describe(whole), " has ", whole.numel(), " elements, expected one block of ",
               r.sideTensor, "'s ", block->numel(), " per ", r.sideNoun, ", ", s.parts, " x ",
               block->numel(), " = ", s.parts * block->numel());
    return;
  }
  LOOM_CHECK(whole.numel() % s.parts == 0, r.what, ": ", wholeName, " ", describe(whole), " has ",
             whole.numel(), " elements, not a multiple of the number of ", r.sideNoun, "s, ",
             s.parts, " (the members of team [", join(team), "] but the root, which passes no ",
             r.sideTensor, "): one block per ", r.sideNoun);
}

}  // namespace

void Communicator::gather(const Tensor* input, Tensor* output, int64_t root, const Team& team,
                          CUstream stream) {
  const char* what = kGather.what;
  const int64_t position = positionIn(team, what);
  const Standing s = checkRoles(kGather, team, rank_, position, root, input, output);
  if (s.isRoot && s.rootTakesPart) {
    checkInputOutput(what, *input, *output);
    LOOM_CHECK(!overlap(*input, *output), what, ": input and output overlap");
  } else if (s.isRoot) {
    checkTensor(what, "output", *output);
  } else {
    checkTensor(what, "input", *input);
  }
  if (s.isRoot) checkBlocks(kGather, team, s, *output, input);
  const Device device = s.isRoot ? output->device() : input->device();
  transportFor(what, team, position, device).gather(input, output, s.root, stream);
}

void Communicator::scatter(const Tensor* input, Tensor* output, int64_t root, const Team& team,
                           CUstream stream) {
  const char* what = kScatter.what;
  const int64_t position = positionIn(team, what);
  const Standing s = checkRoles(kScatter, team, rank_, position, root, output, input);
  if (s.isRoot && s.rootTakesPart) {
    checkInputOutput(what, *input, *output);
    LOOM_CHECK(!overlap(*input, *output), what, ": input and output overlap");
  } else if (s.isRoot) {
    checkTensor(what, "input", *input);
  } else {
    checkTensor(what, "output", *output);
  }
  if (s.isRoot) checkBlocks(kScatter, team, s, *input, output);
  const Device device = s.isRoot ? input->device() : output->device();
  transportFor(what, team, position, device).scatter(input, output, s.root, stream);
}

void Communicator::reduce(const Tensor* input, Tensor* output, ReduceOp op, int64_t root,
                          const Team& team, CUstream stream) {
  const char* what = kReduce.what;
  const int64_t position = positionIn(team, what);
  const Standing s = checkRoles(kReduce, team, rank_, position, root, input, output);
  if (s.isRoot && s.rootTakesPart) {
    checkInputOutput(what, *input, *output);
    LOOM_CHECK(output->numel() == input->numel(), what, ": output ", describe(*output), " has ",
               output->numel(), " elements, expected input's ", input->numel());
    LOOM_CHECK(!overlap(*input, *output), what, ": input and output overlap");
  } else if (s.isRoot) {
    checkTensor(what, "output", *output);
  } else {
    checkTensor(what, "input", *input);
  }
  const Device device = s.isRoot ? output->device() : input->device();
  transportFor(what, team, position, device).reduce(input, output, op, s.root, stream);
}

}  // namespace loom::multidevice
