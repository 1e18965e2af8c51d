// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, composites: softmax, log_softmax, layer_norm and rms_norm, the backward and
// loss composites (docs/ops.md, "Composites") and attention (sdpfa_fwd / sdpfa_bwd).
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "ir_helpers.h"
#include "loom/ops/attention.h"
#include "loom/ops/composite.h"
#include "op_args.h"

namespace loom::python {

namespace {

ops::LossReduction lossReduction(const std::string& r, const char* op) {
  if (r == "mean") return ops::LossReduction::Mean;
  if (r == "sum") return ops::LossReduction::Sum;
  if (r == "none") return ops::LossReduction::None;
  LOOM_CHECK(false, op, ": reduction must be 'mean', 'sum' or 'none', got '", r, "'");
  LOOM_UNREACHABLE();
}

// Backward and loss composites (docs/ops.md, "Backward and loss composites").
void bindBackwardOps(nb::module_& m) {
  m.def(
      "softmax_backward",
      [](PyFusion& f, nb::handle g, nb::handle y, int64_t dim) {
        OpScope scope(f, "softmax_backward");
        return ops::softmaxBackward(tensor(f, g, "softmax_backward", "grad"),
                                    tensor(f, y, "softmax_backward", "y"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "log_softmax_backward",
      [](PyFusion& f, nb::handle g, nb::handle y, int64_t dim) {
        OpScope scope(f, "log_softmax_backward");
        return ops::logSoftmaxBackward(tensor(f, g, "log_softmax_backward", "grad"),
                                       tensor(f, y, "log_softmax_backward", "y"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "layer_norm_backward",
      [](nb::handle fobj, nb::handle g, nb::handle x, int64_t n, nb::handle mean, nb::handle rstd,
         nb::handle w, bool has_bias) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::NormBackwardResult r;
        {
          const char* op = "layer_norm_backward";
          OpScope scope(f, op);
          r = ops::layerNormBackward(tensor(f, g, op, "grad"), tensor(f, x, op, "x"), n,
                                     tensor(f, mean, op, "mean"), tensor(f, rstd, op, "rstd"),
                                     tensorOrNone(f, w, op, "weight"), has_bias);
        }
        return nb::make_tuple(nodeRef(r.grad_input, fobj), refOrNone(r.grad_weight, fobj),
                              refOrNone(r.grad_bias, fobj));
      },
      nb::arg("fusion"), nb::arg("grad"), nb::arg("x"), nb::arg("normalized_ndims"),
      nb::arg("mean"), nb::arg("rstd"), nb::arg("weight").none(), nb::arg("has_bias"));
  m.def(
      "rms_norm_backward",
      [](nb::handle fobj, nb::handle g, nb::handle x, int64_t n, nb::handle w, double eps) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::NormBackwardResult r;
        {
          const char* op = "rms_norm_backward";
          OpScope scope(f, op);
          r = ops::rmsNormBackward(tensor(f, g, op, "grad"), tensor(f, x, op, "x"), n,
                                   tensorOrNone(f, w, op, "weight"), eps);
        }
        return nb::make_tuple(nodeRef(r.grad_input, fobj), refOrNone(r.grad_weight, fobj));
      },
      nb::arg("fusion"), nb::arg("grad"), nb::arg("x"), nb::arg("normalized_ndims"),
      nb::arg("weight").none(), nb::arg("eps"));
  m.def(
      "gelu_backward",
      [](PyFusion& f, nb::handle g, nb::handle x, bool tanh_approximation) {
        OpScope scope(f, "gelu_backward");
        return ops::geluBackward(
            tensor(f, g, "gelu_backward", "grad"), tensor(f, x, "gelu_backward", "x"),
            tanh_approximation ? ops::GeluApproximation::Tanh : ops::GeluApproximation::None);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "silu_backward",
      [](PyFusion& f, nb::handle g, nb::handle x) {
        OpScope scope(f, "silu_backward");
        return ops::siluBackward(tensor(f, g, "silu_backward", "grad"),
                                 tensor(f, x, "silu_backward", "x"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "cross_entropy",
      [](PyFusion& f, nb::handle x, nb::handle t, int64_t ignore_index,
         const std::string& reduction) {
        const char* op = "cross_entropy";
        OpScope scope(f, op);
        return ops::crossEntropy(tensor(f, x, op, "logits"), tensor(f, t, op, "target"),
                                 ignore_index, lossReduction(reduction, op));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "cross_entropy_backward",
      [](PyFusion& f, nb::handle g, nb::handle x, nb::handle t, int64_t ignore_index,
         const std::string& reduction) {
        const char* op = "cross_entropy_backward";
        OpScope scope(f, op);
        return ops::crossEntropyBackward(tensor(f, g, op, "grad"), tensor(f, x, op, "logits"),
                                         tensor(f, t, op, "target"), ignore_index,
                                         lossReduction(reduction, op));
      },
      kKeep, nb::rv_policy::reference);
}

// An optional scalar argument: None is absent.
std::optional<ops::Operand> optionalOperand(const PyFusion& f, nb::handle h, const char* op,
                                            const char* arg) {
  if (h.is_none()) return std::nullopt;
  return operand(f, h, op, arg);
}

// Attention (docs/ops.md, "Attention"): nvFuser's arguments, plus the seed and offset of the
// dropout mask (Loom has no global generator).
void bindAttentionOps(nb::module_& m) {
  m.def(
      "sdpfa_fwd",
      [](nb::handle fobj, nb::handle q, nb::handle k, nb::handle v, nb::handle p, nb::handle causal,
         nb::handle scale, nb::handle seed, nb::handle offset, nb::handle bias, nb::handle mask) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        const char* op = "sdpfa_fwd";
        ops::SdpfaFwdResult r;
        {
          OpScope scope(f, op);
          r = ops::sdpfaFwd(
              tensor(f, q, op, "query"), tensor(f, k, op, "key"), tensor(f, v, op, "value"),
              optionalOperand(f, p, op, "dropout_p"), optionalOperand(f, causal, op, "is_causal"),
              optionalOperand(f, scale, op, "scale"), optionalOperand(f, seed, op, "rng_seed"),
              optionalOperand(f, offset, op, "rng_offset"),
              bias.is_none() ? nullptr : tensor(f, bias, op, "bias"),
              mask.is_none() ? nullptr : tensor(f, mask, op, "mask"));
        }
        return nb::make_tuple(nodeRef(r.output, fobj), nodeRef(r.log_sumexp, fobj),
                              nodeRef(r.philox_seed, fobj), nodeRef(r.philox_offset, fobj));
      },
      nb::arg("fusion"), nb::arg("query"), nb::arg("key"), nb::arg("value"),
      nb::arg("dropout_p").none(), nb::arg("is_causal").none(), nb::arg("scale").none(),
      nb::arg("rng_seed").none(), nb::arg("rng_offset").none(), nb::arg("bias").none(),
      nb::arg("mask").none());
  m.def(
      "sdpfa_bwd",
      [](nb::handle fobj, nb::handle go, nb::handle q, nb::handle k, nb::handle v, nb::handle out,
         nb::handle lse, nb::handle p, nb::handle causal, nb::handle seed, nb::handle offset,
         nb::handle scale) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        const char* op = "sdpfa_bwd";
        ops::SdpfaBwdResult r;
        {
          OpScope scope(f, op);
          r = ops::sdpfaBwd(tensor(f, go, op, "grad_output"), tensor(f, q, op, "query"),
                            tensor(f, k, op, "key"), tensor(f, v, op, "value"),
                            tensor(f, out, op, "output"), tensor(f, lse, op, "log_sumexp"),
                            optionalOperand(f, p, op, "dropout_p"),
                            optionalOperand(f, causal, op, "is_causal"),
                            optionalOperand(f, seed, op, "philox_seed"),
                            optionalOperand(f, offset, op, "philox_offset"),
                            optionalOperand(f, scale, op, "scale"));
        }
        return nb::make_tuple(nodeRef(r.grad_query, fobj), nodeRef(r.grad_key, fobj),
                              nodeRef(r.grad_value, fobj));
      },
      nb::arg("fusion"), nb::arg("grad_output"), nb::arg("query"), nb::arg("key"), nb::arg("value"),
      nb::arg("output"), nb::arg("log_sumexp"), nb::arg("dropout_p").none(),
      nb::arg("is_causal").none(), nb::arg("philox_seed").none(), nb::arg("philox_offset").none(),
      nb::arg("scale").none());
}

}  // namespace

void bindCompositeOps(nb::module_& m) {
  m.def(
      "softmax",
      [](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, "softmax");
        return ops::softmax(tensor(f, x, "softmax", "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "log_softmax",
      [](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, "log_softmax");
        return ops::logSoftmax(tensor(f, x, "log_softmax", "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "layer_norm",
      [](nb::handle fobj, nb::handle x, int64_t normalized_ndims, nb::handle w, nb::handle b,
         double eps) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::LayerNormResult r;
        {
          OpScope scope(f, "layer_norm");
          r = ops::layerNorm(tensor(f, x, "layer_norm", "x"), normalized_ndims,
                             tensorOrNone(f, w, "layer_norm", "weight"),
                             tensorOrNone(f, b, "layer_norm", "bias"), eps);
        }
        return nb::make_tuple(nodeRef(r.y, fobj), nodeRef(r.mean, fobj), nodeRef(r.rstd, fobj));
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("normalized_ndims"), nb::arg("weight").none(),
      nb::arg("bias").none(), nb::arg("eps"));
  m.def(
      "rms_norm",
      [](PyFusion& f, nb::handle x, int64_t normalized_ndims, nb::handle w, double eps) {
        OpScope scope(f, "rms_norm");
        return ops::rmsNorm(tensor(f, x, "rms_norm", "x"), normalized_ndims,
                            tensor(f, w, "rms_norm", "weight"), eps);
      },
      kKeep, nb::rv_policy::reference);
  bindBackwardOps(m);
  bindAttentionOps(m);
}

}  // namespace loom::python
