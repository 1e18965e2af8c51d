// SPDX-License-Identifier: Apache-2.0
// loom._C.ops: one function per Loom op, taking the fusion first (the ops run under a FusionGuard
// of it; nothing is global) and Loom's argument forms. python/loom/direct/ops.py gives them
// nvFuser's names and keywords; docs/ops.md says what each op computes. One file per theme
// (op_args.h lists them); this one makes the module.
#include "op_args.h"

namespace loom::python {

void bindOps(nb::module_& parent) {
  nb::module_ m =
      parent.def_submodule("ops", "Loom's ops; loom.direct gives them nvFuser's names.");
  bindFactoryOps(m);
  bindElementwiseOps(m);
  bindReductionOps(m);
  bindShapeOps(m);
  bindIndexingOps(m);
  bindRandomOps(m);
  bindMatmulOps(m);
  bindCompositeOps(m);
  bindSortAndLayoutOps(m);
}

}  // namespace loom::python
