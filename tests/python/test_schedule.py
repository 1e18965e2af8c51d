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
