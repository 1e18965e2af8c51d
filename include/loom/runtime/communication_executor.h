// SPDX-License-Identifier: Apache-2.0
// CommunicationExecutor: the SegmentExecutor of a segment that is one communication (segmenter::
// CommunicationWork), on this device's shards: allocates the received tensor like a kernel output
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
// Between meshes (P the producer's, C the consumer's; a device in only one of them either sends
// or receives, and one that only sends returns an undefined tensor):
//   SendRecv                    P[i] sends its block to C[i]
//   Broadcast                   P's first device sends the whole to every device of C
//   Gather along dim k          C's only device gets every block of P, concatenated along k
//   Scatter along dim j         P's first device sends block q of dim j to C[q]
//   Reduce                      C's only device gets the reduction of P's partials
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
#include "loom/runtime/segment_executor.h"
#include "loom/segmenter/segmented_fusion.h"

namespace loom::runtime {

class CommunicationExecutor final : public SegmentExecutor {
 public:
  /// `segment` must be a communication segment. `communicator` may be null: running then says
  /// the fusion needs one.
  CommunicationExecutor(const segmenter::Segment& segment,
                        std::shared_ptr<const exec::ComputeDevice> device,
                        multidevice::Communicator* communicator, int64_t deviceId,
                        CUstream stream);

  /// Runs the communication on the segment's inputs; `outputs` gets the received tensor.
  void runInto(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs) const;
  void runInto(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs, SegmentRecord&,
               std::span<const Tensor> into) override {
    LOOM_ASSERT(into.empty(), "a communication stores no output in place");
    runInto(inputs, outputs);
  }
  /// "send and receive by SendRecv from mesh [0] to mesh [1] (team [0, 1]): T6 -> T5", "receive
  /// ...: a stand-in for T6 -> T5", "communicate by Allgather ...".
  std::string step(const segmenter::Segment& segment) const override;

  const multidevice::Communication& communication() const { return comm_; }
  /// The devices this one communicates with (itself included), and its part.
  const multidevice::Team& team() const { return team_; }
  bool sends() const { return sends_; }
  bool receives() const { return receives_; }
  const exec::ComputeDevice& device() const { return *device_; }

 private:
  const ir::Fusion* fusion_;  ///< the segment's fusion (owned by the segmented fusion)
  multidevice::Communication comm_;
  std::shared_ptr<const exec::ComputeDevice> device_;
  multidevice::Communicator* communicator_;
  multidevice::Team team_;
  int64_t position_ = 0;  ///< this device's position in team_
  int64_t device_id_ = 0;
  bool sends_ = true;     ///< this device sends (between meshes: not every device does)
  bool receives_ = true;  ///< this device gets the result (else it returns an undefined tensor)
  /// Between meshes: the received tensor's local sizes (constants).
  std::vector<int64_t> received_sizes_;
  void runBetweenMeshes(const Tensor& in, std::vector<Tensor>& outputs) const;
  CUstream stream_;
  std::string what_;  ///< the expression, for messages
};

}  // namespace loom::runtime
