// SPDX-License-Identifier: Apache-2.0
// The backend a runtime test runs on (its gpu target defines LOOM_RUNTIME_TEST_CUDA; the emu
// target runs the same source on the host backend) and the options its caches take:
//
//   void SetUp() override {
//     if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
//   }
//   FusionExecutorCache cache(std::move(fusion), poisonedOptions());
#pragma once

#include "backend_available.h"
#include "loom/runtime/fusion_executor_cache.h"

namespace loom::runtime {

inline exec::Backend testBackend() {
#ifdef LOOM_RUNTIME_TEST_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

/// The test's backend, outputs poisoned before every run (a kernel that skips an element fails).
inline RuntimeOptions poisonedOptions() {
  RuntimeOptions o;
  o.backend = testBackend();
  o.executor.poisonOutputs = true;
  return o;
}

}  // namespace loom::runtime
