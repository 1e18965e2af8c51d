// SPDX-License-Identifier: Apache-2.0
// The guard of a job of several ranks (guard.h): the step this rank waits in, the thread that
// times it and asks the peers about theirs, the watched NCCL communicators, and ending the job.
#include "multidevice/guard.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "multidevice/mpi.h"

namespace loom::multidevice::detail {
namespace {

using ::loom::detail::concat;
using Seconds = std::chrono::duration<double>;

// How often the guard wakes: the delay of an answer to a peer's question.
constexpr auto kTick = std::chrono::milliseconds(25);
// A wait this long asks the team what its members do; the next asks come at doubling intervals
// up to kMaxAskInterval.
constexpr double kFirstAsk = 1.0;
constexpr double kMaxAskInterval = 8.0;
// How long a timed-out rank waits for its team's answers before it reports.
constexpr double kCensusSeconds = 1.0;

// The step this rank waits in (the innermost Watch), or the state the exit path set.
struct Slot {
  std::mutex mutex;
  bool active = false;
  Step step{nullptr, Channel::World, nullptr, 0, false};
  GuardClock::time_point since;
  int depth = 0;            // Watches alive
  std::thread::id owner;    // the thread of the outermost one
  bool concurrent = false;  // another thread's Watch began while one was alive
  uint64_t generation = 0;  // changes with every Watch: a new step
  std::optional<RankState> final;
};

struct Guard {
  std::mutex mutex;  // the thread's start and stop, and `watched`
  std::thread thread;
  bool running = false;
  bool stop = false;
  bool talk = false;
  std::vector<Watched*> watched;
  int64_t rank = 0;
  int64_t size = 1;
};

// Never destroyed: a Watch or an unwatch may come from a static destructor after others are gone.
Slot& slot() {
  static Slot* s = new Slot;
  return *s;
}
Guard& guard() {
  static Guard* g = new Guard;
  return *g;
}

// This rank's state and the Watch generation it belongs to.
RankState snapshot(uint64_t* generation);

std::string teamText(bool world, const Team& team) {
  return world ? std::string("the world") : concat("team [", join(team), "]");
}

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.1f" : "%.0f", s);
  return buf;
}

// The members of the step `mine` waits in, this rank left out.
std::vector<int64_t> othersOf(const RankState& mine, int64_t me, int64_t size) {
  std::vector<int64_t> out;
  if (mine.world) {
    for (int64_t r = 0; r < size; ++r) {
      if (r != me) out.push_back(r);
    }
  } else {
    for (int64_t r : mine.team) {
      if (r != me) out.push_back(r);
    }
  }
  return out;
}

// After a timeout: asks the step's other members what they do and says which had arrived.
std::string census(const RankState& mine, int64_t me, int64_t size) {
  const std::vector<int64_t> others = othersOf(mine, me, size);
  const GuardClock::time_point asked = GuardClock::now();
  talkAsk(others, mine);
  std::vector<std::optional<RankState>> answers(others.size());
  while (Seconds(GuardClock::now() - asked).count() < kCensusSeconds) {
    talkPoll();
    bool all = true;
    for (size_t i = 0; i < others.size(); ++i) {
      if (!answers[i]) answers[i] = talkAnswer(others[i], asked);
      all = all && answers[i].has_value();
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<int64_t> arrived = {me};
  std::vector<std::string> elsewhere;
  for (size_t i = 0; i < others.size(); ++i) {
    if (answers[i] && answers[i]->sameStep(mine)) {
      arrived.push_back(others[i]);
    } else {
      elsewhere.push_back(concat(
          "rank ", others[i], " ",
          answers[i] ? answers[i]->describe() : "did not answer (it may have died or hung)"));
    }
  }
  std::sort(arrived.begin(), arrived.end());
  return concat("ranks that had arrived: [", join(arrived), "]", elsewhere.empty() ? "" : "; ",
                join(elsewhere, "; "));
}

// A member's answer that proves the step can never complete, or nothing.
std::optional<std::string> hopeless(const RankState& mine, int64_t member,
                                    const RankState& theirs) {
  if (theirs.kind == RankState::Kind::Exiting) {
    return concat(mine.what, " #", mine.seq, " on ", teamText(mine.world, mine.team),
                  " cannot complete: rank ", member, " has left the program (exit status ",
                  theirs.status, ") without taking part");
  }
  if (theirs.kind == RankState::Kind::Waiting && theirs.channel == mine.channel &&
      theirs.world == mine.world && theirs.team == mine.team && theirs.seq == mine.seq &&
      theirs.what != mine.what) {
    return concat("the ranks call different collectives: step #", mine.seq, " on ",
                  teamText(mine.world, mine.team), " is ", mine.what, " on this rank and ",
                  theirs.what, " on rank ", member);
  }
  return std::nullopt;
}

// Two ranks that each wait, for a second or more, in a step the other must join first, where
// neither step lets anyone through before all have arrived: neither step can ever complete.
bool waitForEachOther(const RankState& mine, int64_t me, const RankState& theirs) {
  return mine.symmetric && !mine.concurrent && theirs.kind == RankState::Kind::Waiting &&
         theirs.symmetric && !theirs.concurrent && !theirs.sameStep(mine) && theirs.involves(me);
}

// One step's questions to its team, asked at doubling intervals.
struct Asking {
  uint64_t generation = ~uint64_t{0};
  double next = kFirstAsk;
  std::optional<GuardClock::time_point> askedAt;
  // Per member: its answer to an earlier question of this step, and when that was asked.
  std::map<int64_t, std::pair<RankState, GuardClock::time_point>> earlier;
};

void readAnswers(const RankState& mine, Asking& asking, int64_t me, int64_t size) {
  for (int64_t member : othersOf(mine, me, size)) {
    std::optional<RankState> theirs = talkAnswer(member, *asking.askedAt);
    if (!theirs) continue;
    if (auto why = hopeless(mine, member, *theirs)) abortJob(*why);
    auto seen = asking.earlier.find(member);
    if (seen != asking.earlier.end() && seen->second.second < *asking.askedAt &&
        seen->second.first.sameStep(*theirs) && waitForEachOther(mine, me, *theirs)) {
      // The same step on a team named differently (the members' order differs), or steps
      // issued in different orders.
      const bool teamNamedDifferently =
          theirs->what == mine.what && theirs->channel == mine.channel && theirs->seq == mine.seq;
      abortJob(concat("the ranks wait for each other: this rank waits in ", mine.what, " #",
                      mine.seq, " on ", teamText(mine.world, mine.team), ", which needs rank ",
                      member, ", while rank ", member, " ", theirs->describe(),
                      ", which needs this rank (",
                      teamNamedDifferently ? "the ranks name the team differently"
                                           : "the ranks issue collectives in different orders",
                      ")"));
    }
    asking.earlier[member] = {*theirs, *asking.askedAt};
  }
}

void checkWaiting(const RankState& mine, uint64_t generation, Asking& asking, double timeout,
                  bool talk) {
  const Guard& g = guard();
  if (generation != asking.generation) {
    asking = Asking{};
    asking.generation = generation;
  }
  if (talk && asking.askedAt) readAnswers(mine, asking, g.rank, g.size);
  if (talk && mine.seconds >= asking.next) {
    asking.askedAt = GuardClock::now();
    talkAsk(othersOf(mine, g.rank, g.size), mine);
    asking.next = mine.seconds + std::min(std::max(mine.seconds, kFirstAsk), kMaxAskInterval);
  }
  if (timeout > 0 && mine.seconds > timeout) {
    std::string arrived = "which ranks had arrived is unknown (MPI is not threaded enough to ask)";
    if (talk) arrived = census(mine, g.rank, g.size);
    abortJob(concat(mine.what, " #", mine.seq, " on ", teamText(mine.world, mine.team),
                    " did not complete within ", secondsText(timeout),
                    " s (LOOM_COMM_TIMEOUT): ", arrived));
  }
}

void checkWatched(double timeout) {
  std::optional<std::string> why;
  {
    std::lock_guard lock(guard().mutex);
    const GuardClock::time_point now = GuardClock::now();
    for (Watched* w : guard().watched) {
      why = w->check(now, timeout);
      if (why) break;
    }
  }
  if (why) abortJob(*why);
}

void run(bool talk, double timeout) {
  Asking asking;
  for (;;) {
    {
      std::lock_guard lock(guard().mutex);
      if (guard().stop) return;
    }
    if (talk) talkPoll();
    uint64_t generation = 0;
    const RankState mine = snapshot(&generation);
    if (mine.kind == RankState::Kind::Waiting) {
      checkWaiting(mine, generation, asking, timeout, talk);
    }
    checkWatched(timeout);
    std::this_thread::sleep_for(kTick);
  }
}

}  // namespace

double commTimeoutSeconds() {
  static const double seconds = [] {
    const char* v = std::getenv("LOOM_COMM_TIMEOUT");
    if (v == nullptr || *v == '\0') return 600.0;
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    LOOM_CHECK(end != v && *end == '\0' && std::isfinite(s) && s >= 0, "LOOM_COMM_TIMEOUT='", v,
               "': expected a number of seconds >= 0 (how long a collective may wait for its "
               "peers; 0: no deadline)");
    return s;
  }();
  return seconds;
}

Watch::Watch(const Step& step) : outer_(step), outer_since_(GuardClock::now()) {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  outer_active_ = s.active;
  std::swap(outer_, s.step);
  std::swap(outer_since_, s.since);
  s.active = true;
  if (s.depth++ == 0) {
    s.owner = std::this_thread::get_id();
  } else if (s.owner != std::this_thread::get_id()) {
    s.concurrent = true;
  }
  ++s.generation;
}

Watch::~Watch() {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  s.step = outer_;
  s.since = outer_since_;
  s.active = outer_active_;
  if (--s.depth == 0) s.concurrent = false;
  ++s.generation;
}

std::string RankState::describe() const {
  switch (kind) {
    case Kind::Idle: return "is not in a collective of Loom's (it computes, or waits elsewhere)";
    case Kind::Waiting:
      return concat("waits in ", what, " #", seq, " on ", teamText(world, team), " (for ",
                    secondsText(seconds), " s)");
    case Kind::Exiting: return concat("has left the program (exit status ", status, ")");
    case Kind::Failing: return concat("fails (", what, ")");
  }
  return "?";
}

bool RankState::involves(int64_t rank) const {
  return kind == Kind::Waiting &&
         (world || std::find(team.begin(), team.end(), rank) != team.end());
}

bool RankState::sameStep(const RankState& other) const {
  return kind == Kind::Waiting && other.kind == Kind::Waiting && what == other.what &&
         channel == other.channel && world == other.world && team == other.team && seq == other.seq;
}

// Fields separated by '\n' (no name holds one): kind, what, channel, world, team, seq,
// symmetric, concurrent, milliseconds, status.
std::string RankState::encode() const {
  return concat(int(kind), "\n", what, "\n", int(channel), "\n", world ? 1 : 0, "\n",
                join(team, ","), "\n", seq, "\n", symmetric ? 1 : 0, "\n", concurrent ? 1 : 0, "\n",
                int64_t(seconds * 1000), "\n", status);
}

RankState RankState::decode(const std::string& bytes) {
  const std::vector<std::string> f = split(bytes, '\n');
  RankState s;
  if (f.size() != 10) return s;  // not one of ours: reported as idle
  auto num = [](const std::string& t) { return std::strtoll(t.c_str(), nullptr, 10); };
  s.kind = static_cast<Kind>(std::clamp<long long>(num(f[0]), 0, 3));
  s.what = f[1];
  s.channel = static_cast<Channel>(std::clamp<long long>(num(f[2]), 0, 3));
  s.world = num(f[3]) != 0;
  if (!f[4].empty()) {
    for (const std::string& r : split(f[4], ',')) s.team.push_back(num(r));
  }
  s.seq = num(f[5]);
  s.symmetric = num(f[6]) != 0;
  s.concurrent = num(f[7]) != 0;
  s.seconds = double(num(f[8])) / 1000;
  s.status = int(num(f[9]));
  return s;
}

RankState currentState() { return snapshot(nullptr); }

namespace {

RankState snapshot(uint64_t* generation) {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  if (generation != nullptr) *generation = s.generation;
  if (s.final) return *s.final;
  RankState state;
  if (!s.active) return state;
  state.kind = RankState::Kind::Waiting;
  state.what = s.step.what;
  state.channel = s.step.channel;
  state.world = s.step.team == nullptr;
  if (s.step.team != nullptr) state.team = *s.step.team;
  state.seq = s.step.seq;
  state.symmetric = s.step.symmetric;
  state.concurrent = s.concurrent;
  state.seconds = Seconds(GuardClock::now() - s.since).count();
  return state;
}

}  // namespace

void setFinalState(RankState state) {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  s.final = std::move(state);
}

void watch(Watched* w) {
  startGuard(false);
  std::lock_guard lock(guard().mutex);
  guard().watched.push_back(w);
}

void unwatch(Watched* w) noexcept {
  std::lock_guard lock(guard().mutex);
  auto& v = guard().watched;
  v.erase(std::remove(v.begin(), v.end(), w), v.end());
}

void setGuardRank(int64_t rank, int64_t size) {
  std::lock_guard lock(guard().mutex);
  guard().rank = rank;
  guard().size = size;
}

void startGuard(bool talk) {
  const double timeout = commTimeoutSeconds();
  Guard& g = guard();
  std::lock_guard lock(g.mutex);
  if (g.running) return;
  g.running = true;
  g.stop = false;
  g.talk = talk;
  g.thread = std::thread(run, talk, timeout);
}

void stopGuard() noexcept {
  Guard& g = guard();
  std::thread t;
  {
    std::lock_guard lock(g.mutex);
    if (!g.running) return;
    g.stop = true;
    g.running = false;
    t = std::move(g.thread);
  }
  if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
}

void guardPrint(const std::string& line) {
  int64_t rank = 0;
  int64_t size = 1;
  {
    Guard& g = guard();
    // The guard's own thread may hold the lock while it reports: never wait for it here.
    std::unique_lock lock(g.mutex, std::try_to_lock);
    if (lock.owns_lock()) {
      rank = g.rank;
      size = g.size;
    }
  }
  const std::string text = concat("loom: rank ", rank, " of ", size, ": ", line, "\n");
  // One write, so that lines of several ranks interleaved by the launcher stay whole.
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

void abortJob(const std::string& message, int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  {
    Guard& g = guard();
    std::unique_lock lock(g.mutex, std::defer_lock);
    // A Watched reporting from the guard's thread is not holding the lock (checkWatched releases
    // it first); a stuck holder elsewhere must not stop the abort.
    for (int i = 0; i < 100 && !lock.try_lock(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (lock.owns_lock()) {
      for (Watched* w : g.watched) w->abortNow();
    }
  }
  abortJobIfMpi(message, code);
  guardPrint(concat(message, ": aborting"));
  std::abort();
}

}  // namespace loom::multidevice::detail
