# SPDX-License-Identifier: Apache-2.0
# Bulk (TMA) copies scheduled by hand, as nvFuser's TMA tutorial writes them: cache_after /
# cache_before with LoadStoreOpType.tma, the box's axes parallelized with ParallelType.tma, the
# kernel built by KernelExecutor with CompileParams. Each run is compared with torch; the misuses
# are errors that say what to write instead.
import pytest
import torch

import loom
from loom.direct import (
    CompileParams,
    DataType,
    FusionDefinition,
    KernelExecutor,
    LoadStoreOpType,
    MemoryType,
    ParallelType,
)

pytestmark = pytest.mark.text_form_definition  # caches are schedule steps nvFuser's form lacks


def run(fd, inputs, **params):
    ke = KernelExecutor()
    ke.compile(fd.fusion, inputs, compile_params=CompileParams(**params))
    return ke, ke.run(inputs)


def copy_3d(fd, op):
    """inp [a, b, c] -> op(inp), both the output and its TMA cache flattened, split by 256, the
    outer part on blocks; returns (cache, output). op "set" caches the input (a TMA load), "exp"
    the output (a TMA store)."""
    inp = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True])
    out = fd.ops.set(inp) if op == "set" else fd.ops.exp(inp)
    fd.add_output(out)
    if op == "set":
        smem = inp.cache_after(LoadStoreOpType.tma)
    else:
        smem = out.cache_before(LoadStoreOpType.tma)
    smem.set_memory_type(MemoryType.shared)
    for t in (smem, out):
        t.merge(0, 1)
        t.merge(0, 1)
        t.split(0, 256)
    return smem, out


def test_tma_load_one_box_per_block(device):
    with FusionDefinition() as fd:
        smem, out = copy_3d(fd, "set")
        for t in (smem, out):
            t.axis(0).parallelize(ParallelType.grid_x)
        smem.axis(1).parallelize(ParallelType.tma)
        out.axis(1).parallelize(ParallelType.block_x)
    t0 = torch.randn(5, 3, 300, device=device)  # 4500 elements: the last box is partial
    ke, (o,) = run(fd, [t0], index_type=DataType.Int32, maxrregcount=255,
                   enable_magic_zero=False)
    assert o.equal(t0)


def test_tma_store_boxes_issued_by_threads(device):
    with FusionDefinition() as fd:
        smem, out = copy_3d(fd, "exp")
        for t in (smem, out):
            t.split(0, 4)
            t.axis(0).parallelize(ParallelType.grid_x)
        out.axis(1).parallelize(ParallelType.block_x)   # four threads, one box each
        out.axis(2).parallelize(ParallelType.tma)
        smem.axis(2).parallelize(ParallelType.block_x)
    t0 = torch.randn(5, 3, 300, device=device)
    _, (o,) = run(fd, [t0])
    torch.testing.assert_close(o, t0.exp())


def test_tma_box_of_several_axes_next_to_an_unrolled_add(device):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        out = fd.ops.add(a, b)
        fd.add_output(out)
        a_s = a.cache_after(LoadStoreOpType.tma)
        b_s = b.cache_after(LoadStoreOpType.tma)
        out_r = out.cache_before()
        for t in (a_s, b_s):
            t.set_memory_type(MemoryType.shared)
        out.split(-1, 256)          # [I0, I1 / 256, 256]
        out.split(0, 4)             # [I0 / 4, 4, I1 / 256, 256]
        out.split(-1, 2)            # [I0 / 4, 4, I1 / 256, 128, 2]
        out.reorder({1: 2, 2: 1})   # [I0 / 4, I1 / 256, 4, 128, 2]
        fd.sched.transform_like(out)
        out.axis(0).parallelize(ParallelType.grid_x)
        fd.sched.parallelize_like(out)
        out.axis(2).parallelize(ParallelType.unroll)
        out.axis(3).parallelize(ParallelType.block_x)
        out.axis(4).parallelize(ParallelType.vectorize)
        out_r.axis(3).parallelize(ParallelType.block_x)
        for t in (a_s, b_s):        # a [4, 128, 2] box per block and column tile
            for axis in (2, 3, 4):
                t.axis(axis).parallelize(ParallelType.tma)
        fd.sched.inline_most()  # stops at the boxes
    t0 = torch.randn(24, 700, device=device)
    t1 = torch.randn(24, 700, device=device)
    _, (o,) = run(fd, [t0, t1])
    assert o.equal(t0 + t1)


def test_bulk_axis_outside_a_tma_copy_is_refused():
    with FusionDefinition() as fd:
        inp = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        out = fd.ops.set(inp)
        fd.add_output(out)
        smem = inp.cache_after()            # a plain copy
        smem.set_memory_type(MemoryType.shared)
        smem.axis(1).parallelize(ParallelType.tma)
    with pytest.raises(loom.UserError, match=r"is bulk, which only the output of a TMA copy"):
        KernelExecutor().compile(fd.fusion, [torch.randn(4, 8)])


def test_tma_copy_into_local_memory_is_refused():
    with FusionDefinition() as fd:
        inp = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        out = fd.ops.set(inp)
        fd.add_output(out)
        cache = inp.cache_after(LoadStoreOpType.tma)   # left in local memory
        cache.axis(1).parallelize(ParallelType.tma)
    with pytest.raises(loom.UserError, match=r"moves a box between global and shared memory.*"
                                             r"into local memory"):
        KernelExecutor().compile(fd.fusion, [torch.randn(4, 8)])


def test_compile_params_index_type_and_register_bound():
    with FusionDefinition() as fd:
        inp = fd.define_tensor(shape=[-1], contiguity=[True])
        out = fd.ops.mul(inp, 2.0)
        fd.add_output(out)
        out.split(0, 128)
        out.axis(0).parallelize(ParallelType.grid_x)
        out.axis(1).parallelize(ParallelType.block_x)
    t0 = torch.randn(1000)
    ke, (o,) = run(fd, [t0], index_type=DataType.Int, maxrregcount=64)
    assert o.equal(t0 * 2)
    code = ke.kernel_code()
    assert "__maxnreg__(64)" in code
    assert "loom::Tensor<float, 1> T0" in code   # 64-bit indices (the default), as asked
    ke, (o,) = run(fd, [t0], index_type=DataType.Int32)
    assert o.equal(t0 * 2)
    assert "loom::Tensor<float, 1, int>" in ke.kernel_code()
    assert "__maxnreg__" not in ke.kernel_code()


def test_compile_params_errors():
    with pytest.raises(loom.UserError, match="index_type must be DataType.Int32 or DataType.Int"):
        CompileParams(index_type=DataType.Float)
    with pytest.raises(loom.UserError, match="maxrregcount must be an int from 16 to 255"):
        CompileParams(maxrregcount=8)
    with pytest.raises(loom.NotSupportedError, match="LOOM_DUMP=ptxas"):
        CompileParams(enable_ptxas_verbose=True)
    with pytest.raises(TypeError):
        CompileParams(DataType.Int32)  # keyword-only, as nvFuser's
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.abs(fd.define_tensor(shape=[-1], contiguity=[True])))
    with pytest.raises(loom.UserError, match="compile_params must be a CompileParams"):
        KernelExecutor().compile(fd.fusion, [torch.randn(4)], compile_params={"maxrregcount": 64})


def test_load_store_op_types_nvfuser_has_and_loom_lacks_raise_by_name():
    with pytest.raises(loom.NotSupportedError, match=r"LoadStoreOpType.load_matrix"):
        LoadStoreOpType.load_matrix
    assert LoadStoreOpType.set.loom != LoadStoreOpType.tma.loom
    assert ParallelType.bulk is ParallelType.tma
