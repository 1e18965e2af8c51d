// SPDX-License-Identifier: Apache-2.0
// The kernel-IR verifier: structural rules every kernel keeps after every lowering pass.
//
//   lower::verifyKernel(kernel, "allocations");   // throws InternalError naming pass and rule
//
// The pipeline runs it after each pass when LOOM_DEBUG=verify_kernel_ir (every ctest test sets
// it; see docs/lowering.md). Rules, by the name the error gives:
//
//   var-declared            every Var read or written (in any value: loop bounds, conditions,
//                           indices, stored values, DeclareVar inits) is the index of an enclosing
//                           ForLoop, declared by a DeclareVar earlier in the same or an enclosing
//                           scope, or a scalar parameter (Kernel::scalarParams)
//   declared-once           a Var is not declared again where it is already visible, a buffer is
//                           not allocated twice where its allocation is visible, and no name of a
//                           variable, buffer or parameter is declared where the same name is
//                           visible (one C++ namespace: a local T1 would hide the parameter T1)
//   buffer-allocated        every Local/Shared buffer read or written (Load, Store, VectorCopy,
//                           and the tensors of TensorOps once `allocations` ran) has an Allocate
//                           earlier in the same or an enclosing scope; once `reductions` ran
//                           (which gives Welford siblings theirs), every tensor of a TensorOp
//                           has a buffer
//   param-buffer            a Param buffer accessed (or sized: T0.size[1]) is one of
//                           Kernel::params, and only Param buffers have sizes and strides
//   collective-unconditional  BlockSync, BlockReduce, Welford Block and GridReduce are never
//                           inside an IfThenElse (every thread must reach them)
//   no-tensor-op            no TensorOp is left once `indexing` ran
//   index-readonly          loop indices and const index variables are never assigned
//   parallel-not-nested     a thread/block loop is not inside another loop of the same type
//   grid-scratch            a GridReduce's work buffer and semaphores exist in Kernel::gridScratch
//   complete                no statement lacks a value it needs (a null bound, index, condition)
#pragma once

#include <string_view>

#include "loom/lower/kernel_ir.h"

namespace loom::lower {

/// Throws InternalError when `kernel` breaks one of the rules above. `after_pass` names the last
/// lowering pass that ran (the message names it; the rules that depend on earlier passes, such as
/// buffer-allocated for TensorOps and no-tensor-op, apply from that pass on); a name that is not
/// in the pipeline means every pass ran.
void verifyKernel(const kir::Kernel& kernel, std::string_view after_pass);

}  // namespace loom::lower
