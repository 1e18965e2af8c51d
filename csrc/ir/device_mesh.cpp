// SPDX-License-Identifier: Apache-2.0
// DeviceMesh.
#include "loom/ir/device_mesh.h"

#include <algorithm>
#include <set>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::ir {

DeviceMesh::DeviceMesh(std::vector<int64_t> devices) : devices_(std::move(devices)) {
  std::set<int64_t> seen;
  for (int64_t d : devices_) {
    LOOM_CHECK(d >= 0, "device mesh [", join(devices_), "] has a negative device id ", d);
    LOOM_CHECK(seen.insert(d).second, "device mesh [", join(devices_), "] lists device ", d,
               " twice");
  }
}

DeviceMesh DeviceMesh::arange(int64_t n) {
  LOOM_CHECK(n > 0, "a device mesh needs at least one device, got ", n);
  std::vector<int64_t> d(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) d[size_t(i)] = i;
  return DeviceMesh(std::move(d));
}

int64_t DeviceMesh::indexOf(int64_t device) const {
  auto it = std::find(devices_.begin(), devices_.end(), device);
  return it == devices_.end() ? -1 : int64_t(it - devices_.begin());
}

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh) {
  return os << "[" << join(mesh.devices()) << "]";
}

}  // namespace loom::ir
