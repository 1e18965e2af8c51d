// SPDX-License-Identifier: Apache-2.0
// CommunicationExecutor (communication_executor.h).
#include "loom/runtime/communication_executor.h"

#include <algorithm>

#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::runtime {

namespace {

using multidevice::CommunicationType;

// Product of sizes[from, to).
int64_t product(const std::vector<int64_t>& sizes, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to && k < sizes.size(); ++k) n *= sizes[k];
  return n;
}

// Moves block r of each of `outer` rows to block-major order or back: a [outer, team, chunk]
// layout (row-major, as the tensor holds it) against [team, outer, chunk] (what the collectives
// move). `to_blocks` picks the direction. Chunks are `chunk` elements of `item` bytes.
void rearrange(const exec::ComputeDevice& device, char* dst, const char* src, int64_t outer,
               int64_t team, int64_t chunk, size_t item, bool to_blocks, CUstream stream) {
  const size_t bytes = size_t(chunk) * item;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < team; ++r) {
      const size_t row_major = size_t(o * team + r) * bytes;
      const size_t block_major = size_t(r * outer + o) * bytes;
      if (to_blocks) {
        device.copyBytes(dst + block_major, src + row_major, bytes, stream);
      } else {
        device.copyBytes(dst + row_major, src + block_major, bytes, stream);
      }
    }
  }
}

}  // namespace

CommunicationExecutor::CommunicationExecutor(const segmenter::Segment& segment,
                                             std::shared_ptr<const exec::ComputeDevice> device,
                                             multidevice::Communicator* communicator,
                                             int64_t deviceId, CUstream stream)
    : fusion_(segment.fusion.fusion.get()),
      comm_(*segment.communication()),
      device_(std::move(device)),
      communicator_(communicator),
      team_(comm_.team(deviceId)),
      stream_(stream),
      what_(segment.exprs.front()->toString()) {
  while (!what_.empty() && what_.back() == '\n') what_.pop_back();
  position_ = int64_t(std::find(team_.begin(), team_.end(), deviceId) - team_.begin());
  LOOM_ASSERT(position_ < int64_t(team_.size()), "device ", deviceId, " is not in its team");
  LOOM_ASSERT(fusion_->inputs().size() == 1 && fusion_->outputs().size() == 1,
              "a communication segment reads one tensor and writes one: ", what_);
  sends_ = comm_.sends(deviceId);
  receives_ = comm_.receives(deviceId);
  device_id_ = deviceId;
  if (comm_.betweenMeshes()) {
    // Constant extents (communicationOf requires them between meshes), localized: a receiver
    // may hold no tensor to read its sizes from.
    const auto* out_tv = fusion_->outputs()[0]->as<ir::TensorView>();
    for (ir::IterDomain* id : ir::TensorDomain::noReductions(out_tv->logical())) {
      received_sizes_.push_back(*id->extent()->constInt());
    }
  }
}

void CommunicationExecutor::runInto(std::span<const eval::Argument> inputs,
                                    std::vector<Tensor>& outputs) const {
  const bool local = comm_.type == CommunicationType::Scatter && !comm_.betweenMeshes();
  LOOM_CHECK(communicator_ != nullptr || local, "'", what_, "' needs a communication (",
             comm_.toString(), "): set RuntimeOptions::communicator");
  LOOM_ASSERT(inputs.size() == 1, "communication input count");
  // A fusion input the user sliced (a shard cut as a view) reaches the communication as it is;
  // the collectives move contiguous blocks, so a strided host tensor is copied first.
  const Tensor& given = std::get<Tensor>(inputs[0]);
  const Tensor in = given.defined() && !given.device().isCuda() && !given.isContiguous()
                        ? given.contiguous()
                        : given;
  if (comm_.betweenMeshes()) {
    runBetweenMeshes(in, outputs);
    return;
  }
  LOOM_CHECK(in.isContiguous(), "'", what_, "': ", comm_.toString(),
             " needs a contiguous input, got ", describe(in), " with strides [",
             [&] {
               std::string s;
               for (int64_t x : in.strides()) s += (s.empty() ? "" : ", ") + std::to_string(x);
               return s;
             }(),
             "]");
  const auto* out_tv = fusion_->outputs()[0]->as<ir::TensorView>();
  const int64_t team = int64_t(team_.size());
  // The received tensor's sizes follow from the input's and the communication (the segment's
  // extents are one device's view on one side and the whole on the other).
  std::vector<int64_t> sizes = in.sizes();
  auto split = [&](int64_t dim) {
    LOOM_CHECK(sizes.at(size_t(dim)) % team == 0, "'", what_, "': ", comm_.toString(), ": dim ",
               dim, " of size ", sizes[size_t(dim)], " does not split evenly over the ", team,
               " devices of the team");
    sizes[size_t(dim)] /= team;
  };
  if (comm_.type == CommunicationType::Allgather) {
    sizes.at(size_t(comm_.dim)) *= team;
  } else if (comm_.type == CommunicationType::AllToAll) {
    sizes.at(size_t(comm_.dim)) *= team;
    split(comm_.splitDim);
  } else if (comm_.type == CommunicationType::Scatter) {
    split(comm_.splitDim);
  } else {
    sizes.erase(sizes.begin() + comm_.reducedDim);
    if (comm_.type == CommunicationType::ReduceScatter) {
      LOOM_CHECK(sizes.at(size_t(comm_.dim)) % team == 0, "'", what_, "': ", comm_.toString(),
                 ": dim ", comm_.dim, " of size ", sizes[size_t(comm_.dim)],
                 " does not split evenly over the ", team, " devices of the team");
      sizes[size_t(comm_.dim)] /= team;
    }
  }
  LOOM_CHECK(out_tv->dtype() == in.dtype(), "'", what_, "': expected a ", out_tv->dtype(),
             " input, got ", describe(in));
  Tensor out = device_->empty(sizes, out_tv->dtype(), stream_);
  const size_t item = in.itemSize();
  switch (comm_.type) {
    case CommunicationType::Allgather: {
      const int64_t outer = product(sizes, 0, size_t(comm_.dim));
      if (outer == 1) {
        communicator_->allgather(in, out, team_, stream_);
        break;
      }
      const std::vector<int64_t> flat{out.numel()};
      Tensor staged = device_->empty(flat, out.dtype(), stream_);
      communicator_->allgather(in, staged, team_, stream_);
      rearrange(*device_, static_cast<char*>(out.data()), static_cast<const char*>(staged.data()),
                outer, team, in.numel() / outer, item, /*to_blocks=*/false, stream_);
      break;
    }
    case CommunicationType::Allreduce:
      communicator_->allreduce(in, out, comm_.op, team_, stream_);
      break;
    case CommunicationType::ReduceScatter: {
      // The input's dim of the scattered blocks: the output's dim j, past the reduced dim.
      const int64_t j = comm_.dim < comm_.reducedDim ? comm_.dim : comm_.dim + 1;
      const int64_t outer = product(in.sizes(), 0, size_t(j));
      if (outer == 1) {
        communicator_->reduceScatter(in, out, comm_.op, team_, stream_);
        break;
      }
      const std::vector<int64_t> flat{in.numel()};
      Tensor staged = device_->empty(flat, in.dtype(), stream_);
      rearrange(*device_, static_cast<char*>(staged.data()), static_cast<const char*>(in.data()),
                outer, team, in.numel() / (outer * team), item, /*to_blocks=*/true, stream_);
      communicator_->reduceScatter(staged, out, comm_.op, team_, stream_);
      break;
    }
    case CommunicationType::AllToAll: {
      // Send block q of the split dim to member q, then place block r of what arrives at
      // position r of the gathered dim.
      const int64_t j = comm_.splitDim, k = comm_.dim;
      const int64_t outer_j = product(in.sizes(), 0, size_t(j));
      const std::vector<int64_t> flat{in.numel()};
      Tensor send = device_->empty(flat, in.dtype(), stream_);
      Tensor recv = device_->empty(flat, in.dtype(), stream_);
      rearrange(*device_, static_cast<char*>(send.data()), static_cast<const char*>(in.data()),
                outer_j, team, in.numel() / (outer_j * team), item, /*to_blocks=*/true, stream_);
      communicator_->allToAll(send, recv, team_, stream_);
      const int64_t outer_k = product(sizes, 0, size_t(k));
      rearrange(*device_, static_cast<char*>(out.data()), static_cast<const char*>(recv.data()),
                outer_k, team, out.numel() / (outer_k * team), item, /*to_blocks=*/false,
                stream_);
      break;
    }
    case CommunicationType::Scatter: {
      // Every member holds the whole: copy this member's block of each row.
      const int64_t j = comm_.splitDim;
      const int64_t outer = product(in.sizes(), 0, size_t(j));
      const size_t bytes = size_t(out.numel() / std::max<int64_t>(outer, 1)) * item;
      for (int64_t o = 0; o < outer && bytes != 0; ++o) {
        device_->copyBytes(static_cast<char*>(out.data()) + size_t(o) * bytes,
                           static_cast<const char*>(in.data()) +
                               (size_t(o * team + position_)) * bytes,
                           bytes, stream_);
      }
      break;
    }
    case CommunicationType::Broadcast:
    case CommunicationType::SendRecv:
    case CommunicationType::Gather:
    case CommunicationType::Reduce:
      LOOM_ASSERT(false, comm_.toString(), " within one mesh");
  }
  outputs.clear();
  outputs.push_back(std::move(out));
}

void CommunicationExecutor::runBetweenMeshes(const Tensor& in, std::vector<Tensor>& outputs) const {
  const auto* out_tv = fusion_->outputs()[0]->as<ir::TensorView>();
  // `in` is a stand-in (sizes only) on a device that receives without sending.
  if (sends_) {
    LOOM_CHECK(in.isContiguous(), "'", what_, "': ", comm_.toString(),
               " needs a contiguous input, got ", describe(in));
    LOOM_CHECK(in.dtype() == out_tv->dtype(), "'", what_, "': expected a ", out_tv->dtype(),
               " input, got ", describe(in));
  }
  Tensor out;
  if (receives_) out = device_->empty(received_sizes_, out_tv->dtype(), stream_);
  const ir::DeviceMesh& from = comm_.mesh;
  const ir::DeviceMesh& to = comm_.receivers;
  switch (comm_.type) {
    case CommunicationType::SendRecv: {
      // P[i] sends its block to C[i].
      const int64_t i = from.indexOf(device_id_), j = to.indexOf(device_id_);
      const int64_t dst = sends_ ? to.devices()[size_t(i)] : device_id_;
      const int64_t src = receives_ ? from.devices()[size_t(j)] : device_id_;
      communicator_->sendRecv(sends_ ? &in : nullptr, dst, receives_ ? &out : nullptr, src, team_,
                              stream_);
      break;
    }
    case CommunicationType::Broadcast: {
      Tensor buffer = receives_ ? out : in;  // the root sends from its input
      if (sends_ && receives_) {
        device_->copyBytes(out.data(), in.data(), size_t(in.numel()) * in.itemSize(), stream_);
      }
      communicator_->broadcast(buffer, comm_.root, team_, stream_);
      break;
    }
    case CommunicationType::Gather: {
      const Tensor* send = sends_ ? &in : nullptr;
      const int64_t outer = product(received_sizes_, 0, size_t(comm_.dim));
      if (!receives_ || outer == 1) {
        communicator_->gather(send, receives_ ? &out : nullptr, comm_.root, team_, stream_);
        break;
      }
      // Blocks of a dim that is not outermost arrive one member after another: rearrange.
      const std::vector<int64_t> flat{out.numel()};
      Tensor staged = device_->empty(flat, out.dtype(), stream_);
      communicator_->gather(send, &staged, comm_.root, team_, stream_);
      const int64_t senders = from.size();
      rearrange(*device_, static_cast<char*>(out.data()), static_cast<const char*>(staged.data()),
                outer, senders, out.numel() / (outer * senders), out.itemSize(),
                /*to_blocks=*/false, stream_);
      break;
    }
    case CommunicationType::Scatter: {
      const int64_t outer = product(in.sizes(), 0, size_t(comm_.splitDim));
      Tensor* recv = receives_ ? &out : nullptr;
      if (!sends_ || outer == 1) {
        communicator_->scatter(sends_ ? &in : nullptr, recv, comm_.root, team_, stream_);
        break;
      }
      const int64_t receivers = to.size();
      const std::vector<int64_t> flat{in.numel()};
      Tensor staged = device_->empty(flat, in.dtype(), stream_);
      rearrange(*device_, static_cast<char*>(staged.data()), static_cast<const char*>(in.data()),
                outer, receivers, in.numel() / (outer * receivers), in.itemSize(),
                /*to_blocks=*/true, stream_);
      communicator_->scatter(&staged, recv, comm_.root, team_, stream_);
      break;
    }
    case CommunicationType::Reduce: {
      // One partial per sender along the reduced dim (of extent 1 locally): the same bytes as
      // the result's.
      communicator_->reduce(sends_ ? &in : nullptr, receives_ ? &out : nullptr, comm_.op,
                            comm_.root, team_, stream_);
      break;
    }
    default:
      LOOM_ASSERT(false, comm_.toString(), " does not move data between meshes");
  }
  outputs.clear();
  outputs.push_back(std::move(out));  // undefined on a device that only sends
}

std::string CommunicationExecutor::step(const segmenter::Segment& segment) const {
  const bool moves = comm_.betweenMeshes();
  std::string verb = !moves                  ? "communicate"
                     : sends_ && receives_   ? "send and receive"
                     : sends_                ? "send"
                                             : "receive";
  return verb + " by " + comm_.toString() + " (team [" + join(team_) + "]): " +
         (sends_ ? valueNames(segment.fusion.inputs)
                 : "a stand-in for " + valueNames(segment.fusion.inputs)) +
         " -> " + (receives_ ? valueNames(segment.fusion.outputs) : "nothing kept");
}

}  // namespace loom::runtime
