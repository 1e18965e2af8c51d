// SPDX-License-Identifier: Apache-2.0
// DeviceMesh: the devices a tensor is distributed over, as an N-D array of device ids (row-major).
// The device parallel types name its axes from the last: DIDx is the last mesh axis, DIDy the
// one before, DIDz the one before that. A DIDx-parallel IterDomain of extent d (the size of the
// DIDx axis) maps its index i to the devices at position i along that axis.
//
//   DeviceMesh({0, 1, 2, 3}, {2, 2})   [[0, 1], [2, 3]]: DIDx runs along rows {0, 1}, DIDy
//                                      along columns {0, 2}
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "loom/ir/iter_domain.h"

namespace loom::ir {

class DeviceMesh {
 public:
  DeviceMesh() = default;
  /// A 1-D mesh of `devices`. UserError for a negative or repeated device.
  explicit DeviceMesh(std::vector<int64_t> devices);
  /// An N-D mesh: `devices` row-major with `shape` (every extent > 0, product = device count).
  DeviceMesh(std::vector<int64_t> devices, std::vector<int64_t> shape);
  /// Devices 0, 1, ..., n-1.
  static DeviceMesh arange(int64_t n);

  const std::vector<int64_t>& devices() const { return devices_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return int64_t(shape_.size()); }
  /// The number of devices.
  int64_t size() const { return int64_t(devices_.size()); }
  bool empty() const { return devices_.empty(); }
  /// Position of `device` in devices(), or -1.
  int64_t indexOf(int64_t device) const;
  /// True when the mesh has an axis for `p` (a DID type): DIDx needs rank 1, DIDy 2, DIDz 3.
  bool hasAxis(ParallelType p) const;
  /// The mesh axis of DID type `p` (DIDx: rank - 1, ...); UserError when the mesh has none.
  int64_t axisOf(ParallelType p) const;
  /// The extent of `p`'s axis.
  int64_t size(ParallelType p) const { return shape_[size_t(axisOf(p))]; }
  /// `device`'s coordinate along `p`'s axis; -1 when the device is not in the mesh.
  int64_t coordinate(int64_t device, ParallelType p) const;
  /// The devices that share `device`'s coordinates on every axis but `p`'s (its team along p),
  /// in order along that axis; empty when the device is not in the mesh.
  std::vector<int64_t> team(int64_t device, ParallelType p) const;
  bool operator==(const DeviceMesh&) const = default;

 private:
  std::vector<int64_t> devices_;
  std::vector<int64_t> shape_;
};

/// "[0, 1, 2]" for a 1-D mesh, "[[0, 1], [2, 3]]" for a 2-D one (the text form's spelling).
std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh);

}  // namespace loom::ir
