// SPDX-License-Identifier: Apache-2.0
// ReductionSpace: the index space a reduction iterates (its output's logical domain, Reduction IDs
// included) and how each point maps to an input element and an output element.
//
// The output's logical IDs correspond to the input's dims either directly (no root domain: logical
// position i is input dim i) or through a root domain (root position i is input dim i) from which
// the logical IDs derive by Split/Merge, as in an rFactor producer. Going back from logical to
// root: Split  in = outer * extent(inner) + inner, masked when in >= extent(in) (the padding of a
// non-divisible split, which the kernels' predicates skip); Merge  outer = out / extent(inner),
// inner = out % extent(inner).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/eval/expression_evaluator.h"
#include "loom/support/checked_math.h"

namespace loom::ir {
class Expr;
class TensorView;
}  // namespace loom::ir

namespace loom::eval::detail {

/// Elements of `shape`; a UserError when the count (or its doubles' bytes) overflows 64 bits.
inline int64_t numelOf(const std::vector<int64_t>& shape) {
  int64_t n = checkedNumel(shape, "the element count of a tensor the reference evaluates");
  checkedMul(n, int64_t(sizeof(double)), "the reference evaluator's buffer of a tensor");
  return n;
}

inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Walks `shape` in row-major order, keeping one offset per strided operand up to date, and
/// calls fn(linear_index, offsets). Stride 0 reads one element for every index of a dim.
template <typename Fn>
void forEachIndex(const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides, Fn&& fn) {
  int64_t n = numelOf(shape);
  if (n == 0) return;
  size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off(strides.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    fn(lin, off);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        for (size_t j = 0; j < strides.size(); ++j) off[j] += strides[j][d];
        break;
      }
      for (size_t j = 0; j < strides.size(); ++j) off[j] -= strides[j][d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

class ReductionSpace {
 public:
  /// `e` reduces an input of shape `in_shape` (its logical dims without reductions) into `out`.
  /// `in` is e's (first) input tensor, used only to recognise the reduced dims of an output whose
  /// Reduction IDs were cleared (clearReductionIterDomains): they are found by matching its
  /// extents to the input's, a UserError when that is ambiguous. UserError when the domains do
  /// not line up with the input.
  ReductionSpace(const ir::Expr* e, const ir::TensorView* out, const ir::TensorView* in,
                 const std::vector<int64_t>& in_shape, ExpressionEvaluator& ee);

  /// The output's shape: its logical non-reduction extents.
  const std::vector<int64_t>& outShape() const { return out_shape_; }

  /// fn(out_offset, in_offsets) for every unmasked point of the space, in row-major order of the
  /// output's logical domain; in_offsets[j] is the input index dotted with in_strides[j] (strides
  /// over the input's dims, so several same-shaped operands can be read at once).
  template <typename Fn>
  void forEach(const std::vector<std::vector<int64_t>>& in_strides, Fn&& fn) const {
    if (!mapped_) {
      // Fast path: the space is the input's shape, reduced dims have output stride 0.
      std::vector<std::vector<int64_t>> strides{out_strides_};
      strides.insert(strides.end(), in_strides.begin(), in_strides.end());
      std::vector<int64_t> in_offs(in_strides.size());
      forEachIndex(space_, strides, [&](int64_t, const std::vector<int64_t>& off) {
        for (size_t j = 0; j < in_offs.size(); ++j) in_offs[j] = off[j + 1];
        fn(off[0], in_offs);
      });
      return;
    }
    int64_t n = numelOf(space_);
    if (n == 0) return;
    size_t rank = space_.size();
    std::vector<int64_t> idx(rank, 0);
    std::vector<int64_t> vals(n_slots_, 0);
    std::vector<int64_t> in_offs(in_strides.size());
    for (int64_t lin = 0; lin < n; ++lin) {
      int64_t out_off = 0;
      for (size_t d = 0; d < rank; ++d) {
        vals[size_t(logical_slot_[d])] = idx[d];
        out_off += idx[d] * out_strides_[d];
      }
      if (resolve(vals)) {
        for (size_t j = 0; j < in_offs.size(); ++j) {
          int64_t o = 0;
          for (size_t i = 0; i < root_slot_.size(); ++i) {
            o += vals[size_t(root_slot_[i])] * in_strides[j][i];
          }
          in_offs[j] = o;
        }
        fn(out_off, in_offs);
      }
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < space_[d]) break;
        idx[d] = 0;
      }
    }
  }

 private:
  /// One step from logical back to root. Split: slots[a] = in, b = outer, c = inner; value(a) =
  /// value(b) * inner_extent + value(c), masked when >= in_extent. Merge: a = out, b = outer,
  /// c = inner; value(b) = value(a) / inner_extent, value(c) = value(a) % inner_extent.
  struct Step {
    bool is_split;
    int a, b, c;
    int64_t inner_extent;
    int64_t in_extent;
  };

  /// Runs the steps on `vals`; false when the point is masked.
  bool resolve(std::vector<int64_t>& vals) const {
    for (const Step& s : steps_) {
      if (s.is_split) {
        int64_t v = vals[size_t(s.b)] * s.inner_extent + vals[size_t(s.c)];
        if (v >= s.in_extent) return false;
        vals[size_t(s.a)] = v;
      } else {
        int64_t v = vals[size_t(s.a)];
        vals[size_t(s.b)] = v / s.inner_extent;
        vals[size_t(s.c)] = v % s.inner_extent;
      }
    }
    return true;
  }

  void initDirect(const std::vector<bool>& reduced, const std::vector<int64_t>& in_shape);
  void initMapped(const ir::Expr* e, const ir::TensorView* out,
                  const std::vector<int64_t>& in_shape, ExpressionEvaluator& ee);

  bool mapped_ = false;
  std::vector<int64_t> space_;        // extents iterated
  std::vector<int64_t> out_strides_;  // output stride of each space dim (0 for reductions)
  std::vector<int64_t> out_shape_;
  // Mapped path only.
  std::vector<int> logical_slot_;  // value slot of each space dim
  std::vector<int> root_slot_;     // value slot of each input dim
  std::vector<Step> steps_;
  size_t n_slots_ = 0;
};

}  // namespace loom::eval::detail
