// SPDX-License-Identifier: Apache-2.0
// A Communicator's transports by team (team_cache.h): a team's MPI transport (its
// sub-communicator), NCCL communicators whose id the team's first rank makes and broadcasts over
// the team's MPI communicator, and their release before MPI is finalized.
#include "multidevice/team_cache.h"

#include "loom/support/strings.h"
#include "multidevice/mpi.h"

namespace loom::multidevice {

TeamCache::~TeamCache() { release(); }

TeamTransport& TeamCache::get(const Team& team, int64_t position, Transport kind, int gpu) {
  std::lock_guard lock(mutex_);
  if (kind == Transport::Local) {
    if (!local_) local_ = makeLocalTransport();
    return *local_;
  }
  Entry& entry = entries_[team];
  switch (kind) {
    case Transport::Mpi: return host(team, entry);
    case Transport::Staged:
      if (!entry.staged) entry.staged = makeStagedTransport(host(team, entry));
      return *entry.staged;
    case Transport::Nccl:
      if (!entry.nccl) entry.nccl = makeNccl(team, position, gpu, entry);
      return *entry.nccl;
    default: break;
  }
  LOOM_UNREACHABLE("transport ", transportName(kind), " for team [", join(team), "] (gpu ", gpu,
                   ", position ", position, ")");
}

TeamTransport& TeamCache::host(const Team& team, Entry& entry) {
  if (team.size() == 1) {
    if (!local_) local_ = makeLocalTransport();
    return *local_;
  }
  if (!entry.mpi) {
    detail::ensureMpi();
    if (finalize_hook_ < 0) finalize_hook_ = detail::atFinalize([this] { release(); });
    entry.mpi = makeMpiTransport(team, entry.exchange);
  }
  return *entry.mpi;
}

std::unique_ptr<TeamTransport> TeamCache::makeNccl(const Team& team, int64_t position, int gpu,
                                                   Entry& entry) {
  if (team.size() == 1) {
    TeamExchange alone;
    alone.allOk = [](bool mine) { return mine; };
    alone.broadcastFromFirst = [](void*, size_t) {};
    return makeNcclTransport(team, position, gpu, alone);
  }
  (void)host(team, entry);  // the team's MPI communicator carries the NCCL id
  return makeNcclTransport(team, position, gpu, entry.exchange);
}

void TeamCache::release() noexcept {
  std::lock_guard lock(mutex_);
  entries_.clear();  // each entry: NCCL, then staged, then MPI (reverse declaration order)
  if (finalize_hook_ >= 0) detail::cancelAtFinalize(finalize_hook_);
  finalize_hook_ = -1;
}

}  // namespace loom::multidevice
