// SPDX-License-Identifier: Apache-2.0
// DeviceProgram: the part of a fusion one device runs when its tensors live on several device
// meshes (pipeline stages) or on meshes the device is not in.
//
//   x [8, 16] mesh [0]  --relu-->  y mesh [0]  --set-->  z mesh [1]  --neg-->  out mesh [1]
//
//   device 0 runs relu and sends y (a SendRecv); z is a "side-effect" output of its program
//   device 1 receives into z from a stand-in for y (metadata only: sizes and dtype) and runs neg
//
// Every device runs the sharding passes on its own copy of the whole fusion (shardedCopy:
// deterministically, so every copy agrees), keeps what it holds (tensors on a mesh it is in, or on none) and the
// communications it takes part in, and cuts the rest: inputs and outputs it does not hold leave
// the program's input and output lists (the runtime returns undefined tensors for those
// outputs), a communication it receives but does not send reads a stand-in input, and one it
// sends but does not receive keeps its result as an extra output nobody reads. The order of the
// communications in the whole fusion is kept, so that devices that share several of them issue
// them in one order (two ranks waiting on each other's second communication would hang).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/tensor/data_type.h"

namespace loom::segmenter {

struct DeviceProgram {
  /// What the device runs (shardings kept: the pre-segmentation passes localize it).
  std::unique_ptr<ir::Fusion> fusion;
  /// Per input of `fusion`: the position of the whole fusion's input it is, or -1 for a
  /// stand-in (the next of `standIns`).
  std::vector<int64_t> inputs;
  /// A tensor the device receives but neither holds nor sends: the runtime binds a tensor of
  /// these local sizes that is never read.
  struct StandIn {
    DataType dtype = DataType::Float32;
    std::vector<int64_t> sizes;
  };
  std::vector<StandIn> standIns;
  /// Per output of the whole fusion: its position among `fusion`'s outputs, or -1 when the
  /// device does not hold it. `fusion`'s outputs past those are the ones nobody reads.
  std::vector<int64_t> outputs;
  /// The names of the communications' outputs (ir::Val::name) in the whole fusion's order
  /// (SegmenterOptions::communicationOrder).
  std::vector<int64_t> communicationOrder;
};

/// The program of `device` when it does not hold every tensor of the fusion (a fusion with device
/// meshes); nullopt when it does (then every device of the meshes runs the whole fusion on its
/// shards) or when the fusion has no meshes. `sharded` is the fusion's shardedCopy
/// (presegment.h), whose passes raise the UserErrors of malformed shardings and of
/// communications Loom cannot run.
std::optional<DeviceProgram> deviceProgram(const ir::Fusion& sharded, int64_t device);

}  // namespace loom::segmenter
