// SPDX-License-Identifier: Apache-2.0
// Private: MPI, opened at run time. The table of the MPI functions Loom calls and of the
// predefined handles it uses, found in OpenMPI's libmpi with dlopen/dlsym, so that no Loom
// library or program links libmpi and a process that never needs MPI never loads it.
//
// The build compiles against OpenMPI's mpi.h for the types (MPI_Comm is a pointer, MPI_Status's
// layout) and the plain constants (MPI_SUCCESS, MPI_IN_PLACE is (void*)1, MPI_PROC_NULL, ...),
// which OpenMPI defines as numbers. Every name that OpenMPI's mpi.h turns into a reference to the
// library (the functions, and the predefined handles, which are addresses of its global objects
// such as ompi_mpi_comm_world) comes from this table instead: code of Loom's never spells
// MPI_COMM_WORLD or calls MPI_Allgather directly (tests/multidevice/mpi_link_test.sh checks that
// the libraries reference no MPI symbol, mpi_api_test.cpp that each handle here is the header's).
// OpenMPI 3.x to 5.x keep this ABI (libmpi.so.40).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/multidevice/communicator.h"
#include "loom/tensor/data_type.h"

namespace loom::multidevice::detail {

#define LOOM_MPI_FUNCTIONS(X) \
  X(MPI_Init_thread)          \
  X(MPI_Initialized)          \
  X(MPI_Finalized)            \
  X(MPI_Finalize)             \
  X(MPI_Abort)                \
  X(MPI_Query_thread)         \
  X(MPI_Error_string)         \
  X(MPI_Get_library_version)  \
  X(MPI_Comm_rank)            \
  X(MPI_Comm_size)            \
  X(MPI_Comm_dup)             \
  X(MPI_Comm_free)            \
  X(MPI_Comm_group)           \
  X(MPI_Comm_create_group)    \
  X(MPI_Comm_set_errhandler)  \
  X(MPI_Comm_create_keyval)   \
  X(MPI_Comm_set_attr)        \
  X(MPI_Group_incl)           \
  X(MPI_Group_free)           \
  X(MPI_Op_create)            \
  X(MPI_Op_free)              \
  X(MPI_Barrier)              \
  X(MPI_Ibarrier)             \
  X(MPI_Bcast)                \
  X(MPI_Allgather)            \
  X(MPI_Allgatherv)           \
  X(MPI_Allreduce)            \
  X(MPI_Reduce)               \
  X(MPI_Reduce_scatter_block) \
  X(MPI_Alltoall)             \
  X(MPI_Gatherv)              \
  X(MPI_Scatterv)             \
  X(MPI_Sendrecv)             \
  X(MPI_Isend)                \
  X(MPI_Irecv)                \
  X(MPI_Test)                 \
  X(MPI_Wait)                 \
  X(MPI_Cancel)               \
  X(MPI_Request_free)         \
  X(MPI_Get_count)

// The predefined handles: the field, its type, and the OpenMPI global whose address it is (what
// mpi.h's macro of the same meaning expands to).
#define LOOM_MPI_HANDLES(X)                               \
  X(commWorld, MPI_Comm, ompi_mpi_comm_world)             \
  X(commSelf, MPI_Comm, ompi_mpi_comm_self)               \
  X(commNull, MPI_Comm, ompi_mpi_comm_null)               \
  X(groupNull, MPI_Group, ompi_mpi_group_null)            \
  X(requestNull, MPI_Request, ompi_request_null)          \
  X(errorsReturn, MPI_Errhandler, ompi_mpi_errors_return) \
  X(byteType, MPI_Datatype, ompi_mpi_byte)                \
  X(charType, MPI_Datatype, ompi_mpi_char)                \
  X(intType, MPI_Datatype, ompi_mpi_int)                  \
  X(boolType, MPI_Datatype, ompi_mpi_c_bool)              \
  X(int8Type, MPI_Datatype, ompi_mpi_int8_t)              \
  X(int16Type, MPI_Datatype, ompi_mpi_int16_t)            \
  X(uint8Type, MPI_Datatype, ompi_mpi_uint8_t)            \
  X(uint16Type, MPI_Datatype, ompi_mpi_uint16_t)          \
  X(uint32Type, MPI_Datatype, ompi_mpi_uint32_t)          \
  X(uint64Type, MPI_Datatype, ompi_mpi_uint64_t)          \
  X(int32Type, MPI_Datatype, ompi_mpi_int32_t)            \
  X(int64Type, MPI_Datatype, ompi_mpi_int64_t)            \
  X(floatType, MPI_Datatype, ompi_mpi_float)              \
  X(doubleType, MPI_Datatype, ompi_mpi_double)            \
  X(opSum, MPI_Op, ompi_mpi_op_sum)                       \
  X(opProd, MPI_Op, ompi_mpi_op_prod)                     \
  X(opMax, MPI_Op, ompi_mpi_op_max)                       \
  X(opMin, MPI_Op, ompi_mpi_op_min)                       \
  X(opLor, MPI_Op, ompi_mpi_op_lor)                       \
  X(opLand, MPI_Op, ompi_mpi_op_land)

struct MpiApi {
  // decltype names the type of mpi.h's declaration without referencing the symbol.
#define LOOM_MPI_DECLARE_FUNCTION(name) std::add_pointer_t<decltype(::name)> name = nullptr;
  LOOM_MPI_FUNCTIONS(LOOM_MPI_DECLARE_FUNCTION)
#undef LOOM_MPI_DECLARE_FUNCTION
#define LOOM_MPI_DECLARE_HANDLE(field, type, symbol) type field = nullptr;
  LOOM_MPI_HANDLES(LOOM_MPI_DECLARE_HANDLE)
#undef LOOM_MPI_DECLARE_HANDLE
};

/// The library names tried in order when LOOM_MPI_LIBRARY is unset: OpenMPI's soname, the
/// development link, and, last, the libmpi the build found (for installs outside the loader's
/// search path).
std::vector<std::string> defaultMpiLibraries();

/// Opens the process's MPI once (LOOM_MPI_LIBRARY when set, else the default names) and returns
/// why it cannot be used, or an empty string. Never initializes MPI; never throws.
const std::string& mpiLoadFailure() noexcept;

/// The table of the opened library: only after mpiLoadFailure() returned empty (an internal
/// error otherwise).
const MpiApi& mpi();

/// The table when the library was opened already, else null; never opens it (the exit and abort
/// paths, which must not load MPI to find out it is not running).
const MpiApi* mpiIfOpen() noexcept;

/// Why the process's MPI would be unusable, or an empty string, had LOOM_MPI_LIBRARY been
/// `chosen` (null: unset) and the default names `defaults`: the libraries are opened apart from
/// the process's MPI (RTLD_LOCAL), and the text is mpiLoadFailure()'s. For tests and diagnostics.
std::string probeMpiLibraries(const char* chosen,
                              const std::vector<std::string>& defaults) noexcept;

// Helpers on the table (mpi.cpp), for the files that speak MPI.

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
