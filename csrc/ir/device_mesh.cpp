// SPDX-License-Identifier: Apache-2.0
// DeviceMesh.
#include "loom/ir/device_mesh.h"

#include <algorithm>
#include <set>

#include "loom/support/checked_math.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::ir {

DeviceMesh::DeviceMesh(std::vector<int64_t> devices)
    : DeviceMesh(devices, {int64_t(devices.size())}) {}

DeviceMesh::DeviceMesh(std::vector<int64_t> devices, std::vector<int64_t> shape)
    : devices_(std::move(devices)), shape_(std::move(shape)) {
  std::set<int64_t> seen;
  for (int64_t d : devices_) {
    LOOM_CHECK(d >= 0, "device mesh [", join(devices_), "] has a negative device id ", d);
    LOOM_CHECK(seen.insert(d).second, "device mesh [", join(devices_), "] lists device ", d,
               " twice");
  }
  if (devices_.empty()) {
    shape_.clear();  // the empty mesh: no devices, no axes
    return;
  }
  LOOM_CHECK(!shape_.empty() && shape_.size() <= 3, "device mesh [", join(devices_),
             "] must have 1 to 3 axes (DIDx, DIDy, DIDz), got shape [", join(shape_), "]");
  int64_t count = 1;
  for (int64_t e : shape_) {
    LOOM_CHECK(e > 0, "device mesh shape [", join(shape_), "] has an axis of extent ", e);
    count = checkedMul(count, e, "device mesh size");
  }
  LOOM_CHECK(count == int64_t(devices_.size()), "device mesh shape [", join(shape_), "] holds ",
             count, " devices but ", devices_.size(), " are listed: [", join(devices_), "]");
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

namespace {
int64_t fromLast(ParallelType p) {
  switch (p) {
    case ParallelType::DIDx: return 1;
    case ParallelType::DIDy: return 2;
    case ParallelType::DIDz: return 3;
    default: return 0;
  }
}
}  // namespace

bool DeviceMesh::hasAxis(ParallelType p) const {
  const int64_t k = fromLast(p);
  return k > 0 && k <= rank();
}

int64_t DeviceMesh::axisOf(ParallelType p) const {
  LOOM_CHECK(isDeviceDim(p), parallelTypeName(p), " is not a device parallel type");
  LOOM_CHECK(hasAxis(p), "device mesh ", *this, " has ", rank(), " axes: no axis for ",
             parallelTypeName(p), " (DIDx is the last axis, DIDy the one before, DIDz the one "
             "before that)");
  return rank() - fromLast(p);
}

int64_t DeviceMesh::coordinate(int64_t device, ParallelType p) const {
  const int64_t axis = axisOf(p);
  int64_t pos = indexOf(device);
  if (pos < 0) return -1;
  for (int64_t a = rank() - 1; a > axis; --a) pos /= shape_[size_t(a)];
  return pos % shape_[size_t(axis)];
}

std::vector<int64_t> DeviceMesh::team(int64_t device, ParallelType p) const {
  const int64_t axis = axisOf(p);
  const int64_t pos = indexOf(device);
  if (pos < 0) return {};
  int64_t stride = 1;
  for (int64_t a = rank() - 1; a > axis; --a) stride *= shape_[size_t(a)];
  const int64_t extent = shape_[size_t(axis)];
  const int64_t first = pos - coordinate(device, p) * stride;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < extent; ++i) out.push_back(devices_[size_t(first + i * stride)]);
  return out;
}

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh) {
  // Nested brackets, one level per axis.
  const std::vector<int64_t>& shape = mesh.shape();
  const std::vector<int64_t>& devices = mesh.devices();
  if (devices.empty()) return os << "[]";
  size_t next = 0;
  auto emit = [&](auto&& self, size_t axis) -> void {
    os << "[";
    for (int64_t i = 0; i < shape[axis]; ++i) {
      if (i > 0) os << ", ";
      if (axis + 1 == shape.size()) {
        os << devices[next++];
      } else {
        self(self, axis + 1);
      }
    }
    os << "]";
  };
  emit(emit, 0);
  return os;
}

}  // namespace loom::ir
