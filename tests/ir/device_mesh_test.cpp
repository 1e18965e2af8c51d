// SPDX-License-Identifier: Apache-2.0
// DeviceMesh: N-D shapes, the axes of the DID types, teams, printing, the text form and errors.
#include <gtest/gtest.h>

#include "user_error_of.h"

#include "ir/text_test_util.h"
#include "loom/ir/device_mesh.h"

namespace loom::ir {
namespace {

TEST(DeviceMeshTest, AxesFromTheLast) {
  DeviceMesh m({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(m.rank(), 2);
  EXPECT_EQ(m.size(), 6);
  EXPECT_EQ(m.size(ParallelType::DIDx), 3);
  EXPECT_EQ(m.size(ParallelType::DIDy), 2);
  EXPECT_FALSE(m.hasAxis(ParallelType::DIDz));
  EXPECT_EQ(m.coordinate(4, ParallelType::DIDx), 1);
  EXPECT_EQ(m.coordinate(4, ParallelType::DIDy), 1);
  EXPECT_EQ(m.coordinate(9, ParallelType::DIDx), -1);
  EXPECT_EQ(m.team(4, ParallelType::DIDx), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(m.team(4, ParallelType::DIDy), (std::vector<int64_t>{1, 4}));
  std::ostringstream os;
  os << m;
  EXPECT_EQ(os.str(), "[[0, 1, 2], [3, 4, 5]]");
  EXPECT_NE(loom::test::userErrorOf([&] { (void)m.size(ParallelType::DIDz); }).find("no axis for DIDz"),
            std::string::npos);
}

TEST(DeviceMeshTest, Errors) {
  EXPECT_NE(loom::test::userErrorOf([] { DeviceMesh({0, 1, 1}); }).find("lists device 1 twice"),
            std::string::npos);
  EXPECT_NE(loom::test::userErrorOf([] { DeviceMesh({0, 1, 2}, {2, 2}); }).find("holds 4 devices but 3"),
            std::string::npos);
  EXPECT_NE(loom::test::userErrorOf([] { DeviceMesh({0, 1}, {1, 1, 1, 2}); }).find("1 to 3 axes"),
            std::string::npos);
}

// A 2-D mesh prints as nested lists and parses back; a ragged one is a located error.
TEST(DeviceMeshTest, TextForm) {
  const std::string text =
      "inputs: T0\noutputs: T1\n"
      "T0 : f32 global [i0{4}, i1{6}] mesh=[[0, 1, 2], [3, 4, 5]]\n"
      "     loop [i2{2, DIDy}, i3{2}, i4{3, DIDx}, i5{2}]\n"
      "     i2, i3 = outer_split(i0, 2)\n"
      "     i4, i5 = outer_split(i1, 3)\n"
      "T1 : f32 global [i6{4}, i7{6}]\n"
      "T1 = neg(T0)\n";
  auto f = parseFusion(text, "mesh.fus");
  auto* t0 = f->inputs()[0]->as<TensorView>();
  EXPECT_EQ(t0->deviceMesh(), DeviceMesh({0, 1, 2, 3, 4, 5}, {2, 3}));
  std::string printed = f->toString();
  EXPECT_NE(printed.find("mesh=[[0, 1, 2], [3, 4, 5]]"), std::string::npos) << printed;
  test::expectRoundTrip(*f);

  std::string ragged = text;
  ragged.replace(ragged.find("[3, 4, 5]"), 9, "[3, 4]");
  std::string err = loom::test::userErrorOf([&] { parseFusion(ragged, "bad.fus"); });
  EXPECT_NE(err.find("bad.fus:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("equal lengths"), std::string::npos) << err;

  std::string repeated = text;
  repeated.replace(repeated.find("[3, 4, 5]"), 9, "[3, 4, 4]");
  err = loom::test::userErrorOf([&] { parseFusion(repeated, "bad.fus"); });
  EXPECT_NE(err.find("bad.fus:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("lists device 4 twice"), std::string::npos) << err;

  // DIDz needs a third mesh axis.
  std::string no_axis = text;
  no_axis.replace(no_axis.find("DIDy"), 4, "DIDz");
  err = loom::test::userErrorOf([&] { parseFusion(no_axis, "bad.fus"); });
  EXPECT_NE(err.find("no axis for DIDz"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom::ir
