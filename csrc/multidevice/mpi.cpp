// SPDX-License-Identifier: Apache-2.0
// MPI for the whole process (mpi.h, mpi_api.h), over the library opened at run time:
// initialization once, finalization at exit, hooks that free Loom's communicators at the start
// of MPI_Finalize, the world's collectives on host values, and the datatypes and reductions of
// Loom's dtypes. Only where the build found OpenMPI's mpi.h (no_mpi.cpp elsewhere).
#include "multidevice/mpi.h"

#include <iostream>
#include <map>
#include <mutex>
#include <string>

#include "loom/support/error.h"
#include "loom/tensor/half.h"
#include "multidevice/guard.h"
#include "multidevice/mpi_api.h"
#include "multidevice/mpi_guard.h"

namespace loom::multidevice::detail {
namespace {

// The Float16 / BFloat16 user ops, and the hooks to run before MPI is finalized. Never
// destroyed: a Communicator that outlives the static that finalizes MPI still cancels its hook.
struct Registry {
  std::mutex mutex;
  std::map<int64_t, std::function<void()>> hooks;
  int64_t next = 0;
  bool finalizing = false;
  MPI_Op ops16[2][4] = {};  // [Float16, BFloat16][ReduceOp]
  bool ops16Made[2][4] = {};
  MPI_Comm checks = nullptr;  // null until made (MPI's null handle is the library's)
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// MPI deletes MPI_COMM_SELF's attributes first thing in MPI_Finalize, while MPI still works:
// the place to free what Loom made from it, whoever finalizes MPI.
int releaseBeforeFinalize(MPI_Comm, int, void*, void*) {
  Registry& r = registry();
  std::map<int64_t, std::function<void()>> hooks;
  {
    std::lock_guard lock(r.mutex);
    r.finalizing = true;
    hooks.swap(r.hooks);
  }
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
    try {
      it->second();
    } catch (const std::exception& e) {
      std::cerr << "loom: releasing communicators before MPI_Finalize: " << e.what() << "\n";
    }
  }
  // The guard talks over MPI: it stops before MPI does.
  stopGuard();
  talkClose();
  const MpiApi& m = mpi();
  std::lock_guard lock(r.mutex);
  if (r.checks != nullptr) {
    m.MPI_Comm_free(&r.checks);
    r.checks = nullptr;
  }
  for (int t = 0; t < 2; ++t) {
    for (int o = 0; o < 4; ++o) {
      if (r.ops16Made[t][o]) m.MPI_Op_free(&r.ops16[t][o]);
      r.ops16Made[t][o] = false;
    }
  }
  return MPI_SUCCESS;
}

// An attribute copies to no duplicate of MPI_COMM_SELF (what MPI_COMM_NULL_COPY_FN, a function
// of the library's, does).
int copyNothing(MPI_Comm, int, void*, void*, void*, int* flag) {
  *flag = 0;
  return MPI_SUCCESS;
}

// MPI for the whole process: initialized once; the exit handler (mpi_guard.cpp) finalizes it at
// a clean exit when Loom initialized it, and aborts the job at an error exit.
class MpiSession {
 public:
  static void ensure() {
    static MpiSession session;
    (void)session;
  }

 private:
  MpiSession() {
    (void)commTimeoutSeconds();  // a bad LOOM_COMM_TIMEOUT fails before MPI starts
    const MpiApi& m = mpi();
    int initialized = 0;
    m.MPI_Initialized(&initialized);
    bool owned = false;
    if (!initialized) {
      int provided = 0;
      LOOM_CHECK(m.MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS,
                 "MPI_Init_thread failed");
      owned = true;
    }  // else the embedding program owns MPI; the hooks still run in its MPI_Finalize
    int key = MPI_KEYVAL_INVALID;
    checkMpi(m.MPI_Comm_create_keyval(copyNothing, releaseBeforeFinalize, &key, nullptr),
             "MPI_Comm_create_keyval");
    checkMpi(m.MPI_Comm_set_attr(m.commSelf, key, nullptr), "MPI_Comm_set_attr");
    int rank = 0;
    int size = 1;
    checkMpi(m.MPI_Comm_rank(m.commWorld, &rank), "MPI_Comm_rank");
    checkMpi(m.MPI_Comm_size(m.commWorld, &size), "MPI_Comm_size");
    MPI_Comm checks = m.commNull;
    checkMpi(m.MPI_Comm_dup(m.commWorld, &checks), "MPI_Comm_dup");
    {
      std::lock_guard lock(registry().mutex);
      registry().checks = checks;
    }
    if (size > 1) {
      MPI_Comm talk = m.commNull;
      checkMpi(m.MPI_Comm_dup(m.commWorld, &talk), "MPI_Comm_dup");
      setGuardRank(rank, size);
      talkOpen(talk);
      int provided = MPI_THREAD_SINGLE;
      m.MPI_Query_thread(&provided);
      startGuard(provided >= MPI_THREAD_MULTIPLE);
    }
    installExitHandlers(owned);
  }
};

template <ReduceOp Op>
float combine(float a, float b) {
  if constexpr (Op == ReduceOp::Sum) return a + b;
  if constexpr (Op == ReduceOp::Prod) return a * b;
  if constexpr (Op == ReduceOp::Max) return (a != a || a > b) ? a : b;  // NaN wins
  if constexpr (Op == ReduceOp::Min) return (a != a || a < b) ? a : b;
}

// inout[i] = op(in[i], inout[i]) on 16-bit floats, computed in float, rounded once per element.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), ReduceOp Op>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Store(combine<Op>(Load(a[i]), Load(b[i])));
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
MPI_User_function* reduce16Function(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return reduce16<Load, Store, ReduceOp::Sum>;
    case ReduceOp::Prod: return reduce16<Load, Store, ReduceOp::Prod>;
    case ReduceOp::Max: return reduce16<Load, Store, ReduceOp::Max>;
    case ReduceOp::Min: return reduce16<Load, Store, ReduceOp::Min>;
  }
  LOOM_UNREACHABLE("reduce op ", int(op));
}

// A duplicate of MPI_COMM_WORLD for Loom's own checks (the ranks' agreement on a fusion's first
// run), so that they never match a collective of the program's.
MPI_Comm checksComm() {
  MpiSession::ensure();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.checks;
}

// The communicator of a world channel.
MPI_Comm channelComm(Channel channel) {
  return channel == Channel::Checks ? checksComm() : mpi().commWorld;
}

}  // namespace

std::string mpiUnavailableReason() noexcept { return mpiLoadFailure(); }

void ensureMpi() { MpiSession::ensure(); }

int64_t mpiWorldSize() {
  int size = 0;
  checkMpi(mpi().MPI_Comm_size(mpi().commWorld, &size), "MPI_Comm_size");
  return size;
}

int64_t atFinalize(std::function<void()> release) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  LOOM_ASSERT(!r.finalizing, "a finalize hook registered while MPI is being finalized");
  int64_t handle = r.next++;
  r.hooks.emplace(handle, std::move(release));
  return handle;
}

void cancelAtFinalize(int64_t handle) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.hooks.erase(handle);
}

void mpiBarrier(int64_t& steps) {
  Watch watch({"barrier", Channel::World, nullptr, ++steps});
  checkMpi(mpi().MPI_Barrier(mpi().commWorld), "MPI_Barrier");
}

std::vector<int64_t> mpiAllgather(Channel channel, const char* what, int64_t& steps, int64_t value,
                                  int64_t size) {
  const MpiApi& m = mpi();
  MPI_Comm comm = channelComm(channel);
  std::vector<int64_t> out(static_cast<size_t>(size), value);
  Watch watch({what, channel, nullptr, ++steps});
  checkMpi(m.MPI_Allgather(&value, 1, m.int64Type, out.data(), 1, m.int64Type, comm),
           "MPI_Allgather");
  return out;
}

std::vector<std::string> mpiAllgatherBytes(Channel channel, const char* what, int64_t& steps,
                                           const std::string& bytes, int64_t size) {
  const MpiApi& m = mpi();
  MPI_Comm comm = channelComm(channel);
  std::vector<int64_t> lengths(static_cast<size_t>(size));
  int64_t length = int64_t(bytes.size());
  {
    Watch watch({what, channel, nullptr, ++steps});
    checkMpi(m.MPI_Allgather(&length, 1, m.int64Type, lengths.data(), 1, m.int64Type, comm),
             "MPI_Allgather");
  }
  std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    LOOM_CHECK(lengths[i] <= int64_t(1) << 30, what, ": rank ", i, " sends ", lengths[i],
               " bytes (at most 2^30)");
    counts[i] = int(lengths[i]);
    displs[i] = int(total);
    total += lengths[i];
    LOOM_CHECK(total <= int64_t(1) << 30, what, ": more than 2^30 bytes in all");
  }
  std::string all(size_t(total), '\0');
  {
    Watch watch({what, channel, nullptr, ++steps});
    checkMpi(m.MPI_Allgatherv(bytes.data(), int(bytes.size()), m.charType, all.data(),
                              counts.data(), displs.data(), m.charType, comm),
             "MPI_Allgatherv");
  }
  std::vector<std::string> out(static_cast<size_t>(size));
  for (size_t i = 0; i < out.size(); ++i) out[i] = all.substr(size_t(displs[i]), size_t(counts[i]));
  return out;
}

void checkMpi(int result, const char* what) {
  if (result == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  mpi().MPI_Error_string(result, text, &len);
  LOOM_THROW("MPI: ", what, " failed: ", std::string(text, size_t(len)));
}

MPI_Datatype mpiDataType(DataType dtype) {
  const MpiApi& m = mpi();
  switch (dtype) {
    case DataType::Bool: return m.boolType;
    case DataType::Int32: return m.int32Type;
    case DataType::Int64: return m.int64Type;
    case DataType::Int8: return m.int8Type;
    case DataType::Int16: return m.int16Type;
    case DataType::UInt8: return m.uint8Type;
    case DataType::UInt16: return m.uint16Type;
    case DataType::UInt32: return m.uint32Type;
    case DataType::UInt64: return m.uint64Type;
    case DataType::Float16:
    case DataType::BFloat16: return m.uint16Type;
    case DataType::Float8_e4m3fn:
    case DataType::Float8_e5m2: return m.uint8Type;  // moved as bytes; reductions refused
    case DataType::Float32: return m.floatType;
    case DataType::Float64: return m.doubleType;
    case DataType::ComplexFloat:
    case DataType::ComplexDouble: break;
  }
  LOOM_CHECK(!isComplexType(dtype), "MPI: ", dtype,
             " tensors are not communicated between devices (complex collectives are not "
             "supported; send the real and imag parts as separate tensors)");
  LOOM_UNREACHABLE("dtype ", int(dtype));
}

MPI_Op mpiReduceOp(DataType dtype, ReduceOp op) {
  const MpiApi& m = mpi();
  if (dtype == DataType::Bool) {
    return op == ReduceOp::Sum || op == ReduceOp::Max ? m.opLor : m.opLand;
  }
  LOOM_CHECK(!isFloat8Type(dtype), "MPI: ", dtype,
             " tensors are not reduced between devices (8-bit float collectives move data "
             "only; cast to f32 or bf16 before the reduction)");
  if (isReducedPrecision(dtype)) {
    const int t = dtype == DataType::Float16 ? 0 : 1;
    const int o = int(op);
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (!r.ops16Made[t][o]) {
      MPI_User_function* fn = t == 0
                                  ? reduce16Function<halfBitsToFloat, floatToHalfBits>(op)
                                  : reduce16Function<bfloat16BitsToFloat, floatToBFloat16Bits>(op);
      checkMpi(m.MPI_Op_create(fn, /*commute=*/1, &r.ops16[t][o]), "MPI_Op_create");
      r.ops16Made[t][o] = true;
    }
    return r.ops16[t][o];
  }
  switch (op) {
    case ReduceOp::Sum: return m.opSum;
    case ReduceOp::Prod: return m.opProd;
    case ReduceOp::Max: return m.opMax;
    case ReduceOp::Min: return m.opMin;
  }
  LOOM_UNREACHABLE("reduce op ", int(op));
}

int mpiCount(int64_t count, const char* what) {
  LOOM_CHECK(count <= int64_t(INT32_MAX), what, ": ", count,
             " elements is more than MPI's count (int) holds; split the collective");
  return int(count);
}

}  // namespace loom::multidevice::detail
