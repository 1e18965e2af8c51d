// SPDX-License-Identifier: Apache-2.0
// KernelPlan's binary form and PlannedKernel, the launch of a plan restored from the disk.
#include "loom/exec/kernel_plan.h"

#include <algorithm>
#include <iterator>

#include "exec/arguments.h"
#include "loom/eval/index_check.h"
#include "loom/support/byte_codec.h"
#include "loom/tensor/tensor_metadata.h"

namespace loom::exec {

namespace {

std::optional<DataType> dtypeOf(int64_t v) {
  if (v < 0 || v >= int64_t(std::size(kAllDataTypes))) return std::nullopt;
  return kAllDataTypes[size_t(v)];
}

}  // namespace

void KernelPlan::write(std::string& out) const {
  // Not kernelText: it is the tail of `source`, read only by dumps, and dumps of the kernel keep
  // the plan cache out.
  putString(out, generated.name);
  putString(out, generated.source);
  for (uint32_t g : launch.grid) putInt(out, g);
  for (uint32_t b : launch.block) putInt(out, b);
  putInt(out, int64_t(launch.sharedBytes));
  putInt(out, launch.cooperative ? 1 : 0);
  putInt(out, int64_t(params.size()));
  for (const Param& p : params) {
    putInt(out, p.input);
    putInt(out, p.inputAlignment);
    putInt(out, int64_t(p.dtype));
    putInts(out, p.allocSizes);
    putInts(out, p.sizes);
    putInts(out, p.strides);
    putInt(out, p.view ? 1 : 0);
    putInt(out, p.vectorBytes);
    putInt(out, p.pointerWord);
  }
  putInts(out, outputs);
  putInts(out, blob);
  putInt(out, int64_t(scalars.size()));
  for (const Scalar& s : scalars) {
    putInt(out, s.input);
    putInt(out, int64_t(s.dtype));
    putString(out, s.name);
  }
  putInts(out, scratchWords);
  putString(out, emptyDim);
  putInt(out, int64_t(indexChecks.size()));
  for (const IndexCheck& c : indexChecks) {
    putString(out, c.op);
    putString(out, c.index);
    putString(out, c.indexed);
    putInt(out, c.dim);
    putInt(out, c.extent);
  }
}

std::optional<KernelPlan> KernelPlan::read(std::string_view& in) {
  ByteReader r(in);
  KernelPlan k;
  k.generated.name = r.getString();
  k.generated.source = r.getString();
  for (uint32_t& g : k.launch.grid) g = uint32_t(r.getInt());
  for (uint32_t& b : k.launch.block) b = uint32_t(r.getInt());
  k.launch.sharedBytes = size_t(r.getInt());
  k.launch.cooperative = r.getBool();
  k.params.resize(size_t(r.getCount(9 * 8)));
  bool valid = true;
  for (Param& p : k.params) {
    p.input = r.getInt();
    p.inputAlignment = r.getInt();
    std::optional<DataType> dt = dtypeOf(r.getInt());
    valid = valid && dt.has_value();
    p.dtype = dt.value_or(DataType::Float32);
    p.allocSizes = r.getInts();
    p.sizes = r.getInts();
    p.strides = r.getInts();
    p.view = r.getBool();
    p.vectorBytes = r.getInt();
    p.pointerWord = r.getInt();
  }
  k.outputs = r.getInts();
  k.blob = r.getInts();
  k.scalars.resize(size_t(r.getCount(3 * 8)));
  for (Scalar& s : k.scalars) {
    s.input = r.getInt();
    std::optional<DataType> dt = dtypeOf(r.getInt());
    valid = valid && dt.has_value();
    s.dtype = dt.value_or(DataType::Float32);
    s.name = r.getString();
  }
  k.scratchWords = r.getInts();
  k.emptyDim = r.getString();
  k.indexChecks.resize(size_t(r.getCount(5 * 8)));
  for (IndexCheck& c : k.indexChecks) {
    c.op = r.getString();
    c.index = r.getString();
    c.indexed = r.getString();
    c.dim = r.getInt();
    c.extent = r.getInt();
  }
  if (!r.ok() || !valid) return std::nullopt;
  // The indices a run follows must stay inside what they index: a plan that passed its checksum
  // was written by this code, but a reader never trusts an index.
  for (const Param& p : k.params) {
    if (p.pointerWord < 0 || size_t(p.pointerWord) >= k.blob.size()) return std::nullopt;
    if (p.input < 0 && p.sizes.size() != p.strides.size()) return std::nullopt;
  }
  for (int64_t o : k.outputs) {
    if (o >= 0 && size_t(o) >= k.params.size()) return std::nullopt;
  }
  return k;
}

PlannedKernel::PlannedKernel(KernelPlan plan, std::shared_ptr<const ComputeDevice> device,
                             const ExecutorOptions& options, PhaseTimer& timer)
    : plan_(std::move(plan)), device_(std::move(device)), options_(options) {
  device_->require("running a kernel with the cuda backend");
  loaded_ = device_->load(plan_.generated, timer);
  if (plan_.launch.cooperative && plan_.emptyDim.empty()) {
    detail::checkResident(plan_.launch, *loaded_, *device_, plan_.generated.name);
  }
  if (!plan_.indexChecks.empty()) {
    index_error_ = device_->empty(std::vector<int64_t>{2}, DataType::Int64, options_.stream);
    device_->zero(index_error_, options_.stream);
    index_error_pointer_ = index_error_.data();
  }
  live_.resize(plan_.params.size());
}

bool PlannedKernel::run(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs) {
  const CUstream stream = options_.stream;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const KernelPlan::Param& p : plan_.params) {
    if (p.input < 0) continue;
    if (size_t(p.input) >= inputs.size()) return false;
    const Tensor* t = std::get_if<Tensor>(&inputs[size_t(p.input)]);
    if (t == nullptr || dataAlignment(t->data(), t->numel()) != p.inputAlignment) return false;
  }
  std::vector<detail::ScalarArg> scalars;
  scalars.reserve(plan_.scalars.size());
  for (const KernelPlan::Scalar& s : plan_.scalars) {
    if (size_t(s.input) >= inputs.size()) return false;
    scalars.push_back(detail::packScalar(inputs[size_t(s.input)], s.dtype, s.name));
  }
  std::vector<Tensor> scratch;
  std::vector<void*> scratch_pointers;
  for (int64_t words : plan_.scratchWords) {
    Tensor t = device_->empty(std::vector<int64_t>{words}, DataType::Int64, stream);
    device_->zero(t, stream);
    scratch_pointers.push_back(t.data());
    scratch.push_back(std::move(t));
  }
  for (size_t i = 0; i < plan_.params.size(); ++i) {
    const KernelPlan::Param& p = plan_.params[i];
    void* data = nullptr;
    if (p.input >= 0) {
      data = std::get<Tensor>(inputs[size_t(p.input)]).data();
    } else {
      Tensor t = device_->empty(p.view ? p.allocSizes : p.sizes, p.dtype, stream);
      if (options_.poisonOutputs) device_->poison(t, stream);
      if (p.view) t = Tensor(t.storage(), p.dtype, p.sizes, p.strides);
      data = t.data();
      LOOM_ASSERT(
          p.vectorBytes == 0 || reinterpret_cast<uintptr_t>(data) % uint64_t(p.vectorBytes) == 0,
          "kernel ", plan_.generated.name, ": a fresh allocation is not aligned to ", p.vectorBytes,
          " bytes");
      live_[i] = std::move(t);
    }
    plan_.blob[size_t(p.pointerWord)] = int64_t(reinterpret_cast<uintptr_t>(data));
  }
  outputs.clear();
  outputs.reserve(plan_.outputs.size());
  for (int64_t o : plan_.outputs) {
    if (o >= 0) {
      outputs.push_back(live_[size_t(o)]);
    } else {
      outputs.push_back(device_->copyForOutput(std::get<Tensor>(inputs[size_t(-o - 1)]), stream));
    }
  }
  if (plan_.emptyDim.empty()) {
    std::vector<void*> args;
    args.reserve(plan_.params.size() + scalars.size() + scratch_pointers.size());
    for (const KernelPlan::Param& p : plan_.params)
      args.push_back(&plan_.blob[size_t(p.pointerWord)]);
    for (detail::ScalarArg& a : scalars) args.push_back(&a);
    for (void*& ptr : scratch_pointers) args.push_back(&ptr);
    if (index_error_pointer_ != nullptr) args.push_back(&index_error_pointer_);
    loaded_->launch(plan_.launch, args.data(), stream);
  }
  std::fill(live_.begin(), live_.end(), Tensor());
  if (index_error_pointer_ != nullptr) checkIndexError();
  return true;
}

// As KernelExecutor::checkIndexError: the first failed check is the op's UserError.
void PlannedKernel::checkIndexError() {
  const auto failed = detail::takeIndexError(*device_, index_error_, options_.stream);
  if (!failed) return;
  const auto [site, value] = *failed;
  LOOM_ASSERT(site < plan_.indexChecks.size(), "kernel ", plan_.generated.name,
              " reported index check ", site, " of ", plan_.indexChecks.size());
  const KernelPlan::IndexCheck& c = plan_.indexChecks[site];
  LOOM_THROW(eval::indexOutOfRangeMessage(c.op, c.index, value, c.indexed, c.dim, c.extent));
}

}  // namespace loom::exec
