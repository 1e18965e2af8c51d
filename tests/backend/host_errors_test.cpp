// SPDX-License-Identifier: Apache-2.0
// Misuse the host backend can see is reported with a message naming the threads involved.
#include <gtest/gtest.h>

#include <vector>

#include "backend/host_test_util.h"

namespace loom::backend {
namespace {

using testing::loadKernel;
using testing::userErrorOf;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A thread that returns before a __syncthreads the others reach is a divergent barrier.
TEST(HostErrors, DivergentSyncthreadsIsReported) {
  const char* src = R"(
extern "C" __global__ void divergent(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
)";
  auto m = loadKernel(src, "divergent");
  std::vector<int> out(64);
  int* o = out.data();
  void* args[] = {&o};
  // Blocks run one at a time, the last first (docs/host-backend.md): block (1,0,0) fails first.
  const std::string msg = userErrorOf([&] { m->launch({2}, {64}, 0, args); });
  EXPECT_TRUE(contains(msg,
                       "divergent __syncthreads: thread (5,0,0) of block (1,0,0) exited "
                       "while 5 threads wait at a barrier"))
      << msg;
  EXPECT_TRUE(contains(msg, "kernel divergent")) << msg;
}

// The same misuse is caught when the early exit happens before any other thread reaches the
// barrier (the order in which fibers run must not hide it).
TEST(HostErrors, DivergentSyncthreadsAfterEarlyExitIsReported) {
  const char* src = R"(
extern "C" __global__ void early_exit(int* out) {
  if (threadIdx.x == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
)";
  auto m = loadKernel(src, "early_exit");
  std::vector<int> out(32);
  int* o = out.data();
  void* args[] = {&o};
  const std::string msg = userErrorOf([&] { m->launch({1}, {32}, 0, args); });
  EXPECT_TRUE(contains(msg, "divergent __syncthreads: thread (0,0,0) of block (0,0,0) exited"))
      << msg;
}

// A shuffle whose mask names a lane that has exited cannot complete.
TEST(HostErrors, ShuffleMaskWithExitedLaneIsReported) {
  const char* src = R"(
extern "C" __global__ void bad_mask(int* out) {
  if (threadIdx.x == 3) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, 1);
}
)";
  auto m = loadKernel(src, "bad_mask");
  std::vector<int> out(32);
  int* o = out.data();
  void* args[] = {&o};
  const std::string msg = userErrorOf([&] { m->launch({1}, {32}, 0, args); });
  EXPECT_TRUE(contains(msg, "incomplete mask 0xffffffff in __shfl_xor_sync: lane")) << msg;
  EXPECT_TRUE(contains(msg, "lane 3")) << msg;
}

// A shuffle whose mask names lanes that never arrive (they wait elsewhere) is a deadlock that
// names the missing lanes.
TEST(HostErrors, ShuffleMaskWithAbsentLanesIsReported) {
  const char* src = R"(
extern "C" __global__ void absent(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
  __syncthreads();
  out[threadIdx.x] = v;
}
)";
  auto m = loadKernel(src, "absent");
  std::vector<int> out(32);
  int* o = out.data();
  void* args[] = {&o};
  const std::string msg = userErrorOf([&] { m->launch({1}, {32}, 0, args); });
  EXPECT_TRUE(contains(msg, "deadlock")) << msg;
  EXPECT_TRUE(contains(msg,
                       "incomplete mask 0xffffffff in __shfl_down_sync of warp 0: lanes "
                       "16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 never arrived"))
      << msg;
  EXPECT_TRUE(contains(msg, "16 threads wait at __syncthreads")) << msg;
}

// loom_grid_sync needs all blocks resident at once, which only a cooperative launch provides.
TEST(HostErrors, GridSyncWithoutCooperativeLaunchIsReported) {
  const char* src = R"(
extern "C" __global__ void gsync(int* out) {
  out[blockIdx.x] = 1;
  loom_grid_sync();
}
)";
  auto m = loadKernel(src, "gsync");
  std::vector<int> out(2);
  int* o = out.data();
  void* args[] = {&o};
  const std::string msg = userErrorOf([&] { m->launch({2}, {1}, 0, args); });
  EXPECT_TRUE(contains(msg,
                       "loom_grid_sync() in thread (0,0,0) of block (1,0,0) needs a "
                       "cooperative launch"))
      << msg;
  HostLaunchOptions opts;
  opts.cooperative = true;
  EXPECT_EQ(userErrorOf([&] { m->launch({2}, {1}, 0, args, opts); }), "");
}

// A block that spins waiting for another block can never finish when blocks run one after
// another; the emulator says so instead of hanging.
TEST(HostErrors, SpinWaitOnOtherBlocksWithoutCooperativeLaunchIsReported) {
  const char* src = R"(
extern "C" __global__ void spin(unsigned* sem) {
  if (threadIdx.x == 0) {
    atomicAdd(sem, 1u);
    while (atomicAdd(sem, 0u) < gridDim.x) {
    }
  }
}
)";
  auto m = loadKernel(src, "spin");
  unsigned sem = 0;
  unsigned* s = &sem;
  void* args[] = {&s};
  const std::string msg = userErrorOf([&] { m->launch({2}, {4}, 0, args); });
  EXPECT_TRUE(contains(msg, "no progress: thread (0,0,0) of block (1,0,0) keeps spinning")) << msg;
  EXPECT_TRUE(contains(msg, "needs a cooperative launch")) << msg;
  sem = 0;
  HostLaunchOptions opts;
  opts.cooperative = true;
  EXPECT_EQ(userErrorOf([&] { m->launch({2}, {4}, 0, args, opts); }), "");
}

// Launch dimensions outside CUDA's limits are rejected before anything runs.
TEST(HostErrors, BlockTooLargeIsRejected) {
  const char* src = R"(extern "C" __global__ void noop(int*) {})";
  auto m = loadKernel(src, "noop");
  int* o = nullptr;
  void* args[] = {&o};
  const std::string msg = userErrorOf([&] { m->launch({1}, {1025}, 0, args); });
  EXPECT_TRUE(contains(msg, "has 1025 threads, expected 1 to 1024")) << msg;
}

// __trap stops the launch with an error instead of killing the process.
TEST(HostErrors, TrapIsReported) {
  const char* src = R"(
extern "C" __global__ void trapper(int n) { if (threadIdx.x == n) __trap(); }
)";
  auto m = loadKernel(src, "trapper");
  int n = 2;
  void* args[] = {&n};
  const std::string msg = userErrorOf([&] { m->launch({1}, {4}, 0, args); });
  EXPECT_TRUE(contains(msg, "kernel trapped: __trap() called")) << msg;
}

}  // namespace
}  // namespace loom::backend
