# SPDX-License-Identifier: Apache-2.0
# fd.ops.argsort and fd.ops.topk (issues 30 and 36) against torch: inner, outer and middle dims,
# odd lengths, ties and NaN, every k from 0 to n, k given at run time; and the other ops of issue
# 36: select, tril, stride_order (the output's strides), segment_set (the kernel count), ceilDiv.
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition


def ties(shape, device, dtype=torch.float32, nan=True):
    """Values from a small set (many ties), a NaN in about one element of 9 for floats."""
    g = torch.Generator().manual_seed(sum(shape) * 7 + len(shape))
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if nan and x.is_floating_point():
        x.view(-1)[::9] = float("nan")
    return x.to(device)


LOOM_DTYPE = {torch.float32: DataType.Float, torch.float64: DataType.Double,
              torch.float16: DataType.Half, torch.bfloat16: DataType.BFloat16,
              torch.int32: DataType.Int32, torch.int64: DataType.Int, torch.bool: DataType.Bool}


@pytest.mark.parametrize("shape,dim", [((5, 33), 1), ((33, 5), 0), ((3, 130, 4), 1),
                                       ((2, 1001), -1), ((1, 1), 0), ((17,), 0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_argsort_matches_torch_stable(device, shape, dim, dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), contiguity=True, dtype=LOOM_DTYPE[dtype])
        fd.add_output(fd.ops.argsort(x, dim))
        fd.add_output(fd.ops.argsort(x, dim, descending=True, stable=True))
    x = ties(shape, device, dtype)
    up, down = fd.execute([x])
    assert up.dtype == torch.int64
    # Loom's sort is stable: torch's stable order (NaN the largest) index for index.
    assert torch.equal(up, torch.argsort(x, stable=True, dim=dim))
    assert torch.equal(down, torch.argsort(x, stable=True, dim=dim, descending=True))


def test_unstable_argsort_orders_the_values(device):
    """stable=False leaves the order of ties to the implementation, as torch's does."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.argsort(x, 1, descending=True, stable=False))
    x = torch.randn(6, 50, device=device)
    x[:, ::7] = 0.5  # ties
    (idx,) = fd.execute([x])
    assert torch.equal(torch.gather(x, 1, idx), torch.sort(x, 1, descending=True).values)


@pytest.mark.parametrize("shape,dim,ks", [((6, 9), 1, [0, 1, 4, 9]), ((9, 6), 0, [1, 9]),
                                          ((4, 130), -1, [1, 65, 130]), ((2, 3, 40), 2, [7])])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch(device, shape, dim, ks, largest):
    for k in ks:
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1] * len(shape), contiguity=True)
            values, indices = fd.ops.topk(x, k, dim, largest=largest, sorted=True)
            fd.add_output(values)
            fd.add_output(indices)
        x = ties(shape, device)
        v, i = fd.execute([x])
        want = torch.topk(x, k, dim, largest=largest, sorted=True)
        torch.testing.assert_close(v, want.values, equal_nan=True, rtol=0, atol=0)
        # torch leaves the order of equal values open; Loom's is the stable sort's.
        stable = torch.sort(x, stable=True, dim=dim, descending=largest).indices.narrow(dim, 0, k)
        assert torch.equal(i, stable)
        torch.testing.assert_close(torch.gather(x, dim, i), v, equal_nan=True, rtol=0, atol=0)


def test_topk_k_at_run_time_and_its_errors(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Int32)
        k = fd.define_scalar(dtype=DataType.Int)
        v, i = fd.ops.topk(x, k)
        fd.add_output(v)
        fd.add_output(i)
    x = torch.randint(-100, 100, (5, 12), dtype=torch.int32, device=device)
    for kk in (0, 3, 12):
        v, i = fd.execute([x, kk])
        assert torch.equal(v, torch.topk(x, kk).values)
        assert torch.equal(torch.gather(x, 1, i), v)
    with pytest.raises(loom.UserError, match=r"topk: k = 13 .*is outside \[0, 12\]"):
        fd.execute([x, 13])
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 8], contiguity=True)
        with pytest.raises(loom.UserError, match="topk: k = 9 is larger than the size 8"):
            fd.ops.topk(x, 9, 1)
        with pytest.raises(loom.UserError, match="argsort: .* is c64; complex values have no order"):
            fd.ops.argsort(fd.define_tensor(shape=[3], dtype=DataType.ComplexFloat), 0)


def test_sort_of_computed_values_and_consumers(device):
    """A sort between pointwise ops runs in a kernel of its own; the result is torch's."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        order = fd.ops.argsort(fd.ops.neg(x), 1)
        fd.add_output(fd.ops.add(order, 1))
        fd.add_output(fd.ops.mul(fd.ops.topk(fd.ops.exp(x), 2, 0)[0], 3.0))
    x = ties((7, 13), device, nan=False)
    a, b = fd.execute([x])
    assert torch.equal(a, torch.argsort(-x, stable=True, dim=1) + 1)
    torch.testing.assert_close(b, torch.topk(torch.exp(x), 2, 0).values * 3.0)
    assert fd.last_schedulers().count("sort") == 2
    assert "fd.ops.argsort(" in str(fd) and "fd.ops.topk(" in str(fd)


def test_select_matches_torch(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 5, 6], contiguity=True)
        y = fd.define_tensor(shape=[-1, -1], contiguity=True)
        i = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.select(x, 2, 1))
        fd.add_output(fd.ops.select(x, -1, dim=-1))
        fd.add_output(fd.ops.select(y, i, 0))
    x = torch.randn(4, 5, 6, device=device)
    y = torch.randn(7, 3, device=device)
    for pos in (0, 6, -1, -7):
        a, b, c = fd.execute([x, y, pos])
        assert torch.equal(a, torch.select(x, 1, 2))
        assert torch.equal(b, torch.select(x, -1, -1))
        assert torch.equal(c, torch.select(y, 0, pos))
    with pytest.raises(loom.UserError, match="index value 7 .*size 7"):
        fd.execute([x, y, 7])
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 5], contiguity=True)
        with pytest.raises(loom.UserError, match=r"select: index 5 is out of range .*\[-5, 5\)"):
            fd.ops.select(x, 5, 1)


def test_tril_matches_torch(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        b = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, dtype=DataType.Int32)
        fd.add_output(fd.ops.tril(x))
        fd.add_output(fd.ops.tril(x, -1))
        fd.add_output(fd.ops.tril(b, diagonal=2))
    x = torch.randn(5, 7, device=device)
    b = torch.randint(-9, 9, (2, 3, 6), dtype=torch.int32, device=device)
    t0, t1, t2 = fd.execute([x, b])
    assert torch.equal(t0, torch.tril(x))
    assert torch.equal(t1, torch.tril(x, -1))
    assert torch.equal(t2, torch.tril(b, 2))


@pytest.mark.parametrize("order", [[0, 1, 2], [1, 0, 2], [2, 1, 0], [0, 2, 1]])
def test_stride_order_gives_the_outputs_strides(device, order):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        fd.add_output(fd.ops.stride_order(fd.ops.add(x, 1.0), order))
    x = torch.randn(3, 4, 5, device=device)
    (out,) = fd.execute([x])
    assert torch.equal(out, x + 1.0)
    # Dims from outermost (the largest place) to innermost: a dense layout in that order.
    outer_first = sorted(range(3), key=lambda d: -order[d])
    want = torch.empty([x.shape[d] for d in outer_first]).permute(
        [outer_first.index(d) for d in range(3)]).stride()
    assert out.stride() == want


def test_segment_set_cuts_the_fusion(device):
    def define(cut):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1, -1], contiguity=True)
            y = fd.ops.exp(x)
            fd.add_output(fd.ops.neg(fd.ops.segment_set(y) if cut else fd.ops.set(y)))
        return fd

    x = torch.randn(6, 10, device=device)
    plain, cut = define(False), define(True)
    (a,) = plain.execute([x])
    (b,) = cut.execute([x])
    assert len(plain.last_schedulers()) == 1
    assert cut.last_schedulers() == ["pointwise", "pointwise"]
    assert torch.equal(a, b)
    torch.testing.assert_close(b, -torch.exp(x))
    assert "fd.ops.segment_set(" in str(cut)


def test_ceil_div_matches_the_integer_rule(device):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        x = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.ceilDiv(a, b))
        fd.add_output(fd.ops.ceilDiv(x, 0.5))
        fd.add_output(fd.ops.add(a, fd.ops.ceilDiv(7, 2)))  # Python numbers: a Scalar
    av = torch.tensor([7, -7, 7, -7, 6, 0, 5, 9], device=device)
    bv = torch.tensor([2, 2, -2, -2, 3, 4, 0, 1], device=device)
    x = torch.randn(8, device=device)
    q, f, s = fd.execute([av, bv, x])
    assert torch.equal(q, torch.tensor([4, -3, -3, 4, 2, 0, 0, 9], device=device))
    assert torch.equal(f, torch.ceil(x / 0.5))
    assert torch.equal(s, av + 4)
