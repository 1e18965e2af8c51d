// SPDX-License-Identifier: Apache-2.0
// One failing rank in a job of two, run by mpi_failures_test.sh under mpirun -np 2: each case
// makes rank 1 (or both ranks) do one wrong thing while rank 0 runs a sharded fusion (a sum over
// the sharded dim: an Allreduce) or a collective, and the script checks that the job ends within
// seconds, with a non-zero status and the reason printed by every rank.
//
//   mpi_failure_cases CASE      CASE: ok, throw, exit3, exit0, run-throws, barrier-vs-run,
//                               team-order, timeout, team-timeout
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "loom/ir/ir.h"
#include "loom/multidevice/communicator.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"

namespace {

using namespace loom;

// The sum over dim 0 of x [2 * d, 3] sharded on dim 0 over every rank.
std::vector<Tensor> runSharded(multidevice::Communicator& comm, int64_t extraArguments = 0) {
  const int64_t d = comm.size();
  auto fusion = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard g(fusion.get());
    auto* x = ops::TensorBuilder().shape({2 * d, 3}).dtype(DataType::Float32).build();
    fusion->addInput(x);
    x->setDeviceMesh(ir::DeviceMesh::arange(d));
    x->outerSplit(0, d);
    x->axis(0)->parallelize(ir::ParallelType::DIDx);
    fusion->addOutput(ops::sum(x, {0}));
  }
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  options.communicator = &comm;
  runtime::FusionExecutorCache cache(std::move(fusion), options);
  Tensor local = Tensor::empty({2, 3}, DataType::Float32);
  local.fill(double(comm.rank() + 1));
  std::vector<eval::Argument> args = {local};
  for (int64_t i = 0; i < extraArguments; ++i) args.push_back(local);
  return cache.run(args);
}

void sleepSeconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

int run(const std::string& name) {
  multidevice::Communicator& comm = multidevice::Communicator::instance();
  const bool peer = comm.rank() == 1;  // the rank that does the wrong thing
  if (name == "ok") {
    std::vector<Tensor> out = runSharded(comm);
    // Every element: 1 + 2 (rank r's shard holds r + 1) times the 2 rows of each shard.
    const float want = 2.0f * float(comm.size() * (comm.size() + 1) / 2);
    if (out.at(0).dataAs<float>()[0] != want) {
      std::cerr << "rank " << comm.rank() << ": got " << out.at(0).dataAs<float>()[0] << ", want "
                << want << "\n";
      return 1;
    }
    comm.barrier();
    return 0;
  }
  if (name == "throw") {  // an exception nobody catches: std::terminate on rank 1
    if (peer) {
      sleepSeconds(0.5);  // rank 0 waits in the run by now
      throw std::runtime_error("rank 1 gives up before the run");
    }
    runSharded(comm);
    return 0;
  }
  if (name == "exit3") {  // a failing exit status on rank 1
    if (peer) {
      sleepSeconds(0.5);
      return 3;
    }
    runSharded(comm);
    return 0;
  }
  if (name == "exit0") {  // rank 1 leaves cleanly without taking part
    if (peer) return 0;
    runSharded(comm);
    return 0;
  }
  if (name == "run-throws") {  // a UserError escaping rank 1's run (one argument too many)
    if (peer) sleepSeconds(0.5);
    runSharded(comm, peer ? 1 : 0);
    return 0;
  }
  if (name ==
      "barrier-vs-run") {  // rank 0 in a barrier, rank 1 in the run: each waits for the other
    if (peer) {
      runSharded(comm);
    } else {
      comm.barrier();
    }
    return 0;
  }
  if (name == "timeout") {  // rank 1 computes past LOOM_COMM_TIMEOUT while rank 0 waits
    if (peer) sleepSeconds(60);
    comm.barrier();
    return 0;
  }
  if (name == "team-timeout") {  // rank 0 makes a team's communicator that rank 1 never joins
    if (peer) sleepSeconds(60);
    Tensor t = Tensor::empty({4}, DataType::Float32);
    t.fill(1.0);
    comm.allreduce(t, multidevice::ReduceOp::Sum, {0, 1});
    return 0;
  }
  if (name == "team-order") {  // the members name one team in different orders
    Tensor t = Tensor::empty({4}, DataType::Float32);
    t.fill(1.0);
    comm.allreduce(t, multidevice::ReduceOp::Sum,
                   peer ? multidevice::Team{1, 0} : multidevice::Team{0, 1});
    return 0;
  }
  std::cerr << "unknown case '" << name << "'\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mpi_failure_cases CASE\n";
    return 2;
  }
  return run(argv[1]);
}
