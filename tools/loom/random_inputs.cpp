// SPDX-License-Identifier: Apache-2.0
// Random inputs for `loom eval` and `loom run`.
#include "tools/loom/random_inputs.h"

#include <algorithm>
#include <charconv>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/support/checked_math.h"
#include "loom/support/strings.h"
#include "loom/tensor/tensor.h"

namespace loom::tools {

namespace {

// The whole of `text` as a T, else a UserError "WHAT must be KIND".
template <typename T>
T parseWhole(const std::string& text, const std::string& what, const char* kind) {
  T v{};
  auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  LOOM_CHECK(!text.empty() && res.ec == std::errc() && res.ptr == text.data() + text.size(), what,
             " must be ", kind, ", got '", text, "'");
  return v;
}

}  // namespace

int64_t parseInteger(const std::string& text, const std::string& what) {
  return parseWhole<int64_t>(text, what, "an integer");
}

double parseNumber(const std::string& text, const std::string& what) {
  return parseWhole<double>(text, what, "a number");
}

std::map<std::string, std::string> parseSizes(const std::string& spec) {
  std::map<std::string, std::string> out;
  for (const std::string& item : split(spec, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    LOOM_CHECK(eq != std::string::npos && eq > 0, "--sizes expects NAME=VALUE pairs such as ",
               "s0=128,s1=64, got '", item, "'");
    const std::string name = item.substr(0, eq);
    LOOM_CHECK(out.emplace(name, item.substr(eq + 1)).second, "--sizes gives ", name, " twice");
  }
  return out;
}

namespace {

/// The shape `sizes` and the constants give tensor input `tv` (input `i`), checked for negative
/// sizes and element or byte counts that overflow; nothing is allocated.
std::vector<int64_t> inputShape(const ir::TensorView* tv, size_t i,
                                const std::map<std::string, std::string>& sizes) {
  const std::string name = "input " + std::to_string(i) + " (" + tv->toString() + ")";
  std::vector<int64_t> shape;
  auto ids = ir::TensorDomain::noReductions(tv->logical());
  for (size_t k = 0; k < ids.size(); ++k) {
    const ir::Scalar* e = ids[k]->logicalExtent();
    int64_t size = 0;
    if (auto c = e->constInt()) {
      size = *c;
    } else {
      auto it = sizes.find(e->toString());
      LOOM_CHECK(it != sizes.end(), "the size of ", tv->toString(), " axis ", k, " is ",
                 e->toString(), "; pass it with --sizes ", e->toString(), "=N");
      size = parseInteger(it->second, e->toString());
    }
    LOOM_CHECK(size >= 0, "the size of ", name, " axis ", k, " (", e->toString(),
               ") must not be negative, got ", size);
    shape.push_back(size);
  }
  checkedMul(checkedNumel(shape, "the element count of " + name),
             int64_t(dataTypeSize(tv->dtype())), "the byte size of " + name);
  return shape;
}

/// Scalar input `s`'s value from `sizes`.
eval::Argument scalarInput(const ir::Scalar* s, const std::map<std::string, std::string>& sizes) {
  auto it = sizes.find(s->toString());
  LOOM_CHECK(it != sizes.end(), "scalar input ", s->toString(), " is ", s->toString(),
             "; pass it with --sizes ", s->toString(), "=N");
  const std::string& v = it->second;
  if (isFloatingType(s->dtype())) return parseNumber(v, s->toString());
  if (isBooleanType(s->dtype())) {
    LOOM_CHECK(v == "true" || v == "false" || v == "1" || v == "0", s->toString(),
               " is a bool: pass true, false, 1 or 0, got '", v, "'");
    return v == "true" || v == "1";
  }
  return parseInteger(v, s->toString());
}

}  // namespace

void checkSizeNames(const ir::Fusion& fusion, const std::map<std::string, std::string>& sizes) {
  std::vector<std::string> names;
  auto add = [&](const ir::Scalar* s) {
    std::string n = s->toString();
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (ir::Val* in : fusion.inputs()) {
    if (const auto* tv = in->dynCast<ir::TensorView>()) {
      for (const ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
        if (!id->logicalExtent()->isConst()) add(id->logicalExtent());
      }
    } else {
      add(in->as<ir::Scalar>());
    }
  }
  for (const auto& [name, value] : sizes) {
    LOOM_CHECK(std::find(names.begin(), names.end(), name) != names.end(), "--sizes names ", name,
               ", which is not a symbolic size or scalar input of this fusion (",
               names.empty() ? std::string("it has none") : "its names: " + join(names), ")");
  }
}

std::vector<eval::Argument> randomInputs(const ir::Fusion& fusion,
                                         const std::map<std::string, std::string>& sizes,
                                         uint64_t seed) {
  // Every size is checked before any memory is spent: the arguments first stand in as tensors
  // of the right shapes over one element (all strides 0), and binding them checks what the
  // file itself says about sizes (constant extents, symbolic extents shared by inputs, dims the
  // exprs line up). Otherwise a --sizes value the file contradicts would first fill gigabytes.
  alignas(16) static unsigned char element[16];
  std::vector<eval::Argument> inputs;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    ir::Val* in = fusion.inputs()[i];
    if (auto* tv = in->dynCast<ir::TensorView>()) {
      std::vector<int64_t> shape = inputShape(tv, i, sizes);
      std::vector<int64_t> strides(shape.size(), 0);
      inputs.emplace_back(Tensor::fromBlob(element, std::move(shape), std::move(strides),
                                           tv->dtype(), Device::cpu()));
    } else {
      inputs.push_back(scalarInput(in->as<ir::Scalar>(), sizes));
    }
  }
  eval::ExpressionEvaluator().bindInputs(fusion, inputs, eval::ExpressionEvaluator::Shards::Global);
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto* stand_in = std::get_if<Tensor>(&inputs[i]);
    if (stand_in == nullptr) continue;
    Tensor t = Tensor::empty(stand_in->sizes(), stand_in->dtype());
    fillRandom(t, seed * 1000003 + i);
    inputs[i] = std::move(t);
  }
  return inputs;
}

eval::Tolerance outputTolerance(const std::vector<eval::Argument>& inputs, DataType dtype,
                                int64_t output_numel) {
  int64_t widest = 1;
  for (const eval::Argument& a : inputs) {
    if (const auto* t = std::get_if<Tensor>(&a)) widest = std::max(widest, t->numel());
  }
  return eval::defaultTolerance(dtype,
                                std::max<int64_t>(1, widest / std::max<int64_t>(1, output_numel)));
}

}  // namespace loom::tools
