// SPDX-License-Identifier: Apache-2.0
// The whole public API a framework uses, in one include: build a fusion (ir, ops), hold data
// (tensor, DLPack), run it (runtime::FusionExecutorCache on a ComputeDevice, or a kernel scheduled
// by hand with transform:: and run by exec::KernelExecutor), check it (the reference evaluator),
// shard it (multidevice), and read and write the .fus text form. docs/cpp-api.md walks through it.
//
//   #include "loom/loom.h"   // target loom::loom (find_package(Loom) or add_subdirectory)
//
// The per-layer headers stay the finer choice for Loom's own code: this one costs every layer's
// declarations in each translation unit that includes it.
#pragma once

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/compute_device.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/multidevice/communicator.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/tensor/data_type.h"
#include "loom/tensor/dlpack.h"
#include "loom/tensor/host_block_cache.h"
#include "loom/tensor/tensor.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/version.h"

// CUDA tensors (cuda::toDevice, cuda::toHost, cuda::emptyCuda) where Loom was built with the CUDA
// backend; without it these functions do not exist, and leaving them out turns a link error into
// a compile error at the call.
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif
