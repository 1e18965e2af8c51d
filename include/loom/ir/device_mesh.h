// SPDX-License-Identifier: Apache-2.0
// DeviceMesh: the devices a tensor is distributed over. A DIDx-parallel IterDomain of extent d
// maps its index i to mesh device i.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

namespace loom::ir {

class DeviceMesh {
 public:
  DeviceMesh() = default;
  explicit DeviceMesh(std::vector<int64_t> devices);
  /// Devices 0, 1, ..., n-1.
  static DeviceMesh arange(int64_t n);

  const std::vector<int64_t>& devices() const { return devices_; }
  int64_t size() const { return int64_t(devices_.size()); }
  bool empty() const { return devices_.empty(); }
  /// Position of `device` in the mesh, or -1.
  int64_t indexOf(int64_t device) const;
  bool operator==(const DeviceMesh&) const = default;

 private:
  std::vector<int64_t> devices_;
};

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh);

}  // namespace loom::ir
