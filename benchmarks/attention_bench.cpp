// SPDX-License-Identifier: Apache-2.0
// loom_attention_bench: Loom's fused attention forward (exec::FusedAttention, issue 30) on GPT-2
// and Llama attention shapes (causal, bf16), timed by docs/performance.md's protocol (CUDA events,
// L2 flushed before each repetition, median of --reps after --warmup), optionally next to the
// composite (ops::sdpfaFwd through FusionExecutorCache). benchmarks/attention_bench.py times
// torch's F.scaled_dot_product_attention in the same run and prints both. Every case is first
// checked, outputs poisoned, against attention computed in double on sampled rows; the fused
// backward (grad_output = output) is timed too, its gradients checked to be written and finite.
//
//   loom_attention_bench [--cases gpt2,llama] [--reps 100] [--warmup 10] [--composite]
//                        [--json FILE] [--backend cuda|host]
//
// --backend host checks the cases (small ones: --cases tiny) on the host backend without timing.
// Exit status: 0 all checks passed, 1 a check failed or a case raised, 2 no GPU or bad usage.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/bench_report.h"
#include "loom/exec/fused_attention.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/stream.h"
#endif

namespace loom::bench {
namespace {

struct AttentionCase {
  std::string name;
  int64_t n, h, l, s, e;
  bool causal;
};

// GPT-2 small (12 heads of 64, context 1024, batch 8) and Llama-2-7B (32 heads of 128, context
// 4096); `tiny` exercises the harness on the host backend.
const std::vector<AttentionCase>& allCases() {
  static const std::vector<AttentionCase> cases = {
      {"gpt2", 8, 12, 1024, 1024, 64, true},
      {"llama", 1, 32, 4096, 4096, 128, true},
      {"tiny", 1, 2, 40, 50, 64, true},
  };
  return cases;
}

struct Options {
  std::vector<std::string> cases{"gpt2", "llama"};
  int64_t reps = 100;
  int64_t warmup = 10;
  bool composite = false;
  std::string json;
  exec::Backend backend = exec::Backend::Cuda;
};

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Sampled rows of the output against attention computed in double from the (host) inputs:
// 16 (n, h, row) triples spread over the tensor, every element of each row.
std::string checkRows(const AttentionCase& c, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& out, const Tensor& lse, double scale) {
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t rows = c.n * c.h * c.l;
  for (int64_t sample = 0; sample < 16; ++sample) {
    const int64_t r = (sample * 7919 + 13) % rows;  // (n * H + h) * L + i
    const int64_t bh = r / c.l, i = r % c.l;
    std::vector<double> sc(size_t(c.s), -inf);
    double m = -inf;
    for (int64_t j = 0; j < c.s && !(c.causal && j > i); ++j) {
      double dot = 0;
      for (int64_t d = 0; d < c.e; ++d) {
        dot += q.getDoubleLinear(r * c.e + d) * k.getDoubleLinear((bh * c.s + j) * c.e + d);
      }
      sc[size_t(j)] = dot * scale;
      m = std::max(m, sc[size_t(j)]);
    }
    double l = 0;
    for (double x : sc) l += x == -inf ? 0.0 : std::exp(x - m);
    const double want_lse = m + std::log(l);
    if (std::abs(lse.getDoubleLinear(r) - want_lse) > 1e-3 * (1 + std::abs(want_lse))) {
      return fmt::format("FAIL: log_sumexp of row {} is {}, want {}", r, lse.getDoubleLinear(r),
                         want_lse);
    }
    for (int64_t d = 0; d < c.e; ++d) {
      double want = 0;
      for (int64_t j = 0; j < c.s; ++j) {
        if (sc[size_t(j)] == -inf) continue;
        want += std::exp(sc[size_t(j)] - want_lse) * v.getDoubleLinear((bh * c.s + j) * c.e + d);
      }
      const double got = out.getDoubleLinear(r * c.e + d);
      // bf16 output: 2^-8 relative, plus the inputs' rounding carried through the sums.
      if (!(std::abs(got - want) <= 2e-2 * (1 + std::abs(want)))) {
        return fmt::format("FAIL: output [{}, {}] is {}, want {}", r, d, got, want);
      }
    }
  }
  return "PASS";
}

struct Result {
  AttentionCase c;
  std::string check;
  Summary fused, backward, composite;
  bool timed = false, timedComposite = false;
  std::string error;
};

double flops(const AttentionCase& c) {
  // Two products of 2 * L * S * E each; a causal mask computes about half of them.
  const double full = 4.0 * double(c.n * c.h) * double(c.l) * double(c.s) * double(c.e);
  return c.causal ? full / 2 : full;
}

#ifdef LOOM_HAVE_CUDA_BACKEND
// The protocol's loop: flush L2 (256 MiB written), events around `call`, median of reps.
template <typename F>
Summary timeReps(const Options& o, const cuda::Stream& stream, F&& call) {
  for (int64_t i = 0; i < o.warmup; ++i) call();
  stream.synchronize();
  Tensor flush = cuda::emptyCuda({(int64_t(256) << 20) / 4}, DataType::Float32, 0, stream.handle());
  cuda::Event start = cuda::Event::create(0), stop = cuda::Event::create(0);
  std::vector<double> us;
  for (int64_t rep = 0; rep < o.reps; ++rep) {
    cuda::fillBytes(flush, uint8_t(rep & 0x7f), stream.handle());
    start.record(stream.handle());
    call();
    stop.record(stream.handle());
    stop.synchronize();
    us.push_back(double(cuda::Event::elapsedMs(start, stop)) * 1e3);
  }
  return summarize(us);
}
#endif

Tensor toHost(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (t.device().isCuda()) return cuda::toHost(t);
#endif
  return t;
}

Result runCase(const AttentionCase& c, const Options& o) {
  Result r{c, "", {}, {}, {}, false, false, ""};
  try {
    auto device = exec::makeComputeDevice(o.backend);
    const double scale = 1.0 / std::sqrt(double(c.e));
    const DataType dt = DataType::BFloat16;
    std::vector<Tensor> host;
    uint64_t seed = 20261206;
    for (auto sizes : {std::vector<int64_t>{c.n, c.h, c.l, c.e},
                       {c.n, c.h, c.s, c.e},
                       std::vector<int64_t>{c.n, c.h, c.s, c.e}}) {
      host.push_back(Tensor::empty(sizes, dt));
      fillRandom(host.back(), seed++);
    }
    std::vector<Tensor> args = host;
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (o.backend == exec::Backend::Cuda) {
      for (Tensor& t : args) t = cuda::toDevice(t);
    }
#endif
    {
      exec::FusedAttention checking(device, /*poison_outputs=*/true);
      auto [out, lse] = checking.forward(args[0], args[1], args[2], {scale, c.causal});
      r.check = checkRows(c, host[0], host[1], host[2], toHost(out), toHost(lse), scale);
      // The backward's values are the test tiers' (loom_fused_attention_*_tests); here every
      // gradient must be written (poisoned first) and finite.
      auto grads = checking.backward(out, args[0], args[1], args[2], out, lse, {scale, c.causal});
      for (const Tensor* g : {&grads.grad_query, &grads.grad_key, &grads.grad_value}) {
        const Tensor t = toHost(*g);
        for (int64_t i = 0; i < t.numel() && r.check == "PASS"; ++i) {
          if (!std::isfinite(t.getDoubleLinear(i))) {
            r.check = fmt::format("FAIL: a gradient has {} at {}", t.getDoubleLinear(i), i);
          }
        }
      }
    }
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (o.backend != exec::Backend::Cuda) return r;
    cuda::Stream stream = cuda::Stream::create(0);
    exec::FusedAttention fa(device);
    r.fused = timeReps(o, stream, [&] {
      (void)fa.forward(args[0], args[1], args[2], {scale, c.causal}, stream.handle());
    });
    auto [out, lse] = fa.forward(args[0], args[1], args[2], {scale, c.causal}, stream.handle());
    r.backward = timeReps(o, stream, [&] {
      (void)fa.backward(out, args[0], args[1], args[2], out, lse, {scale, c.causal},
                        stream.handle());
    });
    r.timed = true;
    if (o.composite) {
      auto fusion = std::make_unique<ir::Fusion>();
      {
        ir::FusionGuard g(fusion.get());
        std::vector<ir::TensorView*> in;
        for (int i = 0; i < 3; ++i) {
          in.push_back(ops::TensorBuilder().rank(4).dtype(dt).build());
          fusion->addInput(in.back());
        }
        ops::SdpfaFwdResult f = ops::sdpfaFwd(in[0], in[1], in[2], 0.0, c.causal, scale);
        fusion->addOutput(f.output);
        fusion->addOutput(f.log_sumexp);
      }
      runtime::RuntimeOptions ro;
      ro.backend = exec::Backend::Cuda;
      ro.executor.stream = stream.handle();
      runtime::FusionExecutorCache cache(std::move(fusion), ro);
      std::vector<eval::Argument> eargs(args.begin(), args.end());
      r.composite = timeReps(o, stream, [&] { (void)cache.run(eargs); });
      r.timedComposite = true;
    }
#endif
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

int mainImpl(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--cases") {
        o.cases = splitCommas(next());
      } else if (a == "--reps") {
        o.reps = std::stoll(next());
      } else if (a == "--warmup") {
        o.warmup = std::stoll(next());
      } else if (a == "--composite") {
        o.composite = true;
      } else if (a == "--json") {
        o.json = next();
      } else if (a == "--backend") {
        const std::string b = next();
        if (b != "cuda" && b != "host") throw std::invalid_argument("--backend is cuda or host");
        o.backend = b == "host" ? exec::Backend::Host : exec::Backend::Cuda;
      } else {
        throw std::invalid_argument("unknown option " + a);
      }
    } catch (const std::exception& e) {
      std::cerr << "loom_attention_bench: " << e.what() << "\n";
      return 2;
    }
  }
  if (o.reps < 1 || o.warmup < 0) {
    std::cerr << "loom_attention_bench: --reps must be at least 1 and --warmup at least 0\n";
    return 2;
  }
  std::vector<AttentionCase> chosen;
  for (const std::string& name : o.cases) {
    bool found = false;
    for (const AttentionCase& c : allCases()) {
      if (c.name == name) chosen.push_back(c), found = true;
    }
    if (!found) {
      std::cerr << "loom_attention_bench: unknown case " << name << " (gpt2, llama, tiny)\n";
      return 2;
    }
  }
  if (o.backend == exec::Backend::Cuda && exec::gpuCount() == 0) {
    std::cerr << "loom_attention_bench: no GPU (" << exec::chooseBackend(exec::Backend::Auto).reason
              << "): run this on the GPU machine, or check the cases with --backend host\n";
    return 2;
  }
  bool ok = true;
  JsonWriter json;
  json.beginObject().key("schema").value("loom-attention-bench/1");
  json.key("timestamp").value(utcTimestamp()).key("cases").beginArray();
  std::vector<std::vector<std::string>> rows;
  for (const AttentionCase& c : chosen) {
    Result r = runCase(c, o);
    ok &= r.error.empty() && r.check == "PASS";
    const std::string shape = fmt::format("[{}, {}, {}, {}] x S {}{}", c.n, c.h, c.l, c.e, c.s,
                                          c.causal ? " causal" : "");
    auto tflops = [&](const Summary& s) { return fixed(flops(c) / (s.median * 1e-6) / 1e12, 1); };
    rows.push_back({c.name, shape, r.error.empty() ? r.check : "ERROR: " + r.error,
                    r.timed ? fixed(r.fused.median, 1) : "-", r.timed ? tflops(r.fused) : "-",
                    r.timed ? fixed(r.backward.median, 1) : "-",
                    r.timedComposite ? fixed(r.composite.median, 1) : "-"});
    json.beginObject().key("name").value(c.name).key("dtype").value("bf16");
    json.key("shape").array(std::vector<int64_t>{c.n, c.h, c.l, c.s, c.e});
    json.key("causal").value(c.causal).key("check").value(r.error.empty() ? r.check : r.error);
    json.key("fused_us");
    r.timed ? json.value(r.fused.median) : json.null();
    json.key("backward_us");
    r.timed ? json.value(r.backward.median) : json.null();
    json.key("composite_us");
    r.timedComposite ? json.value(r.composite.median) : json.null();
    json.endObject();
  }
  json.endArray().endObject();
  std::cout << formatTable(
                   {"case", "shape", "check", "fused us", "TFLOP/s", "backward us", "composite us"},
                   rows, 3)
            << "\n";
  if (!o.json.empty()) std::ofstream(o.json) << json.str() << "\n";
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace loom::bench

int main(int argc, char** argv) { return loom::bench::mainImpl(argc, argv); }
