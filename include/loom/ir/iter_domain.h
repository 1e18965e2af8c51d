// SPDX-License-Identifier: Apache-2.0
// IterDomain: one iteration range of a tensor, and the IterType / ParallelType enums.
// See the IR contract in base.h for what the types mean.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "loom/ir/base.h"

namespace loom::ir {

class Scalar;

enum class IterType : uint8_t { Iteration, Reduction, Broadcast, Symbolic };

enum class ParallelType : uint8_t {
  Serial,
  DIDx,
  DIDy,
  DIDz,
  BIDx,
  BIDy,
  BIDz,
  TIDx,
  TIDy,
  TIDz,
  Vectorize,
  Unroll,
  Unswitch,
  /// Copied whole by one bulk (TMA) copy: only on the output of a LoadStoreOpType::TmaCopy.
  Bulk,
};

std::string_view iterTypeName(IterType t);          ///< "iter", "red", "bcast", "sym"
std::optional<IterType> parseIterType(std::string_view s);
std::string_view parallelTypeName(ParallelType t);  ///< "serial", "DIDx", "TIDx", "vectorize", ...
std::optional<ParallelType> parseParallelType(std::string_view s);

inline bool isDeviceDim(ParallelType p) {
  return p == ParallelType::DIDx || p == ParallelType::DIDy || p == ParallelType::DIDz;
}
inline bool isBlockDim(ParallelType p) {
  return p == ParallelType::BIDx || p == ParallelType::BIDy || p == ParallelType::BIDz;
}
inline bool isThreadDim(ParallelType p) {
  return p == ParallelType::TIDx || p == ParallelType::TIDy || p == ParallelType::TIDz;
}
/// Bound to CUDA blocks or threads.
inline bool isThreadOrBlockDim(ParallelType p) { return isBlockDim(p) || isThreadDim(p); }

class IterDomain : public Val {
 public:
  LOOM_DECLARE_CLONE(IterDomain)

  /// [start, start + extent). `expanded_extent` only for broadcast IDs that were expanded.
  IterDomain(Scalar* start, Scalar* extent, IterType iter_type,
             ParallelType parallel_type = ParallelType::Serial, Scalar* expanded_extent = nullptr,
             bool is_rfactor_product = false);
  IterDomain(const IterDomain* src, IrCloner& cloner);

  /// A fresh Iteration/Reduction/Broadcast ID starting at 0 (built in the active fusion).
  static IterDomain* create(Scalar* extent, IterType iter_type = IterType::Iteration);

  Scalar* start() const { return start_; }
  Scalar* extent() const { return extent_; }
  /// The logical extent of an expanded broadcast, or nullptr.
  Scalar* expandedExtent() const { return expanded_extent_; }
  bool hasExpandedExtent() const { return expanded_extent_ != nullptr; }
  /// expandedExtent() when present, else extent(): the size users see.
  Scalar* logicalExtent() const { return expanded_extent_ ? expanded_extent_ : extent_; }

  IterType iterType() const { return iter_type_; }
  ParallelType parallelType() const { return parallel_type_; }
  bool isIteration() const { return iter_type_ == IterType::Iteration; }
  bool isReduction() const { return iter_type_ == IterType::Reduction; }
  bool isBroadcast() const { return iter_type_ == IterType::Broadcast; }
  bool isSymbolic() const { return iter_type_ == IterType::Symbolic; }
  bool isDeviceDim() const { return loom::ir::isDeviceDim(parallel_type_); }
  bool isParallelized() const { return parallel_type_ != ParallelType::Serial; }
  /// Produced by a root-to-logical transform (reshape, rFactor).
  bool isRFactorProduct() const { return is_rfactor_product_; }

  /// Sets the parallel type. Vectorize and Unroll need a constant extent; DID types need an
  /// Iteration, Reduction or Broadcast ID. Throws UserError otherwise.
  void parallelize(ParallelType type);

  /// A new ID with the same start, extents and types and no definition.
  IterDomain* cloneWithoutDefinition() const;
  /// Same as cloneWithoutDefinition, with another IterType.
  IterDomain* cloneWithIterType(IterType type) const;

  /// Creates a Split expr: returns {outer, inner}. With inner_split the factor is the inner
  /// extent; otherwise it is the outer extent. Outputs inherit the IterType of `in`.
  static std::pair<IterDomain*, IterDomain*> split(IterDomain* in, Scalar* factor,
                                                   bool inner_split,
                                                   bool rfactor_products = false);
  /// Creates a Merge expr and returns its output (extent outer * inner).
  static IterDomain* merge(IterDomain* outer, IterDomain* inner, bool rfactor_product = false);
  /// Creates a Resize expr and returns its output: an Iteration ID of extent
  /// left + in's logical extent + right (folded when constant). left and right are integer
  /// Scalars; negative values shrink.
  static IterDomain* resize(IterDomain* in, Scalar* left, Scalar* right,
                            bool rfactor_product = false);

  /// For concretization only (segmenter/concretize.h): turns this Symbolic ID into an Iteration
  /// ID with extent `extent`, or into a Broadcast ID (then `extent` must be the constant 1, and
  /// `expanded_extent` may give the size of an expanded broadcast). The ID keeps its identity, so
  /// the exprs and domains that refer to it stay valid.
  void concretizeSymbolic(IterType type, Scalar* extent, Scalar* expanded_extent = nullptr);

  /// For sharding localization only (multidevice::localizeShardings): the extent one device
  /// holds of this sharded ID. The ID keeps its identity, so exprs and domains stay valid.
  void localizeExtent(Scalar* extent);
  /// True once localizeExtent ran: the extent is one device's view. In a device's program, an
  /// expr that pairs a localized ID with one that is not moves data between devices (a
  /// communication), so its sizes do not line up.
  bool isLocalized() const { return is_localized_; }

  std::string toString() const override;

 private:
  Scalar* start_;
  Scalar* extent_;
  Scalar* expanded_extent_;
  IterType iter_type_;
  ParallelType parallel_type_;
  bool is_rfactor_product_;
  bool is_localized_ = false;
};

}  // namespace loom::ir
