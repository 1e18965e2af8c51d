// SPDX-License-Identifier: Apache-2.0
// Private: MPI for the whole process (initialization, finalization, the hooks that run before it),
// error text, and the MPI datatypes and reductions of Loom's dtypes. Only with LOOM_HAVE_MPI.
#pragma once

#ifdef LOOM_HAVE_MPI

#include <mpi.h>

#include <cstdint>
#include <functional>

#include "loom/multidevice/communicator.h"
#include "loom/tensor/data_type.h"

namespace loom::multidevice::detail {

/// Initializes MPI once per process (MPI_THREAD_MULTIPLE, so that the guard's thread can talk
/// while a rank waits in a collective) unless the embedding program did, and, between several
/// ranks, starts the guard (guard.h) and the exit handlers (mpi_guard.h): a clean exit finalizes
/// what Loom initialized, an error exit aborts the job.
void ensureMpi();

/// A duplicate of MPI_COMM_WORLD for Loom's own checks (the ranks' agreement on a fusion's first
/// run), so that they never match a collective of the program's.
MPI_Comm checksComm();

/// True once MPI_Finalize has begun or ended (nothing of MPI may be freed then).
bool mpiFinalized();

/// Runs `release` at the start of MPI_Finalize (whoever calls it), before MPI frees anything, so
/// communicators made from MPI can be freed while MPI still works. Returns a handle for
/// cancelAtFinalize. Hooks run once, newest first.
int64_t atFinalize(std::function<void()> release);
/// Forgets a hook that has not run (the owner released its resources itself).
void cancelAtFinalize(int64_t handle);

/// Throws a UserError "MPI: <what> failed: <MPI's text>" unless `result` is MPI_SUCCESS.
void checkMpi(int result, const char* what);

/// The MPI datatype of one element: Bool -> MPI_C_BOOL, Int32/Int64 -> MPI_INT32_T/MPI_INT64_T,
/// Float16/BFloat16 -> MPI_UINT16_T (their reductions are Loom's own ops), Float32/Float64 ->
/// MPI_FLOAT/MPI_DOUBLE.
MPI_Datatype mpiDataType(DataType dtype);

/// The reduction `op` on elements of `dtype`: MPI's predefined ops, except Bool (logical or for
/// Sum and Max, logical and for Prod and Min) and Float16/BFloat16: user ops (created on first
/// use, freed before MPI is finalized) that combine two elements in float and round the result
/// to the dtype, as NCCL does.
MPI_Op mpiReduceOp(DataType dtype, ReduceOp op);

/// An element count as MPI's int; a UserError naming `what` when it does not fit.
int mpiCount(int64_t count, const char* what);

}  // namespace loom::multidevice::detail

#endif  // LOOM_HAVE_MPI
