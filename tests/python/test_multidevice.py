# SPDX-License-Identifier: Apache-2.0
# multidevice from one process: meshes, the communicator's view of a single process, shards, and a
# sharded fusion run as each device of its mesh in turn (the mpi tier runs one rank per device).
import pytest
import torch

import loom
import loom.direct as nvfuser
from loom.direct import DataType, FusionDefinition, ParallelType
from loom.direct.multidevice import Communicator, DeviceMesh, shard_tensor


def test_device_mesh_forms():
    assert DeviceMesh(torch.arange(4)).devices == [0, 1, 2, 3]
    m = DeviceMesh([[0, 1, 2], [3, 4, 5]])
    assert m.shape == [2, 3] and m.size == 6 and m.ndim == 2
    assert m == DeviceMesh(torch.arange(6).reshape(2, 3))
    assert repr(DeviceMesh([2, 0])) == "DeviceMesh([2, 0])"
    # Any iterable of ints, as nvFuser's tests write it (DeviceMesh(range(d))).
    assert DeviceMesh(range(3)).devices == [0, 1, 2]
    assert DeviceMesh(i for i in (4, 5)).devices == [4, 5]
    assert DeviceMesh((range(2), range(2, 4))).shape == [2, 2]
    assert DeviceMesh([3, 1]).index_of(1) == 1
    with pytest.raises(loom.UserError, match="ragged"):
        DeviceMesh([[0, 1], [2]])
    with pytest.raises(loom.UserError, match="repeated|twice|distinct"):
        DeviceMesh([0, 0])
    with pytest.raises(loom.UserError, match="ints"):
        DeviceMesh([0.5])


def test_communicator_of_one_process():
    c = Communicator.instance()
    assert c is Communicator.instance()
    if c.size() == 1:
        assert (c.rank(), c.local_rank(), c.local_size()) == (0, 0, 1)
    assert 0 <= c.rank() < c.size()
    c.barrier()
    assert c.allgather(7) == [7] * c.size()


def test_shard_tensor():
    t = torch.arange(24).reshape(2, 12)
    mesh = DeviceMesh([0, 1, 2])
    parts = [shard_tensor(t, 1, mesh, device_id=d) for d in range(3)]
    assert torch.equal(torch.cat(parts, 1), t)
    assert parts[1].data_ptr() == t[:, 4:8].data_ptr()  # a view
    with pytest.raises(loom.UserError, match="device 5 is not in the mesh"):
        shard_tensor(t, 1, mesh, device_id=5)
    with pytest.raises(loom.UserError, match="do not divide"):
        shard_tensor(t, 0, mesh, device_id=0)


def test_sharded_fusion_as_each_device():
    """var_mean over e of [b, s, e] with s sharded (the founding case, small), run in this one
    process as device 0 of a mesh of one, then checked shard by shard against torch."""
    d = Communicator.instance().size()
    rank = Communicator.instance().rank()
    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor(shape=[2, 8 * d, 32], contiguity=True)
        var, mean = fd.ops.var_mean(inp, dims=[2], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
        inp.set_device_mesh(mesh)
        inp.split(1, d, inner_split=False)
        inp.axis(1).parallelize(ParallelType.mesh_x)
        assert inp.axis(1).is_device_dim()
    full = torch.randn(2, 8 * d, 32)
    local = shard_tensor(full, 1, mesh)
    var, mean = fd.execute([local])
    torch.testing.assert_close(var, local.var(2), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, local.mean(2), rtol=1e-4, atol=1e-4)
    assert var.shape == (2, 8)
    # A wrong local size names the sharding.
    expected = (f"expected a local shard of size 8 \\(the extent {8 * d} over {d} devices\\), got 3"
                if d > 1 else "expected size 8 \\(a constant extent\\), got size 3")
    with pytest.raises(loom.UserError, match=r"input 0 \(T0\) dimension 1\b.*" + expected):
        fd.execute([full[:, :3]])
    assert rank < d


def test_allocation_splitting_a_shards_local_part_is_refused():
    """An allocation domain made of a split of a sharded dim's local part (the loop split below
    the DID) cannot be localized: a UserError naming the tensor and what to write instead."""
    d = Communicator.instance().size()
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        out = fd.ops.mul(t, 2.0)
        fd.add_output(out)
        for tv in (t, out):
            tv.set_device_mesh(mesh)
            tv.outer_split(0, d)
            tv.axis(0).parallelize(ParallelType.mesh_x)
        out.split(1, 2)
        out.set_allocation_domain(out.get_loop_domain(), True)
    with pytest.raises(loom.UserError, match=r"T1: its allocation domain splits the local part "
                                             r"of a sharded dim .*give the allocation the DID "
                                             r"split and the logical IDs only"):
        fd.execute([torch.randn(4, 6)])


def test_mesh_larger_than_the_world_is_refused():
    n = Communicator.instance().size()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4 * (n + 1)], contiguity=True)
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(DeviceMesh(torch.arange(n + 1)))
        x.split(0, n + 1, inner_split=False)
        x.axis(0).parallelize(ParallelType.mesh_x)
    with pytest.raises(loom.UserError, match="larger than the world"):
        fd.execute([torch.randn(4)])


def _disagreeing_run(d, x_shape, shard_dim, mesh_devices, reduce, local):
    """Runs `reduce` (sum or max over dim 0, or None for a negation) of an input of `x_shape`
    sharded on `shard_dim` over `mesh_devices`, on this rank's `local` input; returns the
    loom.UserError's message."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=x_shape, contiguity=True)
        if reduce is None:
            fd.add_output(fd.ops.neg(x))
        else:
            fd.add_output(getattr(fd.ops, reduce)(x, dims=[0]))
        x.set_device_mesh(DeviceMesh(mesh_devices))
        x.split(shard_dim, d, inner_split=False)
        x.axis(shard_dim).parallelize(ParallelType.mesh_x)
    with pytest.raises(loom.UserError) as info:
        fd.execute([local])
    return str(info.value)


def _before(last):
    return "rank 0" if last == 1 else "ranks " + ", ".join(str(r) for r in range(last))


@pytest.mark.mpi
@pytest.mark.parametrize("what", ["sum_vs_max", "mesh_order", "sharded_dim", "whole_tensor"])
def test_ranks_that_disagree_all_raise(what):
    """The last rank differs from the others (the reduction, the order of the mesh, the sharded
    dim, or it passes the whole tensor where its shard is due): on the first run every rank raises
    the same loom.UserError naming that rank and what differs, instead of hanging or computing a
    wrong result; the ranks go on (the next test runs on them)."""
    d = Communicator.instance().size()
    if d < 2:
        pytest.skip("needs two ranks or more (mpirun -np 2)")
    last = Communicator.instance().rank() == d - 1
    odd, before = f"rank {d - 1}", _before(d - 1)
    devices = list(range(d))
    if what == "sum_vs_max":
        msg = _disagreeing_run(d, [2 * d, 3], 0, devices, "max" if last else "sum", torch.ones(2, 3))
        want = [f"{odd}'s fusion differs from {before}'s, first at line", "= sum(T0", "= max(T0"]
    elif what == "mesh_order":
        msg = _disagreeing_run(d, [2 * d, 3], 0, devices[::-1] if last else devices, None,
                               torch.ones(2, 3))
        want = [f"{odd}'s fusion differs from {before}'s", "mesh=["]
    elif what == "sharded_dim":
        msg = _disagreeing_run(d, [2 * d, 2 * d], 1 if last else 0, devices, None,
                               torch.ones(2 * d, 2) if last else torch.ones(2, 2 * d))
        want = [f"{odd}'s fusion differs from {before}'s, first at line"]
    else:
        msg = _disagreeing_run(d, [-1, -1], 0, devices, None,
                               torch.ones(2 * d if last else 2, 3))
        verb = "passes" if d == 2 else "pass"
        want = [f"input 0 (T0): {odd} passes f32 [{2 * d}, 3] where {before} {verb} f32 [2, 3] "
                f"({odd} may pass the whole tensor where its shard is due)"]
    assert "the ranks disagree on the first run of this sharded fusion" in msg
    for part in want:
        assert part in msg, msg


def _mesh_tv(shape, form, mesh):
    """A TensorView of `shape` on `mesh` sharded in one of nvFuser's forms."""
    fd = FusionDefinition()
    with fd:
        tv = fd.define_tensor(shape=shape, contiguity=True)
        fd.add_output(fd.ops.neg(tv))
        tv.set_device_mesh(mesh)
        if form == "inner":
            tv.split(0, mesh.size, inner_split=True)
            tv.axis(1).parallelize(ParallelType.mesh_x)
        elif form == "logical":
            tv.axis(0).parallelize(ParallelType.mesh_x)
        else:
            tv.outer_split(0, mesh.size)
            tv.axis(0).parallelize(ParallelType.mesh_x)
    return tv


@pytest.mark.parametrize("form", ["outer", "inner", "logical"])
def test_shard_tensor_of_a_tensor_view_in_each_form(form):
    """nvFuser's shard_tensor(tensor, tv): the rows device r holds under each form of split, and
    mesh.shard_tensor(tensor, axis=, device_id=) with nvFuser's keywords."""
    d = 4
    mesh = DeviceMesh(torch.arange(d))
    rows = 12 if form != "logical" else d
    t = torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3)
    tv = _mesh_tv([rows, 3], form, mesh)
    for r in range(d):
        got = shard_tensor(t, tv, device_id=r)
        want = {"outer": t[r * 3:(r + 1) * 3], "inner": t[r::d], "logical": t[r:r + 1]}[form]
        assert torch.equal(got, want), (form, r)
        if form == "outer":
            assert torch.equal(mesh.shard_tensor(t, axis=0, device_id=r), want)


def test_logical_dim_on_the_mesh_runs():
    """nvFuser's logical DID (a dim of extent d on mesh_x, no split) runs on this rank: each rank
    holds one row."""
    d = Communicator.instance().size()
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[d, 16], contiguity=True)
        fd.add_output(fd.ops.relu(x))
        fd.add_output(fd.ops.sum(x, dims=[1]))
        x.set_device_mesh(mesh)
        x.axis(0).parallelize(ParallelType.mesh_x)
    full = torch.randn(d, 16)
    local = shard_tensor(full, x)
    assert local.shape == (1, 16)
    relu, s = fd.execute([local])
    torch.testing.assert_close(relu, local.relu(), rtol=0, atol=0)
    torch.testing.assert_close(s, local.sum(1), rtol=1e-5, atol=1e-5)
    # nvFuser's executor object runs the same program.
    ex = nvfuser.multidevice.MultiDeviceExecutor(fd, nvfuser.multidevice.MultiDeviceExecutorParams())
    relu2, _ = ex.run([local])
    assert torch.equal(relu2, relu)


def test_inner_split_with_the_outer_piece_on_the_mesh_runs():
    """nvFuser's split(dim, f, inner_split=True) with the outer piece on mesh_x (issue 36): each
    rank holds one block of f rows when the extent is f * d; another extent names the tensor."""
    d = Communicator.instance().size()
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 8], contiguity=True)
        fd.add_output(fd.ops.exp(x))
        fd.add_output(fd.ops.sum(x, dims=[0]))
        x.set_device_mesh(mesh)
        x.split(0, 3, inner_split=True)  # [n/3, 3, 8], n = 3 * d
        x.axis(0).parallelize(ParallelType.mesh_x)
    torch.manual_seed(36)  # every rank the same whole tensor
    full = torch.randn(3 * d, 8)
    local = shard_tensor(full, x)
    rank = Communicator.instance().rank()
    torch.testing.assert_close(local, full[rank * 3:(rank + 1) * 3], rtol=0, atol=0)
    e, s = fd.execute([local])
    torch.testing.assert_close(e, local.exp())
    torch.testing.assert_close(s, full.sum(0), rtol=1e-5, atol=1e-5)  # an Allreduce over ranks
    with pytest.raises(loom.UserError, match=r"T0.* only when its extent is 3 x \d+ = \d+ .*"
                                             r"the arguments make that extent"):
        fd.execute([local[:2]])


def test_inner_piece_on_the_mesh_says_what_to_write():
    """A DID on the inner piece (strided rows) is refused, as nvFuser refuses it, saying what to
    write for blocks."""
    d = Communicator.instance().size()
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4 * d, 8], contiguity=True)
        fd.add_output(fd.ops.exp(x))
        x.set_device_mesh(mesh)
        x.split(0, d, inner_split=True)
        x.axis(1).parallelize(ParallelType.mesh_x)
    with pytest.raises(loom.UserError,
                       match=r"is the inner piece of split\(.*outer_split\(axis, \d+\)"):
        fd.execute([torch.randn(4, 8)])


def test_multidevice_module_surface():
    md = nvfuser.multidevice
    assert {"nccl", "ucc", "cuda"} <= {b.name for b in md.CommunicatorBackend}
    assert nvfuser.CommunicatorBackend is md.CommunicatorBackend  # nvFuser exports it at the top
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2])
        fd.add_output(fd.ops.neg(x))
    # Every backend runs, through the transport Loom picks by where the tensors are.
    for backend in md.CommunicatorBackend:
        params = md.MultiDeviceExecutorParams()
        params.backend_type = backend
        t = torch.randn(2)
        (out,) = md.MultiDeviceExecutor(fd, params).run([t])
        torch.testing.assert_close(out, -t)
    params.backend_type = "nccl"
    with pytest.raises(TypeError, match="backend_type must be a CommunicatorBackend"):
        md.MultiDeviceExecutor(fd, params)
    with pytest.raises(loom.NotSupportedError, match="Sharding"):
        md.Sharding()
    with pytest.raises(TypeError, match="takes no mesh"):
        shard_tensor(torch.zeros(2), x, DeviceMesh([0]))


# Tensor parallelism (issue 30): nvFuser's linear and MLP cases, run with one rank per device
# (the whole communicator: one process in the python tier, two under mpirun in the mpi tier).
# Only the inputs (and the outputs wanted sharded) are annotated; the resharding lowering finds
# the Allreduce, Allgather and ReduceScatter. Each rank checks its shard against torch in double.


def _sharded(tv, dim, mesh):
    tv.set_device_mesh(mesh)
    tv.outer_split(dim, mesh.size)
    tv.axis(dim).parallelize(ParallelType.mesh_x)


def _rank_mesh():
    d = Communicator.instance().size()
    return d, Communicator.instance().rank(), DeviceMesh(torch.arange(d))


def _whole(*shape):
    """The same global tensor on every rank (the seed is per test)."""
    return torch.randn(*shape)


def _close(got, want):
    torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-4, atol=1e-4)


def test_column_parallel_linear():
    """w [out, in] and the bias sharded on out, x replicated: each rank computes its block of the
    output features, with no communication."""
    d, rank, mesh = _rank_mesh()
    torch.manual_seed(30)
    x, w, b = _whole(3, 5, 16), _whole(8 * d, 16), _whole(8 * d)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[3, 5, 16], contiguity=True)
        tw = fd.define_tensor(shape=[8 * d, 16], contiguity=True)
        tb = fd.define_tensor(shape=[8 * d], contiguity=True)
        fd.add_output(fd.ops.linear(tx, tw, tb))
        tx.set_device_mesh(mesh)
        _sharded(tw, 0, mesh)
        _sharded(tb, 0, mesh)
    (y,) = fd.execute([x, shard_tensor(w, tw), shard_tensor(b, tb)])
    want = torch.nn.functional.linear(x.double(), w.double(), b.double())
    _close(y, want[..., rank * 8:(rank + 1) * 8])


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_row_parallel_linear(sequence_parallel):
    """x sharded on its last (in) dim and w on in: partial products, then an Allreduce (the output
    replicated) or a ReduceScatter (the output sharded on the sequence dim); the bias is added
    once."""
    d, rank, mesh = _rank_mesh()
    torch.manual_seed(31)
    x, w, b = _whole(3, 2 * d, 8 * d), _whole(6, 8 * d), _whole(6)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[3, 2 * d, 8 * d], contiguity=True)
        tw = fd.define_tensor(shape=[6, 8 * d], contiguity=True)
        tb = fd.define_tensor(shape=[6], contiguity=True)
        ty = fd.ops.linear(tx, tw, tb)
        fd.add_output(ty)
        _sharded(tx, 2, mesh)
        _sharded(tw, 1, mesh)
        tb.set_device_mesh(mesh)
        if sequence_parallel:
            _sharded(ty, 1, mesh)
        else:
            ty.set_device_mesh(mesh)
    (y,) = fd.execute([shard_tensor(x, tx), shard_tensor(w, tw), b])
    want = torch.nn.functional.linear(x.double(), w.double(), b.double())
    _close(y, want[:, rank * 2:(rank + 1) * 2] if sequence_parallel else want)


@pytest.mark.parametrize("scatter", [False, True])
def test_linear_reduce_scatter_nvfuser_form(scatter):
    """nvFuser's test_row_parallel_linear / test_linear_reduce_scatter: the input, the weight and
    the output split on their last dim (the output's is r{k}) with mesh_x on the outer piece;
    with scatter, the output's sequence dim on mesh_x too. Partial products summed by an
    Allreduce (the whole output on each rank) or a ReduceScatter (the rank's sequence block)."""
    d, rank, mesh = _rank_mesh()
    torch.manual_seed(33)
    b, s, e = 3, 5, 7
    x, w, bias = _whole(b, d * s, d * e), _whole(e, d * e), _whole(e)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, d * s, d * e], contiguity=True)
        tw = fd.define_tensor([-1, d * e], contiguity=True)
        tb = fd.define_tensor([e], contiguity=True)
        out = fd.ops.linear(tx, tw, tb)
        fd.add_output(out)
        assert out.ndim == 3 and out.num_dims() == 4
        tb.set_device_mesh(mesh)
        for tv in (tx, tw, out):
            tv.set_device_mesh(mesh)
            tv.split(-1, d, inner_split=False)
            tv.axis(-2).parallelize(ParallelType.mesh_x)
        if scatter:
            out.outer_split(1, d)
            out.axis(1).parallelize(ParallelType.mesh_x)
    (y,) = fd.execute([shard_tensor(x, tx), shard_tensor(w, tw), bias])
    want = torch.nn.functional.linear(x.double(), w.double(), bias.double())
    _close(y, want[:, rank * s:(rank + 1) * s] if scatter else want)
    _close(shard_tensor(want, out), want[:, rank * s:(rank + 1) * s] if scatter else want)


def test_row_parallel_linear_marked_on_the_output_only():
    """mesh_x on the output's r{k} alone, the input and the weight replicated: each rank slices
    its block of k from both, and the partial products are summed (an Allreduce)."""
    d, rank, mesh = _rank_mesh()
    torch.manual_seed(34)
    x, w = _whole(4, 6 * d), _whole(5, 6 * d)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[4, 6 * d], contiguity=True)
        tw = fd.define_tensor(shape=[5, 6 * d], contiguity=True)
        out = fd.ops.linear(tx, tw)
        fd.add_output(out)
        for tv in (tx, tw, out):
            tv.set_device_mesh(mesh)
        out.split(-1, d, inner_split=False)
        out.axis(-2).parallelize(ParallelType.mesh_x)
    (y,) = fd.execute([x, w])
    _close(y, torch.nn.functional.linear(x.double(), w.double()))


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_megatron_mlp(sequence_parallel):
    """Column-parallel linear, gelu, row-parallel linear: an Allreduce at the end; sequence
    parallel (input and output sharded on the sequence dim): an Allgather before the first linear
    and a ReduceScatter after the second."""
    d, rank, mesh = _rank_mesh()
    torch.manual_seed(32)
    b_, s, e, h = 2, 4 * d, 16, 8 * d
    x, w1, b1, w2, b2 = _whole(b_, s, e), _whole(h, e), _whole(h), _whole(e, h), _whole(e)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[b_, s, e], contiguity=True)
        tw1 = fd.define_tensor(shape=[h, e], contiguity=True)
        tb1 = fd.define_tensor(shape=[h], contiguity=True)
        tw2 = fd.define_tensor(shape=[e, h], contiguity=True)
        tb2 = fd.define_tensor(shape=[e], contiguity=True)
        hidden = fd.ops.gelu(fd.ops.linear(tx, tw1, tb1), approximate="tanh")
        ty = fd.ops.linear(hidden, tw2, tb2)
        fd.add_output(ty)
        for tv, dim in ((tw1, 0), (tb1, 0), (tw2, 1)):
            _sharded(tv, dim, mesh)
        tb2.set_device_mesh(mesh)
        if sequence_parallel:
            _sharded(tx, 1, mesh)
            _sharded(ty, 1, mesh)
        else:
            tx.set_device_mesh(mesh)
            ty.set_device_mesh(mesh)
    args = [shard_tensor(x, tx) if sequence_parallel else x, shard_tensor(w1, tw1),
            shard_tensor(b1, tb1), shard_tensor(w2, tw2), b2]
    (y,) = fd.execute(args)
    f = torch.nn.functional
    hid = f.gelu(f.linear(x.double(), w1.double(), b1.double()), approximate="tanh")
    want = f.linear(hid, w2.double(), b2.double())
    _close(y, want[:, rank * 4:(rank + 1) * 4] if sequence_parallel else want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sequence_parallel_dropout(dtype):
    """Dropout of a sequence-parallel activation [b, s, e] sharded on s, and rand_like of it
    sharded alike: each rank draws its block of the unsharded draw, so its shard equals the
    matching slice of the unsharded fusion's result (same seed and offset), bit for bit."""
    d, rank, mesh = _rank_mesh()
    torch.manual_seed(33)
    b_, s, e = 2, 8 * d, 12
    x = _whole(b_, s, e).to(dtype)

    def define(sharded):
        with FusionDefinition() as fd:
            ldt = DataType.Float if dtype == torch.float32 else DataType.BFloat16
            tx = fd.define_tensor(shape=[b_, s, e], contiguity=True, dtype=ldt)
            out, mask = fd.ops.dropout(tx, 0.3, rng_seed=2026, rng_offset=12)
            r = fd.ops.rand_like(tx, rng_seed=7, rng_offset=1)
            fd.add_output(out)
            fd.add_output(mask)
            fd.add_output(r)
            if sharded:
                _sharded(tx, 1, mesh)
                _sharded(r, 1, mesh)
        return fd

    whole = define(False).execute([x])
    local = define(True).execute([shard_tensor(x, 1, mesh)])
    rows = slice(rank * 8, (rank + 1) * 8)
    for got, want in zip(local, whole):
        assert got.shape == (b_, 8, e)
        assert torch.equal(got, want[:, rows]), (got, want[:, rows])
    # The draw is a real one: about 30% dropped, and the ranks' blocks differ.
    kept = whole[1].float().mean().item()
    assert 0.55 < kept < 0.85
    if d > 1:
        assert not torch.equal(whole[2][:, :8], whole[2][:, 8:16])
