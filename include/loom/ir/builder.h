// SPDX-License-Identifier: Apache-2.0
// IrBuilder: the one way to create IR nodes. Nodes go into the fusion set by FusionGuard.
#pragma once

#include <utility>

#include "loom/ir/fusion.h"
#include "loom/ir/scalar.h"

namespace loom::ir {

class IrBuilder {
 public:
  /// Creates a node in the active fusion (a UserError when there is none).
  template <typename T, typename... Args>
  static T* create(Args&&... args) {
    Fusion* f = activeFusion();
    T* node = new T(std::forward<Args>(args)...);
    f->registerStatement(node);
    return node;
  }

  /// Constants.
  static Scalar* constant(double v) { return create<Scalar>(DataType::Float64, v); }
  static Scalar* constant(int64_t v) { return create<Scalar>(DataType::Int64, v); }
  static Scalar* constant(bool v) { return create<Scalar>(DataType::Bool, v); }
  static Scalar* constant(ScalarValue v, DataType dtype) { return create<Scalar>(dtype, v); }
  static Scalar* index(int64_t v) { return create<Scalar>(kIndexType, v); }
  /// A symbolic scalar (bound at run time).
  static Scalar* symbolic(DataType dtype) { return create<Scalar>(dtype); }

 private:
  static Fusion* activeFusion();
};

}  // namespace loom::ir
