// SPDX-License-Identifier: Apache-2.0
// Private: how the guards of the ranks (guard.h) talk over MPI, on a duplicate of MPI_COMM_WORLD
// that nothing else uses, and the process's exit under MPI: a clean exit meets every rank before
// MPI_Finalize, an error exit (a non-zero status, std::terminate) aborts the job after telling
// the peers why. The part of the talk the guard calls (talkPoll, talkAsk, talkAnswer) is in
// mpi.h; this is the part that takes MPI's types, for the files that speak MPI.
//
// Messages (tags): kAsk carries the asker's state and wants the receiver's (kAnswer); kFail says
// the sender fails and why, and wants a kAck. Only the guard's thread receives; any thread sends.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "multidevice/guard.h"
#include "multidevice/mpi_api.h"

namespace loom::multidevice::detail {

/// Opens the talk on `comm` (owned from now on; a duplicate of the world). Main thread, at MPI's
/// start, before the guard's thread starts.
void talkOpen(MPI_Comm comm);
/// Cancels the pending receive and frees the communicator (after stopGuard()).
void talkClose() noexcept;
/// When this rank exits cleanly and a peer asked it while waiting for it: the line that says so.
std::optional<std::pair<std::string, GuardClock::time_point>> talkExitDeadlock();

/// Ends the job from an error exit: tells every other rank why (they print it), waits up to a
/// second for them to acknowledge, then MPI_Abort with `code`.
[[noreturn]] void failJob(const std::string& reason, int code);

/// The exit handlers: `onExit(status)` (registered with on_exit, so it sees the exit status) and
/// a std::terminate handler. Installed once MPI is up between several ranks; `owned`: Loom
/// initialized MPI, so a clean exit finalizes it.
void installExitHandlers(bool owned);

}  // namespace loom::multidevice::detail
