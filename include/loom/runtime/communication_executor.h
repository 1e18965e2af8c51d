// SPDX-License-Identifier: Apache-2.0
// CommunicationExecutor: runs a segment that is one communication (segmenter: Segment::
// communication) on this device's shards: allocates the received tensor like a kernel output
// and calls the communicator's collective within the device's team.
//
//   Allgather along dim k       out [.., d * n, ..] <- every member's in [.., n, ..]
//   Allreduce                   out = in reduced over the team (in: one element per device
//                               along the reduced dim)
//   ReduceScatter along dim j   out [.., n / d, ..] = this member's block of the reduction
//   AllToAll (k gathered, j split)  out [.., d * s, .., n / d, ..] <- block q of dim j of every
//                               member's in [.., s, .., n, ..] goes to member q
//   Scatter along dim j         out [.., n / d, ..] = this member's block of in (a local copy:
//                               every member holds the whole)
//
// Blocks along a dim that is not outermost are rearranged through a staging buffer, so the
// communicator always moves contiguous blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/communicator.h"
#include "loom/segmenter/segmented_fusion.h"

namespace loom::runtime {

class CommunicationExecutor {
 public:
  /// `segment` must be a communication segment. `communicator` may be null: running then says
  /// the fusion needs one.
  CommunicationExecutor(const segmenter::Segment& segment,
                        std::shared_ptr<const exec::ComputeDevice> device,
                        multidevice::Communicator* communicator, int64_t deviceId,
                        CUstream stream);

  /// Runs the communication on the segment's inputs; `outputs` gets the received tensor.
  void runInto(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs) const;

  const multidevice::Communication& communication() const { return comm_; }
  const exec::ComputeDevice& device() const { return *device_; }

 private:
  const ir::Fusion* fusion_;  ///< the segment's fusion (owned by the segmented fusion)
  multidevice::Communication comm_;
  std::shared_ptr<const exec::ComputeDevice> device_;
  multidevice::Communicator* communicator_;
  multidevice::Team team_;
  int64_t position_ = 0;  ///< this device's position in team_
  CUstream stream_;
  std::string what_;  ///< the expression, for messages
};

}  // namespace loom::runtime
