// SPDX-License-Identifier: Apache-2.0
// The communicator in a build without the CUDA backend (gpu_side.h, team_transport.h): CUDA
// tensors are refused by name before any transport is chosen, so the GPU transports are never
// made.
#include "loom/support/error.h"
#include "multidevice/gpu_side.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace detail {

void requireCudaBackend(Device device) {
  LOOM_THROW("collectives on CUDA tensors (here on ", device,
             ") need the CUDA backend, and this Loom build has none");
}

int gpuCount() { return 0; }

void copyOnGpu(void*, const void*, size_t, int device, CUstream) {
  LOOM_UNREACHABLE("a copy on cuda:", device, " in a build without the CUDA backend");
}

}  // namespace detail

std::unique_ptr<TeamTransport> makeNcclTransport(const Team& team, int64_t position, int device,
                                                 const TeamExchange&) {
  LOOM_UNREACHABLE("NCCL for a team of ", team.size(), " (position ", position, ", cuda:", device,
                   ") in a build without the CUDA backend");
}

std::unique_ptr<TeamTransport> makeStagedTransport(TeamTransport&) {
  LOOM_UNREACHABLE("a staged transport in a build without the CUDA backend");
}

}  // namespace loom::multidevice
