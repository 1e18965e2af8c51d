// SPDX-License-Identifier: Apache-2.0
// The plan cache's files (format, key identity, atomic writes) and PlannedRuntime's run.
#include "loom/runtime/plan_cache.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>

#include "loom/support/byte_codec.h"
#include "loom/support/cache_root.h"
#include "loom/support/options.h"
#include "loom/support/private_dir.h"
#include "loom/support/private_file.h"
#include "loom/support/sha256.h"

namespace loom::runtime {

namespace {

constexpr std::string_view kTag = "LOOMPLAN02";
constexpr size_t kDigestHex = 64;

int64_t tensorBytes(const eval::Argument& a) {
  const Tensor* t = std::get_if<Tensor>(&a);
  return t == nullptr || !t->defined() ? 0 : t->numel() * int64_t(t->itemSize());
}

bool slotsIn(const std::vector<int64_t>& slots, int64_t lo, int64_t hi) {
  for (int64_t s : slots) {
    if (s < lo || s >= hi) return false;
  }
  return true;
}

}  // namespace

std::string RuntimePlan::serialize() const {
  std::string out;
  putInt(out, numInputs);
  putInt(out, numSlots);
  putInt(out, int64_t(sizeSlots.size()));
  for (const SizeSlot& z : sizeSlots) {
    putInt(out, z.slot);
    putInt(out, z.input);
    putInt(out, z.dim);
    putInt(out, z.factor);
  }
  putInt(out, int64_t(steps.size()));
  for (const Step& s : steps) {
    putInts(out, s.inputSlots);
    putInts(out, s.outputSlots);
    putInts(out, s.freeAfter);
    s.kernel.write(out);
  }
  putInts(out, outputSlots);
  putInts(out, outputIsInput);
  return out;
}

std::optional<RuntimePlan> RuntimePlan::deserialize(std::string_view bytes) {
  RuntimePlan p;
  {
    ByteReader r(bytes);
    p.numInputs = r.getInt();
    p.numSlots = r.getInt();
    p.sizeSlots.resize(size_t(r.getCount(4 * 8)));
    for (SizeSlot& z : p.sizeSlots) {
      z.slot = r.getInt();
      z.input = r.getInt();
      z.dim = r.getInt();
      z.factor = r.getInt();
    }
    const int64_t steps = r.getCount(4 * 8);
    if (!r.ok()) return std::nullopt;
    for (int64_t i = 0; i < steps; ++i) {
      Step s;
      s.inputSlots = r.getInts();
      s.outputSlots = r.getInts();
      s.freeAfter = r.getInts();
      if (!r.ok()) return std::nullopt;
      std::optional<exec::KernelPlan> k = exec::KernelPlan::read(bytes);
      if (!k) return std::nullopt;
      s.kernel = std::move(*k);
      p.steps.push_back(std::move(s));
    }
    p.outputSlots = r.getInts();
    p.outputIsInput = r.getInts();
    if (!r.ok() || !bytes.empty()) return std::nullopt;
  }
  // Every slot a run follows must exist: a stored plan is this code's output, but indices read
  // from a file are checked before use.
  if (p.numInputs < 0 || p.numSlots < p.numInputs) return std::nullopt;
  if (p.outputSlots.size() != p.outputIsInput.size()) return std::nullopt;
  if (!slotsIn(p.outputSlots, 0, p.numSlots)) return std::nullopt;
  for (const SizeSlot& z : p.sizeSlots) {
    if (z.slot < p.numInputs || z.slot >= p.numSlots || z.input < 0 || z.input >= p.numInputs ||
        z.dim < 0) {
      return std::nullopt;
    }
  }
  for (const Step& s : p.steps) {
    if (!slotsIn(s.inputSlots, 0, p.numSlots) || !slotsIn(s.outputSlots, p.numInputs, p.numSlots) ||
        !slotsIn(s.freeAfter, p.numInputs, p.numSlots) ||
        s.kernel.outputs.size() != s.outputSlots.size()) {
      return std::nullopt;
    }
    for (const exec::KernelPlan::Param& q : s.kernel.params) {
      if (q.input >= int64_t(s.inputSlots.size())) return std::nullopt;
    }
    for (int64_t o : s.kernel.outputs) {
      if (o < 0 && -o - 1 >= int64_t(s.inputSlots.size())) return std::nullopt;
    }
  }
  return p;
}

const std::string& loomBuildId() {
  // The file Loom's code was loaded from (the shared library, or the executable it is linked
  // into): a rebuild changes its size, modification time or inode, so plans of another build
  // are never read back.
  static const std::string id = [] {
    std::string s = std::string("loom ") + LOOM_PLAN_CACHE_VERSION;
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(&loomBuildId), &info) != 0 && info.dli_fname != nullptr &&
        ::stat(info.dli_fname, &st) == 0) {
      s += std::string(" ") + info.dli_fname + " " + std::to_string(st.st_size) + " " +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
           std::to_string(st.st_ino);
    } else {
      s += " (build unknown)";
    }
    return s;
  }();
  return id;
}

std::filesystem::path planCacheDir() {
  if (std::optional<std::string> dir = getEnv("LOOM_PLAN_CACHE_DIR"); dir && !dir->empty()) {
    return *dir;
  }
  return cacheRoot() / "plans";
}

namespace {

std::filesystem::path entryPath(const std::filesystem::path& dir, const std::string& key) {
  return dir / (key.substr(0, 32) + ".plan");
}

}  // namespace

std::optional<RuntimePlan> loadPlan(const std::filesystem::path& dir, const std::string& key,
                                    std::string& why) {
  why.clear();
  const std::filesystem::path path = entryPath(dir, key);
  std::string bytes;
  if (std::optional<std::string> problem = readPrivateFile(path, bytes)) {
    if (*problem != "does not exist") why = *problem;
    return std::nullopt;
  }
  // A file in a folder others may write could have been swapped in: the folder must be private.
  if (std::optional<std::string> problem = privateDirectoryProblem(dir)) {
    why = "its folder " + dir.string() + " " + *problem;
    return std::nullopt;
  }
  std::string_view rest(bytes);
  if (rest.substr(0, kTag.size()) != kTag) {
    why = "not a plan of this format (" + std::string(kTag) + ")";
    return std::nullopt;
  }
  rest.remove_prefix(kTag.size());
  if (rest.size() < kDigestHex ||
      rest.substr(0, kDigestHex) != sha256Hex(rest.substr(kDigestHex))) {
    why = "failed its checksum";
    return std::nullopt;
  }
  rest.remove_prefix(kDigestHex);
  if (rest.substr(0, key.size()) != key) {
    why = "holds the plan of another key";
    return std::nullopt;
  }
  rest.remove_prefix(key.size());
  std::optional<RuntimePlan> plan = RuntimePlan::deserialize(rest);
  if (!plan) why = "does not hold a valid plan";
  return plan;
}

bool storePlan(const std::filesystem::path& dir, const std::string& key, const RuntimePlan& plan) {
  if (createPrivateDirectories(dir).has_value() || privateDirectoryProblem(dir).has_value()) {
    return false;
  }
  std::string body = key + plan.serialize();
  std::string bytes(kTag);
  bytes += sha256Hex(body);
  bytes += body;
  return !writeFileAtomically(entryPath(dir, key), bytes).has_value();
}

PlannedRuntime::PlannedRuntime(RuntimePlan plan, std::shared_ptr<const exec::ComputeDevice> device,
                               const exec::ExecutorOptions& options, PhaseTimer& timer)
    : plan_(std::move(plan)), device_(std::move(device)), stream_(options.stream) {
  for (RuntimePlan::Step& s : plan_.steps) {
    kernels_.push_back(std::make_unique<exec::PlannedKernel>(s.kernel, device_, options, timer));
  }
}

bool PlannedRuntime::run(std::span<const eval::Argument> args, std::vector<Tensor>& result) {
  if (int64_t(args.size()) != plan_.numInputs) return false;
  std::vector<eval::Argument> slots(size_t(plan_.numSlots), eval::Argument(Tensor()));
  for (size_t i = 0; i < args.size(); ++i) slots[i] = args[i];
  for (const RuntimePlan::SizeSlot& z : plan_.sizeSlots) {
    const Tensor* t = std::get_if<Tensor>(&args[size_t(z.input)]);
    if (t == nullptr || z.dim >= t->dim()) return false;
    slots[size_t(z.slot)] = eval::Argument(t->size(z.dim) * z.factor);
  }
  std::vector<eval::Argument> segment_args;
  std::vector<Tensor> outs;
  // What lastRun() (and so FusionExecutorCache::lastRuntime()->lastRun()) reports: as
  // FusionKernelRuntime records it per segment.
  std::vector<StepRecord> records(plan_.steps.size());
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const RuntimePlan::Step& step = plan_.steps[s];
    StepRecord& r = records[s];
    segment_args.clear();
    for (int64_t slot : step.inputSlots) {
      segment_args.push_back(slots[size_t(slot)]);
      r.inputBytes += tensorBytes(segment_args.back());
    }
    const auto start = std::chrono::steady_clock::now();
    if (!kernels_[s]->run(segment_args, outs)) return false;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.launch = step.kernel.launch;
    for (size_t i = 0; i < outs.size(); ++i) {
      r.outputBytes += outs[i].numel() * int64_t(outs[i].itemSize());
      slots[size_t(step.outputSlots[i])] = std::move(outs[i]);
    }
    for (int64_t slot : step.freeAfter) slots[size_t(slot)] = eval::Argument(Tensor());
  }
  result.clear();
  for (size_t i = 0; i < plan_.outputSlots.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&slots[size_t(plan_.outputSlots[i])]);
    if (t == nullptr) return false;
    result.push_back(plan_.outputIsInput[i] != 0 ? device_->copyForOutput(*t, stream_) : *t);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  last_ = std::move(records);
  return true;
}

std::vector<PlannedRuntime::StepRecord> PlannedRuntime::lastRun() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

}  // namespace loom::runtime
