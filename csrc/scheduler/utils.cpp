// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the schedulers: reductions, references, sizes and the vectorization rule.
#include "loom/scheduler/utils.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/transform/cache.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/recompute.h"

namespace loom::scheduler::utils {

std::vector<ir::Expr*> reductionExprs(const ir::Fusion& fusion) {
  std::vector<ir::Expr*> result;
  for (ir::Expr* e : fusion.exprs()) {
    if (e->isA<ir::ReductionOp>() || e->isA<ir::WelfordOp>()) result.push_back(e);
  }
  return result;
}

std::vector<ir::Expr*> scanExprs(const ir::Fusion& fusion) {
  std::vector<ir::Expr*> result;
  for (ir::Expr* e : fusion.exprs()) {
    if (e->isA<ir::ScanOp>()) result.push_back(e);
  }
  return result;
}

bool hasNoScan(const ir::Fusion& fusion, std::string* why) {
  std::vector<ir::Expr*> scans = scanExprs(fusion);
  if (scans.empty()) return true;
  if (why != nullptr) {
    *why = "the fusion has a scan (" + scans.front()->output(0)->toString() +
           "), which only the scan scheduler runs";
  }
  return false;
}

std::vector<ir::Expr*> sortExprs(const ir::Fusion& fusion) {
  std::vector<ir::Expr*> result;
  for (ir::Expr* e : fusion.exprs()) {
    if (ir::isSortExpr(e)) result.push_back(e);
  }
  return result;
}

bool hasNoSort(const ir::Fusion& fusion, std::string* why) {
  std::vector<ir::Expr*> sorts = sortExprs(fusion);
  if (sorts.empty()) return true;
  if (why != nullptr) {
    *why = "the fusion has a " + sorts.front()->opName() + " (" +
           sorts.front()->output(0)->toString() + "), which only the sort scheduler runs";
  }
  return false;
}

bool hasNoScatterAdd(const ir::Fusion& fusion, std::string* why) {
  for (ir::Expr* e : fusion.exprs()) {
    const auto* sc = e->dynCast<ir::ScatterOp>();
    if (sc == nullptr || !sc->accumulate()) continue;
    if (why != nullptr) {
      *why = "the fusion has a scatter_add (" + sc->out()->toString() +
             "), which only the scatter scheduler runs";
    }
    return false;
  }
  return true;
}

std::vector<ir::TensorView*> reductionTvs(const ir::Fusion& fusion) {
  std::vector<ir::TensorView*> result;
  for (ir::Expr* e : reductionExprs(fusion)) result.push_back(e->output(0)->as<ir::TensorView>());
  return result;
}

bool isPlainPointwiseFusion(const ir::Fusion& fusion, std::string* why) {
  if (!isPlainUnscheduledFusion(fusion, why) || !hasNoScan(fusion, why) ||
      !hasNoSort(fusion, why) || !hasNoScatterAdd(fusion, why)) {
    return false;
  }
  std::vector<ir::Expr*> reductions = reductionExprs(fusion);
  if (reductions.empty()) return true;
  if (why != nullptr) {
    *why = "the fusion has a reduction (" + reductions.front()->output(0)->toString() + ")";
  }
  return false;
}

bool readFromGlobal(const ir::TensorView* tv) {
  for (ir::Expr* use : tv->uses()) {
    if (use->isA<ir::SliceOp>() || use->isA<ir::PadOp>()) return true;
    if (auto* sq = use->dynCast<ir::SqueezeOp>()) {
      for (ir::IterDomain* id : sq->squeezedIds()) {
        if (!id->isBroadcast()) return true;
      }
    }
  }
  return false;
}

namespace {

// Connected components of `tvs` (all of the fusion's tensors): an expr's tensor outputs are one
// component, and each tensor input joins them where `linked(input, output)` holds (indices into
// tvs). Returns each tensor's component.
template <typename Linked>
std::vector<size_t> tensorComponents(const ir::Fusion& fusion,
                                     const std::vector<ir::TensorView*>& tvs, Linked linked) {
  std::unordered_map<const ir::TensorView*, size_t> index;
  for (size_t i = 0; i < tvs.size(); ++i) index[tvs[i]] = i;
  std::vector<size_t> parent(tvs.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (ir::Expr* e : fusion.exprs()) {
    std::vector<size_t> outs;
    for (ir::Val* v : e->outputs()) {
      if (auto* tv = v->dynCast<ir::TensorView>()) outs.push_back(index.at(tv));
    }
    for (size_t k = 1; k < outs.size(); ++k) parent[find(outs[k])] = find(outs[0]);
    for (ir::Val* v : e->inputs()) {
      auto* tv = v->dynCast<ir::TensorView>();
      if (tv == nullptr) continue;
      size_t p = index.at(tv);
      for (size_t c : outs) {
        if (linked(p, c)) parent[find(p)] = find(c);
      }
    }
  }
  std::vector<size_t> component(tvs.size());
  for (size_t i = 0; i < tvs.size(); ++i) component[i] = find(i);
  return component;
}

// The reason a tensor's dims map onto each other through a reshape's merge or split (see
// fitsOneKernel), or "" when none does.
std::string selfMappingThroughReshape(const ir::Fusion& fusion,
                                      const transform::IdGraph& exact) {
  std::vector<ir::Expr*> transforms;
  for (ir::TensorView* tv : fusion.allTvs()) {
    if (!tv->domain()->hasRoot()) continue;
    // The root-to-logical transforms: definitions walked back from the logical IDs.
    std::vector<ir::IterDomain*> work(tv->logical().begin(), tv->logical().end());
    std::unordered_set<const ir::Expr*> seen;
    while (!work.empty()) {
      ir::IterDomain* id = work.back();
      work.pop_back();
      ir::Expr* def = id->definition();
      if (def == nullptr || !seen.insert(def).second) continue;
      transforms.push_back(def);
      for (ir::Val* in : def->inputs()) work.push_back(in->as<ir::IterDomain>());
    }
  }
  if (transforms.empty()) return "";
  for (ir::TensorView* tv : fusion.allTvs()) {
    auto ids = ir::TensorDomain::noReductions(tv->logical());
    std::unordered_map<int64_t, size_t> dim_of;  // exact set -> dim of tv
    for (size_t d = 0; d < ids.size(); ++d) {
      if (!ids[d]->isBroadcast()) dim_of.emplace(exact.setOf(ids[d]), d);
    }
    if (dim_of.size() < 2) continue;
    // The dims of tv an ID is made of by merges (empty when it is none of them).
    std::unordered_map<int64_t, std::vector<size_t>> memo;
    auto dimsOf = [&](auto& self, const ir::IterDomain* id, int depth) -> std::vector<size_t> {
      int64_t set = exact.setOf(id);
      if (auto it = dim_of.find(set); it != dim_of.end()) return {it->second};
      if (auto it = memo.find(set); it != memo.end()) return it->second;
      memo[set] = {};
      std::vector<size_t> out;
      if (depth < 8) {
        for (ir::Expr* e : transforms) {
          auto* m = e->dynCast<ir::Merge>();
          if (m == nullptr || exact.setOf(m->out()) != set) continue;
          std::vector<size_t> a = self(self, m->outer(), depth + 1);
          std::vector<size_t> b = self(self, m->inner(), depth + 1);
          if (a.empty() || b.empty()) continue;
          out = a;
          out.insert(out.end(), b.begin(), b.end());
          break;
        }
      }
      memo[set] = out;
      return out;
    };
    for (ir::Expr* e : transforms) {
      std::string what;
      if (auto* m = e->dynCast<ir::Merge>()) {
        auto it = dim_of.find(exact.setOf(m->out()));
        if (it == dim_of.end()) continue;
        std::vector<size_t> a = dimsOf(dimsOf, m->outer(), 0);
        std::vector<size_t> b = dimsOf(dimsOf, m->inner(), 0);
        if (a.empty() || b.empty()) continue;
        what = "dims of " + tv->toString() + " merge into its dim " + std::to_string(it->second);
      } else if (auto* sp = e->dynCast<ir::Split>()) {
        auto it = dim_of.find(exact.setOf(sp->in()));
        if (it == dim_of.end()) continue;
        bool piece = dim_of.count(exact.setOf(sp->outer())) != 0 ||
                     dim_of.count(exact.setOf(sp->inner())) != 0;
        if (!piece) continue;
        what = "a piece of dim " + std::to_string(it->second) + " of " + tv->toString() +
               " is another of its dims";
      }
      if (!what.empty()) {
        return what + " (through a reshape: " + e->toString() +
               "); the reshape's result goes through global memory";
      }
    }
  }
  return "";
}

// The reason outputs and reductions fall into groups that share no real dim (see
// fitsOneKernel), or "" when they do not. Links: a producer and a consumer sharing a
// non-broadcast ID (reductions included) in the exact graph; tensors without such IDs (0-dim
// results, all-broadcast tensors) are skipped.
std::string spacesSharingNoDim(const ir::Fusion& fusion, const transform::IdGraph& exact) {
  std::vector<ir::TensorView*> tvs = fusion.allTvs();
  std::vector<std::vector<int64_t>> sets(tvs.size());  // sorted exact sets of real dims
  for (size_t i = 0; i < tvs.size(); ++i) {
    for (ir::IterDomain* id : tvs[i]->logical()) {
      if (!id->isBroadcast() || id->hasExpandedExtent()) sets[i].push_back(exact.setOf(id));
    }
    std::sort(sets[i].begin(), sets[i].end());
  }
  std::vector<size_t> component = tensorComponents(fusion, tvs, [&](size_t a, size_t b) {
    return std::any_of(sets[a].begin(), sets[a].end(), [&](int64_t x) {
      return std::binary_search(sets[b].begin(), sets[b].end(), x);
    });
  });
  std::optional<size_t> first;
  for (size_t i = 0; i < tvs.size(); ++i) {
    bool counts = fusion.isOutput(tvs[i]) || tvs[i]->domain()->hasReduction();
    if (!counts || sets[i].empty()) continue;
    if (!first) {
      first = i;
    } else if (component[i] != component[*first]) {
      return tvs[*first]->toString() + " and " + tvs[i]->toString() +
             " share no dim (they meet only through a tensor without dims, such as a full "
             "reduction's result); one kernel cannot run both spaces";
    }
  }
  return "";
}

// The reason no one output or reduction holds every real dim of the others (see fitsOneKernel),
// or "" when one does.
std::string spacesWithoutOneReference(const ir::Fusion& fusion, const transform::IdGraph& exact) {
  std::vector<std::pair<const ir::TensorView*, std::vector<int64_t>>> spaces;
  for (ir::TensorView* tv : fusion.allTvs()) {
    if (!fusion.isOutput(tv) && !tv->domain()->hasReduction()) continue;
    std::vector<int64_t> sets;
    for (ir::IterDomain* id : tv->logical()) {
      if (!id->isBroadcast() || id->hasExpandedExtent()) sets.push_back(exact.setOf(id));
    }
    std::sort(sets.begin(), sets.end());
    sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
    if (!sets.empty()) spaces.emplace_back(tv, std::move(sets));
  }
  if (spaces.size() < 2) return "";
  // The candidate with the most dims; each space must be a subset of it.
  auto widest = std::max_element(spaces.begin(), spaces.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  for (const auto& [tv, sets] : spaces) {
    if (!std::includes(widest->second.begin(), widest->second.end(), sets.begin(), sets.end())) {
      return widest->first->toString() + " and " + tv->toString() +
             " iterate different spaces (a dim of one is none of the other's, such as one "
             "broadcast expanded to two extents); one reference cannot schedule both";
    }
  }
  return "";
}

}  // namespace

bool fitsOneKernel(const ir::Fusion& fusion, std::string* why) {
  auto reject = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  // One kernel is scheduled from one reference tensor whose schedule propagates along
  // producer-consumer edges: tensors it cannot reach would keep serial loops run by every
  // thread. Unconnected groups of tensors (sharing no tensor, inputs included) are separate
  // kernels: the segmenter never merges them.
  {
    std::vector<ir::TensorView*> tvs = fusion.allTvs();
    std::vector<size_t> component =
        tensorComponents(fusion, tvs, [](size_t, size_t) { return true; });
    std::vector<size_t> output_component;  // per fusion output, in output order
    for (ir::Val* out : fusion.outputs()) {
      size_t i = size_t(std::find(tvs.begin(), tvs.end(), out) - tvs.begin());
      output_component.push_back(component.at(i));
    }
    for (size_t k = 1; k < output_component.size(); ++k) {
      if (output_component[k] != output_component[0]) {
        return reject("outputs " + fusion.outputs().front()->toString() + " and " +
                      fusion.outputs()[k]->toString() + " share no tensor; unconnected "
                      "groups are separate kernels");
      }
    }
  }
  // Outputs and reductions must also share real dims, not only tensors: x[2, 3, 32] reduced to a
  // scalar that is broadcast against y[63, 64] links the two only through a tensor without dims,
  // and one reference cannot schedule both spaces (the row of x and the 4032 elements of y).
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  if (std::string reason = spacesSharingNoDim(fusion, exact); !reason.empty()) {
    return reject(reason);
  }
  // Nor may they iterate spaces of which none holds the others: x[1, n] expanded to [a, n] and
  // to [b, n] gives two outputs that share n but not their rows, and the reference's loops would
  // compute the other output's broadcast only for the reference's rows.
  if (std::string reason = spacesWithoutOneReference(fusion, exact); !reason.empty()) {
    return reject(reason);
  }
  // A computed tensor read at two different positions of one consumer (x * x^T: one dim of x
  // against two dims of the product) cannot be computed inside the consumer's loops for both
  // reads: it goes through global memory (the segmenter makes it a segment output).
  {
    std::unordered_map<int64_t, const ir::TensorView*> computed_set;  // exact set -> a tensor
    for (ir::TensorView* tv : fusion.allTvs()) {
      if (tv->isFusionInput() || tv->definition() == nullptr) continue;
      for (ir::IterDomain* id : tv->logical()) {
        if (!id->isBroadcast()) computed_set.emplace(exact.setOf(id), tv);
      }
    }
    for (ir::TensorView* tv : fusion.allTvs()) {
      auto ids = ir::TensorDomain::noReductions(tv->logical());
      for (size_t i = 0; i < ids.size(); ++i) {
        for (size_t j = i + 1; j < ids.size(); ++j) {
          if (ids[i]->isBroadcast() || !exact.areMapped(ids[i], ids[j])) continue;
          auto it = computed_set.find(exact.setOf(ids[i]));
          if (it == computed_set.end()) continue;
          return reject(it->second->toString() + " is read at two positions of " +
                        tv->toString() + " (dims " + std::to_string(i) + " and " +
                        std::to_string(j) + "); it goes through global memory");
        }
      }
    }
  }
  // A tensor whose dims meet again through a reshape (x[2, 8] against reshape(x, [16]) in one
  // [2, 8, 16] consumer): the consumer's dims 0 and 1, merged by a schedule, are the reshape's
  // merged dim, which is its dim 2, so the ID graph makes one loop of dims that differ. The
  // reshape's result goes through global memory (a segment boundary).
  if (std::string reason = selfMappingThroughReshape(fusion, exact); !reason.empty()) {
    return reject(reason);
  }
  // A slice or pad reads its input at shifted positions, outside any loop the input could be
  // computed in: the input comes from global memory (a fusion input; the segmenter makes a
  // computed one a segment boundary). A cat selects among its pads by their ranges, so they are
  // in the same kernel.
  for (ir::Expr* e : fusion.exprs()) {
    if (auto* ls = e->dynCast<ir::LoadStoreOp>(); ls != nullptr && ls->isSegmentBoundary()) {
      if (!ls->in()->isFusionInput()) {
        return reject("the input of " + ls->out()->toString() + " = segment_set(" +
                      ls->in()->toString() +
                      ") is computed in this fusion; segment_set cuts the fusion there");
      }
    } else if (ir::isSortExpr(e)) {
      // A sort reads whole rows of its input and writes whole rows of its outputs, one thread
      // per row: the input comes from global memory, and the outputs go there before anything
      // reads them (in a later kernel).
      if (!e->input(0)->isFusionInput()) {
        return reject("the input of " + e->output(0)->toString() + " = " + e->opName() + "(" +
                      e->input(0)->toString() + ", ...) is computed in this fusion; " +
                      e->opName() + " reads whole rows from global memory");
      }
      for (ir::Val* out : e->outputs()) {
        if (!out->uses().empty()) {
          return reject(out->toString() + " = " + e->opName() + "(...) is read by " +
                        out->uses().front()->output(0)->toString() +
                        " in this fusion; a sort's results are read by a later kernel");
        }
      }
    } else if (e->isA<ir::SliceOp>() || e->isA<ir::PadOp>()) {
      if (!e->input(0)->isFusionInput()) {
        return reject("the input of " + e->output(0)->toString() + " = " + e->opName() + "(" +
                      e->input(0)->toString() + ") is computed in this fusion; " + e->opName() +
                      " reads its input from global memory");
      }
    } else if (ir::isIndexingExpr(e)) {
      // gather / index_select read their lookup, scatter its index and src, at positions loaded
      // from an index tensor, outside any loop they could be computed in: global memory (a
      // fusion input), read by no other op but indexed reads in the kernel (a register cache the
      // scheduler makes for other readers would hold only one thread's elements).
      for (ir::Val* in : e->inputs()) {
        if (!ir::isIndexedOperand(e, in)) continue;
        if (!in->isFusionInput()) {
          return reject(in->toString() + ", read at indexed positions by " +
                        e->output(0)->toString() + " = " + e->opName() +
                        "(...), is computed in this fusion; it is read from global memory");
        }
        for (ir::Expr* use : in->uses()) {
          const bool indexed_only = std::all_of(
              use->inputs().begin(), use->inputs().end(),
              [&](const ir::Val* v) { return v != in || ir::isIndexedOperand(use, v); });
          if (!indexed_only) {
            return reject(in->toString() + " is read at indexed positions by " +
                          e->output(0)->toString() + " = " + e->opName() + "(...) and also by " +
                          use->output(0)->toString() +
                          "; the indexed read has a kernel of its own");
          }
        }
      }
    } else if (auto* cat = e->dynCast<ir::CatOp>()) {
      for (size_t k = 0; k < cat->numInputs(); ++k) {
        ir::Expr* def = cat->in(k)->definition();
        if (def == nullptr || !def->isA<ir::PadOp>() || cat->inputResize(k) == nullptr) {
          return reject("input " + std::to_string(k) + " of " + cat->out()->toString() +
                        " = cat(...) is not padded in this fusion; cat needs its pads in the "
                        "same kernel");
        }
      }
    }
  }
  return true;
}

bool isPlainUnscheduledFusion(const ir::Fusion& fusion, std::string* why) {
  auto reject = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  for (const ir::Expr* e : fusion.exprs()) {
    if (e->isA<ir::MatmulOp>() || e->isA<ir::LinearOp>()) {
      std::string text = e->toString();
      while (!text.empty() && text.back() == '\n') text.pop_back();
      return reject("'" + text +
                    "' runs as a matmul segment of its own (a GEMM library call), "
                    "not in a generated kernel");
    }
    if (ir::isAttentionExpr(e)) {
      return reject("'" + e->opName() +
                    "' runs as an attention segment of its own (the fused attention kernel or "
                    "its composite), not in a generated kernel");
    }
  }
  bool any_tensor_output = false;
  for (ir::Val* out : fusion.outputs()) {
    if (!out->isA<ir::TensorView>()) {
      return reject("output " + out->toString() + " is a Scalar; schedulers need tensor outputs");
    }
    any_tensor_output = true;
  }
  if (!any_tensor_output) return reject("the fusion has no outputs");
  for (ir::TensorView* tv : fusion.allTvs()) {
    if (tv->domain()->hasRoot() && !tv->definition()) {
      return reject(tv->toString() + " has a root domain without a definition");
    }
    if (tv->loop() != tv->logical()) {
      // execute() drops loops transformed but not parallelized before segmenting (user_loops.h).
      return reject(tv->toString() +
                    " is already scheduled (its loop domain is not its logical: a hand schedule, "
                    "which manual_execute / KernelExecutor runs)");
    }
    for (ir::IterDomain* id : tv->loop()) {
      if (id->isDeviceDim()) {
        return reject(tv->toString() + " has a device-parallel ID " + id->toString() +
                      "; multidevice fusions are not scheduled yet");
      }
      if (id->isParallelized()) {
        return reject(tv->toString() + " is already parallelized (" + id->toString() + ")");
      }
    }
    if (tv->computeAtPosition() != 0) return reject(tv->toString() + " is already inlined");
  }
  return fitsOneKernel(fusion, why);
}

std::vector<ir::TensorView*> forkOutputsReadInFusion(ir::Fusion& fusion,
                                                     const ir::TensorView* keep) {
  std::vector<ir::TensorView*> forks;
  for (ir::Val* out : std::vector<ir::Val*>(fusion.outputs())) {
    auto* tv = out->dynCast<ir::TensorView>();
    if (tv == nullptr || tv->isFusionInput() || tv->definition() == nullptr ||
        tv->uses().empty() || tv->memoryType() != ir::MemoryType::Global) {
      continue;
    }
    if (keep != nullptr && keep->definition() == tv->definition()) continue;
    forks.push_back(transform::cacheFork(tv));
    tv->setMemoryType(ir::MemoryType::Local);
  }
  return forks;
}

ir::TensorView* largestOutput(const ir::Fusion& fusion) {
  ir::TensorView* best = nullptr;
  int64_t best_dims = -1;
  for (ir::Val* out : fusion.outputs()) {
    auto* tv = out->dynCast<ir::TensorView>();
    if (tv == nullptr) continue;
    int64_t dims = 0;
    // An expanded broadcast is a dim the output is written over (densely): an output that has
    // one is larger than one without it, and only as the reference does it get a loop.
    for (ir::IterDomain* id : tv->logical()) {
      dims += !id->isReduction() && (!id->isBroadcast() || id->hasExpandedExtent());
    }
    // An output that is also an input is only copied: prefer computed outputs.
    dims = tv->isFusionInput() ? dims : dims + (int64_t(1) << 32);
    if (dims > best_dims) {
      best = tv;
      best_dims = dims;
    }
  }
  return best;
}

int64_t product(SchedulerRuntimeInfo& info, const ir::TensorView* tv,
                const std::vector<ir::IterDomain*>& ids) {
  int64_t p = 1;
  for (ir::IterDomain* id : ids) p *= info.extent(id, tv);
  return p;
}

int64_t floorPow2(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

namespace {

std::vector<ir::IterDomain*> nonBroadcast(const std::vector<ir::IterDomain*>& ids) {
  std::vector<ir::IterDomain*> result;
  for (ir::IterDomain* id : ids) {
    if (!id->isBroadcast() && !id->isReduction()) result.push_back(id);
  }
  return result;
}

// `ids` minus broadcasts, keeping reductions (a reduction tensor's inner_ids are reductions).
std::vector<ir::IterDomain*> noBroadcasts(const std::vector<ir::IterDomain*>& ids) {
  return ir::TensorDomain::noBroadcasts(ids);
}

// Position of `id` in tv's logical domain without reductions, or -1.
int64_t logicalPosition(const ir::TensorView* tv, const ir::IterDomain* id) {
  int64_t pos = 0;
  for (ir::IterDomain* l : tv->logical()) {
    if (l->isReduction()) continue;
    if (l == id) return pos;
    ++pos;
  }
  return -1;
}

std::vector<ir::TensorView*> inputsAndOutputs(const ir::Fusion& fusion) {
  std::vector<ir::TensorView*> result;
  for (const auto* list : {&fusion.inputs(), &fusion.outputs()}) {
    for (ir::Val* v : *list) {
      auto* tv = v->dynCast<ir::TensorView>();
      if (tv != nullptr && std::find(result.begin(), result.end(), tv) == result.end()) {
        result.push_back(tv);
      }
    }
  }
  return result;
}

}  // namespace

std::vector<ir::TensorView*> innerAlignedTensors(const ir::Fusion& fusion,
                                                 const ir::TensorView* ref,
                                                 const std::vector<ir::IterDomain*>& inner_ids) {
  if (noBroadcasts(inner_ids).empty()) return {};
  return innerAlignedTensors(fusion, transform::IdGraph(fusion, transform::IdMappingMode::Exact),
                             ref, inner_ids);
}

std::vector<ir::TensorView*> innerAlignedTensors(const ir::Fusion& fusion,
                                                 const transform::IdGraph& graph,
                                                 const ir::TensorView* ref,
                                                 const std::vector<ir::IterDomain*>& inner_ids) {
  (void)ref;
  LOOM_ASSERT(graph.mode() == transform::IdMappingMode::Exact,
              "innerAlignedTensors needs an exact IdGraph");
  std::vector<ir::IterDomain*> inner = noBroadcasts(inner_ids);
  if (inner.empty()) return {};
  std::vector<ir::TensorView*> result;
  for (ir::TensorView* tv : inputsAndOutputs(fusion)) {
    for (ir::IterDomain* id : tv->maybeAllocation()) {
      if (!id->isBroadcast() && !id->isReduction() && graph.areMapped(id, inner.back())) {
        result.push_back(tv);
        break;
      }
    }
  }
  return result;
}

int64_t maxVectorWidth(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                       const ir::TensorView* ref, const std::vector<ir::IterDomain*>& inner_ids,
                       const std::vector<ir::TensorView*>& tvs) {
  if (tvs.empty() || noBroadcasts(inner_ids).empty()) return 1;
  return maxVectorWidth(transform::IdGraph(fusion, transform::IdMappingMode::Exact), info, ref,
                        inner_ids, tvs);
}

int64_t maxVectorWidth(const transform::IdGraph& graph, SchedulerRuntimeInfo& info,
                       const ir::TensorView* ref, const std::vector<ir::IterDomain*>& inner_ids,
                       const std::vector<ir::TensorView*>& tvs) {
  LOOM_ASSERT(graph.mode() == transform::IdMappingMode::Exact,
              "maxVectorWidth needs an exact IdGraph");
  std::vector<ir::IterDomain*> inner = noBroadcasts(inner_ids);
  if (tvs.empty() || inner.empty()) return 1;
  int64_t width = 16;
  for (ir::TensorView* tv : tvs) {
    if (utils::product(info, tv, nonBroadcast(tv->logical())) == 0) return 1;
    width = std::min<int64_t>(width, 16 / int64_t(dataTypeSize(tv->dtype())));
    width = std::min(width, std::max<int64_t>(
        1, info.alignmentBytes(tv) / int64_t(dataTypeSize(tv->dtype()))));
    std::vector<int64_t> strides = info.strides(tv);
    const auto& alloc = tv->maybeAllocation();
    const auto& contiguity = tv->contiguity();
    // Walk the allocation from the innermost while it holds ref's inner IDs densely in order.
    int64_t dense = 1;
    size_t next_inner = inner.size();
    int64_t a = int64_t(alloc.size()) - 1;
    std::vector<bool> in_dense_part(alloc.size(), false);
    for (; a >= 0 && next_inner > 0; --a) {
      ir::IterDomain* id = alloc[size_t(a)];
      if (id->isBroadcast() || id->isReduction()) continue;
      bool contiguous = size_t(a) >= contiguity.size() || contiguity[size_t(a)].value_or(false);
      int64_t pos = logicalPosition(tv, id);
      if (!contiguous || pos < 0 || !graph.areMapped(id, inner[next_inner - 1])) break;
      if (strides[size_t(pos)] != dense) break;
      dense *= info.extent(id, tv);
      in_dense_part[size_t(a)] = true;
      --next_inner;
    }
    if (dense <= 1) return 1;
    while (width > 1 && dense % width != 0) width /= 2;
    // Every other stride must keep each vector aligned: a multiple of the width.
    for (size_t k = 0; k < alloc.size(); ++k) {
      ir::IterDomain* id = alloc[k];
      if (in_dense_part[k] || id->isBroadcast() || id->isReduction()) continue;
      int64_t pos = logicalPosition(tv, id);
      if (pos < 0 || info.extent(id, tv) == 1) continue;
      int64_t stride = strides[size_t(pos)];
      if (stride < 0) return 1;
      while (width > 1 && stride % width != 0) width /= 2;
    }
  }
  (void)ref;
  return std::max<int64_t>(width, 1);
}

int64_t maxPeeledVectorWidth(const transform::IdGraph& graph, SchedulerRuntimeInfo& info,
                             const std::vector<ir::IterDomain*>& inner_ids,
                             const std::vector<ir::TensorView*>& tvs) {
  LOOM_ASSERT(graph.mode() == transform::IdMappingMode::Exact,
              "maxPeeledVectorWidth needs an exact IdGraph");
  std::vector<ir::IterDomain*> inner = noBroadcasts(inner_ids);
  if (tvs.empty() || inner.size() != 1) return 1;
  int64_t width = 16;
  for (ir::TensorView* tv : tvs) {
    if (utils::product(info, tv, nonBroadcast(tv->logical())) == 0) return 1;
    width = std::min<int64_t>(width, 16 / int64_t(dataTypeSize(tv->dtype())));
    const auto& alloc = tv->maybeAllocation();
    const auto& contiguity = tv->contiguity();
    int64_t a = int64_t(alloc.size()) - 1;
    while (a >= 0 && (alloc[size_t(a)]->isBroadcast() || alloc[size_t(a)]->isReduction())) --a;
    if (a < 0) return 1;
    ir::IterDomain* id = alloc[size_t(a)];
    const bool contiguous = size_t(a) >= contiguity.size() || contiguity[size_t(a)].value_or(false);
    const int64_t pos = logicalPosition(tv, id);
    if (!contiguous || pos < 0 || !graph.areMapped(id, inner.front()) ||
        info.strides(tv)[size_t(pos)] != 1) {
      return 1;
    }
  }
  return std::max<int64_t>(width, 1);
}

bool peelableRow(const ir::Fusion& fusion, const ir::TensorView* ref, std::string* why) {
  auto refuse = [&](std::string msg) {
    if (why != nullptr) *why = std::move(msg);
    return false;
  };
  int64_t reduced = 0;
  for (ir::IterDomain* id : ref->logical()) reduced += id->isReduction() ? 1 : 0;
  if (reduced != 1) {
    return refuse("the row of " + ref->toString() + " is " + std::to_string(reduced) +
                  " reduced dims merged; a peeled row is one dim");
  }
  for (ir::Expr* e : fusion.exprs()) {
    if (e->isA<ir::PadOp>() || e->isA<ir::CatOp>() || e->isA<ir::SliceOp>() ||
        e->isA<ir::ReshapeOp>() || e->isA<ir::ScanOp>() || e->isA<ir::IndexSelectOp>() ||
        e->isA<ir::GatherOp>() || e->isA<ir::ScatterOp>()) {
      return refuse(std::string(e->opName()) + " " + e->output(0)->toString() +
                    " reads positions along the row");
    }
  }
  return true;
}

void inlinePersistentRows(ir::Fusion& fusion, const std::vector<ir::TensorView*>& inlined,
                          const std::vector<ir::TensorView*>& buffers, int64_t row_pos) {
  const transform::InlineOptions options{};
  const transform::IdGraph permissive(fusion, transform::IdMappingMode::Permissive);
  transform::inlineMost(inlined, permissive, options);
  for (ir::TensorView* tv : buffers) {
    int64_t pos = std::min(row_pos, transform::maxInlinePosition(tv, permissive, options));
    transform::inlineAt(tv, pos, permissive, /*best_effort=*/true, options);
  }
  transform::recomputeAcrossThreads(fusion, options);
}

}  // namespace loom::scheduler::utils
