# SPDX-License-Identifier: Apache-2.0
"""The 8- and 16-bit and unsigned integer types (issue 36): torch int8, int16, uint8, uint16,
uint32 and uint64 tensors in and out, DataType names as nvFuser spells them, torch's type
promotion, two's complement wrapping at the integer limits, logical right shifts of unsigned
types, casts both ways (negative floats to unsigned types wrap, as torch on the CPU), sums into
int64 and max/min reductions, a uint8 mask in where, and the index dtypes torch refuses. torch is
the oracle where it implements the op on the CPU; for uint16/32/64, whose CPU kernels torch
mostly lacks, the oracle is the same arithmetic on Python integers, wrapped to the width."""

import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition

NARROW = [torch.int8, torch.int16, torch.uint8]  # torch's CPU kernels cover these
WIDE_UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]
ALL = NARROW + WIDE_UNSIGNED

NVFUSER_NAME = {
    torch.int8: DataType.Char, torch.int16: DataType.Short, torch.uint8: DataType.Byte,
    torch.uint16: DataType.UInt16, torch.uint32: DataType.UInt32, torch.uint64: DataType.UInt64,
}


def bits(dtype):
    return torch.iinfo(dtype).bits


def signed(dtype):
    return torch.iinfo(dtype).min < 0


def wrap(v, dtype):
    """A Python integer wrapped to dtype's width (two's complement for signed types)."""
    n = bits(dtype)
    v %= 2**n
    return v - 2**n if signed(dtype) and v >= 2 ** (n - 1) else v


def edge_values(dtype):
    info = torch.iinfo(dtype)
    v = [0, 1, 2, 3, 7, 9, info.max, info.max - 1, info.min, info.min + 1, info.max // 3]
    v += [-1, -2, -7] if signed(dtype) else [bits(dtype), bits(dtype) - 1, bits(dtype) + 2]
    return v


def pairs(dtype, device):
    v = edge_values(dtype)
    a = [x for x in v for _ in v]
    b = [y for _ in v for y in v]
    return (torch.tensor(a, dtype=dtype, device=device),
            torch.tensor(b, dtype=dtype, device=device))


def as_ints(t):
    # uint64 values past 2^63 read back through int64's bits
    if t.dtype == torch.uint64:
        return [x % 2**64 for x in t.cpu().view(torch.int64).tolist()]
    return t.cpu().tolist()


def check(out, expected, dtype, msg):
    assert out.dtype == dtype, msg
    assert as_ints(out) == [wrap(x, dtype) for x in expected], msg


def test_datatype_names_and_torch_mapping():
    # nvFuser's names (its Python enum has UInt64; the others are its C++ names) and torch's
    for torch_dtype, dt in NVFUSER_NAME.items():
        assert loom.direct._types.torch_to_dtype(torch_dtype) is dt
    assert DataType.Int8 is DataType.Char and DataType.UInt8 is DataType.Byte
    assert DataType.Int16 is DataType.Short
    assert repr(DataType.Byte) == "DataType.Byte"
    assert not hasattr(DataType, "Float4_e2m1fn")  # still refused, by name


@pytest.mark.parametrize("dtype", ALL)
def test_limits_round_trip(device, dtype):
    # the integer limits go in through DLPack and come out unchanged, in the same torch dtype
    info = torch.iinfo(dtype)
    x = torch.tensor([info.min, info.max, 0, 1, info.max - 1], dtype=dtype, device=device)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=NVFUSER_NAME[dtype])
        fd.add_output(fd.ops.set(t))
        fd.add_output(fd.ops.add(t, 1))  # max + 1 wraps to min
    same, plus1 = fd.execute([x])
    assert same.dtype == dtype and as_ints(same) == as_ints(x)
    check(plus1, [v + 1 for v in as_ints(x)], dtype, "add wraps")


INT_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "maximum": torch.maximum, "minimum": torch.minimum,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift,
}


@pytest.mark.parametrize("dtype", NARROW)
def test_binary_ops_against_torch(device, dtype):
    a, b = pairs(dtype, device)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        for name in INT_BINARY:
            fd.add_output(getattr(fd.ops, name)(ta, tb))
        fd.add_output(fd.ops.neg(ta))
        fd.add_output(fd.ops.abs(ta))
        fd.add_output(fd.ops.bitwise_not(ta))
    outs = fd.execute([a, b])
    expected = [fn(a.cpu(), b.cpu()) for fn in INT_BINARY.values()]
    expected += [torch.neg(a.cpu()), torch.abs(a.cpu()), torch.bitwise_not(a.cpu())]
    for name, out, ref in zip(list(INT_BINARY) + ["neg", "abs", "bitwise_not"], outs, expected):
        assert out.dtype == dtype, name
        assert torch.equal(out.cpu(), ref), name


@pytest.mark.parametrize("dtype", NARROW)
def test_division_against_torch(device, dtype):
    # torch raises for a division by zero and traps on min / -1: those pairs are Loom's rule (0;
    # min itself, remainder 0), the others torch's
    a, b = pairs(dtype, device)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.div(ta, tb))
        fd.add_output(fd.ops.fmod(ta, tb))
        fd.add_output(fd.ops.remainder(ta, tb))
    div, fmod, rem = (o.cpu() for o in fd.execute([a, b]))
    a, b = a.cpu(), b.cpu()
    low = torch.iinfo(dtype).min
    overflow = (a == low) & (b == -1) if signed(dtype) else torch.zeros_like(a, dtype=torch.bool)
    ok = (b != 0) & ~overflow
    sb = torch.where(ok, b, torch.ones_like(b))
    assert torch.equal(div[ok], torch.div(a, sb, rounding_mode="trunc")[ok])
    assert torch.equal(fmod[ok], torch.fmod(a, sb)[ok])
    assert torch.equal(rem[ok], torch.remainder(a, sb)[ok])
    assert (div[b == 0] == 0).all() and (fmod[b == 0] == 0).all() and (rem[b == 0] == 0).all()
    assert (div[overflow] == low).all() and (fmod[overflow] == 0).all()


def py_div(x, y):
    return 0 if y == 0 else x // y  # operands are non-negative here


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_wide_unsigned_ops(device, dtype):
    # torch's CPU has few kernels for these: the oracle is Python integers wrapped to the width
    a, b = pairs(dtype, device)
    n = bits(dtype)
    ops = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "div": py_div, "fmod": lambda x, y: 0 if y == 0 else x % y,
        "remainder": lambda x, y: 0 if y == 0 else x % y,
        "bitwise_and": lambda x, y: x & y, "bitwise_xor": lambda x, y: x ^ y,
        "maximum": max, "minimum": min,
        "bitwise_left_shift": lambda x, y: 0 if y >= n else x << y,
        "bitwise_right_shift": lambda x, y: 0 if y >= n else x >> y,  # logical: unsigned
    }
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        for name in ops:
            fd.add_output(getattr(fd.ops, name)(ta, tb))
        fd.add_output(fd.ops.neg(ta))
        fd.add_output(fd.ops.abs(ta))
        fd.add_output(fd.ops.bitwise_not(ta))
        fd.add_output(fd.ops.lt(ta, tb))
    outs = fd.execute([a, b])
    xs, ys = as_ints(a), as_ints(b)
    for (name, fn), out in zip(ops.items(), outs):
        check(out, [fn(x, y) for x, y in zip(xs, ys)], dtype, name)
    check(outs[-4], [-x for x in xs], dtype, "neg wraps")
    check(outs[-3], xs, dtype, "abs of unsigned is the value")
    check(outs[-2], [~x for x in xs], dtype, "bitwise_not")
    assert outs[-1].cpu().tolist() == [x < y for x, y in zip(xs, ys)]
    # where torch has the CPU kernel, it agrees (which kernels exist for these dtypes differs
    # between torch versions: 2.11's CPU has no maximum for uint16/32/64)
    for index, fn in ((2, torch.mul), (8, torch.maximum)):
        try:
            want = fn(a.cpu(), b.cpu())
        except (NotImplementedError, RuntimeError):
            continue
        assert torch.equal(outs[index].cpu(), want)


@pytest.mark.parametrize("dtype", ALL)
def test_casts_both_ways(device, dtype):
    # floats in int32's range (negative ones included) convert as torch on the CPU: truncated
    # and wrapped to the width (-1.0 is 255 as uint8); integers to float32 / float64 as torch
    f = torch.tensor([-1.0, -1.5, -129.0, 200.7, -300.7, 70000.0, 0.0, 3.99, -0.5, 65535.0,
                      -70000.0, 1e9], dtype=torch.float32, device=device)
    i = torch.tensor(edge_values(dtype), dtype=dtype, device=device)
    with FusionDefinition() as fd:
        tf, ti = fd.from_pytorch(f), fd.from_pytorch(i)
        fd.add_output(fd.ops.cast(tf, NVFUSER_NAME[dtype]))
        fd.add_output(fd.ops.cast(ti, DataType.Float))
        fd.add_output(fd.ops.cast(ti, DataType.Double))
        fd.add_output(fd.ops.cast(ti, DataType.Int))
    from_float, to_f32, to_f64, to_i64 = (o.cpu() for o in fd.execute([f, i]))
    assert from_float.dtype == dtype and torch.equal(from_float, f.cpu().to(dtype))
    assert torch.equal(to_f32, i.cpu().to(torch.float32))
    assert torch.equal(to_f64, i.cpu().to(torch.float64))
    assert to_i64.tolist() == [wrap(x, torch.int64) for x in as_ints(i)]


@pytest.mark.parametrize("dtype", ALL)
def test_sum_into_int64_and_max_min(device, dtype):
    x = torch.tensor(edge_values(dtype) * 3, dtype=dtype, device=device).reshape(3, -1)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t, [1]))
        fd.add_output(fd.ops.max(t, [1]))
        fd.add_output(fd.ops.min(t, [1]))
    s, mx, mn = fd.execute([x])
    assert s.dtype == torch.int64 and torch.equal(s.cpu(), x.cpu().sum(1))  # torch: int64 too
    rows = [as_ints(r) for r in x.cpu()]
    check(mx, [max(r) for r in rows], dtype, "max")
    check(mn, [min(r) for r in rows], dtype, "min")


def test_promotion_as_torch(device):
    u8 = torch.tensor([255, 0, 7], dtype=torch.uint8, device=device)
    i8 = torch.tensor([-128, 127, -1], dtype=torch.int8, device=device)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(u8), fd.from_pytorch(i8)
        fd.add_output(fd.ops.add(a, b))  # uint8 + int8 is int16
        fd.add_output(fd.ops.mul(a, 2))  # a number keeps uint8, and wraps
        fd.add_output(fd.ops.add(a, 0.5))  # an int tensor and a float number: float32
    s, m, f = fd.execute([u8, i8])
    for out, ref in [(s, u8.cpu() + i8.cpu()), (m, u8.cpu() * 2), (f, u8.cpu() + 0.5)]:
        assert out.dtype == ref.dtype and torch.equal(out.cpu(), ref)


def test_wide_unsigned_promotion_is_error():
    # torch defines no promotion of uint16/32/64 with another integer type; neither does Loom
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.UInt32)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        with pytest.raises(loom.UserError, match="type promotion of u32 with i32 is not defined"):
            fd.ops.add(a, b)


def test_uint8_mask_in_where(device):
    mask = torch.tensor([0, 1, 255, 0, 3], dtype=torch.uint8, device=device)
    x = torch.arange(5, dtype=torch.float32, device=device)
    y = -x
    with FusionDefinition() as fd:
        tm, tx, ty = fd.from_pytorch(mask), fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.where(fd.ops.ne(tm, 0), tx, ty))
        fd.add_output(fd.ops.where(fd.ops.cast(tm, DataType.Bool), tx, ty))
    a, b = fd.execute([mask, x, y])
    ref = torch.where(mask.cpu() != 0, x.cpu(), y.cpu())
    assert torch.equal(a.cpu(), ref) and torch.equal(b.cpu(), ref)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8])
def test_narrow_index_is_error(dtype):
    # torch's index_select takes int32 / int64 indices only; so does Loom, naming the index
    with pytest.raises(RuntimeError):
        torch.index_select(torch.zeros(4), 0, torch.tensor([1, 2], dtype=dtype))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        idx = fd.define_tensor(shape=[-1], dtype=NVFUSER_NAME[dtype])
        with pytest.raises(loom.UserError, match="an index tensor is i32 or i64"):
            fd.ops.index_select(x, idx, 0)


def test_scalars_of_the_new_types(device):
    # a scalar input and a constant of DataType.Byte: the values wrap as uint8 arithmetic does
    x = torch.tensor([250, 3, 7], dtype=torch.uint8, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.define_scalar(None, dtype=DataType.Byte)
        c = fd.define_scalar(10, dtype=DataType.Byte)
        fd.add_output(fd.ops.add(t, s))
        fd.add_output(fd.ops.mul(t, c))
    added, scaled = fd.execute([x, 9])
    assert added.dtype == torch.uint8 and torch.equal(added.cpu(), x.cpu() + 9)
    assert scaled.dtype == torch.uint8 and torch.equal(scaled.cpu(), x.cpu() * 10)
