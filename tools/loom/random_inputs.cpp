// SPDX-License-Identifier: Apache-2.0
// Random inputs for `loom eval` and `loom run`.
#include "tools/loom/random_inputs.h"

#include <algorithm>
#include <charconv>

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

std::vector<eval::Argument> randomInputs(const ir::Fusion& fusion,
                                         const std::map<std::string, std::string>& sizes,
                                         uint64_t seed) {
  auto valueOf = [&](const ir::Val* v, const std::string& what) -> const std::string& {
    auto it = sizes.find(v->toString());
    LOOM_CHECK(it != sizes.end(), what, " is ", v->toString(), "; pass it with --sizes ",
               v->toString(), "=N");
    return it->second;
  };
  std::vector<eval::Argument> inputs;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    ir::Val* in = fusion.inputs()[i];
    if (auto* tv = in->dynCast<ir::TensorView>()) {
      const std::string name = "input " + std::to_string(i) + " (" + tv->toString() + ")";
      std::vector<int64_t> shape;
      auto ids = ir::TensorDomain::noReductions(tv->logical());
      for (size_t k = 0; k < ids.size(); ++k) {
        const ir::Scalar* e = ids[k]->logicalExtent();
        int64_t size = 0;
        if (auto c = e->constInt()) {
          size = *c;
        } else {
          const std::string what = "the size of " + tv->toString() + " axis " + std::to_string(k);
          size = parseInteger(valueOf(e, what), e->toString());
        }
        LOOM_CHECK(size >= 0, "the size of ", name, " axis ", k, " (", e->toString(),
                   ") must not be negative, got ", size);
        shape.push_back(size);
      }
      checkedMul(checkedNumel(shape, "the element count of " + name),
                 int64_t(dataTypeSize(tv->dtype())), "the byte size of " + name);
      Tensor t = Tensor::empty(shape, tv->dtype());
      fillRandom(t, seed * 1000003 + i);
      inputs.emplace_back(std::move(t));
      continue;
    }
    auto* s = in->as<ir::Scalar>();
    const std::string& v = valueOf(s, "scalar input " + s->toString());
    if (isFloatingType(s->dtype())) {
      inputs.emplace_back(parseNumber(v, s->toString()));
    } else if (isBooleanType(s->dtype())) {
      LOOM_CHECK(v == "true" || v == "false" || v == "1" || v == "0", s->toString(),
                 " is a bool: pass true, false, 1 or 0, got '", v, "'");
      inputs.emplace_back(v == "true" || v == "1");
    } else {
      inputs.emplace_back(parseInteger(v, s->toString()));
    }
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
