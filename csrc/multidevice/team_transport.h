// SPDX-License-Identifier: Apache-2.0
// Private: one team's collectives over one transport, behind one interface, so the Communicator
// checks the arguments once and picks a transport without knowing how it moves bytes.
//
// Every call gets tensors the Communicator checked: defined, contiguous, of one dtype, all on the
// host or all on one GPU, with consistent sizes; roots and peers are positions in the team.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

#include "loom/multidevice/communicator.h"

namespace loom::multidevice {

class TeamTransport {
 public:
  virtual ~TeamTransport() = default;
  virtual Transport kind() const = 0;

  virtual void allgather(const Tensor& input, Tensor& output, CUstream stream) = 0;
  /// In place when `input` and `output` are the same tensor (same data), else disjoint.
  virtual void allreduce(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) = 0;
  virtual void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) = 0;
  virtual void broadcast(Tensor& buffer, int64_t root, CUstream stream) = 0;
  /// A null tensor skips its half; `dst` and `src` are positions (may be this rank's own).
  virtual void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src,
                        CUstream stream) = 0;
  virtual void allToAll(const Tensor& input, Tensor& output, CUstream stream) = 0;

  // Rooted collectives; `root` is a position. Every member but the root passes the tensor of its
  // side (gather and reduce: input; scatter: output) and null for the other; the root passes its
  // output (gather, reduce) or input (scatter), and the other tensor exactly when it takes part
  // too. Blocks are in the order of rootedBlock().
  virtual void gather(const Tensor* input, Tensor* output, int64_t root, CUstream stream) = 0;
  virtual void scatter(const Tensor* input, Tensor* output, int64_t root, CUstream stream) = 0;
  virtual void reduce(const Tensor* input, Tensor* output, ReduceOp op, int64_t root,
                      CUstream stream) = 0;
};

/// The block of the member at `position` in a rooted collective's concatenated tensor (gather's
/// output, scatter's input): its position, less one past a root that takes no part.
inline int64_t rootedBlock(int64_t position, int64_t root, bool rootTakesPart) {
  return rootTakesPart || position < root ? position : position - 1;
}

/// The identity of `op` on `dtype` (what a root that sends nothing contributes to reduce): 0 for
/// Sum, 1 for Prod, -inf for Max and +inf for Min; an integer type's lowest and highest value
/// (the 64-bit tops round up to 2^63 / 2^64, which storeFromDouble saturates back); on Bool 0
/// (false) for Sum and Max (or), 1 (true) for Prod and Min (and).
inline double reduceIdentity(DataType dtype, ReduceOp op) {
  if (dtype == DataType::Bool) return op == ReduceOp::Sum || op == ReduceOp::Max ? 0.0 : 1.0;
  if (isIntegralType(dtype) && (op == ReduceOp::Max || op == ReduceOp::Min)) {
    const int bits = integerBits(dtype);
    if (isUnsignedType(dtype)) return op == ReduceOp::Max ? 0.0 : std::ldexp(1.0, bits) - 1.0;
    return op == ReduceOp::Max ? -std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits - 1) - 1.0;
  }
  switch (op) {
    case ReduceOp::Sum: return 0.0;
    case ReduceOp::Prod: return 1.0;
    case ReduceOp::Max: return -std::numeric_limits<double>::infinity();
    case ReduceOp::Min: return std::numeric_limits<double>::infinity();
  }
  return 0.0;
}

/// A team of one, host or CUDA tensors: copies (on `stream` for CUDA tensors, not waited for).
std::unique_ptr<TeamTransport> makeLocalTransport();

/// How a team agrees while it sets NCCL up: `allOk(mine)` is true when every member's `mine` is
/// (MPI_Allreduce), `broadcastFromFirst` copies position 0's bytes to every member (MPI_Bcast).
/// For a team of one both are trivial.
struct TeamExchange {
  std::function<bool(bool mine)> allOk;
  std::function<void(void* bytes, size_t size)> broadcastFromFirst;
};

/// Host tensors between the team's ranks over an MPI communicator of the team (ranks in team
/// order), made now from MPI_COMM_WORLD (collectively over the team: every member calls this
/// together) and freed at the transport's end unless MPI is finalized; `exchange` gets the
/// team's agreement over the same communicator, valid while the transport lives. Needs MPI up
/// (ensureMpi, mpi.h); defined by mpi_transport.cpp, and unreachable in a build without MPI.
std::unique_ptr<TeamTransport> makeMpiTransport(const Team& team, TeamExchange& exchange);

/// CUDA tensors on GPU `device` over an NCCL communicator of the team, created now (collectively:
/// every member calls this together) with `device` current, and destroyed at the transport's
/// end. Defined by nccl_transport.cpp with the CUDA backend; unreachable without it (gpu_side.h).
std::unique_ptr<TeamTransport> makeNcclTransport(const Team& team, int64_t position, int device,
                                                 const TeamExchange& exchange);

/// CUDA tensors staged through host memory: copied to the host (the stream is waited for), `host`
/// runs the collective, the results are copied back. Defined by staged_transport.cpp with the
/// CUDA backend; unreachable without it.
std::unique_ptr<TeamTransport> makeStagedTransport(TeamTransport& host);

}  // namespace loom::multidevice
