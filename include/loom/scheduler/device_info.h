// SPDX-License-Identifier: Apache-2.0
// DeviceInfo: the GPU properties that scheduler heuristics size launches from.
#pragma once

#include <cstdint>
#include <string>

namespace loom::scheduler {

/// Properties of the target GPU. Defaults describe an H200, so heuristics are deterministic on
/// machines without a GPU; a caller with a device (the CUDA backend) fills in the real values.
struct DeviceInfo {
  int64_t sm_count = 132;
  int64_t max_threads_per_block = 1024;
  int64_t max_threads_per_sm = 2048;
  int64_t warp_size = 32;
  int64_t shared_memory_per_block = 227 * 1024;  ///< bytes, opt-in maximum
  int64_t registers_per_sm = 64 * 1024;          ///< 32-bit registers
  int64_t max_registers_per_thread = 255;
  int64_t l2_bytes = 60 * 1024 * 1024;  ///< the L2 cache (an H100 has 50 MiB)
  int64_t max_grid_x = (int64_t(1) << 31) - 1;
  int64_t max_grid_yz = 65535;

  /// The H200 defaults above.
  static DeviceInfo h200() { return {}; }
  bool operator==(const DeviceInfo&) const = default;
  /// "sms=132 threads/block=1024 ..." for dumps.
  std::string toString() const;
};

}  // namespace loom::scheduler
