// SPDX-License-Identifier: Apache-2.0
// Scheduling from Python: ParallelType, MemoryType, the TensorView methods that transform its own
// domains (split, merge, reorder, allocation, mesh), IterDomain.parallelize, and the transforms
// that rewrite the graph (rfactor, caches, propagation, inlining). Every call that changes a
// fusion checks that it was not executed yet (checkMutable).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>
#include <nanobind/stl/vector.h>

#include <unordered_map>

#include "bindings.h"
#include "convert.h"
#include "ir_helpers.h"
#include "loom/ir/device_mesh.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"
#include "loom/ops/contraction_rfactor.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/rfactor.h"

namespace loom::python {

namespace {

/// Adds a method to an already bound class.
template <typename Func, typename... Extra>
void defMethod(nb::handle cls, const char* name, Func&& f, const Extra&... extra) {
  nb::object fn = nb::cpp_function(std::forward<Func>(f), nb::scope(cls), nb::name(name),
                                   nb::is_method(), extra...);
  nb::setattr(cls, name, fn);
}

ir::TensorView* tvOf(nb::handle self) { return nb::cast<ir::TensorView*>(self); }

ir::TensorView* mutableTv(nb::handle self, const char* what) {
  ir::TensorView* tv = tvOf(self);
  checkMutable(tv->fusion(), what);
  return tv;
}

ir::TensorView* splitBy(ir::TensorView* tv, int64_t axis, nb::handle factor, bool inner) {
  if (nb::isinstance<ir::Scalar>(factor)) {
    return tv->split(axis, nb::cast<ir::Scalar*>(factor), inner);
  }
  LOOM_CHECK(nb::isinstance<nb::int_>(factor) && !nb::isinstance<nb::bool_>(factor), "split of ",
             tv->toString(), ": the factor must be an int or an integer Scalar, got ",
             nb::cast<std::string>(nb::repr(factor)));
  return tv->split(axis, int64FromPython(factor, "split of " + tv->toString() + ": the factor"),
                   inner);
}

/// A loom._C enum value, or a Python enum of loom.direct whose `.loom` is one.
template <typename E>
E enumArg(nb::handle h, const char* what) {
  if (nb::isinstance<E>(h)) return nb::cast<E>(h);
  nb::object inner = nb::getattr(h, "loom", nb::none());
  LOOM_CHECK(!inner.is_none() && nb::isinstance<E>(inner), what, ": expected a ", what, ", got ",
             nb::cast<std::string>(nb::repr(h)));
  return nb::cast<E>(inner);
}

ir::Contiguity contiguityArg(nb::handle c, size_t n) {
  if (nb::isinstance<nb::bool_>(c)) return ir::Contiguity(n, nb::cast<bool>(c));
  return nb::cast<ir::Contiguity>(c);
}

// The scheduling enums.
void bindScheduleEnums(nb::module_& m) {
  nb::enum_<ir::ParallelType>(m, "ParallelType", "Loom's parallel types (ir/iter_domain.h).")
      .value("Serial", ir::ParallelType::Serial)
      .value("DIDx", ir::ParallelType::DIDx)
      .value("DIDy", ir::ParallelType::DIDy)
      .value("DIDz", ir::ParallelType::DIDz)
      .value("BIDx", ir::ParallelType::BIDx)
      .value("BIDy", ir::ParallelType::BIDy)
      .value("BIDz", ir::ParallelType::BIDz)
      .value("TIDx", ir::ParallelType::TIDx)
      .value("TIDy", ir::ParallelType::TIDy)
      .value("TIDz", ir::ParallelType::TIDz)
      .value("Vectorize", ir::ParallelType::Vectorize)
      .value("Unroll", ir::ParallelType::Unroll)
      .value("Unswitch", ir::ParallelType::Unswitch)
      .value("Bulk", ir::ParallelType::Bulk);
  nb::enum_<ir::LoadStoreOpType>(m, "LoadStoreOpType", "How a cache copy is made (ir/op_types.h).")
      .value("Set", ir::LoadStoreOpType::Set)
      .value("TmaCopy", ir::LoadStoreOpType::TmaCopy);
  nb::enum_<ir::MemoryType>(m, "MemoryType")
      .value("Local", ir::MemoryType::Local)
      .value("Shared", ir::MemoryType::Shared)
      .value("Global", ir::MemoryType::Global);
}

// Loop-domain transforms: parallelize an ID; split, merge, flatten, reorder a tensor's loop axes.
void bindLoopTransforms() {
  nb::handle id_cls = nb::type<ir::IterDomain>();
  defMethod(
      id_cls, "parallelize",
      [](nb::handle self, nb::handle p) {
        auto* id = nb::cast<ir::IterDomain*>(self);
        checkMutable(id->fusion(), "parallelize");
        id->parallelize(enumArg<ir::ParallelType>(p, "ParallelType"));
      },
      nb::arg("parallel_type"));

  nb::handle tv_cls = nb::type<ir::TensorView>();
  defMethod(
      tv_cls, "split",
      [](nb::handle self, int64_t axis, nb::handle factor, bool inner_split) {
        splitBy(mutableTv(self, "split"), axis, factor, inner_split);
        return nb::borrow(self);
      },
      nb::arg("axis"), nb::arg("factor"), nb::arg("inner_split") = true,
      "Splits loop axis `axis`: inner_split makes `factor` the inner extent, else the outer.");
  defMethod(
      tv_cls, "inner_split",
      [](nb::handle self, int64_t axis, nb::handle factor) {
        splitBy(mutableTv(self, "inner_split"), axis, factor, true);
        return nb::borrow(self);
      },
      nb::arg("axis"), nb::arg("factor"));
  defMethod(
      tv_cls, "outer_split",
      [](nb::handle self, int64_t axis, nb::handle factor) {
        splitBy(mutableTv(self, "outer_split"), axis, factor, false);
        return nb::borrow(self);
      },
      nb::arg("axis"), nb::arg("factor"));
  defMethod(
      tv_cls, "merge",
      [](nb::handle self, int64_t outer, std::optional<int64_t> inner) {
        ir::TensorView* tv = mutableTv(self, "merge");
        tv->merge(outer, inner ? *inner : outer + 1);
        return nb::borrow(self);
      },
      nb::arg("axis_o"), nb::arg("axis_i") = nb::none(),
      "Merges loop axes axis_o and axis_i (default axis_o + 1).");
  defMethod(
      tv_cls, "flatten",
      [](nb::handle self, int64_t from, int64_t to) {
        mutableTv(self, "flatten")->flatten(from, to);
        return nb::borrow(self);
      },
      nb::arg("from_axis") = 0, nb::arg("to_axis") = -1);
  defMethod(
      tv_cls, "reorder",
      [](nb::handle self, nb::handle order) {
        ir::TensorView* tv = mutableTv(self, "reorder");
        if (nb::isinstance<nb::dict>(order)) {
          tv->reorder(nb::cast<std::unordered_map<int64_t, int64_t>>(order));
        } else {
          tv->reorder(nb::cast<std::vector<int64_t>>(order));
        }
        return nb::borrow(self);
      },
      nb::arg("old2new"),
      "A dict {old position: new position}, or a list (new axis i is old axis list[i]).");
}

// Where and how a tensor lives: its device mesh, allocation domain, contiguity and memory type.
void bindLayout(nb::handle tv_cls) {
  defMethod(
      tv_cls, "set_device_mesh",
      [](nb::handle self, const ir::DeviceMesh& mesh) {
        mutableTv(self, "set_device_mesh")->setDeviceMesh(mesh);
      },
      nb::arg("mesh"));
  defMethod(
      tv_cls, "set_allocation_domain",
      [](nb::handle self, const std::vector<ir::IterDomain*>& ids, nb::handle new_contiguity) {
        ir::TensorView* tv = mutableTv(self, "set_allocation_domain");
        ir::Contiguity c;
        if (nb::isinstance<nb::bool_>(new_contiguity)) {
          for (ir::IterDomain* id : ids) {
            c.push_back(id->isBroadcast() || id->isReduction()
                            ? std::nullopt
                            : std::optional<bool>(nb::cast<bool>(new_contiguity)));
          }
        } else {
          c = nb::cast<ir::Contiguity>(new_contiguity);
        }
        tv->setAllocationDomain(ids, c);
      },
      nb::arg("domain"), nb::arg("new_contiguity"),
      "The order the buffer is laid out in (IDs of this tensor), and per ID its contiguity (a "
      "bool for all, or a list with None for broadcast and reduction IDs).");
  defMethod(
      tv_cls, "set_contiguity",
      [](nb::handle self, nb::handle c) {
        ir::TensorView* tv = mutableTv(self, "set_contiguity");
        tv->setContiguity(contiguityArg(c, tv->maybeAllocation().size()));
      },
      nb::arg("contiguity"));
  defMethod(
      tv_cls, "set_memory_type",
      [](nb::handle self, nb::handle t) {
        mutableTv(self, "set_memory_type")->setMemoryType(enumArg<ir::MemoryType>(t, "MemoryType"));
      },
      nb::arg("memory_type"));
}

// Tensors a schedule adds: rfactor's partial result and the caches.
void bindCaching(nb::handle tv_cls) {
  defMethod(
      tv_cls, "rfactor",
      [](nb::handle self, const std::vector<int64_t>& axes) {
        ir::TensorView* tv = mutableTv(self, "rfactor");
        // A matmul's or linear's rFactor builds partial products and their sum (ops layer).
        if (ops::isContractionOutput(tv)) return nodeRef(ops::rFactorContraction(tv, axes), self);
        return nodeRef(transform::rFactor(tv, axes), self);
      },
      nb::arg("axes"));
  // nvFuser's optional LoadStoreOpType: LoadStoreOpType.tma makes a bulk (TMA) copy.
  auto copyOp = [](nb::handle op) {
    return op.is_none() ? ir::LoadStoreOpType::Set
                        : enumArg<ir::LoadStoreOpType>(op, "LoadStoreOpType");
  };
  defMethod(
      tv_cls, "cache_before",
      [copyOp](nb::handle self, nb::handle op) {
        return nodeRef(transform::cacheBefore(mutableTv(self, "cache_before"),
                                              ir::MemoryType::Local, copyOp(op)),
                       self);
      },
      nb::arg("op_type") = nb::none());
  defMethod(
      tv_cls, "cache_after",
      [copyOp](nb::handle self, nb::handle op) {
        return nodeRef(transform::cacheAfter(mutableTv(self, "cache_after"), ir::MemoryType::Local,
                                             copyOp(op)),
                       self);
      },
      nb::arg("op_type") = nb::none());
  defMethod(tv_cls, "cache_fork", [](nb::handle self) {
    return nodeRef(transform::cacheFork(mutableTv(self, "cache_fork")), self);
  });
}

// Whole-fusion steps from a reference tensor.
void bindPropagation(nb::module_& m) {
  m.def(
      "propagate_transforms",
      [](ir::TensorView* reference, const std::vector<ir::TensorView*>& selected) {
        checkMutable(reference->fusion(), "propagate_transforms");
        transform::propagateTransforms(reference, {}, selected);
      },
      nb::arg("reference"), nb::arg("selected") = std::vector<ir::TensorView*>{},
      "Replays the reference's loop domain onto every tensor (or `selected`).");
  m.def(
      "parallelize_all_like",
      [](ir::TensorView* reference, const std::vector<ir::TensorView*>& tvs) {
        checkMutable(reference->fusion(), "parallelize_all_like");
        transform::parallelizeAllLike(reference, tvs);
      },
      nb::arg("reference"), nb::arg("tvs") = std::vector<ir::TensorView*>{});
  m.def(
      "inline_most",
      [](PyFusion& f) {
        checkMutable(f.fusion.get(), "inline_most");
        transform::inlineMost(*f.fusion);
      },
      nb::arg("fusion"));
}

}  // namespace

void bindSchedule(nb::module_& m) {
  bindScheduleEnums(m);
  bindLoopTransforms();
  nb::handle tv_cls = nb::type<ir::TensorView>();
  bindLayout(tv_cls);
  bindCaching(tv_cls);
  bindPropagation(m);
}

}  // namespace loom::python
