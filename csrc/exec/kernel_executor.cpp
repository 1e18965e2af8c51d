// SPDX-License-Identifier: Apache-2.0
// KernelExecutor: lower, generate, compile (host backend or NVRTC) and launch one kernel.
#include "loom/exec/kernel_executor.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <sstream>

#include "loom/backend/host_module.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/lower/index_type.h"
#include "loom/lower/lower.h"
#include "loom/support/options.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/module.h"
#include "loom/backend/cuda/nvrtc.h"
#endif

namespace loom::exec {

std::string_view backendName(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Host: return "host";
    case Backend::Cuda: return "cuda";
  }
  LOOM_UNREACHABLE();
}

Backend resolveBackend(Backend b) {
  if (b != Backend::Auto) return b;
  if (auto env = getEnv("LOOM_BACKEND"); env && !env->empty()) {
    if (*env == "host") return Backend::Host;
    if (*env == "cuda") return Backend::Cuda;
    LOOM_THROW("LOOM_BACKEND must be 'host' or 'cuda', got '", *env, "'");
  }
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (cuda::cudaAvailable()) return Backend::Cuda;
#endif
  return Backend::Host;
}

std::string LaunchParams::toString() const {
  std::ostringstream os;
  os << "grid (" << grid[0] << ", " << grid[1] << ", " << grid[2] << "), block (" << block[0]
     << ", " << block[1] << ", " << block[2] << "), dynamic shared " << sharedBytes << " bytes";
  return os.str();
}

struct KernelExecutor::Compiled {
  codegen::GeneratedKernel generated;
  bool built = false;
  std::unique_ptr<Compiled> int32;  ///< in the Int64 slot only: the kernel built for Int32
  std::unique_ptr<backend::HostModule> host;
#ifdef LOOM_HAVE_CUDA_BACKEND
  std::unique_ptr<cuda::Module> module;
  std::unique_ptr<cuda::Function> function;
#endif
};

KernelExecutor::KernelExecutor() = default;
KernelExecutor::~KernelExecutor() = default;

void KernelExecutor::compile(const ir::Fusion& scheduled, Backend backend,
                             ExecutorOptions options) {
  fusion_ = scheduled.clone();
  options_ = options;
  backend_ = resolveBackend(backend);
  const DumpOptions& dump = DumpOptions::fromEnvironment();
  kernel_ = lower::lowerFusion(*fusion_, dump);
  generated_ = codegen::generateKernel(*kernel_);
  compiled_ = std::make_unique<Compiled>();
#ifndef LOOM_HAVE_CUDA_BACKEND
  LOOM_CHECK(backend_ == Backend::Host,
             "this Loom build has no CUDA backend (cuda.h was not found at configure time)");
#endif
  // The module is built by run() for the index type the bound sizes need (one per type, cached).
}

KernelExecutor::Compiled& KernelExecutor::moduleFor(DataType index_type) {
  std::unique_ptr<Compiled>& slot = index_type == DataType::Int32 ? compiled_->int32 : compiled_;
  if (slot && (slot->host || slot->built)) {
    generated_ = slot->generated;
    return *slot;
  }
  if (!slot) slot = std::make_unique<Compiled>();
  kernel_->indexType = index_type;
  generated_ = codegen::generateKernel(*kernel_);
  slot->generated = generated_;
  const DumpOptions& dump = DumpOptions::fromEnvironment();
  if (dump.has(DumpOption::CudaKernel)) std::cout << generated_.kernelText;
  if (backend_ == Backend::Host) {
    slot->host = backend::HostModule::load(generated_.source, generated_.name);
    return *slot;
  }
#ifdef LOOM_HAVE_CUDA_BACKEND
  cuda::requireCuda("running a kernel with the cuda backend");
  static cuda::NvrtcCompiler compiler;
  cuda::CompileResult r =
      compiler.compile(generated_.source, cuda::CompileOptions::forArch("", generated_.name));
  if (dump.has(DumpOption::Ptxas)) {
    for (const auto& k : r.kernels) {
      std::cout << k.function << ": " << k.registers << " registers, " << k.spillStores
                << " bytes spill stores, " << k.spillLoads << " bytes spill loads\n";
    }
  }
  slot->module = std::make_unique<cuda::Module>(r.cubin, 0);
  slot->function = std::make_unique<cuda::Function>(slot->module->function(generated_.name));
  slot->built = true;
  return *slot;
#else
  LOOM_UNREACHABLE("cuda backend without LOOM_HAVE_CUDA_BACKEND");
#endif
}

namespace {

// A host or device tensor for `tv` laid out in its allocation order (a permutation of logical).
Tensor allocateOutput(const ir::TensorView* tv, const std::vector<int64_t>& sizes, Backend backend) {
  auto logical = ir::TensorDomain::noReductions(tv->logical());
  auto alloc = ir::TensorDomain::noReductions(tv->maybeAllocation());
  std::vector<int64_t> perm;  // alloc position -> logical position
  for (ir::IterDomain* id : alloc) {
    auto it = std::find(logical.begin(), logical.end(), id);
    LOOM_CHECK(it != logical.end(), "output ", tv->toString(),
               ": allocation domains other than a permutation of logical are not supported yet");
    perm.push_back(it - logical.begin());
  }
  std::vector<int64_t> alloc_sizes;
  for (int64_t p : perm) alloc_sizes.push_back(sizes[size_t(p)]);
  Tensor t;
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (backend == Backend::Cuda) t = cuda::emptyCuda(alloc_sizes, tv->dtype());
#endif
  if (!t.defined()) t = Tensor::empty(alloc_sizes, tv->dtype());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return t.permute(inverse);
}

// The bytes of one loom::Tensor<T, N> argument: pointer, N sizes, N strides (int64).
std::vector<int64_t> packTensor(const Tensor& t, DataType index_type) {
  std::vector<int64_t> blob;
  blob.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data())));
  if (index_type == DataType::Int64) {
    for (int64_t s : t.sizes()) blob.push_back(s);
    for (int64_t s : t.strides()) blob.push_back(s);
    return blob;
  }
  // loom::Tensor<T, N, int>: 2N int32 after the pointer, padded to 8 bytes.
  std::vector<int32_t> narrow;
  for (int64_t s : t.sizes()) narrow.push_back(int32_t(s));
  for (int64_t s : t.strides()) narrow.push_back(int32_t(s));
  blob.resize(1 + (narrow.size() + 1) / 2, 0);
  if (!narrow.empty()) std::memcpy(blob.data() + 1, narrow.data(), narrow.size() * sizeof(int32_t));
  return blob;
}

// Vectorized parameters are read/written width elements at a time: the data pointer must be
// aligned to the vector, the innermost dim contiguous with a size that is a multiple of the
// width (the vector predicate is all-or-nothing) and every other stride a multiple of it.
void checkVectorAlignment(const kir::Buffer* b, const Tensor& t, int64_t width) {
  std::string name = b->tv->toString();
  int64_t bytes = width * int64_t(dataTypeSize(b->dtype));
  LOOM_CHECK(reinterpret_cast<uintptr_t>(t.data()) % uint64_t(bytes) == 0, "vectorized tensor ",
             name, ": data pointer ", t.data(), " is not aligned to the vector of ", width,
             " elements (", bytes, " bytes)");
  int64_t rank = int64_t(t.sizes().size());
  if (rank == 0) return;
  LOOM_CHECK(t.strides()[size_t(rank - 1)] == 1 || t.sizes()[size_t(rank - 1)] == 1,
             "vectorized tensor ", name, ": the innermost stride is ",
             t.strides()[size_t(rank - 1)], ", vectorization needs 1");
  LOOM_CHECK(t.sizes()[size_t(rank - 1)] % width == 0, "vectorized tensor ", name,
             ": the innermost size ", t.sizes()[size_t(rank - 1)],
             " is not a multiple of the vector width ", width);
  for (int64_t d = 0; d + 1 < rank; ++d) {
    LOOM_CHECK(t.strides()[size_t(d)] % width == 0, "vectorized tensor ", name, ": stride ",
               t.strides()[size_t(d)], " of dim ", d, " is not a multiple of the vector width ",
               width);
  }
}

// One by-value scalar kernel argument, 8 bytes so that every scalar type fits.
union ScalarArg {
  double f64;
  float f32;
  int64_t i64;
  int32_t i32;
  bool b;
};

// Converts a scalar fusion input's argument to the kernel parameter's type.
ScalarArg packScalar(const eval::Argument& arg, DataType dtype, const std::string& name) {
  double d = 0;
  if (auto* x = std::get_if<double>(&arg)) d = *x;
  else if (auto* i = std::get_if<int64_t>(&arg)) d = double(*i);
  else if (auto* b = std::get_if<bool>(&arg)) d = *b ? 1.0 : 0.0;
  else LOOM_THROW("scalar input ", name, " was given a tensor argument");
  ScalarArg a{};
  switch (dtype) {
    case DataType::Float64: a.f64 = d; break;
    case DataType::Float32: a.f32 = float(d); break;
    case DataType::Int64:
      a.i64 = std::holds_alternative<int64_t>(arg) ? std::get<int64_t>(arg) : int64_t(d);
      break;
    case DataType::Int32: a.i32 = int32_t(d); break;
    case DataType::Bool: a.b = d != 0; break;
    default: LOOM_THROW("scalar input ", name, " has type ", dataTypeName(dtype),
                        ", which kernel parameters do not support");
  }
  return a;
}

}  // namespace

std::vector<Tensor> KernelExecutor::run(std::span<const eval::Argument> inputs) {
  LOOM_CHECK(isCompiled(), "KernelExecutor::run called before compile");
  eval::ExpressionEvaluator ee;
  ee.bindInputs(*fusion_, inputs);

  LaunchParams lp;
  for (const kir::LaunchDim& d : kernel_->launch) {
    // Loops of one type with different extents share the largest; lowering predicates each
    // loop on its own extent (thread_predicates).
    int64_t value = -1;
    for (const ir::Scalar* e : d.extents) value = std::max(value, ee.evaluateInt(e));
    LOOM_CHECK(value > 0 && value <= (ir::isThreadDim(d.ptype) ? 1024 : (int64_t{1} << 31) - 1),
               "kernel ", generated_.name, ": ", ir::parallelTypeName(d.ptype), " extent ", value,
               " is out of the range a launch allows");
    switch (d.ptype) {
      case ir::ParallelType::BIDx: lp.grid[0] = uint32_t(value); break;
      case ir::ParallelType::BIDy: lp.grid[1] = uint32_t(value); break;
      case ir::ParallelType::BIDz: lp.grid[2] = uint32_t(value); break;
      case ir::ParallelType::TIDx: lp.block[0] = uint32_t(value); break;
      case ir::ParallelType::TIDy: lp.block[1] = uint32_t(value); break;
      case ir::ParallelType::TIDz: lp.block[2] = uint32_t(value); break;
      default: LOOM_UNREACHABLE("launch dim of a non-parallel type");
    }
  }
  LOOM_CHECK(uint64_t{lp.block[0]} * lp.block[1] * lp.block[2] <= 1024, "kernel ",
             generated_.name, ": more than 1024 threads per block (", lp.toString(), ")");
  size_t elem = 0;
  for (DataType t : kernel_->blockReduceTypes) elem = std::max(elem, dataTypeSize(t));
  elem = std::max(elem, size_t(kernel_->blockReduceBytes));
  lp.sharedBytes = elem * lp.block[0] * lp.block[1] * lp.block[2];
  if (kernel_->sharedTensorBytes > 0) {  // shared tensors after the 16-byte aligned scratch
    lp.sharedBytes = (lp.sharedBytes + 15) / 16 * 16 + size_t(kernel_->sharedTensorBytes);
  }
  last_launch_ = lp;
  if (DumpOptions::fromEnvironment().has(DumpOption::LaunchParams)) {
    std::cout << generated_.name << ": " << lp.toString() << "\n";
  }

  // Tensors by parameter: inputs as given (copied to the device on cuda), outputs allocated.
  std::vector<Tensor> params;
  std::vector<Tensor> outputs;
  for (const kir::Buffer* b : kernel_->params) {
    if (b->isFusionInput) {
      auto pos = std::find(fusion_->inputs().begin(), fusion_->inputs().end(), b->tv) -
                 fusion_->inputs().begin();
      const Tensor& host = std::get<Tensor>(inputs[size_t(pos)]);
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (backend_ == Backend::Cuda) {
        params.push_back(cuda::toDevice(host));
        continue;
      }
#endif
      params.push_back(host);
      continue;
    }
    Tensor t = allocateOutput(b->tv, ee.logicalSizes(b->tv), backend_);
    if (options_.poisonOutputs) {
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (backend_ == Backend::Cuda) cuda::fillBytes(t, 0xff);
#endif
      if (t.device().isCpu()) poison(t);
    }
    params.push_back(t);
    if (b->isFusionOutput) outputs.push_back(t);
  }
  std::vector<std::vector<int64_t>> blobs;
  std::vector<void*> args;
  blobs.reserve(params.size());
  std::vector<lower::TensorExtent> extents;
  for (const Tensor& t : params) extents.push_back({t.sizes(), t.strides()});
  const DataType index_type = lower::selectIndexType(extents);
  for (const auto& [vb, width] : kernel_->vectorized) {
    auto pos = size_t(std::find(kernel_->params.begin(), kernel_->params.end(), vb) -
                      kernel_->params.begin());
    checkVectorAlignment(vb, params.at(pos), width);
  }
  Compiled& module = moduleFor(index_type);
  for (const Tensor& t : params) blobs.push_back(packTensor(t, index_type));
  for (auto& blob : blobs) args.push_back(blob.data());
  std::vector<ScalarArg> scalars(kernel_->scalarParams.size());
  for (size_t i = 0; i < scalars.size(); ++i) {
    const auto& [input, var] = kernel_->scalarParams[i];
    auto pos = size_t(std::find(fusion_->inputs().begin(), fusion_->inputs().end(), input) -
                      fusion_->inputs().begin());
    scalars[i] = packScalar(inputs[pos], var->dtype(), input->toString());
    args.push_back(&scalars[i]);
  }
  // Grid-reduction scratch (kir::Kernel::gridScratch): work buffers of one element per thread per
  // block, zeroed semaphores per blockIdx.y/z segment; passed as plain pointers.
  const uint64_t blocks = uint64_t{lp.grid[0]} * lp.grid[1] * lp.grid[2];
  const uint64_t threads = uint64_t{lp.block[0]} * lp.block[1] * lp.block[2];
  std::vector<Tensor> scratch;
  std::vector<void*> scratch_ptrs(kernel_->gridScratch.size());
  for (size_t i = 0; i < kernel_->gridScratch.size(); ++i) {
    const kir::Kernel::GridScratch& g = kernel_->gridScratch[i];
    uint64_t bytes = g.semaphore ? 4 * uint64_t{lp.grid[1]} * lp.grid[2]
                                 : uint64_t(g.elementBytes) * blocks * threads;
    std::vector<int64_t> words{int64_t((bytes + 7) / 8)};
    Tensor t;
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (backend_ == Backend::Cuda) {
      t = cuda::emptyCuda(words, DataType::Int64);
      cuda::fillBytes(t, 0);
    }
#endif
    if (!t.defined()) {
      t = Tensor::empty(words, DataType::Int64);
      t.fill(0);
    }
    scratch.push_back(t);
    scratch_ptrs[i] = t.data();
    args.push_back(&scratch_ptrs[i]);
  }
  // An output that is also an input is returned as a copy of the input, in fusion output order.
  std::vector<Tensor> ordered;
  size_t next_written = 0;
  for (ir::Val* out : fusion_->outputs()) {
    auto in = std::find(fusion_->inputs().begin(), fusion_->inputs().end(), out);
    if (in == fusion_->inputs().end()) {
      ordered.push_back(outputs.at(next_written++));
      continue;
    }
    Tensor copy = std::get<Tensor>(inputs[size_t(in - fusion_->inputs().begin())]).contiguous();
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (backend_ == Backend::Cuda) copy = cuda::toDevice(copy);
#endif
    ordered.push_back(copy);
  }
  outputs = std::move(ordered);

  if (backend_ == Backend::Host) {
    module.host->launch(backend::Dim3(lp.grid[0], lp.grid[1], lp.grid[2]),
                            backend::Dim3(lp.block[0], lp.block[1], lp.block[2]), lp.sharedBytes,
                            args.data());
    return outputs;
  }
#ifdef LOOM_HAVE_CUDA_BACKEND
  cuda::LaunchConfig config(cuda::Dim3(lp.grid[0], lp.grid[1], lp.grid[2]),
                            cuda::Dim3(lp.block[0], lp.block[1], lp.block[2]), lp.sharedBytes);
  module.function->launch(config, args.data(), cuda::Stream::legacyDefault());
  std::vector<Tensor> host_outputs;
  for (const Tensor& t : outputs) host_outputs.push_back(cuda::toHost(t));
  return host_outputs;
#else
  LOOM_UNREACHABLE("cuda backend without LOOM_HAVE_CUDA_BACKEND");
#endif
}

}  // namespace loom::exec
