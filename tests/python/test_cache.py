# SPDX-License-Identifier: Apache-2.0
# LRUCache (nvFuser's cache of compiled fusions, keyed here by the fusion's structure),
# cache_compile, LruFusionCache, and FusionExecutorCache under nvFuser's names.
import pytest
import torch

import loom
from loom.direct import FusionDefinition, FusionExecutorCache, LRUCache, LruFusionCache


def define(fd, op="exp", scale=2.0):
    x = fd.define_tensor(shape=[-1], contiguity=True)
    fd.add_output(getattr(fd.ops, op)(fd.ops.mul(x, scale)))


def definition(**kw):
    with FusionDefinition() as fd:
        define(fd, **kw)
    return fd


def test_equal_structures_share_one_compiled_fusion():
    cache = LRUCache(max_fusions=8)
    a = cache.cache_compile(definition().fusion)
    b = cache.cache_compile(definition().fusion)
    c = cache.cache_compile(definition(scale=2.5).fusion)  # another constant: another fusion
    d = cache.cache_compile(definition(op="log").fusion)
    assert a is b and a is not c and c is not d
    assert cache.num_fusions() == 3
    x = torch.rand(6)
    torch.testing.assert_close(a.execute([x])[0], torch.exp(x * 2))
    torch.testing.assert_close(c.execute([x])[0], torch.exp(x * 2.5))
    stats = cache.stats()
    assert "Total Fusions in Cache: 3" in stats and "Cache Hits: 1" in stats
    assert "Cache Lookups: 4" in stats


def test_least_recently_used_goes_first():
    cache = LRUCache(max_fusions=2)
    first = cache.cache_compile(definition(scale=1.5).fusion)
    cache.cache_compile(definition(scale=2.5).fusion)
    assert cache.cache_compile(definition(scale=1.5).fusion) is first  # now the most recent
    cache.cache_compile(definition(scale=3.5).fusion)                  # evicts scale=2.5
    assert cache.num_fusions() == 2
    assert cache.cache_compile(definition(scale=1.5).fusion) is first
    assert cache.num_fusions() == 2
    with pytest.raises(loom.UserError, match="max_fusions must be at least 1"):
        LRUCache(0)
    with pytest.raises(loom.UserError, match="expected a Fusion, got int"):
        cache.cache_compile(3)


def test_the_callers_fusion_stays_editable():
    fd = definition()
    fec = LRUCache().cache_compile(fd.fusion)
    fec.execute([torch.rand(3)])
    assert not fd.fusion.frozen  # the cache compiled a copy
    assert fec.fusion().frozen


def test_a_definition_with_a_cached_fec_runs_through_it():
    cache = LRUCache()
    fd = definition()
    fd.fec = cache.cache_compile(fd.fusion)
    del fd._fusion
    x = torch.rand(5)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.exp(x * 2))
    assert fd.fusion is fd.fec.fusion()
    assert "fd.ops.exp" in str(fd)
    # It ran through this fec: compiled, or served by a stored plan (the plan cache, on by
    # default, when an earlier process ran the same fusion on this layout).
    assert fd.fec.misses == 1 and fd.fec.num_runtimes + fd.fec.plan_hits == 1


def test_lru_fusion_cache_decorator():
    cached = LruFusionCache(max_fusions=4)

    @cached
    def make(scale):
        return definition(scale=scale)

    a, b = make(2.0), make(2.0)
    assert a.fec is b.fec and make.num_fusions() == 1
    make(3.0)
    assert make.num_fusions() == 2 and "Total Fusions in Cache: 2" in make.stats()
    x = torch.rand(4)
    torch.testing.assert_close(b.execute([x])[0], torch.exp(x * 2))


def test_fusion_executor_cache_names():
    fd = definition()
    fec = FusionExecutorCache(fd.fusion)
    fec.execute([torch.rand(4)])
    assert fec.last_schedulers() == ["pointwise"] and "__global__" in fec.last_cuda_code()
    assert fec.get_output_shardings() == []  # no device meshes: none, as nvFuser
    with pytest.raises(loom.NotSupportedError, match="auto_schedule=False"):
        FusionExecutorCache(fd.fusion, auto_schedule=False)
    with pytest.raises(AttributeError, match="no attribute 'bogus'"):
        fec.bogus


def test_a_cache_of_the_bare_fusion_returns_what_execute_does():
    """nvFuser's LRU-era conftest runs LRUCache.cache_compile(fd.fusion): the fusion carries the
    definition's add_output calls, so an output added twice, added and updated in place, and an
    input added as an output come back as fd.execute() returns them (the cache returned the
    outputs but the in-place one: none here)."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=True)
        t4 = fd.ops.where(fd.ops.gt(t0, 0.0), t0, 0.0)
        fd.add_output(t4)
        fd.add_output(t4, t0)
        fd.add_output(t4)
        fd.add_output(t0)
    x = torch.randn(3, 4)
    want = fd.execute([x.clone()])
    cache = LRUCache()
    got = cache.cache_compile(fd.fusion).execute([x.clone()])
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    # Another definition of the same structure returning one tensor is another entry.
    with FusionDefinition() as one:
        t0 = one.define_tensor(shape=[-1, -1], contiguity=True)
        one.add_output(one.ops.where(one.ops.gt(t0, 0.0), t0, 0.0))
    assert len(cache.cache_compile(one.fusion).execute([x.clone()])) == 1
    assert cache.num_fusions() == 2
