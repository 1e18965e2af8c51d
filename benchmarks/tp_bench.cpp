// SPDX-License-Identifier: Apache-2.0
// loom_tp_bench: Megatron's MLP (linear, gelu, linear) timed per rank under mpirun, tensor
// parallel over every rank next to the unsharded MLP that each rank runs whole
// (benchmarks/README.md, "loom_tp_bench"; figures in docs/performance.md):
//   unsharded  the MLP without meshes, on every rank at once;
//   tp         w1 sharded on the hidden dim (column-parallel), w2 on it too (row-parallel): each
//              rank's partial products and one Allreduce, found by the resharding lowering;
//   sp         the sequence-parallel form: x and the output sharded on the tokens (an Allgather
//              before the first linear, a ReduceScatter after the second).
// Each repetition is a barrier and one run per rank; a repetition's time is the slowest rank's
// (a collective is as fast as its slowest member). Every form's output is checked once against
// the rank's shard of the double-precision reference before it is timed.
//
//   mpirun -np 2 build/bin/loom_tp_bench [--tokens 512] [--embed 256] [--reps 20]
//                                         [--dtype f32|bf16] [--backend host|cuda]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/multidevice/communicator.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/segmenter/presegment.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::bench::tp {
namespace {

using Clock = std::chrono::steady_clock;
using ir::DeviceMesh;
using ir::TensorView;

struct Options {
  int64_t tokens = 512, embed = 256, reps = 20;
  DataType dtype = DataType::Float32;
  exec::Backend backend = exec::Backend::Host;
};

enum class Form { Unsharded, TensorParallel, SequenceParallel };
const char* formName(Form f) {
  return f == Form::Unsharded ? "unsharded" : f == Form::TensorParallel ? "tp" : "sp";
}

void shardDim(TensorView* tv, int64_t dim, const DeviceMesh& mesh) {
  tv->setDeviceMesh(mesh);
  tv->outerSplit(dim, mesh.size());
  tv->axis(dim)->parallelize(ir::ParallelType::DIDx);
}

// x [tokens, e] -> linear(x, w1 [4e, e], b1) -> gelu -> linear(., w2 [e, 4e], b2).
std::unique_ptr<ir::Fusion> mlp(const Options& o, Form form, int64_t d) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard g(f.get());
  const int64_t e = o.embed, h = 4 * o.embed;
  auto in = [&](std::vector<int64_t> shape) {
    TensorView* t = ops::TensorBuilder().shape(std::move(shape)).dtype(o.dtype).build();
    f->addInput(t);
    return t;
  };
  TensorView* x = in({o.tokens, e});
  TensorView* w1 = in({h, e});
  TensorView* b1 = in({h});
  TensorView* w2 = in({e, h});
  TensorView* b2 = in({e});
  TensorView* y = ops::linear(
      ops::cast(ops::gelu(ops::linear(x, w1, b1), ops::GeluApproximation::Tanh), o.dtype), w2, b2);
  f->addOutput(y);
  if (form != Form::Unsharded) {
    const DeviceMesh mesh = DeviceMesh::arange(d);
    shardDim(w1, 0, mesh);
    shardDim(b1, 0, mesh);
    shardDim(w2, 1, mesh);
    b2->setDeviceMesh(mesh);
    if (form == Form::SequenceParallel) {
      shardDim(x, 0, mesh);
      shardDim(y, 0, mesh);
    } else {
      x->setDeviceMesh(mesh);
      y->setDeviceMesh(mesh);
    }
  }
  return f;
}

Tensor onDevice(const Tensor& t, const Options& o) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (o.backend == exec::Backend::Cuda) return cuda::toDevice(t, 0);
#endif
  (void)o;
  return t;
}

Tensor onHost(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (t.device().isCuda()) return cuda::toHost(t);
#endif
  return t;
}

// Median over the repetitions of the slowest rank's time of one run, in microseconds; the
// output checked first. Returns -1 when the check fails.
double timeForm(const Options& o, Form form, multidevice::Communicator& comm) {
  const int64_t d = comm.size(), rank = comm.rank();
  std::unique_ptr<ir::Fusion> fusion = mlp(o, form, d);
  std::vector<eval::Argument> global;
  for (size_t i = 0; i < fusion->inputs().size(); ++i) {
    const auto* tv = fusion->inputs()[i]->as<TensorView>();
    std::vector<int64_t> sizes;
    for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
      sizes.push_back(*id->extent()->constInt());
    }
    Tensor t = Tensor::empty(sizes, tv->dtype());
    fillRandom(t, 300 + i);
    global.push_back(t);
  }
  const std::vector<Tensor> expected = eval::evaluateFusion(*fusion, global);
  std::unique_ptr<ir::Fusion> sharded = segmenter::shardedCopy(*fusion);
  std::vector<eval::Argument> local;
  for (size_t i = 0; i < global.size(); ++i) {
    const auto* tv = sharded->inputs()[i]->as<TensorView>();
    const Tensor& t = std::get<Tensor>(global[i]);
    local.push_back(onDevice(form == Form::Unsharded ? t : multidevice::shardTensor(t, tv, rank).contiguous(), o));
  }
  const auto* out_tv = sharded->outputs()[0]->as<TensorView>();
  runtime::RuntimeOptions options;
  options.backend = o.backend;
  if (form != Form::Unsharded) options.communicator = &comm;
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  const Tensor got = onHost(cache.run(local).at(0));
  const Tensor want = form == Form::Unsharded
                          ? expected[0]
                          : multidevice::shardTensor(expected[0], out_tv, rank).contiguous();
  // The tolerance is relative to the output's scale: with bf16 intermediates (h is rounded to
  // bf16 before the second linear) one intermediate rounding the other way moves an output by an
  // ulp of h times a weight, which for an output near 0 is far more than its own ulps.
  eval::Tolerance tol = eval::defaultTolerance(want.dtype(), 64 * o.embed);
  double scale = 1.0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::abs(want.getDoubleLinear(i)));
  }
  tol.atol *= scale;
  if (auto err = eval::expectClose(got, want, tol, formName(form))) {
    std::fprintf(stderr, "rank %lld: %s\n", static_cast<long long>(rank), err->c_str());
    return -1;
  }
  std::vector<double> times;
  for (int64_t r = 0; r < o.reps; ++r) {
    comm.barrier();
    const auto t0 = Clock::now();
    std::vector<Tensor> outs = cache.run(local);
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (o.backend == exec::Backend::Cuda) cuda::synchronizeDevice(0);
#endif
    const int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    const std::vector<int64_t> all = comm.allgather(ns);
    times.push_back(double(*std::max_element(all.begin(), all.end())) / 1000.0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) return false;
    ++i;
    if (a == "--tokens") {
      o.tokens = std::atoll(v);
    } else if (a == "--embed") {
      o.embed = std::atoll(v);
    } else if (a == "--reps") {
      o.reps = std::max<int64_t>(1, std::atoll(v));
    } else if (a == "--dtype" && (std::strcmp(v, "f32") == 0 || std::strcmp(v, "bf16") == 0)) {
      o.dtype = std::strcmp(v, "f32") == 0 ? DataType::Float32 : DataType::BFloat16;
    } else if (a == "--backend" && (std::strcmp(v, "host") == 0 || std::strcmp(v, "cuda") == 0)) {
      o.backend = std::strcmp(v, "host") == 0 ? exec::Backend::Host : exec::Backend::Cuda;
    } else {
      return false;
    }
  }
  return o.tokens > 0 && o.embed > 0;
}

int run(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: mpirun -np N loom_tp_bench [--tokens T] [--embed E] [--reps R] "
                         "[--dtype f32|bf16] [--backend host|cuda]\n");
    return 2;
  }
  multidevice::Communicator& comm = multidevice::Communicator::instance();
  const int64_t d = comm.size();
  if (o.tokens % d != 0 || (4 * o.embed) % d != 0) {
    if (comm.rank() == 0) {
      std::fprintf(stderr, "loom_tp_bench: the ranks (%lld) must divide the tokens and 4 x embed\n",
                   static_cast<long long>(d));
    }
    return 2;
  }
  bool ok = true;
  double unsharded = 0;
  for (Form f : {Form::Unsharded, Form::TensorParallel, Form::SequenceParallel}) {
    const double us = timeForm(o, f, comm);
    ok = ok && us >= 0;
    if (f == Form::Unsharded) unsharded = us;
    if (comm.rank() == 0 && us >= 0) {
      std::printf("mlp %-9s ranks=%lld tokens=%lld embed=%lld dtype=%s backend=%s: %.1f us "
                  "(median of %lld, slowest rank), %.2fx the unsharded run\n",
                  formName(f), static_cast<long long>(d), static_cast<long long>(o.tokens),
                  static_cast<long long>(o.embed), o.dtype == DataType::Float32 ? "f32" : "bf16",
                  o.backend == exec::Backend::Host ? "host" : "cuda", us,
                  static_cast<long long>(o.reps), us / unsharded);
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace loom::bench::tp

int main(int argc, char** argv) { return loom::bench::tp::run(argc, argv); }
