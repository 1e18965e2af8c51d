// SPDX-License-Identifier: Apache-2.0
// CUDA tensors over the team's NCCL communicator (team_transport.h), for ranks with a GPU each.
// Calls are queued on the caller's stream and not waited for; the GPU the communicator was made
// on is made current before each. Point-to-point calls go in one NCCL group, so a rank's send and
// receive progress together whatever order the peers issue theirs in.
#include "loom/support/strings.h"
#include "multidevice/nccl_api.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

using ::loom::detail::concat;

class NcclTransport final : public TeamTransport {
 public:
  NcclTransport(const nccl::Api& api, nccl::Comm comm, int device, int64_t size)
      : api_(api), comm_(comm), device_(device), size_(size) {}
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

  void allreduce(Tensor& inout, ReduceOp op, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclAllReduce(inout.data(), inout.data(), size_t(inout.numel()),
                                   nccl::dataType(inout.dtype()), nccl::redOp(inout.dtype(), op),
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

 private:
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
  return std::make_unique<NcclTransport>(*api, comm, device, int64_t(team.size()));
}

}  // namespace loom::multidevice
