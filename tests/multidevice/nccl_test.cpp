// SPDX-License-Identifier: Apache-2.0
// The NCCL loader without a GPU: a missing library is a reason, not a crash; the library of this
// machine (when there is one) loads with every entry point Loom calls; Loom's declarations of
// NCCL's types match nccl.h where the toolkit has it.
#include <gtest/gtest.h>

#include "multidevice/nccl_api.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
#define LOOM_TEST_HAS_NCCL_H 1
#endif

namespace loom::multidevice::nccl {
namespace {

#ifdef LOOM_TEST_HAS_NCCL_H
// Loom calls NCCL through its own declarations (no NCCL headers needed to build); they must be
// NCCL's ABI.
static_assert(sizeof(UniqueId) == sizeof(ncclUniqueId));
static_assert(sizeof(Result) == sizeof(ncclResult_t) && kSuccess == ncclSuccess &&
              kInProgress == ncclInProgress);
static_assert(sizeof(DataType) == sizeof(ncclDataType_t));
static_assert(kUint8 == ncclUint8 && kInt32 == ncclInt32 && kInt64 == ncclInt64 &&
              kFloat16 == ncclFloat16 && kFloat32 == ncclFloat32 && kFloat64 == ncclFloat64 &&
              kBfloat16 == ncclBfloat16);
static_assert(sizeof(RedOp) == sizeof(ncclRedOp_t));
static_assert(kSum == ncclSum && kProd == ncclProd && kMax == ncclMax && kMin == ncclMin);
#endif

// A library that is not there is a reason naming it, and no exception.
TEST(Nccl, MissingLibraryIsAReason) {
  std::string why = probeLibrary("libloom_no_such_nccl.so.2");
  EXPECT_NE(why.find("NCCL (libloom_no_such_nccl.so.2) could not be loaded"), std::string::npos)
      << why;
}

// This machine's libnccl.so.2, when it has one, has every entry point Loom calls and a version
// Loom supports.
TEST(Nccl, LibraryLoads) {
  int version = 0;
  std::string why = probeLibrary("libnccl.so.2", &version);
  if (why.find("could not be loaded") != std::string::npos) GTEST_SKIP() << why;
  EXPECT_EQ(why, "");
  EXPECT_GE(version, 21000) << versionText(version);
}

// NCCL's version codes, old form and new.
TEST(Nccl, VersionText) {
  EXPECT_EQ(versionText(22809), "2.28.9");
  EXPECT_EQ(versionText(21000), "2.10.0");
  EXPECT_EQ(versionText(2708), "2.7.8");
}

// Bool reductions run on 0/1 bytes: Sum and Max as max (or), Prod and Min as min (and).
TEST(Nccl, TypesAndReductions) {
  EXPECT_EQ(dataType(::loom::DataType::Bool), kUint8);
  EXPECT_EQ(dataType(::loom::DataType::BFloat16), kBfloat16);
  EXPECT_EQ(redOp(::loom::DataType::Bool, ReduceOp::Sum), kMax);
  EXPECT_EQ(redOp(::loom::DataType::Bool, ReduceOp::Prod), kMin);
  EXPECT_EQ(redOp(::loom::DataType::Float32, ReduceOp::Prod), kProd);
}

}  // namespace
}  // namespace loom::multidevice::nccl
