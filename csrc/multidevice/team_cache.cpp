// SPDX-License-Identifier: Apache-2.0
// A Communicator's transports by team (team_cache.h): MPI sub-communicators from
// MPI_Comm_create_group (collective over the team only, so ranks outside it go on), NCCL
// communicators whose id the team's first rank makes and broadcasts over the team's MPI
// communicator, and their release before MPI is finalized.
#include "multidevice/team_cache.h"

#include <vector>

#include "loom/support/strings.h"

#ifdef LOOM_HAVE_MPI
#include "multidevice/guard.h"
#include "multidevice/mpi.h"
#endif

namespace loom::multidevice {

namespace {

#ifdef LOOM_HAVE_MPI
// A communicator of the team's world ranks, in team order (rank i of it is team[i]).
MPI_Comm subCommunicator(const Team& team) {
  using detail::checkMpi;
  MPI_Group world = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  checkMpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  std::vector<int> ranks(team.begin(), team.end());
  int r = MPI_Group_incl(world, int(ranks.size()), ranks.data(), &group);
  MPI_Group_free(&world);
  checkMpi(r, "MPI_Group_incl");
  MPI_Comm comm = MPI_COMM_NULL;
  {
    // Collective over the team: a member that never comes (or names another team) keeps the
    // others here, which the guard times.
    detail::Watch watch({"creating the team's MPI communicator", detail::Channel::Setup, &team, 1});
    r = MPI_Comm_create_group(MPI_COMM_WORLD, group, /*tag=*/0, &comm);
  }
  MPI_Group_free(&group);
  checkMpi(r, "MPI_Comm_create_group");
  return comm;
}
#endif

}  // namespace

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
#ifdef LOOM_HAVE_CUDA_BACKEND
    case Transport::Staged:
      if (!entry.staged) entry.staged = makeStagedTransport(host(team, entry));
      return *entry.staged;
    case Transport::Nccl:
      if (!entry.nccl) entry.nccl = makeNccl(team, position, gpu, entry);
      return *entry.nccl;
#endif
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
#ifdef LOOM_HAVE_MPI
  if (!entry.mpi) {
    detail::ensureMpi();
    if (finalize_hook_ < 0) finalize_hook_ = detail::atFinalize([this] { release(); });
    entry.comm = subCommunicator(team);
    entry.mpi = makeMpiTransport(entry.comm, team);
  }
  return *entry.mpi;
#else
  (void)entry;
  LOOM_UNREACHABLE("an MPI transport in a build without MPI");
#endif
}

std::unique_ptr<TeamTransport> TeamCache::makeNccl(const Team& team, int64_t position, int gpu,
                                                   Entry& entry) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  TeamExchange exchange;
  if (team.size() == 1) {
    exchange.allOk = [](bool mine) { return mine; };
    exchange.broadcastFromFirst = [](void*, size_t) {};
  } else {
#ifdef LOOM_HAVE_MPI
    (void)host(team, entry);  // the team's MPI communicator carries the NCCL id
    MPI_Comm comm = entry.comm;
    exchange.allOk = [comm, &team](bool mine) {
      int ok = mine ? 1 : 0;
      int all = 0;
      detail::Watch watch({"agreeing to set up NCCL", detail::Channel::Setup, &team, 1});
      detail::checkMpi(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce");
      return all != 0;
    };
    exchange.broadcastFromFirst = [comm, &team](void* bytes, size_t size) {
      detail::Watch watch(
          {"sending the NCCL id", detail::Channel::Setup, &team, 1, /*symmetric=*/false});
      detail::checkMpi(MPI_Bcast(bytes, int(size), MPI_BYTE, 0, comm), "MPI_Bcast");
    };
#else
    (void)entry;
    LOOM_UNREACHABLE("NCCL between several ranks in a build without MPI");
#endif
  }
  return makeNcclTransport(team, position, gpu, exchange);
#else
  (void)entry;
  LOOM_UNREACHABLE("NCCL for team [", join(team), "] (position ", position, ", gpu ", gpu,
                   ") in a build without the CUDA backend");
#endif
}

void TeamCache::release() noexcept {
  std::lock_guard lock(mutex_);
  entries_.clear();  // each entry: NCCL, then staged, then MPI (reverse declaration order)
#ifdef LOOM_HAVE_MPI
  if (finalize_hook_ >= 0) detail::cancelAtFinalize(finalize_hook_);
#endif
  finalize_hook_ = -1;
}

}  // namespace loom::multidevice
