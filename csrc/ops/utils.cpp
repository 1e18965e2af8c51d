// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the op constructors (see utils.h).
#include "ops/utils.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/scalar_math.h"
#include "loom/support/strings.h"

namespace loom::ops::detail {

IterDomain* freshId(const IterDomain* id, IterType type) {
  Scalar* expanded = type == IterType::Broadcast ? id->expandedExtent() : nullptr;
  return ir::IrBuilder::create<IterDomain>(id->start(), id->extent(), type,
                                           ir::ParallelType::Serial, expanded, false);
}

std::vector<IterDomain*> dims(const TensorView* x) {
  return ir::TensorDomain::noReductions(x->logical());
}

std::vector<IterDomain*> freshIds(const std::vector<IterDomain*>& ids) {
  std::vector<IterDomain*> out;
  out.reserve(ids.size());
  for (auto* id : ids) out.push_back(freshId(id));
  return out;
}

TensorView* newTensor(std::vector<IterDomain*> logical, DataType dtype) {
  auto* td = ir::IrBuilder::create<ir::TensorDomain>(std::move(logical));
  return ir::IrBuilder::create<TensorView>(td, dtype);
}

namespace {

// nvFuser's sentence for a dim out of range, which tests written for nvFuser match: each op
// family words it its own way there.
std::string dimOutOfRangeWords(std::string_view op, int64_t dim, int64_t rank, DimRole role) {
  if (role == DimRole::kReduction) return "Reduction on invalid axis";
  if (op == "cat") return "Invalid dimension to cat";
  if (op == "squeeze") return "Squeeze dim is outside of Tensor size!";
  if (op == "permute") {
    return "dims argument is out of range, expects -" + std::to_string(rank) + " to " +
           std::to_string(rank - 1) + ", but got " + std::to_string(dim);
  }
  if (op == "take_along_axis") {
    return "Tensor arguments have dimension " + std::to_string(rank) + " (dim " +
           std::to_string(dim) + " is outside it)";
  }
  return "Tried to access out of boundary index " + std::to_string(dim < 0 ? dim + rank : dim) +
         ". total index: " + std::to_string(rank);
}

std::string duplicateDimWords(std::string_view op, DimRole role) {
  if (role == DimRole::kReduction) return "Reduction axes are not unique";
  if (op == "permute") return "duplicated dimension entries";
  return "duplicated dims";
}

}  // namespace

int64_t normalizeDim(const TensorView* x, int64_t dim, int64_t rank, std::string_view op,
                     DimRole role) {
  LOOM_CHECK_INDEX(dim >= -rank && dim < rank, op, ": dimension ", dim, " is out of range for ",
                   x != nullptr ? x->toString() : std::string("a tensor"), " of rank ", rank,
                   " (expected -", rank, " <= dim < ", rank, "). ",
                   dimOutOfRangeWords(op, dim, rank, role));
  return dim < 0 ? dim + rank : dim;
}

std::vector<int64_t> normalizeDims(const TensorView* x, const std::vector<int64_t>& dims,
                                   int64_t rank, std::string_view op, DimRole role) {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (int64_t d : dims) {
    int64_t n = normalizeDim(x, d, rank, op, role);
    LOOM_CHECK(std::find(out.begin(), out.end(), n) == out.end(), op, ": dimension ", d,
               " appears twice for ", x != nullptr ? x->toString() : std::string("a tensor"),
               " of rank ", rank, " (", duplicateDimWords(op, role), ")");
    out.push_back(n);
  }
  return out;
}

std::optional<int64_t> constSize(const IterDomain* id) { return id->logicalExtent()->constInt(); }

std::string shapeString(const TensorView* x) {
  std::vector<std::string> parts;
  for (auto* id : dims(x)) parts.push_back(id->logicalExtent()->toString());
  return "[" + join(parts) + "]";
}

std::string shapeString(const std::vector<int64_t>& sizes) {
  std::vector<std::string> parts;
  for (int64_t s : sizes) parts.push_back(std::to_string(s));
  return "[" + join(parts) + "]";
}

std::vector<IterDomain*> broadcastOutputIds(const std::vector<TensorView*>& tensors,
                                            std::string_view op) {
  std::vector<std::vector<IterDomain*>> all;
  for (auto* tv : tensors) all.push_back(dims(tv));
  return broadcastOutputIds(tensors, all, op);
}

std::vector<IterDomain*> broadcastOutputIds(const std::vector<TensorView*>& tensors,
                                            const std::vector<std::vector<IterDomain*>>& all,
                                            std::string_view op) {
  size_t rank = 0;
  for (const auto& ids : all) rank = std::max(rank, ids.size());
  std::vector<IterDomain*> out;
  out.reserve(rank);
  for (size_t pos = 0; pos < rank; ++pos) {
    // The operand that decides the output: a non-broadcast ID beats a broadcast, an Iteration ID
    // a Symbolic one, and one with a constant extent one with a symbolic extent; among
    // all-broadcast positions, an expanded one wins.
    const IterDomain* chosen = nullptr;
    size_t chosen_tv = 0;
    bool all_broadcast = true;
    for (size_t t = 0; t < all.size(); ++t) {
      const auto& ids = all[t];
      if (pos + ids.size() < rank) continue;  // this operand is implicitly broadcast here
      const IterDomain* id = ids[pos + ids.size() - rank];
      bool bcast = id->isBroadcast();
      if (!bcast) all_broadcast = false;
      // Expanded broadcasts take part in the size check with their logical size.
      if (chosen != nullptr && (!bcast || id->hasExpandedExtent())) {
        auto a = constSize(chosen);
        auto b = constSize(id);
        bool chosen_sized = !chosen->isBroadcast() || chosen->hasExpandedExtent();
        LOOM_CHECK(!chosen_sized || !a || !b || *a == *b, op, ": sizes of ",
                   tensors[chosen_tv]->toString(), " ", shapeString(tensors[chosen_tv]),
                   " and ", tensors[t]->toString(), " ", shapeString(tensors[t]),
                   " do not match at output dimension ", pos, " (", *a, " vs ", *b, ")");
      }
      auto better = [&]() {
        if (chosen == nullptr) return true;
        if (chosen->isBroadcast() != bcast) return !bcast;
        if (bcast) return !chosen->hasExpandedExtent() && id->hasExpandedExtent();
        // An Iteration ID beats a Symbolic one (which may be a broadcast at run time).
        if (chosen->isSymbolic() != id->isSymbolic()) return chosen->isSymbolic();
        return !chosen->extent()->isConst() && id->extent()->isConst();
      };
      if (better()) {
        chosen = id;
        chosen_tv = t;
      }
    }
    LOOM_ASSERT(chosen != nullptr);
    if (all_broadcast) {
      out.push_back(freshId(chosen, IterType::Broadcast));
    } else {
      IterType type = chosen->isSymbolic() ? IterType::Symbolic : IterType::Iteration;
      out.push_back(freshId(chosen, type));
    }
  }
  return out;
}

Scalar* numElements(const TensorView* x, const std::vector<int64_t>& axes) {
  auto ids = dims(x);
  Scalar* n = ir::IrBuilder::index(1);
  for (int64_t a : axes) n = ir::scalar_math::mul(n, ids.at(size_t(a))->logicalExtent());
  return n;
}

Scalar* castScalar(Scalar* s, DataType dtype) {
  if (s->dtype() == dtype) return s;
  if (s->isConst()) return ir::IrBuilder::constant(s->value(), dtype);
  Scalar* out = ir::IrBuilder::symbolic(dtype);
  ir::IrBuilder::create<ir::UnaryOp>(ir::UnaryOpType::Cast, out, s);
  return out;
}

Scalar* scalarOperand(const Val* v, DataType dtype, std::string_view op, std::string_view what) {
  LOOM_CHECK(v != nullptr && v->isA<Scalar>(), op, ": ", what,
             " must be a number or a Scalar, got ",
             v != nullptr ? v->toString() : std::string("nullptr"));
  return castScalar(const_cast<Scalar*>(v->as<Scalar>()), dtype);
}

IterDomain* sizedId(const Size& size, std::string_view op, size_t dim, const SizeList* shape) {
  if (auto c = size.constant()) {
    LOOM_CHECK(*c >= 0, op, ": size ", *c, " at dimension ", dim,
               shape != nullptr ? " of " + shape->toString() : std::string(),
               " is negative. The value ", *c, " at index ", dim,
               " was neither symbolic(-1), zero_element(0), broadcast(1), or static(>1).");
    if (*c == 1) return IterDomain::create(ir::IrBuilder::index(1), IterType::Broadcast);
  }
  return IterDomain::create(size.toScalar());
}

std::vector<int64_t> lastDims(const TensorView* x, int64_t n, std::string_view op) {
  const int64_t rank = x->rank();
  LOOM_CHECK(n >= 1 && n <= rank, op, ": normalized_ndims ", n, " must be between 1 and the rank ",
             rank, " of ", x->toString(), " ", shapeString(x));
  std::vector<int64_t> axes;
  for (int64_t a = rank - n; a < rank; ++a) axes.push_back(a);
  return axes;
}

}  // namespace loom::ops::detail
