// SPDX-License-Identifier: Apache-2.0
// NCCL opened at run time (nccl_api.h): libnccl.so.2 with dlopen, only the entry points Loom
// calls, looked up once per process; error text; Loom's dtypes and reductions in NCCL's terms.
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "loom/support/strings.h"
#include "multidevice/nccl_api.h"

namespace loom::multidevice::nccl {
namespace {

using ::loom::detail::concat;

constexpr const char* kLibrary = "libnccl.so.2";
// bfloat16 reductions came with NCCL 2.10.
constexpr int kMinimumVersion = 21000;

struct State {
  void* handle = nullptr;
  Api api;
  std::string library;
  std::string reason;  // why NCCL is unusable; empty when usable
};

// Never throws: every failure becomes `reason`. The library stays open for the process's life
// (communicators may be destroyed as late as MPI_Finalize).
std::unique_ptr<State> open(const char* library) {
  auto state = std::make_unique<State>();
  state->library = library;
  dlerror();
  state->handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (state->handle == nullptr) {
    const char* err = dlerror();
    state->reason = concat("NCCL (", library, ") could not be loaded: ", err ? err : "not found");
    return state;
  }
  std::vector<std::string> missing;
#define LOOM_NCCL_LOOKUP_ENTRY(name, type)                                                   \
  state->api.name = reinterpret_cast<std::add_pointer_t<type>>(dlsym(state->handle, #name)); \
  if (state->api.name == nullptr) missing.emplace_back(#name);
  LOOM_NCCL_FUNCTIONS(LOOM_NCCL_LOOKUP_ENTRY)
#undef LOOM_NCCL_LOOKUP_ENTRY
  if (!missing.empty()) {
    state->reason = concat("NCCL (", library, ") lacks ", join(missing));
    return state;
  }
  if (state->api.ncclGetVersion(&state->api.version) != kSuccess ||
      state->api.version < kMinimumVersion) {
    state->reason = concat("NCCL (", library, ") is version ", versionText(state->api.version),
                           "; Loom needs ", versionText(kMinimumVersion), " or newer");
  }
  return state;
}

const State& processNccl() {
  static const std::unique_ptr<State> state = [] {
    const char* override = std::getenv("LOOM_NCCL_LIBRARY");
    return open(override != nullptr && *override != '\0' ? override : kLibrary);
  }();
  return *state;
}

}  // namespace

const Api& api(std::string_view purpose) {
  const State& state = processNccl();
  LOOM_CHECK(state.reason.empty(), state.reason, ": NCCL is needed for ", purpose,
             " (install NCCL's runtime, libnccl2, or set LOOM_NCCL_LIBRARY to libnccl.so.2's "
             "path; ranks that share a GPU need no NCCL)");
  return state.api;
}

std::string probeLibrary(const char* library, int* version) noexcept {
  try {
    std::unique_ptr<State> state = open(library);
    if (version != nullptr) *version = state->api.version;
    return state->reason;
  } catch (...) {
    return "probing NCCL failed";
  }
}

std::string versionText(int code) {
  if (code >= 10000) return concat(code / 10000, ".", code % 10000 / 100, ".", code % 100);
  return concat(code / 1000, ".", code % 1000 / 100, ".", code % 100);
}

void check(const Api& api, Result r, std::string_view what) {
  if (r == kSuccess) [[likely]]
    return;
  const char* text = api.ncclGetErrorString != nullptr ? api.ncclGetErrorString(r) : nullptr;
  LOOM_THROW("NCCL: ", what, " failed: ", text != nullptr ? text : "unknown error", " (", r, ")");
}

DataType dataType(::loom::DataType dtype) {
  switch (dtype) {
    case ::loom::DataType::Bool: return kUint8;
    case ::loom::DataType::Int32: return kInt32;
    case ::loom::DataType::Int64: return kInt64;
    case ::loom::DataType::Float16: return kFloat16;
    case ::loom::DataType::BFloat16: return kBfloat16;
    case ::loom::DataType::Float32: return kFloat32;
    case ::loom::DataType::Float64: return kFloat64;
    case ::loom::DataType::Int8: return kInt8;
    case ::loom::DataType::UInt8: return kUint8;
    case ::loom::DataType::Float8_e4m3fn:
    case ::loom::DataType::Float8_e5m2: return kUint8;  // moved as bytes; reductions refused
    case ::loom::DataType::UInt32: return kUint32;
    case ::loom::DataType::UInt64: return kUint64;
    case ::loom::DataType::Int16:
    case ::loom::DataType::UInt16:
      LOOM_THROW("NCCL: ", dtype,
                 " tensors are not communicated between devices (NCCL has no 16-bit integer "
                 "type; cast to i32 first)");
    case ::loom::DataType::ComplexFloat:
    case ::loom::DataType::ComplexDouble: break;
  }
  LOOM_CHECK(!isComplexType(dtype), "NCCL: ", dtype,
             " tensors are not communicated between devices (complex collectives are not "
             "supported; send the real and imag parts as separate tensors)");
  LOOM_UNREACHABLE("dtype ", int(dtype));
}

RedOp redOp(::loom::DataType dtype, ReduceOp op) {
  LOOM_CHECK(!isFloat8Type(dtype), "NCCL: ", dtype,
             " tensors are not reduced between devices (8-bit float collectives move data "
             "only; cast to f32 or bf16 before the reduction)");
  if (dtype == ::loom::DataType::Bool) {
    return op == ReduceOp::Sum || op == ReduceOp::Max ? kMax : kMin;
  }
  switch (op) {
    case ReduceOp::Sum: return kSum;
    case ReduceOp::Prod: return kProd;
    case ReduceOp::Max: return kMax;
    case ReduceOp::Min: return kMin;
  }
  LOOM_UNREACHABLE("reduce op ", int(op));
}

}  // namespace loom::multidevice::nccl
