// SPDX-License-Identifier: Apache-2.0
// Behaviour without a CUDA driver: queries answer, GPU work throws a clear UnavailableError.
#include "loom/backend/cuda/driver.h"

#include <gtest/gtest.h>

#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/stream.h"

namespace loom::cuda {
namespace {

// A driver library that cannot be opened is reported as "no CUDA driver (<name>) found".
TEST(Driver, MissingLibraryIsReportedByName) {
  std::string reason = probeDriverLibrary("libloom-no-such-driver.so.1");
  EXPECT_NE(reason.find("no CUDA driver (libloom-no-such-driver.so.1) found"), std::string::npos)
      << reason;
}

// The availability queries never throw and agree with each other.
TEST(Driver, QueriesAgree) {
  bool available = cudaAvailable();
  EXPECT_EQ(available, deviceCount() > 0);
  EXPECT_EQ(available, unavailableReason().empty());
}

// Without a driver, allocating a CUDA tensor throws UnavailableError naming libcuda.so.1 and
// what needed the GPU.
TEST(Driver, AllocationWithoutDriverThrowsUnavailable) {
  if (cudaAvailable()) GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_EQ(deviceCount(), 0);
  try {
    emptyCuda({4}, DataType::Float32);
    FAIL() << "expected UnavailableError";
  } catch (const UnavailableError& e) {
    std::string msg = e.message();
    EXPECT_NE(msg.find("no CUDA driver (libcuda.so.1) found: a GPU is required for allocating a "
                       "CUDA tensor"),
              std::string::npos)
        << msg;
  }
  EXPECT_THROW(Stream::create(0), UnavailableError);
  EXPECT_THROW(deviceProperties(0), UnavailableError);
  // The legacy default stream is only a handle: making one needs no driver.
  EXPECT_EQ(Stream::legacyDefault().handle(), nullptr);
}

}  // namespace
}  // namespace loom::cuda
