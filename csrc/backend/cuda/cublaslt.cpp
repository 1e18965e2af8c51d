// SPDX-License-Identifier: Apache-2.0
// cuBLASLt opened at run time: the few entry points and constants Loom uses, declared here (not
// from cublasLt.h, which a toolkit without the cuBLAS headers lacks), one handle per GPU.
#include "loom/backend/cuda/cublaslt.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/options.h"
#include "loom/support/strings.h"

namespace loom::cuda {
namespace {

using ::loom::detail::concat;

// cuBLASLt's ABI as its header states it (cublasLt.h, CUDA 12 and 13): opaque handles, status
// and attribute enums as 32-bit integers.
using Status = int;
using Handle = void*;
using MatmulDesc = void*;
using Layout = void*;
using Preference = void*;
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

constexpr Status kSuccess = 0;
constexpr int kComputeF32 = 68;  // CUBLAS_COMPUTE_32F
constexpr int kRealF32 = 0;      // CUDA_R_32F
constexpr int kRealF16 = 2;      // CUDA_R_16F
constexpr int kRealBF16 = 14;    // CUDA_R_16BF
constexpr int kOpN = 0, kOpT = 1;
// cublasLtMatmulDescAttributes_t
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr int kDescBiasDataType = 26;
// cublasLtEpilogue_t (the _BIAS forms are the activation's value | CUBLASLT_EPILOGUE_BIAS)
constexpr uint32_t kEpilogueDefault = 1;    // CUBLASLT_EPILOGUE_DEFAULT
constexpr uint32_t kEpilogueRelu = 2;       // CUBLASLT_EPILOGUE_RELU
constexpr uint32_t kEpilogueBias = 4;       // CUBLASLT_EPILOGUE_BIAS
constexpr uint32_t kEpilogueReluBias = 6;   // CUBLASLT_EPILOGUE_RELU_BIAS
constexpr uint32_t kEpilogueGelu = 32;      // CUBLASLT_EPILOGUE_GELU (tanh approximation)
constexpr uint32_t kEpilogueGeluBias = 36;  // CUBLASLT_EPILOGUE_GELU_BIAS
// cublasLtMatrixLayoutAttribute_t
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1;  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES

struct Api {
  Status (*create)(Handle*) = nullptr;
  Status (*descCreate)(MatmulDesc*, int, int) = nullptr;
  Status (*descDestroy)(MatmulDesc) = nullptr;
  Status (*descSet)(MatmulDesc, int, const void*, size_t) = nullptr;
  Status (*layoutCreate)(Layout*, int, uint64_t, uint64_t, int64_t) = nullptr;
  Status (*layoutDestroy)(Layout) = nullptr;
  Status (*layoutSet)(Layout, int, const void*, size_t) = nullptr;
  Status (*prefCreate)(Preference*) = nullptr;
  Status (*prefDestroy)(Preference) = nullptr;
  Status (*prefSet)(Preference, int, const void*, size_t) = nullptr;
  Status (*heuristic)(Handle, MatmulDesc, Layout, Layout, Layout, Layout, Preference, int,
                      HeuristicResult*, int*) = nullptr;
  Status (*matmul)(Handle, MatmulDesc, const void*, const void*, Layout, const void*, Layout,
                   const void*, const void*, Layout, void*, Layout, const Algo*, void*, size_t,
                   CUstream) = nullptr;
  size_t (*version)() = nullptr;
};

struct State {
  Api api;
  std::string library;
  std::string reason;  // empty when usable
  std::mutex mutex;
  std::map<int, Handle> handles;  // per GPU, created on first use, kept for the process
};

std::vector<std::string> candidates() {
  std::vector<std::string> names;
  if (auto lib = getEnv("LOOM_CUBLASLT_LIBRARY"); lib && !lib->empty()) names.push_back(*lib);
  const char* files[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  for (const char* n : files) names.emplace_back(n);
  for (auto home :
       {getEnv("CUDA_HOME"), getEnv("CUDA_PATH"), std::optional<std::string>("/usr/local/cuda")}) {
    if (!home || home->empty()) continue;
    for (const char* n : files) names.push_back(*home + "/lib64/" + n);
  }
  return names;
}

template <typename F>
void lookup(void* handle, F& fn, const char* name, std::vector<std::string>& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (fn == nullptr) missing.emplace_back(name);
}

// Never throws; the library stays loaded for the process's life.
std::unique_ptr<State> open() {
  auto state = std::make_unique<State>();
  void* handle = nullptr;
  const std::vector<std::string> names = candidates();
  for (const std::string& name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      state->library = name;
      break;
    }
  }
  if (handle == nullptr) {
    state->reason = concat("cuBLASLt (libcublasLt.so) not found; tried ", join(names),
                           " (install cuBLAS, or set LOOM_CUBLASLT_LIBRARY or CUDA_HOME)");
    return state;
  }
  std::vector<std::string> missing;
  Api& a = state->api;
  lookup(handle, a.create, "cublasLtCreate", missing);
  lookup(handle, a.descCreate, "cublasLtMatmulDescCreate", missing);
  lookup(handle, a.descDestroy, "cublasLtMatmulDescDestroy", missing);
  lookup(handle, a.descSet, "cublasLtMatmulDescSetAttribute", missing);
  lookup(handle, a.layoutCreate, "cublasLtMatrixLayoutCreate", missing);
  lookup(handle, a.layoutDestroy, "cublasLtMatrixLayoutDestroy", missing);
  lookup(handle, a.layoutSet, "cublasLtMatrixLayoutSetAttribute", missing);
  lookup(handle, a.prefCreate, "cublasLtMatmulPreferenceCreate", missing);
  lookup(handle, a.prefDestroy, "cublasLtMatmulPreferenceDestroy", missing);
  lookup(handle, a.prefSet, "cublasLtMatmulPreferenceSetAttribute", missing);
  lookup(handle, a.heuristic, "cublasLtMatmulAlgoGetHeuristic", missing);
  lookup(handle, a.matmul, "cublasLtMatmul", missing);
  lookup(handle, a.version, "cublasLtGetVersion", missing);
  if (!missing.empty())
    state->reason = concat("cuBLASLt (", state->library, ") lacks ", join(missing));
  return state;
}

State& state() {
  static const std::unique_ptr<State> s = open();
  return *s;
}

void check(Status s, const char* what) {
  if (s == kSuccess) return;
  throw CudaError(concat("cuBLASLt: ", what, " failed with status ", s),
                  concat(what, " failed with cuBLAS status ", s), s);
}

int cudaType(DataType d) {
  switch (d) {
    case DataType::Float32: return kRealF32;
    case DataType::Float16: return kRealF16;
    case DataType::BFloat16: return kRealBF16;
    default: LOOM_CHECK(false, "cuBLASLt matmul of ", d, ": f32, bf16 or f16 expected");
  }
  return kRealF32;
}

// The descriptors of one call, destroyed on every path out.
struct Descriptors {
  const Api& api;
  MatmulDesc desc = nullptr;
  Layout a = nullptr, b = nullptr, d = nullptr;
  Preference pref = nullptr;
  ~Descriptors() {
    if (pref != nullptr) api.prefDestroy(pref);
    for (Layout l : {a, b, d}) {
      if (l != nullptr) api.layoutDestroy(l);
    }
    if (desc != nullptr) api.descDestroy(desc);
  }
};

Layout makeLayout(const Api& api, int type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                  int64_t stride) {
  Layout l = nullptr;
  check(api.layoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld),
        "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const auto count = int32_t(batch);
    check(api.layoutSet(l, kLayoutBatchCount, &count, sizeof(count)), "setting the batch count");
    check(api.layoutSet(l, kLayoutBatchStride, &stride, sizeof(stride)),
          "setting the batch stride");
  }
  return l;
}

}  // namespace

bool cublasLtAvailable() noexcept {
  try {
    return state().reason.empty();
  } catch (...) {
    return false;
  }
}

std::string cublasLtUnavailableReason() noexcept {
  try {
    return state().reason;
  } catch (...) {
    return "cuBLASLt could not be queried";
  }
}

void ltMatmul(const LtMatmulCall& call, int device, CUstream stream) {
  State& s = state();
  LOOM_CHECK(s.reason.empty(), s.reason, ": cuBLASLt is needed for a matmul or linear on the GPU");
  LOOM_CHECK(call.batchCount <= INT32_MAX, "cuBLASLt takes at most 2^31 - 1 matrices per call, ",
             "got ", call.batchCount);
  makeCurrent(device);
  const Api& api = s.api;
  Handle handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.handles.find(device);
    if (it == s.handles.end()) {
      check(api.create(&handle), "cublasLtCreate");
      it = s.handles.emplace(device, handle).first;
    }
    handle = it->second;
  }
  const int type = cudaType(call.dtype);
  Descriptors ds{api};
  check(api.descCreate(&ds.desc, kComputeF32, kRealF32), "cublasLtMatmulDescCreate");
  const int32_t ta = call.a.transpose ? kOpT : kOpN;
  const int32_t tb = call.b.transpose ? kOpT : kOpN;
  check(api.descSet(ds.desc, kDescTransA, &ta, sizeof(ta)), "setting TRANSA");
  check(api.descSet(ds.desc, kDescTransB, &tb, sizeof(tb)), "setting TRANSB");
  const bool bias = call.bias != nullptr;
  uint32_t epilogue = bias ? kEpilogueBias : kEpilogueDefault;
  if (call.activation == LtActivation::Relu) epilogue = bias ? kEpilogueReluBias : kEpilogueRelu;
  if (call.activation == LtActivation::Gelu) epilogue = bias ? kEpilogueGeluBias : kEpilogueGelu;
  if (epilogue != kEpilogueDefault) {
    check(api.descSet(ds.desc, kDescEpilogue, &epilogue, sizeof(epilogue)), "setting the epilogue");
  }
  if (bias) {
    const int32_t bias_type = type;  // D's type, as cuBLASLt's table has it
    check(api.descSet(ds.desc, kDescBiasPointer, &call.bias, sizeof(call.bias)),
          "setting the bias pointer");
    check(api.descSet(ds.desc, kDescBiasDataType, &bias_type, sizeof(bias_type)),
          "setting the bias dtype");
  }
  ds.a = makeLayout(api, type, call.a.rows, call.a.cols, call.a.ld, call.batchCount,
                    call.a.batchStride);
  ds.b = makeLayout(api, type, call.b.rows, call.b.cols, call.b.ld, call.batchCount,
                    call.b.batchStride);
  // C and D share this layout (beta is 0: C is not read).
  ds.d =
      makeLayout(api, type, call.dRows, call.dCols, call.ldd, call.batchCount, call.dBatchStride);
  check(api.prefCreate(&ds.pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = call.workspaceBytes;
  check(api.prefSet(ds.pref, kPrefMaxWorkspace, &workspace, sizeof(workspace)),
        "setting the workspace size");
  HeuristicResult result{};
  int found = 0;
  const Status hs =
      api.heuristic(handle, ds.desc, ds.a, ds.b, ds.d, ds.d, ds.pref, 1, &result, &found);
  LOOM_CHECK(hs == kSuccess && found > 0, "cuBLASLt (", s.library, ") has no algorithm for a ",
             call.dtype, " matmul of ", call.dRows, " x ", call.dCols, " (k ",
             call.a.transpose ? call.a.rows : call.a.cols, ", batch ", call.batchCount,
             ", leading dims ", call.a.ld, ", ", call.b.ld, ", ", call.ldd, ", epilogue ", epilogue,
             "): status ", hs);
  const float alpha = 1.0f, beta = 0.0f;
  check(api.matmul(handle, ds.desc, &alpha, call.a.data, ds.a, call.b.data, ds.b, &beta, call.d,
                   ds.d, call.d, ds.d, &result.algo, call.workspace, call.workspaceBytes, stream),
        "cublasLtMatmul");
}

}  // namespace loom::cuda
