// SPDX-License-Identifier: Apache-2.0
// CUDA tensors staged through host memory (team_transport.h), for ranks that share a GPU, where
// NCCL refuses to run (it needs a GPU per rank): each input is copied to the host on the caller's
// stream (waited for), the host transport runs the collective, each result is copied back (waited
// for too). The host buffers are the transport's own and kept for the next call: a fresh
// allocation of tens of MiB per call costs more in page faults than the copies themselves.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

#include "loom/backend/cuda/memory.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

size_t bytesOf(const Tensor& t) { return size_t(t.numel()) * t.itemSize(); }

// A host buffer that grows to the largest size asked for and is reused after.
class HostBuffer {
 public:
  // A host tensor of `like`'s sizes and dtype over the buffer (valid until the next call).
  Tensor view(const Tensor& like) {
    const size_t bytes = std::max<size_t>(bytesOf(like), 1);
    if (bytes > capacity_) {
      // 64-byte aligned, as Tensor::empty's allocations (vector loads of reductions on it).
      storage_.reset(new (std::align_val_t{64}) std::byte[bytes]);
      capacity_ = bytes;
    }
    return Tensor::fromBlob(storage_.get(), like.sizes(), Tensor::contiguousStrides(like.sizes()),
                            like.dtype(), Device::cpu());
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], Free> storage_;
  size_t capacity_ = 0;
};

void download(const Tensor& device, const Tensor& host, CUstream stream) {
  cuda::copyDeviceToHost(host.data(), device.data(), bytesOf(device), device.device().index,
                         stream);
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
    Tensor out = out_.view(output);
    host_.allgather(in, out, nullptr);
    upload(out, output, stream);
  }
  void allreduce(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    Tensor buffer = downloaded(input, stream);
    host_.allreduce(buffer, buffer, op, nullptr);
    upload(buffer, output, stream);
  }
  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream stream) override {
    Tensor in = downloaded(input, stream);
    Tensor out = out_.view(output);
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
    Tensor out = recv != nullptr ? out_.view(*recv) : Tensor();
    host_.sendRecv(send != nullptr ? &in : nullptr, dst, recv != nullptr ? &out : nullptr, src,
                   nullptr);
    if (recv != nullptr) upload(out, *recv, stream);
  }
  void allToAll(const Tensor& input, Tensor& output, CUstream stream) override {
    Tensor in = downloaded(input, stream);
    Tensor out = out_.view(output);
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
  // `device` copied into the input buffer (the stream waited for).
  Tensor downloaded(const Tensor& device, CUstream stream) {
    Tensor host = in_.view(device);
    download(device, host, stream);
    return host;
  }

  template <typename Run>
  void rooted(const Tensor* input, Tensor* output, CUstream stream, Run run) {
    Tensor in = input != nullptr ? downloaded(*input, stream) : Tensor();
    Tensor out = output != nullptr ? out_.view(*output) : Tensor();
    run(input != nullptr ? &in : nullptr, output != nullptr ? &out : nullptr);
    if (output != nullptr) upload(out, *output, stream);
  }

  TeamTransport& host_;
  HostBuffer in_;   // what this rank sends
  HostBuffer out_;  // what it receives
};

}  // namespace

std::unique_ptr<TeamTransport> makeStagedTransport(TeamTransport& host) {
  return std::make_unique<StagedTransport>(host);
}

}  // namespace loom::multidevice
