// SPDX-License-Identifier: Apache-2.0
// MPI in a build that found no OpenMPI mpi.h (mpi.h, team_transport.h): there is none. One rank
// runs, and every rank's local program; the Communicator refuses a collective between several
// ranks with the reason below before it calls anything else here, so the rest is unreachable.
#include "loom/support/error.h"
#include "multidevice/mpi.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace detail {

std::string mpiUnavailableReason() noexcept {
  return "this Loom build has none (it was configured where no OpenMPI mpi.h was found; "
         "tools/install-deps.sh installs OpenMPI)";
}

void ensureMpi() { LOOM_UNREACHABLE("MPI started in a build without MPI"); }

int64_t mpiWorldSize() { LOOM_UNREACHABLE("MPI's world size in a build without MPI"); }

void watchExitFromHere() {}

int64_t atFinalize(std::function<void()>) {
  LOOM_UNREACHABLE("an MPI_Finalize hook in a build without MPI");
}

void cancelAtFinalize(int64_t) {}

void mpiBarrier(int64_t&) { LOOM_UNREACHABLE("an MPI barrier in a build without MPI"); }

std::vector<int64_t> mpiAllgather(Channel, const char* what, int64_t&, int64_t, int64_t) {
  LOOM_UNREACHABLE(what, " over MPI in a build without MPI");
}

std::vector<std::string> mpiAllgatherBytes(Channel, const char* what, int64_t&, const std::string&,
                                           int64_t) {
  LOOM_UNREACHABLE(what, " over MPI in a build without MPI");
}

// The guard never talks without MPI (it runs only for NCCL's communicators then).
void talkPoll() {}
void talkAsk(const std::vector<int64_t>&, const RankState&) {}
std::optional<RankState> talkAnswer(int64_t, GuardClock::time_point) { return std::nullopt; }

void abortJobIfMpi(const std::string&, int) {}

}  // namespace detail

std::unique_ptr<TeamTransport> makeMpiTransport(const Team& team, TeamExchange&) {
  LOOM_UNREACHABLE("an MPI transport for a team of ", team.size(), " in a build without MPI");
}

}  // namespace loom::multidevice
