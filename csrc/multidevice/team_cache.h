// SPDX-License-Identifier: Apache-2.0
// Private: a Communicator's transports by team. A team's MPI sub-communicator and NCCL
// communicator are made on its first collective that needs them (collectively: every member is
// in that call) and kept until release(), which runs at the cache's end, on
// Communicator::releaseTeams(), or at the start of MPI_Finalize, whichever comes first.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "multidevice/team_transport.h"

namespace loom::multidevice {

class TeamCache {
 public:
  TeamCache() = default;
  ~TeamCache();
  TeamCache(const TeamCache&) = delete;
  TeamCache& operator=(const TeamCache&) = delete;

  /// The transport of `kind` for `team`, in which the caller is at `position`; made now when new.
  /// `gpu` is the GPU an NCCL communicator is made on. Local serves any team of one; Mpi and
  /// Staged between several ranks need MPI (the caller checked that this process can use it).
  TeamTransport& get(const Team& team, int64_t position, Transport kind, int gpu);

  /// Frees every team's communicators (NCCL first, then MPI). The next get() makes them again.
  void release() noexcept;

 private:
  struct Entry {
    TeamExchange exchange;                  // over `mpi`'s communicator (NCCL's setup)
    std::unique_ptr<TeamTransport> mpi;     // host tensors, teams of several ranks
    std::unique_ptr<TeamTransport> staged;  // CUDA tensors through the host
    std::unique_ptr<TeamTransport> nccl;    // CUDA tensors, a GPU per rank
  };
  // The host transport of a team: local_ for a team of one, else the team's MPI transport.
  TeamTransport& host(const Team& team, Entry& entry);
  std::unique_ptr<TeamTransport> makeNccl(const Team& team, int64_t position, int gpu,
                                          Entry& entry);

  std::mutex mutex_;
  std::unique_ptr<TeamTransport> local_;
  std::map<Team, Entry> entries_;  // destroyed before local_, which a staged team of one uses
  int64_t finalize_hook_ = -1;     // registered while entries hold MPI resources
};

}  // namespace loom::multidevice
