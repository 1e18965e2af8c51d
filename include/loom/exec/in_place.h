// SPDX-License-Identifier: Apache-2.0
// In-place outputs (ir::Fusion::aliasOutputToInput, nvFuser's add_output(alias_input=)) at run
// time: the argument checks every executor of such a fusion makes, and the copy into the input
// when the output was computed aside.
//
//   for (const exec::InPlaceOutput& a : exec::inPlaceOutputs(fusion)) ...   // by position
//   exec::checkInPlaceOverlap(fusion, args);          // every run: addresses are not keyed
//
// An input written in place may have any layout whose elements have distinct addresses (dense,
// permuted, padded, sliced: the output is copied through its strides when the kernel did not
// write it there); only sizes other than the output's, expanded dims (stride 0), negative
// strides and strides that may address one element twice are a UserError naming both tensors,
// before anything runs. docs/design.md ("In-place outputs") says who writes the memory when.
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
/// a.output of `sizes`: the same sizes, and a layout whose elements have distinct addresses.
void checkInPlaceLayout(const ir::Fusion& fusion, const InPlaceOutput& a, const Tensor& input,
                        std::span<const int64_t> sizes);

/// checkInPlaceLayout for every in-place output of `fusion`, its sizes evaluated for `args` (the
/// fusion's arguments, already validated).
void checkInPlaceArguments(const ir::Fusion& fusion, std::span<const eval::Argument> args);

/// UserError when an input some output is written into shares memory with another tensor
/// argument (one tensor passed twice, two views of one buffer): the write would change what the
/// other argument reads. Cheap (addresses only); made on every run, since addresses are not part
/// of any cache key.
void checkInPlaceOverlap(const ir::Fusion& fusion, std::span<const eval::Argument> args);

/// Copies the elements of `value` into `target` (its sizes and dtype, checked; each tensor read
/// or written through its own strides, gaps left alone) on `device` (queued on `stream` on a
/// GPU); two host tensors are copied on the host whatever the device.
void copyInto(const ComputeDevice& device, const Tensor& target, const Tensor& value,
              CUstream stream);

}  // namespace loom::exec
