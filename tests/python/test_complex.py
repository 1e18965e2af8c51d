# SPDX-License-Identifier: Apache-2.0
# Complex numbers (issue 36) in the style of nvFuser's Python tests: torch complex64 / complex128
# tensors in and out through DLPack, DataType.ComplexFloat / ComplexDouble, Python complex
# constants, each op defined on complex values, casts, sums, with torch as the oracle.
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition

NAN, INF = float("nan"), float("inf")
DTYPES = [torch.complex64, torch.complex128]


def close(actual, expected, msg=""):
    assert actual.dtype == expected.dtype, f"{msg}: {actual.dtype} vs {expected.dtype}"
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=msg)


def complex_values(device, dtype, n=64):
    edges = [0j, 1 + 0j, -1 + 0j, 1j, -1j, 3 - 4j, -2.5 + 0.5j, 1e-20 + 1e-20j, 1e10 - 1e10j]
    g = torch.Generator().manual_seed(36)
    rand = torch.complex(torch.rand(n, generator=g, dtype=torch.float64) * 8 - 4,
                         torch.rand(n, generator=g, dtype=torch.float64) * 8 - 4)
    return torch.cat([torch.tensor(edges, dtype=torch.complex128), rand]).to(dtype).to(device)


UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
    "reciprocal": torch.reciprocal, "real": torch.real, "imag": torch.imag,
    "conj": lambda x: torch.conj(x).resolve_conj(), "isnan": torch.isnan, "isinf": torch.isinf,
    "isfinite": torch.isfinite, "isreal": torch.isreal,
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_ops(device, dtype):
    x = complex_values(device, dtype)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.ComplexFloat if dtype == torch.complex64
                              else DataType.ComplexDouble)
        for name in UNARY:
            fd.add_output(getattr(fd.ops, name)(t0))
    outs = fd.execute([x])
    for (name, fn), out in zip(UNARY.items(), outs):
        close(out, fn(x), msg=name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_ops_and_constants(device, dtype):
    base = complex_values(device, dtype, n=8)
    a = base.repeat_interleave(len(base))
    b = base.repeat(len(base))
    with FusionDefinition() as fd:
        ta = fd.from_pytorch(a)
        tb = fd.from_pytorch(b)
        for op in ("add", "sub", "mul", "truediv", "eq", "ne"):
            fd.add_output(getattr(fd.ops, op)(ta, tb))
        fd.add_output(fd.ops.mul(ta, 0.5 - 2j))       # a Python complex constant
        c = fd.define_scalar(1 + 1j)                   # DataType.ComplexDouble constant
        fd.add_output(fd.ops.add(ta, c))
    outs = fd.execute([a, b])
    refs = [a + b, a - b, a * b, a / b, a == b, a != b, a * (0.5 - 2j), a + (1 + 1j)]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, msg=str(k))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_and_mean(device, dtype):
    g = torch.Generator().manual_seed(1)
    for shape in ([3, 5], [16, 1000], [2, 70000]):
        x = torch.randn(shape, generator=g, dtype=dtype).to(device)
        with FusionDefinition() as fd:
            t0 = fd.from_pytorch(x)
            fd.add_output(fd.ops.sum(t0, [1]))
            fd.add_output(fd.ops.sum(t0, [0]))
            fd.add_output(fd.ops.sum(t0))
        outs = fd.execute([x])
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.complex64 else {}
        for out, ref in zip(outs, [x.sum(1), x.sum(0), x.sum()]):
            assert out.dtype == ref.dtype
            torch.testing.assert_close(out, ref, **tol)


def test_mixed_real_and_complex(device):
    z = complex_values(device, torch.complex64, n=23).reshape(4, 8)
    r = torch.linspace(-2, 2, 32, dtype=torch.float32, device=device).reshape(4, 8)
    d = torch.linspace(-1, 1, 8, dtype=torch.float64, device=device)
    with FusionDefinition() as fd:
        tz = fd.from_pytorch(z)
        tr = fd.from_pytorch(r)
        td = fd.from_pytorch(d)
        fd.add_output(fd.ops.mul(tz, tr))                      # c64 * f32 -> c64
        fd.add_output(fd.ops.add(tz, td))                      # c64 + f64 -> c128
        fd.add_output(fd.ops.add(fd.ops.abs(tz), fd.ops.real(tz)))
        fd.add_output(fd.ops.cast(tr, DataType.ComplexFloat))  # imaginary part 0
        fd.add_output(fd.ops.mul(tr, 1j))                      # f32 * complex -> c64
        fd.add_output(fd.ops.mul(td, 1j))                      # f64 * complex -> c128
    outs = fd.execute([z, r, d])
    refs = [z * r, z + d, z.abs() + z.real, r.to(torch.complex64), r * 1j, d * 1j]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, msg=str(k))


def test_dtypes_and_printing():
    assert loom.direct.pytorch_utils.torch_dtype_to_nvfuser_dtype(torch.complex64) is \
        DataType.ComplexFloat
    assert loom.direct.pytorch_utils.torch_dtype_to_nvfuser_dtype(complex) is DataType.ComplexDouble
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.ComplexDouble)
        fd.add_output(fd.ops.mul(t0, 2 - 1j))
    text = str(fd)
    assert "DataType.ComplexDouble" in text
    assert "complex(2.0, -1.0)" in text


def test_undefined_complex_ops_are_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.ComplexFloat)
        with pytest.raises(loom.UserError, match="complex value does not convert to f32"):
            fd.ops.cast(t0, DataType.Float)
        with pytest.raises(loom.UserError, match="is not defined for complex values"):
            fd.ops.lt(t0, t0)
        with pytest.raises(loom.UserError, match="no order"):
            fd.ops.max(t0)
        with pytest.raises(loom.UserError, match="complex values cannot be given at run time"):
            fd.define_scalar(None, dtype=DataType.ComplexFloat)


def test_validate_compares_both_parts():
    x = complex_values("cpu", torch.complex64, n=4)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.conj(fd.from_pytorch(x)))
    fd.validate([x])  # against the reference evaluator
    # x and conj(x) differ in their imaginary parts only.
    with pytest.raises(loom.ValidationError):
        fd.validate([x], reference_outputs=[x])
