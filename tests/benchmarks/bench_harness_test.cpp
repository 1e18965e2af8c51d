// SPDX-License-Identifier: Apache-2.0
// Unit tests of loom_bench's GPU-free parts: command line, JSON writer, statistics, case table,
// output checks (against the reference evaluator on small shapes) and the no-GPU exit.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "benchmarks/bench_cases.h"
#include "benchmarks/bench_cli.h"
#include "benchmarks/bench_report.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/support/error.h"

namespace loom::bench {
namespace {

std::string usageErrorOf(const std::vector<std::string>& args) {
  try {
    (void)parseArgs(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// With no arguments every case runs in both dtypes with the protocol's defaults.
TEST(BenchCli, Defaults) {
  Options o = parseArgs({});
  EXPECT_TRUE(o.jsonPath.empty());
  EXPECT_TRUE(o.cases.empty());
  EXPECT_TRUE(o.dtypes.empty());
  EXPECT_EQ(o.reps, 100);
  EXPECT_GE(o.hostCalls, 5000);
  EXPECT_FALSE(o.skipHost || o.skipCompile || o.help || o.compileProbe);
}

// Every documented option is accepted, as "--opt VALUE" and as "--opt=VALUE".
TEST(BenchCli, ParsesEveryOption) {
  Options o = parseArgs({"--json", "out.json", "--cases=softmax_16384x4096,sum_dim0_16384x4096",
                         "--dtypes", "bf16", "--reps=25", "--warmup", "0", "--host-calls",
                         "2000", "--skip-host", "--skip-compile"});
  EXPECT_EQ(o.jsonPath, "out.json");
  EXPECT_EQ(o.cases, (std::vector<std::string>{"softmax_16384x4096", "sum_dim0_16384x4096"}));
  EXPECT_EQ(o.dtypes, std::vector<std::string>{"bf16"});
  EXPECT_EQ(o.reps, 25);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.hostCalls, 2000);
  EXPECT_TRUE(o.skipHost);
  EXPECT_TRUE(o.skipCompile);
  EXPECT_TRUE(parseArgs({"--compile-probe"}).compileProbe);
  EXPECT_EQ(parseArgs({}).compileCase, "layer_norm_16384x4096");
  EXPECT_EQ(parseArgs({"--compile-case", "softmax_16384x4096"}).compileCase, "softmax_16384x4096");
  EXPECT_TRUE(parseArgs({"-h"}).help);
  Options tuned = parseArgs({"--params", "bdimx=16,grid_reduction=4"});
  EXPECT_EQ(tuned.params, (std::vector<std::pair<std::string, int64_t>>{{"bdimx", 16},
                                                                       {"grid_reduction", 4}}));
}

// Bad values are rejected with a message naming the option and what it expects.
TEST(BenchCli, RejectsBadArguments) {
  EXPECT_NE(usageErrorOf({"--reps", "19"}).find("--reps must be at least 20"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--reps", "12x"}).find("expects a whole number"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--warmup", "-1"}).find("at least 0"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--host-calls", "10"}).find("at least 1000"), std::string::npos);
  std::string unknownCase = usageErrorOf({"--cases", "softmax"});
  EXPECT_NE(unknownCase.find("unknown case 'softmax'"), std::string::npos) << unknownCase;
  EXPECT_NE(unknownCase.find("softmax_16384x4096"), std::string::npos) << unknownCase;
  EXPECT_NE(usageErrorOf({"--dtypes", "fp16"}).find("unknown dtype 'fp16'"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--json"}).find("--json expects a value"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--compile-case", "x"}).find("--compile-case: unknown case 'x'"),
            std::string::npos);
  EXPECT_NE(usageErrorOf({"--skip-host=1"}).find("takes no value"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--frobnicate"}).find("unknown argument '--frobnicate'"),
            std::string::npos);
  EXPECT_NE(usageErrorOf({"--params", "bdimx"}).find("--params expects name=value pairs"),
            std::string::npos);
  EXPECT_NE(usageErrorOf({"--params", "bdimx=x"}).find("--params bdimx expects a whole number"),
            std::string::npos);
  EXPECT_EQ(usageErrorOf({"--reps", "20"}), "");
}

// The usage text lists every case name and option.
TEST(BenchCli, UsageListsCasesAndOptions) {
  std::string u = usage();
  for (const Case& c : allCases()) EXPECT_NE(u.find(c.name), std::string::npos) << c.name;
  for (const char* opt : {"--json", "--cases", "--dtypes", "--reps", "--warmup", "--skip-host",
                          "--skip-compile"}) {
    EXPECT_NE(u.find(opt), std::string::npos) << opt;
  }
}

// The median of an even sample averages the middle two; min, mean and max are exact.
TEST(BenchReport, Summary) {
  std::vector<double> odd = {5, 1, 3};
  EXPECT_DOUBLE_EQ(summarize(odd).median, 3);
  std::vector<double> even = {4, 1, 3, 2};
  Summary s = summarize(even);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(summarize(std::vector<double>{}).median, 0);
  // 268435456 bytes in 100 us is 2.68 TB/s.
  EXPECT_NEAR(tbps(268435456, 100.0), 2.68435456, 1e-12);
}

// The writer nests, separates with commas, escapes strings and writes non-finite numbers as null.
TEST(BenchReport, JsonWriter) {
  JsonWriter w;
  std::vector<double> reps = {1.5, 2};
  w.beginObject();
  w.key("name").value("a \"q\"\n\\");
  w.key("n").value(int64_t(3));
  w.key("x").value(0.25);
  w.key("nan").value(std::numeric_limits<double>::quiet_NaN());
  w.key("ok").value(true);
  w.key("reps").array(reps);
  w.key("list").beginArray().beginObject().endObject().value(1).endArray();
  w.key("empty").beginArray().endArray();
  w.endObject();
  EXPECT_EQ(w.str(),
            "{\n  \"name\": \"a \\\"q\\\"\\n\\\\\",\n  \"n\": 3,\n  \"x\": 0.25,\n"
            "  \"nan\": null,\n  \"ok\": true,\n  \"reps\": [1.5, 2],\n"
            "  \"list\": [\n    {},\n    1\n  ],\n  \"empty\": []\n}\n");
  EXPECT_EQ(jsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
}

// Misuse of the writer is an internal error rather than malformed JSON.
TEST(BenchReport, JsonWriterMisuse) {
  JsonWriter valueWithoutKey;
  valueWithoutKey.beginObject();
  EXPECT_THROW(valueWithoutKey.value(1), InternalError);
  JsonWriter unclosed;
  unclosed.beginArray();
  EXPECT_THROW((void)unclosed.str(), InternalError);
  JsonWriter keyInArray;
  keyInArray.beginArray();
  EXPECT_THROW(keyInArray.key("k"), InternalError);
}

// The table pads text columns on the right and numbers on the left.
TEST(BenchReport, FormatTable) {
  EXPECT_EQ(formatTable({"case", "us"}, {{"ab", "1.0"}, {"a", "10.5"}}, 1),
            "case    us\n----  ----\nab     1.0\na     10.5\n");
}

// Byte counts equal benchmarks/compare.py's io_bytes (inputs read once + outputs written once).
TEST(BenchCases, IoBytesMatchCompare) {
  const Case* ln = findCase("layer_norm_16384x4096");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ioBytes(ln->op, ln->shape, DataType::Float32), (2 * 16384 * 4096 + 2 * 4096) * 4);
  const Case* vm = findCase("var_mean_16x2048x12288");
  ASSERT_NE(vm, nullptr);
  EXPECT_EQ(ioBytes(vm->op, vm->shape, DataType::BFloat16),
            (int64_t(16) * 2048 * 12288 + 2 * 16 * 2048) * 2);
  const Case* s = findCase("sum_dim0_16384x4096");
  EXPECT_EQ(ioBytes(s->op, s->shape, DataType::Float32), (16384 * 4096 + 4096) * 4);
  // linear: x [m, k], w [n, k], bias [n] read once, y [m, n] written once.
  const Case* lin = findCase("linear_8192x4096x16384");
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(ioBytes(lin->op, lin->shape, DataType::BFloat16),
            (int64_t(8192) * 4096 + int64_t(16384) * 4096 + 16384 + int64_t(8192) * 16384) * 2);
  EXPECT_EQ(allCases().size(), 27u);
  // index_add reads x [V, H], the Int64 ids [T] and src [T, H] and writes [V, H].
  const Case* ia = findCase("index_add_32768x1024_into_50257");
  ASSERT_NE(ia, nullptr);
  EXPECT_EQ(ioBytes(ia->op, ia->shape, DataType::BFloat16),
            (int64_t(2) * 50257 * 1024 + int64_t(32768) * 1024) * 2 + 32768 * 8);
  // layer_norm backward reads dy, x, the saved mean and rstd [R, 1] and the weight; it writes dx
  // and two per-column sums.
  const Case* lnb = findCase("layer_norm_bwd_16384x4096");
  ASSERT_NE(lnb, nullptr);
  EXPECT_EQ(ioBytes(lnb->op, lnb->shape, DataType::Float32),
            (3 * int64_t(16384) * 4096 + 2 * 16384 + 3 * 4096) * 4);
  // Batch-norm: forward reads x, weight, bias and writes y; backward reads dy, x and three
  // per-channel vectors and writes dx and two per-channel sums.
  const Case* bnf = findCase("bn_fwd_nhwc_32x256x56x56");
  ASSERT_NE(bnf, nullptr);
  EXPECT_EQ(ioBytes(bnf->op, bnf->shape, DataType::Float32),
            (int64_t(2) * 32 * 256 * 56 * 56 + 2 * 256) * 4);
  const Case* bnb = findCase("bn_bwd_nchw_32x256x56x56");
  ASSERT_NE(bnb, nullptr);
  EXPECT_EQ(ioBytes(bnb->op, bnb->shape, DataType::BFloat16),
            (int64_t(3) * 32 * 256 * 56 * 56 + 5 * 256) * 2);
  // The transposes write [C, R]; gelu_bias_t reads a bias [C] too.
  const Case* t = findCase("gelu_bias_t_16384x768");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(ioBytes(t->op, t->shape, DataType::BFloat16), (2 * 16384 * 768 + 768) * 2);
  const Case* copy = findCase("copy_8192x8192");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(ioBytes(copy->op, copy->shape, DataType::Float32), int64_t(2) * 8192 * 8192 * 4);
  // NCHW -> NHWC reads and writes the tensor once.
  const Case* nhwc = findCase("to_nhwc_256x512x7x7");
  ASSERT_NE(nhwc, nullptr);
  EXPECT_EQ(ioBytes(nhwc->op, nhwc->shape, DataType::BFloat16), int64_t(2) * 256 * 512 * 49 * 2);
  EXPECT_EQ(findCase("nope"), nullptr);
  EXPECT_EQ(dtypeLabel(parseDtype("bf16")), "bf16");
  EXPECT_THROW(parseDtype("fp16"), UserError);
}

struct SmallCase {
  Op op;
  std::vector<int64_t> shape;
};

const std::vector<SmallCase> kSmallCases = {
    {Op::VarMean, {2, 3, 64}}, {Op::LayerNorm, {5, 64}},          {Op::RmsNorm, {5, 64}},
    {Op::Softmax, {5, 64}},    {Op::GeluTanhBias, {5, 64}},       {Op::SumDim0, {16, 64}},
    {Op::Transpose, {40, 64}}, {Op::GeluBiasTranspose, {40, 64}}, {Op::Copy, {40, 64}},
    {Op::BatchNormFwdNchw, {3, 5, 4, 6}}, {Op::BatchNormFwdNhwc, {3, 5, 4, 6}},
    {Op::LayerNormBwd, {40, 64}}, {Op::RmsNormBwd, {40, 64}},
    {Op::BatchNormBwdNchw, {3, 5, 4, 6}}, {Op::BatchNormBwdNhwc, {3, 5, 4, 6}},
    {Op::ToChannelsLast, {2, 40, 7, 7}}, {Op::IndexAdd, {40, 8, 10}},
};

std::vector<eval::Argument> asArgs(const std::vector<Tensor>& ts) {
  return std::vector<eval::Argument>(ts.begin(), ts.end());
}

// Each case's fusion, evaluated by the reference evaluator, passes the harness's own check in
// both dtypes: the fusions and the double-precision spot checks agree.
TEST(BenchCases, ReferenceOutputsPassTheCheck) {
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    for (const SmallCase& sc : kSmallCases) {
      auto fusion = buildFusion(sc.op, sc.shape, dt);
      EXPECT_EQ(fusion->inputs().size(), inputShapes(sc.op, sc.shape).size());
      std::vector<Tensor> in = makeInputs(sc.op, sc.shape, dt, 3);
      std::vector<Tensor> out = eval::evaluateFusion(*fusion, asArgs(in));
      CheckResult r = checkOutputs(sc.op, dt, in, out);
      EXPECT_TRUE(r.ok) << dtypeLabel(dt) << " op " << int(sc.op) << ": " << r.detail;
    }
  }
}

// A wrong element in a checked row, a NaN anywhere, or a wrong shape makes the check fail and
// say where.
TEST(BenchCases, WrongOutputsFailTheCheck) {
  for (const SmallCase& sc : kSmallCases) {
    DataType dt = DataType::Float32;
    auto fusion = buildFusion(sc.op, sc.shape, dt);
    std::vector<Tensor> in = makeInputs(sc.op, sc.shape, dt, 4);
    std::vector<Tensor> good = eval::evaluateFusion(*fusion, asArgs(in));

    std::vector<Tensor> off = eval::evaluateFusion(*fusion, asArgs(in));
    off[0].setDoubleLinear(0, off[0].getDoubleLinear(0) * 1.01 + 0.01);
    CheckResult r = checkOutputs(sc.op, dt, in, off);
    EXPECT_FALSE(r.ok) << "op " << int(sc.op);
    EXPECT_NE(r.detail.find("expected"), std::string::npos) << r.detail;

    std::vector<Tensor> nan = eval::evaluateFusion(*fusion, asArgs(in));
    nan.back().setDoubleLinear(nan.back().numel() / 2, std::nan(""));
    r = checkOutputs(sc.op, dt, in, nan);
    EXPECT_FALSE(r.ok) << "op " << int(sc.op);
    EXPECT_NE(r.detail.find("not finite"), std::string::npos) << r.detail;

    std::vector<Tensor> missing(good.begin(), good.end() - 1);
    EXPECT_FALSE(checkOutputs(sc.op, dt, in, missing).ok);
  }
}

// Inputs larger than the random block repeat it exactly and stay within [-1, 1].
TEST(BenchCases, LargeInputsRepeatTheRandomBlock) {
  constexpr int64_t kBlock = 4194301;
  std::vector<Tensor> in = makeInputs(Op::RmsNorm, {1025, 4096}, DataType::BFloat16, 9);
  ASSERT_EQ(in.size(), 2u);
  const Tensor& x = in[0];
  ASSERT_GT(x.numel(), kBlock);
  for (int64_t i : {int64_t(0), int64_t(17), x.numel() - kBlock - 1}) {
    EXPECT_EQ(x.getDoubleLinear(i), x.getDoubleLinear(i + kBlock)) << i;
  }
  EXPECT_NE(x.getDoubleLinear(0), x.getDoubleLinear(4096));  // rows differ
  for (int64_t i = 0; i < x.numel(); i += 9973) EXPECT_LE(std::abs(x.getDoubleLinear(i)), 1.0);
}

#ifdef LOOM_BENCH_EXE
// Runs loom_bench with `args` and no visible GPU; returns (exit status, combined output).
std::pair<int, std::string> runBench(const std::string& args) {
  std::string cmd = "CUDA_VISIBLE_DEVICES= '" LOOM_BENCH_EXE "' " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  std::array<char, 1024> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Without a GPU loom_bench exits with status 2 and says to run on the GPU machine, as
// torch_baseline.py does; --help works anywhere; a bad option is status 2 with the usage.
TEST(BenchBinary, NoGpuExitsWithStatus2) {
  auto [status, out] = runBench("--json /dev/null --reps 20");
  EXPECT_EQ(status, 2) << out;
  bool says = out.find("run this on the GPU machine") != std::string::npos ||
              out.find("built without the CUDA backend") != std::string::npos;
  EXPECT_TRUE(says) << out;

  auto [helpStatus, help] = runBench("--help");
  EXPECT_EQ(helpStatus, 0) << help;
  EXPECT_NE(help.find("Usage: loom_bench [OPTIONS]"), std::string::npos) << help;
  EXPECT_NE(help.find("--reps N"), std::string::npos) << help;

  auto [badStatus, bad] = runBench("--reps 3");
  EXPECT_EQ(badStatus, 2) << bad;
  EXPECT_NE(bad.find("--reps must be at least 20"), std::string::npos) << bad;
}
#endif

}  // namespace
}  // namespace loom::bench
