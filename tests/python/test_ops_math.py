# SPDX-License-Identifier: Apache-2.0
# nvFuser's further elementwise ops, its integer rules and its exception types (issue 36), in the
# style of nvFuser's Python tests: a fusion defined, executed, compared with torch as the oracle,
# on edge values (NaN, infinities, -0.0, the integer limits, shifts past the width, zero divisors).
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition

NAN, INF = float("nan"), float("inf")


def close(actual, expected, msg=""):
    assert actual.dtype == expected.dtype, msg
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=msg)


def float_values(device, dtype=torch.float32):
    edges = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1e-30, 1e30, 100.0,
             -100.0, 3.5, -2.5, 0.999, -0.999, 1.5]
    g = torch.Generator().manual_seed(36)
    rand = torch.rand(44, generator=g, dtype=torch.float64) * 6 - 3
    return torch.cat([torch.tensor(edges, dtype=torch.float64), rand]).to(dtype).to(device)


FLOAT_UNARY = {
    "acos": torch.acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh,
    "atan": torch.atan, "atanh": torch.atanh, "cosh": torch.cosh, "sinh": torch.sinh,
    "tan": torch.tan, "erfc": torch.erfc, "erfinv": torch.erfinv, "expm1": torch.expm1,
    "log10": torch.log10, "log1p": torch.log1p, "lgamma": torch.lgamma, "trunc": torch.trunc,
    "frac": torch.frac, "signbit": torch.signbit, "isfinite": torch.isfinite,
    "isneginf": torch.isneginf, "isposinf": torch.isposinf, "isreal": torch.isreal,
    "isnan": torch.isnan, "isinf": torch.isinf,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_unary_ops(device, dtype):
    x = float_values(device, dtype)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        for name in FLOAT_UNARY:
            fd.add_output(getattr(fd.ops, name)(t0))
    outs = fd.execute([x])
    for (name, fn), out in zip(FLOAT_UNARY.items(), outs):
        close(out, fn(x), msg=name)
    # -0.0 keeps its sign where the function is odd.
    for name in ("asin", "atan", "sinh", "tan", "erfinv", "expm1", "log1p", "trunc"):
        out = outs[list(FLOAT_UNARY).index(name)]
        assert torch.signbit(out[1]), name


def test_erfcinv(device):
    # torch has no erfcinv: erfcinv(y) = erfinv(1 - y) in double is the oracle away from y = 0.
    y = torch.tensor([0.0, 2.0, 1.0, 0.5, 1.5, 1e-3, 1.999, -0.5, 2.5, NAN], dtype=torch.float64)
    y = y.to(device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.erfcinv(fd.from_pytorch(y)))
    (out,) = fd.execute([y])
    close(out, torch.erfinv(1 - y))


def test_float_unary_of_integers_and_half(device):
    i = torch.tensor([0, 1, -1, 3, 100], dtype=torch.int32, device=device)
    h = torch.tensor([0.5, -0.25, 2.0], dtype=torch.bfloat16, device=device)
    with FusionDefinition() as fd:
        ti = fd.from_pytorch(i)
        th = fd.from_pytorch(h)
        fd.add_output(fd.ops.atan(ti))      # integers compute in Float32
        fd.add_output(fd.ops.trunc(ti))     # and keep their type here
        fd.add_output(fd.ops.signbit(ti))
        fd.add_output(fd.ops.isfinite(ti))
        fd.add_output(fd.ops.lgamma(th))    # bf16 computes in Float32
    outs = fd.execute([i, h])
    refs = [torch.atan(i), torch.trunc(i), torch.signbit(i), torch.isfinite(i),
            torch.lgamma(h.float())]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, msg=str(k))


# erfcx and digamma: nvFuser's ops that Loom gained by their entries in ir/op_types.h plus their
# math (issue 35). The oracle is torch.special in float64, rounded to the dtype: Loom computes
# both in double on every backend, where torch's float32 erfcx loses digits to exp(x^2).
ERFCX_DIGAMMA_EDGES = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, -2.0, -3.0, -2.5, 0.5, -0.5, 1e-30,
                       -1e-30, 10.0, 12.0, 26.0, 27.0, 30.0, -9.0, -26.0, -27.0, 1e30, -1e30,
                       1.4616321449683622, -100.5, 1e300, -1e300]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_erfcx_and_digamma(device, dtype):
    g = torch.Generator().manual_seed(35)
    rand = torch.cat([torch.rand(64, generator=g, dtype=torch.float64) * 60 - 30,
                      torch.rand(64, generator=g, dtype=torch.float64) * 6 - 3])
    x = torch.cat([torch.tensor(ERFCX_DIGAMMA_EDGES, dtype=torch.float64), rand]).to(dtype)
    x = x.to(device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.erfcx(t))
        fd.add_output(fd.ops.digamma(t))
    erfcx, psi = fd.execute([x])
    close(erfcx, torch.special.erfcx(x.double()).to(dtype), msg="erfcx")
    close(psi, torch.special.digamma(x.double()).to(dtype), msg="digamma")
    # torch's values at the edges: digamma's poles are NaN, its zeros of either sign infinite.
    assert psi[0].item() == -INF and psi[1].item() == INF
    assert all(torch.isnan(psi[i]) for i in (3, 4, 6, 7, 8))
    assert erfcx[2].item() == 0.0 and erfcx[3].item() == INF and erfcx[21].item() == INF


def test_erfcx_and_digamma_of_integers_and_scalars(device):
    i = torch.tensor([0, 1, -1, 3, 100, -7], dtype=torch.int32, device=device)
    with FusionDefinition() as fd:
        ti = fd.from_pytorch(i)
        fd.add_output(fd.ops.erfcx(ti))    # integers compute in Float32
        fd.add_output(fd.ops.digamma(ti))
        s = fd.define_scalar(0.5, dtype=DataType.Double)
        fd.add_output(fd.ops.add(ti, fd.ops.digamma(s)))  # a Scalar of a Scalar
    e, d, shifted = fd.execute([i])
    close(e, torch.special.erfcx(i.double()).float())
    close(d, torch.special.digamma(i.double()).float())
    close(shifted, i + torch.special.digamma(torch.tensor(0.5, dtype=torch.float64)).float())


def test_elementwise_ops_come_from_the_op_list():
    # fd.ops gets one method per name of loom._C.ops.unary_names / binary_names, the lists of
    # ir/op_types.h: cast (it needs a dtype) and ceil_div (index math) are left out, truediv
    # (true division; div truncates integers) is the one name added.
    from loom import _C

    unary, binary = _C.ops.unary_names, _C.ops.binary_names
    assert {"erfcx", "digamma", "isnan", "real", "bitwise_not"} <= set(unary)
    assert "cast" not in unary and "ceil_div" not in binary
    assert {"div", "truediv", "mod", "logical_right_shift"} <= set(binary)
    with FusionDefinition() as fd:
        names = dir(fd.ops)
        for name in unary + binary:
            assert name in names, name
            assert getattr(fd.ops, name).__name__ == name


def pairs(values, dtype, device):
    v = torch.tensor(values, dtype=dtype)
    a = v.repeat_interleave(len(values))
    b = v.repeat(len(values))
    return a.to(device), b.to(device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_binary_ops(device, dtype):
    a, b = pairs([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 3.0, -3.0, 5.5, -7.25, 1e-30], dtype,
                 device)
    ops = {
        "atan2": torch.atan2, "remainder": torch.remainder, "fmod": torch.fmod,
        "mod": torch.fmod, "nextafter": torch.nextafter, "div": torch.div,
        "truediv": torch.true_divide,
    }
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        for name in ops:
            fd.add_output(getattr(fd.ops, name)(ta, tb))
    outs = fd.execute([a, b])
    for (name, fn), out in zip(ops.items(), outs):
        close(out, fn(a, b), msg=name)


I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def int_values(dtype):
    v = [0, 1, -1, 2, -2, 3, -7, 12, -18, 31, 32, 33, 63, 64, -33, 1000003]
    if dtype == torch.int32:
        return v + [I32_MAX, I32_MIN, I32_MAX - 1, I32_MIN + 1]
    return v + [I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, 2**53 + 1]


INT_BINARY = {
    "gcd": torch.gcd, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor, "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift, "add": torch.add, "sub": torch.sub,
    "mul": torch.mul, "maximum": torch.maximum,
}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_binary_ops(device, dtype):
    a, b = pairs(int_values(dtype), dtype, device)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        for name in INT_BINARY:
            fd.add_output(getattr(fd.ops, name)(ta, tb))
    outs = fd.execute([a, b])
    for (name, fn), out in zip(INT_BINARY.items(), outs):
        close(out, fn(a, b), msg=name)


def logical_right_shift(a, b, bits):
    # The value's bits as unsigned of its width, shifted; counts outside [0, width) give 0.
    out = []
    for x, s in zip(a.tolist(), b.tolist()):
        out.append(0 if s < 0 or s >= bits else (x % 2**bits) >> s)
    wrapped = [v - 2**bits if v >= 2 ** (bits - 1) else v for v in out]
    return torch.tensor(wrapped, dtype=a.dtype)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_logical_right_shift(device, dtype):
    a, b = pairs(int_values(dtype), dtype, device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.logical_right_shift(fd.from_pytorch(a), fd.from_pytorch(b)))
    (out,) = fd.execute([a, b])
    bits = 32 if dtype == torch.int32 else 64
    close(out.cpu(), logical_right_shift(a.cpu(), b.cpu(), bits))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_division_rules(device, dtype):
    # torch raises for an integer division by zero on the CPU: the oracle is torch on nonzero
    # divisors, and Loom's documented 0 (docs/ops.md) for the zero ones.
    a, b = pairs(int_values(dtype), dtype, device)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.div(ta, tb))
        fd.add_output(fd.ops.truediv(ta, tb))
        fd.add_output(fd.ops.fmod(ta, tb))
        fd.add_output(fd.ops.mod(ta, tb))
        fd.add_output(fd.ops.remainder(ta, tb))
    div, true, fmod, mod, rem = fd.execute([a, b])
    # torch itself traps (SIGFPE) on the most negative value by -1: that pair is checked apart.
    low = torch.iinfo(dtype).min
    overflow = (a == low) & (b == -1)
    nz = (b != 0) & ~overflow
    safe_b = torch.where(nz, b, torch.ones_like(b))
    zero = torch.zeros_like(a)
    trunc = torch.where(nz, torch.div(a, safe_b, rounding_mode="trunc"), zero)
    trunc[overflow] = low
    close(div, trunc, msg="div truncates")
    close(true, torch.true_divide(a, b), msg="truediv")
    close(fmod, torch.where(nz, torch.fmod(a, safe_b), zero), msg="fmod")
    close(mod, torch.where(nz, torch.fmod(a, safe_b), zero), msg="mod")
    close(rem, torch.where(nz, torch.remainder(a, safe_b), zero), msg="remainder")
    # By zero: 0; the most negative value by -1 wraps to itself, remainder 0.
    assert (div[b == 0] == 0).all() and (rem[b == 0] == 0).all()
    assert overflow.sum() == 1


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_pow_and_overflow(device, dtype):
    base = torch.tensor([0, 1, -1, -1, 2, 3, -2, 7, 0, 2, 3], dtype=dtype, device=device)
    expo = torch.tensor([-1, -5, -3, -4, -2, 40, 63, 31, 0, 62, 2], dtype=dtype, device=device)
    hi = torch.iinfo(dtype).max
    lo = torch.iinfo(dtype).min
    x = torch.tensor([hi, lo, lo, -5, hi - 3], dtype=dtype, device=device)
    with FusionDefinition() as fd:
        tb, te, tx = fd.from_pytorch(base), fd.from_pytorch(expo), fd.from_pytorch(x)
        fd.add_output(fd.ops.pow(tb, te))
        fd.add_output(fd.ops.add(tx, tx))
        fd.add_output(fd.ops.mul(tx, 3))
        fd.add_output(fd.ops.sub(tx, hi))
        fd.add_output(fd.ops.neg(tx))
        fd.add_output(fd.ops.abs(tx))
        fd.add_output(fd.ops.bitwise_not(tx))
    outs = fd.execute([base, expo, x])
    refs = [torch.pow(base, expo), x + x, x * 3, x - hi, torch.neg(x), torch.abs(x),
            torch.bitwise_not(x)]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, msg=str(k))
    # The kernel text has no signed overflow (undefined in C++): the wrapping helpers compute it.
    code = fd.last_cuda_code()
    for helper in ("loom_wrap_add", "loom_wrap_mul", "loom_wrap_sub", "loom_wrap_neg",
                   "loom_wrap_abs"):
        assert helper + "<" in code, helper


def test_bool_bitwise_ops(device):
    a, b = pairs([False, True], torch.bool, device)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.bitwise_and(ta, tb))
        fd.add_output(fd.ops.bitwise_or(ta, tb))
        fd.add_output(fd.ops.bitwise_xor(ta, tb))
        fd.add_output(fd.ops.bitwise_not(ta))
    outs = fd.execute([a, b])
    refs = [a & b, a | b, a ^ b, ~a]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, msg=str(k))


def test_composites(device):
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(2, 4, 5, generator=g) * 2).to(device)
    y = torch.randn(2, 4, 5, generator=g).to(device)
    z = torch.randn(5, generator=g).to(device)
    x[0, 0, 0] = NAN
    with FusionDefinition() as fd:
        tx, ty, tz = fd.from_pytorch(x), fd.from_pytorch(y), fd.from_pytorch(z)
        fd.add_output(fd.ops.addcmul(tx, ty, tz, 0.5))
        fd.add_output(fd.ops.threshold(tx, 0.25, -3.0))
        fd.add_output(fd.ops.triu(tx))
        fd.add_output(fd.ops.triu(ty, -1))
        fd.add_output(fd.ops.triu(ty, 2))
    outs = fd.execute([x, y, z])
    refs = [torch.addcmul(x, y, z, value=0.5), torch.nn.functional.threshold(x, 0.25, -3.0),
            torch.triu(x), torch.triu(y, -1), torch.triu(y, 2)]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, msg=str(k))


def test_scalar_forms(device):
    # nvFuser code computes sizes with scalar ops: div truncates, truediv does not, signbit,
    # bitwise_and and fmod take Scalars.
    x = torch.arange(12.0, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        n = fd.define_scalar(dtype=DataType.Int)
        q = fd.ops.div(n, 4)
        r = fd.ops.truediv(n, 4)
        s = fd.ops.cast(fd.ops.bitwise_and(fd.ops.signbit(fd.ops.neg(n)), fd.ops.ne(n, 0)),
                        DataType.Int)
        fd.add_output(fd.ops.mul(t, q))
        fd.add_output(fd.ops.mul(t, r))
        fd.add_output(fd.ops.add(t, s))
        fd.add_output(fd.ops.add(t, fd.ops.fmod(n, 4)))
    o1, o2, o3, o4 = fd.execute([x, 7])
    close(o1, x * 1)
    close(o2, x * 1.75)
    close(o3, x + 1)
    close(o4, x + 3)


def test_error_types():
    # nvFuser raises RuntimeError for its checks and TypeError for arguments its bindings cannot
    # take; Loom's errors are instances of both families, and name the argument.
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        with pytest.raises(RuntimeError, match="dimension 5 is out of range"):
            fd.ops.sum(t, [5])
        with pytest.raises(IndexError, match="dimension -3 is out of range"):
            fd.ops.permute(t, [-3, 0])
        with pytest.raises(RuntimeError, match="size: dim 2 is out of range"):
            fd.ops.size(t, 2)
        with pytest.raises(TypeError, match="argument b must be a TensorView, a Scalar"):
            fd.ops.add(t, "x")
        with pytest.raises(RuntimeError, match="argument b must be a TensorView, a Scalar"):
            fd.ops.add(t, "x")
        with pytest.raises(TypeError, match="dims must be an int or a list of ints"):
            fd.ops.sum(t, object())
        with pytest.raises(RuntimeError, match="bitwise_and: takes integers or Bool"):
            fd.ops.bitwise_and(t, t)
        with pytest.raises(RuntimeError, match="gcd: takes integers"):
            fd.ops.gcd(i, t)
        with pytest.raises(RuntimeError, match="triu: .* has rank 1"):
            fd.ops.triu(i)
    assert issubclass(loom.UserIndexError, loom.UserError)
    assert issubclass(loom.UserTypeError, TypeError)


def test_unsupported_ops_name_themselves():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        for name in ("var_mean_welford", "size_of", "uniform_like"):
            with pytest.raises(loom.NotSupportedError, match=f"fd.ops.{name} is not supported"):
                getattr(fd.ops, name)(t)
