// SPDX-License-Identifier: Apache-2.0
// The IR as Python sees it: a Fusion that Python owns, and its nodes (Val, TensorView, Scalar,
// IterDomain) as references into it. A node object keeps its fusion alive (keep_alive), so a
// TensorView outlives neither the fusion nor the FusionDefinition that made it dangling.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <unordered_map>

#include "bindings.h"
#include "ir_helpers.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/equality.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/verifier.h"
#include "loom/lower/lower.h"
#include "loom/support/options.h"
#include "translate.h"

namespace loom::python {

namespace {
/// Lowers a copy, since lowering rewrites the fusion it is given and print_kernel may be called
/// between scheduling steps. The dumps stay off: this is a question, not a compile. The text is
/// the 32-bit-index kernel, the one KernelExecutor builds unless the sizes need 64-bit indices.
std::string kernelTextAsScheduled(const PyFusion& f) {
  std::unique_ptr<ir::Fusion> copy = f.fusion->clone();
  std::unique_ptr<kir::Kernel> kernel = lower::lowerFusion(*copy, DumpOptions());
  kernel->indexType = DataType::Int32;  // the kernel the executor builds for most sizes
  return codegen::generateKernel(*kernel).kernelText;
}

// Fusion -> the PyFusion owning it. Only touched with the GIL held.
std::unordered_map<const ir::Fusion*, PyFusion*>& registry() {
  static std::unordered_map<const ir::Fusion*, PyFusion*> r;
  return r;
}
}  // namespace

PyFusion::PyFusion() { registry()[fusion.get()] = this; }
PyFusion::PyFusion(std::unique_ptr<ir::Fusion> f) : fusion(std::move(f)) {
  registry()[fusion.get()] = this;
}
PyFusion::~PyFusion() { registry().erase(fusion.get()); }

PyFusion& pyFusionOf(const ir::Fusion* fusion) {
  auto it = registry().find(fusion);
  LOOM_ASSERT(it != registry().end(), "a fusion Python does not own");
  return *it->second;
}

void checkMutable(const ir::Fusion* fusion, const char* what) {
  LOOM_CHECK(fusion != nullptr, what, ": the node belongs to no fusion");
  LOOM_CHECK(!pyFusionOf(fusion).frozen, what,
             ": the fusion was executed already and its compiled kernels would not see this "
             "change; define and schedule a new FusionDefinition instead");
}

nb::object nodeRef(ir::Val* v, nb::handle owner) {
  if (v == nullptr) return nb::none();
  nb::object o = nb::cast(v, nb::rv_policy::reference);
  nb::keep_alive_obj(o, owner);
  return o;
}

nb::list nodeList(const std::vector<ir::Val*>& vals, nb::handle owner) {
  nb::list out;
  for (ir::Val* v : vals) out.append(nodeRef(v, owner));
  return out;
}

nb::list idList(const std::vector<ir::IterDomain*>& ids, nb::handle owner) {
  nb::list out;
  for (ir::IterDomain* id : ids) out.append(nodeRef(id, owner));
  return out;
}

void bindIr(nb::module_& m) {
  nb::class_<PyFusion>(m, "Fusion", "A fusion: the graph of tensor ops that Loom compiles.")
      .def(nb::init<>())
      .def("inputs",
           [](nb::handle self) {
             return nodeList(nb::cast<PyFusion&>(self).fusion->inputs(), self);
           })
      .def("outputs",
           [](nb::handle self) {
             return nodeList(nb::cast<PyFusion&>(self).fusion->outputs(), self);
           })
      .def(
          "vals",
          [](nb::handle self) { return nodeList(nb::cast<PyFusion&>(self).fusion->vals(), self); },
          "Every value of the fusion (tensors, scalars, IterDomains), in creation order; "
          "nvFuser's schedules filter it (v.is_tensor()).")
      .def(
          "add_input",
          [](PyFusion& f, ir::Val* v) {
            checkMutable(f.fusion.get(), "add_input");
            LOOM_CHECK(v->fusion() == f.fusion.get(), "add_input: ", v->toString(),
                       " belongs to another fusion");
            f.fusion->addInput(v);
          },
          nb::arg("val"))
      .def(
          "add_output",
          [](PyFusion& f, ir::Val* v) {
            checkMutable(f.fusion.get(), "add_output");
            LOOM_CHECK(v->fusion() == f.fusion.get(), "add_output: ", v->toString(),
                       " belongs to another fusion");
            f.fusion->addOutput(v);
          },
          nb::arg("val"))
      .def(
          "alias_output_to_input",
          [](PyFusion& f, ir::Val* output, ir::Val* input) {
            checkMutable(f.fusion.get(), "alias_output_to_input");
            f.fusion->aliasOutputToInput(output, input);
          },
          nb::arg("output"), nb::arg("input"),
          "Output `output` is written into the memory of input `input` (an in-place update; "
          "made an output when it is not one yet): the run returns that input's tensor, updated.")
      .def(
          "aliases",
          [](nb::handle self) {
            nb::list out;
            for (const auto& [o, i] : nb::cast<PyFusion&>(self).fusion->aliases()) {
              out.append(nb::make_tuple(nodeRef(o, self), nodeRef(i, self)));
            }
            return out;
          },
          "(output, input) of every in-place output, in the order they were declared.")
      .def(
          "to_text", [](const PyFusion& f) { return ir::printFusion(*f.fusion); },
          "The fusion in Loom's text form (.fus; docs/text-format.md).")
      .def("__str__", [](const PyFusion& f) { return ir::printFusion(*f.fusion); })
      .def(
          "print_math", [](const PyFusion& f) { return ir::printFusion(*f.fusion); },
          "The fusion in the text form (nvFuser's print_math returns its printout too).")
      .def(
          "print", [](const PyFusion& f) { nb::print(ir::printFusion(*f.fusion).c_str()); },
          "Prints the fusion in the text form.")
      .def("print_kernel", &kernelTextAsScheduled,
           "The kernel the fusion lowers to as scheduled now (CUDA C++, what manual_execute "
           "compiles); the fusion itself is left as it is, so scheduling can go on.")
      .def(
          "verify", [](const PyFusion& f) { ir::verify(*f.fusion); },
          "Checks the IR's invariants (UserError naming what is wrong).")
      .def_prop_ro("frozen", [](const PyFusion& f) { return f.frozen; })
      .def(
          "clone",
          [](const PyFusion& f) {
            auto copy = std::make_unique<PyFusion>(f.fusion->clone());
            copy->returns = f.returns;  // values keep their names in the copy
            return copy;
          },
          "A deep copy that has not been executed.")
      .def_rw("returns", &PyFusion::returns,
              "What execute() returns when a FusionDefinition made the fusion: (\"output\" or "
              "\"input\", name) per add_output without alias_input, in call order; None: the "
              "outputs but the in-place ones.")
      .def(
          "structural_difference",
          [](const PyFusion& a, const PyFusion& b) -> std::optional<std::string> {
            std::string why;
            if (ir::structurallyEqual(*a.fusion, *b.fusion, &why)) return std::nullopt;
            return why;
          },
          nb::arg("other"),
          "None when `other` is structurally equal to this fusion (ir/equality.h), else where "
          "they differ.")
      .def(
          "is_empty",
          [](const PyFusion& f) {
            return f.fusion->inputs().empty() && f.fusion->outputs().empty() &&
                   f.fusion->numStatements() == 0;
          },
          "True for a fusion nothing was defined in yet.");
  m.def(
      "translate_fusion",
      [](const PyFusion& f, std::string_view function_name,
         const std::vector<std::string>& drawn_names,
         const std::optional<std::vector<std::string>>& return_names,
         const std::vector<std::pair<std::string, std::string>>& derived_names) {
        // The definition's facts arrive as the names of the fusion's inputs and outputs.
        std::unordered_map<std::string, const ir::Val*> by_name;
        for (const ir::Val* v : f.fusion->inputs()) by_name.emplace(v->toString(), v);
        for (const ir::Val* v : f.fusion->outputs()) by_name.emplace(v->toString(), v);
        auto val = [&](const std::string& name) {
          auto it = by_name.find(name);
          LOOM_CHECK(it != by_name.end(), "translate_fusion: ", name,
                     " is neither an input nor an output of the fusion");
          return it->second;
        };
        DefinitionFacts facts;
        facts.cpuScalars = f.cpuScalars;
        facts.indexScalars = f.indexScalars;
        for (const std::string& name : drawn_names) facts.drawn.insert(val(name));
        for (const auto& [scalar, tensor] : derived_names) facts.derived[val(scalar)] = val(tensor);
        if (return_names.has_value()) {
          facts.returns.emplace();
          for (const std::string& name : *return_names) facts.returns->push_back(val(name));
        }
        return translateFusion(*f.fusion, function_name, facts);
      },
      nb::arg("fusion"), nb::arg("function_name"),
      nb::arg("drawn") = std::vector<std::string>{},
      nb::arg("returns") = nb::none(),
      nb::arg("derived") = std::vector<std::pair<std::string, std::string>>{},
      "The fusion as a Python function in nvFuser's direct-binding form (translate.h); a "
      "UserError naming what that form cannot express.");
  m.def(
      "parse_fusion",
      [](std::string_view text, std::string_view name) {
        return std::make_unique<PyFusion>(ir::parseFusion(text, std::string(name)));
      },
      nb::arg("text"), nb::arg("name") = "<python>",
      "A Fusion from Loom's text form (what Fusion.to_text() and `loom print` write).");

  bindIrExprs(m);
  nb::class_<ir::Val> val(m, "Val");
  bindValGraph(val);
  val.def_prop_ro("name", [](const ir::Val& v) { return v.toString(); })
      .def_prop_ro("dtype", &ir::Val::dtype)
      .def("is_fusion_input", &ir::Val::isFusionInput)
      .def("is_fusion_output", &ir::Val::isFusionOutput)
      .def("__repr__", [](const ir::Val& v) { return v.toString(); })
      .def("__str__", [](const ir::Val& v) { return v.toString(); });

  nb::class_<ir::Scalar, ir::Val>(m, "Scalar")
      .def("is_const", &ir::Scalar::isConst)
      .def(
          "const_double", [](const ir::Scalar& s) { return s.constDouble(); },
          "The constant as a float (None when the value is known only at run time).")
      .def("__repr__", [](const ir::Scalar& s) { return s.toString(); });

  nb::class_<ir::IterDomain, ir::Val>(m, "IterDomain")
      .def("extent",
           [](nb::handle self) { return nodeRef(nb::cast<ir::IterDomain*>(self)->extent(), self); })
      .def(
          "logical_extent",
          [](nb::handle self) {
            return nodeRef(nb::cast<ir::IterDomain*>(self)->logicalExtent(), self);
          },
          "The size users see: an expanded broadcast's expanded extent, else extent().")
      .def_prop_ro("parallel_type", &ir::IterDomain::parallelType)
      .def("is_reduction", &ir::IterDomain::isReduction)
      .def("is_broadcast", &ir::IterDomain::isBroadcast)
      .def("is_device_dim", &ir::IterDomain::isDeviceDim)
      .def("__repr__", [](const ir::IterDomain& id) { return id.toString(); });

  nb::class_<ir::TensorView, ir::Val>(m, "TensorView")
      .def("num_dims", &ir::TensorView::nDims, "Number of loop axes.")
      .def_prop_ro("ndim", &ir::TensorView::rank, "Rank without reduction axes.")
      .def(
          "axis",
          [](nb::handle self, int64_t i) {
            return nodeRef(nb::cast<ir::TensorView*>(self)->axis(i), self);
          },
          nb::arg("index"))
      .def("get_logical_domain",
           [](nb::handle self) { return idList(nb::cast<ir::TensorView*>(self)->logical(), self); })
      .def("get_root_domain",
           [](nb::handle self) {
             auto* tv = nb::cast<ir::TensorView*>(self);
             return idList(tv->domain()->maybeRoot(), self);
           })
      .def("get_loop_domain",
           [](nb::handle self) { return idList(nb::cast<ir::TensorView*>(self)->loop(), self); })
      .def("get_allocation_domain",
           [](nb::handle self) {
             return idList(nb::cast<ir::TensorView*>(self)->maybeAllocation(), self);
           })
      .def("has_device_mesh", &ir::TensorView::hasDeviceMesh)
      .def("domain", [](const ir::TensorView& tv) { return tv.domain()->toString(); })
      .def("__repr__", [](const ir::TensorView& tv) { return tv.toString(); });
}

}  // namespace loom::python
