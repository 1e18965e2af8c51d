# SPDX-License-Identifier: Apache-2.0
# nvFuser's contiguity semantics through loom.direct: None for broadcast and expanded (stride-0)
# dims, contiguity in allocation order under a stride order, expanded and odd-strided size-1
# inputs, one broadcast expanded to two extents. torch is the oracle.
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition


def test_none_for_an_expanded_dim_of_symbolic_size():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(x, 2.0))
        fd.add_output(fd.ops.sum(x, dims=[0]))
    a = torch.randn(1, 8).expand(6, 8)
    doubled, summed = fd.execute([a])
    assert doubled.shape == (6, 8)
    torch.testing.assert_close(doubled, a * 2, rtol=0, atol=0)
    torch.testing.assert_close(summed, a.sum(0), rtol=1e-5, atol=1e-5)
    # An expanded dim must have stride 0 (or size 1).
    with pytest.raises(loom.UserError, match="expanded broadcast dimension: expected stride 0"):
        fd.execute([torch.randn(6, 8)])


def test_none_for_an_expanded_dim_of_constant_size():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, -1], contiguity=[None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
    a = torch.randn(1, 5).expand(4, 5)
    (out,) = fd.execute([a])
    torch.testing.assert_close(out, a.exp())


@pytest.mark.parametrize("permutation", [(1, 0, 2), (2, 0, 1), (0, 2, 1)])
def test_contiguity_is_in_allocation_order_with_a_stride_order(permutation):
    """A tensor laid out in `permutation` order (outermost first) and non-contiguous along its
    outermost allocated dim: nvFuser lists contiguity outermost first, not per logical dim."""
    shape = [4, 5, 6]
    alloc_shape = [shape[d] for d in permutation]
    # The outermost allocated dim strided by 2: contiguity False there.
    allocated = torch.randn(alloc_shape[0] * 2, alloc_shape[1], alloc_shape[2])[::2]
    logical_of = [permutation.index(d) for d in range(3)]  # each logical dim's allocated place
    x_t = allocated.permute(*logical_of)
    assert list(x_t.shape) == [4, 5, 6]
    stride_order = [2 - logical_of[d] for d in range(3)]
    with FusionDefinition() as fd:
        x = fd.define_tensor(
            shape=[-1, -1, -1],
            contiguity=[False, True, True],  # allocation order: the outermost one is strided
            dtype=DataType.Float,
            stride_order=stride_order,
        )
        fd.add_output(fd.ops.neg(x))
    (out,) = fd.execute([x_t])
    torch.testing.assert_close(out, -x_t, rtol=0, atol=0)
    # from_pytorch describes the same tensor the same way.
    with FusionDefinition() as fd2:
        y = fd2.from_pytorch(x_t)
        fd2.add_output(fd2.ops.neg(y))
    (out2,) = fd2.execute([x_t])
    torch.testing.assert_close(out2, -x_t, rtol=0, atol=0)


def test_from_pytorch_of_an_expanded_tensor():
    a = torch.randn(3, 1, 5).expand(3, 7, 5)
    with FusionDefinition() as fd:
        x = fd.from_pytorch(a)
        fd.add_output(fd.ops.add(x, 1.0))
    (out,) = fd.execute([a])
    torch.testing.assert_close(out, a + 1.0)


@pytest.mark.parametrize("stride", [1, 100, 0])
def test_size_one_dims_with_any_stride(stride):
    a = torch.randn(64).as_strided((1, 8, 1), (stride, 1, stride * 3))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
    (out,) = fd.execute([a])
    torch.testing.assert_close(out, -a, rtol=0, atol=0)


def test_one_broadcast_expanded_to_two_extents():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        y = fd.define_tensor(shape=[-1, -1])
        z = fd.define_tensor(shape=[-1, -1])
        e1 = fd.ops.expand(x, [fd.ops.size(y, 0), fd.ops.size(y, 1)])
        e2 = fd.ops.expand(x, [fd.ops.size(z, 0), fd.ops.size(z, 1)])
        fd.add_output(fd.ops.add(e1, y))
        fd.add_output(fd.ops.add(e2, z))
    x_t, y_t, z_t = torch.randn(1, 8), torch.randn(3, 8), torch.randn(5, 8)
    o1, o2 = fd.execute([x_t, y_t, z_t])
    torch.testing.assert_close(o1, x_t + y_t, rtol=0, atol=0)
    torch.testing.assert_close(o2, x_t + z_t, rtol=0, atol=0)
