// SPDX-License-Identifier: Apache-2.0
// In-place outputs (ir::Fusion::aliasOutputToInput, nvFuser's add_output(alias_input=)) at run
// time: the argument checks every executor of such a fusion makes, and the copy into the input
// when the output was computed aside.
//
//   for (const exec::InPlaceOutput& a : exec::inPlaceOutputs(fusion)) ...   // by position
//   exec::checkInPlaceOverlap(fusion, args);          // every run: addresses are not keyed
//
// An input written in place must hold the output exactly as an executor lays the output out
// (ir::denseLayout of its allocation domain: the same sizes, the same strides on every dim of
// more than one element, no expanded dims), so that the kernel's stores, or one copy of the
// bytes, land on the input's elements; anything else is a UserError naming both tensors, before
// anything runs. docs/design.md ("In-place outputs") says who writes the memory when.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loom/backend/cuda/driver.h"
#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/ir/fusion.h"
#include "loom/tensor/tensor.h"

namespace loom::exec {

/// One in-place output, by position among the fusion's outputs and inputs.
struct InPlaceOutput {
  int64_t output = 0;
  int64_t input = 0;
  bool operator==(const InPlaceOutput&) const = default;
};

/// The fusion's in-place outputs, in the order they were declared.
std::vector<InPlaceOutput> inPlaceOutputs(const ir::Fusion& fusion);

/// "output 1 (T3) written into input 0 (T0)": how messages name an in-place output.
std::string describeInPlace(const ir::Fusion& fusion, const InPlaceOutput& a);

/// UserError naming both tensors unless `input` (the argument of input a.input) can hold output
/// a.output laid out with `sizes` and `strides` (the dense layout an executor allocates it in).
void checkInPlaceLayout(const ir::Fusion& fusion, const InPlaceOutput& a, const Tensor& input,
                        std::span<const int64_t> sizes, std::span<const int64_t> strides);

/// checkInPlaceLayout for every in-place output of `fusion`, its sizes evaluated for `args` (the
/// fusion's arguments, already validated) and its layout ir::denseLayout's.
void checkInPlaceArguments(const ir::Fusion& fusion, std::span<const eval::Argument> args);

/// UserError when an input some output is written into shares memory with another tensor
/// argument (one tensor passed twice, two views of one buffer): the write would change what the
/// other argument reads. Cheap (addresses only); made on every run, since addresses are not part
/// of any cache key.
void checkInPlaceOverlap(const ir::Fusion& fusion, std::span<const eval::Argument> args);

/// Copies the elements of `value` into `target`, which has its sizes and strides (checked), on
/// `device` (queued on `stream` on a GPU); two host tensors are copied on the host whatever the
/// device.
void copyInto(const ComputeDevice& device, const Tensor& target, const Tensor& value,
              CUstream stream);

}  // namespace loom::exec
