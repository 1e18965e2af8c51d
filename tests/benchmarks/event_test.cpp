// SPDX-License-Identifier: Apache-2.0
// Tests of cuda::Event, the timer of loom_bench: elapsed time of known work, errors named. Each
// test that needs a GPU skips, saying why, where there is none.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/stream.h"

namespace loom::cuda {
namespace {

// Without a usable driver, creating an event is an UnavailableError naming what needed the GPU.
TEST(CudaEvent, UnavailableWithoutGpu) {
  if (cudaAvailable()) GTEST_SKIP() << "a GPU is present";
  try {
    (void)Event::create(0);
    FAIL() << "Event::create succeeded without a GPU";
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("creating a CUDA event"), std::string::npos) << e.what();
  }
}

// The events around a 1 GiB memset measure it: well above zero, below a second (it takes about
// 0.3 ms on an H200), and a second pair around nothing measures less.
TEST(CudaEvent, ElapsedTimeOfKnownWork) {
  if (!cudaAvailable()) GTEST_SKIP() << "no GPU: " << unavailableReason();
  Stream stream = Stream::create(0);
  Tensor buf = emptyCuda({int64_t(1) << 28}, DataType::Float32, 0, stream.handle());
  Event a = Event::create(0), b = Event::create(0), c = Event::create(0);
  fillBytes(buf, 0, stream.handle());  // first touch outside the timed part
  a.record(stream.handle());
  fillBytes(buf, 1, stream.handle());
  b.record(stream.handle());
  c.record(stream.handle());
  c.synchronize();
  float work = Event::elapsedMs(a, b);
  float nothing = Event::elapsedMs(b, c);
  EXPECT_GT(work, 0.05f);
  EXPECT_LT(work, 1000.0f);
  EXPECT_LT(nothing, work);
  EXPECT_GE(nothing, 0.0f);
}

// A moved-from event is a UserError on use; an event never recorded makes elapsedMs a CudaError
// naming the driver call.
TEST(CudaEvent, ErrorsNameTheProblem) {
  if (!cudaAvailable()) GTEST_SKIP() << "no GPU: " << unavailableReason();
  Stream stream = Stream::create(0);
  Event a = Event::create(0);
  Event moved = std::move(a);
  try {
    a.record(stream.handle());
    FAIL() << "record on a moved-from event succeeded";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("moved-from"), std::string::npos) << e.what();
  }
  Event never = Event::create(0);
  moved.record(stream.handle());
  moved.synchronize();
  try {
    (void)Event::elapsedMs(never, moved);
    FAIL() << "elapsedMs with an unrecorded event succeeded";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("cuEventElapsedTime"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::cuda
