// SPDX-License-Identifier: Apache-2.0
// Private: NCCL, opened at run time. The table of the entry points Loom calls, found in
// libnccl.so.2 with dlopen, and the few NCCL types they take.
//
// The types are declared here rather than taken from nccl.h, so that the CUDA backend's build
// needs no NCCL headers and a machine with only NCCL's runtime library (a Python wheel's, say)
// runs it. They are NCCL 2.x's stable C ABI (ncclUniqueId is 128 bytes passed by value; the
// enums are int-sized); tests/multidevice/nccl_test.cpp checks them against nccl.h where the
// toolkit has it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "loom/backend/cuda/driver.h"
#include "loom/multidevice/communicator.h"
#include "loom/tensor/data_type.h"

namespace loom::multidevice::nccl {

struct NcclComm;
using Comm = NcclComm*;  // ncclComm_t
struct UniqueId {        // ncclUniqueId
  char internal[128];
};
using Result = int;    // ncclResult_t; 0 is ncclSuccess
using DataType = int;  // ncclDataType_t
using RedOp = int;     // ncclRedOp_t

inline constexpr Result kSuccess = 0;
inline constexpr Result kInProgress = 7;
// ncclDataType_t values.
inline constexpr DataType kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4,
                          kUint64 = 5, kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9;
// ncclRedOp_t values.
inline constexpr RedOp kSum = 0, kProd = 1, kMax = 2, kMin = 3;

#define LOOM_NCCL_FUNCTIONS(X)                                                              \
  X(ncclGetVersion, Result(int*))                                                           \
  X(ncclGetErrorString, const char*(Result))                                                \
  X(ncclGetUniqueId, Result(UniqueId*))                                                     \
  X(ncclCommInitRank, Result(Comm*, int, UniqueId, int))                                    \
  X(ncclCommDestroy, Result(Comm))                                                          \
  X(ncclCommAbort, Result(Comm))                                                            \
  X(ncclCommGetAsyncError, Result(Comm, Result*))                                           \
  X(ncclAllGather, Result(const void*, void*, size_t, DataType, Comm, CUstream))            \
  X(ncclAllReduce, Result(const void*, void*, size_t, DataType, RedOp, Comm, CUstream))     \
  X(ncclReduceScatter, Result(const void*, void*, size_t, DataType, RedOp, Comm, CUstream)) \
  X(ncclBroadcast, Result(const void*, void*, size_t, DataType, int, Comm, CUstream))       \
  X(ncclReduce, Result(const void*, void*, size_t, DataType, RedOp, int, Comm, CUstream))   \
  X(ncclSend, Result(const void*, size_t, DataType, int, Comm, CUstream))                   \
  X(ncclRecv, Result(void*, size_t, DataType, int, Comm, CUstream))                         \
  X(ncclGroupStart, Result())                                                               \
  X(ncclGroupEnd, Result())

struct Api {
#define LOOM_NCCL_DECLARE_ENTRY(name, type) std::add_pointer_t<type> name = nullptr;
  LOOM_NCCL_FUNCTIONS(LOOM_NCCL_DECLARE_ENTRY)
#undef LOOM_NCCL_DECLARE_ENTRY
  int version = 0;  // ncclGetVersion's code: 22809 for 2.28.9
};

/// The process's NCCL, opened on first use: LOOM_NCCL_LIBRARY when set (a path or a file name),
/// else libnccl.so.2 from the loader's search path. Throws a UserError naming `purpose` and why
/// NCCL cannot be used (not found, too old, a symbol missing).
const Api& api(std::string_view purpose);

/// Tries to open `library` without touching the process's NCCL: the reason it is unusable, or an
/// empty string; `version` gets its version code when usable. For tests and diagnostics.
std::string probeLibrary(const char* library, int* version = nullptr) noexcept;

/// "2.28.9" for the code 22809 (and 2.x codes of the old form, 2708 for 2.7.8).
std::string versionText(int code);

/// Throws a UserError "NCCL: <what> failed: <NCCL's text> (<code>)" unless `r` is kSuccess.
void check(const Api& api, Result r, std::string_view what);

/// NCCL's element type for a Loom dtype (Bool travels as uint8).
DataType dataType(::loom::DataType dtype);
/// NCCL's reduction for `op` on `dtype` (on Bool: Sum as Max, Prod as Min, over 0 and 1).
RedOp redOp(::loom::DataType dtype, ReduceOp op);

}  // namespace loom::multidevice::nccl
