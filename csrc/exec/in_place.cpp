// SPDX-License-Identifier: Apache-2.0
// In-place outputs at run time: argument checks and the copy into the input (in_place.h).
#include "loom/exec/in_place.h"

#include <algorithm>
#include <cstring>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/layout.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::exec {

namespace {

int64_t positionOf(const std::vector<ir::Val*>& vals, const ir::Val* v) {
  return int64_t(std::find(vals.begin(), vals.end(), v) - vals.begin());
}

std::string listOf(std::span<const int64_t> v) {
  std::vector<std::string> parts;
  for (int64_t x : v) parts.push_back(std::to_string(x));
  return "[" + join(parts) + "]";
}

// The bytes [first, last) a tensor's elements occupy (non-negative strides; an empty tensor
// occupies none).
std::pair<uintptr_t, uintptr_t> byteRange(const Tensor& t) {
  const auto first = reinterpret_cast<uintptr_t>(t.data());
  if (t.numel() == 0) return {first, first};
  uint64_t span = 1;
  for (int64_t d = 0; d < t.dim(); ++d) span += uint64_t(t.size(d) - 1) * uint64_t(t.stride(d));
  return {first, first + span * t.itemSize()};
}

}  // namespace

std::vector<InPlaceOutput> inPlaceOutputs(const ir::Fusion& fusion) {
  std::vector<InPlaceOutput> out;
  for (const auto& [o, i] : fusion.aliases()) {
    out.push_back({positionOf(fusion.outputs(), o), positionOf(fusion.inputs(), i)});
  }
  return out;
}

std::string describeInPlace(const ir::Fusion& fusion, const InPlaceOutput& a) {
  return "output " + std::to_string(a.output) + " (" +
         fusion.outputs().at(size_t(a.output))->toString() + ") written into input " +
         std::to_string(a.input) + " (" + fusion.inputs().at(size_t(a.input))->toString() + ")";
}

void checkInPlaceLayout(const ir::Fusion& fusion, const InPlaceOutput& a, const Tensor& input,
                        std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  const std::string what = describeInPlace(fusion, a) + " in place (add_output(alias_input=))";
  LOOM_CHECK(std::equal(sizes.begin(), sizes.end(), input.sizes().begin(), input.sizes().end()),
             what, ": the output has sizes ", listOf(sizes), " but the input has sizes ",
             listOf(input.sizes()), "; an input takes only an output of its own shape");
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] <= 1) continue;  // any stride addresses a dim of one element
    LOOM_CHECK(input.stride(int64_t(d)) != 0 && strides[d] != 0, what, ": dimension ", d,
               " is an expanded broadcast (stride 0) in the ",
               input.stride(int64_t(d)) == 0 ? "input" : "output",
               ", whose elements share memory; pass a tensor that holds every element");
    LOOM_CHECK(input.stride(int64_t(d)) == strides[d], what,
               ": the input must be laid out as the output is written (strides ", listOf(strides),
               "), but its strides are ", listOf(input.strides()),
               "; pass a contiguous tensor (x.contiguous()) and copy the result back yourself, "
               "or declare the input's dim order (stride_order) so the output is written alike");
  }
}

void checkInPlaceArguments(const ir::Fusion& fusion, std::span<const eval::Argument> args) {
  const std::vector<InPlaceOutput> aliases = inPlaceOutputs(fusion);
  if (aliases.empty()) return;
  eval::ExpressionEvaluator ee;
  ee.bindInputs(fusion, args);
  for (const InPlaceOutput& a : aliases) {
    const auto* out = fusion.outputs().at(size_t(a.output))->as<ir::TensorView>();
    const Tensor& input = std::get<Tensor>(args[size_t(a.input)]);
    const std::vector<int64_t> sizes = ee.logicalSizes(out);
    checkInPlaceLayout(fusion, a, input, sizes, ir::denseLayout(out, sizes).strides);
  }
}

void checkInPlaceOverlap(const ir::Fusion& fusion, std::span<const eval::Argument> args) {
  for (const InPlaceOutput& a : inPlaceOutputs(fusion)) {
    const auto* target = std::get_if<Tensor>(&args[size_t(a.input)]);
    if (target == nullptr || !target->defined()) continue;
    const auto [lo, hi] = byteRange(*target);
    for (size_t i = 0; i < args.size() && lo != hi; ++i) {
      const auto* other = std::get_if<Tensor>(&args[i]);
      if (int64_t(i) == a.input || other == nullptr || !other->defined()) continue;
      if (other->device() != target->device()) continue;
      const auto [olo, ohi] = byteRange(*other);
      LOOM_CHECK(ohi <= lo || hi <= olo, describeInPlace(fusion, a),
                 " in place (add_output(alias_input=)): input ", i, " (",
                 fusion.inputs().at(i)->toString(), ") shares memory with input ", a.input,
                 ", so writing the output would change what it reads; pass separate tensors "
                 "(clone one of them)");
    }
  }
}

void copyInto(const ComputeDevice& device, const Tensor& target, const Tensor& value,
              CUstream stream) {
  LOOM_ASSERT(target.sizes() == value.sizes() && target.dtype() == value.dtype(),
              "copyInto: tensors of different shapes or dtypes");
  for (int64_t d = 0; d < target.dim(); ++d) {
    LOOM_ASSERT(target.size(d) <= 1 || target.stride(d) == value.stride(d),
                "copyInto: tensors laid out differently");
  }
  const auto [lo, hi] = byteRange(target);
  if (hi == lo || target.data() == value.data()) return;
  if (target.device().isCpu() && value.device().isCpu()) {
    std::memcpy(target.data(), value.data(), hi - lo);
  } else {
    device.copyBytes(target.data(), value.data(), hi - lo, stream);
  }
}

}  // namespace loom::exec
