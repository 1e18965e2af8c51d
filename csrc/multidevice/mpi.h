// SPDX-License-Identifier: Apache-2.0
// Private: MPI as the rest of multidevice sees it, without MPI's types: whether this process can
// use MPI, bringing it up, the world's collectives on small host values, the hooks that run
// before MPI_Finalize, and the guards' talk (guard.h). Where the build found OpenMPI's mpi.h,
// mpi.cpp and mpi_guard.cpp define it over MPI loaded at run time (mpi_api.h); elsewhere
// no_mpi.cpp does, with no MPI at all. CMake picks the files, so no source tests for MPI.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "multidevice/guard.h"

namespace loom::multidevice::detail {

/// Why this process cannot use MPI, or an empty string: the build has no MPI, or no MPI library
/// could be loaded (what was tried and how to fix it). Opens MPI's library on the first call,
/// never initializes MPI, never throws.
std::string mpiUnavailableReason() noexcept;

/// Initializes MPI once per process (MPI_THREAD_MULTIPLE, so that the guard's thread can talk
/// while a rank waits in a collective) unless the embedding program did, and, between several
/// ranks, starts the guard (guard.h) and the exit handlers (mpi_guard.h): a clean exit finalizes
/// what Loom initialized, an error exit aborts the job. Only once mpiUnavailableReason() is empty.
void ensureMpi();

/// The size of MPI_COMM_WORLD (after ensureMpi()).
int64_t mpiWorldSize();

/// Registers the exit handler again, so that it runs before objects made so far are destroyed
/// (Communicator::instance(): a failing exit must not wait in its communicators' destruction).
/// Nothing when MPI is not up.
void watchExitFromHere();

/// Runs `release` at the start of MPI_Finalize (whoever calls it), before MPI frees anything, so
/// communicators made from MPI can be freed while MPI still works. Returns a handle for
/// cancelAtFinalize. Hooks run once, newest first.
int64_t atFinalize(std::function<void()> release);
/// Forgets a hook that has not run (the owner released its resources itself).
void cancelAtFinalize(int64_t handle);

/// The world's collectives on host values, every rank of the world taking part: on
/// MPI_COMM_WORLD (Channel::World) or on Loom's duplicate of it for the ranks' agreement checks
/// (Channel::Checks), so that they never match a collective of the program's. `steps` numbers the
/// channel's steps for the guard (one per MPI call); `size` is the world's size.
void mpiBarrier(int64_t& steps);
std::vector<int64_t> mpiAllgather(Channel channel, const char* what, int64_t& steps, int64_t value,
                                  int64_t size);
/// Every rank's bytes (of any length), in rank order: their lengths, then them.
std::vector<std::string> mpiAllgatherBytes(Channel channel, const char* what, int64_t& steps,
                                           const std::string& bytes, int64_t size);

// The guards' talk (mpi_guard.h has the rest). Messages: a question carries the asker's state
// and wants the receiver's; only the guard's thread receives; any thread sends.

/// Guard thread: answers and records every message that has arrived.
void talkPoll();
/// Asks `ranks` for their state, telling them this rank's.
void talkAsk(const std::vector<int64_t>& ranks, const RankState& mine);
/// The state `rank` answered with after `since`, if it has.
std::optional<RankState> talkAnswer(int64_t rank, GuardClock::time_point since);

/// When MPI is up (opened, initialized, not finalized): prints "<message>: aborting the job
/// (MPI_Abort)" and ends the job with MPI_Abort(`code`). Returns otherwise, without loading MPI.
void abortJobIfMpi(const std::string& message, int code);

}  // namespace loom::multidevice::detail
