# SPDX-License-Identifier: Apache-2.0
# fd.ops.matmul and fd.ops.linear against torch.matmul and torch.nn.functional.linear: torch's
# rank rules (1-D, 2-D, batched with broadcasting), transposed inputs, linear with and without a
# bias, f32 / bf16 / f16 with f32 accumulation, pointwise ops around the product (three segments,
# the middle one a matmul), the printed definition, and the errors.
import pytest
import torch
import torch.nn.functional as F

import loom
from loom.direct import DataType, FusionDefinition

_DTYPES = {
    torch.float32: (DataType.Float, 1e-5, 1e-5),
    torch.bfloat16: (DataType.BFloat16, 2e-2, 2e-2),
    torch.float16: (DataType.Half, 2e-3, 2e-3),
}


def _rand(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float32) * 2 - 1).to(dtype).to(device)


def _expected(fn, *tensors):
    # torch on the CPU in float64: the reference, rounded to the dtype like Loom's output.
    out = fn(*(t.cpu().double() if t is not None else None for t in tensors))
    return out.to(tensors[0].dtype)


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((7,), (7,)),
        ((5,), (5, 3)),
        ((4, 5), (5,)),
        ((33, 70), (70, 65)),
        ((2, 1, 3, 4), (3, 4, 5)),
        ((2, 3, 4), (4, 6)),
        ((4,), (2, 4, 3)),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_matmul_matches_torch(device, a_shape, b_shape, dtype):
    a = _rand(a_shape, dtype, device, 1)
    b = _rand(b_shape, dtype, device, 2)
    with FusionDefinition() as fd:
        ta = fd.from_pytorch(a)
        tb = fd.from_pytorch(b)
        fd.add_output(fd.ops.matmul(ta, tb))
    (out,) = fd.execute([a, b])
    want = _expected(torch.matmul, a, b)
    assert out.shape == torch.matmul(a, b).shape and out.dtype == dtype
    _, rtol, atol = _DTYPES[dtype]
    torch.testing.assert_close(out.cpu(), want, rtol=rtol, atol=atol)


def test_transposed_inputs(device):
    a = _rand((9, 6), torch.float32, device, 3).t()
    b = _rand((2, 5, 9), torch.float32, device, 4).transpose(1, 2)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.matmul(fd.from_pytorch(a), fd.from_pytorch(b)))
    (out,) = fd.execute([a, b])
    torch.testing.assert_close(out.cpu(), _expected(torch.matmul, a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias_shape", [None, (), (7,)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_linear_matches_torch(device, bias_shape, dtype):
    x = _rand((2, 5, 24), dtype, device, 5)
    w = _rand((7, 24), dtype, device, 6)
    bias = None if bias_shape is None else _rand(bias_shape, dtype, device, 7)
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        tw = fd.from_pytorch(w)
        tb = None if bias is None else fd.from_pytorch(bias)
        fd.add_output(fd.ops.linear(tx, tw, tb) if tb is not None else fd.ops.linear(tx, tw))
    (out,) = fd.execute([x, w] + ([] if bias is None else [bias]))
    _, rtol, atol = _DTYPES[dtype]
    torch.testing.assert_close(out.cpu(), _expected(F.linear, x, w, bias), rtol=rtol, atol=atol)


def test_pointwise_around_linear_is_three_segments(device):
    x = _rand((8, 32), torch.bfloat16, device, 8)
    w = _rand((16, 32), torch.bfloat16, device, 9)
    b = _rand((16,), torch.bfloat16, device, 10)
    with FusionDefinition() as fd:
        tx, tw, tb = fd.from_pytorch(x), fd.from_pytorch(w), fd.from_pytorch(b)
        h = fd.ops.cast(fd.ops.relu(fd.ops.mul(tx, 2.0)), DataType.BFloat16)
        y = fd.ops.linear(h, tw, tb)
        fd.add_output(fd.ops.cast(fd.ops.tanh(y), DataType.BFloat16))
    (out,) = fd.execute([x, w, b])
    h = torch.relu(x.cpu().float() * 2).to(torch.bfloat16)
    want = torch.tanh(_expected(F.linear, h, w, b).float()).to(torch.bfloat16)
    torch.testing.assert_close(out.cpu(), want, rtol=2e-2, atol=2e-2)
    text = str(fd)
    assert "fd.ops.linear(" in text, text


def test_output_domain_ends_with_the_contracted_reduction():
    """As nvFuser's, a linear's (and matmul's) output logical domain is [..., m, n, r{k}]: ndim,
    shape and size count only the non-reduction dims, axis() indexes the loop domain (r{k} last),
    and a pointwise consumer of it has no reduction."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 3, 8], contiguity=True)
        w = fd.define_tensor(shape=[5, 8], contiguity=True)
        out = fd.ops.linear(x, w)
        dot = fd.ops.matmul(fd.define_tensor(shape=[8], contiguity=True),
                            fd.define_tensor(shape=[8], contiguity=True))
        y = fd.ops.relu(out)
        fd.add_output(y)
        fd.add_output(dot)
        assert out.ndim == 3
        assert out.num_dims() == 4
        logical = out.get_logical_domain()
        assert [i.is_reduction() for i in logical] == [False, False, False, True]
        assert out.axis(-1).is_reduction()
        assert str(out.axis(-1).extent()) == "8"
        assert [str(s) for s in fd.ops.shape(out)] == ["2", "3", "5"]
        assert str(out.size(-1)) == "5"
        assert dot.ndim == 0 and dot.num_dims() == 1
        assert y.ndim == 3 and y.num_dims() == 3
    xs, ws = torch.randn(2, 3, 8), torch.randn(5, 8)
    a, b = torch.randn(8), torch.randn(8)
    got_y, got_dot = fd.execute([xs, ws, a, b])
    torch.testing.assert_close(got_y, torch.relu(F.linear(xs.double(), ws.double())).float())
    torch.testing.assert_close(got_dot, (a.double() @ b.double()).float())


def test_printed_definition_names_the_ops():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.matmul(a, b))
        fd.add_output(fd.ops.linear(a, b))
    text = str(fd)
    assert "= fd.ops.matmul(tv0, tv1)" in text, text
    assert "= fd.ops.linear(tv0, tv1)" in text, text


def test_errors_name_the_operands():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, 4], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[5, 3], contiguity=True, dtype=DataType.Float)
        with pytest.raises(loom.UserError, match="matmul: the contracted sizes differ"):
            fd.ops.matmul(a, b)
        c = fd.define_tensor(shape=[4, 3], contiguity=True, dtype=DataType.BFloat16)
        with pytest.raises(loom.UserError, match="the operands need one dtype"):
            fd.ops.matmul(a, c)
        i = fd.define_tensor(shape=[2, 4], contiguity=True, dtype=DataType.Int)
        with pytest.raises(loom.UserError, match="matmul multiplies f32, bf16 or f16"):
            fd.ops.matmul(i, i)


@pytest.mark.parametrize(
    "a_shape,b_shape,ends",
    [
        ((12, 16), (4, 16, 8), [3, 3, 7, 12]),   # rows by group (group 1 empty)
        ((3, 8, 16), (16, 24), [8, 16, 24]),     # columns by group
        ((8, 32), (32, 16), [16, 16, 32]),       # parts of k by group (group 1 empty)
        ((2, 8, 16), (2, 16, 8), None),          # one product per group
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grouped_mm_matches_torch(device, a_shape, b_shape, ends, dtype):
    """fd.ops.grouped_mm against torch._grouped_mm in its four operand forms."""
    ldtype = _DTYPES[dtype][0]
    a, b = _rand(a_shape, dtype, device, 11), _rand(b_shape, dtype, device, 12)
    offs = None if ends is None else torch.tensor(ends, dtype=torch.int32, device=device)
    with FusionDefinition() as fd:
        ta = fd.define_tensor([-1] * len(a_shape), contiguity=True, dtype=ldtype)
        tb = fd.define_tensor([-1] * len(b_shape), contiguity=True, dtype=ldtype)
        to = None if offs is None else fd.define_tensor([-1], contiguity=True,
                                                         dtype=DataType.Int32)
        fd.add_output(fd.ops.grouped_mm(ta, tb, to))
    (got,) = fd.execute([a, b] + ([] if offs is None else [offs]))
    want = torch._grouped_mm(a.cpu().float(), b.cpu().float(),
                             offs=None if offs is None else offs.cpu()).to(dtype)
    _, rtol, atol = _DTYPES[dtype]
    torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol)


def test_grouped_mm_rows_past_the_last_offset_are_zero():
    """torch leaves rows past the last offset unwritten; Loom's are 0."""
    a, b = torch.randn(6, 4), torch.randn(2, 4, 3)
    with FusionDefinition() as fd:
        ta = fd.define_tensor([-1, 4], contiguity=True)
        tb = fd.define_tensor([2, 4, 3], contiguity=True)
        to = fd.define_tensor([2], contiguity=True, dtype=DataType.Int32)
        fd.add_output(fd.ops.grouped_mm(ta, tb, to))
    (got,) = fd.execute([a, b, torch.tensor([2, 4], dtype=torch.int32)])
    torch.testing.assert_close(got[:2], a[:2] @ b[0])
    torch.testing.assert_close(got[2:4], a[2:4] @ b[1])
    assert (got[4:] == 0).all()


def test_grouped_mm_by_parts_of_k_keeps_other_groups_infinities_out():
    """Each group reads only its part of k, as torch slices it: an inf in another group's part
    of either operand leaves this group's product finite (it was a NaN, inf * 0)."""
    a, b = torch.randn(3, 8), torch.randn(8, 2)
    a[0, 6] = float("inf")    # group 1's part of k
    b[1, 1] = float("-inf")   # group 0's part of k
    with FusionDefinition() as fd:
        ta = fd.define_tensor([-1, -1], contiguity=True)
        tb = fd.define_tensor([-1, -1], contiguity=True)
        to = fd.define_tensor([2], contiguity=True, dtype=DataType.Int32)
        fd.add_output(fd.ops.grouped_mm(ta, tb, to))
    (got,) = fd.execute([a, b, torch.tensor([4, 8], dtype=torch.int32)])
    want = torch.stack([a[:, :4] @ b[:4], a[:, 4:] @ b[4:]])
    torch.testing.assert_close(got, want)
    assert torch.isfinite(got[0, :, 0]).all() and torch.isfinite(got[1, 1:]).all()


def test_grouped_mm_errors_name_the_operand():
    with FusionDefinition() as fd:
        ta = fd.define_tensor([4, 8], contiguity=True)
        tb = fd.define_tensor([2, 8, 3], contiguity=True)
        with pytest.raises(loom.UserError, match="need offsets"):
            fd.ops.grouped_mm(ta, tb)
