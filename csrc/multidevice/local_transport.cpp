// SPDX-License-Identifier: Apache-2.0
// The transport of a team of one (team_transport.h): every collective is a copy on this rank, or
// nothing. No MPI, no NCCL.
#include <cstring>

#include "multidevice/gpu_side.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

// dst's bytes = src's (same size, checked by the Communicator); host or one GPU.
void copyTensor(const Tensor& src, const Tensor& dst, CUstream stream) {
  const size_t nbytes = size_t(src.numel()) * src.itemSize();
  if (nbytes == 0 || src.data() == dst.data()) return;
  if (dst.device().isCpu()) {
    std::memmove(dst.data(), src.data(), nbytes);
    return;
  }
  detail::copyOnGpu(dst.data(), src.data(), nbytes, dst.device().index, stream);
}

class LocalTransport final : public TeamTransport {
 public:
  Transport kind() const override { return Transport::Local; }
  void allgather(const Tensor& input, Tensor& output, CUstream stream) override {
    copyTensor(input, output, stream);
  }
  void allreduce(const Tensor& input, Tensor& output, ReduceOp, CUstream stream) override {
    copyTensor(input, output, stream);
  }
  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp, CUstream stream) override {
    copyTensor(input, output, stream);
  }
  void broadcast(Tensor&, int64_t, CUstream) override {}
  void sendRecv(const Tensor* send, int64_t, Tensor* recv, int64_t, CUstream stream) override {
    if (send != nullptr && recv != nullptr) copyTensor(*send, *recv, stream);
  }
  void allToAll(const Tensor& input, Tensor& output, CUstream stream) override {
    copyTensor(input, output, stream);
  }
  // The only member is the root, and a root that takes no part is refused (nobody would send or
  // receive), so both tensors are there.
  void gather(const Tensor* input, Tensor* output, int64_t, CUstream stream) override {
    copyTensor(*input, *output, stream);
  }
  void scatter(const Tensor* input, Tensor* output, int64_t, CUstream stream) override {
    copyTensor(*input, *output, stream);
  }
  void reduce(const Tensor* input, Tensor* output, ReduceOp, int64_t, CUstream stream) override {
    copyTensor(*input, *output, stream);
  }
};

}  // namespace

std::unique_ptr<TeamTransport> makeLocalTransport() { return std::make_unique<LocalTransport>(); }

}  // namespace loom::multidevice
