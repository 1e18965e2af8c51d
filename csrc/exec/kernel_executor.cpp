// SPDX-License-Identifier: Apache-2.0
// KernelExecutor: lower, generate, compile (host backend or NVRTC) and launch one kernel.
#include "loom/exec/kernel_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <sstream>

#include "exec/arguments.h"
#include "loom/backend/host_module.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/eval/index_check.h"
#include "loom/exec/contiguity.h"
#include "loom/exec/kernel_plan.h"
#include "loom/ir/layout.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/lower/index_type.h"
#include "loom/lower/lower.h"
#include "loom/support/checked_math.h"
#include "loom/support/dump_sink.h"
#include "loom/support/options.h"
#include "loom/support/phase_timer.h"
#include "loom/tensor/tensor_metadata.h"

namespace loom::exec {

struct KernelExecutor::Compiled {
  /// This slot's kernel text; empty until generated (compile() writes the Int32 one ahead, so
  /// the first run does not generate it again).
  codegen::GeneratedKernel generated;
  std::unique_ptr<Compiled> int32;  ///< in the Int64 slot only: the kernel built for Int32
  std::unique_ptr<LoadedKernel> loaded;
};

KernelExecutor::KernelExecutor() = default;
KernelExecutor::~KernelExecutor() = default;

void KernelExecutor::compile(const ir::Fusion& scheduled, Backend backend,
                             ExecutorOptions options) {
  LOOM_CHECK(options.device >= 0, "ExecutorOptions::device must be a GPU index (>= 0), got ",
             options.device);
  compile(scheduled, makeComputeDevice(backend, options.device), options);
}

void KernelExecutor::compile(const ir::Fusion& scheduled,
                             std::shared_ptr<const ComputeDevice> device, ExecutorOptions options) {
  LOOM_CHECK(device != nullptr, "KernelExecutor::compile needs a device");
  LOOM_CHECK(!options.indexType || *options.indexType == DataType::Int32 ||
                 *options.indexType == DataType::Int64,
             "KernelExecutor::compile: the index type must be Int32 or Int64, got ",
             dataTypeName(*options.indexType));
  LOOM_CHECK(
      options.maxRegisters == 0 || (options.maxRegisters >= 16 && options.maxRegisters <= 255),
      "KernelExecutor::compile: the register bound must be 16 to 255 (0: none), got ",
      options.maxRegisters);
  // Everything is built aside first, with runs of the previous kernel still going; a throw here
  // leaves the executor as it was.
  std::unique_ptr<ir::Fusion> fusion = scheduled.clone();
  options.device = device->index();
  const DumpOptions& dump = DumpOptions::fromEnvironment();
  PhaseTimer timer(dump.has(DumpOption::CompileTime), "kernel executor");
  std::unique_ptr<kir::Kernel> kernel = lower::lowerFusion(*fusion, dump, options.lowering);
  timer.mark("lower");
  // The text of the 32-bit-index kernel, which most sizes select; run() builds its module (or
  // generates the 64-bit one) once the sizes are known.
  codegen::CodegenOptions codegen_options = device->codegenOptions();
  codegen_options.maxRegisters = options.maxRegisters;
  kernel->indexType = DataType::Int32;
  codegen::GeneratedKernel generated = codegen::generateKernel(*kernel, codegen_options);
  timer.rename(generated.name);
  timer.mark("codegen (int32 indices)");
  auto compiled = std::make_unique<Compiled>();
  compiled->int32 = std::make_unique<Compiled>();
  compiled->int32->generated = generated;
  const bool has_vectorized = !kernel->vectorized.empty();
  std::vector<InPlaceOutput> aliases = inPlaceOutputs(*fusion);
  // The module is built by run() for the index type the bound sizes need (one per type, cached).

  // Swap it in once no run is in flight (runs use the kernel, its modules and plans without a
  // lock while they launch); runs that start meanwhile wait for the new kernel.
  std::unique_lock<std::mutex> gate(gate_mutex_);
  gate_cv_.wait(gate, [&] { return !compiling_; });
  compiling_ = true;
  gate_cv_.wait(gate, [&] { return runs_ == 0; });
  std::swap(fusion_, fusion);
  std::swap(kernel_, kernel);
  std::swap(compiled_, compiled);
  std::vector<std::unique_ptr<LaunchPlan>> old_plans = std::move(plans_);
  plans_.clear();
  generated_ = std::move(generated);
  codegen_options_ = codegen_options;
  device_ = std::move(device);
  options_ = options;
  last_generated_ = nullptr;
  last_loaded_ = nullptr;
  has_vectorized_ = has_vectorized;
  aliases_ = std::move(aliases);
  compiling_ = false;
  gate.unlock();
  gate_cv_.notify_all();
  // The previous kernel, its modules and plans are freed here, outside the lock.
}

KernelExecutor::Compiled& KernelExecutor::moduleFor(DataType index_type) {
  std::unique_ptr<Compiled>& slot = index_type == DataType::Int32 ? compiled_->int32 : compiled_;
  if (slot && slot->loaded) {
    generated_ = slot->generated;
    return *slot;
  }
  if (!slot) slot = std::make_unique<Compiled>();
  last_generated_ = nullptr;  // generated_ changes below
  const DumpOptions& dump = DumpOptions::fromEnvironment();
  PhaseTimer timer(dump.has(DumpOption::CompileTime), "kernel executor");
  device_->require("running a kernel with the cuda backend");
  kernel_->indexType = index_type;
  const bool generate = slot->generated.name.empty();
  if (generate) slot->generated = codegen::generateKernel(*kernel_, codegen_options_);
  generated_ = slot->generated;
  timer.rename(generated_.name);
  if (generate) {
    timer.mark(index_type == DataType::Int32 ? "codegen (int32 indices)"
                                             : "codegen (int64 indices)");
  }
  if (dump.has(DumpOption::CudaKernel)) dumpSink() << generated_.kernelText;
  slot->loaded = device_->load(generated_, timer);
  // A block of T threads whose registers do not fit T per block cannot launch
  // (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES): build it again with its registers bounded for T.
  const std::optional<int64_t> threads = kir::constantBlockThreads(*kernel_);
  if (const int64_t unbounded = threads ? slot->loaded->maxThreadsPerBlock() : 0;
      threads && *threads > unbounded) {
    codegen::CodegenOptions bounded = codegen_options_;
    bounded.boundBlockThreads = true;
    slot->generated = codegen::generateKernel(*kernel_, bounded);
    generated_ = slot->generated;
    timer.rename(generated_.name);
    timer.mark("codegen again, registers bounded for the block");
    if (dump.has(DumpOption::CudaKernel)) dumpSink() << generated_.kernelText;
    slot->loaded = device_->load(generated_, timer);
    // ptxas fits any block of up to 1024 threads once bounded (spilling if it must).
    const int64_t bounded_limit = slot->loaded->maxThreadsPerBlock();
    LOOM_ASSERT(*threads <= bounded_limit, "kernel ", generated_.name, " needs blocks of ",
                *threads, " threads, but its device runs at most ", bounded_limit,
                " threads per block of it (", unbounded, " before its registers were bounded)");
  }
  return *slot;
}

struct KernelExecutor::LaunchPlan {
  std::vector<int64_t> signature;
  LaunchParams launch;
  Compiled* module = nullptr;
  /// One per kernel tensor parameter, in parameter order.
  struct Param {
    const kir::Buffer* buffer = nullptr;
    int64_t input = -1;               ///< fusion input position; -1: allocated here
    std::vector<int64_t> allocSizes;  ///< allocated: contiguous sizes in allocation order
    std::vector<int64_t> sizes;       ///< allocated: the logical view (a permutation of it)
    std::vector<int64_t> strides;
    bool view = false;        ///< allocation order differs from logical, or expanded dims
    int64_t vectorBytes = 0;  ///< allocated and vectorized: the alignment it needs
    size_t pointerWord = 0;   ///< where its data pointer goes in `blob`
  };
  std::vector<Param> params;
  /// Per fusion output: a parameter index (>= 0) or -(input position + 1) for a copied input.
  std::vector<int64_t> outputs;
  /// Per parameter: the fusion output it is (the first one), or -1.
  std::vector<int64_t> outputOfParam;
  /// Per run: written parameters computed aside and copied into runInto's `into` after the
  /// launch (an address not aligned for the kernel's vector stores), as (parameter, output).
  std::vector<std::pair<size_t, size_t>> copyBack;
  // The argument buffer, filled once; a run only patches the data pointers of `blob`.
  std::vector<int64_t> blob;
  std::vector<detail::ScalarArg> scalars;
  std::vector<Tensor> scratch;  ///< grid-reduction work buffers and semaphores
  std::vector<void*> scratchPointers;
  /// Kernels with checked index reads (kir::Kernel::indexChecks): the two error words (zero
  /// between launches), their pointer argument, and each check's extent for the message.
  Tensor indexError;
  void* indexErrorPointer = nullptr;
  std::vector<int64_t> indexExtents;
  std::vector<void*> args;
  std::vector<Tensor> live;  ///< per run: the allocated parameters, emptied after launch
  /// A parallel type whose extent is 0 (0-size tensors), or "output" when every tensor the
  /// kernel writes is empty: nothing is launched (makePlan checks that every tensor the kernel
  /// allocates is empty then).
  std::string emptyDim;

  // makePlan's steps, in order; `name` is the kernel's, for messages.
  /// Cooperative kernels (after `module`): UserError unless every block can be resident.
  void checkResident(const ComputeDevice& device, const std::string& name);
  /// Grid, block and shared memory bytes, checked against CUDA's limits and the GPU's.
  void setLaunch(const kir::Kernel& kernel, eval::ExpressionEvaluator& ee,
                 const ComputeDevice& device, const std::string& name);
  /// One Param per kernel tensor parameter; returns each one's sizes and strides.
  std::vector<lower::TensorExtent> addParams(const kir::Kernel& kernel, const ir::Fusion& fusion,
                                             std::span<const eval::Argument> inputs,
                                             eval::ExpressionEvaluator& ee,
                                             const std::string& name);
  /// The vectorized parameters' layouts (and the alignment fresh allocations need).
  void checkVectorized(const kir::Kernel& kernel, std::span<const eval::Argument> inputs);
  /// The argument buffer: tensor blobs, scalars, grid-reduction scratch and the index-check
  /// error words, then `args` pointing into them.
  void buildArguments(const kir::Kernel& kernel, const ir::Fusion& fusion,
                      std::span<const eval::Argument> inputs,
                      const std::vector<lower::TensorExtent>& extents, DataType index_type,
                      const ComputeDevice& device, CUstream stream, eval::ExpressionEvaluator& ee);
  /// `outputs`: the fusion's outputs in order, written parameters or copied inputs.
  void mapOutputs(const ir::Fusion& fusion);
};

namespace {

// The index type of a run: the one ExecutorOptions::indexType asks for, or the narrowest that
// holds every tensor's offsets.
DataType indexTypeFor(const std::optional<DataType>& asked,
                      std::span<const lower::TensorExtent> extents, const std::string& kernel) {
  const DataType fits = lower::selectIndexType(extents);
  if (!asked.has_value()) return fits;
  LOOM_CHECK(*asked != DataType::Int32 || fits == DataType::Int32, "kernel ", kernel,
             ": 32-bit indices were asked for (index_type=Int32), but a tensor of this run has "
             "2^30 or more elements or a larger offset; ask for Int64 or leave the index type "
             "unset");
  return *asked;
}

// Appends the fields of one signature: what a plan depends on. See the header comment.
void appendSignature(std::vector<int64_t>& sig, std::span<const eval::Argument> inputs,
                     bool alignment) {
  sig.push_back(int64_t(inputs.size()));
  for (const eval::Argument& a : inputs) {
    sig.push_back(int64_t(a.index()));
    if (const Tensor* t = std::get_if<Tensor>(&a)) {
      appendKeyFields(sig, *t, alignment);
    } else if (const double* d = std::get_if<double>(&a)) {
      int64_t bits = 0;
      std::memcpy(&bits, d, sizeof(bits));
      sig.push_back(bits);
    } else if (const int64_t* i = std::get_if<int64_t>(&a)) {
      sig.push_back(*i);
    } else {
      sig.push_back(std::get<bool>(a) ? 1 : 0);
    }
  }
}

}  // namespace

void KernelExecutor::computeSignature(std::span<const eval::Argument> inputs) {
  signature_.clear();
  appendSignature(signature_, inputs, has_vectorized_);
}

std::unique_ptr<KernelExecutor::LaunchPlan> KernelExecutor::makePlan(
    std::span<const eval::Argument> inputs) {
  auto plan = std::make_unique<LaunchPlan>();
  plan->signature = signature_;
  eval::ExpressionEvaluator ee;
  ee.bindInputs(*fusion_, inputs);
  plan->setLaunch(*kernel_, ee, *device_, generated_.name);
  const std::vector<lower::TensorExtent> extents =
      plan->addParams(*kernel_, *fusion_, inputs, ee, generated_.name);
  const DataType index_type = indexTypeFor(options_.indexType, extents, generated_.name);
  plan->checkVectorized(*kernel_, inputs);
  plan->module = &moduleFor(index_type);
  if (kernel_->cooperative) plan->checkResident(*device_, generated_.name);
  plan->buildArguments(*kernel_, *fusion_, inputs, extents, index_type, *device_, options_.stream,
                       ee);
  plan->mapOutputs(*fusion_);
  // The fusion's own in-place outputs are copied into their inputs through the inputs' strides,
  // checked once per signature (sizes and strides are part of it).
  for (const InPlaceOutput& a : aliases_) {
    const LaunchPlan::Param& p = plan->params.at(size_t(plan->outputs.at(size_t(a.output))));
    checkInPlaceLayout(*fusion_, a, std::get<Tensor>(inputs[size_t(a.input)]), p.sizes);
  }
  return plan;
}

// A kernel with grid barriers: the grid is checked against what the device can hold resident
// (detail::checkResident) before anything is launched.
void KernelExecutor::LaunchPlan::checkResident(const ComputeDevice& device,
                                               const std::string& name) {
  launch.cooperative = true;
  if (!emptyDim.empty()) return;  // nothing is launched
  detail::checkResident(launch, *module->loaded, device, name);
}

void KernelExecutor::LaunchPlan::setLaunch(const kir::Kernel& kernel, eval::ExpressionEvaluator& ee,
                                           const ComputeDevice& device, const std::string& name) {
  LaunchParams& lp = launch;
  for (const kir::LaunchDim& d : kernel.launch) {
    // Loops of one type with different extents share the largest; lowering predicates each
    // loop on its own extent (thread_predicates).
    int64_t value = -1;
    for (const ir::Scalar* e : d.extents) value = std::max(value, ee.evaluateInt(e));
    // The launch limits of every CUDA GPU: 1024 threads per block dim (and per block, below),
    // 2^31 - 1 blocks along x, 65535 along y and z.
    const int64_t limit = ir::isThreadDim(d.ptype)             ? 1024
                          : d.ptype == ir::ParallelType::BIDx ? (int64_t{1} << 31) - 1
                                                               : 65535;
    LOOM_CHECK(value >= 0 && value <= limit, "kernel ", name, ": ", ir::parallelTypeName(d.ptype),
               " extent ", value, " is out of the range a launch allows (at most ", limit, ")");
    if (value == 0 && emptyDim.empty()) emptyDim = ir::parallelTypeName(d.ptype);
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
  LOOM_CHECK(uint64_t{lp.block[0]} * lp.block[1] * lp.block[2] <= 1024, "kernel ", name,
             ": more than 1024 threads per block (", lp.toString(), ")");
  size_t elem = 0;
  for (DataType t : kernel.blockReduceTypes) elem = std::max(elem, dataTypeSize(t));
  elem = std::max(elem, size_t(kernel.blockReduceBytes));
  lp.sharedBytes = elem * lp.block[0] * lp.block[1] * lp.block[2];
  // Shared tensors after the 16-byte aligned scratch: the constant-size ones, then those sized
  // by this launch's extents.
  int64_t tensors = kernel.sharedTensorBytes;
  for (const kir::Kernel::DynamicShared& d : kernel.dynamicShared) {
    int64_t n = d.elements;
    for (const ir::Scalar* e : d.extents) n *= ee.evaluateInt(e);
    tensors += (n * d.elementBytes + 15) / 16 * 16;
  }
  if (tensors > 0) lp.sharedBytes = (lp.sharedBytes + 15) / 16 * 16 + size_t(tensors);
  // Checked here rather than left to the driver's CUDA_ERROR_INVALID_VALUE at launch: the
  // schedule (a scheduler's plan or a hand schedule) asked for more than the GPU has.
  if (std::optional<cuda::DeviceProperties> gpu = device.gpuProperties()) {
    LOOM_CHECK(lp.sharedBytes <= gpu->maxSharedMemoryPerBlockOptin, "kernel ", name, " needs ",
               lp.sharedBytes, " bytes of shared memory per block (", tensors,
               " for shared tensors, the rest for block reductions of ", lp.toString(), "), but ",
               gpu->name, " allows at most ", gpu->maxSharedMemoryPerBlockOptin,
               ": schedule fewer threads or keep less in shared memory");
  }
}

// Tensors by parameter: inputs as given (size-1 strides normalized, see contiguity.h), outputs
// laid out densely from their allocation domains.
std::vector<lower::TensorExtent> KernelExecutor::LaunchPlan::addParams(
    const kir::Kernel& kernel, const ir::Fusion& fusion, std::span<const eval::Argument> inputs,
    eval::ExpressionEvaluator& ee, const std::string& name) {
  std::vector<lower::TensorExtent> extents;
  bool writes = false;    // some parameter is written (not a fusion input)
  bool all_empty = true;  // every written parameter has zero elements
  for (const kir::Buffer* b : kernel.params) {
    Param p;
    p.buffer = b;
    int64_t numel = 0;  // of a written parameter
    if (b->isFusionInput) {
      p.input = std::find(fusion.inputs().begin(), fusion.inputs().end(), b->tv) -
                fusion.inputs().begin();
      const Tensor& t = std::get<Tensor>(inputs[size_t(p.input)]);
      // Lowering trusts the declared contiguity (no strides on contiguous dims): check it.
      checkContiguity(b->tv, "input " + std::to_string(p.input) + " (" + b->tv->toString() + ")",
                      t.sizes(), t.strides());
      extents.push_back({t.sizes(), kernelStrides(b->tv, t.sizes(), t.strides())});
    } else {
      p.sizes = ee.logicalSizes(b->tv);
      numel = checkedNumel(p.sizes, "the element count of " + b->tv->toString());
      checkedMul(numel, int64_t(dataTypeSize(b->tv->dtype())),
                 "the byte size of " + b->tv->toString());
      writes = true;
      all_empty = all_empty && numel == 0;
      ir::DenseLayout layout = ir::denseLayout(b->tv, p.sizes);
      p.allocSizes = std::move(layout.allocSizes);
      p.strides = std::move(layout.strides);
      p.view = layout.view;
      extents.push_back({p.sizes, p.strides});
    }
    if (!emptyDim.empty() && p.input < 0) {
      // A 0 extent leaves the loops of its type empty: only right to skip the launch when no
      // allocated tensor has an element some thread would have to write.
      LOOM_CHECK(numel == 0, "kernel ", name, ": its ", emptyDim, " extent is 0 but ",
                 b->tv->toString(), " has ", numel,
                 " elements to write; launching no blocks or threads on a 0-size axis is only "
                 "supported when every tensor the kernel writes is empty");
    }
    params.push_back(std::move(p));
  }
  // Every tensor the kernel writes is empty (an output of expanded broadcasts of extent 0 has no
  // loop to leave empty): a launch could only write out of bounds.
  if (writes && all_empty && emptyDim.empty()) emptyDim = "output";
  return extents;
}

void KernelExecutor::LaunchPlan::checkVectorized(const kir::Kernel& kernel,
                                                 std::span<const eval::Argument> inputs) {
  for (const kir::Kernel::VectorizedParam& v : kernel.vectorized) {
    const kir::Buffer* vb = v.buffer;
    auto pos =
        size_t(std::find(kernel.params.begin(), kernel.params.end(), vb) - kernel.params.begin());
    Param& p = params.at(pos);
    if (v.peeled) continue;  // the kernel checks each vector's layout itself
    if (p.input >= 0) {
      const Tensor& t = std::get<Tensor>(inputs[size_t(p.input)]);
      detail::checkVectorLayout(v, t.data(), t.sizes(), t.strides());
    } else {
      // The pointer of a fresh allocation is checked per run (see launchPlan).
      detail::checkVectorLayout(v, nullptr, p.sizes, p.strides);
      p.vectorBytes = v.width * int64_t(dataTypeSize(vb->dtype));
    }
  }
}

void KernelExecutor::LaunchPlan::buildArguments(const kir::Kernel& kernel, const ir::Fusion& fusion,
                                                std::span<const eval::Argument> inputs,
                                                const std::vector<lower::TensorExtent>& extents,
                                                DataType index_type, const ComputeDevice& device,
                                                CUstream stream, eval::ExpressionEvaluator& ee) {
  // Tensor blobs (pointers patched per run), then scalars.
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].pointerWord =
        detail::appendTensorBlob(blob, extents[i].sizes, extents[i].strides, index_type);
  }
  for (const auto& [input, var] : kernel.scalarParams) {
    auto pos = size_t(std::find(fusion.inputs().begin(), fusion.inputs().end(), input) -
                      fusion.inputs().begin());
    scalars.push_back(detail::packScalar(inputs[pos], var->dtype(), input->toString()));
  }
  // Grid-reduction scratch (kir::Kernel::gridScratch): work buffers of one element per thread
  // per block and entrance, and semaphores: one per segment and entrance is needed, one per block
  // and entrance is allocated (an upper bound, whatever dims are reduced). They live with the plan.
  // The semaphores are zeroed once here: grid.cuh's last block of each segment resets its counter
  // (atomicExch to 0), so they are zero again after every complete launch and need no memset per
  // run. Launches of one executor are ordered on its one stream, so no two use them at once.
  const uint64_t blocks = uint64_t{launch.grid[0]} * launch.grid[1] * launch.grid[2];
  const uint64_t threads = uint64_t{launch.block[0]} * launch.block[1] * launch.block[2];
  for (const kir::Kernel::GridScratch& g : kernel.gridScratch) {
    // Serial loops of run-time extents around the call site multiply its entrances now.
    uint64_t entrances = uint64_t(g.entrances);
    for (const ir::Scalar* extent : g.entranceExtents) {
      entrances *= uint64_t(std::max<int64_t>(ee.evaluateInt(extent), 0));
    }
    uint64_t bytes =
        g.perLaunch
            ? uint64_t(g.elementBytes)
            : entrances * (g.semaphore ? 4 * blocks : uint64_t(g.elementBytes) * blocks * threads);
    std::vector<int64_t> words{int64_t((bytes + 7) / 8)};
    Tensor t = device.empty(words, DataType::Int64, stream);
    device.zero(t, stream);
    scratch.push_back(t);
    scratchPointers.push_back(t.data());
  }
  if (!kernel.indexChecks.empty()) {
    indexError = device.empty(std::vector<int64_t>{2}, DataType::Int64, stream);
    device.zero(indexError, stream);
    indexErrorPointer = indexError.data();
    for (const kir::Kernel::IndexCheck& c : kernel.indexChecks) {
      indexExtents.push_back(ee.evaluateInt(c.extent));
    }
  }
  for (const Param& p : params) args.push_back(&blob[p.pointerWord]);
  for (detail::ScalarArg& a : scalars) args.push_back(&a);
  for (void*& ptr : scratchPointers) args.push_back(&ptr);
  if (indexErrorPointer != nullptr) args.push_back(&indexErrorPointer);
  live.resize(params.size());
}

void KernelExecutor::LaunchPlan::mapOutputs(const ir::Fusion& fusion) {
  std::vector<int64_t> written;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].input < 0 && params[i].buffer->isFusionOutput) written.push_back(int64_t(i));
  }
  size_t next_written = 0;
  outputOfParam.assign(params.size(), -1);
  for (ir::Val* out : fusion.outputs()) {
    auto in = std::find(fusion.inputs().begin(), fusion.inputs().end(), out);
    if (in == fusion.inputs().end()) {
      const int64_t param = written.at(next_written++);
      outputOfParam[size_t(param)] = int64_t(outputs.size());
      outputs.push_back(param);
    } else {
      outputs.push_back(-int64_t(in - fusion.inputs().begin()) - 1);
    }
  }
}

namespace {

// UserError unless `given` can hold parameter `p` (what launchPlan would allocate): its dtype
// and sizes. True when it also has p's strides, so the kernel can store into it.
bool checkGivenOutput(const Tensor& given, const ir::TensorView* tv, DataType dtype,
                      const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  auto list = [](const std::vector<int64_t>& v) {
    std::string out = "[";
    for (size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + std::to_string(v[k]);
    return out + "]";
  };
  LOOM_CHECK(given.dtype() == dtype && given.sizes() == sizes, "the buffer given for output ",
             tv->toString(), " (", given.dtype(), ", sizes ", list(given.sizes()),
             ") is not the output (", dtype, ", sizes ", list(sizes), ")");
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && given.stride(int64_t(d)) != strides[d]) return false;
  }
  return true;
}

}  // namespace

void KernelExecutor::launchPlan(LaunchPlan& plan, std::span<const eval::Argument> inputs,
                                std::vector<Tensor>& outputs, std::span<const Tensor> into) {
  const CUstream stream = options_.stream;
  // Allocated parameters stay referenced in plan.live until the launch is queued; on cuda their
  // memory goes back to the stream-ordered pool after the kernel, whenever the last handle drops.
  std::vector<Tensor>& allocated = plan.live;
  plan.copyBack.clear();
  for (size_t i = 0; i < plan.params.size(); ++i) {
    const LaunchPlan::Param& p = plan.params[i];
    void* data = nullptr;
    const int64_t out = plan.outputOfParam[i];
    const Tensor* given = out >= 0 && size_t(out) < into.size() && into[size_t(out)].defined()
                              ? &into[size_t(out)]
                              : nullptr;
    const bool stored = given != nullptr &&
                        checkGivenOutput(*given, p.buffer->tv, p.buffer->dtype, p.sizes, p.strides);
    if (stored && (p.vectorBytes == 0 ||
                   reinterpret_cast<uintptr_t>(given->data()) % uint64_t(p.vectorBytes) == 0)) {
      data = given->data();
      allocated[i] = *given;
    } else if (p.input >= 0) {
      data = std::get<Tensor>(inputs[size_t(p.input)]).data();
    } else {
      if (given != nullptr) plan.copyBack.emplace_back(i, size_t(out));
      const DataType dtype = p.buffer->dtype;
      Tensor t = device_->empty(p.view ? p.allocSizes : p.sizes, dtype, stream);
      if (options_.poisonOutputs) device_->poison(t, stream);
      if (p.view) t = Tensor(t.storage(), dtype, p.sizes, p.strides);
      data = t.data();
      if (p.vectorBytes != 0 && reinterpret_cast<uintptr_t>(data) % uint64_t(p.vectorBytes) != 0) {
        detail::throwMisalignedOutput(p.buffer, data, p.vectorBytes);
      }
      allocated[i] = std::move(t);
    }
    plan.blob[p.pointerWord] = int64_t(reinterpret_cast<uintptr_t>(data));
  }
  outputs.clear();
  outputs.reserve(plan.outputs.size());
  for (int64_t o : plan.outputs) {
    if (o >= 0) {
      outputs.push_back(allocated[size_t(o)]);  // a copy: `allocated` is emptied after launch
    } else {
      outputs.push_back(device_->copyForOutput(std::get<Tensor>(inputs[size_t(-o - 1)]), stream));
    }
  }

  const LaunchParams& lp = plan.launch;
  if (!plan.emptyDim.empty()) {  // every written tensor is empty: nothing to launch
    std::fill(allocated.begin(), allocated.end(), Tensor());
    return;
  }
  plan.module->loaded->launch(lp, plan.args.data(), stream);
  for (const auto& [param, out] : plan.copyBack) {
    copyInto(*device_, into[out], allocated[param], stream);
    outputs[out] = into[out];
  }
  std::fill(allocated.begin(), allocated.end(), Tensor());
  if (plan.indexErrorPointer != nullptr) checkIndexError(plan, stream);
}

// A failed index check (runtime/index.cuh) becomes the op's UserError; the words are zeroed again
// for the plan's next launch. Waits for the launch: an index check costs a round trip on a GPU.
void KernelExecutor::checkIndexError(LaunchPlan& plan, CUstream stream) {
  const auto failed = detail::takeIndexError(*device_, plan.indexError, stream);
  if (!failed) return;
  const auto [site, value] = *failed;
  LOOM_ASSERT(site < kernel_->indexChecks.size(), "kernel ", generated_.name,
              " reported index check ", site, " of ", kernel_->indexChecks.size());
  const kir::Kernel::IndexCheck& c = kernel_->indexChecks[site];
  LOOM_THROW(eval::indexOutOfRangeMessage(c.op, c.index, value, c.indexed, c.dim,
                                          plan.indexExtents[site]));
}

LaunchParams KernelExecutor::runResident(std::span<const eval::Argument> inputs,
                                         std::vector<Tensor>& outputs, double* plan_seconds,
                                         std::span<const Tensor> into) {
  // A plan is taken out of the list while it runs (its argument buffer, allocations and grid
  // scratch belong to one launch at a time) and put back after; a run that finds its plan taken
  // by another thread makes a second one. The lock covers the list and plan making (so a module
  // is built once), never a launch.
  std::unique_ptr<LaunchPlan> plan;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    computeSignature(inputs);
    for (size_t i = 0; i < plans_.size(); ++i) {
      if (plans_[i]->signature != signature_) continue;
      ++plan_hits_;
      plan = std::move(plans_[i]);
      plans_.erase(plans_.begin() + int64_t(i));
      break;
    }
    if (plan == nullptr) {
      ++plan_misses_;
      const auto plan_start = std::chrono::steady_clock::now();
      PhaseTimer timer(DumpOptions::fromEnvironment().has(DumpOption::CompileTime),
                       "kernel executor");
      // Devices first (clear messages); the plan then reads metadata only.
      (void)device_->checkArguments(*fusion_, inputs);
      plan = makePlan(inputs);
      timer.rename(generated_.name);
      timer.mark("launch plan (the codegen/cubin/module lines above included)");
      if (plan_seconds != nullptr) {
        *plan_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - plan_start).count();
      }
    } else if (plan_seconds != nullptr) {
      *plan_seconds = 0;
    }
  }
  launchPlan(*plan, inputs, outputs, into);
  const LaunchParams launched = plan->launch;
  std::lock_guard<std::mutex> lock(mutex_);
  last_launch_ = launched;
  last_generated_ = &plan->module->generated;
  last_loaded_ = plan->module->loaded.get();
  // Most recently used first.
  plans_.insert(plans_.begin(), std::move(plan));
  if (plans_.size() > kMaxPlans) plans_.pop_back();
  return launched;
}

int64_t KernelExecutor::lastRegistersPerThread() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_loaded_ == nullptr ? 0 : last_loaded_->registersPerThread();
}

std::optional<KernelPlan> KernelExecutor::exportPlan(std::span<const eval::Argument> inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernel_ == nullptr || !aliases_.empty()) return std::nullopt;
  computeSignature(inputs);
  const LaunchPlan* plan = nullptr;
  for (const std::unique_ptr<LaunchPlan>& p : plans_) {
    if (p->signature == signature_) plan = p.get();
  }
  if (plan == nullptr) return std::nullopt;
  KernelPlan k;
  k.generated = plan->module->generated;
  k.launch = plan->launch;
  for (const LaunchPlan::Param& p : plan->params) {
    KernelPlan::Param& q = k.params.emplace_back();
    q.input = p.input;
    q.dtype = p.buffer->dtype;
    if (p.input >= 0) {
      const Tensor& t = std::get<Tensor>(inputs[size_t(p.input)]);
      q.inputAlignment = dataAlignment(t.data(), t.numel());
    }
    q.allocSizes = p.allocSizes;
    q.sizes = p.sizes;
    q.strides = p.strides;
    q.view = p.view;
    q.vectorBytes = p.vectorBytes;
    q.pointerWord = int64_t(p.pointerWord);
  }
  k.outputs = plan->outputs;
  k.blob = plan->blob;
  for (const auto& [input, var] : kernel_->scalarParams) {
    auto pos = std::find(fusion_->inputs().begin(), fusion_->inputs().end(), input) -
               fusion_->inputs().begin();
    k.scalars.push_back({int64_t(pos), var->dtype(), input->toString()});
  }
  for (const Tensor& t : plan->scratch) k.scratchWords.push_back(t.numel());
  k.emptyDim = plan->emptyDim;
  for (size_t i = 0; i < kernel_->indexChecks.size(); ++i) {
    const kir::Kernel::IndexCheck& c = kernel_->indexChecks[i];
    k.indexChecks.push_back({c.op, c.index, c.indexed, c.dim, plan->indexExtents.at(i)});
  }
  return k;
}

std::vector<Tensor> KernelExecutor::run(std::span<const eval::Argument> inputs) {
  std::vector<Tensor> outputs;
  runInto(inputs, outputs);
  return outputs;
}

// Counts a run in flight for its whole duration (compile() waits until none is), after waiting
// for a compile() in progress to swap its kernel in.
class KernelExecutor::RunGate {
 public:
  explicit RunGate(KernelExecutor& ke) : ke_(ke) {
    std::unique_lock<std::mutex> gate(ke_.gate_mutex_);
    ke_.gate_cv_.wait(gate, [&] { return !ke_.compiling_; });
    ++ke_.runs_;
  }
  ~RunGate() {
    std::unique_lock<std::mutex> gate(ke_.gate_mutex_);
    const bool last = --ke_.runs_ == 0 && ke_.compiling_;
    gate.unlock();
    if (last) ke_.gate_cv_.notify_all();
  }
  RunGate(const RunGate&) = delete;
  RunGate& operator=(const RunGate&) = delete;

 private:
  KernelExecutor& ke_;
};

LaunchParams KernelExecutor::runInto(std::span<const eval::Argument> inputs,
                                     std::vector<Tensor>& outputs, double* plan_seconds,
                                     std::span<const Tensor> into) {
  RunGate gate(*this);
  LOOM_CHECK(isCompiled(), "KernelExecutor::run called before compile");
  LOOM_CHECK(into.empty() || into.size() == fusion_->outputs().size(),
             "KernelExecutor::runInto: ", into.size(), " buffers given for ",
             fusion_->outputs().size(), " outputs");
  if (!aliases_.empty() && inputs.size() == fusion_->inputs().size()) {
    checkInPlaceOverlap(*fusion_, inputs);
  }
  if (!device_->copiesArguments(inputs)) {
    LaunchParams launched = runResident(inputs, outputs, plan_seconds, into);
    writeAliases(inputs, outputs, options_.stream);
    return launched;
  }
  // Host tensors on a GPU: copy in, run device-resident, copy out (synchronous); the in-place
  // outputs land in the device copies of their inputs, then in the caller's host tensors.
  LOOM_CHECK(into.empty(),
             "KernelExecutor::runInto: buffers for the outputs are taken only "
             "with device-resident arguments");
  if (!aliases_.empty()) checkInPlaceArguments(*fusion_, inputs);  // the caller's layouts
  const std::vector<eval::Argument> copies = device_->copyIn(*fusion_, inputs, options_.stream);
  LaunchParams launched = runResident(copies, outputs, plan_seconds, into);
  device_->copyOut(outputs, options_.stream);
  writeAliases(inputs, outputs, options_.stream);
  return launched;
}

void KernelExecutor::writeAliases(std::span<const eval::Argument> inputs,
                                  std::vector<Tensor>& outputs, CUstream stream) const {
  for (const InPlaceOutput& a : aliases_) {
    const Tensor& target = std::get<Tensor>(inputs[size_t(a.input)]);
    copyInto(*device_, target, outputs[size_t(a.output)], stream);
    outputs[size_t(a.output)] = target;
  }
}

}  // namespace loom::exec
