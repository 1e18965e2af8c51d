// SPDX-License-Identifier: Apache-2.0
// CUDA tensors staged through host memory (team_transport.h), for ranks that share a GPU, where
// NCCL refuses to run (it needs a GPU per rank): each input is copied to the host on the caller's
// stream (waited for), the host transport runs the collective, each result is copied back (waited
// for too, so the host buffers can go when the call returns).
#include "loom/backend/cuda/memory.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

size_t bytesOf(const Tensor& t) { return size_t(t.numel()) * t.itemSize(); }

Tensor downloaded(const Tensor& device, CUstream stream) {
  Tensor host = Tensor::empty(device.sizes(), device.dtype());
  cuda::copyDeviceToHost(host.data(), device.data(), bytesOf(device), device.device().index,
                         stream);
  return host;
}

void upload(const Tensor& host, const Tensor& device, CUstream stream) {
  cuda::copyHostToDevice(device.data(), host.data(), bytesOf(host), device.device().index, stream);
}

class StagedTransport final : public TeamTransport {
 public:
  explicit StagedTransport(TeamTransport& host) : host_(host) {}
  Transport kind() const override { return Transport::Staged; }

  void allgather(const Tensor& input, Tensor& output, CUstream stream) override {
    Tensor in = downloaded(input, stream);
    Tensor out = Tensor::empty(output.sizes(), output.dtype());
    host_.allgather(in, out, nullptr);
    upload(out, output, stream);
  }
  void allreduce(Tensor& inout, ReduceOp op, CUstream stream) override {
    Tensor buffer = downloaded(inout, stream);
    host_.allreduce(buffer, op, nullptr);
    upload(buffer, inout, stream);
  }
  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    Tensor in = downloaded(input, stream);
    Tensor out = Tensor::empty(output.sizes(), output.dtype());
    host_.reduceScatter(in, out, op, nullptr);
    upload(out, output, stream);
  }
  void broadcast(Tensor& buffer, int64_t root, CUstream stream) override {
    Tensor staged = downloaded(buffer, stream);
    host_.broadcast(staged, root, nullptr);
    upload(staged, buffer, stream);
  }
  void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src,
                CUstream stream) override {
    Tensor in = send != nullptr ? downloaded(*send, stream) : Tensor();
    Tensor out = recv != nullptr ? Tensor::empty(recv->sizes(), recv->dtype()) : Tensor();
    host_.sendRecv(send != nullptr ? &in : nullptr, dst, recv != nullptr ? &out : nullptr, src,
                   nullptr);
    if (recv != nullptr) upload(out, *recv, stream);
  }
  void allToAll(const Tensor& input, Tensor& output, CUstream stream) override {
    Tensor in = downloaded(input, stream);
    Tensor out = Tensor::empty(output.sizes(), output.dtype());
    host_.allToAll(in, out, nullptr);
    upload(out, output, stream);
  }
  // Rooted: each tensor a member passes is staged, each it leaves null stays null.
  void gather(const Tensor* input, Tensor* output, int64_t root, CUstream stream) override {
    rooted(input, output, stream,
           [&](Tensor* in, Tensor* out) { host_.gather(in, out, root, nullptr); });
  }
  void scatter(const Tensor* input, Tensor* output, int64_t root, CUstream stream) override {
    rooted(input, output, stream,
           [&](Tensor* in, Tensor* out) { host_.scatter(in, out, root, nullptr); });
  }
  void reduce(const Tensor* input, Tensor* output, ReduceOp op, int64_t root,
              CUstream stream) override {
    rooted(input, output, stream,
           [&](Tensor* in, Tensor* out) { host_.reduce(in, out, op, root, nullptr); });
  }

 private:
  template <typename Run>
  static void rooted(const Tensor* input, Tensor* output, CUstream stream, Run run) {
    Tensor in = input != nullptr ? downloaded(*input, stream) : Tensor();
    Tensor out = output != nullptr ? Tensor::empty(output->sizes(), output->dtype()) : Tensor();
    run(input != nullptr ? &in : nullptr, output != nullptr ? &out : nullptr);
    if (output != nullptr) upload(out, *output, stream);
  }

  TeamTransport& host_;
};

}  // namespace

std::unique_ptr<TeamTransport> makeStagedTransport(TeamTransport& host) {
  return std::make_unique<StagedTransport>(host);
}

}  // namespace loom::multidevice
