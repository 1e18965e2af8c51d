// SPDX-License-Identifier: Apache-2.0
// FusionKernelRuntime (run plans over segments) and FusionExecutorCache (input keys, reuse).
#include "loom/runtime/fusion_executor_cache.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <iostream>
#include <sstream>

#include "loom/exec/contiguity.h"
#include "loom/exec/in_place.h"
#include "loom/ir/extent_bindings.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/verifier.h"
#include "loom/multidevice/sharding.h"
#include "loom/scheduler/registry.h"
#include "loom/segmenter/presegment.h"
#include "loom/segmenter/segmenter.h"
#include "loom/support/dump_sink.h"
#include "loom/support/options.h"
#include "loom/support/phase_timer.h"
#include "loom/support/sha256.h"
#include "loom/support/strings.h"
#include "loom/tensor/tensor_metadata.h"
#include "runtime/rank_agreement.h"

namespace loom::runtime {

namespace {

// FNV-1a over whole 64-bit fields rather than bytes (8x fewer dependent multiplies: the key is
// hashed on every run), with a final avalanche so the low bits unordered_map uses are mixed.
uint64_t hashFields(const std::vector<int64_t>& fields) {
  uint64_t h = 14695981039346656037ull;
  for (int64_t f : fields) {
    h ^= uint64_t(f);
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace

InputKey InputKey::of(std::span<const eval::Argument> args) {
  InputKey k;
  k.fields.reserve(args.size() * 8);
  k.assign(args);
  return k;
}

void InputKey::assign(std::span<const eval::Argument> args) {
  InputKey& k = *this;
  k.fields.clear();
  k.fields.push_back(int64_t(args.size()));
  for (const eval::Argument& a : args) {
    k.fields.push_back(int64_t(a.index()));  // tensor, double, int64 or bool
    if (const Tensor* t = std::get_if<Tensor>(&a)) appendKeyFields(k.fields, *t);
  }
  k.hash = hashFields(k.fields);
}

namespace {

// RuntimeOptions::paramOverrides: each name must be a field of some segment's parameters.
void applyParamOverrides(segmenter::SegmentedFusion& segmented,
                         const std::vector<std::pair<std::string, int64_t>>& overrides) {
  for (const auto& [name, value] : overrides) {
    bool used = false;
    std::string kinds;
    for (segmenter::Segment& seg : segmented.segments()) {
      segmenter::KernelWork* kernel = seg.kernel();
      if (kernel == nullptr) continue;  // only kernels have heuristic parameters
      used |= kernel->params->setField(name, value);
      kinds += (kinds.empty() ? "" : ", ") + seg.what();
    }
    LOOM_CHECK(used, "parameter override '", name, "=", value, "' names no field of the ",
               "heuristic parameters of this fusion's segments (", kinds, "); the fields are ",
               "the names LOOM_DUMP=scheduler_params prints");
  }
}

int64_t tensorBytes(const eval::Argument& a) {
  const Tensor* t = std::get_if<Tensor>(&a);
  return t == nullptr ? 0 : t->numel() * int64_t(t->itemSize());
}

}  // namespace

FusionKernelRuntime::FusionKernelRuntime(segmenter::SegmentedFusion segmented,
                                         const RuntimeOptions& options)
    : segmented_(std::move(segmented)),
      device_(options.device != nullptr
                  ? options.device
                  : exec::makeComputeDevice(options.backend, options.executor.device)) {
  const ir::Fusion& original = segmented_.original();
  const DumpOptions& dump = options.dumps();
  SegmentContext context;
  context.device = device_;
  context.executor = options.executor;
  context.communicator = options.communicator;
  context.deviceId = options.deviceId.value_or(0);
  context.dump = &dump;
  std::unordered_map<const ir::Val*, int64_t> slot_of;
  for (ir::Val* in : original.inputs()) slot_of[in] = num_slots_++;
  std::vector<int64_t> last_use;
  for (const segmenter::Segment& seg : segmented_.segments()) {
    std::vector<int64_t> ins;
    for (ir::Val* v : seg.fusion.inputs) {
      auto it = slot_of.find(v);
      if (it == slot_of.end() && v->isA<ir::Scalar>()) {
        // A size of an original input tensor: a slot the run fills from the arguments.
        if (auto b = ir::findInputBinding(original, v->as<ir::Scalar>())) {
          size_slots_.push_back({num_slots_, b->input, b->binding.dim, b->binding.factor});
          it = slot_of.emplace(v, num_slots_++).first;
        }
      }
      LOOM_ASSERT(it != slot_of.end(), "segment ", seg.id, " reads ", v->toString(),
                  " before any segment produces it");
      ins.push_back(it->second);
    }
    std::vector<int64_t> outs;
    for (ir::Val* v : seg.fusion.outputs) {
      slot_of[v] = num_slots_;
      outs.push_back(num_slots_++);
    }
    input_slots_.push_back(std::move(ins));
    output_slots_.push_back(std::move(outs));

    executors_.push_back(makeSegmentExecutor(seg, context));
    if (seg.kernel() != nullptr) ++num_kernels_;
    if (seg.matmul() != nullptr) ++num_matmuls_;
    if (seg.attention() != nullptr) ++num_attentions_;
  }
  // Last reader of each slot; original inputs and fusion outputs are never freed.
  last_use.assign(size_t(num_slots_), -1);
  for (size_t s = 0; s < input_slots_.size(); ++s) {
    for (int64_t slot : input_slots_[s]) last_use[size_t(slot)] = int64_t(s);
  }
  for (ir::Val* out : original.outputs()) {
    auto it = slot_of.find(out);
    LOOM_ASSERT(it != slot_of.end(), "no segment produces fusion output ", out->toString());
    fusion_output_slots_.push_back(it->second);
    output_is_input_.push_back(original.isInput(out));
    last_use[size_t(it->second)] = -1;
  }
  free_after_.resize(input_slots_.size());
  for (int64_t slot = int64_t(original.inputs().size()); slot < num_slots_; ++slot) {
    if (last_use[size_t(slot)] >= 0) free_after_[size_t(last_use[size_t(slot)])].push_back(slot);
  }
  const int64_t num_inputs = int64_t(original.inputs().size());
  for (const std::vector<int64_t>& ins : input_slots_) {
    bool direct = int64_t(ins.size()) == num_inputs;
    for (size_t i = 0; direct && i < ins.size(); ++i) direct = ins[i] == int64_t(i);
    direct_.push_back(direct);
  }
  store_into_.resize(input_slots_.size());
  for (const segmenter::InPlaceWrite& w : segmented_.inPlaceWrites()) {
    if (w.inPlace()) {
      store_into_[size_t(w.segment)].emplace_back(size_t(w.segmentOutput), size_t(w.input));
    } else {
      copied_.push_back(w);
    }
  }
  stream_ = options.executor.stream;
  device_id_ = options.deviceId;
  profile_ = options.profile;
  idle_.push_back(newScratch());
  records_.resize(input_slots_.size());
  for (const segmenter::Segment& seg : segmented_.segments()) {
    SegmentRecord& r = records_[size_t(seg.id)];
    r.segment = seg.id;
    r.kind = std::string(segmenter::workKindName(seg.work));
    r.scheduler = seg.what();
    r.params = seg.parameters();
    r.backend = device_->backend();
  }
  if (dump.has(DumpOption::HostProgram)) dumpSink() << hostProgram();
}

void FusionKernelRuntime::recordProfile(Scratch& sc,
                                        const std::vector<std::unique_ptr<exec::StreamMark>>& marks) {
  for (size_t s = 0; s < executors_.size(); ++s) {
    SegmentRecord& r = sc.records[s];
    const double between = device_->secondsBetween(*marks[2 * s], *marks[2 * s + 1]);
    r.deviceSeconds = std::max(0.0, between - r.compileSeconds);
    const auto* kernel = dynamic_cast<const KernelSegmentExecutor*>(executors_[s].get());
    r.kernelName = kernel != nullptr ? kernel->executor().generated().name : std::string();
    r.registers = kernel != nullptr ? kernel->executor().lastRegistersPerThread() : 0;
  }
}

void FusionKernelRuntime::adoptRun(std::span<const PlannedRuntime::StepRecord> steps) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (steps.size() != records_.size()) return;  // not these segments' run: nothing to report
  for (size_t s = 0; s < steps.size(); ++s) {
    SegmentRecord& r = records_[s];
    r.launch = steps[s].launch;
    r.seconds = steps[s].seconds;
    r.compileSeconds = 0;  // the planned run's modules were loaded before it
    r.inputBytes = steps[s].inputBytes;
    r.outputBytes = steps[s].outputBytes;
    r.bytes = r.inputBytes + r.outputBytes;
  }
}

std::string FusionKernelRuntime::hostProgram() const {
  std::ostringstream os;
  os << "host program";
  if (device_id_.has_value()) os << " of device " << *device_id_;
  const size_t steps = segmented_.segments().size();
  os << ": " << steps << (steps == 1 ? " step" : " steps") << " on " << device_->name() << "\n";
  for (const segmenter::Segment& seg : segmented_.segments()) {
    os << "  " << seg.id << ": " << executors_.at(size_t(seg.id))->step(seg) << "\n";
  }
  const ir::Fusion& original = segmented_.original();
  for (const segmenter::InPlaceWrite& w : segmented_.inPlaceWrites()) {
    const std::string out = original.outputs().at(size_t(w.output))->toString();
    const std::string in = original.inputs().at(size_t(w.input))->toString();
    if (w.inPlace()) {
      os << "  in place: step " << w.segment << " stores " << out << " into " << in << "\n";
    } else {
      os << "  then: copy " << out << " into " << in << " (not in place: " << w.why << ")\n";
    }
  }
  return os.str();
}

const exec::KernelExecutor& FusionKernelRuntime::executor(int64_t segment) const {
  const auto* k = dynamic_cast<const KernelSegmentExecutor*>(executors_.at(size_t(segment)).get());
  LOOM_CHECK(k != nullptr, "segment ", segment, " is a ",
             segmenter::workKindName(segmented_.segments().at(size_t(segment)).work),
             ", not a kernel");
  return k->executor();
}

std::unique_ptr<FusionKernelRuntime::Scratch> FusionKernelRuntime::newScratch() const {
  const size_t num_inputs = segmented_.original().inputs().size();
  auto scratch = std::make_unique<Scratch>();
  scratch->slots.assign(size_t(num_slots_), nullptr);
  scratch->owned.resize(size_t(num_slots_) - num_inputs);
  scratch->segment_args.resize(input_slots_.size());
  scratch->records.resize(input_slots_.size());
  return scratch;
}

std::vector<Tensor> FusionKernelRuntime::run(std::span<const eval::Argument> args) {
  return runImpl(args, nullptr);
}

std::vector<Tensor> FusionKernelRuntime::run(std::span<const eval::Argument> args,
                                             std::optional<RuntimePlan>& plan) {
  plan.reset();
  std::vector<std::optional<exec::KernelPlan>> captured;
  std::vector<Tensor> outs = runImpl(args, &captured);
  // Only what a RuntimePlan replays exactly: kernels only, nothing written in place, not one
  // device's part of a sharded fusion.
  if (!copied_.empty() || device_id_.has_value() || captured.size() != executors_.size()) {
    return outs;
  }
  for (const auto& writes : store_into_) {
    if (!writes.empty()) return outs;
  }
  RuntimePlan p;
  p.numInputs = int64_t(segmented_.original().inputs().size());
  p.numSlots = num_slots_;
  for (const SizeSlot& z : size_slots_) {
    p.sizeSlots.push_back({z.slot, int64_t(z.input), z.dim, z.factor});
  }
  for (size_t s = 0; s < executors_.size(); ++s) {
    if (!captured[s].has_value()) return outs;
    p.steps.push_back({input_slots_[s], output_slots_[s], free_after_[s], std::move(*captured[s])});
  }
  p.outputSlots = fusion_output_slots_;
  for (bool b : output_is_input_) p.outputIsInput.push_back(b ? 1 : 0);
  plan = std::move(p);
  return outs;
}

std::vector<Tensor> FusionKernelRuntime::runImpl(
    std::span<const eval::Argument> args, std::vector<std::optional<exec::KernelPlan>>* captured) {
  const size_t num_inputs = segmented_.original().inputs().size();
  LOOM_ASSERT(args.size() == num_inputs, "argument count");
  std::unique_ptr<Scratch> taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      taken = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (taken == nullptr) taken = newScratch();  // another run holds the idle one
  Scratch& sc = *taken;
  // On every exit: drop references to the caller's inputs and to the outputs handed out, and
  // give the scratch back.
  struct GiveBack {
    FusionKernelRuntime& runtime;
    std::unique_ptr<Scratch>& scratch;
    bool completed = false;  // the run finished: its records become lastRun()
    ~GiveBack() {
      std::fill(scratch->slots.begin(), scratch->slots.end(), nullptr);
      std::fill(scratch->owned.begin(), scratch->owned.end(), eval::Argument(Tensor()));
      for (auto& gathered : scratch->segment_args) gathered.clear();
      scratch->segment_outs.clear();
      scratch->segment_into.clear();
      std::lock_guard<std::mutex> lock(runtime.mutex_);
      if (completed) {
        // Only the timing and launch change per run; the strings were filled at construction,
        // but for an attention segment's, which says what ran (the fused kernel or the composite).
        for (size_t s = 0; s < runtime.records_.size(); ++s) {
          if (runtime.executors_[s]->saysWhatRan()) {
            runtime.records_[s].params = scratch->records[s].params;
          }
          runtime.records_[s].launch = scratch->records[s].launch;
          runtime.records_[s].seconds = scratch->records[s].seconds;
          runtime.records_[s].compileSeconds = scratch->records[s].compileSeconds;
          runtime.records_[s].bytes = scratch->records[s].bytes;
          runtime.records_[s].inputBytes = scratch->records[s].inputBytes;
          runtime.records_[s].outputBytes = scratch->records[s].outputBytes;
          if (runtime.profile_) {
            runtime.records_[s].deviceSeconds = scratch->records[s].deviceSeconds;
            runtime.records_[s].kernelName = scratch->records[s].kernelName;
            runtime.records_[s].registers = scratch->records[s].registers;
          }
        }
      }
      runtime.idle_.push_back(std::move(scratch));
    }
  } give_back{*this, taken};

  for (size_t i = 0; i < num_inputs; ++i) sc.slots[i] = &args[i];
  for (const SizeSlot& z : size_slots_) {
    eval::Argument& a = sc.owned[size_t(z.slot) - num_inputs];
    a = eval::Argument(std::get<Tensor>(args[z.input]).size(z.dim) * z.factor);
    sc.slots[size_t(z.slot)] = &a;
  }
  // Profiles: a mark of the stream before and after each segment, read after the last one.
  std::vector<std::unique_ptr<exec::StreamMark>> marks;
  if (profile_) marks.reserve(2 * executors_.size());
  for (size_t s = 0; s < executors_.size(); ++s) {
    int64_t bytes = 0;
    std::span<const eval::Argument> sargs = args;
    if (!direct_[s]) {
      std::vector<eval::Argument>& gathered = sc.segment_args[s];
      gathered.clear();
      for (int64_t slot : input_slots_[s]) gathered.push_back(*sc.slots[size_t(slot)]);
      sargs = gathered;
    }
    for (const eval::Argument& a : sargs) bytes += tensorBytes(a);
    const int64_t input_bytes = bytes;
    std::vector<Tensor>& outs = sc.segment_outs;  // reused: no allocation per segment
    SegmentRecord& r = sc.records[s];
    if (profile_) marks.push_back(device_->markStream(stream_));
    auto start = std::chrono::steady_clock::now();
    std::span<const Tensor> into;
    if (!store_into_[s].empty()) {
      sc.segment_into.assign(output_slots_[s].size(), Tensor());
      for (const auto& [k, input] : store_into_[s]) {
        sc.segment_into[k] = std::get<Tensor>(args[input]);
      }
      into = sc.segment_into;
    }
    executors_[s]->runInto(sargs, outs, r, into);
    auto stop = std::chrono::steady_clock::now();
    if (profile_) marks.push_back(device_->markStream(stream_));
    if (captured != nullptr) captured->push_back(executors_[s]->exportPlan(sargs));
    LOOM_ASSERT(outs.size() == output_slots_[s].size(), "segment output count");
    for (size_t i = 0; i < outs.size(); ++i) {
      bytes += int64_t(outs[i].numel()) * int64_t(outs[i].itemSize());
      size_t slot = size_t(output_slots_[s][i]);
      sc.owned[slot - num_inputs] = std::move(outs[i]);
      sc.slots[slot] = &sc.owned[slot - num_inputs];
    }
    // Intermediates nobody reads any more go back to the allocator now, not at the end (on cuda
    // stream-ordered: after the kernels queued so far).
    for (int64_t slot : free_after_[s]) {
      sc.owned[size_t(slot) - num_inputs] = eval::Argument(Tensor());
      sc.slots[size_t(slot)] = nullptr;
    }
    if (!direct_[s]) sc.segment_args[s].clear();
    outs.clear();
    r.seconds = std::chrono::duration<double>(stop - start).count();
    r.bytes = bytes;
    r.inputBytes = input_bytes;
    r.outputBytes = bytes - input_bytes;
  }
  if (profile_) recordProfile(sc, marks);
  std::vector<Tensor> result;
  result.reserve(fusion_output_slots_.size());
  for (size_t i = 0; i < fusion_output_slots_.size(); ++i) {
    const Tensor& t = std::get<Tensor>(*sc.slots[size_t(fusion_output_slots_[i])]);
    // An output that is also an input is returned as a copy, as KernelExecutor does.
    result.push_back(output_is_input_[i] ? device_->copyForOutput(t, stream_) : t);
  }
  // After every segment (and the copies of inputs returned as outputs): no read of an input
  // the in-place outputs below are copied into is left.
  for (const segmenter::InPlaceWrite& w : copied_) {
    const Tensor& target = std::get<Tensor>(args[size_t(w.input)]);
    exec::copyInto(*device_, target, result[size_t(w.output)], stream_);
    result[size_t(w.output)] = target;
  }
  give_back.completed = true;
  return result;
}

FusionExecutorCache::FusionExecutorCache(std::unique_ptr<ir::Fusion> fusion,
                                         RuntimeOptions options)
    : fusion_(std::move(fusion)), options_(options) {
  LOOM_CHECK(fusion_ != nullptr, "FusionExecutorCache needs a fusion");
  // A fusion handed in by the caller that breaks the IR contract is the caller's error.
  try {
    ir::verify(*fusion_);
    ir::verifyRunnable(*fusion_);
  } catch (const InternalError& e) {
    LOOM_CHECK(false, "invalid fusion: ", e.reason());
  }
  aliases_ = exec::inPlaceOutputs(*fusion_);
  if (multidevice::isMultidevice(*fusion_)) {
    LOOM_CHECK(aliases_.empty(), "the fusion is sharded and writes ",
               exec::describeInPlace(*fusion_, aliases_.front()),
               " in place (add_output(alias_input=)): in-place outputs of sharded fusions are "
               "not supported; return the output and copy it into the input yourself");
    if (const multidevice::Communicator* comm = options_.communicator) {
      if (!options_.deviceId.has_value()) options_.deviceId = comm->rank();
      for (const ir::TensorView* tv : fusion_->allTvs()) {
        if (!tv->hasDeviceMesh()) continue;
        for (int64_t d : tv->deviceMesh().devices()) {
          LOOM_CHECK(d < comm->size(), "the device mesh ", tv->deviceMesh(), " of ",
                     tv->toString(), " names device ", d, " but there are only ", comm->size(),
                     " ranks (", comm->source(), "): a mesh may not be larger than the world");
        }
      }
    }
    LOOM_CHECK(options_.deviceId.has_value(),
               "the fusion is sharded (its tensors have device meshes): set "
               "RuntimeOptions::deviceId to the device (rank) this process runs it as, or "
               "RuntimeOptions::communicator");
    // Malformed shardings and reshardings are the caller's errors: say so now, not at the
    // first run.
    std::unique_ptr<ir::Fusion> sharded = segmenter::shardedCopy(*fusion_, &sharding_passes_);
    program_ = segmenter::deviceProgram(*sharded, *options_.deviceId);
    if (options_.communicator != nullptr && options_.communicator->size() > 1) {
      agreement_ = std::make_unique<detail::RankAgreement>(*fusion_, *sharded,
                                                           options_.communicator->size());
    }
  }
  if (options_.device == nullptr) {
    int gpu = options_.executor.device;
    if (options_.gpu.has_value()) {
      gpu = *options_.gpu;
    } else if (options_.communicator != nullptr && exec::gpuCount() > 0) {
      // A rank drives cuda:<local rank>, ranks sharing GPUs round-robin when there are fewer.
      gpu = options_.communicator->gpuIndex(exec::gpuCount());
    }
    options_.device = exec::makeComputeDevice(options_.backend, gpu);
  }
  options_.backend = options_.device->backend();
  options_.executor.device = options_.device->index();
  // The schedulers size launches for the real GPU where there is one (the H200 defaults
  // otherwise, so heuristics stay deterministic without a driver).
  if (std::optional<cuda::DeviceProperties> p = options_.device->gpuProperties()) {
    device_info_.sm_count = p->multiprocessors;
    device_info_.max_threads_per_block = p->maxThreadsPerBlock;
    device_info_.shared_memory_per_block = int64_t(p->maxSharedMemoryPerBlockOptin);
    if (p->l2CacheBytes > 0) device_info_.l2_bytes = int64_t(p->l2CacheBytes);
  }
  if (program_.has_value()) {
    // The stand-ins of tensors this device receives without holding: sizes only, never read (an
    // address no allocation has, so a read would fault rather than go unnoticed). Made once.
    for (const segmenter::DeviceProgram::StandIn& s : program_->standIns) {
      stand_ins_.push_back(Tensor::fromBlob(reinterpret_cast<void*>(uintptr_t{4096}), s.sizes,
                                            Tensor::contiguousStrides(s.sizes), s.dtype,
                                            options_.device->tensorDevice()));
    }
  }
  dynamic_ = segmenter::hasDynamicReshape(programFusion());
  scalar_sizes_ = segmenter::sizesDependOnScalarInputs(programFusion());
}

FusionExecutorCache::~FusionExecutorCache() = default;

std::vector<Tensor> FusionExecutorCache::run(std::span<const eval::Argument> args) {
  const exec::ComputeDevice& device = *options_.device;
  std::vector<eval::Argument> held;
  if (program_.has_value()) {
    // Only the inputs this device holds are read (the others are never looked at).
    const auto& inputs = fusion_->inputs();
    LOOM_CHECK(args.size() == inputs.size(), "the fusion takes ", inputs.size(),
               " inputs but ", args.size(), " arguments were given");
    for (int64_t i : program_->inputs) {
      if (i >= 0) held.push_back(args[size_t(i)]);
    }
    args = held;
  }
  if (!aliases_.empty()) exec::checkInPlaceOverlap(*fusion_, args);
  if (!device.copiesArguments(args)) return runResident(args);
  // Host tensors on a GPU: copy in once, keep every segment on the device, copy the outputs out;
  // in-place outputs land in the device copies of their inputs, then in the caller's tensors.
  CUstream stream = options_.executor.stream;
  if (!aliases_.empty()) exec::checkInPlaceArguments(*fusion_, args);  // the caller's layouts
  std::vector<Tensor> outs = runResident(device.copyIn(programFusion(), args, stream));
  device.copyOut(outs, stream);
  for (const exec::InPlaceOutput& a : aliases_) {
    const Tensor& target = std::get<Tensor>(args[size_t(a.input)]);
    exec::copyInto(device, target, outs[size_t(a.output)], stream);
    outs[size_t(a.output)] = target;
  }
  return outs;
}

std::vector<Tensor> FusionExecutorCache::runResident(std::span<const eval::Argument> args) {
  if (!program_.has_value()) return runProgram(args);
  std::vector<eval::Argument> full(args.begin(), args.end());
  full.insert(full.end(), stand_ins_.begin(), stand_ins_.end());
  std::vector<Tensor> outs = runProgram(full);
  std::vector<Tensor> result;
  for (int64_t o : program_->outputs) result.push_back(o >= 0 ? outs.at(size_t(o)) : Tensor());
  return result;
}

const FusionExecutorCache::Variant& FusionExecutorCache::contiguityVariant(
    std::span<const eval::Argument> args) {
  // The flags the strides prove, per tensor input (bindInputs reports wrong ranks later).
  std::vector<ir::Contiguity> flags(programFusion().inputs().size());
  std::vector<int64_t> pattern;
  for (size_t i = 0; i < programFusion().inputs().size() && i < args.size(); ++i) {
    const auto* tv = programFusion().inputs()[i]->dynCast<ir::TensorView>();
    const Tensor* t = std::get_if<Tensor>(&args[i]);
    if (tv == nullptr || t == nullptr || !t->defined() || t->dim() != tv->rank()) continue;
    flags[i] = exec::contiguityFromStrides(tv, t->sizes(), t->strides());
    for (const std::optional<bool>& c : flags[i]) pattern.push_back(c.has_value() ? *c : 2);
    pattern.push_back(-int64_t(i) - 1);
  }
  segmenter::Concretization concretization;
  if (dynamic_) concretization = segmenter::concretizationFor(programFusion(), args);
  for (const Variant& v : variants_) {
    if (v.pattern == pattern && v.concretization == concretization) return v;
  }
  std::unique_ptr<ir::Fusion> variant = programFusion().clone();
  for (size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i].empty()) variant->inputs()[i]->as<ir::TensorView>()->setContiguity(flags[i]);
  }
  // Rewrites for these arguments (dynamic reshapes concretized, reduction inits separated, ...)
  // are the segmenter's pre-segmentation passes (presegment.h).
  variants_.push_back({std::move(pattern), std::move(concretization), std::move(variant)});
  return variants_.back();
}

const FusionKernelRuntime* FusionExecutorCache::lastRuntime() {
  Planned* planned = last_planned_.load(std::memory_order_relaxed);
  if (planned == nullptr) return last_.load(std::memory_order_relaxed);
  // The last run was a stored plan's: build the key's runtime as its cold miss would have.
  std::lock_guard<std::mutex> compiling(compile_mutex_);
  FusionKernelRuntime* runtime = findRuntime(planned->key);
  if (runtime == nullptr) {
    PhaseTimer timer(options_.dumps().has(DumpOption::CompileTime), "runtime of a planned run");
    runtime = runtimeFor(planned->metadata, timer);
    std::unique_lock<std::shared_mutex> lock(keys_mutex_);
    by_key_.emplace(planned->key, runtime);
  }
  runtime->adoptRun(planned->runtime->lastRun());
  last_.store(runtime, std::memory_order_relaxed);
  last_planned_.store(nullptr, std::memory_order_relaxed);
  return runtime;
}

namespace {

// What segmentation reads of `args`, without their data: tensors become stand-ins of the same
// sizes, strides, dtype, device and alignment class at an address no allocation has (never
// read or written); scalars stay.
std::vector<eval::Argument> metadataOf(std::span<const eval::Argument> args) {
  std::vector<eval::Argument> out;
  out.reserve(args.size());
  for (const eval::Argument& a : args) {
    const Tensor* t = std::get_if<Tensor>(&a);
    if (t == nullptr || !t->defined()) {
      out.push_back(a);
      continue;
    }
    // 4096 + the alignment class (16 is a multiple of 16: 4096 itself).
    const int64_t alignment = dataAlignment(t->data(), t->numel());
    const uintptr_t address = 4096 + (alignment >= 16 ? 0 : uintptr_t(alignment));
    out.emplace_back(Tensor::fromBlob(reinterpret_cast<void*>(address), t->sizes(), t->strides(),
                                      t->dtype(), t->device()));
  }
  return out;
}

}  // namespace

FusionKernelRuntime* FusionExecutorCache::findRuntime(const InputKey& key) const {
  std::shared_lock<std::shared_mutex> lock(keys_mutex_);
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second;
}

std::string FusionExecutorCache::planKey(const InputKey& key,
                                         std::span<const eval::Argument> args) {
  const std::string env = getEnv("LOOM_PLAN_CACHE").value_or("");
  const bool on = options_.planCache.has_value() ? *options_.planCache : env != "0";
  // What a plan does not replay: sharded fusions (collectives, rank agreement), in-place
  // outputs, a cache whose segmentation verifies schedules after a failure (a fresh process
  // would segment without), profiles (their records come from a FusionKernelRuntime), and
  // dumps of the stages a plan skips, and LOOM_DEBUG's checks of the IR those stages make.
  if (!on || program_.has_value() || agreement_ != nullptr || options_.communicator != nullptr ||
      !aliases_.empty() || verify_schedules_ || options_.profile) {
    return {};
  }
  // LOOM_PLAN_CACHE=force lets the IR checks stay on: they check the cold runs that store the
  // plans, and a planned run skips the stages they check. The test tiers, which all set
  // LOOM_DEBUG, run a suite this way so that planned runs meet the reference evaluator too.
  const DebugOptions debug = DebugOptions::fromEnvironment();
  for (int o = 0; o < int(DebugOption::kCount) && env != "force"; ++o) {
    if (debug.has(DebugOption(o))) return {};
  }
  for (int o = 0; o < int(DumpOption::kCount); ++o) {
    const auto option = DumpOption(o);
    // These print from the module load and the timing, which a planned run does too.
    if (option == DumpOption::CompileTime || option == DumpOption::HostCompile ||
        option == DumpOption::Ptxas) {
      continue;
    }
    if (options_.dumps().has(option) || DumpOptions::fromEnvironment().has(option)) return {};
  }
  // The text form carries the extent requirements too (broadcast_in_dim's sizes, the sharding
  // passes' divisibility): fusions that differ only in them do not share a plan.
  if (fusion_text_hash_.empty()) fusion_text_hash_ = sha256Hex(ir::printFusion(programFusion()));
  std::ostringstream m;
  m << "loom plan key 1\n"
    << loomBuildId() << "\nfusion " << fusion_text_hash_ << "\ndevice " << options_.device->name();
  if (std::optional<cuda::DeviceProperties> p = options_.device->gpuProperties()) {
    m << " " << p->name << " " << p->major << "." << p->minor << " " << p->multiprocessors << " "
      << p->maxThreadsPerBlock << " " << p->maxSharedMemoryPerBlockOptin << " " << p->l2CacheBytes;
  }
  const scheduler::DeviceInfo& d = device_info_;
  m << "\nsized for " << d.sm_count << " " << d.max_threads_per_block << " " << d.max_threads_per_sm
    << " " << d.warp_size << " " << d.shared_memory_per_block << " " << d.registers_per_sm << " "
    << d.max_registers_per_thread << " " << d.l2_bytes << " " << d.max_grid_x << " "
    << d.max_grid_yz << "\ncodegen " << options_.device->codegenOptions().multiprocessors
    << " peel " << options_.executor.lowering.peelVectorRows << "\noverrides";
  for (const auto& [name, value] : options_.paramOverrides) m << " " << name << "=" << value;
  std::vector<std::string> disabled(disabledPassesFromEnvironment().begin(),
                                    disabledPassesFromEnvironment().end());
  std::sort(disabled.begin(), disabled.end());
  m << "\ndisabled";
  for (const std::string& name : disabled) m << " " << name;
  m << "\ninputs";
  for (int64_t f : key.fields) m << " " << f;
  // Every scalar argument's value, not only those sizes depend on: a plan is exact for them.
  m << "\nscalars";
  for (const eval::Argument& a : args) {
    if (const auto* i = std::get_if<int64_t>(&a)) m << " i" << *i;
    if (const auto* b = std::get_if<bool>(&a)) m << " b" << *b;
    if (const auto* v = std::get_if<double>(&a)) m << " d" << std::bit_cast<int64_t>(*v);
  }
  return sha256Hex(m.str());
}

bool FusionExecutorCache::runStoredPlan(const InputKey& key, const std::string& plan_key,
                                        std::span<const eval::Argument> args,
                                        std::vector<Tensor>& outs) {
  const bool dump = options_.dumps().has(DumpOption::CompileTime);
  PhaseTimer timer(dump, "plan cache");
  const std::filesystem::path dir = planCacheDir();
  std::string why;
  std::optional<RuntimePlan> plan = loadPlan(dir, plan_key, why);
  if (!plan) {
    if (!why.empty()) {
      plan_ignored_.fetch_add(1, std::memory_order_relaxed);
      if (dump) {
        dumpSink() << "compile_time plan cache: ignored " << (dir / plan_key.substr(0, 32)).string()
                   << ".plan: " << why << "\n";
      }
    }
    return false;
  }
  timer.mark("read plan " + plan_key.substr(0, 32));
  auto planned =
      std::make_unique<PlannedRuntime>(std::move(*plan), options_.device, options_.executor, timer);
  if (!planned->run(args, outs)) {
    if (dump) dumpSink() << "compile_time plan cache: an intermediate's alignment differs\n";
    return false;
  }
  timer.mark("first run from the plan (no segment, schedule, lower or codegen)");
  plan_hits_.fetch_add(1, std::memory_order_relaxed);
  auto entry = std::make_unique<Planned>(Planned{key, std::move(planned), metadataOf(args)});
  last_planned_.store(entry.get(), std::memory_order_relaxed);
  std::unique_lock<std::shared_mutex> lock(keys_mutex_);
  planned_.emplace(key, std::move(entry));
  return true;
}

FusionKernelRuntime* FusionExecutorCache::runtimeFor(std::span<const eval::Argument> args,
                                                     PhaseTimer& timer) {
  const Variant& variant = contiguityVariant(args);
  auto segment = [&] {
    segmenter::SegmenterOptions seg_options;
    seg_options.verifySchedules = verify_schedules_;
    seg_options.deviceId = options_.deviceId;
    if (program_.has_value()) seg_options.communicationOrder = program_->communicationOrder;
    seg_options.device = device_info_;
    segmenter::SegmentedFusion sf = segmenter::segmentFusion(*variant.fusion, args, seg_options);
    applyParamOverrides(sf, options_.paramOverrides);
    return sf;
  };
  auto existing = [&](const segmenter::SegmentedFusion& sf) -> FusionKernelRuntime* {
    for (size_t i = 0; i < runtimes_.size(); ++i) {
      if (runtime_concretizations_[i] == variant.concretization &&
          runtimes_[i]->segmented().sameAs(sf)) {
        return runtimes_[i].get();
      }
    }
    return nullptr;
  };
  segmenter::SegmentedFusion segmented = segment();
  timer.mark("segment + heuristics");
  // Each input an output is written into holds it as the executors lay it out (exec/in_place.h).
  exec::checkInPlaceArguments(*variant.fusion, args);
  FusionKernelRuntime* runtime = existing(segmented);
  if (runtime == nullptr) {
    std::unique_ptr<FusionKernelRuntime> built;
    try {
      built = std::make_unique<FusionKernelRuntime>(std::move(segmented), options_);
    } catch (const UnavailableError&) {
      throw;  // no device or compiler: nothing a different segmentation changes
    } catch (const Error&) {
      if (verify_schedules_) throw;
      // Some segment's schedule does not compile (a scheduler's proposal it could not keep):
      // segment again with every proposal verified (segmenter.h), now and for later sizes.
      verify_schedules_ = true;
      segmented = segment();
      timer.mark("segmented again, verifying schedules");
      runtime = existing(segmented);
      if (runtime == nullptr) {
        built = std::make_unique<FusionKernelRuntime>(std::move(segmented), options_);
      }
    }
    if (built != nullptr) {
      runtimes_.push_back(std::move(built));
      runtime_concretizations_.push_back(variant.concretization);
      runtime = runtimes_.back().get();
      timer.mark("new runtime: schedule, lower, codegen every segment");
    }
  } else {
    timer.mark("runtime reused (same segments and heuristics)");
  }
  return runtime;
}

std::vector<Tensor> FusionExecutorCache::runProgram(std::span<const eval::Argument> args) {
  // The key is computed into this thread's buffer (no allocation once it has grown); a miss
  // stores a copy.
  thread_local InputKey key;
  key.assign(args);
  if (scalar_sizes_) {
    // Sizes (and so concretizations and heuristics) depend on the scalar arguments' values.
    for (const eval::Argument& a : args) {
      if (const auto* i = std::get_if<int64_t>(&a)) key.fields.push_back(*i);
      if (const auto* b = std::get_if<bool>(&a)) key.fields.push_back(*b ? 1 : 0);
      if (const auto* d = std::get_if<double>(&a)) {
        key.fields.push_back(std::bit_cast<int64_t>(*d));
      }
    }
    key.hash = hashFields(key.fields);
  }
  // A hit takes the keys' lock shared, only for the lookup; the runtime runs concurrently with
  // other hits (FusionKernelRuntime::run is safe to call from several threads).
  auto runHit = [&](FusionKernelRuntime* runtime) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    last_.store(runtime, std::memory_order_relaxed);
    last_planned_.store(nullptr, std::memory_order_relaxed);
    return runtime->run(args);
  };
  if (FusionKernelRuntime* runtime = findRuntime(key)) return runHit(runtime);
  // A key served by a stored plan (keys it could not serve go on to the pipeline below).
  auto runPlanned = [&](std::vector<Tensor>& outs) {
    Planned* planned = nullptr;
    {
      std::shared_lock<std::shared_mutex> lock(keys_mutex_);
      if (planned_.empty()) return false;
      auto it = planned_.find(key);
      if (it != planned_.end()) planned = it->second.get();
    }
    if (planned == nullptr || !planned->runtime->run(args, outs)) return false;
    hits_.fetch_add(1, std::memory_order_relaxed);
    last_planned_.store(planned, std::memory_order_relaxed);
    return true;
  };
  if (std::vector<Tensor> outs; runPlanned(outs)) return outs;
  // A miss: one thread at a time segments and compiles; a thread that waited here for the same
  // key finds the runtime the first one made.
  std::unique_lock<std::mutex> compiling(compile_mutex_);
  if (FusionKernelRuntime* runtime = findRuntime(key)) {
    compiling.unlock();
    return runHit(runtime);
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  // Before anything here can fail on one rank alone: ranks that disagree learn it together.
  if (agreement_ != nullptr) {
    const std::span<const int64_t> whole = program_.has_value()
                                               ? std::span<const int64_t>(program_->inputs)
                                               : std::span<const int64_t>();
    agreement_->check(*options_.communicator, args, whole, scalar_sizes_);
  }
  // The plan cache: a warm start runs the stored plan of this key and skips everything below.
  PhaseTimer key_timer(options_.dumps().has(DumpOption::CompileTime), "plan cache");
  const std::string plan_key = planKey(key, args);
  if (!plan_key.empty()) {
    key_timer.mark("key (fusion text, inputs, device, build)");
    bool known = false;
    {
      std::shared_lock<std::shared_mutex> lock(keys_mutex_);
      known = planned_.count(key) != 0;  // stored, but its plan did not fit these arguments
    }
    std::vector<Tensor> outs;
    if (!known && runStoredPlan(key, plan_key, args, outs)) return outs;
  }
  PhaseTimer timer(options_.dumps().has(DumpOption::CompileTime), "fusion");
  // Devices first (clear messages), then segmentFusion validates the rest
  // (ExpressionEvaluator::bindInputs) before anything is compiled. The evaluator and the
  // schedulers read metadata only, so tensors on any device go in as they are.
  (void)options_.device->checkArguments(programFusion(), args);
  FusionKernelRuntime* runtime = runtimeFor(args, timer);
  {
    std::unique_lock<std::shared_mutex> lock(keys_mutex_);
    by_key_.emplace(key, runtime);
  }
  compiling.unlock();
  last_.store(runtime, std::memory_order_relaxed);
  last_planned_.store(nullptr, std::memory_order_relaxed);
  if (plan_key.empty()) {
    std::vector<Tensor> outs = runtime->run(args);
    timer.mark("first run (modules, plans, launches; not synchronized)");
    return outs;
  }
  std::optional<RuntimePlan> plan;
  std::vector<Tensor> outs = runtime->run(args, plan);
  timer.mark("first run (modules, plans, launches; not synchronized)");
  if (plan.has_value() && storePlan(planCacheDir(), plan_key, *plan)) {
    plan_stores_.fetch_add(1, std::memory_order_relaxed);
    timer.mark("plan stored " + plan_key.substr(0, 32));
  }
  return outs;
}

}  // namespace loom::runtime
