# SPDX-License-Identifier: Apache-2.0
"""A floating Scalar as a size (issue 36): nvFuser's test_reshape_dynamic reshapes to
`192 * reciprocal(n)`, a Double. Loom takes it as nvFuser does when its value is an integer
(6.0 is the size 6), for reshape, full, iota and broadcast_in_dim; a value that is not (6.5) is a
UserError naming it, never a size truncated to 6. Compared with torch, on CPU tensors (the host
backend) and CUDA tensors (the gpu run)."""

import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition


def reshape_by_double(fd):
    n = fd.define_scalar(None, dtype=DataType.Int)
    x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                         dtype=DataType.Float)
    cols = fd.ops.mul(fd.define_scalar(192, dtype=DataType.Int), fd.ops.reciprocal(n))
    y = fd.ops.reshape(x, new_shape=[n, cols])
    fd.add_output(fd.ops.sum(y, dims=[1]))
    fd.add_output(fd.ops.full([cols], 2.5, dtype=DataType.Float))
    fd.add_output(fd.ops.iota(cols, 3, 2, dtype=DataType.Int))
    fd.add_output(fd.ops.broadcast_in_dim(fd.ops.sum(y, dims=[0]), [n, cols], [1]))


@pytest.mark.parametrize("n", [32, 48, 192])
def test_an_integral_double_is_the_size(device, n):
    with FusionDefinition() as fd:
        reshape_by_double(fd)
    x = torch.randn(192, device=device).as_strided((4, 8, 6), (48, 6, 1))
    rows, full, iota, spread = fd.execute([n, x])
    y = x.reshape(n, 192 // n)
    torch.testing.assert_close(rows, y.sum(1))
    assert torch.equal(full, torch.full((192 // n,), 2.5, device=device))
    assert torch.equal(iota, torch.arange(3, 3 + 2 * (192 // n), 2, device=device))
    torch.testing.assert_close(spread, y.sum(0).expand(n, 192 // n))


def test_a_fractional_double_is_refused(device):
    with FusionDefinition() as fd:
        reshape_by_double(fd)
    x = torch.randn(4, 8, 6, device=device)
    # 192 / 128 = 1.5: nvFuser would make it 1 (and then fail the reshape's element count).
    with pytest.raises(loom.UserError, match=r"must have an integral value.* = 1\.5"):
        fd.execute([128, x])


# An explicit cast is the caller's truncation, as nvFuser's test_pad_dynamic pads by
# cast(2.5 * 7, Int) = 17.
def test_an_explicit_cast_truncates_on_purpose(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        w = fd.ops.cast(fd.ops.mul(fd.define_scalar(2.5, dtype=DataType.Float), 7), dtype=DataType.Int)
        fd.add_output(fd.ops.pad(x, [w, w]))
    x = torch.randn(2, 3, device=device)
    (y,) = fd.execute([x])
    assert torch.equal(y, torch.nn.functional.pad(x, [17, 17]))


def test_a_floating_constant_size():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 12], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [fd.define_scalar(6.0), 4]))
    x = torch.randn(2, 12)
    (y,) = fd.execute([x])
    assert torch.equal(y, x.reshape(6, 4))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 12], dtype=DataType.Float)
        with pytest.raises(loom.UserError, match=r"the size 6\.5 is not an integer"):
            fd.ops.reshape(x, [fd.define_scalar(6.5), 4])
