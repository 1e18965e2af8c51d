// SPDX-License-Identifier: Apache-2.0
// IterDomain, its enums, and the Split/Merge/Resize constructors.
#include "loom/ir/iter_domain.h"

#include <array>

#include "loom/ir/builder.h"
#include "loom/ir/cloner.h"
#include "loom/ir/scalar.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/transforms.h"

namespace loom::ir {
namespace {

constexpr std::array<std::string_view, 4> kIterTypeNames = {"iter", "red", "bcast", "sym"};
constexpr std::array<std::string_view, 14> kParallelTypeNames = {
    "serial", "DIDx", "DIDy", "DIDz",      "BIDx",   "BIDy",     "BIDz",
    "TIDx",   "TIDy", "TIDz", "vectorize", "unroll", "unswitch", "bulk"};

template <typename Enum, size_t N>
std::optional<Enum> parseName(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view iterTypeName(IterType t) { return kIterTypeNames.at(size_t(t)); }
std::optional<IterType> parseIterType(std::string_view s) {
  return parseName<IterType>(kIterTypeNames, s);
}
std::string_view parallelTypeName(ParallelType t) { return kParallelTypeNames.at(size_t(t)); }
std::optional<ParallelType> parseParallelType(std::string_view s) {
  return parseName<ParallelType>(kParallelTypeNames, s);
}

IterDomain::IterDomain(Scalar* start, Scalar* extent, IterType iter_type,
                       ParallelType parallel_type, Scalar* expanded_extent,
                       bool is_rfactor_product)
    : Val(NodeKind::IterDomain, kIndexType),
      start_(start),
      extent_(extent),
      expanded_extent_(expanded_extent),
      iter_type_(iter_type),
      parallel_type_(parallel_type),
      is_rfactor_product_(is_rfactor_product) {
  LOOM_ASSERT(start_ != nullptr && extent_ != nullptr, "IterDomain needs a start and an extent");
  LOOM_ASSERT(expanded_extent_ == nullptr || iter_type_ == IterType::Broadcast,
              "only broadcast IterDomains have an expanded extent");
}

IterDomain::IterDomain(const IterDomain* src, IrCloner& cloner)
    : Val(NodeKind::IterDomain, kIndexType),
      start_(cloner.clone(src->start_)),
      extent_(cloner.clone(src->extent_)),
      expanded_extent_(cloner.clone(src->expanded_extent_)),
      iter_type_(src->iter_type_),
      parallel_type_(src->parallel_type_),
      is_rfactor_product_(src->is_rfactor_product_),
      is_localized_(src->is_localized_) {}

Statement* IterDomain::cloneInto(IrCloner& cloner) const { return new IterDomain(this, cloner); }

IterDomain* IterDomain::create(Scalar* extent, IterType iter_type) {
  return IrBuilder::create<IterDomain>(IrBuilder::index(0), extent, iter_type);
}

void IterDomain::parallelize(ParallelType type) {
  if (type == ParallelType::Vectorize || type == ParallelType::Unroll) {
    LOOM_CHECK(extent_->isConst(), "cannot ", parallelTypeName(type), " IterDomain ", toString(),
               ": its extent ", extent_->toString(), " is not a constant");
  }
  if (type == ParallelType::Vectorize) {
    LOOM_CHECK(!isReduction(), "cannot vectorize reduction IterDomain ", toString());
  }
  LOOM_CHECK(!isSymbolic() || type == ParallelType::Serial, "cannot parallelize symbolic IterDomain ",
             toString(), " before its sizes are known");
  parallel_type_ = type;
}

IterDomain* IterDomain::cloneWithoutDefinition() const { return cloneWithIterType(iter_type_); }

IterDomain* IterDomain::cloneWithIterType(IterType type) const {
  return IrBuilder::create<IterDomain>(start_, extent_, type, parallel_type_,
                                       type == IterType::Broadcast ? expanded_extent_ : nullptr,
                                       is_rfactor_product_);
}

std::pair<IterDomain*, IterDomain*> IterDomain::split(IterDomain* in, Scalar* factor,
                                                      bool inner_split, bool rfactor_products) {
  LOOM_CHECK(factor != nullptr && isIntegralType(factor->dtype()), "split factor of ",
             in->toString(), " must be an integer");
  if (auto f = factor->constInt()) {
    LOOM_CHECK(*f > 0, "split factor of ", in->toString(), " must be positive, got ", *f);
  }
  Scalar* rest = scalar_math::ceilDiv(in->extent(), factor);
  Scalar* outer_extent = inner_split ? rest : factor;
  Scalar* inner_extent = inner_split ? factor : rest;
  Scalar* outer_expanded = nullptr;
  Scalar* inner_expanded = nullptr;
  if (in->hasExpandedExtent()) {
    Scalar* rest_expanded = scalar_math::ceilDiv(in->expandedExtent(), factor);
    outer_expanded = inner_split ? rest_expanded : factor;
    inner_expanded = inner_split ? factor : rest_expanded;
  }
  Scalar* zero = IrBuilder::index(0);
  auto* outer = IrBuilder::create<IterDomain>(zero, outer_extent, in->iterType(),
                                              ParallelType::Serial, outer_expanded,
                                              rfactor_products);
  auto* inner = IrBuilder::create<IterDomain>(zero, inner_extent, in->iterType(),
                                              ParallelType::Serial, inner_expanded,
                                              rfactor_products);
  IrBuilder::create<Split>(outer, inner, in, factor, inner_split);
  return {outer, inner};
}

IterDomain* IterDomain::merge(IterDomain* outer, IterDomain* inner, bool rfactor_product) {
  IterType t;
  if (outer->iterType() == inner->iterType()) {
    t = outer->iterType();
  } else if (outer->isBroadcast()) {
    t = inner->iterType();
  } else if (inner->isBroadcast()) {
    t = outer->iterType();
  } else {
    LOOM_CHECK(!outer->isReduction() && !inner->isReduction(), "cannot merge ",
               outer->toString(), " (", iterTypeName(outer->iterType()), ") with ",
               inner->toString(), " (", iterTypeName(inner->iterType()),
               "): a reduction IterDomain merges only with reductions or broadcasts");
    t = IterType::Iteration;
  }
  Scalar* extent;
  Scalar* expanded = nullptr;
  if (t == IterType::Broadcast) {
    extent = scalar_math::mul(outer->extent(), inner->extent());
    if (outer->hasExpandedExtent() || inner->hasExpandedExtent()) {
      expanded = scalar_math::mul(outer->logicalExtent(), inner->logicalExtent());
    }
  } else {
    extent = scalar_math::mul(outer->logicalExtent(), inner->logicalExtent());
  }
  auto* out = IrBuilder::create<IterDomain>(IrBuilder::index(0), extent, t, ParallelType::Serial,
                                            expanded, rfactor_product);
  IrBuilder::create<Merge>(out, outer, inner);
  return out;
}

IterDomain* IterDomain::resize(IterDomain* in, Scalar* left, Scalar* right, bool rfactor_product) {
  LOOM_CHECK(left != nullptr && right != nullptr && isIntegralType(left->dtype()) &&
                 isIntegralType(right->dtype()),
             "resize of ", in->toString(), ": the left and right widths must be integers");
  Scalar* extent = scalar_math::add(scalar_math::add(left, in->logicalExtent()), right);
  if (auto e = extent->constInt()) {
    LOOM_CHECK(*e >= 0, "resize of ", in->toString(), " (extent ", in->logicalExtent()->toString(),
               ") by ", left->toString(), " and ", right->toString(), " gives the negative extent ",
               *e);
  }
  auto* out = IrBuilder::create<IterDomain>(IrBuilder::index(0), extent, IterType::Iteration,
                                            ParallelType::Serial, nullptr, rfactor_product);
  IrBuilder::create<Resize>(out, in, left, right);
  return out;
}

void IterDomain::concretizeSymbolic(IterType type, Scalar* extent, Scalar* expanded_extent) {
  LOOM_ASSERT(isSymbolic(), "concretizeSymbolic of ", toString(), ", which is ",
              iterTypeName(iter_type_));
  LOOM_ASSERT(type == IterType::Iteration || type == IterType::Broadcast,
              "a symbolic IterDomain becomes Iteration or Broadcast");
  LOOM_ASSERT(extent != nullptr && (type != IterType::Broadcast || extent->isConstInt(1)),
              "a concretized broadcast has the constant extent 1");
  LOOM_ASSERT(expanded_extent == nullptr || type == IterType::Broadcast,
              "only broadcast IterDomains have an expanded extent");
  iter_type_ = type;
  extent_ = extent;
  expanded_extent_ = expanded_extent;
}

void IterDomain::localizeExtent(Scalar* extent) {
  LOOM_ASSERT(extent != nullptr && !isBroadcast(), "localizeExtent of ", toString());
  extent_ = extent;
  is_localized_ = true;
}

std::string IterDomain::toString() const { return "i" + std::to_string(name()); }

}  // namespace loom::ir
