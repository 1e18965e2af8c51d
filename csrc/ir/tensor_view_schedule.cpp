// SPDX-License-Identifier: Apache-2.0
// TensorView scheduling members that rewrite only this tensor's own domains: split, merge,
// reorder, flatten, memory type, allocation domain, device mesh.
#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"
#include "loom/support/strings.h"

namespace loom::ir {

TensorView* TensorView::split(int64_t axis, int64_t factor, bool inner_split) {
  LOOM_CHECK(factor > 0, "split of ", toString(), " axis ", axis,
             ": the factor must be positive, got ", factor);
  FusionGuard guard(fusion());
  return split(axis, IrBuilder::index(factor), inner_split);
}

TensorView* TensorView::split(int64_t axis, Scalar* factor, bool inner_split) {
  FusionGuard guard(fusion());
  int64_t a = domain_->normalizeAxis(axis);
  LOOM_CHECK(a >= compute_at_pos_, "cannot split axis ", axis, " of ", toString(),
             ": it is inside the compute-at position ", compute_at_pos_);
  LOOM_CHECK(a >= max_producer_pos_, "cannot split axis ", axis, " of ", toString(),
             ": a producer is inlined up to position ", max_producer_pos_);
  IterDomain* id = domain_->axis(a);
  LOOM_CHECK(!id->isParallelized(), "cannot split axis ", axis, " (", id->toString(), ") of ",
             toString(), ": it is already parallelized as ",
             parallelTypeName(id->parallelType()), "; split first, then parallelize");
  auto [outer, inner] = IterDomain::split(id, factor, inner_split);
  std::vector<IterDomain*> loop = domain_->loop();
  loop[size_t(a)] = outer;
  loop.insert(loop.begin() + a + 1, inner);
  domain_->setLoopDomain(std::move(loop));
  return this;
}

TensorView* TensorView::merge(int64_t outer, int64_t inner) {
  FusionGuard guard(fusion());
  int64_t o = domain_->normalizeAxis(outer);
  int64_t i = domain_->normalizeAxis(inner);
  LOOM_CHECK(o != i, "cannot merge axis ", outer, " of ", toString(), " with itself");
  LOOM_CHECK(std::min(o, i) >= compute_at_pos_, "cannot merge axes ", outer, " and ", inner, " of ",
             toString(), ": inside the compute-at position ", compute_at_pos_);
  LOOM_CHECK(std::min(o, i) >= max_producer_pos_, "cannot merge axes ", outer, " and ", inner,
             " of ", toString(), ": a producer is inlined up to position ", max_producer_pos_);
  for (int64_t k : {o, i}) {
    LOOM_CHECK(!domain_->axis(k)->isParallelized(), "cannot merge axis ", k, " (",
               domain_->axis(k)->toString(), ") of ", toString(), ": it is parallelized as ",
               parallelTypeName(domain_->axis(k)->parallelType()),
               "; merge first, then parallelize");
  }
  IterDomain* merged = IterDomain::merge(domain_->axis(o), domain_->axis(i));
  std::vector<IterDomain*> loop;
  for (int64_t k = 0; k < nDims(); ++k) {
    if (k == o) loop.push_back(merged);
    if (k != o && k != i) loop.push_back(domain_->axis(k));
  }
  domain_->setLoopDomain(std::move(loop));
  return this;
}

TensorView* TensorView::flatten(int64_t from, int64_t to) {
  int64_t f = domain_->normalizeAxis(from);
  int64_t t = domain_->normalizeAxis(to);
  LOOM_CHECK(f <= t, "flatten of ", toString(), ": from ", from, " is after to ", to);
  for (int64_t k = f; k < t; ++k) merge(f, f + 1);
  return this;
}

TensorView* TensorView::reorder(const std::unordered_map<int64_t, int64_t>& old_to_new) {
  int64_t n = nDims();
  std::vector<int64_t> perm(size_t(n), -1);  // new position -> old position
  std::vector<bool> old_used(size_t(n), false);
  for (auto [o, nw] : old_to_new) {
    int64_t oo = domain_->normalizeAxis(o);
    int64_t nn = domain_->normalizeAxis(nw);
    LOOM_CHECK(perm[size_t(nn)] == -1, "reorder of ", toString(), ": two axes moved to position ",
               nw);
    LOOM_CHECK(!old_used[size_t(oo)], "reorder of ", toString(), ": axis ", o, " moved twice");
    perm[size_t(nn)] = oo;
    old_used[size_t(oo)] = true;
  }
  int64_t next_old = 0;
  for (auto& p : perm) {
    if (p != -1) continue;
    while (old_used[size_t(next_old)]) ++next_old;
    p = next_old;
    old_used[size_t(next_old)] = true;
  }
  return reorder(perm);
}

TensorView* TensorView::reorder(const std::vector<int64_t>& permutation) {
  int64_t n = nDims();
  LOOM_CHECK(int64_t(permutation.size()) == n, "reorder of ", toString(), ": permutation [",
             join(permutation), "] has ", permutation.size(), " entries for ", n, " loop axes");
  std::vector<bool> seen(size_t(n), false);
  std::vector<IterDomain*> loop;
  for (int64_t p : permutation) {
    int64_t q = domain_->normalizeAxis(p);
    LOOM_CHECK(!seen[size_t(q)], "reorder of ", toString(), ": [", join(permutation),
               "] is not a permutation");
    seen[size_t(q)] = true;
    loop.push_back(domain_->axis(q));
  }
  for (int64_t k = 0; k < std::max(compute_at_pos_, max_producer_pos_); ++k) {
    LOOM_CHECK(loop[size_t(k)] == domain_->axis(k), "reorder of ", toString(),
               " moves axis ", k, ", which is inside the inlined position ",
               std::max(compute_at_pos_, max_producer_pos_));
  }
  domain_->setLoopDomain(std::move(loop));
  return this;
}

TensorView* TensorView::setMemoryType(MemoryType type) {
  if (isFusionInput() || isFusionOutput()) {
    LOOM_CHECK(type == MemoryType::Global, "fusion input/output ", toString(),
               " must stay in global memory, not ", memoryTypeName(type));
  }
  memory_type_ = type;
  return this;
}

TensorView* TensorView::setAllocationDomain(std::vector<IterDomain*> ids, Contiguity contiguity) {
  // Every allocation ID must be the logical domain or derived from it by Split/Merge.
  std::unordered_set<const IterDomain*> reach(domain_->logical().begin(),
                                              domain_->logical().end());
  std::vector<const IterDomain*> work(domain_->logical().begin(), domain_->logical().end());
  while (!work.empty()) {
    const IterDomain* id = work.back();
    work.pop_back();
    for (Expr* use : id->uses()) {
      bool ready = std::all_of(use->inputs().begin(), use->inputs().end(), [&](Val* v) {
        return reach.count(static_cast<const IterDomain*>(v)) != 0;
      });
      if (!ready || !(use->isA<Split>() || use->isA<Merge>())) continue;
      for (Val* out : use->outputs()) {
        auto* o = out->as<IterDomain>();
        if (reach.insert(o).second) work.push_back(o);
      }
    }
  }
  std::unordered_set<const IterDomain*> seen;
  for (IterDomain* id : ids) {
    LOOM_CHECK(id != nullptr && reach.count(id), "allocation domain of ", toString(), ": ",
               id == nullptr ? std::string("null") : id->toString(),
               " is not derived from the logical domain");
    LOOM_CHECK(seen.insert(id).second, "allocation domain of ", toString(), ": ",
               id->toString(), " appears twice");
  }
  domain_->setAllocationDomain(std::move(ids), std::move(contiguity));
  return this;
}

TensorView* TensorView::setContiguity(Contiguity contiguity) {
  domain_->setContiguity(std::move(contiguity));
  return this;
}

TensorView* TensorView::setDeviceMesh(DeviceMesh mesh) {
  // DeviceMesh's constructor already rejects negative and repeated devices. A DID loop ID needs
  // the mesh axis of its type and must not outnumber it.
  for (IterDomain* id : domain_->loop()) {
    if (!id->isDeviceDim() || mesh.empty()) continue;
    LOOM_CHECK(mesh.hasAxis(id->parallelType()), "device mesh ", mesh, " of ", toString(),
               " has no axis for ", parallelTypeName(id->parallelType()), " (axis ",
               id->toString(), "): DIDx is the last mesh axis, DIDy the one before, DIDz the "
               "one before that");
    auto e = id->extent()->constInt();
    const int64_t n = mesh.size(id->parallelType());
    LOOM_CHECK(!e.has_value() || *e <= n, "device mesh ", mesh, " of ", toString(), " has ", n,
               " devices along ", parallelTypeName(id->parallelType()), " but axis ",
               id->toString(), " has extent ", e.value_or(0));
  }
  mesh_ = std::move(mesh);
  return this;
}

}  // namespace loom::ir
