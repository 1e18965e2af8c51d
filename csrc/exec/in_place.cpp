// SPDX-License-Identifier: Apache-2.0
// In-place outputs at run time: argument checks and the copy into the input (in_place.h).
#include "loom/exec/in_place.h"

#include <algorithm>
#include <cstring>

#include "loom/eval/expression_evaluator.h"
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

// True unless the strides, ordered from the smallest, each reach past every element of the dims
// inside them: the sufficient test that no two elements share an address (an exact one is a
// subset-sum problem). Dims of one element are left out; strides are positive here.
bool mayOverlap(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1) dims.emplace_back(t.stride(d), t.size(d));
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 1;  // one past the largest offset of the dims so far
  for (const auto& [stride, size] : dims) {
    if (stride < reach) return true;
    reach = stride * (size - 1) + reach;
  }
  return false;
}

bool sameLayout(const Tensor& a, const Tensor& b) {
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
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
                        std::span<const int64_t> sizes) {
  const std::string what = describeInPlace(fusion, a) + " in place (add_output(alias_input=))";
  LOOM_CHECK(std::equal(sizes.begin(), sizes.end(), input.sizes().begin(), input.sizes().end()),
             what, ": the output has sizes ", listOf(sizes), " but the input has sizes ",
             listOf(input.sizes()), "; an input takes only an output of its own shape");
  if (input.numel() == 0) return;  // nothing is written
  // Any layout whose elements have distinct addresses takes the output (copyInto writes through
  // its strides); one where two elements share an address cannot hold two different values.
  const std::string layout =
      "sizes " + listOf(input.sizes()) + ", strides " + listOf(input.strides());
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (input.size(d) <= 1) continue;  // any stride addresses a dim of one element
    LOOM_CHECK(input.stride(d) > 0, what, ": the input (", layout, ") has stride ", input.stride(d),
               " on dimension ", d,
               input.stride(d) == 0 ? " (an expanded broadcast), so its elements share memory"
                                    : ", and only non-negative strides are written",
               "; pass a tensor that holds every element (x.clone())");
  }
  LOOM_CHECK(!mayOverlap(input), what, ": the input (", layout,
             ") may address one element twice (its strides, ordered, do not each pass the span "
             "of the dims inside them), so writing it in place is not safe; pass a tensor whose "
             "elements do not share memory (x.clone())");
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
    checkInPlaceLayout(fusion, a, input, sizes);
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
  if (target.numel() == 0 || target.data() == value.data()) return;
  const bool host = target.device().isCpu() && value.device().isCpu();
  const auto [lo, hi] = byteRange(target);
  // Laid out alike with no gaps (a gap's bytes are not the caller's to write): one copy.
  if (sameLayout(target, value) && hi - lo == uint64_t(target.numel()) * target.itemSize()) {
    if (host) {
      std::memcpy(target.data(), value.data(), hi - lo);
    } else {
      device.copyBytes(target.data(), value.data(), hi - lo, stream);
    }
  } else if (host) {
    copyElements(target, value);
  } else {
    device.copyElements(target, value, stream);
  }
}

}  // namespace loom::exec
