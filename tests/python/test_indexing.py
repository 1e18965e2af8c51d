# SPDX-License-Identifier: Apache-2.0
# Indexing ops through loom.direct under nvFuser's names (index_select, gather, take_along_axis,
# scatter, embedding_fwd; Loom's scatter_add) against torch on the same inputs, on each device the
# python tier runs; out-of-range indices raise loom's error naming the op and the value.
import pytest
import torch

import loom

from loom.direct import DataType, FusionDefinition


def _inputs(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 9, generator=g)
    return x.to(device), g


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_gather_take_along_axis(device, index_dtype, dim):
    x, g = _inputs(device)
    n = x.shape[dim]
    sel = torch.randint(0, n, (5,), generator=g, dtype=index_dtype).to(device)
    shape = list(x.shape)
    shape[dim] = 4
    small = [min(s, 3) for s in x.shape]
    small[dim] = 7
    gat = torch.randint(0, n, small, generator=g, dtype=index_dtype).to(device)
    tak = torch.randint(0, n, shape, generator=g, dtype=index_dtype).to(device)
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        ts = fd.from_pytorch(sel)
        tg = fd.from_pytorch(gat)
        tt = fd.from_pytorch(tak)
        fd.add_output(fd.ops.index_select(tx, ts, dim))
        fd.add_output(fd.ops.gather(tx, tg, dim))
        fd.add_output(fd.ops.take_along_axis(tx, tt, dim))
    a, b, c = fd.execute([x, sel, gat, tak])
    torch.testing.assert_close(a, torch.index_select(x, dim, sel.long()), rtol=0, atol=0)
    torch.testing.assert_close(b, torch.gather(x, dim, gat.long()), rtol=0, atol=0)
    torch.testing.assert_close(c, torch.take_along_dim(x, tak.long(), dim), rtol=0, atol=0)


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_and_scatter_add(device, dim):
    x, g = _inputs(device)
    src = torch.randn(8, 8, generator=g).to(device)
    idx_shape = [4, 5]
    idx_shape[dim] = 8
    idx = torch.randint(0, x.shape[dim], idx_shape, generator=g).to(device)
    # scatter: distinct targets along dim per column/row, so the result is deterministic
    perm = torch.stack([torch.randperm(x.shape[dim], generator=g) for _ in range(x.shape[1 - dim])],
                       dim=1 - dim).to(device)
    perm_src = torch.randn(*perm.shape, generator=g).to(device)
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        ti = fd.from_pytorch(idx)
        ts = fd.from_pytorch(src)
        tp = fd.from_pytorch(perm)
        tq = fd.from_pytorch(perm_src)
        fd.add_output(fd.ops.scatter_add(tx, ti, ts, dim))
        fd.add_output(fd.ops.scatter(tx, tp, tq, dim))
    a, b = fd.execute([x, idx, src, perm, perm_src])
    torch.testing.assert_close(a, x.scatter_add(dim, idx, src[: idx_shape[0], : idx_shape[1]]))
    torch.testing.assert_close(b, x.scatter(dim, perm, perm_src), rtol=0, atol=0)


def test_one_tensor_in_two_roles(device):
    """x.scatter_add(1, i, x), t gathered and index_selected by itself: one tensor is both the
    positional input and an operand read at indexed positions (it segfaulted before the fix)."""
    g = torch.Generator().manual_seed(11)
    x = torch.rand(4, 6, generator=g).to(device)
    i = torch.randint(0, 6, (4, 6), generator=g).to(device)
    t = torch.tensor([[2, 0, 1], [1, 1, 0], [0, 2, 2]]).to(device)
    v = torch.tensor([2, 0, 1]).to(device)
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        ti = fd.from_pytorch(i)
        tt = fd.from_pytorch(t)
        tv = fd.from_pytorch(v)
        fd.add_output(fd.ops.scatter_add(tx, ti, tx, 1))
        fd.add_output(fd.ops.gather(tt, tt, 1))
        fd.add_output(fd.ops.index_select(tv, tv, 0))
    a, b, c = fd.execute([x, i, t, v])
    torch.testing.assert_close(a, x.scatter_add(1, i, x))
    torch.testing.assert_close(b, torch.gather(t, 1, t), rtol=0, atol=0)
    torch.testing.assert_close(c, torch.index_select(v, 0, v), rtol=0, atol=0)


def test_embedding_fwd(device):
    g = torch.Generator().manual_seed(1)
    w = torch.randn(20, 16, generator=g).to(device)
    ids = torch.randint(0, 20, (3, 5), generator=g).to(device)
    with FusionDefinition() as fd:
        ti = fd.from_pytorch(ids)
        tw = fd.from_pytorch(w)
        out = fd.ops.embedding_fwd(ti, tw, None, None, 2.0, False, False)
        fd.add_output(fd.ops.mul(out, 2.0))
    (got,) = fd.execute([ids, w])
    torch.testing.assert_close(got, torch.nn.functional.embedding(ids, w) * 2.0, rtol=0, atol=0)


def test_out_of_range_index_raises(device):
    x, _ = _inputs(device)
    idx = torch.tensor([0, 9, 2], device=device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.index_select(fd.from_pytorch(x), fd.from_pytorch(idx), 1))
    with pytest.raises(loom.UserError, match="index_select: index value 9 in T1 is out of range "
                                             r"for dimension 1 of T0 \(size 9\); indices must "
                                             r"lie in \[0, 9\)"):
        fd.execute([x, idx])


@pytest.mark.parametrize(
    "acc_shape, index_shape, dtype",
    [
        ((10, 8), (40,), torch.float32),          # an embedding's weight gradient
        ((10, 8), (40, 1), torch.float32),        # the index as a column, as nvFuser also takes it
        ((50, 3, 4), (5,), torch.float64),        # rows of any rank
        ((7,), (100,), torch.int64),              # a histogram of ids: exact integer counts
        ((300, 16), (1024,), torch.bfloat16),     # many repeats per row
    ],
)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_index_put_accumulate(device, acc_shape, index_shape, dtype, index_dtype):
    g = torch.Generator().manual_seed(2)
    m = index_shape[0]
    idx = torch.randint(0, acc_shape[0], index_shape, generator=g, dtype=index_dtype)
    if dtype.is_floating_point:
        acc = torch.randn(acc_shape, generator=g).to(dtype)
        val = torch.randn((m,) + acc_shape[1:], generator=g).to(dtype)
    else:
        acc = torch.randint(-5, 5, acc_shape, generator=g, dtype=dtype)
        val = torch.randint(-5, 5, (m,) + acc_shape[1:], generator=g, dtype=dtype)
    with FusionDefinition() as fd:
        ta, ti, tv = (fd.from_pytorch(t.to(device)) for t in (acc, idx, val))
        fd.add_output(fd.ops.index_put_accumulate(ta, ti, tv))
    (got,) = fd.execute([acc.to(device), idx.to(device), val.to(device)])
    # The oracle sums in double: bf16 sums in any order round to within a few units of it.
    ref = acc.double().index_put_((idx.reshape(-1).long(),), val.double(), accumulate=True)
    if dtype.is_floating_point:
        tol = {torch.bfloat16: 0.1, torch.float32: 1e-5, torch.float64: 1e-12}[dtype]
        torch.testing.assert_close(got.cpu().double(), ref, rtol=tol, atol=tol)
    else:
        assert torch.equal(got.cpu(), ref.to(dtype))


def test_index_put_accumulate_errors(device):
    acc = torch.zeros(10, 8, device=device)
    with FusionDefinition() as fd:
        ta = fd.from_pytorch(acc)
        ti = fd.define_tensor([4, 2], dtype=DataType.Int)
        tv = fd.define_tensor([4, 8], dtype=DataType.Float)
        with pytest.raises(loom.UserError, match=r"index_put_accumulate: the index T1 \[4, 2\] "
                                                 r"must be 1-D \[m\] \(or \[m, 1\]\)"):
            fd.ops.index_put_accumulate(ta, ti, tv)
    with FusionDefinition() as fd:
        ta = fd.from_pytorch(acc)
        ti = fd.define_tensor([4], dtype=DataType.Int)
        tv = fd.define_tensor([4, 8], dtype=DataType.Double)
        with pytest.raises(loom.UserError, match="index_put_accumulate: the value T2 is f64 "
                                                 "but the accumulator T0 is f32"):
            fd.ops.index_put_accumulate(ta, ti, tv)
    with FusionDefinition() as fd:
        ta, ti, tv = (fd.from_pytorch(t) for t in (acc, torch.tensor([1, 12], device=device),
                                                   torch.ones(2, 8, device=device)))
        fd.add_output(fd.ops.index_put_accumulate(ta, ti, tv))
    with pytest.raises(loom.UserError, match="index value 12 .* out of range for dimension 0 of "
                                             r"T0 \(size 10\)"):
        fd.execute([acc, torch.tensor([1, 12], device=device), torch.ones(2, 8, device=device)])
