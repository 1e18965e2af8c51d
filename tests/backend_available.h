// SPDX-License-Identifier: Apache-2.0
// Why a test of one backend cannot run on this machine, for GTEST_SKIP:
//
//   if (auto why = test::backendUnavailable(backend)) GTEST_SKIP() << *why;
#pragma once

#include <optional>
#include <string>

#include "loom/exec/kernel_executor.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::test {

/// nullopt when `backend` runs here; otherwise the reason (no GPU or driver, or a build without
/// the CUDA backend). The host backend always runs.
inline std::optional<std::string> backendUnavailable(exec::Backend backend) {
  if (backend != exec::Backend::Cuda) return std::nullopt;
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (!cuda::cudaAvailable()) return "no GPU: " + cuda::unavailableReason();
  return std::nullopt;
#else
  return std::string("built without the CUDA backend");
#endif
}

/// The backend of a suite built twice from one source: CUDA in its gpu executable (compiled with
/// LOOM_TEST_ON_CUDA), the host backend in its emu twin.
inline exec::Backend suiteBackend() {
#ifdef LOOM_TEST_ON_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

}  // namespace loom::test
