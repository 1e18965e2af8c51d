# SPDX-License-Identifier: Apache-2.0
# Scans (fd.ops.cumsum, cumprod, cummax, cummin) and fd.ops.argmax / argmin against torch: inner
# and outer dims, rows shorter and longer than a block, ties and NaN, keepdim and dim=None.
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition


def close(actual, expected, **kw):
    torch.testing.assert_close(actual, expected, equal_nan=True, **kw)


@pytest.mark.parametrize("shape,dim", [((37, 7), 1), ((4, 3000), 1), ((300, 19), 0), ((3, 5, 70), -2)])
def test_scans_match_torch(device, shape, dim):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), contiguity=True, dtype=DataType.Float)
        p = fd.define_tensor(shape=[-1] * len(shape), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.cumsum(x, dim))
        fd.add_output(fd.ops.cumprod(p, dim))
        fd.add_output(fd.ops.cummax(x, dim))
        fd.add_output(fd.ops.cummin(x, dim))
    torch.manual_seed(30)
    x = torch.randn(*shape, device=device)
    x.view(-1)[x.numel() // 3] = float("nan")
    p = 1 + (torch.rand(*shape, device=device) - 0.5) * 2e-3  # long products stay finite
    outs = fd.execute([x, p])
    xd = x.double()
    close(outs[0], torch.cumsum(xd, dim).float(), rtol=1e-4, atol=1e-3)
    close(outs[1], torch.cumprod(p.double(), dim).float(), rtol=1e-4, atol=1e-5)
    # torch.cummax treats NaN as the maximum, so its values are NaN from the NaN on, as Loom's.
    close(outs[2], torch.cummax(x, dim).values)
    close(outs[3], torch.cummin(x, dim).values)
    assert "fd.ops.cumsum(" in str(fd) and "fd.ops.cummin(" in str(fd)


def test_scan_dtypes_follow_torch(device):
    with FusionDefinition() as fd:
        i = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Int32)
        h = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Half)
        fd.add_output(fd.ops.cumsum(i, 0))
        fd.add_output(fd.ops.cummax(i, 1))
        fd.add_output(fd.ops.cumsum(h, 1))
    i = torch.randint(-1000, 1000, (50, 6), dtype=torch.int32, device=device)
    h = torch.randn(3, 200, device=device).half()
    a, b, c = fd.execute([i, h])
    assert a.dtype == torch.int64 and torch.equal(a, torch.cumsum(i, 0))
    assert b.dtype == torch.int32 and torch.equal(b, torch.cummax(i, 1).values)
    assert c.dtype == torch.float16
    close(c, torch.cumsum(h.float(), 1).half(), rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("shape,dim", [((37, 7), 1), ((5, 3000), 1), ((300, 19), 0)])
def test_argmax_argmin_ties_and_nan_match_torch(device, shape, dim):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.argmax(x, dim))
        fd.add_output(fd.ops.argmin(x, dim, keepdim=True))
    torch.manual_seed(31)
    x = torch.randint(-3, 4, shape, device=device).float()  # many ties
    rows = x if dim == 1 else x.t()
    rows[::3, 1] = float("nan")
    rows[::6, -1] = float("nan")
    amax, amin = fd.execute([x])
    assert amax.dtype == torch.int64
    assert torch.equal(amax, torch.argmax(x, dim))
    assert torch.equal(amin, torch.argmin(x, dim, keepdim=True))


def test_argmax_flattened_and_integers(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, dtype=DataType.Int32)
        fd.add_output(fd.ops.argmax(x))
        fd.add_output(fd.ops.argmin(x, keepdim=True))
        fd.add_output(fd.ops.argmax(x, -1))
    x = torch.randint(-5, 6, (3, 4, 5), dtype=torch.int32, device=device)
    a, b, c = fd.execute([x])
    assert torch.equal(a, torch.argmax(x))
    assert torch.equal(b, torch.argmin(x, keepdim=True))
    assert torch.equal(c, torch.argmax(x, -1))


def test_scan_errors_name_the_op():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Bool)
        with pytest.raises(loom.UserError, match="cumsum: dimension 2 is out of range"):
            fd.ops.cumsum(x, 2)
        with pytest.raises(loom.UserError, match="argmax: .* is Bool"):
            fd.ops.argmax(b)
