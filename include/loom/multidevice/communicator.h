// SPDX-License-Identifier: Apache-2.0
// Communicator: this process's place among the ranks a launcher started, and the collectives
// between them: on host tensors through MPI, on CUDA tensors through NCCL (or staged through the
// host when ranks share a GPU).
//
//   multidevice::Communicator& comm = multidevice::Communicator::instance();
//   RuntimeOptions options;
//   options.communicator = &comm;               // deviceId defaults to comm.rank()
//
//   multidevice::Team team = {0, 1};            // world ranks, in order
//   comm.allgather(shard, gathered, team);      // gathered = rank 0's shard, then rank 1's
//   comm.allreduce(partial, multidevice::ReduceOp::Sum, team, stream);
//
//   // Rooted, between meshes: producer mesh {0, 1} holds shards, consumer device 2 the whole.
//   multidevice::Team pc = {0, 1, 2};           // producers and consumer together
//   comm.gather(rank < 2 ? &shard : nullptr, rank == 2 ? &whole : nullptr, /*root=*/2, pc);
//
// Rank, size, local rank and local size come from the launcher's environment: OpenMPI's
// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE) first, then the torchrun-style RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; without either, one process of rank 0. MPI is
// initialized on the first collective (or by instance() under a launcher of several ranks) and
// finalized at a clean exit; between several ranks an error exit (a non-zero status, an uncaught
// exception) aborts the job instead, every step that waits for peers is timed
// (LOOM_COMM_TIMEOUT), and a rank that leaves while a peer waits for it ends the job at once, each
// with the reason printed on every rank (docs/multidevice.md, "When a rank fails"). MPI is
// OpenMPI's libmpi, opened at run time (libmpi.so.40 from the loader's search path, or
// LOOM_MPI_LIBRARY), so nothing links MPI and a process that never communicates between ranks
// never loads it. Without MPI (a build that found no mpi.h, or no library to open) one rank
// still runs, and so does every rank's local program (sharded runs need no communication); a
// collective between several ranks is then a UserError that says why MPI is missing and how to
// get it. Running a rank per GPU: the rank drives cuda:<local rank modulo the GPU count> (ranks
// may share a GPU).
//
// Collectives on tensors run within a Team, the ordered world ranks taking part (a slice of a
// device mesh). Every rank of the team makes the same call (same team, sizes, dtype, root), and
// only those ranks do. The first call on a team creates its communicators (an MPI
// sub-communicator; for CUDA tensors an NCCL communicator), kept until releaseTeams() or the
// Communicator's end, and always before MPI is finalized. How a call moves data (lastTransport()):
//   - Local: a team of one; a copy on this rank, no MPI or NCCL needed.
//   - Mpi: host tensors, over the team's MPI sub-communicator.
//   - Nccl: CUDA tensors when every rank on the node has a GPU of its own (local size <= GPU
//     count). libnccl.so.2 is opened at run time (LOOM_NCCL_LIBRARY names another file); the
//     team's first rank makes the NCCL id and sends it over MPI. The call is queued on `stream`
//     and returns without waiting for it.
//   - Staged: CUDA tensors when ranks share a GPU: copied to the host (the stream is waited for),
//     an MPI collective, copied back (waited for too).
// Tensors must be contiguous, of one dtype, and all on the host or all on one GPU. On Float16
// and BFloat16 the reductions compute in float and round each partial result to the dtype (as
// NCCL does); on Bool, Sum and Max are a logical or, Prod and Min a logical and.
//
// Rooted collectives (gather, scatter, reduce) move data between device meshes, as between
// pipeline stages: the team is the producers and the consumers together, and the root is the one
// consumer (gather, reduce) or the one producer (scatter), which may or may not also be on the
// other side. What the root passes says which: a root passing an input sends (gather, reduce), a
// root passing an output receives (scatter). Every other member always takes part, so the senders
// (receivers) are the team's members in team order, less the root when it passes nothing; only the
// root needs their count, and it knows, so no rank has to be told. A root that sends nothing to a
// reduce contributes the op's identity (0 for Sum, 1 for Prod, the lowest value for Max, -inf on
// floats, the highest for Min; on Bool false for Sum and Max, true for Prod and Min), written into
// its output first: under NCCL that fill is queued on the stream when the identity's bytes are
// all alike (Sum, Bool) and otherwise copied from the host, which waits for the stream.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/backend/cuda/driver.h"  // CUstream (only the handle type; no driver is needed)
#include "loom/tensor/tensor.h"

namespace loom::multidevice {

/// The world ranks of a collective, in order: a rank's position in the team is its index here
/// (allgather concatenates in this order). Ranks are distinct and in [0, world size).
using Team = std::vector<int64_t>;

/// The reduction of allreduce and reduceScatter.
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };

/// How a collective moved its data (see the file comment).
enum class Transport : uint8_t { None, Local, Mpi, Nccl, Staged };

/// Which transport CUDA tensors take between several ranks. Auto: Nccl when local size <= GPU
/// count, else Staged; a team of one copies locally. Nccl and Staged force one (for tests, and
/// embedders who know better); Nccl then runs a team of one through NCCL too.
enum class CudaTransport : uint8_t { Auto, Nccl, Staged };

/// "sum", "prod", "max", "min".
std::string_view reduceOpName(ReduceOp op);
/// "none", "local", "mpi", "nccl", "staged".
std::string_view transportName(Transport t);

class TeamCache;
class TeamTransport;

class Communicator {
 public:
  /// The launcher's view (see the file comment), read from the environment now.
  Communicator();
  /// An explicit view, for tests and embedders that know their ranks. size >= 1, 0 <= rank < size.
  Communicator(int64_t rank, int64_t size, int64_t local_rank, int64_t local_size);
  /// Releases the teams' communicators (releaseTeams()).
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// The process-wide communicator from the environment (a convenience; runtimes take any).
  static Communicator& instance();

  int64_t rank() const { return rank_; }
  int64_t size() const { return size_; }
  int64_t localRank() const { return local_rank_; }
  int64_t localSize() const { return local_size_; }
  /// The GPU this rank drives among `gpus` GPUs: its local rank, round-robin when ranks share
  /// GPUs (RuntimeOptions::gpu unset picks it).
  int gpuIndex(int64_t gpus) const { return int(local_rank_ % (gpus > 0 ? gpus : 1)); }
  /// Where the rank and size came from: "OpenMPI", "RANK/WORLD_SIZE", "single process",
  /// "explicit".
  const std::string& source() const { return source_; }
  /// Every rank, in order: {0, 1, ..., size() - 1}.
  Team world() const;

  /// True when this process can use MPI: the build has it and its library opens (opened here on
  /// the first call, not initialized).
  static bool hasMpi();

  /// Waits for every rank.
  void barrier();
  /// Every rank's `value`, in rank order.
  std::vector<int64_t> allgather(int64_t value);
  /// Every rank's bytes (of any length), in rank order.
  std::vector<std::string> allgatherBytes(const std::string& bytes);

  /// allgather and allgatherBytes on a channel of Loom's own, for checks that the ranks agree
  /// (FusionExecutorCache's on the first run of a signature): they never match a collective of
  /// the program's, and count in checks(), not in communications().
  std::vector<int64_t> allgatherForCheck(int64_t value);
  std::vector<std::string> allgatherBytesForCheck(const std::string& bytes);
  /// Calls of allgatherForCheck between several ranks so far.
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }

  // Collectives on tensors within a team (see the file comment). `stream` is used for CUDA
  // tensors (null: the legacy default stream) and ignored for host tensors. Sizes are checked
  // on each rank against its own tensors; every rank is trusted to pass the sizes the others do.

  /// output = every member's input, concatenated in team order: output.numel() is team.size()
  /// times input.numel(), whatever its shape (e.g. [team.size() * d0, ...]). In place when input
  /// is this rank's block of output.
  void allgather(const Tensor& input, Tensor& output, const Team& team, CUstream stream = nullptr);
  /// inout = the elementwise reduction of every member's inout.
  void allreduce(Tensor& inout, ReduceOp op, const Team& team, CUstream stream = nullptr);
  /// output = the elementwise reduction of every member's input (of output's numel; input and
  /// output disjoint), without copying the input first.
  void allreduce(const Tensor& input, Tensor& output, ReduceOp op, const Team& team,
                 CUstream stream = nullptr);
  /// output = block p (of output.numel() elements) of the reduction of every member's input,
  /// where p is this rank's position in the team: input.numel() is team.size() times
  /// output.numel(). Input and output may not overlap.
  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, const Team& team,
                     CUstream stream = nullptr);
  /// Every member's buffer = the buffer of world rank `root` (a member of the team).
  void broadcast(Tensor& buffer, int64_t root, const Team& team, CUstream stream = nullptr);
  /// Sends `*send` to world rank `dst` and receives `*recv` from world rank `src`, both members
  /// of the team, as one exchange that cannot deadlock on the pairing (a ring shift is one
  /// call on every member). A null pointer skips that half; a member with nothing to do calls
  /// with both null. The receiver's numel and dtype must equal the sender's.
  void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src, const Team& team,
                CUstream stream = nullptr);
  /// Block q of input (of input.numel() / team.size() elements) goes to the member at position
  /// q, and output block q comes from it: input.numel() == output.numel(), a multiple of
  /// team.size(). Input and output may not overlap.
  void allToAll(const Tensor& input, Tensor& output, const Team& team, CUstream stream = nullptr);

  // Rooted collectives (see the file comment): `root` is a world rank of the team, the one
  // receiver of gather and reduce, the one sender of scatter. Every other member always sends
  // (gather, reduce) or receives (scatter); the root does too exactly when it passes an input
  // (gather, reduce) or an output (scatter). A pointer a member has no use for is null: a member
  // other than the root passes no output (gather, reduce) or no input (scatter).

  /// Root's output = every sender's input, concatenated in the senders' team order (a root that
  /// sends has its block at its own place in that order). On the root, output.numel() is the
  /// number of senders times the input numel every sender passes. Input and output may not
  /// overlap.
  void gather(const Tensor* input, Tensor* output, int64_t root, const Team& team,
              CUstream stream = nullptr);
  /// Root's input split into as many equal contiguous blocks as there are receivers: block q goes
  /// to the q-th receiver in team order (the root, when it receives, at its own place in that
  /// order). On the root, input.numel() is the number of receivers times the output numel every
  /// receiver passes. Input and output may not overlap.
  void scatter(const Tensor* input, Tensor* output, int64_t root, const Team& team,
               CUstream stream = nullptr);
  /// Root's output = the elementwise reduction of every sender's input, all of output's numel. A
  /// root that sends nothing adds nothing to the result. Input and output may not overlap.
  void reduce(const Tensor* input, Tensor* output, ReduceOp op, int64_t root, const Team& team,
              CUstream stream = nullptr);

  /// How the last tensor collective on this communicator moved its data (None before any).
  Transport lastTransport() const { return last_transport_.load(std::memory_order_relaxed); }
  CudaTransport cudaTransport() const { return cuda_transport_; }
  /// Changes the transport of later CUDA collectives (teams created so far keep theirs).
  void setCudaTransport(CudaTransport t) { cuda_transport_ = t; }

  /// Frees every team's MPI sub-communicator and NCCL communicator now. Every rank calls it at the
  /// same point (freeing an MPI communicator is collective); the next call on a team makes them
  /// again. Runs by itself at the Communicator's end or before MPI is finalized, whichever comes
  /// first.
  void releaseTeams();

  /// Collectives issued so far through this communicator (tests assert on it): every barrier,
  /// allgather, allgatherBytes between several ranks, and every tensor collective, a team of one
  /// included.
  int64_t communications() const { return communications_.load(std::memory_order_relaxed); }

 private:
  void requireMpi(const char* what, int64_t ranks);
  // Checks the team and the caller's membership; returns the caller's position.
  int64_t positionIn(const Team& team, const char* what) const;
  // The transport a collective on `team` takes for tensors on `device`.
  Transport chooseTransport(const Team& team, Device device) const;
  // After the arguments are checked: picks the transport (making the team's communicators on
  // first use), counts the communication and records the transport.
  TeamTransport& transportFor(const char* what, const Team& team, int64_t position, Device device);

  int64_t rank_ = 0;
  int64_t size_ = 1;
  int64_t local_rank_ = 0;
  int64_t local_size_ = 1;
  std::string source_;
  std::atomic<int64_t> communications_{0};
  std::atomic<int64_t> checks_{0};
  // The number of the step on the world and on the checks' channel (what the guard reports, so
  // that ranks can tell they wait in the same one).
  int64_t world_steps_ = 0;
  int64_t check_steps_ = 0;
  std::atomic<Transport> last_transport_{Transport::None};
  CudaTransport cuda_transport_ = CudaTransport::Auto;
  std::unique_ptr<TeamCache> teams_;  // the teams' communicators, made on first use
};

}  // namespace loom::multidevice
