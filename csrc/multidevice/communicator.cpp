// SPDX-License-Identifier: Apache-2.0
// Communicator (communicator.h): the launcher's environment, and MPI for collectives on host
// buffers when the build has it (LOOM_HAVE_MPI).
#include "loom/multidevice/communicator.h"

#include <cstdlib>
#include <mutex>

#include "loom/support/error.h"

#ifdef LOOM_HAVE_MPI
#include <mpi.h>
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

#ifdef LOOM_HAVE_MPI
// MPI for the whole process: initialized once, finalized at exit when Loom initialized it.
class MpiSession {
 public:
  static void ensure() {
    static MpiSession session;
    (void)session;
  }

 private:
  MpiSession() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;  // the embedding program owns MPI
    int provided = 0;
    LOOM_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) == MPI_SUCCESS,
               "MPI_Init_thread failed");
    owned_ = true;
  }
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Finalize();
  }
  bool owned_ = false;
};

void checkMpi(int result, const char* what) {
  if (result == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(result, text, &len);
  LOOM_THROW("MPI: ", what, " failed: ", std::string(text, size_t(len)));
}
#endif

}  // namespace

Communicator::Communicator() {
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
  if (size_ > 1) MpiSession::ensure();
#endif
}

Communicator::Communicator(int64_t rank, int64_t size, int64_t local_rank, int64_t local_size)
    : rank_(rank), size_(size), local_rank_(local_rank), local_size_(local_size),
      source_("explicit") {
  LOOM_CHECK(size >= 1 && rank >= 0 && rank < size && local_size >= 1 && local_rank >= 0 &&
                 local_rank < local_size,
             "Communicator: rank ", rank, " of ", size, ", local rank ", local_rank, " of ",
             local_size, " is not a valid place");
}

Communicator& Communicator::instance() {
  static Communicator comm;
  return comm;
}

bool Communicator::hasMpi() {
#ifdef LOOM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void Communicator::requireMpi(const char* what) {
  LOOM_CHECK(hasMpi(), what, " between ", size_, " ranks needs MPI, and this Loom build has none "
             "(configure with an MPI installation; tools/install-deps.sh installs OpenMPI)");
#ifdef LOOM_HAVE_MPI
  MpiSession::ensure();
  int mpi_size = 0;
  checkMpi(MPI_Comm_size(MPI_COMM_WORLD, &mpi_size), "MPI_Comm_size");
  LOOM_CHECK(mpi_size == size_, what, ": the launcher says ", size_, " ranks (", source_,
             ") but MPI_COMM_WORLD has ", mpi_size);
#endif
}

void Communicator::barrier() {
  if (size_ == 1) return;
  requireMpi("a barrier");
  communications_.fetch_add(1, std::memory_order_relaxed);
#ifdef LOOM_HAVE_MPI
  checkMpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

std::vector<int64_t> Communicator::allgather(int64_t value) {
  std::vector<int64_t> out(static_cast<size_t>(size_), value);
  if (size_ == 1) return out;
  requireMpi("an allgather");
  communications_.fetch_add(1, std::memory_order_relaxed);
#ifdef LOOM_HAVE_MPI
  checkMpi(MPI_Allgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, MPI_COMM_WORLD),
           "MPI_Allgather");
#endif
  return out;
}

std::vector<std::string> Communicator::allgatherBytes(const std::string& bytes) {
  if (size_ == 1) return {bytes};
  std::vector<int64_t> lengths = allgather(int64_t(bytes.size()));
  std::vector<std::string> out(static_cast<size_t>(size_));
#ifdef LOOM_HAVE_MPI
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    LOOM_CHECK(lengths[i] <= int64_t(1) << 30, "allgatherBytes: rank ", i, " sends ",
               lengths[i], " bytes (at most 2^30)");
    counts[i] = int(lengths[i]);
    displs[i] = int(total);
    total += lengths[i];
    LOOM_CHECK(total <= int64_t(1) << 30, "allgatherBytes: more than 2^30 bytes in all");
  }
  std::string all(size_t(total), '\0');
  communications_.fetch_add(1, std::memory_order_relaxed);
  checkMpi(MPI_Allgatherv(bytes.data(), int(bytes.size()), MPI_CHAR, all.data(), counts.data(),
                          displs.data(), MPI_CHAR, MPI_COMM_WORLD),
           "MPI_Allgatherv");
  for (size_t i = 0; i < out.size(); ++i) out[i] = all.substr(size_t(displs[i]), size_t(counts[i]));
#endif
  return out;
}

}  // namespace loom::multidevice
