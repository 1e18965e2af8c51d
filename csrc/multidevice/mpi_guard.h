// SPDX-License-Identifier: Apache-2.0
// Private: how the guards of the ranks (guard.h) talk over MPI, on a duplicate of MPI_COMM_WORLD
// that nothing else uses, and the process's exit under MPI: a clean exit meets every rank before
// MPI_Finalize, an error exit (a non-zero status, std::terminate) aborts the job after telling
// the peers why. Only with LOOM_HAVE_MPI.
//
// Messages (tags): kAsk carries the asker's state and wants the receiver's (kAnswer); kFail says
// the sender fails and why, and wants a kAck. Only the guard's thread receives; any thread sends.
#pragma once

#ifdef LOOM_HAVE_MPI

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "multidevice/guard.h"

namespace loom::multidevice::detail {

/// Opens the talk on `comm` (owned from now on; a duplicate of the world). Main thread, at MPI's
/// start, before the guard's thread starts.
void talkOpen(MPI_Comm comm);
/// Cancels the pending receive and frees the communicator (after stopGuard()).
void talkClose() noexcept;
/// Guard thread: answers and records every message that has arrived.
void talkPoll();
/// Asks `ranks` for their state, telling them this rank's.
void talkAsk(const std::vector<int64_t>& ranks, const RankState& mine);
/// The state `rank` answered with after `since`, if it has.
std::optional<RankState> talkAnswer(int64_t rank, GuardClock::time_point since);
/// When this rank exits cleanly and a peer asked it while waiting for it: the line that says so.
std::optional<std::pair<std::string, GuardClock::time_point>> talkExitDeadlock();

/// Ends the job from an error exit: tells every other rank why (they print it), waits up to a
/// second for them to acknowledge, then MPI_Abort with `code`.
[[noreturn]] void failJob(const std::string& reason, int code);

/// The exit handlers: `onExit(status)` (registered with on_exit, so it sees the exit status) and
/// a std::terminate handler. Installed once MPI is up between several ranks; `owned`: Loom
/// initialized MPI, so a clean exit finalizes it.
void installExitHandlers(bool owned);
/// Registers the exit handler again, so that it runs before objects made so far are destroyed
/// (Communicator::instance(): a failing exit must not wait in its communicators' destruction).
void watchExitFromHere();

}  // namespace loom::multidevice::detail

#endif  // LOOM_HAVE_MPI
