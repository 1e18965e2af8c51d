// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, random numbers (docs/ops.md, "Random numbers"): uniform, normal, rand_like,
// randn_like, bernoulli and dropout; seed and offset are ints or integer Scalars.
#include <vector>

#include "ir_helpers.h"
#include "loom/ops/random.h"
#include "op_args.h"

namespace loom::python {

void bindRandomOps(nb::module_& m) {
  m.def(
      "uniform",
      [](PyFusion& f, nb::handle low, nb::handle high, nb::handle shape, nb::handle seed,
         nb::handle offset, DataType dtype) {
        OpScope scope(f, "uniform");
        return ops::uniform(
            sizeList(f, shape, "uniform", "shape"), operand(f, low, "uniform", "minval"),
            operand(f, high, "uniform", "maxval"), operand(f, seed, "uniform", "rng_seed"),
            operand(f, offset, "uniform", "rng_offset"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "normal",
      [](PyFusion& f, nb::handle mean, nb::handle std, nb::handle shape, nb::handle seed,
         nb::handle offset, DataType dtype) {
        OpScope scope(f, "normal");
        return ops::normal(sizeList(f, shape, "normal", "shape"),
                           operand(f, mean, "normal", "mean"), operand(f, std, "normal", "std"),
                           operand(f, seed, "normal", "rng_seed"),
                           operand(f, offset, "normal", "rng_offset"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "rand_like",
      [](PyFusion& f, nb::handle x, nb::handle seed, nb::handle offset) {
        OpScope scope(f, "rand_like");
        return ops::randLike(tensor(f, x, "rand_like", "arg"),
                             operand(f, seed, "rand_like", "rng_seed"),
                             operand(f, offset, "rand_like", "rng_offset"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "randn_like",
      [](PyFusion& f, nb::handle x, nb::handle seed, nb::handle offset) {
        OpScope scope(f, "randn_like");
        return ops::randnLike(tensor(f, x, "randn_like", "arg"),
                              operand(f, seed, "randn_like", "rng_seed"),
                              operand(f, offset, "randn_like", "rng_offset"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "bernoulli",
      [](PyFusion& f, nb::handle p, nb::handle seed, nb::handle offset) {
        OpScope scope(f, "bernoulli");
        return ops::bernoulli(tensor(f, p, "bernoulli", "arg"),
                              operand(f, seed, "bernoulli", "rng_seed"),
                              operand(f, offset, "bernoulli", "rng_offset"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "dropout",
      [](nb::handle fobj, nb::handle x, nb::handle p, nb::handle seed, nb::handle offset) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::DropoutResult r;
        {
          OpScope scope(f, "dropout");
          r = ops::dropout(tensor(f, x, "dropout", "arg"), operand(f, p, "dropout", "p"),
                           operand(f, seed, "dropout", "rng_seed"),
                           operand(f, offset, "dropout", "rng_offset"));
        }
        return nb::make_tuple(nodeRef(r.output, fobj), nodeRef(r.mask, fobj));
      },
      nb::arg("fusion"), nb::arg("arg"), nb::arg("p"), nb::arg("rng_seed"), nb::arg("rng_offset"));
}

}  // namespace loom::python
