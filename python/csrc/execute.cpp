// SPDX-License-Identifier: Apache-2.0
// Running fusions from Python: arguments in (tensors by DLPack, Python numbers), the automatic
// path (FusionExecutorCache, one per backend, GPU and stream) and a hand-scheduled kernel
// (KernelExecutor), outputs back as torch tensors (or loom._C.Tensor without torch).
//
// Where a fusion runs: CUDA tensor arguments run on the CUDA backend, on their GPU and the
// framework's current stream there (torch's, read through its DLPack exchange API); host tensors
// run on the host backend. `device` overrides: "cpu"/"host", or a GPU ("cuda:1", 1), with host
// tensors then copied in and out.
#include <Python.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.h"
#include "call_options.h"
#include "convert.h"
#include "loom/eval/argument.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/multidevice/communicator.h"
#include "loom/multidevice/sharding.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/scheduler/registry.h"

namespace loom::python {

namespace {

struct Placement {
  exec::Backend backend = exec::Backend::Host;
  int gpu = 0;
  CUstream stream = nullptr;
};

/// A Python number as an Argument; false when `h` is not one. `index` names the input.
bool numberArgument(nb::handle h, int64_t index, std::vector<eval::Argument>& out) {
  ir::ScalarValue v = numberFromPython(h, "execute: input", index);
  if (std::holds_alternative<std::monostate>(v)) return false;
  LOOM_CHECK(!std::holds_alternative<std::complex<double>>(v), "execute: input ", index,
             " is a Python complex; complex scalars cannot be given at run time (pass a 0-dim "
             "complex tensor, or make the value a constant of the fusion)");
  std::visit(
      [&](auto x) {
        using T = decltype(x);
        if constexpr (!std::is_same_v<T, std::monostate> &&
                      !std::is_same_v<T, std::complex<double>>) {
          out.emplace_back(x);
        }
      },
      v);
  return true;
}

/// Applies a `device` argument to `where`; `have_cuda`: the tensor inputs are CUDA tensors (on
/// where.gpu), which a device must agree with.
void applyDevice(nb::handle device, bool have_cuda, Placement& where) {
  DeviceArgument d = deviceFromPython(device, "execute: device");
  if (!d.cuda) {
    LOOM_CHECK(!have_cuda, "execute: device=", nb::cast<std::string>(nb::repr(device)),
               " but the inputs are CUDA tensors");
    where.backend = exec::Backend::Host;
    return;
  }
  const int gpu = d.gpu.value_or(have_cuda ? where.gpu : 0);
  LOOM_CHECK(!have_cuda || gpu == where.gpu,
             "execute: device=", nb::cast<std::string>(nb::repr(device)),
             " but the inputs are on cuda:", where.gpu);
  where.backend = exec::Backend::Cuda;
  where.gpu = gpu;
}

/// The arguments of `inputs` (a sequence), and where they run. A list or tuple among them is the
/// value of a define_vector input: its entries are that many scalar arguments.
std::vector<eval::Argument> convertArguments(nb::handle inputs, nb::handle device,
                                             Placement& where) {
  LOOM_CHECK(PySequence_Check(inputs.ptr()) && !PyUnicode_Check(inputs.ptr()),
             "execute: inputs must be a list or tuple of tensors and numbers");
  std::vector<eval::Argument> args;
  nb::sequence seq = nb::borrow<nb::sequence>(inputs);
  size_t n = nb::len(seq);
  args.reserve(n);
  bool have_cuda = false;
  bool have_host = false;
  // 0-dim host tensors (CPU scalars, is_cpu=True in nvFuser's form): as torch does, they may
  // stand beside CUDA tensors, and are then copied to that GPU.
  std::vector<std::pair<size_t, nb::object>> host_scalars;
  for (size_t i = 0; i < n; ++i) {
    nb::object item = seq[i];
    if (numberArgument(item, int64_t(i), args)) continue;
    if (PyList_Check(item.ptr()) || PyTuple_Check(item.ptr())) {
      for (nb::handle e : item) {
        LOOM_CHECK(numberArgument(e, int64_t(i), args), "execute: input ", i,
                   " is a list; its entries must be numbers (the value of a vector input)");
      }
      continue;
    }
    void* stream = nullptr;
    Tensor t = tensorFromPython(item, &stream);
    if (t.device().isCuda()) {
      LOOM_CHECK(!have_cuda || where.gpu == t.device().index, "execute: input ", i, " is on ",
                 t.device(), " but an earlier input is on cuda:", where.gpu,
                 "; every CUDA input must be on one GPU");
      where.gpu = t.device().index;
      where.stream = static_cast<CUstream>(stream);
      have_cuda = true;
    } else if (t.dim() == 0 && nb::hasattr(item, "to")) {  // a torch tensor: it can move
      host_scalars.emplace_back(args.size(), item);
    } else {
      have_host = true;
    }
    args.emplace_back(std::move(t));
  }
  if (have_cuda) {
    for (auto& [k, item] : host_scalars) {
      nb::object moved = item.attr("to")("cuda:" + std::to_string(where.gpu));
      args[k] = eval::Argument(tensorFromPython(moved, nullptr));
    }
  }
  LOOM_CHECK(!(have_cuda && have_host),
             "execute: the inputs mix host (CPU) and CUDA tensors; pass all of them on one device");
  where.backend = have_cuda ? exec::Backend::Cuda : exec::Backend::Host;
  if (!device.is_none()) applyDevice(device, have_cuda, where);
  return args;
}

nb::list outputsToPython(const std::vector<Tensor>& outs) {
  nb::list result;
  for (const Tensor& t : outs) result.append(tensorToPython(t));
  return result;
}

/// A segment's record as the Python profiler reads it (loom/direct/_profiler.py).
nb::dict profileEntry(const runtime::SegmentRecord& r, size_t segments) {
  nb::dict d;
  d["segment"] = r.segment;
  d["segments"] = segments;
  d["kind"] = r.kind;
  d["scheduler"] = r.scheduler;
  d["name"] = r.kernelName.empty() ? r.scheduler : r.kernelName;
  d["grid"] = nb::make_tuple(r.launch.grid[0], r.launch.grid[1], r.launch.grid[2]);
  d["block"] = nb::make_tuple(r.launch.block[0], r.launch.block[1], r.launch.block[2]);
  d["shared_bytes"] = r.launch.sharedBytes;
  d["registers"] = r.registers;
  d["compile_seconds"] = r.compileSeconds;
  d["host_seconds"] = r.seconds;
  d["device_seconds"] = r.deviceSeconds;
  d["input_bytes"] = r.inputBytes;
  d["output_bytes"] = r.outputBytes;
  d["backend"] = r.backend == exec::Backend::Cuda ? "cuda" : "host";
  return d;
}

std::string kernelCode(const exec::KernelExecutor& ke, bool intrinsic) {
  const codegen::GeneratedKernel& g = ke.generated();
  return intrinsic ? g.source : g.kernelText;
}

/// The automatic path for one fusion: a FusionExecutorCache per placement.
class PyFusionExecutor {
 public:
  explicit PyFusionExecutor(PyFusion& f) : fusion_(f) {}
  PyFusionExecutor(const PyFusionExecutor&) = delete;
  PyFusionExecutor& operator=(const PyFusionExecutor&) = delete;

  /// `enable` and `disable`: execute()'s _enable_options and _disable_options (call_options.h).
  /// Each set of options compiles its own kernels, so that the dumps and passes it names apply.
  /// `profile`: time each segment on its device (loom.direct.PythonProfiler; lastProfile()).
  /// Profiled runs use caches of their own, so unprofiled runs never wait for the marks.
  nb::list run(nb::handle inputs, nb::handle device, const std::vector<std::string>& enable,
               const std::vector<std::string>& disable, bool profile) {
    const CallOptions options = parseCallOptions(enable, disable);
    Placement where;
    std::vector<eval::Argument> args = convertArguments(inputs, device, where);
    runtime::FusionExecutorCache& cache = cacheFor(where, options, profile);
    std::vector<Tensor> outs;
    {
      nb::gil_scoped_release release;
      std::optional<ScopedOptions> scope;
      if (!options.empty()) scope.emplace(options.dump, options.debug, options.disabled);
      outs = cache.run(args);
    }
    last_ = &cache;
    return outputsToPython(outs);
  }

  /// The generated CUDA C++ of each kernel of the last run, in run order.
  std::string lastCudaCode(bool intrinsic) const {
    const runtime::FusionKernelRuntime* rt = lastRuntime();
    std::ostringstream os;
    const int64_t kernels = rt->numKernels();
    for (int64_t s = 0; s < rt->numSegments(); ++s) {
      if (!rt->lastRun().at(size_t(s)).isKernel()) continue;
      if (kernels > 1) os << "// segment " << s << "\n";
      os << kernelCode(rt->executor(s), intrinsic);
    }
    return os.str();
  }

  std::vector<std::string> lastSchedulers() const {
    std::vector<std::string> names;
    for (const runtime::SegmentRecord& r : lastRuntime()->lastRun()) names.push_back(r.scheduler);
    return names;
  }

  /// One dict per segment of the last run (profiled or not: without a profile, device time is
  /// -1 and kernel names and registers are empty).
  nb::list lastProfile() const {
    const runtime::FusionKernelRuntime* rt = lastRuntime();
    nb::list out;
    for (const runtime::SegmentRecord& r : rt->lastRun()) {
      out.append(profileEntry(r, rt->segmented().segments().size()));
    }
    return out;
  }

  std::string hostProgram() const { return lastRuntime()->hostProgram(); }
  int64_t numRuntimes() const { return last_ == nullptr ? 0 : last_->numRuntimes(); }
  /// Runs of the last cache served by the plan cache (its stored plans, without a runtime).
  int64_t planHits() const { return last_ == nullptr ? 0 : last_->planHits(); }
  int64_t hits() const { return last_ == nullptr ? 0 : last_->hits(); }
  int64_t misses() const { return last_ == nullptr ? 0 : last_->misses(); }

 private:
  const runtime::FusionKernelRuntime* lastRuntime() const {
    // A run served by the plan cache has its runtime built here, on first ask.
    const runtime::FusionKernelRuntime* rt = last_ == nullptr ? nullptr : last_->lastRuntime();
    LOOM_CHECK(rt != nullptr, "the fusion has not been executed yet");
    return rt;
  }

  runtime::FusionExecutorCache& cacheFor(const Placement& where, const CallOptions& call,
                                         bool profile) {
    for (Entry& e : caches_) {
      if (e.where.backend == where.backend && e.where.gpu == where.gpu &&
          e.where.stream == where.stream && e.options == call.key && e.profile == profile) {
        return *e.cache;
      }
    }
    fusion_.frozen = true;
    runtime::RuntimeOptions options;
    options.backend = where.backend;
    options.gpu = where.gpu;
    options.executor.stream = where.stream;
    options.executor.poisonOutputs = call.poisonOutputs;
    options.profile = profile;
    if (multidevice::isMultidevice(*fusion_.fusion)) {
      options.communicator = &multidevice::Communicator::instance();
    }
    caches_.push_back(
        {where, call.key, profile,
         std::make_unique<runtime::FusionExecutorCache>(fusion_.fusion->clone(), options)});
    return *caches_.back().cache;
  }

  struct Entry {
    Placement where;
    std::string options;  // CallOptions::key
    bool profile = false;
    std::unique_ptr<runtime::FusionExecutorCache> cache;
  };
  PyFusion& fusion_;  // kept alive by keep_alive<1, 2> on the constructor
  std::vector<Entry> caches_;
  runtime::FusionExecutorCache* last_ = nullptr;
};

/// One hand-scheduled kernel (the fusion as scheduled, nothing automatic).
class PyKernelExecutor {
 public:
  PyKernelExecutor() = default;
  PyKernelExecutor(const PyKernelExecutor&) = delete;
  PyKernelExecutor& operator=(const PyKernelExecutor&) = delete;
  /// `index_type` / `max_registers`: nvFuser's CompileParams (ExecutorOptions::indexType and
  /// maxRegisters; None and 0 leave them to Loom).
  void compile(const PyFusion& f, nb::handle device, std::optional<DataType> index_type,
               int64_t max_registers) {
    exec::Backend backend = exec::Backend::Auto;
    exec::ExecutorOptions options;
    options.indexType = index_type;
    options.maxRegisters = max_registers;
    if (!device.is_none()) {
      DeviceArgument d = deviceFromPython(device, "KernelExecutor.compile: device");
      backend = d.cuda ? exec::Backend::Cuda : exec::Backend::Host;
      options.device = d.gpu.value_or(0);
    }
    // One executor for the object's life: a compile() while another thread's run() is in flight
    // waits for that run (exec::KernelExecutor::compile), where replacing the executor would
    // free it mid-launch. That run released the GIL and needs it only after it finished.
    ke_->compile(*f.fusion, backend, options);
    compiled_ = true;
  }

  /// `profile`: time the kernel on its device (lastProfile()).
  nb::list run(nb::handle inputs, bool profile) {
    LOOM_CHECK(compiled_, "KernelExecutor.run: compile() a fusion first");
    Placement where;
    std::vector<eval::Argument> args = convertArguments(inputs, nb::none(), where);
    std::vector<Tensor> outs;
    runtime::SegmentRecord r;
    {
      nb::gil_scoped_release release;
      if (!profile) {
        outs = ke_->run(args);
      } else {
        // The kernel executor launches on the stream of its options (where.stream is the
        // caller's for the automatic path only).
        const exec::ComputeDevice& device = ke_->device();
        const CUstream stream = ke_->options().stream;
        auto start = device.markStream(stream);
        double plan_seconds = 0;
        r.launch = ke_->runInto(args, outs, &plan_seconds);
        auto end = device.markStream(stream);
        r.compileSeconds = plan_seconds;
        r.deviceSeconds = std::max(0.0, device.secondsBetween(*start, *end) - plan_seconds);
      }
    }
    if (profile) {
      r.kind = "kernel";
      r.scheduler = "user";  // scheduled by hand
      r.backend = ke_->backend();
      r.kernelName = ke_->generated().name;
      r.registers = ke_->lastRegistersPerThread();
      for (const eval::Argument& a : args) {
        if (const auto* t = std::get_if<Tensor>(&a); t != nullptr && t->defined()) {
          r.inputBytes += int64_t(t->numel()) * int64_t(t->itemSize());
        }
      }
      for (const Tensor& t : outs) r.outputBytes += int64_t(t.numel()) * int64_t(t.itemSize());
      r.bytes = r.inputBytes + r.outputBytes;
      last_profile_ = nb::list();
      last_profile_.append(profileEntry(r, 1));
    }
    return outputsToPython(outs);
  }

  nb::list lastProfile() const { return last_profile_; }

  std::string code(bool intrinsic) const {
    LOOM_CHECK(compiled_, "KernelExecutor: compile() a fusion first");
    return kernelCode(*ke_, intrinsic);
  }

 private:
  const std::unique_ptr<exec::KernelExecutor> ke_ = std::make_unique<exec::KernelExecutor>();
  bool compiled_ = false;  // read and written with the GIL held
  nb::list last_profile_;  // of the last profiled run
};

/// The registered scheduler named `name` (schedulerTypeName), a UserError listing them if none.
const scheduler::Scheduler& schedulerNamed(std::string_view name, std::string_view what) {
  std::string names;
  for (const scheduler::Scheduler* s : scheduler::allSchedulers()) {
    if (s->name() == name) return *s;
    names += names.empty() ? "" : ", ";
    names += s->name();
  }
  LOOM_THROW(what, ": no scheduler named '", name, "' (Loom's are ", names, ")");
}

/// Whether `s` takes the whole, unsegmented fusion for these arguments, and why not.
std::pair<bool, std::string> schedulerVerdict(const scheduler::Scheduler& s,
                                              const ir::Fusion& fusion,
                                              scheduler::SchedulerRuntimeInfo& info) {
  std::string why;
  if (!s.canScheduleCompileTime(fusion, &why)) return {false, "compile-time: " + why};
  if (!s.canScheduleRunTime(fusion, info, &why)) return {false, "run-time: " + why};
  return {true, ""};
}

/// Heuristic parameters in Python's hands (nvFuser's HeuristicParams): computed for a fusion and
/// its inputs, read and set by field name, then applied to the fusion.
class PySchedulerParams {
 public:
  explicit PySchedulerParams(std::unique_ptr<scheduler::HeuristicParams> params)
      : params_(std::move(params)) {}

  const scheduler::HeuristicParams& params() const { return *params_; }
  std::string scheduler() const {
    return std::string(scheduler::schedulerTypeName(params_->type()));
  }
  std::string text() const { return params_->toString(); }

  nb::list fields() const {
    nb::list out;
    for (const auto& [name, value] : params_->scheduleFields()) {
      out.append(nb::make_tuple(std::string(name), value));
    }
    return out;
  }

  // A negative value is no size, factor or flag of any scheduler; the scheduler checks the
  // combination (a factor of 0, a block too large) when the parameters are applied.
  void set(const std::string& name, int64_t value) {
    std::string names;
    for (const auto& [n, v] : params_->scheduleFields()) {
      names += (names.empty() ? "" : ", ") + std::string(n);
    }
    LOOM_CHECK(value >= 0, "heuristic parameter ", name, " = ", value,
               ": the parameters are sizes, factors and flags, none negative");
    LOOM_CHECK(params_->setField(name, value), "the ", scheduler(),
               " scheduler's parameters have no field '", name, "' (they are ", names, ")");
  }

 private:
  std::unique_ptr<scheduler::HeuristicParams> params_;
};

/// The parameters `s` computes for the whole fusion and these inputs; a UserError with its reason
/// when it does not take them.
std::unique_ptr<scheduler::HeuristicParams> heuristicsFor(const scheduler::Scheduler& s,
                                                          const ir::Fusion& fusion,
                                                          nb::handle inputs, const char* what) {
  Placement where;
  std::vector<eval::Argument> args = convertArguments(inputs, nb::none(), where);
  scheduler::SchedulerRuntimeInfo info(fusion, args);
  auto [ok, why] = schedulerVerdict(s, fusion, info);
  LOOM_CHECK(ok, what, ": the ", s.name(), " scheduler does not take this fusion (", why, ")");
  return s.computeHeuristics(fusion, info);
}

/// One scheduler applied by hand to a whole fusion (nvFuser's schedule module): what
/// manual_execute then runs as one kernel.
void bindHandScheduling(nb::module_& m) {
  nb::class_<PySchedulerParams>(m, "SchedulerParams",
                                "One scheduler's heuristic parameters for one fusion.")
      .def_prop_ro("scheduler", &PySchedulerParams::scheduler)
      .def("fields", &PySchedulerParams::fields,
           "(name, value) of every field the schedule is made from, as text() prints them.")
      .def("set", &PySchedulerParams::set, nb::arg("name"), nb::arg("value"),
           "Sets a field (booleans take 0 or 1); a UserError naming the fields when there is no "
           "such one.")
      .def("text", &PySchedulerParams::text);
  m.def(
      "scheduler_verdicts",
      [](const PyFusion& f, nb::handle inputs) {
        Placement where;
        std::vector<eval::Argument> args = convertArguments(inputs, nb::none(), where);
        scheduler::SchedulerRuntimeInfo info(*f.fusion, args);
        nb::list out;
        for (const scheduler::Scheduler* s : scheduler::allSchedulers()) {
          auto [ok, why] = schedulerVerdict(*s, *f.fusion, info);
          out.append(nb::make_tuple(std::string(s->name()), ok, why));
        }
        return out;
      },
      nb::arg("fusion"), nb::arg("inputs"),
      "(name, accepts, why not) of every scheduler, in priority order, for the whole fusion and "
      "these inputs.");
  m.def(
      "compute_heuristics",
      [](const PyFusion& f, std::string_view name, nb::handle inputs) {
        const scheduler::Scheduler& s = schedulerNamed(name, "compute_heuristics");
        return PySchedulerParams(heuristicsFor(s, *f.fusion, inputs, "compute_heuristics"));
      },
      nb::arg("fusion"), nb::arg("scheduler"), nb::arg("inputs"),
      "The named scheduler's heuristic parameters for the whole fusion and these inputs, not "
      "applied.");
  m.def(
      "apply_scheduler",
      [](PyFusion& f, std::string_view name, nb::handle inputs) {
        checkMutable(f.fusion.get(), "schedule");
        const scheduler::Scheduler& s = schedulerNamed(name, "schedule");
        std::unique_ptr<scheduler::HeuristicParams> params =
            heuristicsFor(s, *f.fusion, inputs, "schedule");
        scheduler::applyScheduler(s, *f.fusion, *params);
        return PySchedulerParams(std::move(params));
      },
      nb::arg("fusion"), nb::arg("scheduler"), nb::arg("inputs"),
      "Schedules the fusion in place with the named scheduler's heuristics for these inputs; "
      "returns the parameters it chose.");
  m.def(
      "apply_scheduler_params",
      [](PyFusion& f, const PySchedulerParams& params) {
        checkMutable(f.fusion.get(), "schedule");
        const scheduler::Scheduler& s = schedulerNamed(params.scheduler(), "schedule");
        std::string why;
        LOOM_CHECK(s.canScheduleCompileTime(*f.fusion, &why), "schedule: the ", s.name(),
                   " scheduler does not take this fusion (compile-time: ", why, ")");
        try {
          scheduler::applyScheduler(s, *f.fusion, params.params());
        } catch (const UserError& e) {
          // A combination of fields the scheduler cannot make (a factor of 0): say which.
          std::string text = params.text();
          while (!text.empty() && text.back() == '\n') text.pop_back();
          LOOM_THROW("schedule.schedule: the ", s.name(),
                     " scheduler cannot schedule the "
                     "fusion with ",
                     text, ": ", e.reason());
        }
      },
      nb::arg("fusion"), nb::arg("params"),
      "Schedules the fusion in place with these parameters (compute_heuristics', maybe "
      "changed).");
}

}  // namespace

void bindExecute(nb::module_& m) {
  bindHandScheduling(m);
  m.def(
      "peak_memory_bandwidth",
      [](int gpu) {
        std::optional<cuda::DeviceProperties> p =
            exec::makeComputeDevice(exec::Backend::Cuda, gpu)->gpuProperties();
        return p ? p->peakMemoryBytesPerSecond() : 0.0;
      },
      nb::arg("gpu"),
      "GPU `gpu`'s theoretical memory bandwidth in bytes per second (2 * memory clock * bus "
      "width), 0 without a driver.");
  m.def(
      "evaluate_fusion",
      [](const PyFusion& f, nb::handle inputs) {
        Placement where;
        std::vector<eval::Argument> args = convertArguments(inputs, nb::none(), where);
        LOOM_CHECK(where.backend == exec::Backend::Host,
                   "evaluate_fusion: the reference evaluator takes host (CPU) tensors");
        std::vector<Tensor> outs;
        {
          nb::gil_scoped_release release;
          outs = eval::evaluateFusion(*f.fusion, args);
        }
        return outputsToPython(outs);
      },
      nb::arg("fusion"), nb::arg("inputs"),
      "The fusion's outputs from the reference evaluator (double precision, each op rounded to "
      "its dtype), on host inputs.");
  m.def(
      "default_tolerance",
      [](DataType dtype, int64_t reduction_size) {
        eval::Tolerance t = eval::defaultTolerance(dtype, reduction_size);
        return nb::make_tuple(t.rtol, t.atol);
      },
      nb::arg("dtype"), nb::arg("reduction_size") = 1,
      "(rtol, atol) for results of `dtype` reduced over `reduction_size` elements.");
  m.def(
      "execute_option_names",
      [] {
        auto [enable, disable] = callOptionNames();
        nb::dict d;
        d["enable"] = enable;
        d["disable"] = disable;
        return d;
      },
      "The names execute() takes in _enable_options and _disable_options.");
  m.def("gpu_count", &exec::gpuCount,
        "GPUs Loom's CUDA backend sees (0 in a build without it or without a driver).");
  m.def("has_cuda_backend", []() {
#ifdef LOOM_HAVE_CUDA_BACKEND
    return true;
#else
    return false;
#endif
  });
  nb::class_<PyFusionExecutor>(m, "FusionExecutor",
                               "The automatic path for a fusion (FusionExecutorCache): segments, "
                               "schedules and compiles on the first run of an input layout.")
      .def(nb::init<PyFusion&>(), nb::arg("fusion"), nb::keep_alive<1, 2>())
      .def("run", &PyFusionExecutor::run, nb::arg("inputs"), nb::arg("device") = nb::none(),
           nb::arg("enable_options") = std::vector<std::string>{},
           nb::arg("disable_options") = std::vector<std::string>{}, nb::arg("profile") = false)
      .def("last_profile", &PyFusionExecutor::lastProfile)
      .def("last_cuda_code", &PyFusionExecutor::lastCudaCode, nb::arg("intrinsic_code") = false)
      .def("last_schedulers", &PyFusionExecutor::lastSchedulers)
      .def("host_program", &PyFusionExecutor::hostProgram)
      .def_prop_ro("num_runtimes", &PyFusionExecutor::numRuntimes)
      .def_prop_ro("hits", &PyFusionExecutor::hits)
      .def_prop_ro("misses", &PyFusionExecutor::misses)
      .def_prop_ro("plan_hits", &PyFusionExecutor::planHits);

  nb::class_<PyKernelExecutor>(m, "KernelExecutor",
                               "Compiles a fusion scheduled by hand into one kernel and runs it.")
      .def(nb::init<>())
      .def("compile", &PyKernelExecutor::compile, nb::arg("fusion"), nb::arg("device") = nb::none(),
           nb::arg("index_type") = nb::none(), nb::arg("max_registers") = 0)
      .def("run", &PyKernelExecutor::run, nb::arg("inputs"), nb::arg("profile") = false)
      .def("last_profile", &PyKernelExecutor::lastProfile)
      .def("kernel_code", &PyKernelExecutor::code, nb::arg("intrinsic_code") = false);
}

}  // namespace loom::python
