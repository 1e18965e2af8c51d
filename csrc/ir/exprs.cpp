// SPDX-License-Identifier: Apache-2.0
// Math exprs: constructors, clones, names and attribute comparison.
#include "loom/ir/exprs.h"

#include <algorithm>
#include <limits>

#include "loom/ir/cloner.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"

namespace loom::ir {

#define LOOM_DEFINE_CLONE(T) \
  Statement* T::cloneInto(IrCloner& cloner) const { return new T(this, cloner); }

// ---- UnaryOp
UnaryOp::UnaryOp(UnaryOpType op, Val* out, Val* in)
    : Expr(NodeKind::UnaryOp, {in}, {out}), op_(op) {}
UnaryOp::UnaryOp(const UnaryOp* src, IrCloner& c)
    : Expr(NodeKind::UnaryOp, c.clone(src->inputs()), c.clone(src->outputs())), op_(src->op_) {}
LOOM_DEFINE_CLONE(UnaryOp)
std::string UnaryOp::opName() const { return std::string(opTypeName(op_)); }
bool UnaryOp::sameAttributes(const Expr* other) const {
  return other->as<UnaryOp>()->op_ == op_;
}

// ---- BinaryOp
BinaryOp::BinaryOp(BinaryOpType op, Val* out, Val* lhs, Val* rhs)
    : Expr(NodeKind::BinaryOp, {lhs, rhs}, {out}), op_(op) {}
BinaryOp::BinaryOp(const BinaryOp* src, IrCloner& c)
    : Expr(NodeKind::BinaryOp, c.clone(src->inputs()), c.clone(src->outputs())), op_(src->op_) {}
LOOM_DEFINE_CLONE(BinaryOp)
std::string BinaryOp::opName() const { return std::string(opTypeName(op_)); }
bool BinaryOp::sameAttributes(const Expr* other) const {
  return other->as<BinaryOp>()->op_ == op_;
}

// ---- TernaryOp
TernaryOp::TernaryOp(TernaryOpType op, Val* out, Val* a, Val* b, Val* c)
    : Expr(NodeKind::TernaryOp, {a, b, c}, {out}), op_(op) {}
TernaryOp::TernaryOp(const TernaryOp* src, IrCloner& c)
    : Expr(NodeKind::TernaryOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_) {}
LOOM_DEFINE_CLONE(TernaryOp)
std::string TernaryOp::opName() const { return std::string(opTypeName(op_)); }
bool TernaryOp::sameAttributes(const Expr* other) const {
  return other->as<TernaryOp>()->op_ == op_;
}

// ---- ReductionOp
ReductionOp::ReductionOp(ReductionOpType op, Scalar* init, TensorView* out, TensorView* in)
    : Expr(NodeKind::ReductionOp, {in}, {out}), op_(op), init_(init) {}
ReductionOp::ReductionOp(const ReductionOp* src, IrCloner& c)
    : Expr(NodeKind::ReductionOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_),
      init_(c.clone(src->init_)) {}
LOOM_DEFINE_CLONE(ReductionOp)
TensorView* ReductionOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ReductionOp::in() const { return input(0)->as<TensorView>(); }
std::vector<Val*> ReductionOp::attributeVals() const { return {init_}; }
std::string ReductionOp::opName() const { return std::string(opTypeName(op_)); }
bool ReductionOp::sameAttributes(const Expr* other) const {
  return other->as<ReductionOp>()->op_ == op_;
}

namespace {

bool isConstValue(const Scalar* s, double v) {
  auto d = s->isConst() ? s->constDouble() : std::nullopt;
  return d.has_value() && *d == v;
}

}  // namespace

ScalarValue reductionIdentity(ReductionOpType op, DataType dtype) {
  auto extreme = [&](bool lowest) -> ScalarValue {
    if (isFloatingType(dtype)) {
      double inf = std::numeric_limits<double>::infinity();
      return lowest ? -inf : inf;
    }
    if (isBooleanType(dtype)) return !lowest;
    // The integer types' limits, in the int64 form of data_type.h (UInt64's top is all ones).
    if (isUnsignedType(dtype)) return lowest ? int64_t(0) : wrapInteger(-1, dtype);
    const int64_t top = int64_t(~uint64_t(0) >> (65 - integerBits(dtype)));
    return lowest ? -top - 1 : top;
  };
  switch (op) {
    case ReductionOpType::Sum: return int64_t(0);
    case ReductionOpType::Prod: return int64_t(1);
    case ReductionOpType::Max: return extreme(true);
    case ReductionOpType::Min: return extreme(false);
  }
  LOOM_UNREACHABLE();
}

bool ReductionOp::hasIdentityInit() const {
  switch (op_) {
    case ReductionOpType::Sum: return isConstValue(init_, 0.0);
    case ReductionOpType::Prod: return isConstValue(init_, 1.0);
    case ReductionOpType::Max:
    case ReductionOpType::Min: return true;
  }
  return false;
}

// ---- WelfordOp
bool WelfordOp::hasIdentityInit() const {
  return isConstValue(init_avg_, 0.0) && isConstValue(init_m2_, 0.0) &&
         isConstValue(init_n_, 0.0);
}

WelfordOp::WelfordOp(TensorView* out_avg, TensorView* out_m2, TensorView* out_n, Val* in_avg,
                     Val* in_m2, Val* in_n, Scalar* init_avg, Scalar* init_m2, Scalar* init_n)
    : Expr(NodeKind::WelfordOp, {in_avg, in_m2, in_n}, {out_avg, out_m2, out_n}),
      init_avg_(init_avg),
      init_m2_(init_m2),
      init_n_(init_n) {}
WelfordOp::WelfordOp(const WelfordOp* src, IrCloner& c)
    : Expr(NodeKind::WelfordOp, c.clone(src->inputs()), c.clone(src->outputs())),
      init_avg_(c.clone(src->init_avg_)),
      init_m2_(c.clone(src->init_m2_)),
      init_n_(c.clone(src->init_n_)) {}
LOOM_DEFINE_CLONE(WelfordOp)
TensorView* WelfordOp::outAvg() const { return output(0)->as<TensorView>(); }
TensorView* WelfordOp::outM2() const { return output(1)->as<TensorView>(); }
TensorView* WelfordOp::outN() const { return output(2)->as<TensorView>(); }
bool WelfordOp::hasRawInput() const {
  auto* m2 = inM2()->dynCast<Scalar>();
  auto* n = inN()->dynCast<Scalar>();
  return m2 != nullptr && n != nullptr && m2->constDouble() == 0.0 && n->constInt() == 1;
}
std::vector<Val*> WelfordOp::attributeVals() const { return {init_avg_, init_m2_, init_n_}; }
std::string WelfordOp::opName() const { return "welford"; }
bool WelfordOp::sameAttributes(const Expr*) const { return true; }

// ---- BroadcastOp
BroadcastOp::BroadcastOp(TensorView* out, TensorView* in, std::vector<bool> is_broadcast_dim)
    : Expr(NodeKind::BroadcastOp, {in}, {out}), is_broadcast_dim_(std::move(is_broadcast_dim)) {}
BroadcastOp::BroadcastOp(const BroadcastOp* src, IrCloner& c)
    : Expr(NodeKind::BroadcastOp, c.clone(src->inputs()), c.clone(src->outputs())),
      is_broadcast_dim_(src->is_broadcast_dim_) {}
LOOM_DEFINE_CLONE(BroadcastOp)
TensorView* BroadcastOp::out() const { return output(0)->as<TensorView>(); }
TensorView* BroadcastOp::in() const { return input(0)->as<TensorView>(); }
std::string BroadcastOp::opName() const { return "broadcast"; }
bool BroadcastOp::sameAttributes(const Expr* other) const {
  return other->as<BroadcastOp>()->is_broadcast_dim_ == is_broadcast_dim_;
}

// ---- SqueezeOp
SqueezeOp::SqueezeOp(TensorView* out, TensorView* in, std::vector<bool> is_squeezed_dim)
    : Expr(NodeKind::SqueezeOp, {in}, {out}), is_squeezed_dim_(std::move(is_squeezed_dim)) {}
SqueezeOp::SqueezeOp(const SqueezeOp* src, IrCloner& c)
    : Expr(NodeKind::SqueezeOp, c.clone(src->inputs()), c.clone(src->outputs())),
      is_squeezed_dim_(src->is_squeezed_dim_) {}
LOOM_DEFINE_CLONE(SqueezeOp)
TensorView* SqueezeOp::out() const { return output(0)->as<TensorView>(); }
TensorView* SqueezeOp::in() const { return input(0)->as<TensorView>(); }
std::vector<IterDomain*> SqueezeOp::squeezedIds() const {
  std::vector<IterDomain*> out;
  auto ids = TensorDomain::noReductions(in()->logical());
  for (size_t d = 0; d < ids.size() && d < is_squeezed_dim_.size(); ++d) {
    if (is_squeezed_dim_[d]) out.push_back(ids[d]);
  }
  return out;
}
std::string SqueezeOp::opName() const { return "squeeze"; }
bool SqueezeOp::sameAttributes(const Expr* other) const {
  return other->as<SqueezeOp>()->is_squeezed_dim_ == is_squeezed_dim_;
}

// ---- ExpandOp
ExpandOp::ExpandOp(TensorView* out, TensorView* in) : Expr(NodeKind::ExpandOp, {in}, {out}) {}
ExpandOp::ExpandOp(const ExpandOp* src, IrCloner& c)
    : Expr(NodeKind::ExpandOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(ExpandOp)
TensorView* ExpandOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ExpandOp::in() const { return input(0)->as<TensorView>(); }
std::string ExpandOp::opName() const { return "expand"; }
bool ExpandOp::sameAttributes(const Expr*) const { return true; }

// ---- ReshapeOp
ReshapeOp::ReshapeOp(TensorView* out, TensorView* in) : Expr(NodeKind::ReshapeOp, {in}, {out}) {}
ReshapeOp::ReshapeOp(const ReshapeOp* src, IrCloner& c)
    : Expr(NodeKind::ReshapeOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(ReshapeOp)
TensorView* ReshapeOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ReshapeOp::in() const { return input(0)->as<TensorView>(); }
bool ReshapeOp::isDynamic() const {
  const TensorView* o = out();
  const auto& root = o->root();
  if (o->logical().empty()) return !root.empty();  // [s] -> [] (s is 1 at run time)
  for (const IterDomain* id : o->logical()) {
    if (std::find(root.begin(), root.end(), id) == root.end() && id->definition() == nullptr) {
      return true;
    }
  }
  return false;
}
std::string ReshapeOp::opName() const { return "reshape"; }
bool ReshapeOp::sameAttributes(const Expr*) const { return true; }

// ---- LoadStoreOp
LoadStoreOp::LoadStoreOp(LoadStoreOpType op, TensorView* out, TensorView* in, bool segment_boundary)
    : Expr(NodeKind::LoadStoreOp, {in}, {out}), op_(op), segment_boundary_(segment_boundary) {}
LoadStoreOp::LoadStoreOp(const LoadStoreOp* src, IrCloner& c)
    : Expr(NodeKind::LoadStoreOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_),
      segment_boundary_(src->segment_boundary_) {}
LOOM_DEFINE_CLONE(LoadStoreOp)
TensorView* LoadStoreOp::out() const { return output(0)->as<TensorView>(); }
TensorView* LoadStoreOp::in() const { return input(0)->as<TensorView>(); }
std::string LoadStoreOp::opName() const {
  return segment_boundary_ ? "segment_set" : std::string(opTypeName(op_));
}
bool LoadStoreOp::sameAttributes(const Expr* other) const {
  const auto* o = other->as<LoadStoreOp>();
  return o->op_ == op_ && o->segment_boundary_ == segment_boundary_;
}
bool isTmaCopyOutput(const TensorView* tv) {
  const auto* copy =
      tv->definition() == nullptr ? nullptr : tv->definition()->dynCast<LoadStoreOp>();
  return copy != nullptr && copy->opType() == LoadStoreOpType::TmaCopy;
}

// ---- SliceOp
SliceOp::SliceOp(TensorView* out, TensorView* in) : Expr(NodeKind::SliceOp, {in}, {out}) {}
SliceOp::SliceOp(const SliceOp* src, IrCloner& c)
    : Expr(NodeKind::SliceOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(SliceOp)
TensorView* SliceOp::out() const { return output(0)->as<TensorView>(); }
TensorView* SliceOp::in() const { return input(0)->as<TensorView>(); }
std::string SliceOp::opName() const { return "slice"; }
bool SliceOp::sameAttributes(const Expr*) const { return true; }

// ---- PadOp
PadOp::PadOp(TensorView* out, TensorView* in, Scalar* value)
    : Expr(NodeKind::PadOp, {in, value}, {out}) {}
PadOp::PadOp(const PadOp* src, IrCloner& c)
    : Expr(NodeKind::PadOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(PadOp)
TensorView* PadOp::out() const { return output(0)->as<TensorView>(); }
TensorView* PadOp::in() const { return input(0)->as<TensorView>(); }
Scalar* PadOp::value() const { return input(1)->as<Scalar>(); }
std::string PadOp::opName() const { return "pad"; }
bool PadOp::sameAttributes(const Expr*) const { return true; }

// ---- CatOp
namespace {
std::vector<Val*> asVals(const std::vector<TensorView*>& tvs) {
  return std::vector<Val*>(tvs.begin(), tvs.end());
}
}  // namespace
CatOp::CatOp(TensorView* out, const std::vector<TensorView*>& inputs, int64_t dim)
    : Expr(NodeKind::CatOp, asVals(inputs), {out}), dim_(dim) {}
CatOp::CatOp(const CatOp* src, IrCloner& c)
    : Expr(NodeKind::CatOp, c.clone(src->inputs()), c.clone(src->outputs())), dim_(src->dim_) {}
LOOM_DEFINE_CLONE(CatOp)
TensorView* CatOp::out() const { return output(0)->as<TensorView>(); }
TensorView* CatOp::in(size_t k) const { return input(k)->as<TensorView>(); }
const Resize* CatOp::inputResize(size_t k) const {
  auto ids = TensorDomain::noReductions(in(k)->logical());
  if (dim_ < 0 || size_t(dim_) >= ids.size() || ids[size_t(dim_)]->definition() == nullptr) {
    return nullptr;
  }
  return ids[size_t(dim_)]->definition()->dynCast<Resize>();
}
std::string CatOp::opName() const { return "cat"; }
bool CatOp::sameAttributes(const Expr* other) const { return other->as<CatOp>()->dim_ == dim_; }

// ---- FullOp
FullOp::FullOp(TensorView* out, Scalar* value) : Expr(NodeKind::FullOp, {value}, {out}) {}
FullOp::FullOp(const FullOp* src, IrCloner& c)
    : Expr(NodeKind::FullOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(FullOp)
TensorView* FullOp::out() const { return output(0)->as<TensorView>(); }
Scalar* FullOp::value() const { return input(0)->as<Scalar>(); }
std::string FullOp::opName() const { return "full"; }
bool FullOp::sameAttributes(const Expr*) const { return true; }

// ---- IotaOp
namespace {
std::vector<Val*> iotaInputs(Scalar* start, Scalar* step, Scalar* indexOffset) {
  std::vector<Val*> ins{start, step};
  if (indexOffset != nullptr) ins.push_back(indexOffset);
  return ins;
}
}  // namespace

IotaOp::IotaOp(TensorView* out, Scalar* start, Scalar* step, Scalar* indexOffset)
    : Expr(NodeKind::IotaOp, iotaInputs(start, step, indexOffset), {out}) {}
IotaOp::IotaOp(const IotaOp* src, IrCloner& c)
    : Expr(NodeKind::IotaOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(IotaOp)
TensorView* IotaOp::out() const { return output(0)->as<TensorView>(); }
Scalar* IotaOp::start() const { return input(0)->as<Scalar>(); }
Scalar* IotaOp::step() const { return input(1)->as<Scalar>(); }
Scalar* IotaOp::indexOffset() const {
  return inputs().size() > 2 ? input(2)->as<Scalar>() : nullptr;
}
std::string IotaOp::opName() const { return "iota"; }
bool IotaOp::sameAttributes(const Expr*) const { return true; }

// ---- RngOp
std::string_view rngOpTypeName(RngOpType t) {
  switch (t) {
    case RngOpType::Uniform: return "uniform";
    case RngOpType::Normal: return "normal";
  }
  LOOM_UNREACHABLE();
}
namespace {
std::vector<Val*> rngInputs(Scalar* seed, Scalar* offset, Scalar* param0, Scalar* param1,
                            const std::vector<Scalar*>& offsets,
                            const std::vector<Scalar*>& extents) {
  LOOM_ASSERT(offsets.size() == extents.size(), "an RngOp needs one global extent per index "
              "offset, got ", offsets.size(), " offsets and ", extents.size(), " extents");
  std::vector<Val*> ins{seed, offset, param0, param1};
  ins.insert(ins.end(), offsets.begin(), offsets.end());
  ins.insert(ins.end(), extents.begin(), extents.end());
  return ins;
}
}  // namespace

RngOp::RngOp(TensorView* out, RngOpType type, Scalar* seed, Scalar* offset, Scalar* param0,
             Scalar* param1, std::vector<Scalar*> indexOffsets,
             std::vector<Scalar*> globalExtents)
    : Expr(NodeKind::RngOp, rngInputs(seed, offset, param0, param1, indexOffsets, globalExtents),
           {out}),
      type_(type) {}
RngOp::RngOp(const RngOp* src, IrCloner& c)
    : Expr(NodeKind::RngOp, c.clone(src->inputs()), c.clone(src->outputs())), type_(src->type_) {}
LOOM_DEFINE_CLONE(RngOp)
TensorView* RngOp::out() const { return output(0)->as<TensorView>(); }
Scalar* RngOp::seed() const { return input(0)->as<Scalar>(); }
Scalar* RngOp::offset() const { return input(1)->as<Scalar>(); }
Scalar* RngOp::param0() const { return input(2)->as<Scalar>(); }
Scalar* RngOp::param1() const { return input(3)->as<Scalar>(); }
std::vector<Scalar*> RngOp::indexOffsets() const {
  const size_t n = (inputs().size() - 4) / 2;
  std::vector<Scalar*> out;
  for (size_t d = 0; d < n; ++d) out.push_back(input(4 + d)->as<Scalar>());
  return out;
}
std::vector<Scalar*> RngOp::globalExtents() const {
  const size_t n = (inputs().size() - 4) / 2;
  std::vector<Scalar*> out;
  for (size_t d = 0; d < n; ++d) out.push_back(input(4 + n + d)->as<Scalar>());
  return out;
}
std::string RngOp::opName() const { return std::string(rngOpTypeName(type_)); }
bool RngOp::sameAttributes(const Expr* other) const { return other->as<RngOp>()->type_ == type_; }

// ---- ScanOp
ScanOp::ScanOp(ReductionOpType op, TensorView* out, TensorView* in, int64_t dim)
    : Expr(NodeKind::ScanOp, {in}, {out}), op_(op), dim_(dim) {}
ScanOp::ScanOp(const ScanOp* src, IrCloner& c)
    : Expr(NodeKind::ScanOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_),
      dim_(src->dim_) {}
LOOM_DEFINE_CLONE(ScanOp)
TensorView* ScanOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ScanOp::in() const { return input(0)->as<TensorView>(); }
IterDomain* ScanOp::scanId() const {
  auto ids = TensorDomain::noReductions(out()->logical());
  LOOM_ASSERT(dim_ >= 0 && size_t(dim_) < ids.size(), "scan dim ", dim_, " of ", out()->toString(),
              " is out of range");
  return ids[size_t(dim_)];
}
namespace {
constexpr std::pair<ReductionOpType, std::string_view> kScanNames[] = {
    {ReductionOpType::Sum, "cumsum"},
    {ReductionOpType::Prod, "cumprod"},
    {ReductionOpType::Max, "cummax"},
    {ReductionOpType::Min, "cummin"}};
}  // namespace
std::string ScanOp::opName() const {
  for (const auto& [op, name] : kScanNames) {
    if (op == op_) return std::string(name);
  }
  LOOM_UNREACHABLE();
}
bool ScanOp::sameAttributes(const Expr* other) const {
  const auto* o = other->as<ScanOp>();
  return o->op_ == op_ && o->dim_ == dim_;
}
std::optional<ReductionOpType> parseScanOpName(std::string_view name) {
  for (const auto& [op, n] : kScanNames) {
    if (n == name) return op;
  }
  return std::nullopt;
}

// ---- Sorting
namespace {
IterDomain* dimId(const TensorView* tv, int64_t dim, const Expr* e) {
  auto ids = TensorDomain::noReductions(tv->logical());
  LOOM_ASSERT(dim >= 0 && size_t(dim) < ids.size(), "dim ", dim, " of ", e->opName(), " ",
              tv->toString(), " is out of range");
  return ids[size_t(dim)];
}
}  // namespace

ArgsortOp::ArgsortOp(TensorView* out, TensorView* in, int64_t dim, bool descending)
    : Expr(NodeKind::ArgsortOp, {in}, {out}), dim_(dim), descending_(descending) {}
ArgsortOp::ArgsortOp(const ArgsortOp* src, IrCloner& c)
    : Expr(NodeKind::ArgsortOp, c.clone(src->inputs()), c.clone(src->outputs())),
      dim_(src->dim_),
      descending_(src->descending_),
      block_row_(src->block_row_) {}
LOOM_DEFINE_CLONE(ArgsortOp)
TensorView* ArgsortOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ArgsortOp::in() const { return input(0)->as<TensorView>(); }
IterDomain* ArgsortOp::sortId() const { return dimId(out(), dim_, this); }
std::string ArgsortOp::opName() const { return "argsort"; }
bool ArgsortOp::sameAttributes(const Expr* other) const {
  const auto* o = other->as<ArgsortOp>();
  return o->dim_ == dim_ && o->descending_ == descending_ && o->block_row_ == block_row_;
}

TopKOp::TopKOp(TensorView* values, TensorView* indices, TensorView* in, Scalar* k, int64_t dim,
               bool largest)
    : Expr(NodeKind::TopKOp, {in, k}, {values, indices}), dim_(dim), largest_(largest) {}
TopKOp::TopKOp(const TopKOp* src, IrCloner& c)
    : Expr(NodeKind::TopKOp, c.clone(src->inputs()), c.clone(src->outputs())),
      dim_(src->dim_),
      largest_(src->largest_),
      block_row_(src->block_row_) {}
LOOM_DEFINE_CLONE(TopKOp)
TensorView* TopKOp::values() const { return output(0)->as<TensorView>(); }
TensorView* TopKOp::indices() const { return output(1)->as<TensorView>(); }
TensorView* TopKOp::in() const { return input(0)->as<TensorView>(); }
Scalar* TopKOp::k() const { return input(1)->as<Scalar>(); }
IterDomain* TopKOp::sortId() const { return dimId(values(), dim_, this); }
std::string TopKOp::opName() const { return "topk"; }
bool TopKOp::sameAttributes(const Expr* other) const {
  const auto* o = other->as<TopKOp>();
  return o->dim_ == dim_ && o->largest_ == largest_ && o->block_row_ == block_row_;
}

bool isSortExpr(const Expr* e) { return e->isA<ArgsortOp>() || e->isA<TopKOp>(); }
int64_t sortBlockRow(const Expr* e) {
  if (const auto* a = e->dynCast<ArgsortOp>()) return a->blockRow();
  return e->as<TopKOp>()->blockRow();
}
int64_t sortDim(const Expr* e) {
  if (const auto* a = e->dynCast<ArgsortOp>()) return a->dim();
  return e->as<TopKOp>()->dim();
}

// ---- Indexing ops
IndexSelectOp::IndexSelectOp(TensorView* out, TensorView* lookup, TensorView* index, int64_t dim)
    : Expr(NodeKind::IndexSelectOp, {lookup, index}, {out}), dim_(dim) {}
IndexSelectOp::IndexSelectOp(const IndexSelectOp* src, IrCloner& c)
    : Expr(NodeKind::IndexSelectOp, c.clone(src->inputs()), c.clone(src->outputs())),
      dim_(src->dim_) {}
LOOM_DEFINE_CLONE(IndexSelectOp)
TensorView* IndexSelectOp::out() const { return output(0)->as<TensorView>(); }
TensorView* IndexSelectOp::lookup() const { return input(0)->as<TensorView>(); }
TensorView* IndexSelectOp::index() const { return input(1)->as<TensorView>(); }
std::string IndexSelectOp::opName() const { return "index_select"; }
bool IndexSelectOp::sameAttributes(const Expr* other) const {
  return other->as<IndexSelectOp>()->dim_ == dim_;
}

GatherOp::GatherOp(TensorView* out, TensorView* lookup, TensorView* index, int64_t dim, bool exact)
    : Expr(NodeKind::GatherOp, {lookup, index}, {out}), dim_(dim), exact_(exact) {}
GatherOp::GatherOp(const GatherOp* src, IrCloner& c)
    : Expr(NodeKind::GatherOp, c.clone(src->inputs()), c.clone(src->outputs())),
      dim_(src->dim_),
      exact_(src->exact_) {}
LOOM_DEFINE_CLONE(GatherOp)
TensorView* GatherOp::out() const { return output(0)->as<TensorView>(); }
TensorView* GatherOp::lookup() const { return input(0)->as<TensorView>(); }
TensorView* GatherOp::index() const { return input(1)->as<TensorView>(); }
std::string GatherOp::opName() const { return exact_ ? "take_along_axis" : "gather"; }
bool GatherOp::sameAttributes(const Expr* other) const {
  const auto* g = other->as<GatherOp>();
  return g->dim_ == dim_ && g->exact_ == exact_;
}

ScatterOp::ScatterOp(TensorView* out, TensorView* self, TensorView* index, TensorView* src,
                     int64_t dim, bool accumulate)
    : Expr(NodeKind::ScatterOp, {self, index, src}, {out}), dim_(dim), accumulate_(accumulate) {}
ScatterOp::ScatterOp(const ScatterOp* src, IrCloner& c)
    : Expr(NodeKind::ScatterOp, c.clone(src->inputs()), c.clone(src->outputs())),
      dim_(src->dim_),
      accumulate_(src->accumulate_),
      atomic_(src->atomic_) {}
LOOM_DEFINE_CLONE(ScatterOp)
void ScatterOp::setAtomic(bool atomic) {
  LOOM_ASSERT(!atomic || accumulate_, "only scatter_add accumulates with atomics, not ",
              toString());
  atomic_ = atomic;
}
TensorView* ScatterOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ScatterOp::self() const { return input(0)->as<TensorView>(); }
TensorView* ScatterOp::index() const { return input(1)->as<TensorView>(); }
TensorView* ScatterOp::src() const { return input(2)->as<TensorView>(); }
std::string ScatterOp::opName() const { return accumulate_ ? "scatter_add" : "scatter"; }
bool ScatterOp::sameAttributes(const Expr* other) const {
  const auto* s = other->as<ScatterOp>();
  return s->dim_ == dim_ && s->accumulate_ == accumulate_ && s->atomic_ == atomic_;
}

bool isIndexingExpr(const Expr* e) {
  return e->isA<IndexSelectOp>() || e->isA<GatherOp>() || e->isA<ScatterOp>();
}

bool isIndexedOperand(const Expr* e, const Val* input) {
  if (e->isA<IndexSelectOp>() || e->isA<GatherOp>()) return e->input(0) == input;
  if (e->isA<ScatterOp>()) return e->input(1) == input || e->input(2) == input;
  return false;
}

// ---- MatmulOp
MatmulOp::MatmulOp(TensorView* out, TensorView* a, TensorView* b)
    : Expr(NodeKind::MatmulOp, {a, b}, {out}) {}
MatmulOp::MatmulOp(const MatmulOp* src, IrCloner& c)
    : Expr(NodeKind::MatmulOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(MatmulOp)
TensorView* MatmulOp::out() const { return output(0)->as<TensorView>(); }
TensorView* MatmulOp::a() const { return input(0)->as<TensorView>(); }
TensorView* MatmulOp::b() const { return input(1)->as<TensorView>(); }
std::string MatmulOp::opName() const { return "matmul"; }
bool MatmulOp::sameAttributes(const Expr*) const { return true; }

// ---- LinearOp
namespace {
std::vector<Val*> linearInputs(TensorView* x, TensorView* w, TensorView* bias) {
  if (bias == nullptr) return {x, w};
  return {x, w, bias};
}
}  // namespace
LinearOp::LinearOp(TensorView* out, TensorView* x, TensorView* w, TensorView* bias)
    : Expr(NodeKind::LinearOp, linearInputs(x, w, bias), {out}) {}
LinearOp::LinearOp(const LinearOp* src, IrCloner& c)
    : Expr(NodeKind::LinearOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(LinearOp)
TensorView* LinearOp::out() const { return output(0)->as<TensorView>(); }
TensorView* LinearOp::x() const { return input(0)->as<TensorView>(); }
TensorView* LinearOp::w() const { return input(1)->as<TensorView>(); }
TensorView* LinearOp::bias() const { return hasBias() ? input(2)->as<TensorView>() : nullptr; }
std::string LinearOp::opName() const { return "linear"; }
bool LinearOp::sameAttributes(const Expr*) const { return true; }

// ---- SdpaFwdOp, SdpaBwdOp
SdpaFwdOp::SdpaFwdOp(TensorView* output, TensorView* log_sumexp, TensorView* query, TensorView* key,
                     TensorView* value, Scalar* dropout_p, Scalar* is_causal, Scalar* scale,
                     Scalar* seed, Scalar* offset)
    : Expr(NodeKind::SdpaFwdOp, {query, key, value, dropout_p, is_causal, scale, seed, offset},
           {output, log_sumexp}) {}
SdpaFwdOp::SdpaFwdOp(const SdpaFwdOp* src, IrCloner& c)
    : Expr(NodeKind::SdpaFwdOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(SdpaFwdOp)
TensorView* SdpaFwdOp::attnOut() const { return output(0)->as<TensorView>(); }
TensorView* SdpaFwdOp::logSumexp() const { return output(1)->as<TensorView>(); }
TensorView* SdpaFwdOp::query() const { return input(0)->as<TensorView>(); }
TensorView* SdpaFwdOp::key() const { return input(1)->as<TensorView>(); }
TensorView* SdpaFwdOp::value() const { return input(2)->as<TensorView>(); }
Scalar* SdpaFwdOp::dropoutP() const { return input(3)->as<Scalar>(); }
Scalar* SdpaFwdOp::isCausal() const { return input(4)->as<Scalar>(); }
Scalar* SdpaFwdOp::scale() const { return input(5)->as<Scalar>(); }
Scalar* SdpaFwdOp::seed() const { return input(6)->as<Scalar>(); }
Scalar* SdpaFwdOp::offset() const { return input(7)->as<Scalar>(); }
std::string SdpaFwdOp::opName() const { return "sdpfa_fwd"; }
bool SdpaFwdOp::sameAttributes(const Expr*) const { return true; }

SdpaBwdOp::SdpaBwdOp(TensorView* grad_query, TensorView* grad_key, TensorView* grad_value,
                     TensorView* grad_output, TensorView* query, TensorView* key, TensorView* value,
                     TensorView* output, TensorView* log_sumexp, Scalar* dropout_p,
                     Scalar* is_causal, Scalar* scale, Scalar* seed, Scalar* offset)
    : Expr(NodeKind::SdpaBwdOp,
           {grad_output, query, key, value, output, log_sumexp, dropout_p, is_causal, scale, seed,
            offset},
           {grad_query, grad_key, grad_value}) {}
SdpaBwdOp::SdpaBwdOp(const SdpaBwdOp* src, IrCloner& c)
    : Expr(NodeKind::SdpaBwdOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(SdpaBwdOp)
TensorView* SdpaBwdOp::gradOutput() const { return input(0)->as<TensorView>(); }
TensorView* SdpaBwdOp::query() const { return input(1)->as<TensorView>(); }
TensorView* SdpaBwdOp::key() const { return input(2)->as<TensorView>(); }
TensorView* SdpaBwdOp::value() const { return input(3)->as<TensorView>(); }
TensorView* SdpaBwdOp::attnOut() const { return input(4)->as<TensorView>(); }
TensorView* SdpaBwdOp::logSumexp() const { return input(5)->as<TensorView>(); }
Scalar* SdpaBwdOp::dropoutP() const { return input(6)->as<Scalar>(); }
Scalar* SdpaBwdOp::isCausal() const { return input(7)->as<Scalar>(); }
Scalar* SdpaBwdOp::scale() const { return input(8)->as<Scalar>(); }
Scalar* SdpaBwdOp::seed() const { return input(9)->as<Scalar>(); }
Scalar* SdpaBwdOp::offset() const { return input(10)->as<Scalar>(); }
std::string SdpaBwdOp::opName() const { return "sdpfa_bwd"; }
bool SdpaBwdOp::sameAttributes(const Expr*) const { return true; }

bool isAttentionExpr(const Expr* e) { return e->isA<SdpaFwdOp>() || e->isA<SdpaBwdOp>(); }
size_t attentionTensorInputs(const Expr* e) { return e->isA<SdpaFwdOp>() ? 3 : 6; }

std::vector<int64_t> matmulOperandDims(const Expr* e, const TensorView* operand) {
  auto rank = [](const TensorView* tv) {
    return int64_t(TensorDomain::noReductions(tv->logical()).size());
  };
  const int64_t r = rank(operand);
  std::vector<int64_t> out(size_t(r), -1);
  if (const auto* mm = e->dynCast<MatmulOp>()) {
    const int64_t ra = rank(mm->a()), rb = rank(mm->b());
    const int64_t batch_a = ra >= 2 ? ra - 2 : 0, batch_b = rb >= 2 ? rb - 2 : 0;
    const int64_t nb = std::max(batch_a, batch_b);
    if (r < 2) return out;
    const bool is_a = operand == mm->a();
    const int64_t batch = is_a ? batch_a : batch_b;
    for (int64_t i = 0; i < batch; ++i) out[size_t(i)] = nb - batch + i;
    if (is_a) {
      out[size_t(r - 2)] = nb;  // m; k (the last dim) stays -1
    } else {
      out[size_t(r - 1)] = nb + (ra >= 2 ? 1 : 0);  // n; k stays -1
    }
    return out;
  }
  const auto* lin = e->as<LinearOp>();
  const int64_t rx = rank(lin->x());
  if (operand == lin->x()) {
    for (int64_t i = 0; i + 1 < r; ++i) out[size_t(i)] = i;
  } else if (operand == lin->w()) {
    if (r == 2) out[0] = rx - 1;
  } else if (r == 1) {
    out[0] = rx - 1 + (rank(lin->w()) == 2 ? 1 : 0) - 1;  // the bias: out's last dim
  }
  return out;
}

#undef LOOM_DEFINE_CLONE

}  // namespace loom::ir
