// SPDX-License-Identifier: Apache-2.0
// A fusion as Python source in nvFuser's direct-binding form: a function that takes a
// FusionDefinition and rebuilds the fusion with define_tensor, fd.ops calls and add_output, then
// the schedule (device meshes, splits and merges, parallel types, allocation domains, memory
// types, inline_most) where the fusion has one. print(fd) shows it; exec() of it rebuilds a
// structurally equal fusion (python/loom/direct/_definition.py checks that and falls back to the
// text form where the translation cannot say something).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"

namespace loom::python {

/// `s` as a T, or nullptr (a const dynCast).
template <typename T>
const T* dyn(const ir::Statement* s) {
  return s != nullptr && s->isA<T>() ? static_cast<const T*>(s) : nullptr;
}

/// What a FusionDefinition knows of its fusion that the IR does not say, and print(fd) says.
struct DefinitionFacts {
  /// The 0-dim inputs defined with is_cpu=True.
  std::unordered_set<const ir::Val*> cpuScalars;
  /// The scalar inputs defined with DataType.Index (Loom's Int64), printed so.
  std::unordered_set<const ir::Val*> indexScalars;
  /// The Scalar inputs holding the seed and offset of random ops defined without them
  /// (execute() draws them from torch's generator): not printed, nor the rng_seed / rng_offset
  /// they fill, so the printed definition draws them the same way.
  std::unordered_set<const ir::Val*> drawn;
  /// Scalar inputs read from tensor inputs when the fusion runs (sdpfa_bwd's seed and offset
  /// given as tensors), each to its tensor: not printed; where they are used, the tensor is.
  std::unordered_map<const ir::Val*, const ir::Val*> derived;
  /// When given, what execute() returns, one tensor per add_output without alias_input in call
  /// order (a tensor twice, an input), printed as those calls after the in-place outputs'
  /// add_output(.., alias_input=..); else the fusion's outputs.
  std::optional<std::vector<const ir::Val*>> returns;
};

/// The fusion as the Python function `function_name(fd)` in nvFuser's form. A UserError saying
/// what when the fusion has something that form cannot express (a partial Welford, a reduction
/// with another init, an rFactor, index math given as an argument, inline positions other than
/// inline_most's, ...).
std::string translateFusion(const ir::Fusion& fusion, std::string_view function_name,
                            const DefinitionFacts& facts = {});

/// The translation's state: the Python names given so far and the lines written.
class Translator {
 public:
  Translator(const ir::Fusion& fusion, const DefinitionFacts& facts)
      : fusion_(fusion), facts_(facts) {}
  std::string run(std::string_view function_name);

 private:
  // Where a Scalar is used, which decides how a constant is written: an operand of a tensor op
  // (the op converts a Python number to its type), an operand of scalar math (a number only
  // when its type is the number's own), or where a Scalar object is needed (scalar casts and
  // unary ops take no Python number).
  enum class Use { TensorOperand, ScalarOperand, ScalarObject };

  // translate.cpp: the definition.
  void defineInput(const ir::Val* v);
  void translateExpr(const ir::Expr* e);
  void translateMath(const ir::Expr* e);
  void translateShapeOp(const ir::Expr* e);
  // translate_calls.cpp: the last extent requirement on `extent` (any, when null) whose message
  // starts with `prefix` (the ops name what made a requirement so), or nullptr.
  const ir::ExtentRequirement* requirementOn(const ir::Scalar* extent,
                                             std::string_view prefix) const;
  // The size such a requirement asks of `extent`: a constant, or the Scalar it must equal.
  struct RequiredSize {
    int64_t value = 0;
    const ir::Scalar* scalar = nullptr;  // when not null, the size instead of `value`
  };
  std::optional<RequiredSize> requiredSize(const ir::Scalar* extent, std::string_view prefix) const;
  // Whether some fd.ops.broadcast_in_dim call's size checks name `tv` as its output.
  bool madeByBroadcastInDim(const ir::TensorView* tv) const;
  // translate.cpp: emits `result = fd.ops.broadcast_in_dim(in, ...)` when broadcastInDimShape
  // (translate_calls.cpp) finds the call.
  bool printBroadcastInDim(const ir::TensorView* in, const std::vector<bool>& fresh,
                           const ir::TensorView* result);
  // The shape of the fd.ops.broadcast_in_dim call that made `result` from
  // `in` (`fresh`: which of result's dims are new), as printed sizes, or nullopt.
  std::optional<std::vector<std::string>> broadcastInDimShape(const ir::TensorView* in,
                                                              const std::vector<bool>& fresh,
                                                              const ir::TensorView* result);
  void translateResizeOp(const ir::Expr* e);  // slice, pad, cat
  void translateSlice(const ir::SliceOp* sl);
  void translatePad(const ir::PadOp* p);
  void translateOtherOp(const ir::Expr* e);
  std::string scalar(const ir::Scalar* s, Use use);
  std::string scalarExpr(const ir::Scalar* s);
  std::string size(const ir::Scalar* s);
  // Whether ops::Size::toScalar required the floating Scalar `f` to be an integer (a size).
  bool checkedFloatingSize(const ir::Scalar* f) const;
  struct SliceBound {
    std::optional<int64_t> value;        // a constant
    const ir::Scalar* scalar = nullptr;  // else a Scalar
  };
  std::string sliceBound(const SliceBound& bound, const ir::Scalar* extent);
  std::string tensor(const ir::Val* v) const;
  std::string operand(const ir::Val* v);
  std::string define(const ir::Val* v, char prefix);
  std::string scalarName(const ir::Scalar* s);
  void numberScalars();
  void emit(std::string line) { lines_.push_back(std::move(line)); }
  void noteExtents(const ir::TensorView* tv);

  // translate_schedule.cpp: what follows the definition.
  void translateSchedule();
  void scheduleTensor(const ir::TensorView* tv);
  void replayLoop(const ir::TensorView* tv, const std::string& name,
                  std::vector<ir::IterDomain*>& current);
  void translateInlining();
  std::string idRef(const ir::TensorView* tv, const std::string& name,
                    const std::vector<ir::IterDomain*>& loop, const ir::IterDomain* id) const;

  const ir::Fusion& fusion_;
  const DefinitionFacts& facts_;
  // operand(v), or the tensor a derived scalar input is read from.
  std::string keyOperand(const ir::Val* v);
  // sdpfa_bwd's philox_seed (seed) or philox_offset: its forward's tensor (findSdpaKeys), else
  // keyOperand of its Scalar.
  std::string bwdKey(const ir::SdpaBwdOp* bwd, bool seed);
  void translateOutputs();
  // ", rng_seed=.., rng_offset=.." of a random op, or nothing when both are drawn.
  std::string rngKey(const ir::Val* seed, const ir::Val* offset, std::string_view seed_name,
                     std::string_view offset_name);
  std::unordered_map<const ir::Val*, std::string> names_;
  // Extents of the tensors defined so far: fd.ops.size(T, dim) gives them back.
  std::unordered_map<const ir::Scalar*, std::pair<std::string, int64_t>> extents_;
  // Constants printed as the Python number they were made from (another type than theirs).
  std::unordered_map<const ir::Scalar*, std::string> number_names_;
  // PadOps that place the inputs of a CatOp: fd.ops.cat makes them.
  std::unordered_set<const ir::Expr*> cat_pads_;
  // sdpfa_fwd's philox_seed and philox_offset tensors (ops::sdpfaFwd's fills of its seed and
  // offset), printed as its third and fourth results where nothing but add_output uses them; the
  // exprs that fill them, which that call makes (translate_calls.cpp).
  void findSdpaKeys();
  std::unordered_map<const ir::Expr*, std::pair<const ir::Val*, const ir::Val*>> sdpa_keys_;
  std::unordered_set<const ir::Expr*> sdpa_key_exprs_;
  // ExpandOps printed as part of fd.ops.broadcast_in_dim (translateShapeOp).
  std::unordered_set<const ir::Expr*> made_by_broadcast_in_dim_;
  std::unordered_set<std::string> imports_;
  std::vector<std::string> lines_;
  // nvFuser's direct bindings name tensors tv<n> and scalars c<n>, each kind counted apart.
  // nvFuser's number for each scalar it would have made (its Val counter, which also counts the
  // extents of defined tensors and its zero and one): the c<N> names of print(fd).
  std::unordered_map<const ir::Scalar*, int64_t> scalar_numbers_;
  int64_t next_scalar_ = 0;  // past every number in scalar_numbers_
};

}  // namespace loom::python
