# SPDX-License-Identifier: Apache-2.0
# Scheduling by hand from Python: split (inner and outer), merge, reorder, parallelize,
# propagation and inlining, caches, allocation domains, and KernelExecutor running the result;
# the scheduling errors keep Loom's messages.
import pytest
import torch

import loom
from loom.direct import (
    FusionDefinition,
    KernelExecutor,
    MemoryType,
    ParallelType,
    inline_most,
    parallelize_all_like,
    propagate_transforms,
)


def test_split_merge_reorder_change_the_loop_domain():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        y = fd.ops.exp(x)
        fd.add_output(y)
        assert y.num_dims() == 3
        assert y.split(2, 4) is y                   # [a, b, c/4, 4]
        assert y.num_dims() == 4
        y.split(0, 2, inner_split=False)            # [2, a/2, b, c/4, 4]
        y.outer_split(2, 3).inner_split(0, 1)       # methods chain
        n = y.num_dims()
        y.merge(0)
        assert y.num_dims() == n - 1
        y.merge(1, 2)
        y.reorder({0: -1})
        y.reorder(list(reversed(range(y.num_dims()))))
        y.flatten()
        assert y.num_dims() == 1
        assert len(y.get_logical_domain()) == 3     # the logical domain does not change
        assert len(y.get_root_domain()) == 3


def test_hand_scheduled_kernel_runs():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        out = fd.ops.add(fd.ops.mul(x, 2.0), 1.0)
        fd.add_output(out)
        out.flatten().split(0, 128)
        out.axis(0).parallelize(ParallelType.grid_x)
        out.axis(1).parallelize(ParallelType.block_x)
        propagate_transforms(out)
        parallelize_all_like(out)
        inline_most(fd.fusion)
    assert out.axis(1).parallel_type == loom._C.ParallelType.TIDx
    ke = KernelExecutor()
    x = torch.randn(7, 300)
    ke.compile(fd, [x])
    (y,) = ke.run([x])
    torch.testing.assert_close(y, x * 2 + 1)
    code = ke.kernel_code()
    assert "blockIdx.x" in code and "threadIdx.x" in code


# rFactor and caches rewrite the graph; the printed definition rebuilds it from the text form.
@pytest.mark.text_form_definition
def test_rfactor_and_cache():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        s = fd.ops.sum(x, [1])
        fd.add_output(s)
        cached = x.cache_after()                    # x -> cached (local) -> sum
        cached.set_memory_type(MemoryType.local)
        assert cached is not x
        s.split(1, 32)                              # [i0, r/32, r32]
        partial = s.rfactor([1])                    # partial sums over r/32, per lane
        assert partial is not s and partial.num_dims() == 3
        propagate_transforms(partial, [cached])
        s.axis(0).parallelize(ParallelType.grid_x)
        s.axis(-1).parallelize(ParallelType.block_x)
        parallelize_all_like(s)
        inline_most(fd.fusion)
    ke = KernelExecutor()
    x = torch.randn(5, 100)
    ke.compile(fd.fusion, [x])
    (out,) = ke.run([x])
    torch.testing.assert_close(out, x.sum(1), rtol=1e-5, atol=1e-5)


def test_allocation_domain():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        y = fd.ops.neg(x)
        fd.add_output(y)
        logical = y.get_logical_domain()
        y.set_allocation_domain([logical[1], logical[0]], True)  # column-major output
        assert [str(i) for i in y.get_allocation_domain()] == [str(logical[1]), str(logical[0])]
    x = torch.randn(3, 4)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, -x)
    assert out.stride() == (1, 3)


def test_scheduling_errors_keep_loom_messages():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 8], contiguity=True)
        y = fd.ops.neg(x)
        fd.add_output(y)
        with pytest.raises(loom.UserError, match="axis|out of range"):
            y.split(7, 2)
        with pytest.raises(loom.UserError, match="factor must be an int"):
            y.split(0, 2.5)
        with pytest.raises(loom.UserError, match="ParallelType"):
            y.axis(0).parallelize("TIDx")
        with pytest.raises(loom.UserError):
            y.axis(0).parallelize(ParallelType.vectorize)  # needs a constant extent
        with pytest.raises(loom.UserError):
            y.merge(0, 0)


@pytest.mark.text_form_definition
@pytest.mark.parametrize("rows,width", [(64, 4096), (3, 1000)])
def test_hand_scheduled_layer_norm_keeps_the_row_in_shared_memory(rows, width):
    """nvFuser's tutorial layer_norm, scheduled by hand: the input row cached in shared memory
    (its length known at launch only, so the buffer is sized then), three casts of it inlined
    into the two reductions and the normalization (the row, not a cast, is what stays on chip
    across the reductions), one kernel, profiled as the user's schedule."""
    from loom.direct import DataType, PythonProfiler

    x = torch.randn(rows, width, dtype=torch.bfloat16)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        eps = fd.define_scalar(1e-6, dtype=DataType.Double)
        n = fd.define_scalar(width, dtype=DataType.Int)
        s0 = fd.ops.sum(fd.ops.cast(t0, dtype=DataType.Float), dims=[-1])
        mean = fd.ops.div(fd.ops.broadcast(s0, [False, True]), n)
        d = fd.ops.sub(fd.ops.cast(t0, dtype=DataType.Float), mean)
        s1 = fd.ops.sum(fd.ops.mul(d, d), dims=[-1])
        var = fd.ops.div(fd.ops.broadcast(s1, [False, True]), n)
        centered = fd.ops.sub(fd.ops.cast(t0, dtype=DataType.Float), mean)
        norm = fd.ops.div(centered, fd.ops.sqrt(fd.ops.add(var, eps)))
        fd.add_output(fd.ops.cast(norm, dtype=DataType.BFloat16))

        row = t0.cache_after()
        row.set_memory_type(MemoryType.shared)
        norm.cache_before()
        mean.split(-1, 256 * 4)
        mean.split(-1, 4)
        fd.sched.transform_like(mean)
        for r in (s0, s1):
            r.rfactor([-1])
        mean.axis(0).parallelize(ParallelType.grid_x)
        mean.axis(-2).parallelize(ParallelType.block_x)
        fd.sched.parallelize_like(mean)
        row.axis(-1).parallelize(ParallelType.vectorize)
        norm.axis(-1).parallelize(ParallelType.vectorize)
        fd.sched.inline_most()
    with PythonProfiler(auto_scheduled=False) as prof:
        (out,) = fd.manual_execute([x])
    ref = torch.nn.functional.layer_norm(x.double(), normalized_shape=[width], eps=1e-6)
    torch.testing.assert_close(out.double(), ref, rtol=1e-2, atol=1e-2)
    assert len(prof.profile.kernel_profiles) == 1
    assert prof.profile.kernel_profiles[0].scheduler == "user"
