// SPDX-License-Identifier: Apache-2.0
// The shape sweep's runner, JSON and table (bench_sweep_run.h).
#include "benchmarks/bench_sweep_run.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "loom/support/error.h"
#include "loom/version.h"

namespace loom::bench {
namespace {

std::vector<std::string> dtypesOf(const Options& o) {
  return o.dtypes.empty() ? std::vector<std::string>{"fp32", "bf16"} : o.dtypes;
}

// Through a temporary file and a rename, so a reader (or a run killed mid-write) never sees half.
void writeFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream os(tmp);
    os << text;
    LOOM_CHECK(os.good(), "cannot write the JSON file '", tmp, "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  LOOM_CHECK(!ec, "cannot rename '", tmp, "' to '", path, "': ", ec.message());
}

void caseFields(JsonWriter& w, const SweepCase& s, const std::string& dtype) {
  w.key("case").value(s.c.name);
  w.key("family").value(familyName(s.c.op));
  w.key("dtype").value(dtype);
  w.key("regime").value(regimeName(s.regime));
  w.key("rows").value(s.rows);
  w.key("width").value(s.width);
  w.key("shape").array(s.c.shape);
  w.key("bytes").value(ioBytes(s.c.op, s.c.shape, parseDtype(dtype)));
}

}  // namespace

void recordRun(runtime::FusionExecutorCache& cache, CaseResult& r) {
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  if (rt == nullptr) return;
  r.kernels = rt->numKernels();
  r.schedulers.clear();
  r.params.clear();
  for (const auto& rec : rt->lastRun()) {
    r.schedulers += (r.schedulers.empty() ? "" : "+") + rec.scheduler;
    r.params += rec.params;
  }
}

CaseResult checkOnHost(const Case& c, DataType dtype, const Options& options) {
  CaseResult r;
  r.name = c.name;
  r.dtype = dtypeLabel(dtype);
  r.shape = c.shape;
  r.bytes = ioBytes(c.op, c.shape, dtype);
  try {
    std::vector<Tensor> inputs = makeInputs(c.op, c.shape, dtype, 20261206);
    runtime::RuntimeOptions opts;
    opts.backend = exec::Backend::Host;
    opts.paramOverrides = options.params;  // --params: the variant checks as it would time
    opts.executor.poisonOutputs = true;  // an unwritten element fails the finite check
    runtime::FusionExecutorCache cache(buildFusion(c.op, c.shape, dtype), opts);
    std::vector<eval::Argument> args(inputs.begin(), inputs.end());
    std::vector<Tensor> outputs = cache.run(args);
    recordRun(cache, r);
    r.check = checkOutputs(c.op, dtype, inputs, outputs);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

int runSweep(const Options& o, const std::string& device, const CaseRunner& run) {
  std::vector<SweepCase> cases = sweepCases(o.sweepSpec);
  std::vector<std::string> dtypes = dtypesOf(o);
  std::cout << "loom_bench --sweep " << LOOM_VERSION_STRING << " on " << device << ": "
            << cases.size() * dtypes.size() << " shapes";
  if (!o.hostBackend) {
    std::cout << ", " << o.reps << " reps after " << o.warmup
              << " warm-up runs, L2 flushed before each";
  }
  std::cout << "\n";
  bool ok = true;
  JsonWriter w;
  w.beginObject();
  w.key("schema").value("loom-bench-sweep/1");
  w.key("date").value(utcTimestamp());
  w.key("device").value(device);
  w.key("loom").value(LOOM_VERSION_STRING);
  w.key("timed").value(!o.hostBackend);
  w.key("reps").value(o.reps);
  w.key("warmup").value(o.warmup);
  w.key("results").beginArray();
  std::vector<std::vector<std::string>> rows;
  for (const std::string& dtype : dtypes) {
    for (const SweepCase& s : cases) {
      std::cout << s.c.name << " " << dtype << " ..." << std::flush;
      CaseResult r = run(s.c, parseDtype(dtype));
      ok = ok && r.ok();
      w.beginObject();
      caseFields(w, s, dtype);
      if (r.error.empty()) {
        if (!o.hostBackend) {
          w.key("loom_us").value(r.us.median);
          w.key("loom_min_us").value(r.us.min);
          w.key("loom_tbps").value(tbps(r.bytes, r.us.median));
          w.key("reps_us").array(r.repsUs);
          w.key("first_run_ms").value(r.firstRunMs);
        }
        w.key("kernels").value(r.kernels);
        w.key("scheduler").value(r.schedulers);
        w.key("params").value(r.params);
        w.key("check").value(r.check.ok ? "PASS" : "FAIL");
        w.key("check_detail").value(r.check.detail);
        std::string time = o.hostBackend ? "" : " " + fixed(r.us.median, 1) + " us,";
        std::cout << time << " " << r.kernels << " kernel(s) [" << r.schedulers << "], check "
                  << (r.check.ok ? "PASS" : "FAIL: " + r.check.detail) << std::endl;
        rows.push_back({s.c.name, dtype, o.hostBackend ? "-" : fixed(r.us.median, 1),
                        o.hostBackend ? "-" : fixed(tbps(r.bytes, r.us.median), 2),
                        std::to_string(r.kernels), r.schedulers, r.check.ok ? "PASS" : "FAIL"});
      } else {
        w.key("check").value("ERROR");
        w.key("error").value(r.error);
        std::cout << " ERROR: " << r.error << std::endl;
        rows.push_back({s.c.name, dtype, "-", "-", "-", "-", "ERROR"});
      }
      w.endObject();
      // After every shape, so a run stopped at its time limit keeps what it measured.
      if (!o.jsonPath.empty()) {
        JsonWriter done = w;
        writeFile(o.jsonPath, done.endArray().endObject().str());
      }
    }
  }
  w.endArray();
  w.endObject();
  if (!o.jsonPath.empty()) {
    writeFile(o.jsonPath, w.str());
    std::cout << "wrote " << o.jsonPath << "\n";
  }
  std::cout << "\n"
            << formatTable({"shape", "dtype", "Loom us", "TB/s", "kernels", "scheduler", "check"},
                           rows);
  return ok ? 0 : 1;
}

void writeSweepShapes(const Options& o, const std::string& path) {
  JsonWriter w;
  w.beginObject();
  w.key("schema").value("loom-bench-sweep-shapes/1");
  w.key("shapes").beginArray();
  for (const std::string& dtype : dtypesOf(o)) {
    for (const SweepCase& s : sweepCases(o.sweepSpec)) {
      w.beginObject();
      caseFields(w, s, dtype);
      w.endObject();
    }
  }
  w.endArray();
  w.endObject();
  writeFile(path, w.str());
}

}  // namespace loom::bench
