// SPDX-License-Identifier: Apache-2.0
// The Communicator's collectives on tensors (communicator.h): every argument is checked here,
// once, with a UserError that names the collective, the tensor and what was expected; then the
// team's transport (team_transport.h) moves the data. The rooted ones are in
// rooted_collectives.cpp.
#include <cstdint>

#include "loom/multidevice/communicator.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "multidevice/collective_checks.h"
#include "multidevice/gpu_side.h"
#include "multidevice/team_cache.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {

using detail::bytesOf;
using detail::checkInputOutput;
using detail::checkSameDevice;
using detail::checkSameDtype;
using detail::checkTensor;
using detail::memberPosition;
using detail::overlap;

int64_t Communicator::positionIn(const Team& team, const char* what) const {
  LOOM_CHECK(!team.empty(), what, ": the team is empty; a team names at least one rank");
  std::vector<bool> seen(static_cast<size_t>(size_), false);
  int64_t position = -1;
  for (size_t i = 0; i < team.size(); ++i) {
    const int64_t r = team[i];
    LOOM_CHECK(r >= 0 && r < size_, what, ": team [", join(team), "] names rank ", r,
               ", outside the world of ", size_, " rank(s) (0 to ", size_ - 1, ")");
    LOOM_CHECK(!seen[size_t(r)], what, ": team [", join(team), "] names rank ", r,
               " twice; a team's ranks are distinct");
    seen[size_t(r)] = true;
    if (r == rank_) position = int64_t(i);
  }
  LOOM_CHECK(position >= 0, what, ": this rank (", rank_, ") is not in team [", join(team),
             "]; only the ranks of a team call its collectives");
  return position;
}

Transport Communicator::chooseTransport(const Team& team, Device device) const {
  if (device.isCpu()) return team.size() == 1 ? Transport::Local : Transport::Mpi;
  detail::requireCudaBackend(device);
  switch (cuda_transport_) {
    case CudaTransport::Nccl: return Transport::Nccl;
    case CudaTransport::Staged: return Transport::Staged;
    case CudaTransport::Auto: break;
  }
  if (team.size() == 1) return Transport::Local;
  // NCCL needs a GPU per rank; ranks sharing a GPU go through the host.
  return local_size_ <= detail::gpuCount() ? Transport::Nccl : Transport::Staged;
}

TeamTransport& Communicator::transportFor(const char* what, const Team& team, int64_t position,
                                          Device device) {
  const Transport kind = chooseTransport(team, device);
  if (team.size() > 1) requireMpi(what, int64_t(team.size()));
  int gpu = 0;
  if (kind == Transport::Nccl) {
    gpu = gpuIndex(detail::gpuCount());
    LOOM_CHECK(device.index == gpu, what, ": the tensors are on ", device, " but this rank (local ",
               "rank ", local_rank_, " of ", local_size_, ") drives cuda:", gpu,
               ", the GPU of its NCCL communicators");
  }
  TeamTransport& transport = teams_->get(team, position, kind, gpu);
  communications_.fetch_add(1, std::memory_order_relaxed);
  last_transport_.store(kind, std::memory_order_relaxed);
  return transport;
}

void Communicator::allgather(const Tensor& input, Tensor& output, const Team& team,
                             CUstream stream) {
  const char* what = "allgather";
  const int64_t position = positionIn(team, what);
  checkInputOutput(what, input, output);
  const int64_t n = int64_t(team.size());
  LOOM_CHECK(output.numel() == n * input.numel(), what, ": output ", describe(output), " has ",
             output.numel(), " elements, expected team size ", n, " x input's ", input.numel(),
             " = ", n * input.numel());
  const bool inPlace = static_cast<const char*>(input.data()) ==
                       static_cast<const char*>(output.data()) + size_t(position) * bytesOf(input);
  LOOM_CHECK(inPlace || !overlap(input, output), what,
             ": input and output overlap; the input is "
             "either apart from the output or exactly this rank's block of it (block ",
             position, ")");
  transportFor(what, team, position, input.device()).allgather(input, output, stream);
}

void Communicator::allreduce(Tensor& inout, ReduceOp op, const Team& team, CUstream stream) {
  const char* what = "allreduce";
  const int64_t position = positionIn(team, what);
  checkTensor(what, "inout", inout);
  transportFor(what, team, position, inout.device()).allreduce(inout, inout, op, stream);
}

void Communicator::allreduce(const Tensor& input, Tensor& output, ReduceOp op, const Team& team,
                             CUstream stream) {
  const char* what = "allreduce";
  const int64_t position = positionIn(team, what);
  checkInputOutput(what, input, output);
  LOOM_CHECK(input.numel() == output.numel(), what, ": input ", describe(input), " has ",
             input.numel(), " elements, expected output's ", output.numel());
  LOOM_CHECK(!overlap(input, output), what,
             ": input and output overlap (pass one tensor for an allreduce in place)");
  transportFor(what, team, position, input.device()).allreduce(input, output, op, stream);
}

void Communicator::reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, const Team& team,
                                 CUstream stream) {
  const char* what = "reduceScatter";
  const int64_t position = positionIn(team, what);
  checkInputOutput(what, input, output);
  const int64_t n = int64_t(team.size());
  LOOM_CHECK(input.numel() == n * output.numel(), what, ": input ", describe(input), " has ",
             input.numel(), " elements, expected team size ", n, " x output's ", output.numel(),
             " = ", n * output.numel());
  LOOM_CHECK(!overlap(input, output), what, ": input and output overlap");
  transportFor(what, team, position, input.device()).reduceScatter(input, output, op, stream);
}

void Communicator::broadcast(Tensor& buffer, int64_t root, const Team& team, CUstream stream) {
  const char* what = "broadcast";
  const int64_t position = positionIn(team, what);
  checkTensor(what, "buffer", buffer);
  const int64_t rootPosition = memberPosition(what, "root", root, team);
  transportFor(what, team, position, buffer.device()).broadcast(buffer, rootPosition, stream);
}

void Communicator::sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src,
                            const Team& team, CUstream stream) {
  const char* what = "sendRecv";
  const int64_t position = positionIn(team, what);
  LOOM_CHECK(send != nullptr || recv != nullptr, what,
             ": neither a send nor a receive; every "
             "member of the team has one or both (leave a rank with nothing to exchange out of "
             "the team)");
  int64_t dstPosition = -1;
  int64_t srcPosition = -1;
  if (send != nullptr) {
    checkTensor(what, "send", *send);
    dstPosition = memberPosition(what, "dst", dst, team);
  }
  if (recv != nullptr) {
    checkTensor(what, "recv", *recv);
    srcPosition = memberPosition(what, "src", src, team);
  }
  if (send != nullptr && recv != nullptr) checkSameDevice(what, "send", *send, "recv", *recv);
  const bool sendsToSelf = send != nullptr && dst == rank_;
  const bool receivesFromSelf = recv != nullptr && src == rank_;
  LOOM_CHECK(sendsToSelf == receivesFromSelf, what, ": a ",
             sendsToSelf ? "send to" : "receive from", " this rank (", rank_,
             ") itself needs the matching ", sendsToSelf ? "receive" : "send", " in the same call");
  if (sendsToSelf) {
    checkSameDtype(what, "send", *send, "recv", *recv);
    LOOM_CHECK(send->numel() == recv->numel(), what, ": recv ", describe(*recv), " has ",
               recv->numel(), " elements, expected send's ", send->numel());
  }
  if (send != nullptr && recv != nullptr) {
    LOOM_CHECK(!overlap(*send, *recv), what, ": send and recv overlap");
  }
  const Device device = send != nullptr ? send->device() : recv->device();
  transportFor(what, team, position, device).sendRecv(send, dstPosition, recv, srcPosition, stream);
}

void Communicator::allToAll(const Tensor& input, Tensor& output, const Team& team,
                            CUstream stream) {
  const char* what = "allToAll";
  const int64_t position = positionIn(team, what);
  checkInputOutput(what, input, output);
  const int64_t n = int64_t(team.size());
  LOOM_CHECK(output.numel() == input.numel(), what, ": output ", describe(output), " has ",
             output.numel(), " elements, expected input's ", input.numel());
  LOOM_CHECK(input.numel() % n == 0, what, ": input ", describe(input), " has ", input.numel(),
             " elements, not a multiple of the team size ", n, " (one block per member)");
  LOOM_CHECK(!overlap(input, output), what, ": input and output overlap");
  transportFor(what, team, position, input.device()).allToAll(input, output, stream);
}

}  // namespace loom::multidevice
