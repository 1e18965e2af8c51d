// SPDX-License-Identifier: Apache-2.0
// The Communicator without a launcher: a team of one runs every collective on host tensors as a
// local copy (no MPI initialized, so it works in builds with and without MPI), and every check of
// a collective's arguments is a UserError that names the problem, raised before any
// communication (so these run on an explicit world of several ranks in one process).
#include <gtest/gtest.h>

#include "user_error_of.h"

#include <cstring>

#include "loom/multidevice/communicator.h"

namespace loom::multidevice {
namespace {

using test::userErrorOf;

Tensor random(std::vector<int64_t> sizes, DataType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}

Tensor poisoned(std::vector<int64_t> sizes, DataType dtype) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  poison(t);
  return t;
}

bool sameBytes(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), size_t(a.numel()) * a.itemSize()) == 0;
}

// A CUDA tensor that is never touched: every check below fails before its memory is used.
Tensor fakeCuda(std::vector<int64_t> sizes, DataType dtype) {
  static char bytes[256];
  auto strides = Tensor::contiguousStrides(sizes);
  return Tensor::fromBlob(bytes, std::move(sizes), std::move(strides), dtype, Device::cuda(0));
}

void expectHas(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "expected \"" << part << "\" in: " << msg;
}

// A team of one runs every collective on this rank, counts each, and reports the local
// transport; the data is exactly what the collective defines for one member (for the rooted
// ones, a root that takes part).
TEST(Communicator, TeamOfOneRunsEveryCollectiveLocally) {
  for (auto [rank, size] : {std::pair<int64_t, int64_t>{0, 1}, {2, 4}}) {
    Communicator comm(rank, size, rank, size);
    const Team team = {rank};
    EXPECT_EQ(comm.lastTransport(), Transport::None);
    for (DataType dtype : {DataType::Float32, DataType::Int64, DataType::BFloat16}) {
      const int64_t before = comm.communications();
      Tensor in = random({3, 5}, dtype, 7);
      Tensor out = poisoned({3, 5}, dtype);
      comm.allgather(in, out, team);
      EXPECT_TRUE(sameBytes(out, in)) << dtype;
      EXPECT_EQ(comm.lastTransport(), Transport::Local);

      Tensor inout = random({4}, dtype, 8);
      Tensor copy = inout.contiguous();
      comm.allreduce(inout, ReduceOp::Sum, team);
      comm.broadcast(inout, rank, team);
      EXPECT_TRUE(sameBytes(inout, copy)) << dtype;

      Tensor scattered = poisoned({15}, dtype);
      comm.reduceScatter(in, scattered, ReduceOp::Max, team);
      EXPECT_TRUE(sameBytes(scattered, in)) << dtype;

      Tensor received = poisoned({3, 5}, dtype);
      comm.sendRecv(&in, rank, &received, rank, team);
      EXPECT_TRUE(sameBytes(received, in)) << dtype;

      Tensor exchanged = poisoned({5, 3}, dtype);
      comm.allToAll(in, exchanged, team);
      EXPECT_TRUE(sameBytes(exchanged, in)) << dtype;

      // Rooted: the only member is the root, and it sends to and receives from itself.
      Tensor rootGathered = poisoned({15}, dtype);
      comm.gather(&in, &rootGathered, rank, team);
      EXPECT_TRUE(sameBytes(rootGathered, in)) << dtype;
      Tensor rootScattered = poisoned({5, 3}, dtype);
      comm.scatter(&in, &rootScattered, rank, team);
      EXPECT_TRUE(sameBytes(rootScattered, in)) << dtype;
      Tensor rootReduced = poisoned({3, 5}, dtype);
      comm.reduce(&in, &rootReduced, ReduceOp::Prod, rank, team);
      EXPECT_TRUE(sameBytes(rootReduced, in)) << dtype;

      EXPECT_EQ(comm.communications(), before + 9) << "one per call";
      EXPECT_EQ(comm.lastTransport(), Transport::Local);
    }
  }
}

// The world team lists every rank in order.
TEST(Communicator, WorldTeam) {
  EXPECT_EQ(Communicator(1, 3, 1, 3).world(), (Team{0, 1, 2}));
  EXPECT_EQ(transportName(Transport::Staged), "staged");
  EXPECT_EQ(reduceOpName(ReduceOp::Prod), "prod");
}

// A team must be non-empty, name ranks of the world, each once, and hold the caller.
TEST(Communicator, TeamErrors) {
  Communicator comm(1, 4, 1, 4);
  Tensor x = random({4}, DataType::Float32, 1);
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {}); }),
            "allreduce: the team is empty");
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {1, 4}); }),
            "allreduce: team [1, 4] names rank 4, outside the world of 4 rank(s) (0 to 3)");
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {-1, 1}); }),
            "names rank -1, outside the world");
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {1, 3, 1}); }),
            "team [1, 3, 1] names rank 1 twice");
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {0, 2}); }),
            "allreduce: this rank (1) is not in team [0, 2]");
  EXPECT_EQ(comm.communications(), 0) << "a refused call communicates nothing";
  EXPECT_EQ(comm.lastTransport(), Transport::None);
}

// Sizes: allgather's output is team size x input, reduceScatter's input team size x output,
// allToAll's blocks divide evenly.
TEST(Communicator, SizeErrors) {
  Communicator comm(1, 4, 1, 4);
  Tensor in = random({2, 3}, DataType::Float32, 1);
  Tensor out = poisoned({10}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.allgather(in, out, {1, 2}); }),
            "allgather: output [10] f32 on cpu has 10 elements, expected team size 2 x input's "
            "6 = 12");
  expectHas(userErrorOf([&] { comm.reduceScatter(in, out, ReduceOp::Sum, {1, 2}); }),
            "reduceScatter: input [2, 3] f32 on cpu has 6 elements, expected team size 2 x "
            "output's 10 = 20");
  Tensor seven = random({7}, DataType::Float32, 2);
  Tensor seven2 = poisoned({7}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.allToAll(seven, seven2, {1, 3}); }),
            "allToAll: input [7] f32 on cpu has 7 elements, not a multiple of the team size 2");
  expectHas(userErrorOf([&] { comm.allToAll(seven, out, {1}); }),
            "allToAll: output [10] f32 on cpu has 10 elements, expected input's 7");
  Tensor half = random({3}, DataType::Float32, 3);
  expectHas(userErrorOf([&] { comm.sendRecv(&half, 1, &seven2, 1, {1, 3}); }),
            "sendRecv: recv [7] f32 on cpu has 7 elements, expected send's 3");
  expectHas(userErrorOf([&] { comm.allreduce(seven, out, ReduceOp::Sum, {1, 3}); }),
            "allreduce: input [7] f32 on cpu has 7 elements, expected output's 10");
  EXPECT_EQ(comm.communications(), 0);
}

// Tensors: contiguous, one dtype, one device, no overlap.
TEST(Communicator, TensorErrors) {
  Communicator comm(0, 2, 0, 2);
  Tensor in = random({2, 3}, DataType::Float32, 1);
  Tensor out = poisoned({4, 3}, DataType::Float32);
  Tensor transposed = in.permute(std::vector<int64_t>{1, 0});
  expectHas(userErrorOf([&] { comm.allgather(transposed, out, {0, 1}); }),
            "allgather: input [3, 2] f32 on cpu has strides [1, 3]; collectives need contiguous "
            "tensors (strides [2, 1])");
  Tensor undefined;
  expectHas(userErrorOf([&] { comm.allreduce(undefined, ReduceOp::Sum, {0}); }),
            "allreduce: inout is an undefined tensor");
  Tensor bf = poisoned({4, 3}, DataType::BFloat16);
  expectHas(userErrorOf([&] { comm.allgather(in, bf, {0, 1}); }),
            "allgather: output [4, 3] bf16 on cpu has dtype bf16, expected input's dtype f32");
  Tensor gpuOut = fakeCuda({4, 3}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.allgather(in, gpuOut, {0, 1}); }),
            "allgather: input [2, 3] f32 on cpu and output [4, 3] f32 on cuda:0 are on "
            "different devices");
  Tensor gpuIn = fakeCuda({3}, DataType::Float32);
  Tensor hostIn = random({3}, DataType::Float32, 2);
  expectHas(userErrorOf([&] { comm.sendRecv(&hostIn, 1, &gpuIn, 1, {0, 1}); }),
            "are on different devices");
  Tensor whole = poisoned({12}, DataType::Float32);
  Tensor firstHalf = Tensor(whole.storage(), DataType::Float32, {6}, {1}, 0);
  Tensor middle = Tensor(whole.storage(), DataType::Float32, {6}, {1}, 3);
  // This rank's own block of the output is an in-place allgather; any other overlap is refused.
  expectHas(userErrorOf([&] { comm.allgather(middle, whole, {0, 1}); }),
            "allgather: input and output overlap");
  Tensor quarter = Tensor(whole.storage(), DataType::Float32, {3}, {1}, 0);
  expectHas(userErrorOf([&] { comm.reduceScatter(firstHalf, quarter, ReduceOp::Sum, {0, 1}); }),
            "reduceScatter: input and output overlap");
  expectHas(userErrorOf([&] { comm.allreduce(firstHalf, middle, ReduceOp::Sum, {0, 1}); }),
            "allreduce: input and output overlap (pass one tensor for an allreduce in place)");
  EXPECT_EQ(comm.communications(), 0);
}

// Roots and peers are world ranks of the team; a send to oneself comes with the receive.
TEST(Communicator, RootAndPeerErrors) {
  Communicator comm(0, 4, 0, 4);
  Tensor x = random({4}, DataType::Int64, 1);
  Tensor y = poisoned({4}, DataType::Int64);
  expectHas(userErrorOf([&] { comm.broadcast(x, 2, {0, 1}); }),
            "broadcast: root 2 is not in team [0, 1]");
  expectHas(userErrorOf([&] { comm.sendRecv(&x, 3, nullptr, -1, {0, 1}); }),
            "sendRecv: dst 3 is not in team [0, 1]");
  expectHas(userErrorOf([&] { comm.sendRecv(nullptr, -1, &y, 2, {0, 1}); }),
            "sendRecv: src 2 is not in team [0, 1]");
  expectHas(userErrorOf([&] { comm.sendRecv(nullptr, -1, nullptr, -1, {0, 1}); }),
            "sendRecv: neither a send nor a receive");
  expectHas(userErrorOf([&] { comm.sendRecv(&x, 0, &y, 1, {0, 1}); }),
            "sendRecv: a send to this rank (0) itself needs the matching receive in the same "
            "call");
  Tensor y32 = poisoned({4}, DataType::Int32);
  expectHas(userErrorOf([&] { comm.sendRecv(&x, 0, &y32, 0, {0, 1}); }),
            "sendRecv: recv [4] i32 on cpu has dtype i32, expected send's dtype i64");
  EXPECT_EQ(comm.communications(), 0);
}

// Rooted collectives: the root is a member and passes its own tensor (gather and reduce: output;
// scatter: input); every other member passes the tensor of its side and not the root's; a team of
// one whose root takes no part has nobody to send to or receive from.
TEST(Communicator, RootedRoleErrors) {
  Communicator comm(1, 4, 1, 4);
  Tensor x = random({4}, DataType::Float32, 1);
  Tensor y = poisoned({12}, DataType::Float32);
  const Team team = {0, 1, 2};
  expectHas(userErrorOf([&] { comm.gather(&x, &y, 3, team); }),
            "gather: root 3 is not in team [0, 1, 2]; root is a world rank of the team");
  const Team without = {0, 2};
  expectHas(userErrorOf([&] { comm.reduce(&x, nullptr, ReduceOp::Sum, 0, without); }),
            "reduce: this rank (1) is not in team [0, 2]");
  // This rank (1) is not the root (2).
  expectHas(userErrorOf([&] { comm.gather(nullptr, nullptr, 2, team); }),
            "gather: rank 1 passes no input; every member of team [0, 1, 2] but the root (2) "
            "sends");
  expectHas(userErrorOf([&] { comm.gather(&x, &y, 2, team); }),
            "gather: rank 1 passes an output but is not the root (2); only the root receives the "
            "gathered tensor");
  expectHas(userErrorOf([&] { comm.scatter(&y, &x, 2, team); }),
            "scatter: rank 1 passes an input but is not the root (2); only the root holds the "
            "tensor to scatter");
  expectHas(userErrorOf([&] { comm.scatter(nullptr, nullptr, 2, team); }),
            "scatter: rank 1 passes no output; every member of team [0, 1, 2] but the root (2) "
            "receives");
  expectHas(userErrorOf([&] { comm.reduce(nullptr, nullptr, ReduceOp::Max, 2, team); }),
            "reduce: rank 1 passes no input; every member of team [0, 1, 2] but the root (2) "
            "sends");
  // This rank is the root.
  expectHas(userErrorOf([&] { comm.gather(&x, nullptr, 1, team); }),
            "gather: the root (rank 1) passes no output; the root receives the gathered tensor");
  expectHas(userErrorOf([&] { comm.scatter(nullptr, &x, 1, team); }),
            "scatter: the root (rank 1) passes no input; the root holds the tensor to scatter");
  expectHas(userErrorOf([&] { comm.reduce(&x, nullptr, ReduceOp::Sum, 1, team); }),
            "reduce: the root (rank 1) passes no output; the root receives the reduction");
  expectHas(userErrorOf([&] { comm.gather(nullptr, &y, 1, {1}); }),
            "gather: no member sends: the root (rank 1) passes no input and is the only member of "
            "team [1]");
  expectHas(userErrorOf([&] { comm.scatter(&y, nullptr, 1, {1}); }),
            "scatter: no member receives: the root (rank 1) passes no output and is the only "
            "member of team [1]");
  expectHas(userErrorOf([&] { comm.reduce(nullptr, &x, ReduceOp::Sum, 1, {1}); }),
            "reduce: no member sends");
  EXPECT_EQ(comm.communications(), 0) << "a refused call communicates nothing";
}

// On the root: gather's output and scatter's input hold one block per sender or receiver (the
// root counted when it takes part), reduce's output has the input's numel; the root's tensors are
// contiguous, of one dtype, on one device, apart.
TEST(Communicator, RootedSizeAndTensorErrors) {
  Communicator comm(1, 4, 1, 4);
  const Team team = {0, 1, 2};
  Tensor in = random({2, 3}, DataType::Float32, 1);
  Tensor out = poisoned({10}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.gather(&in, &out, 1, team); }),
            "gather: output [10] f32 on cpu has 10 elements, expected one block of input's 6 per "
            "sender, 3 x 6 = 18");
  Tensor eleven = poisoned({11}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.gather(nullptr, &eleven, 1, team); }),
            "gather: output [11] f32 on cpu has 11 elements, not a multiple of the number of "
            "senders, 2 (the members of team [0, 1, 2] but the root, which passes no input): one "
            "block per sender");
  expectHas(userErrorOf([&] { comm.scatter(&out, &in, 1, team); }),
            "scatter: input [10] f32 on cpu has 10 elements, expected one block of output's 6 per "
            "receiver, 3 x 6 = 18");
  Tensor seven = random({7}, DataType::Float32, 2);
  expectHas(userErrorOf([&] { comm.scatter(&seven, nullptr, 1, team); }),
            "scatter: input [7] f32 on cpu has 7 elements, not a multiple of the number of "
            "receivers, 2 (the members of team [0, 1, 2] but the root, which passes no output)");
  expectHas(userErrorOf([&] { comm.reduce(&in, &out, ReduceOp::Sum, 1, team); }),
            "reduce: output [10] f32 on cpu has 10 elements, expected input's 6");
  Tensor bf = poisoned({18}, DataType::BFloat16);
  expectHas(userErrorOf([&] { comm.gather(&in, &bf, 1, team); }),
            "gather: output [18] bf16 on cpu has dtype bf16, expected input's dtype f32");
  Tensor transposed = in.permute(std::vector<int64_t>{1, 0});
  Tensor six = poisoned({6}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.reduce(&transposed, &six, ReduceOp::Sum, 1, team); }),
            "reduce: input [3, 2] f32 on cpu has strides [1, 3]; collectives need contiguous "
            "tensors (strides [2, 1])");
  expectHas(userErrorOf([&] { comm.gather(&transposed, nullptr, 2, team); }),
            "gather: input [3, 2] f32 on cpu has strides [1, 3]");
  Tensor undefined;
  expectHas(userErrorOf([&] { comm.scatter(nullptr, &undefined, 2, team); }),
            "scatter: output is an undefined tensor");
  Tensor gpuOut = fakeCuda({6}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.reduce(&in, &gpuOut, ReduceOp::Sum, 1, team); }),
            "reduce: input [2, 3] f32 on cpu and output [6] f32 on cuda:0 are on different "
            "devices");
  Tensor whole = poisoned({12}, DataType::Float32);
  Tensor firstHalf = Tensor(whole.storage(), DataType::Float32, {6}, {1}, 0);
  Tensor middle = Tensor(whole.storage(), DataType::Float32, {6}, {1}, 3);
  const Team pair = {1, 2};
  expectHas(userErrorOf([&] { comm.gather(&firstHalf, &whole, 1, pair); }),
            "gather: input and output overlap");
  expectHas(userErrorOf([&] { comm.scatter(&whole, &middle, 1, pair); }),
            "scatter: input and output overlap");
  expectHas(userErrorOf([&] { comm.reduce(&firstHalf, &middle, ReduceOp::Sum, 1, team); }),
            "reduce: input and output overlap");
  EXPECT_EQ(comm.communications(), 0);
  EXPECT_EQ(comm.lastTransport(), Transport::None);
}

// Without MPI, a team of several ranks is refused by name; a team of one still runs.
TEST(Communicator, SeveralRanksNeedMpi) {
  if (Communicator::hasMpi()) GTEST_SKIP() << "this build has MPI (a no-MPI build runs this)";
  Communicator comm(0, 2, 0, 2);
  Tensor x = random({4}, DataType::Float32, 1);
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {0, 1}); }),
            "allreduce between 2 ranks needs MPI, and this Loom build has none");
  comm.allreduce(x, ReduceOp::Sum, {0});
  EXPECT_EQ(comm.lastTransport(), Transport::Local);
}

#ifndef LOOM_HAVE_CUDA_BACKEND
// A build without the CUDA backend refuses CUDA tensors by name.
TEST(Communicator, CudaTensorsNeedTheCudaBackend) {
  Communicator comm(0, 1, 0, 1);
  Tensor x = fakeCuda({4}, DataType::Float32);
  expectHas(userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {0}); }),
            "need the CUDA backend, and this Loom build has none");
}
#endif

}  // namespace
}  // namespace loom::multidevice
