// SPDX-License-Identifier: Apache-2.0
// The one list of IR node kinds. It generates the NodeKind enum, forward declarations and the
// visitor methods in dispatch.h; add a node here and the compiler points at every switch to update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

/// Values: things that have a DataType and at most one defining expression.
#define LOOM_FOR_EACH_VAL_NODE(X) \
  X(Scalar)                       \
  X(IterDomain)                   \
  X(TensorDomain)                 \
  X(TensorView)

/// Expressions: tensor math, scalar math and IterDomain transforms.
#define LOOM_FOR_EACH_EXPR_NODE(X) \
  X(UnaryOp)                       \
  X(BinaryOp)                      \
  X(TernaryOp)                     \
  X(ReductionOp)                   \
  X(WelfordOp)                     \
  X(BroadcastOp)                   \
  X(SqueezeOp)                     \
  X(ExpandOp)                      \
  X(ReshapeOp)                     \
  X(LoadStoreOp)                   \
  X(SliceOp)                       \
  X(PadOp)                         \
  X(CatOp)                         \
  X(FullOp)                        \
  X(IotaOp)                        \
  X(RngOp)                         \
  X(ScanOp)                        \
  X(ArgsortOp)                     \
  X(TopKOp)                        \
  X(IndexSelectOp)                 \
  X(GatherOp)                      \
  X(ScatterOp)                     \
  X(MatmulOp)                      \
  X(LinearOp)                      \
  X(SdpaFwdOp)                     \
  X(SdpaBwdOp)                     \
  X(Split)                         \
  X(Merge)                         \
  X(Resize)

namespace loom::ir {

#define LOOM_DECLARE_NODE_CLASS(name) class name;
LOOM_FOR_EACH_VAL_NODE(LOOM_DECLARE_NODE_CLASS)
LOOM_FOR_EACH_EXPR_NODE(LOOM_DECLARE_NODE_CLASS)
#undef LOOM_DECLARE_NODE_CLASS

class Statement;
class Val;
class Expr;
class Fusion;
class IrCloner;

enum class NodeKind : uint8_t {
#define LOOM_NODE_ENUM(name) name,
  LOOM_FOR_EACH_VAL_NODE(LOOM_NODE_ENUM) LOOM_FOR_EACH_EXPR_NODE(LOOM_NODE_ENUM)
#undef LOOM_NODE_ENUM
};

inline constexpr bool isValKind(NodeKind k) { return k <= NodeKind::TensorView; }
/// Number of NodeKind values.
#define LOOM_NODE_COUNT(name) +1
inline constexpr size_t kNumNodeKinds =
    0 LOOM_FOR_EACH_VAL_NODE(LOOM_NODE_COUNT) LOOM_FOR_EACH_EXPR_NODE(LOOM_NODE_COUNT);
#undef LOOM_NODE_COUNT
inline constexpr bool isExprKind(NodeKind k) { return !isValKind(k); }

/// "TensorView", "Split", ...
std::string_view nodeKindName(NodeKind kind);

}  // namespace loom::ir
