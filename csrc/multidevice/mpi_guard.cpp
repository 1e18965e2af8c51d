// SPDX-License-Identifier: Apache-2.0
// The guards' talk over MPI and the process's exit under MPI (mpi.h, mpi_guard.h), over the
// library opened at run time (mpi_api.h).
#include "multidevice/mpi_guard.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <list>
#include <mutex>
#include <thread>

#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "multidevice/mpi.h"

namespace loom::multidevice::detail {
namespace {

using ::loom::detail::concat;

constexpr int kAsk = 1;
constexpr int kAnswer = 2;
constexpr int kFail = 3;
constexpr int kAck = 4;
// A state names a team: room for a few thousand ranks.
constexpr int kMaxMessage = 1 << 16;
// How long a failing rank waits for its peers to acknowledge (and so print) why, and how long a
// rank that left the program waits, once a peer was seen waiting for it, before it ends the job
// itself.
constexpr double kFailGrace = 1.0;
constexpr double kExitGrace = 2.0;

struct Talk {
  std::mutex mutex;  // everything below
  bool open = false;
  bool talking = false;  // the guards exchange messages (MPI_THREAD_MULTIPLE)
  // Set by talkOpen (MPI's null handles are the library's, known once it is open).
  MPI_Comm comm = nullptr;
  MPI_Comm exit = nullptr;  // the clean exit's barrier
  int rank = 0;
  int size = 1;
  MPI_Request recv = nullptr;
  std::vector<char> buffer;
  struct Answer {
    RankState state;
    GuardClock::time_point at;
    bool valid = false;
  };
  std::vector<Answer> answers;
  std::vector<bool> acked;
  struct Send {
    std::string bytes;
    MPI_Request request = nullptr;  // set by MPI_Isend
  };
  std::list<Send> sends;  // kept until sent: MPI reads the bytes until then
  std::optional<std::pair<std::string, GuardClock::time_point>> exitDeadlock;
};

Talk& talk() {
  static Talk* t = new Talk;  // never destroyed: the exit handlers run late
  return *t;
}

// With t.mutex held.
void post(Talk& t) {
  const MpiApi& m = mpi();
  m.MPI_Irecv(t.buffer.data(), kMaxMessage, m.charType, MPI_ANY_SOURCE, MPI_ANY_TAG, t.comm,
              &t.recv);
}

// With t.mutex held: frees the sends that are done.
void reap(Talk& t) {
  for (auto it = t.sends.begin(); it != t.sends.end();) {
    int done = 0;
    mpi().MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? t.sends.erase(it) : std::next(it);
  }
}

// With t.mutex held.
void send(Talk& t, int to, int tag, std::string bytes) {
  if (bytes.size() > size_t(kMaxMessage)) bytes.resize(size_t(kMaxMessage));
  Talk::Send& s = t.sends.emplace_back();
  s.bytes = std::move(bytes);
  const MpiApi& m = mpi();
  m.MPI_Isend(s.bytes.data(), int(s.bytes.size()), m.charType, to, tag, t.comm, &s.request);
}

// With t.mutex held: one message from `source`.
void handle(Talk& t, int source, int tag, const std::string& bytes) {
  switch (tag) {
    case kAsk: {
      const RankState mine = currentState();
      send(t, source, kAnswer, mine.encode());
      const RankState theirs = RankState::decode(bytes);
      if (mine.kind == RankState::Kind::Exiting && theirs.involves(t.rank) && !t.exitDeadlock) {
        std::string line = concat("left the program (exit status ", mine.status, ") while rank ",
                                  source, " ", theirs.describe(), ", which needs this rank");
        guardPrint(line);
        t.exitDeadlock = {std::move(line), GuardClock::now()};
      }
      return;
    }
    case kAnswer:
      t.answers[size_t(source)] = {RankState::decode(bytes), GuardClock::now(), true};
      return;
    case kFail: {
      const RankState mine = currentState();
      if (mine.kind != RankState::Kind::Failing) {
        guardPrint(concat("rank ", source, " fails (", bytes, "); this rank ", mine.describe(),
                          ": the job ends"));
      }
      send(t, source, kAck, "");
      return;
    }
    case kAck: t.acked[size_t(source)] = true; return;
    default: return;
  }
}

struct ExitHandlers {
  std::atomic<bool> ran{false};
  bool owned = false;
  pid_t pid = 0;  // a forked child runs no MPI at its exit
  std::terminate_handler previous = nullptr;
  std::once_flag installed;
  std::once_flag again;
};

ExitHandlers& exitHandlers() {
  static ExitHandlers* h = new ExitHandlers;
  return *h;
}

// MPI opened, initialized and not finalized; never opens the library.
bool mpiUp() {
  const MpiApi* m = mpiIfOpen();
  if (m == nullptr) return false;
  int initialized = 0;
  int finalized = 0;
  m->MPI_Initialized(&initialized);
  m->MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int worldSize() {
  int size = 1;
  mpi().MPI_Comm_size(mpi().commWorld, &size);
  return size;
}

// A clean exit: meets every rank before MPI_Finalize, as MPI_Finalize would, but answers the
// peers meanwhile; a peer found waiting for this rank ends the job.
void exitBarrier(int status) {
  Talk& t = talk();
  RankState exiting;
  exiting.kind = RankState::Kind::Exiting;
  exiting.status = status;
  setFinalState(exiting);
  const MpiApi& m = mpi();
  MPI_Request barrier = m.requestNull;
  if (m.MPI_Ibarrier(t.exit, &barrier) != MPI_SUCCESS) return;
  for (;;) {
    int done = 0;
    m.MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (auto seen = talkExitDeadlock()) {
      if (std::chrono::duration<double>(GuardClock::now() - seen->second).count() > kExitGrace) {
        abortJob(seen->first, 1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void onExit(int status, void*) {
  ExitHandlers& h = exitHandlers();
  if (getpid() != h.pid || h.ran.exchange(true) || !mpiUp()) return;
  if (worldSize() > 1) {
    if (status != 0) {
      failJob(concat("exits with status ", status), status);
    }
    if (talk().open) exitBarrier(status);
  }
  if (h.owned) mpi().MPI_Finalize();
}

#ifndef __GLIBC__
void onExitWithoutStatus() { onExit(0, nullptr); }
#endif

void registerOnExit() {
#ifdef __GLIBC__
  on_exit(onExit, nullptr);
#else
  std::atexit(onExitWithoutStatus);  // no exit status: every exit is taken as clean
#endif
}

[[noreturn]] void onTerminate() {
  ExitHandlers& h = exitHandlers();
  std::string what = "no exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = concat("uncaught exception: ", x.what());
    } catch (...) {
      what = "an uncaught exception of a type not derived from std::exception";
    }
  }
  if (getpid() == h.pid && mpiUp() && worldSize() > 1 && !h.ran.exchange(true)) {
    guardPrint(concat("std::terminate: ", what));
    failJob(concat("std::terminate: ", what), 1);
  }
  if (h.previous != nullptr) h.previous();
  std::abort();
}

}  // namespace

void talkOpen(MPI_Comm comm) {
  const MpiApi& m = mpi();
  Talk& t = talk();
  std::lock_guard lock(t.mutex);
  int provided = MPI_THREAD_SINGLE;
  m.MPI_Query_thread(&provided);
  t.comm = comm;
  t.recv = m.requestNull;
  m.MPI_Comm_rank(comm, &t.rank);
  m.MPI_Comm_size(comm, &t.size);
  m.MPI_Comm_dup(comm, &t.exit);
  t.talking = provided >= MPI_THREAD_MULTIPLE;
  t.answers.assign(size_t(t.size), {});
  t.acked.assign(size_t(t.size), false);
  t.buffer.assign(size_t(kMaxMessage), '\0');
  if (t.talking) post(t);
  t.open = true;
}

void talkClose() noexcept {
  Talk& t = talk();
  std::lock_guard lock(t.mutex);
  if (!t.open) return;
  const MpiApi& m = mpi();
  if (t.recv != m.requestNull) {
    m.MPI_Cancel(&t.recv);
    m.MPI_Wait(&t.recv, MPI_STATUS_IGNORE);
  }
  // Answers still on their way are dropped with the communicator.
  for (Talk::Send& s : t.sends) {
    m.MPI_Cancel(&s.request);
    m.MPI_Request_free(&s.request);
  }
  t.sends.clear();
  m.MPI_Comm_free(&t.exit);
  m.MPI_Comm_free(&t.comm);
  t.open = false;
  t.talking = false;
}

void talkPoll() {
  Talk& t = talk();
  std::lock_guard lock(t.mutex);
  if (!t.talking) return;
  const MpiApi& m = mpi();
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    m.MPI_Test(&t.recv, &arrived, &status);
    if (!arrived) break;
    int count = 0;
    m.MPI_Get_count(&status, m.charType, &count);
    std::string bytes(t.buffer.data(), size_t(std::max(count, 0)));
    post(t);
    handle(t, status.MPI_SOURCE, status.MPI_TAG, bytes);
  }
  reap(t);
}

void talkAsk(const std::vector<int64_t>& ranks, const RankState& mine) {
  Talk& t = talk();
  std::lock_guard lock(t.mutex);
  if (!t.talking) return;
  const std::string bytes = mine.encode();
  for (int64_t r : ranks) send(t, int(r), kAsk, bytes);
}

std::optional<RankState> talkAnswer(int64_t rank, GuardClock::time_point since) {
  Talk& t = talk();
  std::lock_guard lock(t.mutex);
  if (rank < 0 || size_t(rank) >= t.answers.size()) return std::nullopt;
  const Talk::Answer& a = t.answers[size_t(rank)];
  if (!a.valid || a.at < since) return std::nullopt;
  return a.state;
}

std::optional<std::pair<std::string, GuardClock::time_point>> talkExitDeadlock() {
  Talk& t = talk();
  std::lock_guard lock(t.mutex);
  return t.exitDeadlock;
}

void failJob(const std::string& reason, int code) {
  RankState failing;
  failing.kind = RankState::Kind::Failing;
  failing.what = reason;
  setFinalState(failing);
  Talk& t = talk();
  bool talking = false;
  {
    std::lock_guard lock(t.mutex);
    talking = t.talking;
    for (int r = 0; talking && r < t.size; ++r) {
      if (r != t.rank) send(t, r, kFail, reason);
    }
  }
  // The guard's thread collects the acknowledgements (each peer prints the reason first).
  const GuardClock::time_point start = GuardClock::now();
  while (talking && std::chrono::duration<double>(GuardClock::now() - start).count() < kFailGrace) {
    bool all = true;
    {
      std::lock_guard lock(t.mutex);
      for (int r = 0; r < t.size; ++r) all = all && (r == t.rank || t.acked[size_t(r)]);
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  abortJob(concat(reason, " while its peers may wait for it"), code);
}

void installExitHandlers(bool owned) {
  ExitHandlers& h = exitHandlers();
  std::call_once(h.installed, [&] {
    h.owned = owned;
    h.pid = getpid();
    registerOnExit();
    h.previous = std::set_terminate(onTerminate);
  });
}

void watchExitFromHere() {
  if (!mpiUp()) return;
  ExitHandlers& h = exitHandlers();
  std::call_once(h.again, registerOnExit);
}

void abortJobIfMpi(const std::string& message, int code) {
  if (!mpiUp()) return;
  guardPrint(concat(message, ": aborting the job (MPI_Abort)"));
  mpi().MPI_Abort(mpi().commWorld, code);
}

}  // namespace loom::multidevice::detail
