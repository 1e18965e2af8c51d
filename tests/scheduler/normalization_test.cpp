// SPDX-License-Identifier: Apache-2.0
// Tests of the inner-persistent normalization scheduler: acceptance, rejection with a reason,
// heuristics on edge shapes, and scheduled fusions that validate and compute the original numbers.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/verifier.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/normalization.h"
#include "loom/segmenter/welford_translation.h"
#include "loom/transform/propagation.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {
namespace {

using namespace loom::ir;

using Build = std::function<void(Fusion&)>;

Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed, DataType dtype = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}

// x[rows, width] (constant sizes) -> softmax over the last dim.
Build softmaxOf(int64_t rows, int64_t width) {
  return [=](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({rows, width}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, -1));
  };
}

std::unique_ptr<Fusion> make(const Build& build) {
  auto f = std::make_unique<Fusion>();
  FusionGuard guard(f.get());
  build(*f);
  return f;
}

// Params for a fusion with constant sizes (no arguments needed); fails the test on rejection.
std::unique_ptr<InnerPersistentParams> paramsOf(const Fusion& f) {
  std::string why;
  EXPECT_TRUE(innerPersistentCompileTimeCheck(f, &why)) << why;
  SchedulerRuntimeInfo info(f, eval::ExpressionEvaluator{});
  EXPECT_TRUE(innerPersistentRunTimeCheck(f, info, &why)) << why;
  return innerPersistentHeuristics(f, info);
}

// A register-persistent plan with one row per block and the given vector, batch and threads.
void expectRegisterRows(const InnerPersistentParams& p, int64_t vectorize, int64_t batch,
                        int64_t threads) {
  EXPECT_EQ(p.vectorize, vectorize);
  EXPECT_EQ(p.persistent_batch, batch);
  EXPECT_EQ(p.threads_per_row, threads);
  EXPECT_EQ(p.rows_per_block, 1);
  EXPECT_FALSE(p.shared_memory);
}

// Schedules a copy of the fusion through the registry's scheduler object, validates it and
// compares its evaluation with the original's on `args`. Returns "" or the first problem.
std::string scheduleAndCompare(const Fusion& original, const std::vector<eval::Argument>& args,
                               int64_t reduction_size, InnerPersistentParams* out_params = nullptr) {
  std::unique_ptr<Fusion> f = original.clone();
  const Scheduler& s = schedulerFor(SchedulerType::InnerPersistent);
  std::string why;
  if (!s.canScheduleCompileTime(*f, &why)) return "compile-time rejection: " + why;
  SchedulerRuntimeInfo info(*f, args);
  if (!s.canScheduleRunTime(*f, info, &why)) return "run-time rejection: " + why;
  auto params = s.computeHeuristics(*f, info);
  s.schedule(*f, *params);
  if (out_params != nullptr) *out_params = dynamic_cast<InnerPersistentParams&>(*params);
  transform::validateSchedule(*f);
  verify(*f);
  auto expected = eval::evaluateFusion(original, args);
  auto actual = eval::evaluateFusion(*f, args);
  if (expected.size() != actual.size()) return "output count differs";
  for (size_t i = 0; i < expected.size(); ++i) {
    auto tol = eval::defaultTolerance(expected[i].dtype(), reduction_size);
    if (auto msg = eval::expectClose(actual[i], expected[i], tol, "output " + std::to_string(i))) {
      return *msg + "\n" + f->toString();
    }
  }
  return "";
}

// Softmax of moderate width is accepted, and the scheduled fusion computes the same numbers.
TEST(InnerPersistent, SoftmaxSchedulesAndEvaluates) {
  auto f = make(softmaxOf(8, 1000));
  InnerPersistentParams p;
  EXPECT_EQ(scheduleAndCompare(*f, {randomTensor({8, 1000}, 1)}, 1000, &p), "");
  EXPECT_EQ(p.vectorize, 4);  // 1000 floats: 16-byte loads divide the row
  EXPECT_FALSE(p.shared_memory);
  EXPECT_EQ(p.threads_per_row * p.persistent_batch * p.vectorize >= 1000, true);
}

// log_softmax over a symbolic-size input schedules and evaluates like the original.
TEST(InnerPersistent, LogSoftmaxSymbolicSizes) {
  auto f = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::logSoftmax(x, 1));
  });
  EXPECT_EQ(scheduleAndCompare(*f, {randomTensor({5, 300}, 2)}, 300), "");
}

// layer_norm (Welford kept, rFactored with its siblings) with weight and bias, 3-D input.
TEST(InnerPersistent, LayerNormSchedulesAndEvaluates) {
  auto f = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({2, 3, 256}).build();
    auto* w = ops::TensorBuilder().shape({256}).build();
    auto* b = ops::TensorBuilder().shape({256}).build();
    f.addInput(x);
    f.addInput(w);
    f.addInput(b);
    auto r = ops::layerNorm(x, 1, w, b);
    f.addOutput(r.y);
    f.addOutput(r.mean);
    f.addOutput(r.rstd);
  });
  std::vector<eval::Argument> args = {randomTensor({2, 3, 256}, 3), randomTensor({256}, 4),
                                      randomTensor({256}, 5)};
  EXPECT_EQ(scheduleAndCompare(*f, args, 256), "");
}

// rms_norm over the last two dims (two reduced dims merged into one row).
TEST(InnerPersistent, RmsNormTwoInnerDims) {
  auto f = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({4, 6, 40}).build();
    auto* w = ops::TensorBuilder().shape({6, 40}).build();
    f.addInput(x);
    f.addInput(w);
    f.addOutput(ops::rmsNorm(x, 2, w));
  });
  EXPECT_EQ(scheduleAndCompare(*f, {randomTensor({4, 6, 40}, 6), randomTensor({6, 40}, 7)}, 240),
            "");
}

// A lone var_mean has no persistent buffer (the reduction scheduler's case) until its Welford is
// translated; then the scheduler takes it and the numbers stay the same.
TEST(InnerPersistent, VarMeanAcceptedAfterTranslation) {
  auto f = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({6, 512}).build();
    f.addInput(x);
    auto vm = ops::varMean(x, {1});
    f.addOutput(vm.var);
    f.addOutput(vm.mean);
  });
  std::string why;
  EXPECT_FALSE(innerPersistentCompileTimeCheck(*f, &why));
  EXPECT_NE(why.find("no persistent buffer"), std::string::npos) << why;
  std::vector<eval::Argument> args = {randomTensor({6, 512}, 8)};
  auto translated = f->clone();
  ASSERT_TRUE(segmenter::translateApplicableWelford(*translated, args, {}, &why)) << why;
  EXPECT_EQ(scheduleAndCompare(*translated, args, 512), "");
  // The translated fusion still computes the original's numbers.
  auto a = eval::evaluateFusion(*f, args);
  auto b = eval::evaluateFusion(*translated, args);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(eval::expectClose(b[i], a[i], eval::defaultTolerance(DataType::Float32, 512),
                                   "var_mean"));
  }
}

// A row too long for registers and shared memory is rejected by the run-time check, with the
// sizes in the reason, so the segmenter can fall back.
TEST(InnerPersistent, AbsurdlyWideRowIsRejected) {
  auto f = make(softmaxOf(2, int64_t(1) << 26));
  std::string why;
  ASSERT_TRUE(innerPersistentCompileTimeCheck(*f, &why)) << why;
  SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{});
  EXPECT_FALSE(innerPersistentRunTimeCheck(*f, info, &why));
  EXPECT_NE(why.find("rows of 67108864 elements need"), std::string::npos) << why;
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  EXPECT_NE(why.find("2 rows are too few"), std::string::npos) << why;
}

// Rows wider than shared memory holds are read again from global memory by each pass, in one
// kernel, when every held row is an input and there are enough rows for a block each; a held
// row that is not an input cannot be read again, so such a fusion is still rejected.
TEST(InnerPersistent, RowsWiderThanSharedMemoryReload) {
  auto f = make(softmaxOf(16, 131072));
  auto p = paramsOf(*f);
  EXPECT_TRUE(p->reload_rows) << p->toString();
  EXPECT_FALSE(p->shared_memory) << p->toString();
  EXPECT_EQ(p->rows_per_block, 1);
  EXPECT_EQ(p->threads_per_row * p->persistent_batch * p->vectorize, 131072) << p->toString();
  EXPECT_EQ(scheduleAndCompare(*make(softmaxOf(9, 70001)), {randomTensor({9, 70001}, 3)}, 70001),
            "");

  // r * sum(r) over r = float(bf16(x)): the bf16 row is held (narrower than both x and r; it
  // is not an input), and 140000 of them overflow shared memory.
  auto narrow = make([](Fusion& fu) {
    auto* x = ops::TensorBuilder().shape({16, 140000}).build();
    fu.addInput(x);
    auto* r = ops::cast(ops::cast(x, DataType::BFloat16), DataType::Float32);
    fu.addOutput(ops::mul(r, ops::sum(r, {1}, /*keepdim=*/true)));
  });
  std::string why;
  ASSERT_TRUE(innerPersistentCompileTimeCheck(*narrow, &why)) << why;
  SchedulerRuntimeInfo info(*narrow, eval::ExpressionEvaluator{});
  EXPECT_FALSE(innerPersistentRunTimeCheck(*narrow, info, &why));
  EXPECT_NE(why.find("cannot be read again"), std::string::npos) << why;
}

// Rows that overflow registers but fit in shared memory put the persistent buffers there, and
// the schedule still computes the original numbers.
TEST(InnerPersistent, SharedMemoryWhenRegistersDoNotSuffice) {
  // 50000 floats (the input's cache; exp is recomputed) = 200000 bytes per row: more than the
  // register file holds for any thread count, less than 227 KiB of shared memory.
  auto f = make(softmaxOf(2, 50000));
  InnerPersistentParams p;
  EXPECT_EQ(scheduleAndCompare(*f, {randomTensor({2, 50000}, 9)}, 50000, &p), "");
  EXPECT_TRUE(p.shared_memory) << p.toString();
  EXPECT_EQ(p.rows_per_block, 1);
  EXPECT_LE(p.threads_per_row, 1024);
}

// Edge shapes: width 1 (one thread per row, rows share blocks), a prime width (peeled vectors
// when a row holds 16 of them, scalar below), a single row (one row per block).
TEST(InnerPersistent, EdgeShapeParams) {
  // Width 1 from symbolic sizes (a constant 1 would be a broadcast dim).
  auto symbolic = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, -1));
  });
  SchedulerRuntimeInfo info(*symbolic, std::vector<eval::Argument>{randomTensor({4096, 1}, 13)});
  ASSERT_TRUE(innerPersistentRunTimeCheck(*symbolic, info, nullptr));
  auto one = innerPersistentHeuristics(*symbolic, info);
  EXPECT_EQ(one->vectorize, 1);
  EXPECT_EQ(one->persistent_batch, 1);
  EXPECT_EQ(one->threads_per_row, 1);
  EXPECT_EQ(one->rows_per_block, 16);  // 4096 rows / 132 SMs -> 16 rows per block at most
  auto prime = paramsOf(*make(softmaxOf(64, 1009)));
  EXPECT_EQ(prime->vectorize, 4);
  EXPECT_TRUE(prime->peel);
  EXPECT_GE(prime->threads_per_row * prime->persistent_batch * prime->vectorize, 1009);
  EXPECT_LE(prime->threads_per_row, 1024);
  auto narrow_prime = paramsOf(*make(softmaxOf(64, 61)));  // 15 vectors: too few to peel
  EXPECT_EQ(narrow_prime->vectorize, 1);
  EXPECT_FALSE(narrow_prime->peel);
  EXPECT_GE(narrow_prime->threads_per_row * narrow_prime->persistent_batch, 61);
  auto tiny = paramsOf(*make(softmaxOf(1, 4096)));
  EXPECT_EQ(tiny->rows_per_block, 1);
  EXPECT_EQ(tiny->vectorize, 4);
  EXPECT_EQ(tiny->rows, 1);
  EXPECT_NE(tiny->toString().find("persistent_batch="), std::string::npos);
  // Edge shapes also schedule and evaluate.
  EXPECT_EQ(scheduleAndCompare(*symbolic, {randomTensor({3, 1}, 10)}, 1), "");
  EXPECT_EQ(scheduleAndCompare(*make(softmaxOf(3, 13)), {randomTensor({3, 13}, 11)}, 13), "");
}

// Equal parameters compare equal and hash alike; a different batch does not.
TEST(InnerPersistent, ParamsEqualityAndHash) {
  auto a = paramsOf(*make(softmaxOf(8, 1000)));
  auto b = paramsOf(*make(softmaxOf(8, 1000)));
  EXPECT_TRUE(*a == *b);
  EXPECT_EQ(a->hash(), b->hash());
  b->persistent_batch += 1;
  EXPECT_FALSE(*a == *b);
}

// Fusions the scheduler does not handle are rejected at compile time with the reason.
TEST(InnerPersistent, CompileTimeRejections) {
  std::string why;
  auto outer = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({16, 8}).build();
    f.addInput(x);
    f.addOutput(ops::div(x, ops::sum(x, {0}, /*keepdim=*/true)));
  });
  EXPECT_FALSE(innerPersistentCompileTimeCheck(*outer, &why));
  EXPECT_NE(why.find("innermost"), std::string::npos) << why;
  auto pointwise = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({16, 8}).build();
    f.addInput(x);
    f.addOutput(ops::exp(x));
  });
  EXPECT_FALSE(innerPersistentCompileTimeCheck(*pointwise, &why));
  EXPECT_EQ(why, "no reduction");
}

// softmax, rms_norm (with a weight) or layer_norm (weight, bias; y, mean and rstd) over the last
// dim of x[rows, width], constant sizes.
Build normalizationOf(std::string what, int64_t rows, int64_t width, DataType dtype) {
  return [=](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
    auto* w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
    f.addInput(x);
    if (what == "softmax") {
      f.addOutput(ops::softmax(x, -1));
      return;
    }
    f.addInput(w);
    if (what == "rms_norm") {
      f.addOutput(ops::rmsNorm(x, 1, w));
      return;
    }
    auto* b = ops::TensorBuilder().shape({width}).dtype(dtype).build();
    f.addInput(b);
    auto r = ops::layerNorm(x, 1, w, b);
    f.addOutput(r.y);
    f.addOutput(r.mean);
    f.addOutput(r.rstd);
  };
}

// Rows that overflow the planning register budget but whose held data leaves 16 registers of
// the 64 a 1024-thread block allows stay in registers at 1024 threads (faster than shared
// memory on the H100: run 33); rows that need more go to shared memory.
TEST(InnerPersistent, RegistersAtTheMostThreadsBeforeSharedMemory) {
  struct Case {
    const char* what;
    int64_t rows, width;
    DataType dtype;
    bool registers;
  };
  const Case cases[] = {
      // 64 bf16 per thread: 32 registers of row data.
      {"softmax", 1024, 65536, DataType::BFloat16, true},
      // 32 elements of x, weight and bias in bf16: 48 registers.
      {"layer_norm", 2048, 32768, DataType::BFloat16, true},
      {"softmax", 2048, 32768, DataType::Float32, true},
      // 64 elements of x, weight and bias: 96 registers; x and weight: 64.
      {"layer_norm", 1024, 65536, DataType::BFloat16, false},
      {"rms_norm", 1024, 65536, DataType::BFloat16, false},
      {"layer_norm", 2048, 32768, DataType::Float32, false},
  };
  for (const Case& c : cases) {
    auto p = paramsOf(*make(normalizationOf(c.what, c.rows, c.width, c.dtype)));
    SCOPED_TRACE(std::string(c.what) + " " + std::to_string(c.width) + " " + p->toString());
    EXPECT_EQ(p->shared_memory, !c.registers);
    EXPECT_FALSE(p->reload_rows);
    EXPECT_EQ(p->threads_per_row, 1024);
    EXPECT_EQ(p->rows_per_block, 1);
  }
}

// Odd-width rows too wide for 48 values a thread at 1024 threads are read again by each pass
// when the rows in flight fit in three quarters of the L2 (bf16 of 50257: 2 x 132 rows of 100514
// bytes, 26.5 MB); fp32 rows (53 MB) are held. Contiguous rows are peeled (8 bf16 a vector, 898
// threads of 7 vectors); rows that cannot be (a non-contiguous row) read scalars (1006 threads
// of 50 elements).
TEST(InnerPersistent, OddWidthRowsReloadWhileTheyStayInL2) {
  DeviceInfo h100;
  h100.l2_bytes = 50 * 1024 * 1024;
  auto strided = [](const char* what) {
    return make([what](Fusion& f) {
      auto* x = ops::TensorBuilder()
                    .shape({1335, 50257})
                    .dtype(DataType::BFloat16)
                    .contiguity({true, false})
                    .build();
      f.addInput(x);
      if (std::string(what) == "softmax") {
        f.addOutput(ops::softmax(x, -1));
        return;
      }
      auto* w = ops::TensorBuilder().shape({50257}).dtype(DataType::BFloat16).build();
      f.addInput(w);
      f.addOutput(ops::rmsNorm(x, 1, w, 1e-5));
    });
  };
  struct Case {
    const char* what;
    bool contiguous;
  };
  for (Case c : {Case{"softmax", true}, Case{"layer_norm", true}, Case{"rms_norm", true},
                 Case{"softmax", false}, Case{"rms_norm", false}}) {
    SCOPED_TRACE(std::string(c.what) + (c.contiguous ? "" : " (non-contiguous rows)"));
    auto f = c.contiguous ? make(normalizationOf(c.what, 1335, 50257, DataType::BFloat16))
                          : strided(c.what);
    SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{}, h100);
    std::string why;
    if (!innerPersistentRunTimeCheck(*f, info, &why)) {
      ADD_FAILURE() << why;
      continue;
    }
    auto p = innerPersistentHeuristics(*f, info);
    EXPECT_TRUE(p->reload_rows) << p->toString();
    EXPECT_EQ(p->peel, c.contiguous) << p->toString();
    EXPECT_EQ(p->vectorize, c.contiguous ? 8 : 1) << p->toString();
    EXPECT_EQ(p->threads_per_row, c.contiguous ? 898 : 1006) << p->toString();
  }
  auto f32 = make(normalizationOf("softmax", 1335, 50257, DataType::Float32));
  SchedulerRuntimeInfo info(*f32, eval::ExpressionEvaluator{}, h100);
  auto p = innerPersistentHeuristics(*f32, info);
  EXPECT_FALSE(p->reload_rows) << p->toString();
  EXPECT_TRUE(p->shared_memory) << p->toString();
  EXPECT_TRUE(p->peel) << p->toString();
  EXPECT_EQ(p->vectorize, 4) << p->toString();
}

// The peel is asked for only where a row's 16-byte vectors cannot all be aligned: the sweep's
// widths (multiples of 8) keep their aligned choice, peel=0; the odd 50257 and an fp32 row of
// 1030 (8-byte vectors only) peel at the 16-byte width; a view at an odd offset peels an
// aligned width.
TEST(InnerPersistent, PeelOnlyWhereVectorsCannotAllBeAligned) {
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    const int64_t v = 16 / int64_t(dataTypeSize(dtype));
    for (int64_t width : {256, 768, 1024, 4096, 12288, 32768, 128256, 1030, 50257}) {
      for (const char* what : {"softmax", "layer_norm", "rms_norm"}) {
        auto f = make(normalizationOf(what, 1335, width, dtype));
        SCOPED_TRACE(std::string(what) + " " + std::string(dataTypeName(dtype)) + " " +
                     std::to_string(width));
        std::string why;
        SchedulerRuntimeInfo check(*f, eval::ExpressionEvaluator{});
        if (!innerPersistentRunTimeCheck(*f, check, &why)) continue;  // too wide: segmented
        auto p = paramsOf(*f);
        EXPECT_EQ(p->peel, width % v != 0) << p->toString();
        EXPECT_EQ(p->vectorize, v) << p->toString();
      }
    }
  }
  auto f = make(normalizationOf("layer_norm", 64, 4096, DataType::BFloat16));
  Tensor base = Tensor::empty({64 * 4096 + 1}, DataType::BFloat16);
  std::vector<eval::Argument> args{
      Tensor(base.storage(), DataType::BFloat16, {64, 4096}, {4096, 1}, 1),
      Tensor::empty({4096}, DataType::BFloat16), Tensor::empty({4096}, DataType::BFloat16)};
  SchedulerRuntimeInfo info(*f, args);
  auto p = innerPersistentHeuristics(*f, info);
  EXPECT_TRUE(p->peel) << p->toString();
  EXPECT_EQ(p->vectorize, 8) << p->toString();
}

// Short rows over many rows (latency-bound) keep four vector loads per thread, the rows sharing
// a block along TIDy; few short rows keep the threads instead.
TEST(InnerPersistent, ShortLatencyBoundRowsKeepFourVectorsPerThread) {
  auto narrow = paramsOf(*make(normalizationOf("softmax", 262144, 256, DataType::BFloat16)));
  EXPECT_EQ(narrow->vectorize, 8);
  EXPECT_EQ(narrow->persistent_batch, 4);
  EXPECT_EQ(narrow->threads_per_row, 8);
  EXPECT_EQ(narrow->rows_per_block, 16);
  auto wider = paramsOf(*make(normalizationOf("layer_norm", 65536, 1024, DataType::BFloat16)));
  EXPECT_EQ(wider->persistent_batch, 4);
  EXPECT_EQ(wider->threads_per_row, 32);
  auto f32 = paramsOf(*make(normalizationOf("softmax", 262144, 256, DataType::Float32)));
  EXPECT_EQ(f32->vectorize, 4);
  EXPECT_EQ(f32->persistent_batch, 4);
  auto few = paramsOf(*make(normalizationOf("softmax", 64, 256, DataType::BFloat16)));
  EXPECT_EQ(few->persistent_batch, 1) << few->toString();
  EXPECT_EQ(few->threads_per_row, 32);
}

// Benchmark shapes: about 32 row elements per thread (16-byte loads, a batch of 8 fp32 or 4 bf16
// vectors), 128-512 threads per row and one row per block; wide bf16 rows over many rows hold
// 128 bytes of the persistent row per thread (64 values), weights not counted (H100 run 33).
TEST(InnerPersistent, BenchmarkShapeParams) {
  struct Case {
    const char* what;
    int64_t rows, width;
    DataType dtype;
    int64_t vectorize, batch, threads;
  };
  const Case cases[] = {
      {"layer_norm", 16384, 4096, DataType::Float32, 4, 8, 128},
      {"layer_norm", 16384, 4096, DataType::BFloat16, 8, 4, 128},
      {"softmax", 16384, 4096, DataType::Float32, 4, 8, 128},
      {"rms_norm", 16384, 4096, DataType::BFloat16, 8, 4, 128},
      {"layer_norm", 2048 * 16, 12288, DataType::Float32, 4, 8, 384},
      {"layer_norm", 2048 * 16, 12288, DataType::BFloat16, 8, 8, 192},
      {"layer_norm", 4096, 16384, DataType::BFloat16, 8, 8, 256},
      {"rms_norm", 4096, 16384, DataType::BFloat16, 8, 8, 256},
  };
  for (const Case& c : cases) {
    auto f = make(normalizationOf(c.what, c.rows, c.width, c.dtype));
    auto p = paramsOf(*f);
    SCOPED_TRACE(std::string(c.what) + " " + std::to_string(c.width) + " " + p->toString());
    expectRegisterRows(*p, c.vectorize, c.batch, c.threads);
  }
}

// The schedule forks outputs that are read inside the fusion (the readers get a register copy,
// computed once per row), caches whole-row outputs so their stores are vectorized, and unrolls
// the batch loop.
TEST(InnerPersistent, LayerNormScheduleStructure) {
  auto f = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({64, 1024}).build();
    auto* w = ops::TensorBuilder().shape({1024}).build();
    auto* b = ops::TensorBuilder().shape({1024}).build();
    f.addInput(x);
    f.addInput(w);
    f.addInput(b);
    auto r = ops::layerNorm(x, 1, w, b);
    f.addOutput(r.y);
    f.addOutput(r.mean);
    f.addOutput(r.rstd);
  });
  std::vector<eval::Argument> args = {randomTensor({64, 1024}, 3), randomTensor({1024}, 4),
                                      randomTensor({1024}, 5)};
  auto p = paramsOf(*f);
  std::unique_ptr<Fusion> s = f->clone();
  scheduleInnerPersistent(*s, *p);
  ASSERT_EQ(s->outputs().size(), 3u);
  // y: a vector store from a register cache.
  auto* y = s->outputs()[0]->as<TensorView>();
  EXPECT_EQ(y->axis(-1)->parallelType(), ParallelType::Vectorize) << y->toString();
  EXPECT_EQ(y->definition()->input(0)->as<TensorView>()->memoryType(), MemoryType::Local);
  for (size_t i = 1; i < 3; ++i) {
    auto* out = s->outputs()[i]->as<TensorView>();
    // The statistic outputs are copies of a register tensor that the normalization reads.
    EXPECT_TRUE(out->uses().empty()) << out->toString();
    auto* stat = out->definition()->input(0)->as<TensorView>();
    EXPECT_EQ(stat->memoryType(), MemoryType::Local) << stat->toString();
    EXPECT_GE(stat->uses().size(), 2u) << stat->toString();
    // Computed at the row position (after BIDx), not inside the element loops.
    EXPECT_EQ(stat->computeAtPosition(), 1) << stat->toString();
  }
  bool unrolled = false;
  for (TensorView* tv : s->allTvs()) {
    for (IterDomain* id : tv->loop()) unrolled = unrolled || id->parallelType() == ParallelType::Unroll;
  }
  EXPECT_TRUE(unrolled);
  transform::validateSchedule(*s);
  verify(*s);
  auto a = eval::evaluateFusion(*f, args);
  auto b = eval::evaluateFusion(*s, args);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(eval::expectClose(b[i], a[i], eval::defaultTolerance(DataType::Float32, 1024),
                                   "output " + std::to_string(i)));
  }
}

// A sequence-sharded layer_norm keeps its DID IDs outermost and untouched on every tensor.
TEST(InnerPersistent, KeepsDidOutermost) {
  auto f = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({2, 8, 64}).build();
    f.addInput(x);
    f.addOutput(ops::layerNorm(x, 1, nullptr, nullptr).y);
    x->setDeviceMesh(DeviceMesh::arange(4));
    x->split(1, 4, /*inner_split=*/false);
    x->reorder(std::vector<int64_t>{1, 0, 2, 3});
    x->axis(0)->parallelize(ParallelType::DIDx);
    transform::propagateTransforms(x);
  });
  std::vector<eval::Argument> args = {randomTensor({2, 8, 64}, 12)};
  std::unique_ptr<Fusion> scheduled = f->clone();
  {
    // The runtime's arguments are one device's shard: [b, s / d, e].
    std::vector<eval::Argument> local = {randomTensor({2, 2, 64}, 12)};
    SchedulerRuntimeInfo info(*scheduled, local);
    auto p = innerPersistentHeuristics(*scheduled, info);
    EXPECT_EQ(p->rows, 2 * 2);  // b * s / d rows on this device
    scheduleInnerPersistent(*scheduled, *p);
  }
  transform::validateSchedule(*scheduled);
  for (TensorView* tv : scheduled->allTvs()) {
    if (tv->isFusionInput()) continue;
    ASSERT_GT(tv->nDims(), 0);
    EXPECT_EQ(tv->axis(0)->parallelType(), ParallelType::DIDx) << tv->toString();
    auto* split = tv->axis(0)->definition()->as<Split>();
    EXPECT_FALSE(split->innerSplit()) << tv->toString();
    EXPECT_TRUE(split->factor()->isConstInt(4)) << tv->toString();
  }
  auto a = eval::evaluateFusion(*f, args);
  auto b = eval::evaluateFusion(*scheduled, args);
  EXPECT_FALSE(eval::expectClose(b[0], a[0], eval::defaultTolerance(DataType::Float32, 64), "y"));
}

// Two-pass var_mean over the last dim of x[rows, width] (what the Welford translation produces):
// cast, sum, mean, centered squares, sum.
Build twoPassVarMeanOf(int64_t rows, int64_t width, DataType dtype) {
  return [=](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
    f.addInput(x);
    auto* xf = ops::cast(x, DataType::Float32);
    auto* mean = ops::div(ops::sum(xf, {1}, /*keepdim=*/true), double(width));
    auto* d = ops::sub(xf, mean);
    f.addOutput(ops::div(ops::sum(ops::mul(d, d), {1}), double(width - 1)));
    f.addOutput(mean);
  };
}

// A persistent buffer that is a widening cast of a fusion input projects to that input; a
// narrowing cast or a buffer computed from a reduction result does not.
TEST(InnerPersistent, ProjectableCastInput) {
  auto bf16 = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({4, 256}).dtype(DataType::BFloat16).build();
    f.addInput(x);
    f.addOutput(ops::softmax(ops::cast(x, DataType::Float32), -1));
  });
  std::vector<TensorView*> bufs = persistentBuffers(*bf16);
  ASSERT_EQ(bufs.size(), 2u);  // cast(x) and exp(x - max)
  EXPECT_EQ(projectableCastInput(bufs[0]), bf16->inputs()[0]) << bufs[0]->toString();
  EXPECT_EQ(projectableCastInput(bufs[1]), nullptr) << bufs[1]->toString();
  auto narrowing = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({4, 256}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(ops::cast(x, DataType::BFloat16), -1));
  });
  for (TensorView* tv : persistentBuffers(*narrowing)) {
    EXPECT_EQ(projectableCastInput(tv), nullptr) << tv->toString();
  }
}

// A buffer computed pointwise from input rows and row statistics is recomputed, not held:
// softmax keeps x alone (exp(x - max) is recomputed where the division reads it), a bf16 input's
// softmax keeps the bf16 row (its cast and its exp recomputed), a narrowing cast keeps its narrow
// result, and a buffer computed from a broadcast row (not pointwise from the input) is held.
TEST(InnerPersistent, RecomputableBuffersAreProjected) {
  auto f32 = make(softmaxOf(4, 256));
  BufferPlan plan = planPersistentBuffers(*f32);
  ASSERT_EQ(plan.held.size(), 1u);
  EXPECT_EQ(plan.held[0], f32->inputs()[0]);
  ASSERT_EQ(plan.projected.size(), 1u);
  EXPECT_EQ(plan.bytesPerElement(), 4);
  EXPECT_EQ(paramsOf(*f32)->buffer_bytes_per_row, 256 * 4);

  auto bf16 = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({4, 256}).dtype(DataType::BFloat16).build();
    f.addInput(x);
    f.addOutput(ops::softmax(ops::cast(x, DataType::Float32), -1));
  });
  plan = planPersistentBuffers(*bf16);
  ASSERT_EQ(plan.held.size(), 1u);
  EXPECT_EQ(plan.held[0], bf16->inputs()[0]);
  EXPECT_EQ(plan.projected.size(), 2u);
  EXPECT_EQ(plan.bytesPerElement(), 2);

  auto narrowing = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({4, 256}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(ops::cast(x, DataType::BFloat16), -1));
  });
  plan = planPersistentBuffers(*narrowing);
  ASSERT_FALSE(plan.held.empty());
  EXPECT_NE(plan.held[0], narrowing->inputs()[0]) << plan.held[0]->toString();
  EXPECT_EQ(plan.held[0]->dtype(), DataType::BFloat16);

  // y = x_row * sum(x_row) where x_row = broadcast(v) of a [256] input: the row is a broadcast,
  // not pointwise from an input holding rows, so it stays held.
  auto broadcast_row = make([](Fusion& f) {
    auto* v = ops::TensorBuilder().shape({256}).build();
    f.addInput(v);
    auto* row = ops::add(ops::broadcast(v, {true, false}), ops::full({4, 256}, 1.0, DataType::Float32));
    f.addOutput(ops::mul(row, ops::sum(row, {1}, /*keepdim=*/true)));
  });
  plan = planPersistentBuffers(*broadcast_row);
  EXPECT_TRUE(plan.projected.empty());
}

// The projected buffer counts at the input's width: a bf16 var_mean row holds 2 bytes per element.
TEST(InnerPersistent, ProjectedBufferBytes) {
  auto bf16 = make(twoPassVarMeanOf(16, 12288, DataType::BFloat16));
  EXPECT_EQ(paramsOf(*bf16)->buffer_bytes_per_row, 12288 * 2);
  auto f32 = make(twoPassVarMeanOf(16, 12288, DataType::Float32));
  EXPECT_EQ(paramsOf(*f32)->buffer_bytes_per_row, 12288 * 4);
}

// Latency-bound bf16 rows with many rows: 64 values (128 bytes) per thread, so 192 threads per
// 12288-element row and more rows per SM; fp32 rows and bf16 with few rows keep 32 values.
TEST(InnerPersistent, LatencyBoundBf16RowsHoldMoreValues) {
  struct Case {
    int64_t rows;
    DataType dtype;
    int64_t vectorize, batch, threads;
  };
  const Case cases[] = {
      {16 * 2048, DataType::BFloat16, 8, 8, 192},
      {2048, DataType::BFloat16, 8, 8, 192},
      {16 * 2048, DataType::Float32, 4, 8, 384},
      {64, DataType::BFloat16, 8, 4, 384},  // 64 rows < 4 x 132 SMs
  };
  for (const Case& c : cases) {
    auto f = make(twoPassVarMeanOf(c.rows, 12288, c.dtype));
    auto p = paramsOf(*f);
    SCOPED_TRACE(std::to_string(c.rows) + " " + p->toString());
    expectRegisterRows(*p, c.vectorize, c.batch, c.threads);
  }
}

// The projection keeps the numbers: bf16 var_mean and softmax scheduled with one cast per use
// evaluate like the originals (non-divisible rows included).
TEST(InnerPersistent, ProjectedBf16SchedulesAndEvaluates) {
  for (int64_t width : {1024, 1001}) {
    auto vm = make(twoPassVarMeanOf(5, width, DataType::BFloat16));
    EXPECT_EQ(scheduleAndCompare(*vm, {randomTensor({5, width}, 41, DataType::BFloat16)}, width),
              "");
  }
  auto sm = make([](Fusion& f) {
    auto* x = ops::TensorBuilder().shape({3, 777}).dtype(DataType::BFloat16).build();
    f.addInput(x);
    f.addOutput(ops::softmax(ops::cast(x, DataType::Float32), -1));
  });
  EXPECT_EQ(scheduleAndCompare(*sm, {randomTensor({3, 777}, 42, DataType::BFloat16)}, 777), "");
}

}  // namespace
}  // namespace loom::scheduler
