// SPDX-License-Identifier: Apache-2.0
// CUDA tensors over the team's NCCL communicator (team_transport.h), for ranks with a GPU each.
// Calls are queued on the caller's stream and not waited for; the GPU the communicator was made
// on is made current before each. Point-to-point calls go in one NCCL group, so a rank's send and
// receive progress together whatever order the peers issue theirs in (gather and scatter are
// such calls too).
//
// The guard (guard.h) watches every communicator: an event recorded after each queued call tells
// it when the call is done, so a call still pending after LOOM_COMM_TIMEOUT, or an asynchronous
// error NCCL reports (ncclCommGetAsyncError), ends the job after ncclCommAbort, which releases
// the GPU from the kernel that waits for peers.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>

#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/support/strings.h"
#include "multidevice/guard.h"
#include "multidevice/nccl_api.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

using ::loom::detail::concat;

// Calls queued but not known to be done: more than this and the newest entry moves to the latest
// call (it then covers every call before it, since a stream runs in order).
constexpr size_t kMaxPending = 64;

class NcclTransport final : public TeamTransport, public detail::Watched {
 public:
  NcclTransport(const nccl::Api& api, nccl::Comm comm, int device, int64_t position, Team team)
      : api_(api),
        comm_(comm),
        device_(device),
        position_(position),
        size_(int64_t(team.size())),
        team_(std::move(team)) {
    detail::watch(this);
  }
  ~NcclTransport() override {
    detail::unwatch(this);
    try {
      cuda::makeCurrent(device_);
      std::lock_guard lock(mutex_);
      pending_.clear();
      spare_.clear();
    } catch (...) {  // destroying the communicator is all that is left to try
    }
    // After ncclCommAbort the communicator is gone already.
    if (!aborted_.exchange(true)) api_.ncclCommDestroy(comm_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  Transport kind() const override { return Transport::Nccl; }

  std::optional<std::string> check(detail::GuardClock::time_point now, double timeout) override {
    if (aborted_.load()) return std::nullopt;
    nccl::Result async = nccl::kSuccess;
    if (api_.ncclCommGetAsyncError(comm_, &async) == nccl::kSuccess && async != nccl::kSuccess &&
        async != nccl::kInProgress) {
      return concat("NCCL reports an asynchronous error on team [", join(team_), "] (GPU ", device_,
                    "): ", api_.ncclGetErrorString(async), " (", async, ")");
    }
    std::lock_guard lock(mutex_);
    try {
      while (!pending_.empty() && pending_.front().event.done()) {
        spare_.push_back(std::move(pending_.front().event));
        pending_.pop_front();
      }
    } catch (const std::exception& e) {
      return concat("NCCL ", pending_.front().what, " #", pending_.front().seq, " on team [",
                    join(team_), "] (GPU ", device_, ") failed: ", e.what());
    }
    if (pending_.empty() || timeout <= 0) return std::nullopt;
    const double age = std::chrono::duration<double>(now - pending_.front().queued).count();
    if (age <= timeout) return std::nullopt;
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", timeout);
    return concat("NCCL ", pending_.front().what, " #", pending_.front().seq, " on team [",
                  join(team_), "] (GPU ", device_, ") did not complete within ", seconds,
                  " s (LOOM_COMM_TIMEOUT); NCCL cannot tell which ranks had arrived: each rank "
                  "still waiting reports its own");
  }

  void abortNow() noexcept override {
    if (!aborted_.exchange(true)) api_.ncclCommAbort(comm_);
  }

  void allgather(const Tensor& input, Tensor& output, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclAllGather(input.data(), output.data(), size_t(input.numel()),
                                   nccl::dataType(input.dtype()), comm_, stream),
                "ncclAllGather");
    queued("allgather", stream);
  }

  void allreduce(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclAllReduce(input.data(), output.data(), size_t(output.numel()),
                                   nccl::dataType(output.dtype()), nccl::redOp(output.dtype(), op),
                                   comm_, stream),
                "ncclAllReduce");
    queued("allreduce", stream);
  }

  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclReduceScatter(input.data(), output.data(), size_t(output.numel()),
                                       nccl::dataType(input.dtype()),
                                       nccl::redOp(input.dtype(), op), comm_, stream),
                "ncclReduceScatter");
    queued("reduceScatter", stream);
  }

  void broadcast(Tensor& buffer, int64_t root, CUstream stream) override {
    enter();
    nccl::check(api_,
                api_.ncclBroadcast(buffer.data(), buffer.data(), size_t(buffer.numel()),
                                   nccl::dataType(buffer.dtype()), int(root), comm_, stream),
                "ncclBroadcast");
    queued("broadcast", stream);
  }

  void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src,
                CUstream stream) override {
    if (send == nullptr && recv == nullptr) return;
    group("sendRecv", stream, [&] {
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
    group("allToAll", stream, [&] {
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
      group("gather", stream, [&] {
        return api_.ncclSend(input->data(), size_t(input->numel()), nccl::dataType(input->dtype()),
                             int(root), comm_, stream);
      });
      return;
    }
    const bool rootSends = input != nullptr;
    const int64_t parts = size_ - (rootSends ? 0 : 1);
    const size_t block = size_t(output->numel() / parts);
    const nccl::DataType type = nccl::dataType(output->dtype());
    group("gather", stream, [&] {
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
      group("scatter", stream, [&] {
        return api_.ncclRecv(output->data(), size_t(output->numel()),
                             nccl::dataType(output->dtype()), int(root), comm_, stream);
      });
      return;
    }
    const bool rootReceives = output != nullptr;
    const int64_t parts = size_ - (rootReceives ? 0 : 1);
    const size_t block = size_t(input->numel() / parts);
    const nccl::DataType type = nccl::dataType(input->dtype());
    group("scatter", stream, [&] {
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
    queued("reduce", stream);
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

  // After a call is queued on `stream`: an event the guard polls, to know when it is done.
  void queued(const char* what, CUstream stream) {
    std::lock_guard lock(mutex_);
    ++steps_;
    const detail::GuardClock::time_point now = detail::GuardClock::now();
    if (pending_.size() >= kMaxPending) {
      Pending& last = pending_.back();
      last.event.record(stream);
      last.what = what;
      last.seq = steps_;
      last.queued = now;
      return;
    }
    cuda::Event event =
        spare_.empty() ? cuda::Event::create(device_, /*timing=*/false) : std::move(spare_.back());
    if (!spare_.empty()) spare_.pop_back();
    event.record(stream);
    pending_.push_back({std::move(event), what, steps_, now});
  }

  // Issues `calls` inside ncclGroupStart / ncclGroupEnd; the group is closed even when a call
  // fails, so NCCL is left usable.
  template <typename Calls>
  void group(const char* what, CUstream stream, Calls calls) {
    enter();
    nccl::check(api_, api_.ncclGroupStart(), concat(what, ": ncclGroupStart"));
    nccl::Result r = calls();
    nccl::Result end = api_.ncclGroupEnd();
    nccl::check(api_, r, concat(what, ": ncclSend/ncclRecv"));
    nccl::check(api_, end, concat(what, ": ncclGroupEnd"));
    queued(what, stream);
  }

  struct Pending {
    cuda::Event event;
    const char* what;
    int64_t seq;
    detail::GuardClock::time_point queued;
  };

  const nccl::Api& api_;
  nccl::Comm comm_;
  int device_;
  int64_t position_;
  int64_t size_;
  Team team_;
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;  // pending_, spare_, steps_: the caller's thread and the guard's
  std::deque<Pending> pending_;
  std::vector<cuda::Event> spare_;  // events of calls known done, recorded again later
  int64_t steps_ = 0;
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
  {
    detail::Watch watch({"ncclCommInitRank", detail::Channel::Setup, &team, 1});
    nccl::check(*api, api->ncclCommInitRank(&comm, int(team.size()), id, int(position)),
                concat("ncclCommInitRank for team [", join(team), "] on GPU ", device));
  }
  return std::make_unique<NcclTransport>(*api, comm, device, position, team);
}

}  // namespace loom::multidevice
