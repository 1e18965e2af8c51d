// SPDX-License-Identifier: Apache-2.0
// Private: the argument checks the Communicator's collectives share (collectives.cpp,
// rooted_collectives.cpp). Each failed check is a UserError that names the collective (`what`),
// the tensor and what was expected.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/multidevice/communicator.h"

namespace loom::multidevice::detail {

inline size_t bytesOf(const Tensor& t) { return size_t(t.numel()) * t.itemSize(); }

/// `t` (called `name`) is defined and contiguous.
void checkTensor(const char* what, const char* name, const Tensor& t);
/// a and b are on one device.
void checkSameDevice(const char* what, const char* a_name, const Tensor& a, const char* b_name,
                     const Tensor& b);
/// b has a's dtype.
void checkSameDtype(const char* what, const char* a_name, const Tensor& a, const char* b_name,
                    const Tensor& b);
/// Both tensors defined and contiguous, of one dtype, on one device.
void checkInputOutput(const char* what, const Tensor& input, const Tensor& output);

/// Whether the bytes of a and b overlap (empty tensors overlap nothing).
bool overlap(const Tensor& a, const Tensor& b);

/// The position of world rank `r` in `team`, which must hold it (`role`: "root", "dst", "src").
int64_t memberPosition(const char* what, const char* role, int64_t r, const Team& team);

}  // namespace loom::multidevice::detail
