# SPDX-License-Identifier: Apache-2.0
# nvFuser's own test pattern (its tests/python/direct/conftest.py) against loom.direct, for every
# op fd.ops has: the fusion is defined twice and compiled through one LRUCache (the second
# definition must hit), run with fd.validate (Loom's reference evaluator, double precision), and
# its printed definition executed on a new FusionDefinition, which must rebuild an equal fusion
# that gives the same outputs with the same strides. Both of nvFuser's fixture variants run
# ("lru_cache" and "eager"), each on CPU tensors and, where there is a GPU, CUDA tensors.
import re
from copy import deepcopy

import pytest
import torch

from conftest import check_captured_python_definition
from loom.direct import DataType, FusionDefinition, LRUCache
from loom.direct.ops import Ops


class NVFuserTest:
    def __init__(self, cache=None):
        self.cache = cache

    def exec_nvfuser(self, fusion_func, inputs, *, new_fusion_expected=True,
                     expected_fd_str=None, device=None, validate_results=True):
        inputs_captured = deepcopy(inputs)
        if self.cache is not None:
            prev_size = self.cache.num_fusions()
            # Compiled twice: the second, equal definition is a hit.
            fecs = []
            for _ in range(2):
                with FusionDefinition() as fd:
                    fusion_func(fd)
                fd.fec = self.cache.cache_compile(fd.fusion)
                del fd._fusion
                fecs.append(fd.fec)
            assert fecs[0] is fecs[1]
            if new_fusion_expected is not None:
                assert self.cache.num_fusions() == prev_size + int(new_fusion_expected)
        else:
            with FusionDefinition() as fd:
                fusion_func(fd)
        torch.manual_seed(0)
        if validate_results:
            out = fd.validate(inputs, device=device)
        else:
            out = fd.execute(inputs, device=device)
        check_outputs_of_captured_definition(out, fd, inputs_captured, device)
        assert expected_fd_str is None or expected_fd_str in repr(fd)
        return out, fd


def same_up_to_names(a, b):
    """Whether two printed definitions differ only in their tv<N> / c<N> names."""
    def canonical(text):
        names = {}
        return re.sub(r"\b(tv|c)\d+\b",
                      lambda m: names.setdefault(m.group(0), f"{m.group(1)}#{len(names)}"), text)
    return canonical(a) == canonical(b)


def check_outputs_of_captured_definition(reference_outputs, fd, inputs, device=None):
    """nvFuser's check_captured_python_definition: the printed definition runs and gives the
    same outputs with the same strides (Loom also asks for an equal fusion: conftest)."""
    fd_str = repr(fd)
    fd_cap = check_captured_python_definition(fd.fusion)
    # Printing the rebuilt fusion gives the same definition up to the names: values are named by
    # the order they were made in (nvFuser's numbering), and the printed definition makes the
    # inputs first.
    assert same_up_to_names(fd_str, repr(fd_cap))
    torch.manual_seed(0)
    captured_outputs = fd_cap.execute(inputs, device=device)
    assert len(reference_outputs) == len(captured_outputs)
    for ref_out, cap_out in zip(reference_outputs, captured_outputs):
        assert ref_out.dtype == cap_out.dtype
        wide = torch.complex128 if ref_out.is_complex() else torch.float64  # both parts
        assert torch.allclose(ref_out.to(wide), cap_out.to(wide), equal_nan=True)
        assert ref_out.stride() == cap_out.stride()


@pytest.fixture(params=["lru_cache", "eager"])
def nvfuser_direct_test(request):
    if request.param == "lru_cache":
        if not hasattr(nvfuser_direct_test, "cache"):
            nvfuser_direct_test.cache = LRUCache(max_fusions=16384)
        return NVFuserTest(nvfuser_direct_test.cache)
    return NVFuserTest()


# ---- one case per op: (definition, inputs on a device) ----------------------------------------
def _positive(*shape, device="cpu"):
    return torch.rand(*shape, device=device) + 0.25


def _unary(name, dtype=DataType.Float):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=dtype)
        fd.add_output(getattr(fd.ops, name)(x))

    def inputs(device):
        if dtype == DataType.Int:
            return [torch.randint(-9, 9, (4, 6), device=device)]
        return [torch.randn(4, 6, device=device) * 2 if name in SIGNED else _positive(4, 6, device=device)]

    return define, inputs


SIGNED = {"neg", "abs", "sign", "relu", "floor", "ceil", "round", "sin", "cos", "tanh", "erf",
          "sigmoid", "silu", "exp", "exp2", "isnan", "isinf", "logical_not", "set"}


def _binary(name):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        y = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(getattr(fd.ops, name)(x, y))           # broadcast of the lower rank
        fd.add_output(getattr(fd.ops, name)(x, 2.0))         # a Python number
        fd.add_output(getattr(fd.ops, name)(s, x))           # a Scalar input on the left
        fd.add_output(fd.ops.mul(x, getattr(fd.ops, name)(s, 3.0)))  # Scalars alone

    return define, lambda device: [_positive(4, 6, device=device), _positive(6, device=device), 1.5]


def _define(body):
    """A case whose definition is `body(fd, x)` for one [4, 6] f32 input x."""
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        for out in body(fd, x):
            fd.add_output(out)

    return define, lambda device: [torch.randn(4, 6, device=device)]


def _constant_shape(body):
    """As _define, with the input's sizes constant ([4, 6])."""
    def define(fd):
        x = fd.define_tensor(shape=[4, 6], contiguity=True)
        for out in body(fd, x):
            fd.add_output(out)

    return define, lambda device: [torch.randn(4, 6, device=device)]


def _scalar_sizes(fd, x):
    return fd.ops.shape(x)


def _factories(fd):
    n = fd.define_scalar(dtype=DataType.Int)
    fd.add_output(fd.ops.full([n, 3], 1.5, DataType.Float))
    fd.add_output(fd.ops.zeros([2, n], DataType.Int32))
    fd.add_output(fd.ops.ones([n], DataType.Double))
    fd.add_output(fd.ops.iota(n, 2, 3, DataType.Int))
    fd.add_output(fd.ops.arange(0, n, 2))
    fd.add_output(fd.ops.arange(1.0, 4.0, 0.5, dtype=DataType.Float))


def _norms(fd, with_bias):
    x = fd.define_tensor(shape=[-1, -1], contiguity=True)
    w = fd.define_tensor(shape=[-1], contiguity=True)
    b = fd.define_tensor(shape=[-1], contiguity=True) if with_bias else None
    return x, w, b


def _cast():
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        n = fd.define_scalar(dtype=DataType.Int)
        for dt in (DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32,
                   DataType.Int, DataType.Bool):
            fd.add_output(fd.ops.cast(x, dt))
        fd.add_output(fd.ops.mul(x, fd.ops.cast(n, DataType.Float)))  # a Scalar cast

    return define, lambda device: [torch.randn(4, 6, device=device) * 4, 3]


def _layer_norm():
    def define(fd):
        x, w, b = _norms(fd, True)
        y, mean, rstd = fd.ops.layer_norm(x, 1, w, b, eps=1e-5)
        for t in (y, mean, rstd):
            fd.add_output(t)

    return define, lambda device: [torch.randn(4, 32, device=device), torch.randn(32, device=device),
                                   torch.randn(32, device=device)]


def _rms_norm():
    def define(fd):
        x, w, _ = _norms(fd, False)
        fd.add_output(fd.ops.rms_norm(x, 1, w, eps=1e-6))

    return define, lambda device: [torch.randn(4, 32, device=device), torch.randn(32, device=device)]


def _cat():
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        y = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Half)
        fd.add_output(fd.ops.cat([x, y, x], 1))   # y is cast to Float
        fd.add_output(fd.ops.cat([x, x], 0))

    return define, lambda device: [torch.randn(4, 6, device=device),
                                   torch.randn(4, 3, device=device).half()]


def _reshape():
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        v = fd.define_vector(2)
        fd.add_output(fd.ops.reshape(x, v))                           # scalar inputs
        fd.add_output(fd.ops.reshape(x, [fd.ops.size(x, 1), -1]))     # an extent and -1
        fd.add_output(fd.ops.reshape(x, [-1]))
        c = fd.define_tensor(shape=[2, 3, 4], contiguity=True)
        fd.add_output(fd.ops.reshape(c, [6, 1, 4]))                   # static, with a size 1
        fd.add_output(fd.ops.reshape(c, [4, 6]))

    return define, lambda device: [torch.randn(4, 6, device=device), [3, 8],
                                   torch.randn(2, 3, 4, device=device)]


def _slice():
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        n = fd.define_scalar(dtype=DataType.Int)
        m = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.slice(x, [1, 2], [3, 6]))                        # constants
        # Negative bounds count from the end; as in nvFuser, a constant start must not be
        # negative, nor a constant end before a constant start (a run-time start may be).
        fd.add_output(fd.ops.slice(x, [0, m], [fd.ops.size(x, 0), -1]))      # negative, extent
        fd.add_output(fd.ops.slice(x, [n, 0], [4, n]))                       # Scalars
        c = fd.define_tensor(shape=[4, 6], contiguity=True)
        fd.add_output(fd.ops.slice(c, [n, m], [-1, 6]))                      # constant extents

    return define, lambda device: [torch.randn(4, 6, device=device), 1, -4,
                                   torch.randn(4, 6, device=device)]


def _pad():
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        n = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.pad(x, [1, 2], 0.5))
        fd.add_output(fd.ops.pad(x, [0, 0, n, 1]))          # only the outer dim, a Scalar width
        fd.add_output(fd.ops.pad(x, [-1, 1, 2, 0], -1.0))  # negative widths crop

    return define, lambda device: [torch.randn(4, 6, device=device), 2]


def _welford():
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Half)
        for t in fd.ops.welford(x, [1]):
            fd.add_output(t)

    return define, lambda device: [torch.randn(4, 30, device=device).half()]


def _reductions(name):
    def body(fd, x):
        op = getattr(fd.ops, name)
        return [op(x, [1]), op(x, [0], keepdim=True), op(x, [0, 1], dtype=DataType.Double)]

    define = _define(body)[0]
    if name in ("sum", "prod"):  # integers accumulate in Int64
        def define_int(fd):
            define(fd)
            i = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int32)
            fd.add_output(getattr(fd.ops, name)(i, [0]))

        return define_int, lambda device: [torch.rand(4, 6, device=device) + 0.5,
                                           torch.randint(1, 3, (5,), device=device,
                                                         dtype=torch.int32)]
    return define, lambda device: [torch.randn(4, 6, device=device)]


OP_CASES = {name: _unary(name) for name in (
    "neg abs exp exp2 log log2 sqrt rsqrt reciprocal sin cos tanh sigmoid relu silu erf floor "
    "ceil round sign isnan isinf logical_not set").split()}
OP_CASES.update({name: _binary(name) for name in (
    "add sub mul div pow fmod maximum minimum eq ne lt le gt ge logical_and logical_or").split()})
OP_CASES.update({name: _reductions(name) for name in ("sum", "prod", "max", "min", "mean")})
OP_CASES.update({
    "where": _define(lambda fd, x: [fd.ops.where(fd.ops.gt(x, 0.0), x, 1.0),
                                    fd.ops.where(fd.ops.lt(fd.define_scalar(1.0), 2.0), x, 0.0)]),
    "clamp": _define(lambda fd, x: [fd.ops.clamp(x, -0.5, 0.5)]),
    "lerp": _define(lambda fd, x: [fd.ops.lerp(x, fd.ops.neg(x), 0.25)]),
    "cast": _cast(),
    "var": _define(lambda fd, x: [fd.ops.var(x, [1]), fd.ops.var(x, [0], correction=0,
                                                                   keepdim=True)]),
    "var_mean": _define(lambda fd, x: list(fd.ops.var_mean(x, [1], correction=0))),
    "welford": _welford(),
    "broadcast": _define(lambda fd, x: [fd.ops.broadcast(x, [True, False, False, True])]),
    "broadcast_in_dim": _define(lambda fd, x: [
        fd.ops.broadcast_in_dim(fd.ops.sum(x, [0]), _scalar_sizes(fd, x), [1]),
        fd.ops.broadcast_in_dim(fd.ops.sum(x, [1]), [4, 3, 6], [0])]),
    "expand": _define(lambda fd, x: [fd.ops.expand(fd.ops.broadcast(fd.ops.sum(x, [1]),
                                                                     [False, True]),
                                                   [-1, fd.ops.size(x, 1)]),
                                     fd.ops.expand(fd.ops.unsqueeze(x, 0), [3, 4, 6])]),
    "permute": _define(lambda fd, x: [fd.ops.permute(x, [1, 0])]),
    # transpose(x, 0, 1) alone would be the permute case's fusion (a cache hit): one more output.
    "transpose": _define(lambda fd, x: [fd.ops.transpose(x, 0, 1), fd.ops.transpose(x, 1, 1)]),
    "squeeze": _constant_shape(lambda fd, x: [fd.ops.squeeze(fd.ops.unsqueeze(x, 1), [1])]),
    "unsqueeze": _define(lambda fd, x: [fd.ops.unsqueeze(x, -1)]),
    "reshape": _reshape(),
    "slice": _slice(),
    "pad": _pad(),
    "cat": _cat(),
    "shape": _define(lambda fd, x: [fd.ops.expand(fd.ops.broadcast(fd.ops.sum(x, [0]),
                                                                    [True, False]),
                                                  fd.ops.shape(x))]),
    "size": _define(lambda fd, x: [fd.ops.mul(x, fd.ops.cast(fd.ops.size(x, 1),
                                                             DataType.Float))]),
    "full": (_factories, lambda device: [3]),
    "zeros": (_factories, lambda device: [4]),
    "ones": (_factories, lambda device: [5]),
    "iota": (_factories, lambda device: [6]),
    "arange": (_factories, lambda device: [7]),
    "softmax": _define(lambda fd, x: [fd.ops.softmax(x, -1), fd.ops.softmax(x, 0)]),
    "log_softmax": _define(lambda fd, x: [fd.ops.log_softmax(x, 1)]),
    "layer_norm": _layer_norm(),
    "rms_norm": _rms_norm(),
    "gelu": _define(lambda fd, x: [fd.ops.gelu(x), fd.ops.gelu(x, approximate="tanh")]),
})
OP_CASES.update({f"{name}[int]": _unary(name, DataType.Int) for name in ("neg", "abs", "sign")})


# nvFuser's further elementwise ops (issue 36): each inside its domain.
def _unary_on(name, make):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(getattr(fd.ops, name)(x))

    return define, lambda device: [make(device)]


def _in_unit(device):
    return torch.rand(4, 6, device=device) * 1.8 - 0.9


def _int_binary(name, dtype=DataType.Int):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=dtype)
        y = fd.define_tensor(shape=[-1], contiguity=True, dtype=dtype)
        fd.add_output(getattr(fd.ops, name)(x, y))
        fd.add_output(getattr(fd.ops, name)(x, 3))

    torch_dtype = torch.int32 if dtype == DataType.Int32 else torch.int64
    return define, lambda device: [
        torch.randint(-50, 50, (4, 6), device=device, dtype=torch_dtype),
        torch.randint(1, 5, (6,), device=device, dtype=torch_dtype)]


OP_CASES.update({name: _unary_on(name, _in_unit) for name in ("acos", "asin", "atanh", "erfinv")})
OP_CASES["acosh"] = _unary_on("acosh", lambda device: _positive(4, 6, device=device) + 1.0)
OP_CASES.update({name: _unary(name) for name in (
    "asinh atan cosh sinh tan erfc erfcinv expm1 log10 log1p lgamma trunc frac signbit isfinite "
    "isneginf isposinf isreal").split()})
# Issue 35: the ops Loom gained by their entries in ir/op_types.h.
OP_CASES.update({name: _unary(name) for name in ("erfcx", "digamma")})
OP_CASES["bitwise_not"] = _unary("bitwise_not", DataType.Int)
OP_CASES.update({name: _binary(name) for name in ("atan2", "remainder", "mod", "nextafter")})
OP_CASES.update({name: _int_binary(name) for name in (
    "gcd bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift").split()})
# Int32: a logical shift of a negative Int64 is near 2^64, past what the double-precision
# reference holds exactly (docs/ops.md); truediv of integers is a float (of floats it is div).
OP_CASES["logical_right_shift"] = _int_binary("logical_right_shift", DataType.Int32)
OP_CASES["truediv"] = _int_binary("truediv")
OP_CASES.update({
    "addcmul": _define(lambda fd, x: [fd.ops.addcmul(x, x, fd.ops.neg(x), value=0.5)]),
    "threshold": _define(lambda fd, x: [fd.ops.threshold(x, 0.1, -1.0)]),
    "triu": _constant_shape(lambda fd, x: [fd.ops.triu(x), fd.ops.triu(x, diagonal=-1)]),
})


# Complex numbers (issue 36): the parts and the conjugate of a c64 input.
def _complex_unary(name):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.ComplexFloat)
        fd.add_output(getattr(fd.ops, name)(x))

    return define, lambda device: [torch.randn(4, 6, dtype=torch.complex64, device=device)]


OP_CASES.update({name: _complex_unary(name) for name in ("real", "imag", "conj")})


# Random numbers (issue 30): seed and offset given, so the printed definition draws the same.
def _random(body):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        seed = fd.define_scalar(dtype=DataType.Int)
        for out in body(fd, x, seed):
            fd.add_output(out)

    return define, lambda device: [torch.rand(4, 6, device=device), 1234]


OP_CASES.update({
    "uniform": _random(lambda fd, x, seed: [fd.ops.uniform(-1.0, 2.0, [4, 6], rng_seed=seed,
                                                           rng_offset=0)]),
    "normal": _random(lambda fd, x, seed: [fd.ops.normal(1.0, 0.5, [4, 6], rng_seed=seed,
                                                         rng_offset=8)]),
    "rand": _random(lambda fd, x, seed: [fd.ops.rand([4, 6], rng_seed=seed, rng_offset=1)]),
    "randn": _random(lambda fd, x, seed: [fd.ops.randn([4, 6], rng_seed=7, rng_offset=2)]),
    "rand_like": _random(lambda fd, x, seed: [fd.ops.rand_like(x, rng_seed=seed, rng_offset=3)]),
    "randn_like": _random(lambda fd, x, seed: [fd.ops.randn_like(x, rng_seed=seed,
                                                                 rng_offset=4)]),
    "bernoulli": _random(lambda fd, x, seed: [fd.ops.bernoulli(x, rng_seed=seed, rng_offset=5)]),
    "dropout": _random(lambda fd, x, seed: list(fd.ops.dropout(x, 0.25, rng_seed=seed,
                                                               rng_offset=6))),
})


# Scans, argmax / argmin and the backward and loss composites (issue 30).
def _cross_entropy(backward):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        t = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        if backward:
            g = fd.define_tensor(shape=[], dtype=DataType.Float)
            fd.add_output(fd.ops.cross_entropy_backward(g, x, t, ignore_index=1))
        else:
            fd.add_output(fd.ops.cross_entropy(x, t, ignore_index=1))
            fd.add_output(fd.ops.cross_entropy(x, t, reduction="none"))

    def inputs(device):
        ins = [torch.randn(4, 6, device=device), torch.tensor([0, 1, 5, 2], device=device)]
        return ins + ([torch.tensor(0.5, device=device)] if backward else [])

    return define, inputs


def _grad_of(body):
    """A case whose definition is `body(fd, grad, x)` for [4, 6] f32 inputs."""
    def define(fd):
        g = fd.define_tensor(shape=[-1, -1], contiguity=True)
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        for out in body(fd, g, x):
            if out is not None:
                fd.add_output(out)

    return define, lambda device: [torch.randn(4, 6, device=device), torch.randn(4, 6, device=device)]


OP_CASES.update({name: _define(lambda fd, x, name=name: [getattr(fd.ops, name)(x, 1),
                                                          getattr(fd.ops, name)(x, -2)])
                 for name in ("cumsum", "cumprod", "cummax", "cummin")})
OP_CASES.update({name: _define(lambda fd, x, name=name: [getattr(fd.ops, name)(x, 1),
                                                          getattr(fd.ops, name)(x, keepdim=True)])
                 for name in ("argmax", "argmin")})
OP_CASES.update({
    "cross_entropy": _cross_entropy(False),
    "cross_entropy_backward": _cross_entropy(True),
    "softmax_backward": _grad_of(lambda fd, g, x: [
        fd.ops.softmax_backward(g, fd.ops.softmax(x, 1), 1)]),
    "log_softmax_backward": _grad_of(lambda fd, g, x: [
        fd.ops.log_softmax_backward(g, fd.ops.log_softmax(x, 0), 0)]),
    "layer_norm_backward": _grad_of(lambda fd, g, x: list(fd.ops.layer_norm_backward(
        g, x, 1, *fd.ops.layer_norm(x, 1)[1:]))),
    "rms_norm_backward": _grad_of(lambda fd, g, x: list(fd.ops.rms_norm_backward(g, x, 1))),
    "gelu_backward": _grad_of(lambda fd, g, x: [fd.ops.gelu_backward(g, x),
                                                fd.ops.gelu_backward(g, x, approximate="tanh")]),
    "silu_backward": _grad_of(lambda fd, g, x: [fd.ops.silu_backward(g, x)]),
})


# Matmul and linear (issue 30): segments of their own, between pointwise kernels here.
def _matmul_case(body, shapes):
    def define(fd):
        ins = [fd.define_tensor(shape=[-1] * len(s), contiguity=True) for s in shapes]
        for out in body(fd, *ins):
            fd.add_output(out)

    return define, lambda device: [torch.randn(*s, device=device) for s in shapes]


OP_CASES.update({
    "matmul": _matmul_case(lambda fd, a, b: [fd.ops.matmul(a, b),
                                             fd.ops.relu(fd.ops.matmul(fd.ops.neg(a), b))],
                           [(4, 8), (8, 6)]),
    "linear": _matmul_case(lambda fd, x, w, b: [fd.ops.linear(x, w, b), fd.ops.linear(x, w)],
                           [(2, 4, 8), (6, 8), (6,)]),
})


def _grouped_mm_case():
    def define(fd):
        a = fd.define_tensor(shape=[-1, -1], contiguity=True)
        b = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        offs = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int32)
        fd.add_output(fd.ops.grouped_mm(a, b, offs))

    return define, lambda device: [torch.randn(7, 8, device=device),
                                   torch.randn(3, 8, 5, device=device),
                                   torch.tensor([2, 2, 7], dtype=torch.int32, device=device)]


OP_CASES["grouped_mm"] = _grouped_mm_case()


# scaled_mm (issue 36): fp8 operands with per-tensor f32 scales, a bf16 result.
def _scaled_mm_case():
    def define(fd):
        a = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float8_e4m3fn)
        b = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float8_e4m3fn)
        sa = fd.define_tensor(shape=[], dtype=DataType.Float)
        sb = fd.define_tensor(shape=[], dtype=DataType.Float)
        out, _, _ = fd.ops.scaled_mm(a, b, sa, sb, dtype=DataType.BFloat16)
        fd.add_output(out)

    return define, lambda device: [
        torch.randn(6, 16, device=device).to(torch.float8_e4m3fn),
        torch.randn(16, 8, device=device).to(torch.float8_e4m3fn),
        torch.tensor(0.5, device=device), torch.tensor(2.0, device=device)]


OP_CASES["scaled_mm"] = _scaled_mm_case()


# Attention (issue 30): composites of matmul segments and kernels, dropout keyed by a seed input.
def _attention(backward):
    shapes = [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)] + ([(2, 3, 5, 4)] if backward else [])

    def define(fd):
        ins = [fd.define_tensor(shape=[-1] * 4, contiguity=True) for _ in shapes]
        seed = fd.define_scalar(dtype=DataType.Int)
        q, k, v = ins[:3]
        fwd = fd.ops.sdpfa_fwd(q, k, v, dropout_p=0.2, is_causal=True, rng_seed=seed,
                               rng_offset=3)
        outs = fd.ops.sdpfa_bwd(ins[3], q, k, v, fwd[0], fwd[1], 0.2, True, fwd[2], fwd[3],
                                None) if backward else fwd
        for out in outs:
            fd.add_output(out)

    return define, lambda device: [torch.randn(*s, device=device) for s in shapes] + [11]


OP_CASES.update({"sdpfa_fwd": _attention(False), "sdpfa_bwd": _attention(True)})


# Indexing (issue 30): in-range i64 indices (i32 ones are tested in test_indexing.py).
def _indexing(body, index_shape, high):
    def define(fd):
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        i = fd.define_tensor(shape=[-1] * len(index_shape), contiguity=True, dtype=DataType.Int)
        for out in body(fd, x, i):
            fd.add_output(out)

    return define, lambda device: [torch.rand(4, 6, device=device),
                                   torch.randint(0, high, index_shape, device=device)]


OP_CASES.update({
    "index_select": _indexing(lambda fd, x, i: [fd.ops.index_select(x, i, 1)], (5,), 6),
    "gather": _indexing(lambda fd, x, i: [fd.ops.gather(x, i, 0)], (3, 6), 4),
    "take_along_axis": _indexing(lambda fd, x, i: [fd.ops.take_along_axis(x, i, 0)], (4, 6), 4),
    "scatter": _indexing(lambda fd, x, i: [fd.ops.scatter(x, i, fd.ops.neg(x), 1)], (4, 1), 6),
    "scatter_add": _indexing(lambda fd, x, i: [fd.ops.scatter_add(x, i, x, 1)], (4, 6), 6),
    "embedding_fwd": _indexing(lambda fd, x, i: [fd.ops.embedding_fwd(i, x, None, None, 2.0,
                                                                      False, False)], (2, 3), 4),
    # rows 0..3 of x picked by i, added into 2 * x (an embedding's weight gradient)
    "index_put_accumulate": _indexing(lambda fd, x, i: [fd.ops.index_put_accumulate(
        fd.ops.mul(x, 2.0), i, fd.ops.index_select(x, i, 0))], (7,), 4),
})


# Sorting and the other ops of issue 36.
OP_CASES.update({
    "argsort": _define(lambda fd, x: [fd.ops.argsort(x, 1),
                                      fd.ops.argsort(x, 0, descending=True, stable=True)]),
    "topk": _define(lambda fd, x: [*fd.ops.topk(x, 2, 1),
                                   fd.ops.topk(fd.ops.neg(x), 3, 0, largest=False)[0]]),
    "select": _define(lambda fd, x: [fd.ops.select(x, 1, 0), fd.ops.select(x, -1, 1)]),
    "select[constant]": _constant_shape(lambda fd, x: [fd.ops.select(x, 2, 1),
                                                       fd.ops.select(x, -4, 0)]),
    "tril": _constant_shape(lambda fd, x: [fd.ops.tril(x), fd.ops.tril(x, diagonal=-1)]),
    "ceilDiv": _define(lambda fd, x: [fd.ops.ceilDiv(x, 0.5),
                                      fd.ops.add(x, fd.ops.ceilDiv(7, 2))]),
    "segment_set": _define(lambda fd, x: [fd.ops.neg(fd.ops.segment_set(fd.ops.exp(x)))]),
    "stride_order": _define(lambda fd, x: [fd.ops.stride_order(fd.ops.exp(x), [0, 1])]),
})


def test_every_op_has_a_case():
    """A new fd.ops op needs a case here (its printing, caching and validation are tested)."""
    ops = {n for n in dir(Ops) if not n.startswith("_")}
    cases = {n.split("[")[0] for n in OP_CASES}
    assert ops == cases, f"ops without a case: {sorted(ops - cases)}; cases of no op: {sorted(cases - ops)}"


# The factories share one definition; one case per op keeps the table complete but runs it
# once per distinct definition through the cache.
@pytest.mark.parametrize("name", sorted(OP_CASES))
def test_op(name, nvfuser_direct_test, device):
    define, make_inputs = OP_CASES[name]
    inputs = make_inputs(device)
    new = None if define is _factories else True
    # The inputs' tensors choose the device; a fusion of factories alone is told it.
    tensors = any(isinstance(i, torch.Tensor) for i in inputs)
    outs, fd = nvfuser_direct_test.exec_nvfuser(define, inputs, new_fusion_expected=new,
                                                device=None if tensors else device)
    assert "define_from_text" not in repr(fd)
    for out in outs:
        assert out.device.type == device
