// SPDX-License-Identifier: Apache-2.0
// loom_comm_bench: allgather, allreduce and reduce-scatter timed three ways in one run under
// mpirun, to see what Loom adds to a collective (benchmarks/README.md, "loom_comm_bench"):
//   raw     MPI (CPU ranks) or NCCL (GPU ranks) called directly; when Loom stages CUDA tensors
//           through the host (ranks sharing a GPU), the same copies and MPI call done by hand;
//   comm    Loom's Communicator on loom::Tensors;
//   fusion  a sharded fusion whose only segment is the collective, through FusionExecutorCache
//           (the whole cached-run path: key lookup, output allocation, CommunicationExecutor).
//
// How it is timed, and why. A collective is only as fast as its slowest rank, and a rank's
// clock starts when it leaves the barrier, which ranks do at different moments: timing one call
// per barrier would add that skew to every small call. So each repetition is a barrier and then
// a batch of K calls back to back (K picked per size so that a batch lasts about 2 ms; 1 for
// large sizes), and a repetition's time per call is the slowest rank's batch time over K. The
// three ways take turns within every repetition, in an order that changes, so that a change in
// the machine's load (other processes, the CPU clock) lands on all of them alike. GPU times
// come from CUDA events around the batch; the host time of a call on a GPU rank is the CPU time
// to issue it (before the stream is synchronized). Each way's result is checked once per size
// against values every rank computes: the inputs are small integers, so every sum is exact in
// fp32 whatever order MPI or NCCL add in, and a block in the wrong place shows.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "benchmarks/bench_cli.h"
#include "benchmarks/bench_report.h"
#include "benchmarks/comm_bench_cli.h"
#include "loom/ir/ir.h"
#include "loom/multidevice/communicator.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/stream.h"
#include "multidevice/nccl_api.h"  // the NCCL Loom opens, called directly for the raw column
#endif

namespace loom::bench::comm {
namespace {

using Clock = std::chrono::steady_clock;
using multidevice::Communicator;
using multidevice::Transport;

constexpr int kExitFailed = 1;
constexpr int kExitUnavailable = 2;
constexpr int64_t kItem = sizeof(float);
// A repetition's length the automatic batch aims at, and its bounds.
constexpr double kBatchTargetUs = 2000;
constexpr int64_t kMaxBatchHost = 1000;
// NCCL calls are queued: keep a batch well inside the GPU's launch queue, or the host would
// block in the middle of it and its issue time would include the wait.
constexpr int64_t kMaxBatchGpu = 200;

double usSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void checkMpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, size_t(len)));
}

// Element i of rank r's input: a small integer (see the file comment).
float pattern(int64_t rank, int64_t i) { return float(int((i * 7 + rank * 13) % 31) - 15); }

// Element i of the sum over `ranks` ranks' inputs, summed in integers.
float sumOverRanks(int64_t ranks, int64_t i) {
  int64_t s = 0;
  for (int64_t r = 0; r < ranks; ++r) s += int64_t(pattern(r, i));
  return float(s);
}

// The raw way: what Loom's transport does, called directly.
enum class Raw { Local, Mpi, Nccl, Staged };

const char* rawLabel(Raw raw) {
  switch (raw) {
    case Raw::Local: return "copy";
    case Raw::Mpi: return "MPI";
    case Raw::Nccl: return "NCCL";
    case Raw::Staged: return "copies+MPI";
  }
  return "?";
}

// Where the buffers live: host memory, or one GPU with its stream.
class Place {
 public:
  Place() = default;
#ifdef LOOM_HAVE_CUDA_BACKEND
  explicit Place(int gpu)
      : cuda_(true),
        gpu_(gpu),
        stream_(cuda::Stream::create(gpu)),
        start_(cuda::Event::create(gpu)),
        stop_(cuda::Event::create(gpu)) {}
#endif
  bool cuda() const { return cuda_; }
  int gpu() const { return gpu_; }
  CUstream stream() const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    return stream_ ? stream_->handle() : nullptr;
#else
    return nullptr;
#endif
  }

  Tensor empty(std::vector<int64_t> sizes) const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (cuda_) return cuda::emptyCuda(std::move(sizes), DataType::Float32, gpu_, stream());
#endif
    return Tensor::empty(std::move(sizes), DataType::Float32);
  }

  // Element i of t = value(i).
  void fill(const Tensor& t, const std::function<float(int64_t)>& value) const {
    Tensor host = cuda_ ? Tensor::empty(t.sizes(), DataType::Float32) : t;
    float* p = host.dataAs<float>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = value(i);
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (cuda_) cuda::copyHostToDevice(t.data(), p, size_t(t.numel()) * kItem, gpu_, stream());
#endif
  }

  // t as host memory: itself on the host, a copy from the GPU.
  Tensor read(const Tensor& t) const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (cuda_) return cuda::toHost(t, stream());
#endif
    return t;
  }

  void sync() const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (cuda_) stream_->synchronize();
#endif
  }

  // Times `body` (a batch of calls): returns {time per batch in us, host time to issue it in
  // us}. On a GPU the time is the CUDA events' around the batch, on the host the wall time.
  std::pair<double, double> time(const std::function<void()>& body) const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (cuda_) {
      start_->record(stream());
      const auto t0 = Clock::now();
      body();
      const double host = usSince(t0);
      stop_->record(stream());
      stop_->synchronize();
      return {double(cuda::Event::elapsedMs(*start_, *stop_)) * 1e3, host};
    }
#endif
    const auto t0 = Clock::now();
    body();
    const double host = usSince(t0);
    return {host, host};
  }

 private:
  bool cuda_ = false;
  int gpu_ = 0;
#ifdef LOOM_HAVE_CUDA_BACKEND
  std::optional<cuda::Stream> stream_;
  std::optional<cuda::Event> start_, stop_;
#endif
};

#ifdef LOOM_HAVE_CUDA_BACKEND
// The raw NCCL communicator: the same library Loom opened, initialized like Loom's (the first
// rank makes the id, MPI carries it), destroyed before MPI is finalized.
class RawNccl {
 public:
  RawNccl(MPI_Comm world, int64_t rank, int64_t size, int gpu) {
    namespace nccl = multidevice::nccl;
    api_ = &nccl::api("the raw NCCL column of loom_comm_bench");
    nccl::UniqueId id{};
    if (rank == 0) nccl::check(*api_, api_->ncclGetUniqueId(&id), "ncclGetUniqueId");
    checkMpi(MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0, world), "MPI_Bcast");
    cuda::makeCurrent(gpu);
    nccl::check(*api_, api_->ncclCommInitRank(&comm_, int(size), id, int(rank)),
                "ncclCommInitRank");
  }
  ~RawNccl() {
    if (comm_ != nullptr) api_->ncclCommDestroy(comm_);
  }
  RawNccl(const RawNccl&) = delete;
  RawNccl& operator=(const RawNccl&) = delete;
  const multidevice::nccl::Api& api() const { return *api_; }
  multidevice::nccl::Comm comm() const { return comm_; }
  int version() const { return api_->version; }

 private:
  const multidevice::nccl::Api* api_ = nullptr;
  multidevice::nccl::Comm comm_ = nullptr;
};
#endif

// One way of doing the collective on buffers of one size.
struct Way {
  std::string name;
  std::function<void()> call;       ///< one collective (queued on the stream on a GPU)
  std::function<Tensor()> checked;  ///< inputs refilled, one call, its output
};

// Every figure of one row, medians and minima over the repetitions.
struct WayResult {
  bool present = false;
  Summary time;  // us per call
  Summary host;  // us per call
};

struct Row {
  Collective collective;
  int64_t bytes = 0;
  std::string transport;
  int64_t batch = 0;
  WayResult raw, comm, fusion;
  bool ok = true;
};

// The buffers every way works on: the same memory for all three (the fusion's input is a view
// of `in`, its output is its own), so that where memory lies cannot favour one way. On the
// loaded VM, buffers allocated later ran a 64 MiB allgather 10-20% faster than earlier ones.
struct Buffers {
  Tensor in, out;  // the same tensor for allreduce (in place)
  int64_t elems = 0;
};

class Bench {
 public:
  Bench(const Options& options, MPI_Comm world, Communicator& comm, Place& place, Raw raw)
      : options_(options),
        world_(world),
        comm_(comm),
        place_(place),
        raw_(raw),
        team_(comm.world()),
        rank_(comm.rank()),
        ranks_(comm.size()) {}

#ifdef LOOM_HAVE_CUDA_BACKEND
  void setRawNccl(const RawNccl* nccl) { nccl_ = nccl; }
#endif

  Row run(Collective c, int64_t bytes);

 private:
  void barrier() const { checkMpi(MPI_Barrier(world_), "MPI_Barrier"); }
  double maxOverRanks(double v) const {
    checkMpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, world_), "MPI_Allreduce");
    return v;
  }
  void hostCollective(Collective c, const void* in, void* out, int64_t n) const;
  void rawCall(Collective c, const Tensor& in, const Tensor& out, int64_t n);
  Way rawWay(Collective c, const Buffers& b, const std::function<float(int64_t)>& input);
  Way commWay(Collective c, const Buffers& b, const std::function<float(int64_t)>& input);
  Way fusionWay(Collective c, const Buffers& b, const std::function<float(int64_t)>& input);
  std::string describeFusion(runtime::FusionExecutorCache& cache) const;

  const Options& options_;
  MPI_Comm world_;
  Communicator& comm_;
  Place& place_;
  Raw raw_;
#ifdef LOOM_HAVE_CUDA_BACKEND
  const RawNccl* nccl_ = nullptr;
#endif
  multidevice::Team team_;
  int64_t rank_;
  int64_t ranks_;
  // Host buffers of the hand-staged raw way, kept from size to size (touched once).
  Tensor stage_in_, stage_out_;
  bool described_fusion_[3] = {false, false, false};
};

// MPI on host buffers: `n` is the element count of the in-place buffer (allreduce), or of each
// rank's block (allgather's input, reduce-scatter's output).
void Bench::hostCollective(Collective c, const void* in, void* out, int64_t n) const {
  switch (c) {
    case Collective::Allgather:
      checkMpi(MPI_Allgather(in, int(n), MPI_FLOAT, out, int(n), MPI_FLOAT, world_),
               "MPI_Allgather");
      return;
    case Collective::Allreduce:
      checkMpi(MPI_Allreduce(MPI_IN_PLACE, out, int(n), MPI_FLOAT, MPI_SUM, world_),
               "MPI_Allreduce");
      return;
    case Collective::ReduceScatter:
      checkMpi(MPI_Reduce_scatter_block(in, out, int(n), MPI_FLOAT, MPI_SUM, world_),
               "MPI_Reduce_scatter_block");
      return;
  }
}

// One raw collective from `in` to `out` (the same tensor for allreduce); `n` as above.
void Bench::rawCall(Collective c, const Tensor& in, const Tensor& out, int64_t n) {
  const size_t inBytes = size_t(in.numel()) * kItem;
  const size_t outBytes = size_t(out.numel()) * kItem;
  switch (raw_) {
    case Raw::Mpi: hostCollective(c, in.data(), out.data(), n); return;
    case Raw::Local:
      // A team of one: Loom copies (allgather, reduce-scatter) or does nothing (allreduce).
      if (c == Collective::Allreduce) return;
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (place_.cuda()) {
        cuda::copyDeviceToDevice(out.data(), in.data(), outBytes, place_.gpu(), place_.stream());
        return;
      }
#endif
      std::memcpy(out.data(), in.data(), outBytes);
      return;
#ifdef LOOM_HAVE_CUDA_BACKEND
    case Raw::Staged: {
      // The copies Loom's staged transport makes, by hand, into host buffers made once.
      const int gpu = place_.gpu();
      if (c == Collective::Allreduce) {
        cuda::copyDeviceToHost(stage_out_.data(), out.data(), outBytes, gpu, place_.stream());
        hostCollective(c, nullptr, stage_out_.data(), n);
      } else {
        cuda::copyDeviceToHost(stage_in_.data(), in.data(), inBytes, gpu, place_.stream());
        hostCollective(c, stage_in_.data(), stage_out_.data(), n);
      }
      cuda::copyHostToDevice(out.data(), stage_out_.data(), outBytes, gpu, place_.stream());
      return;
    }
    case Raw::Nccl: {
      namespace nccl = multidevice::nccl;
      const nccl::Api& api = nccl_->api();
      const CUstream s = place_.stream();
      nccl::Result r = nccl::kSuccess;
      switch (c) {
        case Collective::Allgather:
          r = api.ncclAllGather(in.data(), out.data(), size_t(n), nccl::kFloat32, nccl_->comm(), s);
          break;
        case Collective::Allreduce:
          r = api.ncclAllReduce(out.data(), out.data(), size_t(n), nccl::kFloat32, nccl::kSum,
                                nccl_->comm(), s);
          break;
        case Collective::ReduceScatter:
          r = api.ncclReduceScatter(in.data(), out.data(), size_t(n), nccl::kFloat32, nccl::kSum,
                                    nccl_->comm(), s);
          break;
      }
      nccl::check(api, r, "raw NCCL collective");
      return;
    }
#else
    case Raw::Staged:
    case Raw::Nccl: break;
#endif
  }
  (void)inBytes;
  throw std::runtime_error("raw transport unavailable in this build");
}

// Input and output shapes of rank-local buffers. `elems` is the size in elements (bytes / 4),
// `block` = elems / ranks.
struct Shapes {
  std::vector<int64_t> in, out;
  int64_t count;  // the element count the collective call takes
};

Shapes shapesOf(Collective c, int64_t elems, int64_t block) {
  switch (c) {
    case Collective::Allgather: return {{block}, {elems}, block};
    case Collective::Allreduce: return {{elems}, {elems}, elems};
    case Collective::ReduceScatter: return {{elems}, {block}, block};
  }
  return {};
}

Way Bench::rawWay(Collective c, const Buffers& b, const std::function<float(int64_t)>& input) {
  const int64_t elems = b.elems;
  const Shapes s = shapesOf(c, elems, elems / ranks_);
  const Tensor in = b.in, out = b.out;
  if (raw_ == Raw::Staged) {
    if (!stage_in_.defined() || stage_in_.numel() < elems) {
      stage_in_ = Tensor::empty({elems}, DataType::Float32);
      stage_out_ = Tensor::empty({elems}, DataType::Float32);
      std::memset(stage_in_.data(), 0, size_t(elems) * kItem);  // touch the pages once
      std::memset(stage_out_.data(), 0, size_t(elems) * kItem);
    }
  }
  Way w;
  w.name = "raw";
  w.call = [this, c, in, out, n = s.count] { rawCall(c, in, out, n); };
  w.checked = [this, c, in, out, n = s.count, input] {
    place_.fill(in, input);
    rawCall(c, in, out, n);
    place_.sync();
    return out;
  };
  return w;
}

Way Bench::commWay(Collective c, const Buffers& b, const std::function<float(int64_t)>& input) {
  auto in = std::make_shared<Tensor>(b.in);
  auto out = c == Collective::Allreduce ? in : std::make_shared<Tensor>(b.out);
  Way w;
  w.name = "comm";
  w.call = [this, c, in, out] {
    switch (c) {
      case Collective::Allgather: comm_.allgather(*in, *out, team_, place_.stream()); return;
      case Collective::Allreduce:
        comm_.allreduce(*out, multidevice::ReduceOp::Sum, team_, place_.stream());
        return;
      case Collective::ReduceScatter:
        comm_.reduceScatter(*in, *out, multidevice::ReduceOp::Sum, team_, place_.stream());
        return;
    }
  };
  w.checked = [this, in, out, input, call = w.call] {
    place_.fill(*in, input);
    call();
    place_.sync();
    return *out;
  };
  return w;
}

// The fusion whose only segment is the collective (docs/multidevice.md):
//   allgather       y = set(x), x [elems] sharded on DIDx, y replicated
//   allreduce       y = sum(x, {0}), x [ranks, elems] sharded on dim 0 (one row per device)
//   reduce_scatter  the same sum with y sharded on DIDx along its dim
Way Bench::fusionWay(Collective c, const Buffers& b, const std::function<float(int64_t)>& input) {
  const int64_t elems = b.elems;
  const ir::DeviceMesh mesh = ir::DeviceMesh::arange(ranks_);
  auto shard = [&](ir::TensorView* tv, int64_t axis) {
    tv->setDeviceMesh(mesh);
    tv->outerSplit(axis, ranks_);
    tv->axis(axis)->parallelize(ir::ParallelType::DIDx);
  };
  auto fusion = std::make_unique<ir::Fusion>();
  std::vector<int64_t> local;
  {
    ir::FusionGuard guard(fusion.get());
    if (c == Collective::Allgather) {
      ir::TensorView* x = ops::TensorBuilder().shape({elems}).dtype(DataType::Float32).build();
      fusion->addInput(x);
      shard(x, 0);
      ir::TensorView* y = ops::set(x);
      y->setDeviceMesh(mesh);
      fusion->addOutput(y);
      local = {elems / ranks_};
    } else {
      ir::TensorView* x =
          ops::TensorBuilder().shape({ranks_, elems}).dtype(DataType::Float32).build();
      fusion->addInput(x);
      shard(x, 0);
      ir::TensorView* y = ops::sum(x, {0});
      if (c == Collective::ReduceScatter) shard(y, 1);  // loop [r, elems]: the iteration dim
      fusion->addOutput(y);
      local = {1, elems};
    }
  }
  runtime::RuntimeOptions opts;
  opts.backend = place_.cuda() ? exec::Backend::Cuda : exec::Backend::Host;
  opts.executor.stream = place_.stream();
  opts.communicator = &comm_;
  if (place_.cuda()) opts.gpu = place_.gpu();
  auto cache = std::make_shared<runtime::FusionExecutorCache>(std::move(fusion), opts);
  auto args = std::make_shared<std::vector<eval::Argument>>();
  // This rank's shard is the shared input: [block] as it is, [1, elems] as a view.
  args->emplace_back(Tensor(b.in.storage(), DataType::Float32, local,
                            Tensor::contiguousStrides(local), b.in.offset()));
  Way w;
  w.name = "fusion";
  // The outputs go when the call returns, as a caller's would after use.
  w.call = [cache, args] { (void)cache->run(*args); };
  w.checked = [this, c, cache, args, input] {
    place_.fill(std::get<Tensor>((*args)[0]), input);
    std::vector<Tensor> outs = cache->run(*args);
    place_.sync();
    const size_t k = size_t(c);
    if (!described_fusion_[k] && rank_ == 0) {
      std::cout << "# " << collectiveName(c) << " fusion: " << describeFusion(*cache) << "\n";
    }
    described_fusion_[k] = true;
    return outs.at(0);
  };
  return w;
}

std::string Bench::describeFusion(runtime::FusionExecutorCache& cache) const {
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  if (rt == nullptr) return "no runtime";
  std::string comms;
  for (int64_t s = 0; s < rt->numSegments(); ++s) {
    if (const runtime::CommunicationExecutor* ce = rt->communication(s)) {
      comms += (comms.empty() ? "" : ", ") + ce->communication().toString();
    }
  }
  return std::to_string(rt->numSegments()) + " segment(s): " + std::to_string(rt->numKernels()) +
         " kernel(s), communications [" + comms + "]";
}

Row Bench::run(Collective c, int64_t bytes) {
  Row row;
  row.collective = c;
  row.bytes = bytes;
  const int64_t elems = bytes / kItem;
  const int64_t block = elems / ranks_;
  const int64_t rank = rank_, ranks = ranks_;
  // Each rank's input and the output it must end with.
  std::function<float(int64_t)> input, expected;
  switch (c) {
    case Collective::Allgather:
      input = [rank](int64_t i) { return pattern(rank, i); };
      expected = [block](int64_t i) { return pattern(i / block, i % block); };
      break;
    case Collective::Allreduce:
      input = [rank](int64_t i) { return pattern(rank, i); };
      expected = [ranks](int64_t i) { return sumOverRanks(ranks, i); };
      break;
    case Collective::ReduceScatter:
      input = [rank](int64_t i) { return pattern(rank, i); };
      expected = [ranks, rank, block](int64_t i) { return sumOverRanks(ranks, rank * block + i); };
      break;
  }

  Buffers buffers;
  buffers.elems = elems;
  const Shapes shapes = shapesOf(c, elems, block);
  buffers.in = place_.empty(shapes.in);
  buffers.out = c == Collective::Allreduce ? buffers.in : place_.empty(shapes.out);
  std::vector<Way> ways;
  ways.push_back(rawWay(c, buffers, input));
  ways.push_back(commWay(c, buffers, input));
  // A mesh of one device issues no communication: the fusion would time a local copy.
  if (ranks_ > 1) ways.push_back(fusionWay(c, buffers, input));

  // The check, once per size: every way from the same inputs to the expected output.
  int bad = 0;
  for (Way& w : ways) {
    barrier();
    Tensor got = place_.read(w.checked());
    if (w.name == "comm")
      row.transport = std::string(multidevice::transportName(comm_.lastTransport()));
    float* p = got.dataAs<float>();
    if (options_.corruptForTest && w.name != "raw" && got.numel() > 0) p[0] += 1;
    for (int64_t i = 0, n = got.numel(); i < n; ++i) {
      if (p[i] != expected(i)) {
        std::cerr << "rank " << rank_ << ": " << collectiveName(c) << " " << bytesLabel(bytes)
                  << ", " << w.name << ": element " << i << " is " << p[i] << ", expected "
                  << expected(i) << "\n";
        bad = 1;
        break;
      }
    }
  }
  // Repeated in-place sums would grow without bound: allreduce is timed on zeros (the fusion
  // reads the same buffer, so it sums zeros too).
  if (c == Collective::Allreduce) place_.fill(buffers.in, [](int64_t) { return 0.0f; });
  place_.sync();
  row.ok = maxOverRanks(double(bad)) == 0;

  for (Way& w : ways) {
    barrier();
    for (int64_t k = 0; k < options_.warmup; ++k) w.call();
    place_.sync();
  }
  // The batch: enough raw calls for about kBatchTargetUs per repetition, the same on every rank.
  // The median of a few single calls, so that one call slowed by another process on the machine
  // does not shrink the batch to one.
  int64_t batch = options_.batch;
  if (batch == 0) {
    constexpr int kProbe = 5;
    std::vector<double> probe;
    barrier();
    for (int k = 0; k < kProbe; ++k) {
      const auto t0 = Clock::now();
      ways[0].call();
      place_.sync();
      probe.push_back(usSince(t0));
    }
    const double perCall = maxOverRanks(summarize(probe).median);
    const int64_t cap = place_.cuda() ? kMaxBatchGpu : kMaxBatchHost;
    batch = std::clamp<int64_t>(int64_t(std::llround(kBatchTargetUs / std::max(perCall, 0.01))), 1,
                                cap);
  }
  row.batch = batch;

  // Repetitions: the ways take turns, in the next of their orders each repetition. Every order
  // (not only rotations) so that each way follows each other way about as often: a way that
  // leaves work behind (the fusion unmapping a large output) must not always precede the same one.
  const int64_t reps = options_.iters;
  const size_t nw = ways.size();
  std::vector<size_t> order(nw);
  for (size_t j = 0; j < nw; ++j) order[j] = j;
  std::vector<double> times(nw * size_t(reps) * 2, 0.0);  // [way][rep][time, host]
  for (int64_t rep = 0; rep < reps; ++rep) {
    if (rep > 0) std::next_permutation(order.begin(), order.end());
    for (size_t j = 0; j < nw; ++j) {
      const size_t wi = order[j];
      Way& w = ways[wi];
      barrier();
      auto [perBatch, issue] = place_.time([&] {
        for (int64_t k = 0; k < batch; ++k) w.call();
      });
      place_.sync();
      times[(wi * size_t(reps) + size_t(rep)) * 2] = perBatch / double(batch);
      times[(wi * size_t(reps) + size_t(rep)) * 2 + 1] = issue / double(batch);
    }
  }
  // A repetition takes as long as its slowest rank.
  checkMpi(
      MPI_Allreduce(MPI_IN_PLACE, times.data(), int(times.size()), MPI_DOUBLE, MPI_MAX, world_),
      "MPI_Allreduce");
  WayResult* results[] = {&row.raw, &row.comm, &row.fusion};
  for (size_t wi = 0; wi < nw; ++wi) {
    std::vector<double> t, h;
    for (int64_t rep = 0; rep < reps; ++rep) {
      t.push_back(times[(wi * size_t(reps) + size_t(rep)) * 2]);
      h.push_back(times[(wi * size_t(reps) + size_t(rep)) * 2 + 1]);
    }
    results[wi]->present = true;
    results[wi]->time = summarize(t);
    results[wi]->host = summarize(h);
  }
  return row;
}

// ---- the report ----

std::string num(double v, int digits) { return fixed(v, digits); }

struct Derived {
  double algbw = 0, busbw = 0;
};

Derived derive(const Row& row, const WayResult& w, int64_t ranks) {
  Derived d;
  if (!w.present) return d;
  d.algbw = algbwGBps(row.bytes, w.time.median);
  d.busbw = d.algbw * busFactor(row.collective, ranks);
  return d;
}

// Raw time over Loom's (= Loom's bandwidth over raw's): 1.00 is parity.
double ratio(const WayResult& raw, const WayResult& loom) {
  return loom.time.median > 0 ? raw.time.median / loom.time.median : 0;
}

// Host time per call above raw's: on CPU ranks the whole call, on GPU ranks the issue.
double hostAbove(const WayResult& raw, const WayResult& loom) {
  return loom.host.median - raw.host.median;
}

std::vector<std::string> tableRow(const Row& r, int64_t ranks) {
  const Derived raw = derive(r, r.raw, ranks), comm = derive(r, r.comm, ranks),
                fus = derive(r, r.fusion, ranks);
  auto opt = [](bool present, const std::string& text) { return present ? text : "-"; };
  const bool bus = ranks > 1;
  return {std::string(collectiveName(r.collective)),
          bytesLabel(r.bytes),
          r.transport,
          std::to_string(r.batch),
          num(r.raw.time.median, 1),
          num(r.comm.time.median, 1),
          opt(r.fusion.present, num(r.fusion.time.median, 1)),
          num(raw.algbw, 2),
          opt(bus, num(raw.busbw, 2)),
          opt(bus, num(comm.busbw, 2)),
          opt(bus && r.fusion.present, num(fus.busbw, 2)),
          num(ratio(r.raw, r.comm), 2),
          opt(r.fusion.present, num(ratio(r.raw, r.fusion), 2)),
          num(hostAbove(r.raw, r.comm), 1),
          opt(r.fusion.present, num(hostAbove(r.raw, r.fusion), 1)),
          r.ok ? "ok" : "FAIL"};
}

void writeCsv(const std::string& path, const std::vector<Row>& rows, int64_t ranks,
              const std::string& backend, const std::string& rawName) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "collective,bytes,ranks,backend,transport,raw,batch";
  for (const char* w : {"raw", "comm", "fusion"}) {
    out << "," << w << "_us," << w << "_min_us," << w << "_host_us," << w << "_host_min_us," << w
        << "_algbw_gbps," << w << "_busbw_gbps";
  }
  out << ",comm_over_raw,fusion_over_raw,comm_host_above_us,fusion_host_above_us,check\n";
  for (const Row& r : rows) {
    out << collectiveName(r.collective) << "," << r.bytes << "," << ranks << "," << backend << ","
        << r.transport << "," << rawName << "," << r.batch;
    for (const WayResult* w : {&r.raw, &r.comm, &r.fusion}) {
      const Derived d = derive(r, *w, ranks);
      if (!w->present) {
        out << ",,,,,,";
        continue;
      }
      out << "," << num(w->time.median, 3) << "," << num(w->time.min, 3) << ","
          << num(w->host.median, 3) << "," << num(w->host.min, 3) << "," << num(d.algbw, 4) << ","
          << num(d.busbw, 4);
    }
    out << "," << num(ratio(r.raw, r.comm), 4) << ","
        << (r.fusion.present ? num(ratio(r.raw, r.fusion), 4) : "") << ","
        << num(hostAbove(r.raw, r.comm), 3) << ","
        << (r.fusion.present ? num(hostAbove(r.raw, r.fusion), 3) : "") << ","
        << (r.ok ? "ok" : "FAIL") << "\n";
  }
}

std::string mpiLibrary() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, size_t(len));
  if (auto nl = s.find_first_of("\n,"); nl != std::string::npos) s.resize(nl);
  return s;
}

// The sizes this run keeps: rounded to whole elements per rank, and within what memory holds
// (about 5 buffers of the size per rank: inputs and outputs of the three ways, the check's copy).
std::vector<int64_t> sizesToRun(const Options& options, const Communicator& comm,
                                const Place& place, std::string& note) {
  const int64_t defaultMax = place.cuda() ? int64_t(1) << 30 : int64_t(64) << 20;
  int64_t limit = int64_t(1) << 40;
  const int64_t host = int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
  if (host > 0) limit = std::min(limit, host / 2 / (5 * comm.localSize()));
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (place.cuda()) {
    const int gpus = std::max(1, cuda::deviceCount());
    const int64_t perGpu = (comm.localSize() + gpus - 1) / gpus;
    const auto total = int64_t(cuda::deviceProperties(place.gpu()).totalMemory);
    limit = std::min(limit, total * 8 / 10 / (5 * perGpu));
  }
#endif
  limit = std::min(limit, int64_t(INT32_MAX) * kItem);  // MPI counts are ints
  std::vector<int64_t> out;
  for (int64_t s : sweep(options, defaultMax)) {
    if (s > limit) {
      note = "sizes above " + bytesLabel(limit) + " skipped: memory (5 buffers of the size per " +
             "rank) or MPI's int counts";
      continue;
    }
    const int64_t r = roundToRanks(s, comm.size(), kItem);
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

int runBench(const Options& options) {
  MPI_Comm world = MPI_COMM_NULL;
  checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
  int exitCode = 0;
  {
    Communicator comm;
    const bool root = comm.rank() == 0;
    const bool cuda = options.backend == "cuda";
    Place place;
    Raw raw = comm.size() == 1 ? Raw::Local : Raw::Mpi;
#ifdef LOOM_HAVE_CUDA_BACKEND
    std::unique_ptr<RawNccl> nccl;
    std::string gpuName;
    if (cuda) {
      if (!cuda::cudaAvailable()) {
        if (root) std::cerr << "loom_comm_bench: " << cuda::unavailableReason() << "\n";
        MPI_Comm_free(&world);
        return kExitUnavailable;
      }
      const int gpus = cuda::deviceCount();
      if (options.cudaTransport == "nccl" && comm.localSize() > gpus) {
        if (root) {
          std::cerr << "loom_comm_bench: --cuda-transport nccl with " << comm.localSize()
                    << " ranks on " << gpus
                    << " GPU(s): NCCL cannot put two ranks of one communicator on one GPU\n";
        }
        MPI_Comm_free(&world);
        return kExitUnavailable;
      }
      comm.setCudaTransport(options.cudaTransport == "nccl"     ? multidevice::CudaTransport::Nccl
                            : options.cudaTransport == "staged" ? multidevice::CudaTransport::Staged
                                                                : multidevice::CudaTransport::Auto);
      place = Place(comm.gpuIndex(gpus));
      cuda::makeCurrent(place.gpu());
      gpuName = cuda::deviceProperties(place.gpu()).name;
    }
#else
    if (cuda) {
      if (root) std::cerr << "loom_comm_bench: this build has no CUDA backend\n";
      MPI_Comm_free(&world);
      return kExitUnavailable;
    }
#endif
    // Loom's transport for these tensors decides what the raw way does.
    {
      Tensor probe = place.empty({comm.size()});
      place.fill(probe, [](int64_t) { return 1.0f; });
      comm.allreduce(probe, multidevice::ReduceOp::Sum, comm.world(), place.stream());
      place.sync();
    }
    const Transport transport = comm.lastTransport();
    switch (transport) {
      case Transport::Local: raw = Raw::Local; break;
      case Transport::Mpi: raw = Raw::Mpi; break;
      case Transport::Nccl: raw = Raw::Nccl; break;
      case Transport::Staged: raw = Raw::Staged; break;
      case Transport::None: break;
    }
    std::string note;
    const std::vector<int64_t> sizes = sizesToRun(options, comm, place, note);
    Bench bench(options, world, comm, place, raw);
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (raw == Raw::Nccl) {
      nccl = std::make_unique<RawNccl>(world, comm.rank(), comm.size(), place.gpu());
      bench.setRawNccl(nccl.get());
    }
#endif
    if (root) {
      std::cout << "# loom_comm_bench " << utcTimestamp() << ": " << comm.size() << " rank(s) ("
                << comm.source() << ", " << comm.localSize() << " on this node), backend "
                << options.backend;
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (cuda) std::cout << " (" << gpuName << ", " << cuda::deviceCount() << " GPU(s))";
#endif
      std::cout << ", fp32, " << options.iters << " repetitions, " << options.warmup
                << " warm-up calls\n"
                << "# MPI: " << mpiLibrary() << "\n";
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (nccl) std::cout << "# NCCL " << multidevice::nccl::versionText(nccl->version()) << "\n";
#endif
      std::cout << "# transport: Loom's (lastTransport()); raw: " << rawLabel(raw);
      if (raw == Raw::Staged) {
        std::cout << " (cuMemcpy device to host, MPI on host buffers made once, host to device: "
                     "the staged transport's steps by hand)";
      } else if (raw == Raw::Local) {
        std::cout << " (a team of one: the copy Loom makes; nothing for allreduce)";
      }
      std::cout << "\n# " << sizeMeaning() << "\n"
                << "# us: median time per call over the repetitions (a repetition: barrier, then "
                   "`batch` calls; its time is the slowest rank's over batch); "
                << (cuda ? "CUDA events around the batch" : "wall time") << "\n"
                << "# algbw = bytes / us (GB/s, 1e9 B/s); busbw = algbw * (n-1)/n (allgather, "
                   "reduce_scatter) or algbw * 2(n-1)/n (allreduce), as nccl-tests\n"
                << "# comm/raw, fusion/raw: raw time / Loom time (= Loom busbw / raw busbw); "
                   "goal >= 0.95 from 1 MiB\n"
                << "# +us: host time per call above raw (median; "
                << (cuda ? "GPU ranks: the CPU time to issue the call, before the stream is "
                           "synchronized"
                         : "CPU ranks: the whole call")
                << "); goal <= 10 us\n";
      if (comm.size() == 1) {
        std::cout << "# fusion: '-' (a mesh of one device issues no communication); busbw: '-' "
                     "(one rank)\n";
      }
      if (!note.empty()) std::cout << "# " << note << "\n";
      std::cout << std::flush;
    }
    std::vector<Row> rows;
    for (Collective c : options.collectives) {
      for (int64_t bytes : sizes) {
        Row r = bench.run(c, bytes);
        if (root) {
          std::cout << "# " << collectiveName(r.collective) << " " << bytesLabel(r.bytes)
                    << ": raw " << num(r.raw.time.median, 1) << " us, comm "
                    << num(r.comm.time.median, 1) << " us";
          if (r.fusion.present) std::cout << ", fusion " << num(r.fusion.time.median, 1) << " us";
          std::cout << (r.ok ? "" : "  FAIL") << std::endl;
        }
        if (!r.ok) exitCode = kExitFailed;
        rows.push_back(std::move(r));
      }
    }
    if (root) {
      std::vector<std::vector<std::string>> table;
      for (const Row& r : rows) table.push_back(tableRow(r, comm.size()));
      std::cout << formatTable({"collective", "bytes", "transport", "batch", "raw us", "comm us",
                                "fusion us", "raw algbw", "raw busbw", "comm busbw", "fusion busbw",
                                "comm/raw", "fusion/raw", "comm +us", "fusion +us", "check"},
                               table, 3);
      // The goal (shared/docs/performance.md): from 1 MiB within 5%, and at most 10 us above.
      // A team of one without NCCL compares Loom's copy (or nothing, for allreduce) with itself.
      if (raw == Raw::Local) {
        std::cout << "# goal: not judged (a team of one moves nothing between ranks)\n";
      } else {
        int64_t considered = 0, commOk = 0, fusionOk = 0;
        auto meets = [](const WayResult& base, const WayResult& loom) {
          return loom.present && ratio(base, loom) >= 0.95 && hostAbove(base, loom) <= 10;
        };
        for (const Row& r : rows) {
          if (r.bytes < (int64_t(1) << 20)) continue;
          ++considered;
          commOk += meets(r.raw, r.comm) ? 1 : 0;
          fusionOk += meets(r.raw, r.fusion) ? 1 : 0;
        }
        std::cout << "# goal (rows of 1 MiB and up: Loom/raw >= 0.95 and +us <= 10): comm "
                  << commOk << " of " << considered << ", fusion " << fusionOk << " of "
                  << considered << "\n";
      }
      if (!options.csvPath.empty()) {
        writeCsv(options.csvPath, rows, comm.size(), options.backend, rawLabel(raw));
      }
      std::cout << (exitCode == 0 ? "# every result checked: ok" : "# a result was WRONG: FAIL")
                << std::endl;
    }
    comm.releaseTeams();  // collective: before the raw communicators and MPI go
  }
  MPI_Comm_free(&world);
  return exitCode;
}

}  // namespace
}  // namespace loom::bench::comm

int main(int argc, char** argv) {
  namespace cb = loom::bench::comm;
  cb::Options options;
  try {
    options = cb::parseArgs(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const loom::bench::UsageError& e) {
    std::cerr << "loom_comm_bench: " << e.what() << "\n" << cb::usage();
    return cb::kExitUnavailable;
  }
  if (options.help) {
    std::cout << cb::usage();
    return 0;
  }
  // MPI is this program's: Loom's Communicator finds it initialized and leaves it to us.
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::cerr << "loom_comm_bench: MPI_Init_thread failed\n";
    return cb::kExitUnavailable;
  }
  int rc = 0;
  try {
    rc = cb::runBench(options);
  } catch (const std::exception& e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::cerr << "loom_comm_bench: rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, cb::kExitFailed);
  }
  MPI_Finalize();
  return rc;
}
