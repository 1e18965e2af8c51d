// SPDX-License-Identifier: Apache-2.0
// Private: the guard of a job of several ranks, so that no rank waits forever for a peer that
// will never come (docs/multidevice.md, "When a rank fails").
//
// A thread of Loom's own (started with MPI between several ranks, or by the first watched NCCL
// communicator) wakes every few tens of milliseconds and
//   - times the blocking step the rank waits in (a Watch: a collective, the creation of a team's
//     communicator, the ranks' agreement check): one that outlasts LOOM_COMM_TIMEOUT ends the job
//     with what it was, its team and which ranks had arrived (asked of their guards);
//   - asks the team's guards what they do once a wait passes a second (then every few seconds):
//     a member that left the program cleanly will never come, and two members whose n-th
//     collective on one team differ never match, so either ends the job at once;
//   - answers its peers' questions, and tells them when this rank fails;
//   - checks the watched NCCL communicators (their queued collectives and asynchronous errors).
// The MPI side of the talk between guards is in mpi_guard.cpp; this file is the part that needs
// no MPI.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "loom/multidevice/communicator.h"

namespace loom::multidevice::detail {

using GuardClock = std::chrono::steady_clock;

/// LOOM_COMM_TIMEOUT in seconds (fractions allowed), read once: how long one blocking step may
/// wait for its peers before the job ends. Default 600; 0: no deadline. A UserError naming the
/// variable when it is not a number >= 0.
double commTimeoutSeconds();

/// The channel a step runs on (an MPI communicator of Loom's): steps are numbered per channel and
/// team, and only steps of one channel can be matched against each other.
enum class Channel : uint8_t {
  World,   ///< the Communicator's collectives on MPI_COMM_WORLD
  Checks,  ///< the ranks' agreement checks (checksComm)
  Team,    ///< a team's collectives on its communicator
  Setup,   ///< making a team's communicators
};

/// A blocking step with peers. `what` is a static name ("allreduce"), `team` the world ranks
/// taking part (null: the world; it must outlive the Watch), `seq` the step's number on its
/// channel and team (1 for the first). `symmetric`: no member gets past the step before every
/// member has arrived (allreduce, barrier; not broadcast, gather, sendRecv, whose members may
/// finish early).
struct Step {
  const char* what;
  Channel channel;
  const Team* team;
  int64_t seq;
  bool symmetric = true;
};

/// Marks the calling thread as waiting in `step` until destroyed. Nested Watches restore the
/// outer one; Watches on several threads at once mark the rank as busy on several (its peers
/// then only time it). Costs a lock and a clock read.
class Watch {
 public:
  explicit Watch(const Step& step);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  Step outer_;
  GuardClock::time_point outer_since_;
  bool outer_active_;
};

/// What a rank is doing, as its guard tells its peers.
struct RankState {
  enum class Kind : uint8_t { Idle, Waiting, Exiting, Failing };
  Kind kind = Kind::Idle;
  std::string what;  ///< Waiting: the step; Failing: the reason
  Channel channel = Channel::World;
  bool world = true;  ///< Waiting: the team is the world
  Team team;          ///< Waiting: the team, unless `world`
  int64_t seq = 0;
  bool symmetric = false;   ///< Waiting: see Watch
  bool concurrent = false;  ///< Waiting: Watches on several threads at once
  double seconds = 0;       ///< Waiting: how long so far
  int status = 0;           ///< Exiting: the exit status

  /// "waits in allreduce #3 on team [0, 1] (for 1.2 s)", "exits (status 0)", ...
  std::string describe() const;
  /// True when `rank` takes part in the step this state waits in.
  bool involves(int64_t rank) const;
  /// True when both wait in the same step (same name, channel, team and number).
  bool sameStep(const RankState& other) const;
  std::string encode() const;
  static RankState decode(const std::string& bytes);
};

/// This rank's state now (the innermost Watch, or what the exit path set).
RankState currentState();
/// Sets the state the exit path reports (Exiting or Failing); the Watches are then ignored.
void setFinalState(RankState state);

/// Something the guard checks on each tick: an NCCL communicator with queued collectives.
class Watched {
 public:
  virtual ~Watched() = default;
  /// Why the job must end now (an asynchronous error, a collective past `timeout` seconds), or
  /// nothing. Called from the guard's thread.
  virtual std::optional<std::string> check(GuardClock::time_point now, double timeout) = 0;
  /// Ends the communicator's work without waiting for peers (ncclCommAbort). Once; any thread.
  virtual void abortNow() noexcept = 0;
};
/// Starts checking `w` (and the guard, when it is not running); `w` unwatches itself before it
/// is destroyed.
void watch(Watched* w);
void unwatch(Watched* w) noexcept;

/// Where this rank stands in the world, for the guard's lines; set when MPI starts.
void setGuardRank(int64_t rank, int64_t size);

/// Starts the guard's thread (once). `talk`: the guards exchange states over MPI (needs
/// MPI_THREAD_MULTIPLE, since the guard calls MPI while the rank waits in a collective).
void startGuard(bool talk);
/// Stops the thread and waits for it (before MPI is finalized). Idempotent.
void stopGuard() noexcept;

/// Prints "loom: rank R of N: <message>; aborting the job" to stderr, aborts every watched
/// communicator, and ends the job: MPI_Abort when MPI is up, else std::abort(). Any thread.
[[noreturn]] void abortJob(const std::string& message, int code = 1);

/// Prints "loom: rank R of N: <line>" to stderr at once (unbuffered, one write).
void guardPrint(const std::string& line);

}  // namespace loom::multidevice::detail
