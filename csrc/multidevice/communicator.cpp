// SPDX-License-Identifier: Apache-2.0
// Communicator (communicator.h): the launcher's environment, the world's collectives on small
// host values (MPI, when the build has it: LOOM_HAVE_MPI), and the teams' communicators. The
// collectives on tensors are in collectives.cpp.
#include "loom/multidevice/communicator.h"

#include <cstdlib>

#include "loom/support/error.h"
#include "multidevice/team_cache.h"

#ifdef LOOM_HAVE_MPI
#include "multidevice/guard.h"
#include "multidevice/mpi.h"
#include "multidevice/mpi_guard.h"
#endif

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

#ifdef LOOM_HAVE_MPI
using detail::checkMpi;
#endif

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
#ifdef LOOM_HAVE_MPI
  // Under a launcher of several ranks, bring MPI up now: every rank constructs its
  // communicator at the same point, and a rank that fails shows it here.
  if (size_ > 1) detail::ensureMpi();
#endif
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
#ifdef LOOM_HAVE_MPI
  // Registered after `comm`, the exit handler runs before `comm` is destroyed: an error exit
  // aborts the job rather than wait in the destruction of its teams' communicators.
  static const bool watched = [] {
    if (comm.size() > 1) detail::watchExitFromHere();
    return true;
  }();
  (void)watched;
#endif
  return comm;
}

bool Communicator::hasMpi() {
#ifdef LOOM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void Communicator::requireMpi(const char* what, int64_t ranks) {
  LOOM_CHECK(hasMpi(), what, " between ", ranks, " ranks needs MPI, and this Loom build has none "
             "(configure with an MPI installation; tools/install-deps.sh installs OpenMPI)");
#ifdef LOOM_HAVE_MPI
  detail::ensureMpi();
  int mpi_size = 0;
  checkMpi(MPI_Comm_size(MPI_COMM_WORLD, &mpi_size), "MPI_Comm_size");
  LOOM_CHECK(mpi_size == size_, what, ": the launcher says ", size_, " ranks (", source_,
             ") but MPI_COMM_WORLD has ", mpi_size);
#endif
}

#ifdef LOOM_HAVE_MPI
namespace {

// Every rank's bytes over `comm` (the world's ranks), in rank order: their lengths, then them.
std::vector<std::string> gatherBytes(MPI_Comm comm, detail::Channel channel, const char* what,
                                     int64_t& steps, const std::string& bytes, int64_t size) {
  std::vector<int64_t> lengths(static_cast<size_t>(size));
  int64_t length = int64_t(bytes.size());
  {
    detail::Watch watch({what, channel, nullptr, ++steps});
    checkMpi(MPI_Allgather(&length, 1, MPI_INT64_T, lengths.data(), 1, MPI_INT64_T, comm),
             "MPI_Allgather");
  }
  std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    LOOM_CHECK(lengths[i] <= int64_t(1) << 30, what, ": rank ", i, " sends ", lengths[i],
               " bytes (at most 2^30)");
    counts[i] = int(lengths[i]);
    displs[i] = int(total);
    total += lengths[i];
    LOOM_CHECK(total <= int64_t(1) << 30, what, ": more than 2^30 bytes in all");
  }
  std::string all(size_t(total), '\0');
  {
    detail::Watch watch({what, channel, nullptr, ++steps});
    checkMpi(MPI_Allgatherv(bytes.data(), int(bytes.size()), MPI_CHAR, all.data(), counts.data(),
                            displs.data(), MPI_CHAR, comm),
             "MPI_Allgatherv");
  }
  std::vector<std::string> out(static_cast<size_t>(size));
  for (size_t i = 0; i < out.size(); ++i) out[i] = all.substr(size_t(displs[i]), size_t(counts[i]));
  return out;
}

}  // namespace
#endif

void Communicator::barrier() {
  if (size_ == 1) return;
  requireMpi("a barrier", size_);
  communications_.fetch_add(1, std::memory_order_relaxed);
#ifdef LOOM_HAVE_MPI
  detail::Watch watch({"barrier", detail::Channel::World, nullptr, ++world_steps_});
  checkMpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

std::vector<int64_t> Communicator::allgather(int64_t value) {
  std::vector<int64_t> out(static_cast<size_t>(size_), value);
  if (size_ == 1) return out;
  requireMpi("an allgather", size_);
  communications_.fetch_add(1, std::memory_order_relaxed);
#ifdef LOOM_HAVE_MPI
  detail::Watch watch({"allgather", detail::Channel::World, nullptr, ++world_steps_});
  checkMpi(MPI_Allgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, MPI_COMM_WORLD),
           "MPI_Allgather");
#endif
  return out;
}

std::vector<std::string> Communicator::allgatherBytes(const std::string& bytes) {
  if (size_ == 1) return {bytes};
  requireMpi("an allgather", size_);
  communications_.fetch_add(2, std::memory_order_relaxed);  // the lengths, then the bytes
#ifdef LOOM_HAVE_MPI
  return gatherBytes(MPI_COMM_WORLD, detail::Channel::World, "allgatherBytes", world_steps_, bytes,
                     size_);
#else
  return {};
#endif
}

std::vector<int64_t> Communicator::allgatherForCheck(int64_t value) {
  std::vector<int64_t> out(static_cast<size_t>(size_), value);
  if (size_ == 1) return out;
  requireMpi("the ranks' agreement check", size_);
  checks_.fetch_add(1, std::memory_order_relaxed);
#ifdef LOOM_HAVE_MPI
  detail::Watch watch(
      {"the ranks' agreement check", detail::Channel::Checks, nullptr, ++check_steps_});
  checkMpi(MPI_Allgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, detail::checksComm()),
           "MPI_Allgather");
#endif
  return out;
}

std::vector<std::string> Communicator::allgatherBytesForCheck(const std::string& bytes) {
  if (size_ == 1) return {bytes};
  requireMpi("the ranks' agreement check", size_);
#ifdef LOOM_HAVE_MPI
  return gatherBytes(detail::checksComm(), detail::Channel::Checks, "the ranks' agreement check",
                     check_steps_, bytes, size_);
#else
  return {};
#endif
}

}  // namespace loom::multidevice
