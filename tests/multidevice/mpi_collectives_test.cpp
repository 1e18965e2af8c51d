// SPDX-License-Identifier: Apache-2.0
// The mpi tier's collectives: run under `mpirun -np N` (ctest registers N = 1, 2, 4). Every rank
// makes its tensors from a formula of (world rank, element, salt), so it can compute what every
// other member holds and check each collective's result exactly, on the whole world, the world in
// reverse order, sub-teams ({0, 1}, {2, 3}, {1, 3} for 4 ranks) and a team of one; a rank outside
// a team skips it. The values are small multiples of 1/4 (powers of two for products), so every
// partial sum and product is exact in bf16 and the order MPI or NCCL reduces in cannot matter.
// Rooted collectives (gather, scatter, reduce) run with the first and the last member as root, the
// root taking part and not. LOOM_MPI_TEST_BACKEND=cuda runs the same tests on CUDA tensors (NCCL
// with a GPU per rank, staged through the host when ranks share one).
#include <gtest/gtest.h>

#include "user_error_of.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "loom/multidevice/communicator.h"
#include "loom/support/strings.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::multidevice {
namespace {

using test::userErrorOf;

bool onCuda() {
  const char* b = std::getenv("LOOM_MPI_TEST_BACKEND");
  return b != nullptr && std::string(b) == "cuda";
}

// Values a rank holds: any small value, or one safe to multiply (a power of two, for floats).
enum class Kind { Any, Product };

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double valueOf(int64_t rank, int64_t i, uint64_t salt, DataType dtype, Kind kind) {
  const uint64_t h = mix(salt * 1000003 + uint64_t(rank) * 7919 + uint64_t(i));
  if (dtype == DataType::Bool) return double(h % 2);
  // Unsigned types take non-negative values, so that max and min order them as doubles do.
  const double sign = (h >> 8) % 2 == 0 || isUnsignedType(dtype) ? 1.0 : -1.0;
  if (kind == Kind::Product) {
    if (isFloatingType(dtype)) return sign * std::ldexp(1.0, int(h % 3) - 1);  // +-1/2, 1, 2
    return sign * double(1 + h % 3);
  }
  const double v = double(int64_t(h % 17) - (isUnsignedType(dtype) ? 0 : 8));
  return isFloatingType(dtype) ? v / 4 : v;
}

Kind kindOf(ReduceOp op) { return op == ReduceOp::Prod ? Kind::Product : Kind::Any; }

double reduce(double a, double b, DataType dtype, ReduceOp op) {
  if (dtype == DataType::Bool) {
    return op == ReduceOp::Sum || op == ReduceOp::Max ? double(a != 0 || b != 0)
                                                      : double(a != 0 && b != 0);
  }
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Prod: return a * b;
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
  }
  return 0;
}

// A host tensor of `numel` elements, element i = f(i), rounded to the dtype (exact here).
template <typename F>
Tensor hostTensor(std::vector<int64_t> sizes, DataType dtype, F f) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, f(i));
  return t;
}

std::string teamText(const Team& team) { return "team [" + join(team) + "]"; }

bool contains(const Team& team, int64_t r) {
  return std::find(team.begin(), team.end(), r) != team.end();
}

int64_t positionOf(const Team& team, int64_t r) {
  return int64_t(std::find(team.begin(), team.end(), r) - team.begin());
}

// Every team the tests run on for this world size, in one order all ranks share.
std::vector<Team> teams(const Communicator& comm) {
  const int64_t n = comm.size();
  std::vector<Team> out = {comm.world()};
  if (n > 1) {
    Team reversed = comm.world();
    std::reverse(reversed.begin(), reversed.end());
    out.push_back(reversed);
    out.push_back({n - 1});
  }
  if (n >= 4) {
    out.push_back({0, 1});
    out.push_back({2, 3});
    out.push_back({1, 3});
  }
  return out;
}

const DataType kSomeDtypes[] = {DataType::Float32, DataType::Int64, DataType::BFloat16};
const ReduceOp kAllOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};

class MpiCollectives : public ::testing::Test {
 protected:
  void SetUp() override {
    if (onCuda()) {
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason();
      gpu_ = comm_.gpuIndex(cuda::deviceCount());
#else
      GTEST_SKIP() << "LOOM_MPI_TEST_BACKEND=cuda but this build has no CUDA backend";
#endif
    }
  }

  // A copy of a host tensor on the tested device.
  Tensor put(const Tensor& host) const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (onCuda()) return cuda::toDevice(host, gpu_);
#endif
    return host.contiguous();
  }
  // A host view of a tested tensor (copied back from the GPU).
  Tensor fetch(const Tensor& t) const {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (onCuda()) return cuda::toHost(t);
#endif
    return t;
  }
  Tensor blank(std::vector<int64_t> sizes, DataType dtype) const {
    Tensor t = Tensor::empty(std::move(sizes), dtype);
    poison(t);
    return put(t);
  }
  // The transport a collective on `team` should have taken.
  Transport expectedTransport(const Team& team) const {
    if (team.size() == 1) return Transport::Local;
    if (!onCuda()) return Transport::Mpi;
#ifdef LOOM_HAVE_CUDA_BACKEND
    return comm_.localSize() <= cuda::deviceCount() ? Transport::Nccl : Transport::Staged;
#else
    return Transport::None;
#endif
  }

  // Checks the call counted once and took the expected transport.
  void expectCounted(int64_t before, const Team& team, const std::string& what) {
    EXPECT_EQ(comm_.communications(), before + 1) << what;
    EXPECT_EQ(comm_.lastTransport(), expectedTransport(team))
        << what << ": took " << transportName(comm_.lastTransport());
  }

  void expectEqual(const Tensor& got, const Tensor& expected, const std::string& what) {
    Tensor host = fetch(got);
    ASSERT_EQ(host.numel(), expected.numel()) << what;
    int64_t wrong = 0;
    std::ostringstream first;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const double g = host.getDoubleLinear(i);
      const double e = expected.getDoubleLinear(i);
      if (g != e) {
        if (wrong++ == 0) first << "element " << i << ": got " << g << ", expected " << e;
      }
    }
    EXPECT_EQ(wrong, 0) << what << " on rank " << comm_.rank() << ": " << wrong << " of "
                        << expected.numel() << " wrong, first " << first.str();
  }

  Communicator& comm_ = Communicator::instance();
  int gpu_ = 0;
};

// Allgather: the members' inputs in team order, every dtype.
TEST_F(MpiCollectives, Allgather) {
  uint64_t salt = 1;
  for (const Team& team : teams(comm_)) {
    for (DataType dtype : kAllDataTypes) {
      if (isComplexType(dtype)) continue;  // not communicated (docs/ops.md)
      ++salt;
      if (!contains(team, comm_.rank())) continue;
      const int64_t n = int64_t(team.size());
      Tensor input = put(hostTensor({2, 3}, dtype, [&](int64_t i) {
        return valueOf(comm_.rank(), i, salt, dtype, Kind::Any);
      }));
      Tensor output = blank({n * 2, 3}, dtype);
      const int64_t before = comm_.communications();
      comm_.allgather(input, output, team);
      const std::string what = "allgather " + std::string(dataTypeName(dtype)) + " " +
                               teamText(team);
      expectCounted(before, team, what);
      expectEqual(output, hostTensor({n * 2, 3}, dtype, [&](int64_t i) {
                    return valueOf(team[size_t(i / 6)], i % 6, salt, dtype, Kind::Any);
                  }), what);
    }
  }
}

// Allgather in place: this rank's input is its own block of the output.
TEST_F(MpiCollectives, AllgatherInPlace) {
  const Team team = comm_.world();
  const int64_t n = comm_.size();
  const DataType dtype = DataType::Float32;
  const int64_t me = comm_.rank();
  Tensor output = put(hostTensor({n * 4}, dtype, [&](int64_t i) {
    return i / 4 == me ? valueOf(me, i % 4, 99, dtype, Kind::Any) : std::nan("");
  }));
  Tensor mine(output.storage(), dtype, {4}, {1}, output.offset() + me * 4);
  comm_.allgather(mine, output, team);
  expectEqual(output, hostTensor({n * 4}, dtype, [&](int64_t i) {
                return valueOf(i / 4, i % 4, 99, dtype, Kind::Any);
              }), "allgather in place");
}

// Allreduce: every op on every dtype (bool: or / and), elementwise over the members.
TEST_F(MpiCollectives, Allreduce) {
  uint64_t salt = 100;
  for (const Team& team : teams(comm_)) {
    for (DataType dtype : kAllDataTypes) {
      // Complex types are not communicated, 8-bit floats not reduced (docs/ops.md).
      if (isComplexType(dtype) || isFloat8Type(dtype)) continue;
      for (ReduceOp op : kAllOps) {
        ++salt;
        if (!contains(team, comm_.rank())) continue;
        const Kind kind = kindOf(op);
        Tensor inout = put(hostTensor({5, 2}, dtype, [&](int64_t i) {
          return valueOf(comm_.rank(), i, salt, dtype, kind);
        }));
        const int64_t before = comm_.communications();
        comm_.allreduce(inout, op, team);
        const std::string what = "allreduce " + std::string(reduceOpName(op)) + " " +
                                 std::string(dataTypeName(dtype)) + " " + teamText(team);
        expectCounted(before, team, what);
        const Tensor want = hostTensor({5, 2}, dtype, [&](int64_t i) {
          double acc = valueOf(team[0], i, salt, dtype, kind);
          for (size_t m = 1; m < team.size(); ++m) {
            acc = reduce(acc, valueOf(team[m], i, salt, dtype, kind), dtype, op);
          }
          return acc;
        });
        expectEqual(inout, want, what);
        // Out of place: the input stays as it was.
        const Tensor mine = hostTensor({5, 2}, dtype, [&](int64_t i) {
          return valueOf(comm_.rank(), i, salt, dtype, kind);
        });
        Tensor input = put(mine);
        Tensor output = put(hostTensor({5, 2}, dtype, [](int64_t) { return 0.0; }));
        comm_.allreduce(input, output, op, team);
        expectEqual(output, want, what + " out of place");
        expectEqual(input, mine, what + " out of place: the input");
      }
    }
  }
}

// ReduceScatter: this rank's block (at its position in the team) of the reduction.
TEST_F(MpiCollectives, ReduceScatter) {
  uint64_t salt = 1000;
  for (const Team& team : teams(comm_)) {
    for (DataType dtype : kSomeDtypes) {
      for (ReduceOp op : kAllOps) {
        ++salt;
        if (!contains(team, comm_.rank())) continue;
        const int64_t n = int64_t(team.size());
        const int64_t p = positionOf(team, comm_.rank());
        const Kind kind = kindOf(op);
        Tensor input = put(hostTensor({n * 3}, dtype, [&](int64_t i) {
          return valueOf(comm_.rank(), i, salt, dtype, kind);
        }));
        Tensor output = blank({3}, dtype);
        const int64_t before = comm_.communications();
        comm_.reduceScatter(input, output, op, team);
        const std::string what = "reduceScatter " + std::string(reduceOpName(op)) + " " +
                                 std::string(dataTypeName(dtype)) + " " + teamText(team);
        expectCounted(before, team, what);
        expectEqual(output, hostTensor({3}, dtype, [&](int64_t i) {
                      double acc = valueOf(team[0], p * 3 + i, salt, dtype, kind);
                      for (size_t m = 1; m < team.size(); ++m) {
                        acc = reduce(acc, valueOf(team[m], p * 3 + i, salt, dtype, kind), dtype,
                                     op);
                      }
                      return acc;
                    }), what);
      }
    }
  }
}

// Broadcast: every member ends with the root's buffer, for the first and the last member as root.
TEST_F(MpiCollectives, Broadcast) {
  uint64_t salt = 2000;
  for (const Team& team : teams(comm_)) {
    for (int64_t root : {team.front(), team.back()}) {
      for (DataType dtype : kSomeDtypes) {
        ++salt;
        if (!contains(team, comm_.rank())) continue;
        Tensor buffer = put(hostTensor({7}, dtype, [&](int64_t i) {
          return valueOf(comm_.rank(), i, salt, dtype, Kind::Any);
        }));
        const int64_t before = comm_.communications();
        comm_.broadcast(buffer, root, team);
        const std::string what = "broadcast from " + std::to_string(root) + " " +
                                 std::string(dataTypeName(dtype)) + " " + teamText(team);
        expectCounted(before, team, what);
        expectEqual(buffer, hostTensor({7}, dtype, [&](int64_t i) {
                      return valueOf(root, i, salt, dtype, Kind::Any);
                    }), what);
      }
    }
  }
}

// SendRecv as a ring shift (each member sends to the next, receives from the previous; a team
// of one sends to itself), then one way only (the first member sends, the last receives).
TEST_F(MpiCollectives, SendRecv) {
  uint64_t salt = 3000;
  for (const Team& team : teams(comm_)) {
    for (DataType dtype : kSomeDtypes) {
      ++salt;
      if (!contains(team, comm_.rank())) continue;
      const int64_t n = int64_t(team.size());
      const int64_t p = positionOf(team, comm_.rank());
      const int64_t next = team[size_t((p + 1) % n)];
      const int64_t prev = team[size_t((p + n - 1) % n)];
      Tensor send = put(hostTensor({2, 4}, dtype, [&](int64_t i) {
        return valueOf(comm_.rank(), i, salt, dtype, Kind::Any);
      }));
      Tensor recv = blank({8}, dtype);
      int64_t before = comm_.communications();
      comm_.sendRecv(&send, next, &recv, prev, team);
      const std::string what = "sendRecv ring " + std::string(dataTypeName(dtype)) + " " +
                               teamText(team);
      expectCounted(before, team, what);
      expectEqual(recv, hostTensor({8}, dtype, [&](int64_t i) {
                    return valueOf(prev, i, salt, dtype, Kind::Any);
                  }), what);
      if (n == 1) continue;
      // One way: the team is {first, last}'s pair; the members in between are left out of it.
      const Team pair = {team.front(), team.back()};
      if (!contains(pair, comm_.rank())) continue;
      before = comm_.communications();
      if (comm_.rank() == pair[0]) {
        comm_.sendRecv(&send, pair[1], nullptr, -1, pair);
      } else {
        Tensor got = blank({8}, dtype);
        comm_.sendRecv(nullptr, -1, &got, pair[0], pair);
        expectEqual(got, hostTensor({8}, dtype, [&](int64_t i) {
                      return valueOf(pair[0], i, salt, dtype, Kind::Any);
                    }), "sendRecv one way " + teamText(pair));
      }
      expectCounted(before, pair, "sendRecv one way " + teamText(pair));
    }
  }
}

// AllToAll: output block q is block p (this rank's position) of member q's input.
TEST_F(MpiCollectives, AllToAll) {
  uint64_t salt = 4000;
  for (const Team& team : teams(comm_)) {
    for (DataType dtype : kSomeDtypes) {
      ++salt;
      if (!contains(team, comm_.rank())) continue;
      const int64_t n = int64_t(team.size());
      const int64_t p = positionOf(team, comm_.rank());
      Tensor input = put(hostTensor({n, 3}, dtype, [&](int64_t i) {
        return valueOf(comm_.rank(), i, salt, dtype, Kind::Any);
      }));
      Tensor output = blank({n, 3}, dtype);
      const int64_t before = comm_.communications();
      comm_.allToAll(input, output, team);
      const std::string what = "allToAll " + std::string(dataTypeName(dtype)) + " " +
                               teamText(team);
      expectCounted(before, team, what);
      expectEqual(output, hostTensor({n, 3}, dtype, [&](int64_t i) {
                    return valueOf(team[size_t(i / 3)], p * 3 + i % 3, salt, dtype, Kind::Any);
                  }), what);
    }
  }
}

// The members of `team` that send to (gather, reduce) or receive from (scatter) `root`, in team
// order: all but the root, and the root too when it takes part.
Team partsOf(const Team& team, int64_t root, bool rootTakesPart) {
  Team parts;
  for (int64_t r : team) {
    if (r != root || rootTakesPart) parts.push_back(r);
  }
  return parts;
}

// Every (root, root takes part) case a rooted collective runs on `team`: the first and the last
// member as root, each taking part and not (a team of one has no one else, so its root takes part).
std::vector<std::pair<int64_t, bool>> rootedCases(const Team& team) {
  std::vector<std::pair<int64_t, bool>> cases;
  for (int64_t root : {team.front(), team.back()}) {
    cases.emplace_back(root, true);
    if (team.size() > 1) cases.emplace_back(root, false);
  }
  return cases;
}

std::string rootedText(const char* what, int64_t root, bool rootTakesPart, DataType dtype,
                       const Team& team) {
  return std::string(what) + " to root " + std::to_string(root) +
         (rootTakesPart ? " (taking part) " : " (not taking part) ") +
         std::string(dataTypeName(dtype)) + " " + teamText(team);
}

// Gather: the root's output is the senders' inputs in team order; a root that passes no input
// has no block.
TEST_F(MpiCollectives, Gather) {
  uint64_t salt = 5000;
  for (const Team& team : teams(comm_)) {
    for (auto [root, rootSends] : rootedCases(team)) {
      for (DataType dtype : kSomeDtypes) {
        ++salt;
        if (!contains(team, comm_.rank())) continue;
        const bool isRoot = comm_.rank() == root;
        const bool sends = !isRoot || rootSends;
        const Team senders = partsOf(team, root, rootSends);
        const int64_t n = int64_t(senders.size());
        Tensor input = put(hostTensor({2, 3}, dtype, [&](int64_t i) {
          return valueOf(comm_.rank(), i, salt, dtype, Kind::Any);
        }));
        Tensor output = isRoot ? blank({n * 2, 3}, dtype) : Tensor();
        const int64_t before = comm_.communications();
        comm_.gather(sends ? &input : nullptr, isRoot ? &output : nullptr, root, team);
        const std::string what = rootedText("gather", root, rootSends, dtype, team);
        expectCounted(before, team, what);
        if (!isRoot) continue;
        expectEqual(output, hostTensor({n * 2, 3}, dtype, [&](int64_t i) {
                      return valueOf(senders[size_t(i / 6)], i % 6, salt, dtype, Kind::Any);
                    }), what);
      }
    }
  }
}

// Scatter: receiver q (in team order) gets block q of the root's input; a root that passes no
// output gets no block.
TEST_F(MpiCollectives, Scatter) {
  uint64_t salt = 6000;
  for (const Team& team : teams(comm_)) {
    for (auto [root, rootReceives] : rootedCases(team)) {
      for (DataType dtype : kSomeDtypes) {
        ++salt;
        if (!contains(team, comm_.rank())) continue;
        const bool isRoot = comm_.rank() == root;
        const bool receives = !isRoot || rootReceives;
        const Team receivers = partsOf(team, root, rootReceives);
        const int64_t n = int64_t(receivers.size());
        Tensor input = put(hostTensor({n, 5}, dtype, [&](int64_t i) {
          return valueOf(root, i, salt, dtype, Kind::Any);
        }));
        Tensor output = receives ? blank({5}, dtype) : Tensor();
        const int64_t before = comm_.communications();
        comm_.scatter(isRoot ? &input : nullptr, receives ? &output : nullptr, root, team);
        const std::string what = rootedText("scatter from", root, rootReceives, dtype, team);
        expectCounted(before, team, what);
        if (!receives) continue;
        const int64_t q = positionOf(receivers, comm_.rank());
        expectEqual(output, hostTensor({5}, dtype, [&](int64_t i) {
                      return valueOf(root, q * 5 + i, salt, dtype, Kind::Any);
                    }), what);
      }
    }
  }
}

// Reduce: the root's output is the reduction of the senders' inputs, every op on every dtype (a
// root that sends nothing contributes the op's identity, which must leave the result alone).
TEST_F(MpiCollectives, Reduce) {
  uint64_t salt = 7000;
  for (const Team& team : teams(comm_)) {
    for (auto [root, rootSends] : rootedCases(team)) {
      for (DataType dtype : kAllDataTypes) {
        // Complex types are not communicated, 8-bit floats not reduced (docs/ops.md).
        if (isComplexType(dtype) || isFloat8Type(dtype)) continue;
        for (ReduceOp op : kAllOps) {
          ++salt;
          if (!contains(team, comm_.rank())) continue;
          const bool isRoot = comm_.rank() == root;
          const bool sends = !isRoot || rootSends;
          const Team senders = partsOf(team, root, rootSends);
          const Kind kind = kindOf(op);
          Tensor input = put(hostTensor({3, 2}, dtype, [&](int64_t i) {
            return valueOf(comm_.rank(), i, salt, dtype, kind);
          }));
          Tensor output = isRoot ? blank({6}, dtype) : Tensor();
          const int64_t before = comm_.communications();
          comm_.reduce(sends ? &input : nullptr, isRoot ? &output : nullptr, op, root, team);
          const std::string what = rootedText("reduce", root, rootSends, dtype, team) + " " +
                                   std::string(reduceOpName(op));
          expectCounted(before, team, what);
          if (!isRoot) continue;
          expectEqual(output, hostTensor({6}, dtype, [&](int64_t i) {
                        double acc = valueOf(senders[0], i, salt, dtype, kind);
                        for (size_t m = 1; m < senders.size(); ++m) {
                          acc = reduce(acc, valueOf(senders[m], i, salt, dtype, kind), dtype, op);
                        }
                        return acc;
                      }), what);
        }
      }
    }
  }
}

// The producer / consumer shape the runtime uses between meshes: the first half of the world
// holds shards, the last rank (outside that half, except in a world of one or two) consumes them
// gathered, scatters them back and sums them.
TEST_F(MpiCollectives, BetweenMeshes) {
  const int64_t n = comm_.size();
  Team producers;
  for (int64_t r = 0; r < std::max<int64_t>(1, n / 2); ++r) producers.push_back(r);
  const int64_t consumer = n - 1;
  Team team = producers;
  if (!contains(team, consumer)) team.push_back(consumer);
  if (!contains(team, comm_.rank())) return;
  const bool produces = contains(producers, comm_.rank());
  const bool consumes = comm_.rank() == consumer;
  const int64_t p = int64_t(producers.size());
  const DataType dtype = DataType::BFloat16;
  Tensor shard = put(hostTensor({4}, dtype, [&](int64_t i) {
    return valueOf(comm_.rank(), i, 8000, dtype, Kind::Any);
  }));
  Tensor whole = consumes ? blank({p * 4}, dtype) : Tensor();
  comm_.gather(produces ? &shard : nullptr, consumes ? &whole : nullptr, consumer, team);
  if (consumes) {
    expectEqual(whole, hostTensor({p * 4}, dtype, [&](int64_t i) {
                  return valueOf(producers[size_t(i / 4)], i % 4, 8000, dtype, Kind::Any);
                }), "gather between meshes");
  }
  Tensor back = produces ? blank({4}, dtype) : Tensor();
  comm_.scatter(consumes ? &whole : nullptr, produces ? &back : nullptr, consumer, team);
  if (produces) expectEqual(back, fetch(shard), "scatter between meshes");
  Tensor sum = consumes ? blank({4}, dtype) : Tensor();
  comm_.reduce(produces ? &shard : nullptr, consumes ? &sum : nullptr, ReduceOp::Sum, consumer,
               team);
  if (consumes) {
    expectEqual(sum, hostTensor({4}, dtype, [&](int64_t i) {
                  double acc = 0;
                  for (int64_t r : producers) acc += valueOf(r, i, 8000, dtype, Kind::Any);
                  return acc;
                }), "reduce between meshes");
  }
}

// The user errors on the launcher's communicator: each is raised before any communication, on
// the ranks that make the mistake, and names it.
TEST_F(MpiCollectives, Errors) {
  const int64_t n = comm_.size();
  const int64_t me = comm_.rank();
  const int64_t before = comm_.communications();
  Tensor x = put(hostTensor({4}, DataType::Float32, [](int64_t i) { return double(i); }));
  auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << "expected \"" << part << "\" in: " << msg;
  };
  has(userErrorOf([&] { comm_.allreduce(x, ReduceOp::Sum, {me, n}); }),
      "names rank " + std::to_string(n) + ", outside the world of " + std::to_string(n));
  has(userErrorOf([&] { comm_.allreduce(x, ReduceOp::Sum, {me, me}); }),
      "names rank " + std::to_string(me) + " twice");
  if (n > 1) {
    has(userErrorOf([&] { comm_.allreduce(x, ReduceOp::Sum, {(me + 1) % n}); }),
        "allreduce: this rank (" + std::to_string(me) + ") is not in team");
  }
  Tensor wrong = blank({4 * n + 1}, DataType::Float32);
  has(userErrorOf([&] { comm_.allgather(x, wrong, comm_.world()); }),
      "elements, expected team size " + std::to_string(n) + " x input's 4");
  Tensor i64 = blank({4 * n}, DataType::Int64);
  has(userErrorOf([&] { comm_.allgather(x, i64, comm_.world()); }),
      "has dtype i64, expected input's dtype f32");
  if (onCuda()) {
    Tensor host = Tensor::empty({4 * n}, DataType::Float32);
    has(userErrorOf([&] { comm_.allgather(x, host, comm_.world()); }),
        "are on different devices");
  }
  // Rooted: the root is a member, a member other than the root sends, only the root receives.
  const int64_t last = n - 1;
  has(userErrorOf([&] { comm_.gather(&x, nullptr, n, comm_.world()); }),
      "gather: root " + std::to_string(n) + " is not in team");
  if (me != last) {
    has(userErrorOf([&] { comm_.gather(nullptr, nullptr, last, comm_.world()); }),
        "gather: rank " + std::to_string(me) + " passes no input; every member of team");
    Tensor out = blank({4}, DataType::Float32);
    has(userErrorOf([&] { comm_.reduce(&x, &out, ReduceOp::Sum, last, comm_.world()); }),
        "reduce: rank " + std::to_string(me) + " passes an output but is not the root");
  } else {
    has(userErrorOf([&] { comm_.scatter(nullptr, &x, last, comm_.world()); }),
        "scatter: the root (rank " + std::to_string(me) + ") passes no input");
    Tensor wrongBlocks = blank({4 * n + 4}, DataType::Float32);
    has(userErrorOf([&] { comm_.gather(&x, &wrongBlocks, last, comm_.world()); }),
        "expected one block of input's 4 per sender, " + std::to_string(n) + " x 4 = " +
            std::to_string(4 * n));
  }
  EXPECT_EQ(comm_.communications(), before) << "refused calls communicate nothing";
}

// 8-bit floats move between ranks as bytes (Allgather above) but are not reduced: a UserError
// on every rank, naming the dtype, before the reduction (docs/ops.md, "8-bit floats").
TEST_F(MpiCollectives, EightBitFloatsAreNotReduced) {
  if (comm_.size() < 2) GTEST_SKIP() << "a team of one reduces nothing";
  Tensor x = put(hostTensor({4}, DataType::Float8_e4m3fn, [](int64_t i) { return double(i); }));
  const std::string msg = userErrorOf([&] { comm_.allreduce(x, ReduceOp::Sum, comm_.world()); });
  EXPECT_NE(msg.find("f8e4m3fn tensors are not reduced between devices"), std::string::npos)
      << msg;
}

#ifdef LOOM_HAVE_CUDA_BACKEND
// On CUDA tensors, forced transports: Staged works wherever MPI does, Nccl (a GPU per rank) also
// on a team of one, so one GPU and one rank run NCCL too.
TEST_F(MpiCollectives, ForcedCudaTransports) {
  if (!onCuda()) GTEST_SKIP() << "CUDA tensors only (LOOM_MPI_TEST_BACKEND=cuda)";
  std::vector<CudaTransport> forced = {CudaTransport::Staged};
  if (comm_.localSize() <= cuda::deviceCount()) forced.push_back(CudaTransport::Nccl);
  const Team team = comm_.world();
  for (CudaTransport t : forced) {
    comm_.setCudaTransport(t);
    const Transport expected = t == CudaTransport::Nccl ? Transport::Nccl : Transport::Staged;
    for (DataType dtype : kSomeDtypes) {
      Tensor inout = put(hostTensor({6}, dtype, [&](int64_t i) {
        return valueOf(comm_.rank(), i, 77, dtype, Kind::Any);
      }));
      comm_.allreduce(inout, ReduceOp::Sum, team);
      EXPECT_EQ(comm_.lastTransport(), expected);
      expectEqual(inout, hostTensor({6}, dtype, [&](int64_t i) {
                    double acc = 0;
                    for (int64_t r : team) acc += valueOf(r, i, 77, dtype, Kind::Any);
                    return acc;
                  }), "allreduce forced " + std::string(transportName(expected)));
      Tensor gathered = blank({int64_t(team.size()) * 6}, dtype);
      comm_.allgather(inout, gathered, team);
      EXPECT_EQ(comm_.lastTransport(), expected);
      // Rooted, to the first rank, taking part when it is alone: Prod's identity (1) is no byte
      // pattern, so a root that sends nothing has it copied from the host.
      const int64_t root = 0;
      const bool isRoot = comm_.rank() == root;
      const bool sends = !isRoot || team.size() == 1;
      const Team senders = partsOf(team, root, team.size() == 1);
      Tensor factors = put(hostTensor({6}, dtype, [&](int64_t i) {
        return valueOf(comm_.rank(), i, 78, dtype, Kind::Product);
      }));
      Tensor product = isRoot ? blank({6}, dtype) : Tensor();
      comm_.reduce(sends ? &factors : nullptr, isRoot ? &product : nullptr, ReduceOp::Prod, root,
                   team);
      EXPECT_EQ(comm_.lastTransport(), expected);
      Tensor blocks = isRoot ? blank({int64_t(senders.size()) * 6}, dtype) : Tensor();
      comm_.gather(sends ? &factors : nullptr, isRoot ? &blocks : nullptr, root, team);
      if (!isRoot) continue;
      const std::string what = "forced " + std::string(transportName(expected));
      expectEqual(product, hostTensor({6}, dtype, [&](int64_t i) {
                    double acc = 1;
                    for (int64_t r : senders) acc *= valueOf(r, i, 78, dtype, Kind::Product);
                    return acc;
                  }), "reduce prod " + what);
      expectEqual(blocks, hostTensor({int64_t(senders.size()) * 6}, dtype, [&](int64_t i) {
                    return valueOf(senders[size_t(i / 6)], i % 6, 78, dtype, Kind::Product);
                  }), "gather " + what);
    }
  }
  comm_.setCudaTransport(CudaTransport::Auto);
}
#endif

// Frees the teams' communicators (NCCL's among them) on every rank before exit.
class ReleaseTeams : public ::testing::Environment {
 public:
  void TearDown() override { Communicator::instance().releaseTeams(); }
};

const auto* const kReleaseTeams = ::testing::AddGlobalTestEnvironment(new ReleaseTeams);

}  // namespace
}  // namespace loom::multidevice
