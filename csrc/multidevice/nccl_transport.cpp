// SPDX-License-Identifier: Apache-2.0
// CUDA tensors over the team's NCCL communicator (team_transport.h), for ranks with a GPU each.
// Calls are queued on the caller's stream and not waited for; the GPU the communicator was made
// on is made current before each. Point-to-point calls go in one NCCL group, so a rank's send and
// receive progress together whatever order the peers issue theirs in (gather and scatter are
// such calls too).
#include <algorithm>

#include "loom/backend/cuda/memory.h"
#include "loom/support/strings.h"
#include "multidevice/nccl_api.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

using ::loom::detail::concat;

class NcclTransport final : public TeamTransport {
 public:
  NcclTransport(const nccl::Api& api, nccl::Comm comm, int device, int64_t position, int64_t size)
      : api_(api), comm_(comm), device_(device), position_(position), size_(size) {}
  ~NcclTransport() override {
    try {
      cuda::makeCurrent(device_);
    } catch (...) {  // destroying the communicator is all that is left to try
    }
    api_.ncclCommDestroy(comm_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  Transport kind() const override { return Transport::Nccl; }

  void allgather(const Tensor& input, Tensor& output, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclAllGather(input.data(), output.data(), size_t(input.numel()),
                                   nccl::dataType(input.dtype()), comm_, stream),
                "ncclAllGather");
  }

  void allreduce(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclAllReduce(input.data(), output.data(), size_t(output.numel()),
                                   nccl::dataType(output.dtype()), nccl::redOp(output.dtype(), op),
                                   comm_, stream),
                "ncclAllReduce");
  }

  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclReduceScatter(input.data(), output.data(), size_t(output.numel()),
                                       nccl::dataType(input.dtype()),
                                       nccl::redOp(input.dtype(), op), comm_, stream),
                "ncclReduceScatter");
  }

  void broadcast(Tensor& buffer, int64_t root, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclBroadcast(buffer.data(), buffer.data(), size_t(buffer.numel()),
                                   nccl::dataType(buffer.dtype()), int(root), comm_, stream),
                "ncclBroadcast");
  }

  void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src,
                CUstream stream) override {
    if (send == nullptr && recv == nullptr) return;
    group("sendRecv", [&] {
      nccl::Result r = nccl::kSuccess;
      if (send != nullptr) {
        r = api_.ncclSend(send->data(), size_t(send->numel()), nccl::dataType(send->dtype()),
                          int(dst), comm_, stream);
      }
      if (r == nccl::kSuccess && recv != nullptr) {
        r = api_.ncclRecv(recv->data(), size_t(recv->numel()), nccl::dataType(recv->dtype()),
                          int(src), comm_, stream);
      }
      return r;
    });
  }

  void allToAll(const Tensor& input, Tensor& output, CUstream stream) override {
    const size_t block = size_t(input.numel() / size_);
    const size_t bytes = block * input.itemSize();
    const nccl::DataType type = nccl::dataType(input.dtype());
    group("allToAll", [&] {
      nccl::Result r = nccl::kSuccess;
      for (int64_t q = 0; q < size_ && r == nccl::kSuccess; ++q) {
        r = api_.ncclSend(static_cast<const char*>(input.data()) + size_t(q) * bytes, block, type,
                          int(q), comm_, stream);
        if (r == nccl::kSuccess) {
          r = api_.ncclRecv(static_cast<char*>(output.data()) + size_t(q) * bytes, block, type,
                            int(q), comm_, stream);
        }
      }
      return r;
    });
  }

  // Gather and scatter are the root's sends or receives, one per member, in one group; a root that
  // takes part sends to or receives from itself, which NCCL allows within a group.
  void gather(const Tensor* input, Tensor* output, int64_t root, CUstream stream) override {
    if (position_ != root) {
      group("gather", [&] {
        return api_.ncclSend(input->data(), size_t(input->numel()), nccl::dataType(input->dtype()),
                             int(root), comm_, stream);
      });
      return;
    }
    const bool rootSends = input != nullptr;
    const int64_t parts = size_ - (rootSends ? 0 : 1);
    const size_t block = size_t(output->numel() / parts);
    const nccl::DataType type = nccl::dataType(output->dtype());
    group("gather", [&] {
      nccl::Result r = nccl::kSuccess;
      if (rootSends) r = api_.ncclSend(input->data(), block, type, int(root), comm_, stream);
      for (int64_t q = 0; q < size_ && r == nccl::kSuccess; ++q) {
        if (q == root && !rootSends) continue;
        r = api_.ncclRecv(blockOf(*output, rootedBlock(q, root, rootSends), block), block, type,
                          int(q), comm_, stream);
      }
      return r;
    });
  }

  void scatter(const Tensor* input, Tensor* output, int64_t root, CUstream stream) override {
    if (position_ != root) {
      group("scatter", [&] {
        return api_.ncclRecv(output->data(), size_t(output->numel()),
                             nccl::dataType(output->dtype()), int(root), comm_, stream);
      });
      return;
    }
    const bool rootReceives = output != nullptr;
    const int64_t parts = size_ - (rootReceives ? 0 : 1);
    const size_t block = size_t(input->numel() / parts);
    const nccl::DataType type = nccl::dataType(input->dtype());
    group("scatter", [&] {
      nccl::Result r = nccl::kSuccess;
      for (int64_t q = 0; q < size_ && r == nccl::kSuccess; ++q) {
        if (q == root && !rootReceives) continue;
        r = api_.ncclSend(blockOf(*input, rootedBlock(q, root, rootReceives), block), block, type,
                          int(q), comm_, stream);
      }
      if (r == nccl::kSuccess && rootReceives) {
        r = api_.ncclRecv(output->data(), block, type, int(root), comm_, stream);
      }
      return r;
    });
  }

  // ncclReduce takes every member's contribution: a root that sends nothing contributes the op's
  // identity, written into its output, which it then reduces in place. A member other than the
  // root passes its input as the (unused) receive buffer, as in-place callers do.
  void reduce(const Tensor* input, Tensor* output, ReduceOp op, int64_t root,
              CUstream stream) override {
    enter();
    const Tensor& mine = position_ == root ? *output : *input;
    const void* send = input != nullptr ? input->data() : output->data();
    void* recv = position_ == root ? output->data() : input->data();
    if (input == nullptr) fillIdentity(*output, op, stream);
    nccl::check(api_,
                api_.ncclReduce(send, recv, size_t(mine.numel()), nccl::dataType(mine.dtype()),
                                nccl::redOp(mine.dtype(), op), int(root), comm_, stream),
                "ncclReduce");
  }

 private:
  // Block `index` (of `block` elements) of a contiguous tensor.
  static char* blockOf(const Tensor& t, int64_t index, size_t block) {
    return static_cast<char*>(t.data()) + size_t(index) * block * t.itemSize();
  }

  // Every element of `t` = the identity of `op`: a byte fill queued on the stream when its bytes
  // are all alike (Sum, Bool), else a copy from the host, which waits for the stream.
  static void fillIdentity(const Tensor& t, ReduceOp op, CUstream stream) {
    unsigned char element[8] = {};
    storeFromDouble(element, t.dtype(), reduceIdentity(t.dtype(), op));
    const size_t size = t.itemSize();
    if (std::all_of(element, element + size, [&](unsigned char b) { return b == element[0]; })) {
      cuda::fillBytes(t, element[0], stream);
      return;
    }
    Tensor host = Tensor::empty(t.sizes(), t.dtype());
    host.fill(reduceIdentity(t.dtype(), op));
    cuda::copyHostToDevice(t.data(), host.data(), size_t(t.numel()) * size, t.device().index,
                           stream);
  }

  void enter() const { cuda::makeCurrent(device_); }

  // Issues `calls` inside ncclGroupStart / ncclGroupEnd; the group is closed even when a call
  // fails, so NCCL is left usable.
  template <typename Calls>
  void group(const char* what, Calls calls) {
    enter();
    nccl::check(api_, api_.ncclGroupStart(), concat(what, ": ncclGroupStart"));
    nccl::Result r = calls();
    nccl::Result end = api_.ncclGroupEnd();
    nccl::check(api_, r, concat(what, ": ncclSend/ncclRecv"));
    nccl::check(api_, end, concat(what, ": ncclGroupEnd"));
  }

  const nccl::Api& api_;
  nccl::Comm comm_;
  int device_;
  int64_t position_;
  int64_t size_;
};

}  // namespace

std::unique_ptr<TeamTransport> makeNcclTransport(const Team& team, int64_t position, int device,
                                                 const TeamExchange& exchange) {
  // Every member learns whether all could set up, before anyone waits in ncclCommInitRank for a
  // member that never comes.
  std::string why;
  const nccl::Api* api = nullptr;
  try {
    api = &nccl::api("collectives on CUDA tensors between ranks with a GPU each");
  } catch (const UserError& e) {
    why = e.reason();
  }
  nccl::UniqueId id{};
  if (api != nullptr && position == 0) {
    nccl::Result r = api->ncclGetUniqueId(&id);
    if (r != nccl::kSuccess) {
      why = concat("NCCL: ncclGetUniqueId failed: ", api->ncclGetErrorString(r), " (", r, ")");
    }
  }
  if (!exchange.allOk(why.empty())) {
    LOOM_CHECK(!why.empty(), "setting up NCCL for team [", join(team),
               "] failed on another member of the team (its own error says why)");
    LOOM_THROW(why);
  }
  exchange.broadcastFromFirst(&id, sizeof(id));
  cuda::makeCurrent(device);
  nccl::Comm comm = nullptr;
  nccl::check(*api, api->ncclCommInitRank(&comm, int(team.size()), id, int(position)),
              concat("ncclCommInitRank for team [", join(team), "] on GPU ", device));
  return std::make_unique<NcclTransport>(*api, comm, device, position, int64_t(team.size()));
}

}  // namespace loom::multidevice
