// SPDX-License-Identifier: Apache-2.0
// IrCloner: copies nodes into another fusion and remembers the mapping old -> new.
#pragma once

#include <unordered_map>
#include <vector>

#include "loom/ir/base.h"

namespace loom::ir {

class IrCloner {
 public:
  explicit IrCloner(Fusion* target) : target_(target) {}

  /// The copy of `s` in the target fusion, made on first request. nullptr maps to nullptr.
  Statement* clone(const Statement* s);
  template <typename T>
  T* clone(const T* s) {
    return s == nullptr ? nullptr : static_cast<T*>(clone(static_cast<const Statement*>(s)));
  }
  template <typename T>
  std::vector<T*> clone(const std::vector<T*>& v) {
    std::vector<T*> out;
    out.reserve(v.size());
    for (auto* x : v) out.push_back(clone(x));
    return out;
  }

  /// The copy of `s` if it has been made, else nullptr.
  Statement* lookup(const Statement* s) const;
  template <typename T>
  T* lookup(const T* s) const {
    return static_cast<T*>(lookup(static_cast<const Statement*>(s)));
  }

  Fusion* target() const { return target_; }

 private:
  Statement*& slotFor(const Statement* s);

  Fusion* target_;
  // Copies of the statements of the first source fusion seen, by their position in it (no hashing
  // on the clone path); statements of any other fusion go through `others_`.
  // Each entry names its source statement too, so that a lookup after the source fusion changed
  // (positions shift when statements are deleted) is still right.
  struct Entry {
    const Statement* source = nullptr;
    Statement* copy = nullptr;
  };
  const Fusion* source_ = nullptr;
  std::vector<Entry> by_slot_;
  std::unordered_map<const Statement*, Statement*> others_;
};

}  // namespace loom::ir
