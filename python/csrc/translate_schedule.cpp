// SPDX-License-Identifier: Apache-2.0
// The schedule part of the Python translation (translate.h), after the definition: per tensor
// its device mesh, memory type, the splits and merges from its logical to its loop domain (in
// an order whose inputs exist, then a reorder), parallel types, allocation domain and
// contiguity; last inline_most when it gives the fusion's inline positions.
#include <algorithm>
#include <sstream>

#include "loom/ir/cloner.h"
#include "loom/ir/device_mesh.h"
#include "loom/ir/transforms.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "loom/transform/inlining.h"
#include "translate.h"

namespace loom::python {

namespace {

using ir::IterDomain;
using ir::TensorView;

std::string pyParallelType(ir::ParallelType p) {
  switch (p) {
    case ir::ParallelType::DIDx: return "ParallelType.mesh_x";
    case ir::ParallelType::DIDy: return "ParallelType.mesh_y";
    case ir::ParallelType::DIDz: return "ParallelType.mesh_z";
    case ir::ParallelType::BIDx: return "ParallelType.grid_x";
    case ir::ParallelType::BIDy: return "ParallelType.grid_y";
    case ir::ParallelType::BIDz: return "ParallelType.grid_z";
    case ir::ParallelType::TIDx: return "ParallelType.block_x";
    case ir::ParallelType::TIDy: return "ParallelType.block_y";
    case ir::ParallelType::TIDz: return "ParallelType.block_z";
    case ir::ParallelType::Vectorize: return "ParallelType.vectorize";
    case ir::ParallelType::Unroll: return "ParallelType.unroll";
    case ir::ParallelType::Unswitch: return "ParallelType.unswitch";
    case ir::ParallelType::Bulk: return "ParallelType.tma";
    case ir::ParallelType::Serial: return "ParallelType.serial";
  }
  return "ParallelType.serial";
}

std::string pyMemoryType(ir::MemoryType m) {
  switch (m) {
    case ir::MemoryType::Local: return "MemoryType.local";
    case ir::MemoryType::Shared: return "MemoryType.shared";
    case ir::MemoryType::Global: return "MemoryType.global_";
  }
  return "MemoryType.local";
}

std::string pyContiguityList(const ir::Contiguity& c) {
  std::vector<std::string> items;
  for (const auto& f : c) items.push_back(f.has_value() ? (*f ? "True" : "False") : "None");
  return "[" + join(items) + "]";
}

size_t indexOf(const std::vector<IterDomain*>& ids, const IterDomain* id) {
  return size_t(std::find(ids.begin(), ids.end(), id) - ids.begin());
}

bool isInput(const TensorView* tv) { return tv->isFusionInput(); }

// The contiguity a domain without explicit flags has.
bool defaultContiguity(const ir::TensorDomain* td) {
  const ir::Contiguity& c = td->contiguity();
  return c.empty() || c == ir::TensorDomain::defaultContiguity(td->maybeAllocation());
}

}  // namespace

void Translator::translateSchedule() {
  for (const TensorView* tv : fusion_.allTvs()) scheduleTensor(tv);
  translateInlining();
}

void Translator::scheduleTensor(const TensorView* tv) {
  const ir::TensorDomain* td = tv->domain();
  const bool io = tv->isFusionInput() || tv->isFusionOutput();
  bool parallel = false;
  for (const IterDomain* id : td->loop()) parallel = parallel || id->isParallelized();
  const bool loop = td->loop() != td->logical();
  const bool alloc = !isInput(tv) && td->hasAllocation();
  const bool contig = !isInput(tv) && !td->hasAllocation() && !defaultContiguity(td);
  const bool memory = !io && tv->memoryType() != ir::MemoryType::Local;
  if (!tv->hasDeviceMesh() && !memory && !loop && !parallel && !alloc && !contig) return;

  const std::string name = tensor(tv);
  if (tv->hasDeviceMesh()) {
    std::ostringstream mesh;
    mesh << tv->deviceMesh();
    imports_.insert("DeviceMesh");
    emit(name + ".set_device_mesh(DeviceMesh(" + mesh.str() + "))");
  }
  if (memory) {
    imports_.insert("MemoryType");
    emit(name + ".set_memory_type(" + pyMemoryType(tv->memoryType()) + ")");
  }
  std::vector<IterDomain*> current = td->logical();
  if (loop) replayLoop(tv, name, current);
  for (size_t i = 0; i < td->loop().size(); ++i) {
    const IterDomain* id = td->loop()[i];
    if (!id->isParallelized()) continue;
    imports_.insert("ParallelType");
    emit(name + ".axis(" + std::to_string(i) + ").parallelize(" +
         pyParallelType(id->parallelType()) + ")");
  }
  if (alloc) {
    std::vector<std::string> ids;
    for (const IterDomain* id : td->allocation()) ids.push_back(idRef(tv, name, td->loop(), id));
    emit(name + ".set_allocation_domain([" + join(ids) + "], " +
         pyContiguityList(td->contiguity()) + ")");
  }
  if (contig) emit(name + ".set_contiguity(" + pyContiguityList(td->contiguity()) + ")");
}

void Translator::replayLoop(const TensorView* tv, const std::string& name,
                            std::vector<IterDomain*>& current) {
  const ir::TensorDomain* td = tv->domain();
  // The Split and Merge exprs between the logical and the loop domain.
  std::vector<const ir::Expr*> todo;
  std::vector<const IterDomain*> stack(td->loop().begin(), td->loop().end());
  while (!stack.empty()) {
    const IterDomain* id = stack.back();
    stack.pop_back();
    if (indexOf(td->logical(), id) < td->logical().size()) continue;
    const ir::Expr* def = id->definition();
    LOOM_CHECK(def != nullptr && (def->isA<ir::Split>() || def->isA<ir::Merge>()), "loop ID ",
               id->toString(), " of ", tv->toString(),
               " is not made from its logical domain by splits and merges");
    if (std::find(todo.begin(), todo.end(), def) != todo.end()) continue;
    todo.push_back(def);
    for (const ir::Val* in : def->inputs()) stack.push_back(in->as<IterDomain>());
  }
  // Replay them in an order whose inputs are in the current domain, as TensorView::split and
  // merge change the loop domain.
  while (!todo.empty()) {
    auto ready = std::find_if(todo.begin(), todo.end(), [&](const ir::Expr* e) {
      return std::all_of(e->inputs().begin(), e->inputs().end(), [&](const ir::Val* in) {
        return indexOf(current, in->as<IterDomain>()) < current.size();
      });
    });
    LOOM_CHECK(ready != todo.end(), "the loop domain of ", tv->toString(),
               " has transforms whose inputs are not loop IDs when they apply");
    const ir::Expr* e = *ready;
    todo.erase(ready);
    if (const auto* s = dyn<ir::Split>(e)) {
      const size_t pos = indexOf(current, s->in());
      std::string factor = size(s->factor());
      emit(name + (s->innerSplit() ? ".split(" : ".outer_split(") + std::to_string(pos) + ", " +
           factor + ")");
      current[pos] = s->outer();
      current.insert(current.begin() + std::ptrdiff_t(pos) + 1, s->inner());
      continue;
    }
    const auto* m = e->as<ir::Merge>();
    const size_t o = indexOf(current, m->outer());
    const size_t i = indexOf(current, m->inner());
    emit(name + ".merge(" + std::to_string(o) + ", " + std::to_string(i) + ")");
    std::vector<IterDomain*> next;
    for (size_t k = 0; k < current.size(); ++k) {
      if (k == o) next.push_back(m->out());
      if (k != o && k != i) next.push_back(current[k]);
    }
    current = std::move(next);
  }
  LOOM_CHECK(current.size() == td->loop().size(), "the loop domain of ", tv->toString(),
             " leaves IDs of its splits unused");
  if (current == td->loop()) return;
  std::vector<std::string> perm;
  for (const IterDomain* id : td->loop()) {
    const size_t k = indexOf(current, id);
    LOOM_CHECK(k < current.size(), "loop ID ", id->toString(), " of ", tv->toString(),
               " is not made by its transforms");
    perm.push_back(std::to_string(k));
  }
  emit(name + ".reorder([" + join(perm) + "])");
}

std::string Translator::idRef(const TensorView* tv, const std::string& name,
                              const std::vector<IterDomain*>& loop, const IterDomain* id) const {
  if (size_t k = indexOf(loop, id); k < loop.size()) {
    return name + ".get_loop_domain()[" + std::to_string(k) + "]";
  }
  if (size_t k = indexOf(tv->logical(), id); k < tv->logical().size()) {
    return name + ".get_logical_domain()[" + std::to_string(k) + "]";
  }
  LOOM_THROW("allocation ID ", id->toString(), " of ", tv->toString(),
             " is neither a loop nor a logical ID");
}

void Translator::translateInlining() {
  const std::vector<TensorView*> tvs = fusion_.allTvs();
  const bool inlined = std::any_of(tvs.begin(), tvs.end(), [](const TensorView* tv) {
    return tv->computeAtPosition() != 0 || tv->maxProducerPosition() != 0;
  });
  if (!inlined) return;
  // The positions are the fusion's own when inline_most, run on it without them, gives them.
  ir::Fusion copy;
  ir::IrCloner cloner = fusion_.copyInto(copy);
  for (TensorView* tv : copy.allTvs()) {
    tv->setComputeAtPosition(0);
    tv->setMaxProducerPosition(0);
  }
  transform::inlineMost(copy);
  for (const TensorView* tv : tvs) {
    const TensorView* c = cloner.lookup(tv);
    LOOM_CHECK(c->computeAtPosition() == tv->computeAtPosition() &&
                   c->maxProducerPosition() == tv->maxProducerPosition(),
               "the inline positions of ", tv->toString(), " (compute-at ", tv->computeAtPosition(),
               ", max producer ", tv->maxProducerPosition(),
               ") are not the ones inline_most gives (", c->computeAtPosition(), ", ",
               c->maxProducerPosition(), ")");
  }
  imports_.insert("inline_most");
  emit("inline_most(fd.fusion)");
}

}  // namespace loom::python
