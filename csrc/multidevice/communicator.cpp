// SPDX-License-Identifier: Apache-2.0
// Communicator (communicator.h): the launcher's environment, the world's collectives on small
// host values (MPI, when this process can use it: mpi.h), and the teams' communicators. The
// collectives on tensors are in collectives.cpp.
#include "loom/multidevice/communicator.h"

#include <cstdlib>

#include "loom/support/error.h"
#include "multidevice/guard.h"
#include "multidevice/mpi.h"
#include "multidevice/team_cache.h"

namespace loom::multidevice {

namespace {

// An integer environment variable, or -1 when unset or not a number.
int64_t envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return *end == '\0' ? int64_t(x) : -1;
}

}  // namespace

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

std::string_view transportName(Transport t) {
  switch (t) {
    case Transport::None: return "none";
    case Transport::Local: return "local";
    case Transport::Mpi: return "mpi";
    case Transport::Nccl: return "nccl";
    case Transport::Staged: return "staged";
  }
  return "?";
}

Communicator::Communicator() : teams_(std::make_unique<TeamCache>()) {
  if (int64_t r = envInt("OMPI_COMM_WORLD_RANK"), s = envInt("OMPI_COMM_WORLD_SIZE");
      r >= 0 && s > 0) {
    rank_ = r;
    size_ = s;
    local_rank_ = std::max<int64_t>(0, envInt("OMPI_COMM_WORLD_LOCAL_RANK"));
    local_size_ = std::max<int64_t>(1, envInt("OMPI_COMM_WORLD_LOCAL_SIZE"));
    source_ = "OpenMPI";
  } else if (int64_t r2 = envInt("RANK"), s2 = envInt("WORLD_SIZE"); r2 >= 0 && s2 > 0) {
    rank_ = r2;
    size_ = s2;
    local_rank_ = std::max<int64_t>(0, envInt("LOCAL_RANK"));
    local_size_ = std::max<int64_t>(1, envInt("LOCAL_WORLD_SIZE"));
    source_ = "RANK/WORLD_SIZE";
  } else {
    source_ = "single process";
  }
  LOOM_CHECK(rank_ < size_ && local_rank_ < std::max(local_size_, int64_t(1)),
             "the launcher's environment is inconsistent: rank ", rank_, " of ", size_,
             ", local rank ", local_rank_, " of ", local_size_);
  // Under a launcher of several ranks, bring MPI up now: every rank constructs its
  // communicator at the same point, and a rank that fails shows it here. Without MPI every
  // rank's local program still runs; a collective between ranks says why there is no MPI.
  if (size_ > 1 && hasMpi()) detail::ensureMpi();
}

Communicator::Communicator(int64_t rank, int64_t size, int64_t local_rank, int64_t local_size)
    : rank_(rank), size_(size), local_rank_(local_rank), local_size_(local_size),
      source_("explicit"), teams_(std::make_unique<TeamCache>()) {
  LOOM_CHECK(size >= 1 && rank >= 0 && rank < size && local_size >= 1 && local_rank >= 0 &&
                 local_rank < local_size,
             "Communicator: rank ", rank, " of ", size, ", local rank ", local_rank, " of ",
             local_size, " is not a valid place");
}

Communicator::~Communicator() = default;  // ~TeamCache releases the teams

Team Communicator::world() const {
  Team team(static_cast<size_t>(size_));
  for (int64_t r = 0; r < size_; ++r) team[size_t(r)] = r;
  return team;
}

void Communicator::releaseTeams() { teams_->release(); }

Communicator& Communicator::instance() {
  static Communicator comm;
  // Registered after `comm`, the exit handler runs before `comm` is destroyed: an error exit
  // aborts the job rather than wait in the destruction of its teams' communicators.
  static const bool watched = [] {
    if (comm.size() > 1) detail::watchExitFromHere();
    return true;
  }();
  (void)watched;
  return comm;
}

bool Communicator::hasMpi() { return detail::mpiUnavailableReason().empty(); }

void Communicator::requireMpi(const char* what, int64_t ranks) {
  const std::string why = detail::mpiUnavailableReason();
  LOOM_CHECK(why.empty(), what, " between ", ranks, " ranks needs MPI, and ", why);
  detail::ensureMpi();
  const int64_t mpi_size = detail::mpiWorldSize();
  LOOM_CHECK(mpi_size == size_, what, ": the launcher says ", size_, " ranks (", source_,
             ") but MPI_COMM_WORLD has ", mpi_size);
}

void Communicator::barrier() {
  if (size_ == 1) return;
  requireMpi("a barrier", size_);
  communications_.fetch_add(1, std::memory_order_relaxed);
  detail::mpiBarrier(world_steps_);
}

std::vector<int64_t> Communicator::allgather(int64_t value) {
  if (size_ == 1) return {value};
  requireMpi("an allgather", size_);
  communications_.fetch_add(1, std::memory_order_relaxed);
  return detail::mpiAllgather(detail::Channel::World, "allgather", world_steps_, value, size_);
}

std::vector<std::string> Communicator::allgatherBytes(const std::string& bytes) {
  if (size_ == 1) return {bytes};
  requireMpi("an allgather", size_);
  communications_.fetch_add(2, std::memory_order_relaxed);  // the lengths, then the bytes
  return detail::mpiAllgatherBytes(detail::Channel::World, "allgatherBytes", world_steps_, bytes,
                                   size_);
}

std::vector<int64_t> Communicator::allgatherForCheck(int64_t value) {
  if (size_ == 1) return {value};
  requireMpi("the ranks' agreement check", size_);
  checks_.fetch_add(1, std::memory_order_relaxed);
  return detail::mpiAllgather(detail::Channel::Checks, "the ranks' agreement check", check_steps_,
                              value, size_);
}

std::vector<std::string> Communicator::allgatherBytesForCheck(const std::string& bytes) {
  if (size_ == 1) return {bytes};
  requireMpi("the ranks' agreement check", size_);
  return detail::mpiAllgatherBytes(detail::Channel::Checks, "the ranks' agreement check",
                                   check_steps_, bytes, size_);
}

}  // namespace loom::multidevice
