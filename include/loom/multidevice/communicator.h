// SPDX-License-Identifier: Apache-2.0
// Communicator: this process's place among the ranks a launcher started, and the collectives
// between them on host buffers (MPI).
//
//   multidevice::Communicator& comm = multidevice::Communicator::instance();
//   RuntimeOptions options;
//   options.communicator = &comm;               // deviceId defaults to comm.rank()
//
// Rank, size, local rank and local size come from the launcher's environment: OpenMPI's
// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE) first, then the torchrun-style RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; without either, one process of rank 0. MPI is
// initialized on the first collective (or by instance() under a launcher of several ranks) and
// finalized at exit. A build without MPI (find_package(MPI) failed) still runs one rank, and
// every rank's local program (sharded runs need no communication); a collective between several
// ranks is then a UserError that says so. Running a rank per GPU: the rank drives
// cuda:<local rank modulo the GPU count> (ranks may share a GPU).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::multidevice {

class Communicator {
 public:
  /// The launcher's view (see the file comment), read from the environment now.
  Communicator();
  /// An explicit view, for tests and embedders that know their ranks. size >= 1, 0 <= rank < size.
  Communicator(int64_t rank, int64_t size, int64_t local_rank, int64_t local_size);

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

  /// True when this build has MPI.
  static bool hasMpi();

  /// Waits for every rank.
  void barrier();
  /// Every rank's `value`, in rank order.
  std::vector<int64_t> allgather(int64_t value);
  /// Every rank's bytes (of any length), in rank order.
  std::vector<std::string> allgatherBytes(const std::string& bytes);

  /// Collectives issued so far through this communicator (tests assert on it).
  int64_t communications() const { return communications_.load(std::memory_order_relaxed); }

 private:
  void requireMpi(const char* what);

  int64_t rank_ = 0;
  int64_t size_ = 1;
  int64_t local_rank_ = 0;
  int64_t local_size_ = 1;
  std::string source_;
  std::atomic<int64_t> communications_{0};
};

}  // namespace loom::multidevice
