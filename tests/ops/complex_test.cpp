// SPDX-License-Identifier: Apache-2.0
// Complex numbers (issue 36) below the runtime: the DataType values and their names, host element
// access and DLPack, torch's type promotion with complex, the dtypes the ops give, the errors for
// what complex values do not have, and the text form of complex tensors and constants.
#include <limits>

#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/tensor/dlpack.h"
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DT = DataType;
using C = std::complex<double>;

TEST(ComplexDataType, NamesSizesAndParts) {
  EXPECT_EQ(dataTypeName(DT::ComplexFloat), "c64");
  EXPECT_EQ(dataTypeName(DT::ComplexDouble), "c128");
  EXPECT_EQ(dataTypeSize(DT::ComplexFloat), 8u);
  EXPECT_EQ(dataTypeSize(DT::ComplexDouble), 16u);
  for (const char* name : {"c64", "complex64", "cfloat"}) {
    EXPECT_EQ(parseDataType(name), DT::ComplexFloat) << name;
  }
  for (const char* name : {"c128", "complex128", "cdouble"}) {
    EXPECT_EQ(parseDataType(name), DT::ComplexDouble) << name;
  }
  EXPECT_TRUE(isComplexType(DT::ComplexFloat));
  EXPECT_FALSE(isFloatingType(DT::ComplexDouble));  // as torch.is_floating_point
  EXPECT_EQ(complexPartType(DT::ComplexFloat), DT::Float32);
  EXPECT_EQ(complexPartType(DT::ComplexDouble), DT::Float64);
  EXPECT_EQ(complexTypeOf(DT::Float64), DT::ComplexDouble);
  EXPECT_EQ(complexTypeOf(DT::BFloat16), DT::ComplexFloat);
}

// Both parts are stored and read back, rounded to the part type; poison fills both with NaN.
TEST(ComplexDataType, HostElementsAndDLPackKeepBothParts) {
  Tensor t = Tensor::empty({3}, DT::ComplexFloat);
  t.setComplexLinear(0, {1.5, -2.25});
  t.setComplexLinear(1, {0.1, 1e-50});  // rounds each part to f32
  t.setDoubleLinear(2, 4.0);            // a real value: imaginary part 0
  EXPECT_EQ(t.getComplexLinear(0), C(1.5, -2.25));
  EXPECT_EQ(t.getComplexLinear(1), C(double(0.1f), 0.0));
  EXPECT_EQ(t.getComplexLinear(2), C(4.0, 0.0));
  EXPECT_EQ(t.getDoubleLinear(0), 1.5);  // the real part

  // DLPack: kDLComplex of 64 bits, imported back without a copy and with both parts.
  dlpack::DLManagedTensorVersioned* exported = toDLPackVersioned(t);
  EXPECT_EQ(exported->dl_tensor.dtype.code, dlpack::kDLComplex);
  EXPECT_EQ(exported->dl_tensor.dtype.bits, 64);
  Tensor back = fromDLPack(exported);
  EXPECT_EQ(back.dtype(), DT::ComplexFloat);
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back.getComplexLinear(0), C(1.5, -2.25));

  Tensor d = Tensor::empty({2}, DT::ComplexDouble);
  poison(d);
  EXPECT_TRUE(std::isnan(d.getComplexLinear(1).real()));
  EXPECT_TRUE(std::isnan(d.getComplexLinear(1).imag()));
  fillRandom(d, 7);
  EXPECT_NE(d.getComplexLinear(0).imag(), 0.0);
  EXPECT_LE(std::abs(d.getComplexLinear(0).imag()), 1.0);
}

class ComplexOpsTest : public OpsTest {
 protected:
  DataType result(std::vector<Operand> ops) { return resultType(ops); }
  TensorView* t(DataType dtype) { return input({4}, dtype); }
};

// torch's promotion: complex tensors win over real ones, taking the wider part; a complex number
// with real tensors gives the complex type of their precision.
TEST_F(ComplexOpsTest, TypePromotion) {
  EXPECT_EQ(result({t(DT::ComplexFloat), t(DT::Float32)}), DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::ComplexFloat), t(DT::Float64)}), DT::ComplexDouble);
  EXPECT_EQ(result({t(DT::ComplexFloat), t(DT::Float16)}), DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::ComplexDouble), t(DT::Float32)}), DT::ComplexDouble);
  EXPECT_EQ(result({t(DT::ComplexFloat), t(DT::ComplexDouble)}), DT::ComplexDouble);
  EXPECT_EQ(result({t(DT::Int64), t(DT::ComplexFloat)}), DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::Bool), t(DT::ComplexDouble)}), DT::ComplexDouble);
  // Numbers: a complex number over real tensors, a real number under a complex tensor.
  EXPECT_EQ(result({t(DT::Float32), C(0.0, 1.0)}), DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::Float64), C(0.0, 1.0)}), DT::ComplexDouble);
  EXPECT_EQ(result({t(DT::Int32), C(0.0, 1.0)}), DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::ComplexFloat), 2.5}), DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::ComplexFloat), C(1.0, 1.0)}), DT::ComplexFloat);
  EXPECT_EQ(computeType(std::vector<Operand>{t(DT::ComplexFloat)}, PromotionKind::IntToFloat),
            DT::ComplexFloat);
}

TEST_F(ComplexOpsTest, OpDtypes) {
  TensorView* z = t(DT::ComplexFloat);
  TensorView* r = t(DT::Float32);
  EXPECT_EQ(abs(z)->dtype(), DT::Float32);
  EXPECT_EQ(real(z)->dtype(), DT::Float32);
  EXPECT_EQ(imag(z)->dtype(), DT::Float32);
  EXPECT_EQ(conj(z)->dtype(), DT::ComplexFloat);
  EXPECT_EQ(exp(z)->dtype(), DT::ComplexFloat);
  EXPECT_EQ(isNan(z)->dtype(), DT::Bool);
  EXPECT_EQ(eq(z, z)->dtype(), DT::Bool);
  EXPECT_EQ(div(z, 2)->dtype(), DT::ComplexFloat);
  EXPECT_EQ(sum(z, {0})->dtype(), DT::ComplexFloat);
  EXPECT_EQ(mean(z, {0})->dtype(), DT::ComplexFloat);
  EXPECT_EQ(complex(r, r)->dtype(), DT::ComplexFloat);
  EXPECT_EQ(cast(r, DT::ComplexDouble)->dtype(), DT::ComplexDouble);
  // A real tensor is its own real part and conjugate (torch.real / torch.conj).
  EXPECT_EQ(real(r), r);
  EXPECT_EQ(conj(r), r);
  verifyOutputs({abs(z), real(z), exp(z), sum(z, {0}), complex(r, r), cast(z, DT::ComplexDouble)});
}

// What complex numbers do not have is a UserError naming the tensor and the op.
TEST_F(ComplexOpsTest, UndefinedOpsAreUserErrors) {
  TensorView* z = t(DT::ComplexFloat);
  TensorView* r = t(DT::Float32);
  std::string msg = userError([&] { cast(z, DT::Float32); });
  EXPECT_HAS(msg, "is c64, and a complex value does not convert to f32");
  EXPECT_HAS(msg, "real(x)");
  msg = userError([&] { lt(z, z); });
  EXPECT_HAS(msg, "lt: ");
  EXPECT_HAS(msg, "is not defined for complex values");
  msg = userError([&] { maximum(z, r); });
  EXPECT_HAS(msg, "maximum");
  msg = userError([&] { max(z, {0}); });
  EXPECT_HAS(msg, "max: ");
  EXPECT_HAS(msg, "no order");
  msg = userError([&] { imag(r); });
  EXPECT_HAS(msg, "imag is defined for complex tensors only");
  msg = userError([&] { erf(z); });
  EXPECT_HAS(msg, "erf: ");
  msg = userError([&] { variance(z, {0}, 1.0, false); });
  EXPECT_HAS(msg, "variance");
  msg = userError([&] { clamp(z, 0.0, 1.0); });
  EXPECT_HAS(msg, "clamp");
  msg = userError([&] { complex(z, r); });
  EXPECT_HAS(msg, "complex: ");
}

// Complex tensors and constants print and parse back; the verifier refuses a complex-to-real cast
// written in the text form.
TEST(ComplexText, RoundTripAndVerifierRules) {
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard g(f.get());
    TensorView* z = TensorBuilder().shape({3}).dtype(DT::ComplexDouble).build();
    f->addInput(z);
    f->addOutput(abs(mul(add(z, C(1.5, -2.0)), 2.0)));
    f->addOutput(sum(z, {0}));
  }
  const std::string text = ir::printFusion(*f);
  EXPECT_NE(text.find("c128(1.5, -2.0)"), std::string::npos) << text;
  EXPECT_NE(text.find(": c128"), std::string::npos) << text;
  EXPECT_EQ(ir::printFusion(*ir::parseFusion(text, "complex.fus")), text);

  const std::string bad =
      "inputs:  T0\noutputs: T1\n\n# tensors\nT0 : c64 global [i0{3}]\n"
      "T1 : f32 global [i1{3}]\n\n# math\nT1 = cast(T0, f32)\n";
  std::string msg;
  try {
    ir::parseFusion(bad, "bad.fus");
  } catch (const UserError& e) {
    msg = e.message();
  }
  EXPECT_HAS(msg, "cast of a complex value to f32 is not defined");
  // Factories that compute values (iota) make no complex numbers.
  msg.clear();
  try {
    ir::parseFusion(
        "inputs:  T0\noutputs: T1\n\n# tensors\nT0 : f32 global [i0{4}]\n"
        "T1 : c64 global [i1{4}]\n\n# math\nT1 = iota(start=0, step=1)\n",
        "iota.fus");
  } catch (const UserError& e) {
    msg = e.message();
  }
  EXPECT_HAS(msg, "iota makes integers or floats, not c64");
  const std::string imag_only =
      "inputs:  T0\noutputs: T1\n\n# tensors\nT0 : c64 global [i0{3}]\n"
      "T1 : c64 global [i1{3}]\n\n# math\nT1 = add(T0, c64(0.5))\n";
  EXPECT_EQ(ir::printFusion(*ir::parseFusion(imag_only, "ok.fus")).find("c64(0.5, 0.0)") !=
                std::string::npos,
            true);
}

}  // namespace
}  // namespace loom::ops::testing
