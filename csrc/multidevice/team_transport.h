// SPDX-License-Identifier: Apache-2.0
// Private: one team's collectives over one transport, behind one interface, so the Communicator
// checks the arguments once and picks a transport without knowing how it moves bytes.
//
// Every call gets tensors the Communicator checked: defined, contiguous, of one dtype, all on the
// host or all on one GPU, with consistent sizes; roots and peers are positions in the team.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "loom/multidevice/communicator.h"

#ifdef LOOM_HAVE_MPI
#include <mpi.h>
#endif

namespace loom::multidevice {

class TeamTransport {
 public:
  virtual ~TeamTransport() = default;
  virtual Transport kind() const = 0;

  virtual void allgather(const Tensor& input, Tensor& output, CUstream stream) = 0;
  virtual void allreduce(Tensor& inout, ReduceOp op, CUstream stream) = 0;
  virtual void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) = 0;
  virtual void broadcast(Tensor& buffer, int64_t root, CUstream stream) = 0;
  /// A null tensor skips its half; `dst` and `src` are positions (may be this rank's own).
  virtual void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src,
                        CUstream stream) = 0;
  virtual void allToAll(const Tensor& input, Tensor& output, CUstream stream) = 0;
};

/// A team of one, host or CUDA tensors: copies (on `stream` for CUDA tensors, not waited for).
std::unique_ptr<TeamTransport> makeLocalTransport();

#ifdef LOOM_HAVE_MPI
/// Host tensors over an MPI communicator of the team (ranks in team order), which the transport
/// frees at its end unless MPI is finalized.
std::unique_ptr<TeamTransport> makeMpiTransport(MPI_Comm comm);
#endif

/// How a team agrees while it sets NCCL up: `allOk(mine)` is true when every member's `mine` is
/// (MPI_Allreduce), `broadcastFromFirst` copies position 0's bytes to every member (MPI_Bcast).
/// For a team of one both are trivial.
struct TeamExchange {
  std::function<bool(bool mine)> allOk;
  std::function<void(void* bytes, size_t size)> broadcastFromFirst;
};

/// CUDA tensors on GPU `device` over an NCCL communicator of the team, created now (collectively:
/// every member calls this together) with `device` current, and destroyed at the transport's
/// end. Only in builds with the CUDA backend.
std::unique_ptr<TeamTransport> makeNcclTransport(const Team& team, int64_t position, int device,
                                                 const TeamExchange& exchange);

/// CUDA tensors staged through host memory: copied to the host (the stream is waited for), `host`
/// runs the collective, the results are copied back. Only in builds with the CUDA backend.
std::unique_ptr<TeamTransport> makeStagedTransport(TeamTransport& host);

}  // namespace loom::multidevice
