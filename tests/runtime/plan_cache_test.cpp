// SPDX-License-Identifier: Apache-2.0
// The plan cache (runtime/plan_cache.h): a warm start in a new process runs the stored plan,
// skips the pipeline and gives what a cold compile gives; another signature or build misses; a
// damaged entry is ignored and said so; processes storing at once are safe. Each case runs this
// binary again as a child process (PlanCacheChild.DISABLED_Run) against one cache directory.
#include "loom/runtime/plan_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/support/options.h"
#include "loom/support/sha256.h"
#include "runtime/runtime_test_backend.h"

namespace loom::runtime {
namespace {

namespace fs = std::filesystem;
using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

// layer_norm of [rows, 1024] (one kernel), "multi": sums of x * s over each dim and relu(x)
// (several kernels, a scalar input the kernels take), "view": x transposed (a view of the input,
// no copy) beside relu(x), "gather": x[ids] * 2 (a checked index read), or "center":
// x - x.mean(0) (one cooperative kernel, the column means reaching every block through a grid
// all-reduce).
std::unique_ptr<Fusion> caseFusion(const std::string& which) {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  TensorView* x = ops::TensorBuilder().rank(2).build();
  f->addInput(x);
  if (which == "layer_norm") {
    TensorView* w = ops::TensorBuilder().rank(1).build();
    TensorView* b = ops::TensorBuilder().rank(1).build();
    f->addInput(w);
    f->addInput(b);
    f->addOutput(ops::layerNorm(x, 1, w, b, 1e-5).y);
  } else if (which == "view") {
    f->addOutput(ops::permute(x, {1, 0}));
    f->addOutput(ops::relu(x));
  } else if (which == "gather") {
    TensorView* ids = ops::TensorBuilder().rank(1).dtype(DataType::Int64).build();
    f->addInput(ids);
    f->addOutput(ops::mul(ops::indexSelect(x, 0, ids), 2.0));
  } else if (which == "center") {
    f->addOutput(ops::sub(x, ops::broadcast(ops::mean(x, {0}), {true, false})));
  } else {
    ir::Scalar* s = ir::IrBuilder::symbolic(DataType::Float64);
    f->addInput(s);
    TensorView* xs = ops::mul(x, s);
    f->addOutput(ops::sum(xs, {0}));
    f->addOutput(ops::sum(xs, {1}));
    f->addOutput(ops::relu(x));
  }
  return f;
}

std::vector<eval::Argument> caseArgs(const std::string& which, int64_t rows) {
  const int64_t cols = which == "layer_norm" ? 1024 : 96;
  std::vector<eval::Argument> args;
  Tensor x = Tensor::empty({rows, cols}, DataType::Float32);
  fillRandom(x, 7);
  args.emplace_back(x);
  if (which == "layer_norm") {
    for (uint64_t seed : {8, 9}) {
      Tensor t = Tensor::empty({cols}, DataType::Float32);
      fillRandom(t, seed);
      args.emplace_back(t);
    }
  } else if (which == "multi") {
    args.emplace_back(0.75);
  } else if (which == "gather") {
    Tensor ids = Tensor::empty({2 * rows}, DataType::Int64);
    auto* p = static_cast<int64_t*>(ids.data());
    for (int64_t i = 0; i < 2 * rows; ++i) p[i] = (i * 7 + 3) % rows;
    args.emplace_back(ids);
  }
  return args;
}

// FNV-1a over the outputs' bytes: equal digests in two processes mean equal outputs, bit for bit.
uint64_t digest(const std::vector<Tensor>& outs) {
  uint64_t h = 14695981039346656037ull;
  for (const Tensor& t : outs) {
    const Tensor c = t.contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data());
    for (int64_t i = 0; i < c.numel() * int64_t(c.itemSize()); ++i) {
      h = (h ^ p[i]) * 1099511628211ull;
    }
  }
  return h;
}

// The child: runs the case twice through one cache, checks both runs against the reference
// evaluator (outputs poisoned) and prints what the plan cache did; then asks for the runtime
// (built on that ask when a stored plan served the runs) and prints what it says, which a warm
// process must say as the cold one did.
TEST(PlanCacheChild, DISABLED_Run) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  const std::string which = getEnv("LOOM_PLAN_TEST_CASE").value_or("layer_norm");
  const int64_t rows = std::stoll(getEnv("LOOM_PLAN_TEST_ROWS").value_or("32"));
  std::unique_ptr<Fusion> reference = caseFusion(which);
  const std::vector<eval::Argument> args = caseArgs(which, rows);
  const std::vector<Tensor> expected = eval::evaluateFusion(*reference, args);
  FusionExecutorCache cache(caseFusion(which), poisonedOptions());
  auto check = [&](const std::vector<Tensor>& outs, const std::vector<Tensor>& want,
                   const std::string& what) {
    ASSERT_EQ(outs.size(), want.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      auto err =
          eval::expectClose(outs[i], want[i], eval::defaultTolerance(DataType::Float32, 1024),
                            "output " + std::to_string(i) + " (" + what + ")");
      EXPECT_FALSE(err.has_value()) << *err;
    }
  };
  check(cache.run(args), expected, "first run");
  const std::vector<Tensor> again = cache.run(args);  // the in-process hit
  check(again, expected, "second run");
  if (which == "view" && testBackend() == exec::Backend::Host) {
    // The transpose is the input's memory, in a cold process and a warm one alike. (The cuda
    // backend copies host arguments in and its outputs out, so there no output is an input's
    // memory; the digests still show a warm process gives what the cold one gave.)
    EXPECT_EQ(again[0].data(), std::get<Tensor>(args[0]).data());
  }
  if (which == "gather") {
    // An index out of range, with the same sizes (so the plan serves it in a warm process): the
    // op's UserError, read back from the kernel's error words.
    std::vector<eval::Argument> bad = args;
    Tensor ids = std::get<Tensor>(args[1]).contiguous();
    static_cast<int64_t*>(ids.data())[3] = rows + 5;
    bad[1] = ids;
    try {
      (void)cache.run(bad);
      ADD_FAILURE() << "an index out of range ran";
    } catch (const UserError& e) {
      const std::string want = "index_select: index value " + std::to_string(rows + 5);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
    // The error words are zero again: the next good run passes.
    check(cache.run(args), expected, "after the failed check");
  }
  if (which == "multi") {
    // Another value of the scalar: the same input key, so a warm process runs its plan again,
    // with the scalar packed from these arguments.
    std::vector<eval::Argument> other = args;
    other[1] = eval::Argument(-1.25);
    check(cache.run(other), eval::evaluateFusion(*reference, other), "scalar -1.25");
  }
  // Runtimes built by the runs themselves: none when the plan served them.
  const int64_t runtimes_before = cache.numRuntimes();
  const FusionKernelRuntime* rt = cache.lastRuntime();
  ASSERT_NE(rt, nullptr);
  std::string code, schedulers, launches;
  int64_t bytes = 0;
  for (int64_t s = 0; s < rt->numSegments(); ++s) code += rt->executor(s).generated().kernelText;
  for (const SegmentRecord& r : rt->lastRun()) {
    for (char c : r.scheduler) schedulers += c == ' ' ? '_' : c;
    schedulers += ",";
    launches += r.launch.toString() + ";";
    bytes += r.bytes;
    EXPECT_GE(r.seconds, 0.0);
  }
  // The runtime built for a planned run serves the key from now on.
  check(cache.run(args), expected, "after lastRuntime()");
  EXPECT_EQ(cache.lastRuntime(), rt);
  std::printf(
      "plan_cache_child hits=%lld stores=%lld ignored=%lld runtime=%lld kernels=%lld "
      "digest=%llu after=%lld bytes=%lld code=%s program=%s schedulers=%s launches=%s\n",
      static_cast<long long>(cache.planHits()), static_cast<long long>(cache.planStores()),
      static_cast<long long>(cache.planIgnored()), static_cast<long long>(runtimes_before),
      static_cast<long long>(rt->numKernels()), static_cast<unsigned long long>(digest(again)),
      static_cast<long long>(cache.numRuntimes()), static_cast<long long>(bytes),
      sha256Hex(code).substr(0, 16).c_str(), sha256Hex(rt->hostProgram()).substr(0, 16).c_str(),
      schedulers.c_str(), launches.c_str());
}

struct Child {
  int status = -1;
  std::string log;
  long long hits = -1, stores = -1, ignored = -1, kernels = 0, runtime = -1, after = -1, bytes = 0;
  unsigned long long digest = 0;
  std::string code, program, schedulers, launches;  ///< what the runtime said
};

fs::path selfExe() { return fs::read_symlink("/proc/self/exe"); }

// Starts the child; `env` is prepended to the command line ("A=b C=d").
FILE* startChild(const fs::path& exe, const fs::path& dir, const std::string& env) {
  // The plan cache's default (on); LOOM_DEBUG's IR checks (ctest sets them) keep it out.
  const std::string cmd = "LOOM_DEBUG= LOOM_CACHE_DIR='" + dir.string() + "' " + env + " '" +
                          exe.string() +
                          "' --gtest_also_run_disabled_tests "
                          "--gtest_filter=PlanCacheChild.DISABLED_Run 2>&1";
  return popen(cmd.c_str(), "r");
}

Child finishChild(FILE* pipe) {
  Child c;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) c.log.append(buf.data(), n);
  const int status = pclose(pipe);
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const size_t at = c.log.find("plan_cache_child ");
  if (at != std::string::npos) {
    std::array<char, 256> code{}, program{}, schedulers{}, launches{};
    std::sscanf(c.log.c_str() + at,
                "plan_cache_child hits=%lld stores=%lld ignored=%lld runtime=%lld kernels=%lld "
                "digest=%llu after=%lld bytes=%lld code=%255s program=%255s schedulers=%255s "
                "launches=%255[^\n]",
                &c.hits, &c.stores, &c.ignored, &c.runtime, &c.kernels, &c.digest, &c.after,
                &c.bytes, code.data(), program.data(), schedulers.data(), launches.data());
    c.code = code.data();
    c.program = program.data();
    c.schedulers = schedulers.data();
    c.launches = launches.data();
  }
  return c;
}

Child runChild(const fs::path& dir, const std::string& env = "", const fs::path& exe = selfExe()) {
  FILE* pipe = startChild(exe, dir, env);
  EXPECT_NE(pipe, nullptr);
  return finishChild(pipe);
}

class PlanCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
    std::string tmpl = (fs::temp_directory_path() / "loom-plan-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::vector<fs::path> plans() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / "plans", ec)) {
      if (e.path().extension() == ".plan") out.push_back(e.path());
    }
    return out;
  }
  fs::path dir_;
};

#define EXPECT_CHILD_OK(c)             \
  ASSERT_EQ((c).status, 0) << (c).log; \
  ASSERT_GE((c).hits, 0) << (c).log

// Cold, then warm in a new process: the warm one runs the stored plan (no runtime was built, so
// nothing was segmented, scheduled, lowered or generated) and its outputs equal the cold ones
// bit for bit (and the reference, in the child). Asked for afterwards, its runtime says what the
// cold one said: the same kernels (text), schedulers, host program, launches and bytes.
TEST_F(PlanCache, WarmStartSkipsThePipelineAndMatchesCold) {
  for (const char* which : {"layer_norm", "multi", "gather", "center"}) {
    SCOPED_TRACE(which);
    const std::string env = std::string("LOOM_PLAN_TEST_CASE=") + which;
    Child cold = runChild(dir_, env);
    EXPECT_CHILD_OK(cold);
    EXPECT_EQ(cold.hits, 0);
    EXPECT_EQ(cold.stores, 1);
    EXPECT_EQ(cold.runtime, 1);
    if (std::string(which) == "multi") {
      EXPECT_GE(cold.kernels, 2) << cold.log;
    }
    Child warm = runChild(dir_, env);
    EXPECT_CHILD_OK(warm);
    EXPECT_EQ(warm.hits, 1) << warm.log;
    EXPECT_EQ(warm.stores, 0);
    EXPECT_EQ(warm.runtime, 0);  // until lastRuntime() asked
    EXPECT_EQ(warm.after, 1);
    EXPECT_EQ(warm.digest, cold.digest);
    EXPECT_EQ(warm.kernels, cold.kernels);
    EXPECT_EQ(warm.code, cold.code);
    EXPECT_EQ(warm.program, cold.program);
    EXPECT_EQ(warm.schedulers, cold.schedulers);
    EXPECT_EQ(warm.launches, cold.launches);
    EXPECT_EQ(warm.bytes, cold.bytes);
    EXPECT_GT(warm.bytes, 0);
    if (std::string(which) == "center") {
      // A cooperative launch: the host backend refuses a grid barrier in any other launch.
      EXPECT_NE(warm.schedulers.find("outer"), std::string::npos) << warm.schedulers;
    }
  }
  EXPECT_EQ(plans().size(), 4u);
}

// An output that is a view of an input is returned as the view, which a plan (the kernels alone)
// cannot replay: such a runtime stores no plan, and a second process returns the view again
// (a plan had made it a copy, with other strides).
TEST_F(PlanCache, AnOutputViewOfAnInputIsNotPlanned) {
  const std::string env = "LOOM_PLAN_TEST_CASE=view";
  Child cold = runChild(dir_, env);
  EXPECT_CHILD_OK(cold);
  EXPECT_EQ(cold.stores, 0) << cold.log;
  Child warm = runChild(dir_, env);
  EXPECT_CHILD_OK(warm);
  EXPECT_EQ(warm.hits, 0) << warm.log;
  EXPECT_EQ(warm.digest, cold.digest);
  EXPECT_TRUE(plans().empty());
}

// Another input signature (more rows) or another build of Loom (a copy of this executable, so
// its code's file differs) is a miss that compiles and stores its own plan.
TEST_F(PlanCache, AnotherSignatureOrBuildMisses) {
  EXPECT_CHILD_OK(runChild(dir_, "LOOM_PLAN_TEST_ROWS=32"));
  Child rows = runChild(dir_, "LOOM_PLAN_TEST_ROWS=48");
  EXPECT_CHILD_OK(rows);
  EXPECT_EQ(rows.hits, 0);
  EXPECT_EQ(rows.stores, 1);
  EXPECT_EQ(rows.runtime, 1);
  const fs::path copy = dir_ / "loom_plan_cache_test_copy";
  fs::copy_file(selfExe(), copy);
  Child build = runChild(dir_, "LOOM_PLAN_TEST_ROWS=32", copy);
  EXPECT_CHILD_OK(build);
  EXPECT_EQ(build.hits, 0) << build.log;
  EXPECT_EQ(build.stores, 1);
  EXPECT_EQ(plans().size(), 3u);
}

// A damaged entry (a flipped byte, a truncated file, another format) is ignored with a
// LOOM_DUMP=compile_time line saying why, the run compiles, and its store replaces the file.
TEST_F(PlanCache, DamagedEntryIsIgnoredAndSaidUnderDump) {
  EXPECT_CHILD_OK(runChild(dir_));
  ASSERT_EQ(plans().size(), 1u);
  const fs::path entry = plans().front();
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"flip", "failed its checksum"},
      {"truncate", "failed its checksum"},
      {"format", "not a plan of this format"}};
  for (const auto& [damage, why] : damages) {
    SCOPED_TRACE(damage);
    std::string bytes;
    {
      std::ifstream in(entry, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_GT(bytes.size(), 200u);
    if (damage == "flip") bytes[bytes.size() / 2] ^= 0x20;
    if (damage == "truncate") bytes.resize(bytes.size() - 100);
    if (damage == "format") bytes.replace(0, 10, "LOOMPLAN00");
    {
      std::ofstream out(entry, std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    Child c = runChild(dir_, "LOOM_DUMP=compile_time");
    EXPECT_CHILD_OK(c);
    EXPECT_EQ(c.hits, 0);
    EXPECT_EQ(c.ignored, 1);
    EXPECT_EQ(c.stores, 1);
    EXPECT_NE(c.log.find("plan cache: ignored " + entry.string() + ": " + why), std::string::npos)
        << c.log;
    Child again = runChild(dir_);
    EXPECT_CHILD_OK(again);
    EXPECT_EQ(again.hits, 1) << again.log;
  }
}

// A plan folder others may write is not trusted: its entries are ignored (and said), nothing is
// stored there.
TEST_F(PlanCache, FolderOthersMayWriteIsNotUsed) {
  EXPECT_CHILD_OK(runChild(dir_));
  ASSERT_EQ(plans().size(), 1u);
  fs::permissions(dir_ / "plans", fs::perms::others_write, fs::perm_options::add);
  Child c = runChild(dir_, "LOOM_DUMP=compile_time");
  EXPECT_CHILD_OK(c);
  EXPECT_EQ(c.hits, 0);
  EXPECT_EQ(c.ignored, 1);
  EXPECT_EQ(c.stores, 0);
  EXPECT_NE(c.log.find("is writable by group or others"), std::string::npos) << c.log;
}

// Four processes compiling and storing the same key at once: every one succeeds, one whole
// entry is left, and a later process runs it.
TEST_F(PlanCache, ProcessesStoringAtOnceAreSafe) {
  std::vector<FILE*> pipes;
  for (int i = 0; i < 4; ++i)
    pipes.push_back(startChild(selfExe(), dir_, "LOOM_PLAN_TEST_CASE=multi"));
  for (FILE* p : pipes) {
    ASSERT_NE(p, nullptr);
    Child c = finishChild(p);
    EXPECT_CHILD_OK(c);
    EXPECT_EQ(c.ignored, 0) << c.log;
  }
  EXPECT_EQ(plans().size(), 1u);
  Child warm = runChild(dir_, "LOOM_PLAN_TEST_CASE=multi");
  EXPECT_CHILD_OK(warm);
  EXPECT_EQ(warm.hits, 1) << warm.log;
}

// Dumps of the stages a plan skips keep the plan cache out (the user asked to see them), as do
// LOOM_DEBUG's checks of the IR those stages make, and LOOM_PLAN_CACHE=0.
TEST_F(PlanCache, PipelineDumpsDebugChecksAndTheOptOutKeepItOut) {
  for (const char* env :
       {"LOOM_DUMP=scheduler_params", "LOOM_DEBUG=verify_kernel_ir", "LOOM_PLAN_CACHE=0"}) {
    SCOPED_TRACE(env);
    Child c = runChild(dir_, env);
    EXPECT_CHILD_OK(c);
    EXPECT_EQ(c.stores, 0);
    EXPECT_EQ(c.runtime, 1);
  }
  EXPECT_TRUE(plans().empty());
}

// LOOM_PLAN_CACHE=force keeps the plan cache on under LOOM_DEBUG's IR checks (the test tiers set
// them): the cold run checks the IR and stores the plan, the warm one runs it.
TEST_F(PlanCache, ForceKeepsItOnUnderDebugChecks) {
  const std::string env = "LOOM_DEBUG=verify_kernel_ir,verify_ir LOOM_PLAN_CACHE=force";
  Child cold = runChild(dir_, env);
  EXPECT_CHILD_OK(cold);
  EXPECT_EQ(cold.stores, 1) << cold.log;
  EXPECT_EQ(cold.runtime, 1);
  Child warm = runChild(dir_, env);
  EXPECT_CHILD_OK(warm);
  EXPECT_EQ(warm.hits, 1) << warm.log;
  EXPECT_EQ(warm.runtime, 0);
  EXPECT_EQ(warm.digest, cold.digest);
}

// A plan's bytes read back equal; bytes that index past the plan's slots are refused.
TEST(RuntimePlan, RoundTripsAndRefusesBadSlots) {
  RuntimePlan p;
  p.numInputs = 1;
  p.numSlots = 2;
  RuntimePlan::Step s;
  s.inputSlots = {0};
  s.outputSlots = {1};
  s.kernel.generated = {"k", "", "source"};
  s.kernel.params.push_back({0, 16, DataType::Float32, {}, {}, {}, false, 0, 0});
  s.kernel.params.push_back({-1, 0, DataType::BFloat16, {4}, {4}, {1}, false, 8, 3});
  s.kernel.outputs = {1};
  s.kernel.blob = {0, 4, 1, 0, 4, 1};
  s.kernel.scalars.push_back({0, DataType::Float64, "s"});
  s.kernel.scratchWords = {2};
  p.steps.push_back(s);
  p.outputSlots = {1};
  p.outputIsInput = {0};
  const std::string bytes = p.serialize();
  std::optional<RuntimePlan> back = RuntimePlan::deserialize(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->serialize(), bytes);
  EXPECT_EQ(back->steps.at(0).kernel.params.at(1).dtype, DataType::BFloat16);
  EXPECT_FALSE(RuntimePlan::deserialize(bytes.substr(0, bytes.size() - 1)).has_value());
  RuntimePlan bad = p;
  bad.outputSlots = {2};
  EXPECT_FALSE(RuntimePlan::deserialize(bad.serialize()).has_value());
  bad = p;
  bad.steps[0].kernel.params[1].pointerWord = 6;
  EXPECT_FALSE(RuntimePlan::deserialize(bad.serialize()).has_value());
}

}  // namespace
}  // namespace loom::runtime
