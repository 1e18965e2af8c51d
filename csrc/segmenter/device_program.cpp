// SPDX-License-Identifier: Apache-2.0
// deviceProgram (device_program.h): one device's part of a fusion over several meshes.
#include "loom/segmenter/device_program.h"

#include <algorithm>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/extent_bindings.h"
#include "loom/ir/tensor_domain.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"

namespace loom::segmenter {

namespace {

ir::TensorView* onlyTensor(const std::vector<ir::Val*>& vals) {
  ir::TensorView* out = nullptr;
  for (ir::Val* v : vals) {
    if (auto* tv = v->dynCast<ir::TensorView>()) out = tv;
  }
  return out;
}

// A leaf tensor shaped and sharded like `tv` (whose extents are constants: communicationOf
// requires them between meshes), and its local sizes on any device of its mesh.
ir::TensorView* standInFor(const ir::TensorView* tv, DeviceProgram::StandIn& info) {
  std::vector<ir::IterDomain*> ids;
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
    ids.push_back(ir::IrBuilder::create<ir::IterDomain>(id->start(), id->extent(), id->iterType(),
                                                        ir::ParallelType::Serial,
                                                        id->expandedExtent()));
  }
  auto* td = ir::IrBuilder::create<ir::TensorDomain>(
      ids, ir::TensorDomain::defaultContiguity(ids, /*contiguous=*/true));
  auto* out = ir::IrBuilder::create<ir::TensorView>(td, tv->dtype(), ir::MemoryType::Global);
  multidevice::shardAtSamePositions(out, tv);
  const std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  (void)multidevice::shardedAxes(tv);  // validates the sharding (UserError for unsupported forms)
  const std::vector<int64_t> factors = ir::shardFactors(tv);
  info.dtype = tv->dtype();
  for (size_t d = 0; d < logical.size(); ++d) {
    info.sizes.push_back(*logical[d]->extent()->constInt() / factors[d]);
  }
  return out;
}

}  // namespace

std::optional<DeviceProgram> deviceProgram(const ir::Fusion& sharded, int64_t device) {
  if (!multidevice::isMultidevice(sharded)) return std::nullopt;
  // The sharding passes ran on `sharded` (shardedCopy): the communications are known. The
  // pre-segmentation list runs them again on the program, which changes nothing.
  std::unique_ptr<ir::Fusion> f = sharded.clone();
  ir::FusionGuard guard(f.get());
  bool all = true;
  for (const ir::TensorView* tv : f->allTvs()) all = all && multidevice::holds(tv, device);
  if (all) return std::nullopt;

  DeviceProgram program;
  std::vector<ir::Val*> unread;  // results this device sends and does not hold
  for (ir::Expr* e : f->exprs()) {
    std::optional<multidevice::Communication> comm = multidevice::communicationOf(e);
    if (!comm.has_value()) continue;
    ir::TensorView* out = onlyTensor(e->outputs());
    program.communicationOrder.push_back(out->name());
    if (!comm->betweenMeshes()) continue;  // held with its tensors, or not at all
    const bool sends = comm->sends(device);
    const bool receives = comm->receives(device);
    if (receives && !sends) {
      ir::TensorView* in = onlyTensor(e->inputs());
      DeviceProgram::StandIn info;
      ir::TensorView* stand_in = standInFor(in, info);
      e->replaceInput(in, stand_in);
      program.standIns.push_back(std::move(info));
      program.inputs.push_back(-1);  // placed after the held inputs below
      f->addInput(stand_in);
    }
    if (sends && !receives) unread.push_back(out);
  }
  // Inputs: the held ones in their order, then the stand-ins (added above, already last).
  const std::vector<ir::Val*> inputs = sharded.inputs();
  std::vector<int64_t> held_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto* tv = f->inputs()[i]->dynCast<ir::TensorView>();
    if (tv == nullptr || multidevice::holds(tv, device)) held_inputs.push_back(int64_t(i));
  }
  std::vector<ir::Val*> dropped;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::find(held_inputs.begin(), held_inputs.end(), int64_t(i)) == held_inputs.end()) {
      dropped.push_back(f->inputs()[i]);
    }
  }
  for (ir::Val* v : dropped) f->removeInput(v);
  std::vector<int64_t> input_map = held_inputs;
  input_map.insert(input_map.end(), program.inputs.begin(), program.inputs.end());
  program.inputs = std::move(input_map);
  // Outputs: the held ones in their order, then the unread results.
  const std::vector<ir::Val*> outputs = f->outputs();
  int64_t next = 0;
  for (ir::Val* v : outputs) {
    auto* tv = v->dynCast<ir::TensorView>();
    if (tv == nullptr || multidevice::holds(tv, device)) {
      program.outputs.push_back(next++);
    } else {
      program.outputs.push_back(-1);
      f->removeOutput(v);
    }
  }
  for (ir::Val* v : unread) {
    if (!f->isOutput(v)) f->addOutput(v);
  }
  f->removeDeadCode();
  program.fusion = std::move(f);
  return program;
}

}  // namespace loom::segmenter
