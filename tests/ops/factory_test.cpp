// SPDX-License-Identifier: Apache-2.0
// Factories (full, zeros, ones, iota, arange): output shapes, IterTypes, dtypes and errors.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using FactoryTest = OpsTest;

// full makes a FullOp without tensor inputs; size 1 is Broadcast, other constants Iteration,
// and the value is cast to the dtype.
TEST_F(FactoryTest, FullShapeAndValue) {
  auto* y = full({2, 1, 3}, 1.5, DataType::Int32);
  ASSERT_TRUE(y->definition()->isA<ir::FullOp>());
  auto* op = y->definition()->as<ir::FullOp>();
  EXPECT_EQ(op->value()->dtype(), DataType::Int32);
  EXPECT_EQ(op->value()->constInt(), 1);
  EXPECT_EQ(y->dtype(), DataType::Int32);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(types(y), "iter,bcast,iter");
  EXPECT_EQ(sizes(zeros({4})), (std::vector<int64_t>{4}));
  EXPECT_EQ(ones({4}, DataType::Bool)->definition()->as<ir::FullOp>()->value()->constInt(), 1);
  verifyOutputs({y});
}

// A Scalar size (e.g. a scalar fusion input) becomes the extent of an Iteration ID.
TEST_F(FactoryTest, FullScalarShape) {
  auto* n = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(n);
  auto* y = full({n, 0}, 0.0, DataType::Float32);
  EXPECT_EQ(y->logical()[0]->extent(), n);
  EXPECT_EQ(types(y), "iter,iter");
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1, 0}));
  verifyOutputs({y});
}

// Negative sizes and tensor values are UserErrors.
TEST_F(FactoryTest, FullErrors) {
  std::string msg = userError([&] { full({2, -2}, 0.0, DataType::Float32); });
  EXPECT_HAS(msg, "size -2 at dimension 1 of [2, -2] is negative");
  EXPECT_HAS(userError([&] { full({2}, input({2}), DataType::Float32); }),
             "the fill value must be a number or a Scalar");
}

// iota is 1-D with start and step cast to the dtype; length 1 is a broadcast.
TEST_F(FactoryTest, Iota) {
  auto* y = iota(5, 2, 3, DataType::Float32);
  ASSERT_TRUE(y->definition()->isA<ir::IotaOp>());
  auto* op = y->definition()->as<ir::IotaOp>();
  EXPECT_EQ(op->start()->dtype(), DataType::Float32);
  EXPECT_EQ(op->step()->constDouble(), 3.0);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{5}));
  EXPECT_EQ(y->dtype(), DataType::Float32);
  EXPECT_EQ(types(iota(1)), "bcast");
  EXPECT_EQ(iota(3)->dtype(), DataType::Int64);
  EXPECT_HAS(userError([&] { iota(-1); }), "size -1 at dimension 0 is negative");
  EXPECT_HAS(userError([&] { iota(3, 0, 1, DataType::Bool); }), "dtype bool is not supported");
  verifyOutputs({y});
}

// arange has torch's length ceil((end - start) / step) and dtype (Int64 for integers, else
// Float32).
TEST_F(FactoryTest, ArangeLengthAndDtype) {
  EXPECT_EQ(sizes(arange(0, 10)), (std::vector<int64_t>{10}));
  EXPECT_EQ(arange(0, 10)->dtype(), DataType::Int64);
  EXPECT_EQ(sizes(arange(0.0, 1.0, 0.3)), (std::vector<int64_t>{4}));
  EXPECT_EQ(arange(0.0, 1.0, 0.3)->dtype(), DataType::Float32);
  EXPECT_EQ(sizes(arange(5, 0, -2)), (std::vector<int64_t>{3}));
  EXPECT_EQ(sizes(arange(3, 3)), (std::vector<int64_t>{0}));
  EXPECT_EQ(arange(0, 4, 1, DataType::Float64)->dtype(), DataType::Float64);
}

// A Scalar bound gives a symbolic length (scalar math evaluated at run time).
TEST_F(FactoryTest, ArangeScalar) {
  auto* end = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(end);
  auto* y = arange(0, end, 2);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1}));
  EXPECT_EQ(y->dtype(), DataType::Int64);
  verifyOutputs({y});
}

// Step 0 and bounds inconsistent with the step's sign are UserErrors, as in torch.
TEST_F(FactoryTest, ArangeErrors) {
  EXPECT_HAS(userError([&] { arange(0, 5, 0); }), "step must be nonzero");
  EXPECT_HAS(userError([&] { arange(5, 0, 1); }), "inconsistent with the sign of step=1");
  EXPECT_HAS(userError([&] { arange(input({2}), 5); }), "start must be a number or a Scalar");
}

}  // namespace
}  // namespace loom::ops::testing
