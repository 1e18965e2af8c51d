// SPDX-License-Identifier: Apache-2.0
// loom._C.idm: the whole-fusion IterDomain graphs (transform/id_graph.h) for Python, in the
// form of nvFuser's `idm` module: IdModel(fusion).maybe_build_graph(IdMappingMode.exact) gives a
// graph whose disjoint_val_sets() answers strict_are_mapped(a, b), and map_vals(a, b) adds a
// mapping the fusion cannot show (two inputs known to be one size), closing the graph again.
// A graph is a snapshot of the fusion when it was built: schedule first, then build.
#include <nanobind/stl/string.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "bindings.h"
#include "ir_helpers.h"
#include "loom/ir/iter_domain.h"
#include "loom/transform/id_graph.h"

namespace loom::python {
namespace {

using transform::IdGraph;
using transform::IdMappingMode;

const char* modeName(IdMappingMode mode) {
  return mode == IdMappingMode::Exact ? "exact" : "permissive";
}

/// The sets of `g` with more than one member, one per line, in the order of their first ID.
std::string describeSets(const IdGraph& g) {
  std::map<int64_t, std::vector<const ir::IterDomain*>> sets;
  std::vector<int64_t> order;
  for (const ir::IterDomain* id : g.ids()) {
    const int64_t s = g.setOf(id);
    auto [it, fresh] = sets.try_emplace(s);
    if (fresh) order.push_back(s);
    it->second.push_back(id);
  }
  std::ostringstream out;
  out << "disjoint sets (" << sets.size() << "){\n";
  for (int64_t s : order) {
    out << "  {";
    const char* sep = "";
    for (const ir::IterDomain* id : sets[s]) {
      out << sep << id->toString();
      sep = ", ";
    }
    out << "}\n";
  }
  out << "}";
  return out.str();
}

/// An IdModel: the graphs of one fusion, built on request and kept.
struct PyIdModel {
  explicit PyIdModel(const ir::Fusion* f) : fusion(f) {}
  PyIdModel(const PyIdModel&) = delete;
  PyIdModel& operator=(const PyIdModel&) = delete;

  const ir::Fusion* fusion;
  std::map<IdMappingMode, std::unique_ptr<IdGraph>> graphs;

  IdGraph& graph(IdMappingMode mode) {
    std::unique_ptr<IdGraph>& g = graphs[mode];
    if (g == nullptr) g = std::make_unique<IdGraph>(*fusion, mode);
    return *g;
  }
};

/// A graph of an IdModel (it keeps the model alive).
struct PyValGraph {
  IdGraph* graph;
};

/// The disjoint sets of a graph, as nvFuser's ValGraph.disjoint_val_sets() gives them.
struct PyDisjointSets {
  IdGraph* graph;
};

ir::IterDomain* idArg(nb::handle h, const char* what) {
  ir::IterDomain* id = nullptr;
  LOOM_CHECK_TYPE(nb::try_cast<ir::IterDomain*>(h, id) && id != nullptr, what,
                  " takes IterDomains; got a ", pyTypeName(h));
  return id;
}

}  // namespace

void bindIdModel(nb::module_& m) {
  nb::module_ idm = m.def_submodule("idm", "IterDomain graphs of a fusion (nvFuser's idm).");
  nb::enum_<IdMappingMode>(m, "IdMappingMode",
                           "Which IterDomains a graph maps (transform/id_graph.h): exact "
                           "iterations, or permissive (broadcasts forwarded).")
      .value("exact", IdMappingMode::Exact)
      .value("permissive", IdMappingMode::Permissive);

  nb::class_<PyIdModel>(idm, "IdModel", "The IterDomain graphs of a fusion.")
      .def(
          "__init__",
          [](PyIdModel* self, PyFusion& fusion) { new (self) PyIdModel(fusion.fusion.get()); },
          nb::arg("fusion"), nb::keep_alive<1, 2>())
      .def(
          "maybe_build_graph",
          [](nb::handle self, IdMappingMode mode) {
            IdGraph& g = nb::cast<PyIdModel&>(self).graph(mode);
            nb::object o = nb::cast(PyValGraph{&g});
            nb::keep_alive_obj(o, self);
            return o;
          },
          nb::arg("mode"), "The graph of `mode`, built on the first call and kept.")
      .def("__repr__", [](const PyIdModel& model) {
        std::string out = "IdModel{";
        const char* sep = "";
        for (const auto& [mode, g] : model.graphs) {
          out += sep;
          out += std::string(modeName(mode)) + ": " + std::to_string(g->numSets()) + " sets";
          sep = ", ";
        }
        return out + "}";
      });

  nb::class_<PyValGraph>(idm, "ValGraph", "An IterDomain graph: disjoint sets of IterDomains.")
      .def(
          "disjoint_val_sets",
          [](nb::handle self) {
            nb::object o = nb::cast(PyDisjointSets{nb::cast<PyValGraph&>(self).graph});
            nb::keep_alive_obj(o, self);
            return o;
          })
      .def(
          "map_vals",
          [](PyValGraph& g, nb::handle a, nb::handle b) {
            g.graph->mapIds(idArg(a, "map_vals"), idArg(b, "map_vals"));
          },
          nb::arg("a"), nb::arg("b"),
          "Maps two IterDomains and whatever follows from it (transforms of the same kind on "
          "them).")
      .def("num_sets", [](const PyValGraph& g) { return g.graph->numSets(); })
      .def("__repr__", [](const PyValGraph& g) {
        return std::string("ValGraph(") + modeName(g.graph->mode()) + ") " +
               describeSets(*g.graph);
      });

  nb::class_<PyDisjointSets>(idm, "DisjointSets")
      .def(
          "strict_are_mapped",
          [](const PyDisjointSets& s, nb::handle a, nb::handle b) {
            ir::IterDomain* x = idArg(a, "strict_are_mapped");
            ir::IterDomain* y = idArg(b, "strict_are_mapped");
            return s.graph->contains(x) && s.graph->contains(y) && s.graph->areMapped(x, y);
          },
          nb::arg("a"), nb::arg("b"), "True when both are in the graph and in one set.")
      .def("__repr__", [](const PyDisjointSets& s) { return describeSets(*s.graph); });
}

}  // namespace loom::python
