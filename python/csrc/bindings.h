// SPDX-License-Identifier: Apache-2.0
// The extension module loom._C: what each binding file adds to it, and the few helpers they share.
// The Python layer (python/loom/direct) gives these the names and call forms of nvFuser's direct
// bindings; docs/python.md is the user's view.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/tensor/tensor.h"

namespace loom::python {

namespace nb = nanobind;

void bindErrors(nb::module_& m);       // errors.cpp: Error, UserError, ... and the translator
void bindTensors(nb::module_& m);      // tensors.cpp: DataType, Tensor, from_dlpack
void bindIr(nb::module_& m);           // ir.cpp: Fusion, Val, TensorView, Scalar, IterDomain;
                                       // ir_exprs.cpp: Expr and its kinds (Merge, Split, ...)
void bindIdModel(nb::module_& m);      // id_model.cpp: idm (IdModel, ValGraph), IdMappingMode
void bindOps(nb::module_& m);          // ops.cpp: the op layer, one file per theme (op_args.h)
void bindSchedule(nb::module_& m);     // schedule.cpp: ParallelType, TensorView scheduling
void bindExecute(nb::module_& m);      // execute.cpp: FusionExecutorCache and KernelExecutor
void bindMultidevice(nb::module_& m);  // multidevice.cpp: DeviceMesh, Communicator, shards
void bindDumps(nb::module_& m);        // dumps.cpp: the dump sink as a buffer Python drains

/// A fusion owned by Python. Once executed it is frozen: the compiled kernels were made from it,
/// so a later change would not be seen by them; scheduling calls then raise instead.
struct PyFusion {
  std::unique_ptr<ir::Fusion> fusion = std::make_unique<ir::Fusion>();
  bool frozen = false;
  /// Inputs defined with is_cpu=True (0-dim tensors that may stay on the host beside CUDA
  /// inputs): only the printed definition says so; execute takes any 0-dim host tensor there.
  std::unordered_set<const ir::Val*> cpuScalars;
  /// Int64 scalar inputs defined with DataType.Index (nvFuser's index type, Loom's Int64): only
  /// the printed definition says so.
  std::unordered_set<const ir::Val*> indexScalars;
  /// What execute() returns when a FusionDefinition made the fusion: ("output" | "input", name)
  /// per add_output without alias_input, in call order (a tensor twice, an input as itself); so
  /// a FusionExecutorCache or LRUCache of the bare fusion returns what the definition's execute
  /// does. None: the outputs but the in-place ones.
  std::optional<std::vector<std::pair<std::string, std::string>>> returns;
  PyFusion();
  explicit PyFusion(std::unique_ptr<ir::Fusion> f);
  ~PyFusion();
  PyFusion(const PyFusion&) = delete;
  PyFusion& operator=(const PyFusion&) = delete;
};
/// The PyFusion that owns `fusion` (every fusion Python sees is one).
PyFusion& pyFusionOf(const ir::Fusion* fusion);
/// UserError when `fusion` was executed already; `what` names the call.
void checkMutable(const ir::Fusion* fusion, const char* what);
/// The qualified name of `obj`'s Python type, for messages ("Tensor", "ndarray", ...).
std::string pyTypeName(nb::handle obj);

/// What tensorFromPython does with a torch tensor whose negative bit is set (a lazily negated
/// view: x._neg_view(), x.conj().imag), whose memory holds the values un-negated: Resolve reads
/// x.resolve_neg() (a copy with the values), Refuse raises a UserError (from_dlpack, which
/// promises a view).
enum class NegativeBit { Resolve, Refuse };

/// A tensor argument from Python: torch tensors through their DLPack C exchange API (no Python
/// call but torch's is_neg()), anything else with __dlpack__ (numpy, ...), or a loom._C.Tensor.
/// No copy is made, except for a negative-bit tensor under NegativeBit::Resolve. For a CUDA
/// tensor `*stream` (when given) receives the producer's current stream on its device.
Tensor tensorFromPython(nb::handle obj, void** stream = nullptr,
                        NegativeBit negative = NegativeBit::Resolve);
/// True when `obj` can be read by tensorFromPython.
bool isTensorLike(nb::handle obj);
/// A Loom tensor for Python: a torch tensor when torch's exchange API is registered
/// (loom._C._register_torch), else a loom._C.Tensor (which speaks DLPack). No copy is made.
nb::object tensorToPython(const Tensor& t);

}  // namespace loom::python
