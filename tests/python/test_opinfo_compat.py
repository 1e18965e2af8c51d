# SPDX-License-Identifier: Apache-2.0
# The classes nvFuser's op-info suite found (issue 36, docs/python.md "nvFuser's own tests on
# Loom"), each held here in Loom's own words: the circular and hyperbolic functions, their
# inverses, log2, log10 and sigmoid on complex tensors, with torch as the oracle at every pairing
# of infinities, NaN and signed zeros; and integer arguments (dims, diagonals) that refuse a float
# with a TypeError instead of truncating it.
import itertools
import math

import pytest
import torch

import loom
from loom.direct import FusionDefinition

NAN, INF = float("nan"), float("inf")

COMPLEX_UNARY = ["sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
                 "acosh", "atanh", "log2", "log10", "sigmoid"]


def special_complex(dtype, device):
    """Every pairing of signed zeros, small and large finite parts, infinities and NaN, then
    random values with parts in [-4, 4]."""
    parts = [0.0, -0.0, 1e-3, -0.5, 1.0, 2.0, -2.718, 30.0, 1e5, INF, -INF, NAN]
    grid = [complex(re, im) for re, im in itertools.product(parts, parts)]
    g = torch.Generator().manual_seed(36)
    rand = torch.complex(torch.rand(64, generator=g, dtype=torch.float64) * 8 - 4,
                         torch.rand(64, generator=g, dtype=torch.float64) * 8 - 4)
    return torch.cat([torch.tensor(grid, dtype=torch.complex128), rand]).to(dtype).to(device)


def assert_parts_close(actual, expected, dtype, msg):
    """Part by part, NaN where torch has NaN, infinities of the same sign where torch's are
    infinite; finite parts within a few ulps of the part type (relative to |z|)."""
    assert actual.dtype == expected.dtype, f"{msg}: {actual.dtype} vs {expected.dtype}"
    a, e = torch.view_as_real(actual.cpu()), torch.view_as_real(expected.cpu())
    tol = 2e-6 if dtype == torch.complex64 else 1e-12
    scale = expected.abs().cpu().unsqueeze(-1).expand_as(e).nan_to_num(nan=1.0, posinf=1.0)
    finite = torch.isfinite(e)
    torch.testing.assert_close(torch.isnan(a), torch.isnan(e), msg=f"{msg}: NaN parts")
    inf = torch.isinf(e)
    torch.testing.assert_close(a[inf], e[inf], msg=f"{msg}: infinite parts")
    err = (a[finite] - e[finite]).abs() / scale[finite].clamp(min=1.0)
    worst = err.max().item() if err.numel() else 0.0
    assert worst <= tol, f"{msg}: finite parts differ by {worst} (relative to max(|z|, 1))"


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_transcendental_ops_match_torch(device, dtype):
    """Loom's complex functions follow C99's special values (Annex G) on both backends, as
    torch's CPU kernels do; so torch on the CPU is the oracle for CUDA tensors too. (torch's CUDA
    kernels give NaN parts where C99 has a signed zero or a finite part: sin(1e5 i) is nan + inf i
    there, inf i in C99; tanh(-0 + inf i) is nan + nan i there, -0 + nan i in C99; sigmoid(-inf +
    1i) is 0 there and nan + nan i on the CPU and in Loom; found on an H100.)"""
    x = special_complex(dtype, device)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        for name in COMPLEX_UNARY:
            fd.add_output(getattr(fd.ops, name)(t0))
    outs = fd.execute([x])
    assert len(outs) == len(COMPLEX_UNARY)
    for name, out in zip(COMPLEX_UNARY, outs):
        assert_parts_close(out, getattr(torch, name)(x.cpu()), dtype, name)


def test_complex_transcendental_known_values():
    # sin(i) = i sinh 1; acos(2 + 0i) is on the cut's upper side: -i log(2 + sqrt 3);
    # atanh(inf + 0.5i) = i pi/2; log2(-0 + 0i) = -inf + i pi / log 2 (torch divides by log 2).
    x = torch.tensor([1j, 2 + 0j, complex(INF, 0.5), complex(-0.0, 0.0)], dtype=torch.complex128)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        for name in ("sin", "acos", "atanh", "log2"):
            fd.add_output(getattr(fd.ops, name)(t0))
    sin, acos, atanh, log2 = fd.execute([x])
    assert sin[0] == complex(0.0, torch.sinh(torch.tensor(1.0, dtype=torch.float64)).item())
    assert abs(acos[1] - complex(0.0, -1.3169578969248166)) < 1e-15
    assert atanh[2] == complex(0.0, torch.pi / 2)
    assert log2[3].real == -INF and log2[3].imag == math.pi / math.log(2.0)


def test_complex_sigmoid_where_exp_is_undefined_is_nan():
    # e^-z has a NaN part for -inf + inf i: torch's sigmoid is NaN there, and so is Loom's (the
    # division alone would give 0, as C's Annex G divides a finite value by an infinite one).
    x = torch.tensor([complex(-INF, INF), complex(-INF, NAN), complex(INF, INF)],
                     dtype=torch.complex64)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sigmoid(fd.from_pytorch(x)))
    (out,) = fd.execute([x])
    assert torch.isnan(out[0]) and torch.isnan(out[1])
    assert out[2] == 1 + 0j


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_exp_of_infinite_real_part(dtype):
    # e^(-inf + iy) is 0 for every y, an infinite or NaN one too; e^(inf + inf i) is inf + NaN i.
    x = torch.tensor([complex(-INF, INF), complex(-INF, NAN), complex(INF, INF)], dtype=dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.exp(fd.from_pytorch(x)))
    (out,) = fd.execute([x])
    assert out[0] == 0 and out[1] == 0
    assert out[2].real == INF and torch.isnan(out[2].imag)


def define_and_run(build, x):
    with FusionDefinition() as fd:
        fd.add_output(build(fd, fd.from_pytorch(x)))
    return fd.execute([x])[0]


def _typed(op, what):
    """The TypeError's text: nvFuser's bindings' "op(): incompatible function arguments." and
    what was wrong."""
    return f"{op}\\(\\): incompatible function arguments. {what}"


FLOAT_ARGS = [
    ("permute", lambda fd, t: fd.ops.permute(t, [0.0, 1.0]),
     _typed("permute", "dims must be an int")),
    ("sum", lambda fd, t: fd.ops.sum(t, [0.5]), _typed("sum", "dims must be an int")),
    ("squeeze", lambda fd, t: fd.ops.squeeze(t, [1.0]), _typed("squeeze", "dims must be an int")),
    ("cumsum", lambda fd, t: fd.ops.cumsum(t, 0.5),
     _typed("cumsum", "dim must be an int, got 0.5")),
    ("softmax", lambda fd, t: fd.ops.softmax(t, 1.0),
     _typed("softmax", "dim must be an int, got 1.0")),
    ("triu", lambda fd, t: fd.ops.triu(t, 1.5), _typed("triu", "diagonal must be an int, got 1.5")),
    ("transpose", lambda fd, t: fd.ops.transpose(t, 0, 1.0),
     _typed("transpose", "dim1 must be an int")),
]


@pytest.mark.parametrize("name,build,message", FLOAT_ARGS, ids=[c[0] for c in FLOAT_ARGS])
def test_float_where_an_int_is_expected_is_a_type_error(name, build, message):
    # int(0.5) would quietly name dim 0; nvFuser's bindings raise TypeError for a float here.
    x = torch.randn(3, 1)
    with pytest.raises(TypeError, match=message) as info:
        define_and_run(build, x)
    assert isinstance(info.value, loom.UserError)


def test_int_like_dims_still_accepted():
    # numpy and torch integer scalars are ints (operator.index), as are negative dims.
    np = pytest.importorskip("numpy")
    x = torch.randn(2, 3, 4)
    out = define_and_run(lambda fd, t: fd.ops.permute(t, [np.int64(2), torch.tensor(0), -2]), x)
    torch.testing.assert_close(out, x.permute(2, 0, 1))
    out = define_and_run(lambda fd, t: fd.ops.cumsum(t, np.int32(1)), x)
    torch.testing.assert_close(out, torch.cumsum(x, 1))


def test_optional_dim_stays_optional():
    # argmax / argmin without a dim reduce every dim (None is no dim, not a float to refuse);
    # a float dim is refused there too.
    x = torch.randn(4, 5)
    out = define_and_run(lambda fd, t: fd.ops.argmax(t), x)
    assert out.item() == torch.argmax(x).item()
    out = define_and_run(lambda fd, t: fd.ops.argmin(t, None), x)
    assert out.item() == torch.argmin(x).item()
    with pytest.raises(TypeError, match=_typed("argmax", "dim must be an int, got 1.0")):
        define_and_run(lambda fd, t: fd.ops.argmax(t, 1.0), x)
