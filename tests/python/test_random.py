# SPDX-License-Identifier: Apache-2.0
# Random numbers through loom.direct (nvFuser's uniform, normal, rand_like, randn_like; Loom's
# rand, randn, bernoulli, dropout): the same seed and offset give the same tensor, another offset
# another one, on both devices alike; the values follow their distributions; dropout as nvFuser's
# users write it scales the kept elements by 1 / (1 - p).
import math

import pytest
import torch

import loom

from loom.direct import DataType, FusionDefinition


def _draw(device, seed, offset, op="uniform", shape=(64, 128), dtype=DataType.Float):
    with FusionDefinition() as fd:
        s = fd.define_scalar(dtype=DataType.Int)
        o = fd.define_scalar(dtype=DataType.Int)
        if op == "uniform":
            t = fd.ops.uniform(0.0, 1.0, shape=list(shape), rng_seed=s, rng_offset=o, dtype=dtype)
        else:
            t = fd.ops.normal(0.0, 1.0, shape=list(shape), rng_seed=s, rng_offset=o, dtype=dtype)
        fd.add_output(t)
    (out,) = fd.execute([seed, offset], device=device)
    return out


@pytest.mark.parametrize("op", ["uniform", "normal"])
def test_same_seed_and_offset_same_tensor(device, op):
    a = _draw(device, 1234, 0, op)
    assert torch.equal(a, _draw(device, 1234, 0, op))
    for other in (_draw(device, 1234, 1, op), _draw(device, 1235, 0, op)):
        assert (a == other).float().mean().item() < 0.01
    # A seed given to the op past 2**63 is its 64-bit pattern: 2**64 - 1 is -1.
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(0.0, 1.0, [64, 128], rng_seed=2**64 - 1, rng_offset=7))
    (big,) = fd.execute([], device=device)
    assert torch.equal(big, _draw(device, -1, 7, op))


def test_cpu_and_cuda_draw_the_same_numbers(device):
    if device == "cpu":
        pytest.skip("compares the cuda run with the cpu run")
    cpu = _draw("cpu", 99, 3)
    assert torch.equal(_draw(device, 99, 3).cpu(), cpu)
    cpu = _draw("cpu", 99, 3, "normal")
    torch.testing.assert_close(_draw(device, 99, 3, "normal").cpu(), cpu, rtol=2**-23, atol=0)


def test_distributions(device):
    n = 1 << 16
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.uniform(-1.0, 3.0, [n], rng_seed=5, rng_offset=0))
        fd.add_output(fd.ops.normal(2.0, 0.5, [n], rng_seed=5, rng_offset=1, dtype=DataType.Double))
        fd.add_output(fd.ops.rand([n], dtype=DataType.BFloat16, rng_seed=5, rng_offset=2))
        fd.add_output(fd.ops.randn([n], rng_seed=5, rng_offset=3))
    u, z, b, r = (t.double() for t in fd.execute([], device=device))
    # 5 standard errors: deterministic for these fixed seeds, and a broken generator fails.
    assert abs(u.mean().item() - 1.0) < 5 * math.sqrt(16 / 12 / n)
    assert abs(u.var().item() - 16 / 12) < 0.03
    assert -1.0 <= u.min().item() and u.max().item() < 3.0
    assert abs(z.mean().item() - 2.0) < 5 * 0.5 / math.sqrt(n)
    assert abs(z.std().item() - 0.5) < 0.01
    assert 0.0 <= b.min().item() and b.max().item() < 1.0
    assert abs(b.mean().item() - 0.5) < 0.01
    assert abs(r.mean().item()) < 5 / math.sqrt(n) and abs(r.var().item() - 1.0) < 0.03


def test_rand_like_randn_like_bernoulli(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Half)
        p = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.rand_like(x, rng_seed=1, rng_offset=2))
        fd.add_output(fd.ops.randn_like(x, rng_seed=1, rng_offset=3))
        fd.add_output(fd.ops.bernoulli(p, rng_seed=1, rng_offset=4))
    x = torch.zeros(128, 256, dtype=torch.float16, device=device)
    p = torch.full((128, 256), 0.2, device=device)
    r, z, b = fd.execute([x, p])
    assert r.dtype == z.dtype == torch.float16 and r.shape == z.shape == x.shape
    assert 0.0 <= r.min().item() and r.max().item() < 1.0
    assert abs(z.float().mean().item()) < 0.02
    assert set(b.unique().tolist()) <= {0.0, 1.0} and b.dtype == torch.float32
    assert abs(b.mean().item() - 0.2) < 5 * math.sqrt(0.2 * 0.8 / b.numel())


def test_dropout_as_nvfuser_users_write_it(device):
    keep = 0.9
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        seed = fd.define_scalar(dtype=DataType.Int)
        offset = fd.define_scalar(dtype=DataType.Int)
        r = fd.ops.uniform(0.0, 1.0, shape=fd.ops.shape(x), rng_seed=seed, rng_offset=offset)
        mask = fd.ops.lt(r, keep)
        y = fd.ops.mul(fd.ops.mul(x, fd.ops.cast(mask, DataType.Float)), 1 / keep)
        fd.add_output(y)
        fd.add_output(mask)
        fd.add_output(fd.ops.sum(y, dims=[1]))
        # The Loom composite gives the same mask and output.
        y2, mask2 = fd.ops.dropout(x, 1 - keep, rng_seed=seed, rng_offset=offset)
        fd.add_output(y2)
        fd.add_output(mask2)
    x = torch.randn(96, 300, device=device)
    y, m, s, y2, m2 = fd.execute([x, 11, 0])
    assert m.dtype == torch.bool
    assert abs(m.float().mean().item() - keep) < 5 * math.sqrt(keep * (1 - keep) / m.numel())
    torch.testing.assert_close(y, torch.where(m, x / keep, 0.0))
    torch.testing.assert_close(s, y.sum(1))
    assert torch.equal(m2, m)
    torch.testing.assert_close(y2, y)
    # Another offset: another mask.
    _, m_next, *_ = fd.execute([x, 11, 1])
    assert not torch.equal(m_next, m)


def test_random_errors():
    with FusionDefinition() as fd:
        with pytest.raises(loom.UserError, match="fd.ops.rand_like: rng_seed and rng_offset are "
                                                 "given together or not at all"):
            fd.ops.rand_like(fd.define_tensor(shape=[-1], dtype=DataType.Float), rng_seed=1)
        with pytest.raises(loom.UserError, match="does not fit in 64 bits"):
            fd.ops.normal(0.0, 1.0, [4], rng_seed=2**64, rng_offset=0)
        with pytest.raises(loom.UserError, match="seed must be an integer"):
            fd.ops.uniform(0.0, 1.0, [4], rng_seed=1.5, rng_offset=0)
        with pytest.raises(loom.UserError, match="dtype i32 is not supported"):
            fd.ops.uniform(0.0, 1.0, [4], rng_seed=1, rng_offset=0, dtype=DataType.Int32)
        with pytest.raises(loom.UserError, match="std must be >= 0"):
            fd.ops.normal(0.0, -1.0, [4], rng_seed=1, rng_offset=0)
