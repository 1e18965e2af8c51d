// SPDX-License-Identifier: Apache-2.0
// KernelExecutor: lower, generate, compile (host backend or NVRTC) and launch one kernel.
#include "loom/exec/kernel_executor.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "loom/backend/host_module.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
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
  if (dump.has(DumpOption::CudaKernel)) std::cout << generated_.kernelText;
  compiled_ = std::make_unique<Compiled>();
  if (backend_ == Backend::Host) {
    compiled_->host = backend::HostModule::load(generated_.source, generated_.name);
    return;
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
  compiled_->module = std::make_unique<cuda::Module>(r.cubin, 0);
  compiled_->function = std::make_unique<cuda::Function>(compiled_->module->function(generated_.name));
#else
  LOOM_THROW("this Loom build has no CUDA backend (cuda.h was not found at configure time)");
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
std::vector<int64_t> packTensor(const Tensor& t) {
  std::vector<int64_t> blob;
  blob.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data())));
  for (int64_t s : t.sizes()) blob.push_back(s);
  for (int64_t s : t.strides()) blob.push_back(s);
  return blob;
}

}  // namespace

std::vector<Tensor> KernelExecutor::run(std::span<const eval::Argument> inputs) {
  LOOM_CHECK(isCompiled(), "KernelExecutor::run called before compile");
  eval::ExpressionEvaluator ee;
  ee.bindInputs(*fusion_, inputs);

  LaunchParams lp;
  for (const kir::LaunchDim& d : kernel_->launch) {
    int64_t value = -1;
    for (const ir::Scalar* e : d.extents) {
      int64_t v = ee.evaluateInt(e);
      LOOM_CHECK(value < 0 || v == value, "kernel ", generated_.name, ": loops parallelized on ",
                 ir::parallelTypeName(d.ptype), " have different extents (", value, " and ", v,
                 "); padding them with predicates is not supported yet");
      value = v;
    }
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
  lp.sharedBytes = elem * lp.block[0] * lp.block[1] * lp.block[2];
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
  for (const Tensor& t : params) blobs.push_back(packTensor(t));
  for (auto& blob : blobs) args.push_back(blob.data());

  if (backend_ == Backend::Host) {
    compiled_->host->launch(backend::Dim3(lp.grid[0], lp.grid[1], lp.grid[2]),
                            backend::Dim3(lp.block[0], lp.block[1], lp.block[2]), lp.sharedBytes,
                            args.data());
    return outputs;
  }
#ifdef LOOM_HAVE_CUDA_BACKEND
  cuda::LaunchConfig config(cuda::Dim3(lp.grid[0], lp.grid[1], lp.grid[2]),
                            cuda::Dim3(lp.block[0], lp.block[1], lp.block[2]), lp.sharedBytes);
  compiled_->function->launch(config, args.data(), cuda::Stream::legacyDefault());
  std::vector<Tensor> host_outputs;
  for (const Tensor& t : outputs) host_outputs.push_back(cuda::toHost(t));
  return host_outputs;
#else
  LOOM_UNREACHABLE("cuda backend without LOOM_HAVE_CUDA_BACKEND");
#endif
}

}  // namespace loom::exec
