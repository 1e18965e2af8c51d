# SPDX-License-Identifier: Apache-2.0
# Sharding forms and multidevice helpers as nvFuser's multidevice tests use them (issue 36), run
# with one rank per device: one process in the python tier, two under mpirun in the mpi tier.
# Each rank checks its shard against torch on the whole (unsharded) tensors.
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition, ParallelType
from loom.direct.multidevice import Communicator, DeviceMesh, shard_tensor


def _world():
    c = Communicator.instance()
    return c.size(), c.rank(), DeviceMesh(torch.arange(c.size()))


@pytest.mark.mpi
@pytest.mark.parametrize("dim", [0, 1])
def test_dim_of_the_mesh_size_outer_split_by_it(dim):
    """A dim whose extent is the mesh size, outer-split by it (nvFuser's `(d, d * n)` tensors).
    With one device that dim is a size-1 broadcast on a one-device mesh axis: nothing to shard,
    and the fusion runs as written (it was refused as a sharded broadcast)."""
    d, rank, mesh = _world()
    n = 3
    torch.manual_seed(36)
    whole = torch.randn(d, d * n)
    with FusionDefinition() as fd:
        x = fd.define_tensor((d, d * n), contiguity=True, dtype=DataType.Float)
        y = fd.ops.mul(x, x)
        fd.add_output(y)
        for tv in (x, y):
            tv.set_device_mesh(mesh)
            tv.outer_split(dim, d)
            tv.axis(dim).parallelize(ParallelType.mesh_x)
    local = shard_tensor(whole, x)
    want = (whole * whole).narrow(dim, rank * (whole.shape[dim] // d), whole.shape[dim] // d)
    (got,) = fd.execute([local])
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_sharded_size_one_dim_over_several_devices_says_what_to_write():
    """A size-1 dim split over a mesh axis of two devices has nothing to give the second: the
    error names the tensor, the split and what to write (raised by the sharding passes, which
    shard_tensor of the unannotated output runs too, so one process sees it)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor((1, 4), contiguity=True, dtype=DataType.Float)
        y = fd.ops.neg(x)
        fd.add_output(y)
        x.set_device_mesh(DeviceMesh([0, 1]))
        x.outer_split(0, 2)
        x.axis(0).parallelize(ParallelType.mesh_x)
    with pytest.raises(loom.UserError, match=r"T0: DIDx loop ID .* shards the broadcast ID .* "
                                             r"through outer_split\(.*\), which has one element "
                                             r"for 2 devices: leave it unsharded"):
        shard_tensor(torch.zeros(1, 4), y)
    # The unsplit form (mesh_x on the size-1 dim itself) says the same, not "write outer_split".
    with FusionDefinition() as fd:
        x = fd.define_tensor((1, 4), contiguity=True, dtype=DataType.Float)
        y = fd.ops.neg(x)
        fd.add_output(y)
        x.set_device_mesh(DeviceMesh([0, 1]))
        x.axis(0).parallelize(ParallelType.mesh_x)
    with pytest.raises(loom.UserError, match=r"T0: DIDx shards the broadcast ID .*, which has one "
                                             r"element for 2 devices: leave it unsharded"):
        shard_tensor(torch.zeros(1, 4), y)


@pytest.mark.mpi
def test_shard_tensor_of_an_unannotated_output_is_its_propagated_shard():
    """shard_tensor(tensor, tv) of an output the user gave no mesh (a column-parallel linear's,
    sharded on the output features by propagation) cuts the shard the rank's output is, so
    nvFuser's `shard_tensor(out_ref, out_tv)` compares like with like; the user's fusion keeps
    no mesh on it."""
    d, rank, mesh = _world()
    e = 4
    torch.manual_seed(37)
    x, w, b = torch.randn(2, 3, e), torch.randn(d * e, e), torch.randn(d * e)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, -1, e])
        tw = fd.define_tensor([d * e, e])
        tb = fd.define_tensor([d * e])
        out = fd.ops.linear(tx, tw, tb)
        fd.add_output(out)
        for t in (tx, tw, tb):
            t.set_device_mesh(mesh)
        for t in (tw, tb):
            t.outer_split(0, d)
            t.axis(0).parallelize(ParallelType.mesh_x)
    want = torch.nn.functional.linear(x.double(), w.double(), b.double())
    cut = shard_tensor(want, out)
    torch.testing.assert_close(cut, want[..., rank * e:(rank + 1) * e], rtol=0, atol=0)
    assert not out.has_device_mesh()  # the user's fusion as written
    (got,) = fd.execute([shard_tensor(x, tx), shard_tensor(w, tw), shard_tensor(b, tb)])
    torch.testing.assert_close(got, cut.float(), rtol=1e-5, atol=1e-5)
    # A tensor no sharding reaches is whole.
    torch.testing.assert_close(shard_tensor(x, tx), x, rtol=0, atol=0)


def test_linear_of_a_three_d_weight_without_a_mesh():
    """nvFuser's linear with a 3-D weight [g, n, k] (and bias [g, n]): out [g, ..., n], one
    linear per leading index; checked against torch in double."""
    torch.manual_seed(38)
    x, w, b = torch.randn(2, 5, 6), torch.randn(3, 4, 6), torch.randn(3, 4)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, -1, 6])
        tw = fd.define_tensor([3, 4, 6], contiguity=True)
        tb = fd.define_tensor([3, 4], contiguity=True)
        fd.add_output(fd.ops.linear(tx, tw, tb))
        fd.add_output(fd.ops.linear(tx, tw))
    with_bias, without = fd.execute([x, w, b])
    want = torch.stack([torch.nn.functional.linear(x.double(), w[i].double(), b[i].double())
                        for i in range(3)])
    assert with_bias.shape == (3, 2, 5, 4)
    torch.testing.assert_close(with_bias, want.float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(without, (want - b.double()[:, None, None, :]).float(),
                               rtol=1e-5, atol=1e-5)
    with FusionDefinition() as bad:
        tx = bad.define_tensor([-1, 6])
        tw = bad.define_tensor([3, 4, 6])
        tb = bad.define_tensor([12])
        with pytest.raises(loom.UserError, match=r"linear: with the 3-D weight T1 .* the bias "
                                                 r"T2 .* must be \[groups, out_features\]"):
            bad.ops.linear(tx, tw, tb)


@pytest.mark.mpi
def test_linear_of_a_weight_sharded_on_its_leading_dim():
    """The weight [d, e, e] and bias [d, e] with their leading dim on mesh_x (no split), the
    input replicated: each rank computes out[rank] = x @ w[rank]^T + b[rank] with no
    communication, and get_output_shardings says dim 0 is sharded (more than one device; one
    device's size-1 dim is nothing to shard)."""
    d, rank, mesh = _world()
    e = 8
    torch.manual_seed(39)
    x, w, b = torch.randn(2, 3, e), torch.randn(d, e, e), torch.randn(d, e)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([2, 3, e])
        tw = fd.define_tensor([d, e, e], contiguity=True)
        tb = fd.define_tensor([d, e], contiguity=True)
        out = fd.ops.linear(tx, tw, tb)
        fd.add_output(out)
        for t in (tx, tw, tb):
            t.set_device_mesh(mesh)
        for t in (tw, tb):
            t.axis(0).parallelize(ParallelType.mesh_x)
    (got,) = fd.execute([x, shard_tensor(w, tw), shard_tensor(b, tb)])
    want = torch.nn.functional.linear(x.double(), w[rank].double(), b[rank].double())
    assert got.shape == (1, 2, 3, e)
    torch.testing.assert_close(got[0], want.float(), rtol=1e-5, atol=1e-5)
    (sharding,) = fd.fec.get_output_shardings()
    assert sharding.axis_sharded_on(ParallelType.mesh_x) == (0 if d > 1 else -1)
    assert sharding.axis_sharded_on(ParallelType.mesh_y) == -1


def test_output_shardings_of_a_fusion_without_meshes_is_empty():
    with FusionDefinition() as fd:
        x = fd.define_tensor([2])
        fd.add_output(fd.ops.neg(x))
    fd.execute([torch.ones(2)])
    assert fd.fec.get_output_shardings() == []


@pytest.mark.parametrize("inner_split", [False, True])
@pytest.mark.parametrize("linear", [False, True])
def test_rfactor_of_a_matmul_output_without_devices(linear, inner_split):
    """rfactor of a matmul's or linear's r{k}, split once, on one device: the partial products
    over blocks of k (a batched matmul, loop [m, n, kept, r{piece}] as nvFuser's) and their sum
    into the same output tensor."""
    torch.manual_seed(39)
    a = torch.randn(4, 12)
    b = torch.randn(5, 12) if linear else torch.randn(12, 5)
    with FusionDefinition() as fd:
        ta = fd.define_tensor([4, 12], contiguity=True)
        tb = fd.define_tensor(list(b.shape), contiguity=True)
        out = (fd.ops.linear if linear else fd.ops.matmul)(ta, tb)
        fd.add_output(out)
        out.split(-1, 3, inner_split=inner_split)
        local = out.rfactor(axes=[-1])
        assert local.num_dims() == 4
        assert not local.axis(-2).is_reduction() and local.axis(-1).is_reduction()
        assert out.get_logical_domain()[-1].is_reduction()
    (got,) = fd.execute([a, b])
    want = a.double() @ (b.double().T if linear else b.double())
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-5)
    assert "matmul" in fd.host_program()


def test_rfactor_of_a_matmul_output_names_the_form_it_takes():
    """rfactor of a matmul output whose r{k} is not split once is refused naming the form."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 8], contiguity=True)
        b = fd.define_tensor([8, 3], contiguity=True)
        out = fd.ops.matmul(a, b)
        fd.add_output(out)
        with pytest.raises(loom.UserError, match=r"rfactor of T2 .*the contracted r\{k\} split "
                                                 r"once"):
            out.rfactor(axes=[-1])


def test_swizzle1d_is_not_supported():
    """nvFuser's test_decompose_reduce_scatter swizzles the rfactored matmul's loop for stream
    parallelism; Loom has neither, and says so by name."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 8], contiguity=True)
        fd.add_output(a)
        with pytest.raises(loom.NotSupportedError, match="swizzle1d"):
            a.swizzle1d(0, ParallelType.mesh_x)


@pytest.mark.mpi
@pytest.mark.text_form_definition
@pytest.mark.parametrize("dtype", [torch.float32, torch.half])
@pytest.mark.parametrize("scatter", [False, True])
def test_row_parallel_matmul_by_rfactor(scatter, dtype):
    """nvFuser's test_row_parallel_matmul: k sharded on both operands, out.outer_split(-1, d),
    local = out.rfactor([-1]) with mesh_x on local's i{d}: each rank's partial product of its
    block of k, summed by an Allreduce. With out's m on mesh_x too, f32's sum is out itself and
    becomes a ReduceScatter; an f16 out is the cast of an f32 sum, which is allreduced and then
    sliced (no second collective)."""
    d, rank, mesh = _world()
    e = 8
    torch.manual_seed(42)
    a, b = torch.randn(4 * d, d * e, dtype=dtype), torch.randn(d * e, e, dtype=dtype)
    ldtype = DataType.Float if dtype == torch.float32 else DataType.Half
    with FusionDefinition() as fd:
        ta = fd.define_tensor([-1, d * e], contiguity=True, dtype=ldtype)
        tb = fd.define_tensor([d * e, e], contiguity=True, dtype=ldtype)
        out = fd.ops.matmul(ta, tb)
        fd.add_output(out)
        for t in (ta, tb, out):
            t.set_device_mesh(mesh)
        ta.outer_split(-1, d)
        ta.axis(-2).parallelize(ParallelType.mesh_x)
        tb.outer_split(0, d)
        tb.axis(0).parallelize(ParallelType.mesh_x)
        out.outer_split(-1, d)
        local = out.rfactor(axes=[-1])
        local.set_device_mesh(mesh)
        local.axis(-2).parallelize(ParallelType.mesh_x)
        if scatter:
            out.outer_split(0, d)
            out.axis(0).parallelize(ParallelType.mesh_x)
    (got,) = fd.execute([shard_tensor(a, ta), shard_tensor(b, tb)])
    want = a.double() @ b.double()
    if scatter:
        want = want[rank * 4:(rank + 1) * 4]
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)
    program = fd.host_program()
    if d > 1:
        # m sharded: a ReduceScatter (bf16: of the f32 partial sums, each device casting its
        # slice after it); else an Allreduce. One communication either way.
        assert ("ReduceScatter" if scatter else "Allreduce") in program, program
        assert program.count("communicate") == 1, program


@pytest.mark.mpi
@pytest.mark.parametrize("bshe", [False, True])
def test_head_parallel_sdpa_keeps_the_operands_layout(bshe):
    """nvFuser's test_sdpa: q, k, v and the output gradient [d, b, h/d, s, e] sharded on their
    leading dim, declared BHSE or BSHE (stride_order [4, 3, 1, 2, 0]); the attention output and
    the gradients come back in the operands' layout (BSHE: transpose(2, 3) contiguous)."""
    d, rank, mesh = _world()
    b, s, h, e = 2, 16, 2 * d, 8
    stride_order = [4, 3, 1, 2, 0] if bshe else [4, 3, 2, 1, 0]
    torch.manual_seed(43)
    whole = [torch.randn(b, h, s, e) for _ in range(4)]

    def head_parallelize(t):
        t = t.detach().view(b, d, h // d, s, e).narrow(1, rank, 1)
        if bshe:
            return t.permute(1, 0, 3, 2, 4).contiguous().transpose(2, 3)
        return t.transpose(0, 1).contiguous()

    with FusionDefinition() as fd:
        q, k, v, g = (fd.define_tensor(shape=[d, b, h // d, s, e], contiguity=True,
                                       stride_order=stride_order) for _ in range(4))
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=0.0, is_causal=True)
        grads = fd.ops.sdpfa_bwd(g, q, k, v, attn, lse, 0.0, True, seed, offset, None)
        for t in (attn, *grads):
            fd.add_output(t)
        for t in fd.fusion.inputs():
            t.set_device_mesh(mesh)
            t.axis(0).parallelize(ParallelType.mesh_x)
    got = fd.execute([head_parallelize(t) for t in whole])
    leaves = [t.double().requires_grad_() for t in whole[:3]]
    ref = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
    ref.backward(whole[3].double())
    for actual, want in zip(got, (ref, *(leaf.grad for leaf in leaves))):
        assert (actual.transpose(2, 3) if bshe else actual).is_contiguous(), actual.stride()
        torch.testing.assert_close(actual.double(), head_parallelize(want), rtol=1e-4, atol=1e-5)


@pytest.mark.mpi
def test_column_parallel_grouped_mm():
    """nvFuser's test_column_parallel_grouped_mm: the experts' weights [g, n, k] sharded on n,
    the tokens replicated; each rank computes its block of the output features, no
    communication."""
    d, rank, mesh = _world()
    g, k, n, m = 4, 16, 8 * d, 32
    torch.manual_seed(44)
    inp = torch.randn(m, k, dtype=torch.bfloat16)
    w = torch.randn(g, n, k, dtype=torch.bfloat16)
    group_sizes = [5, 7, 9, 11]
    offsets = torch.cumsum(torch.tensor(group_sizes), 0, dtype=torch.int32)
    with FusionDefinition() as fd:
        tinp = fd.define_tensor([-1, k], dtype=DataType.BFloat16, contiguity=True)
        tw = fd.define_tensor([g, n, k], dtype=DataType.BFloat16, contiguity=True)
        tw_t = fd.ops.permute(tw, [0, 2, 1])
        toffs = fd.define_tensor([g], dtype=DataType.Int32, contiguity=True)
        out = fd.ops.grouped_mm(tinp, tw_t, toffs)
        fd.add_output(out)
        for t in (tinp, tw, toffs):
            t.set_device_mesh(mesh)
        tw.outer_split(1, d)
        tw.axis(1).parallelize(ParallelType.mesh_x)
    (got,) = fd.execute([inp, shard_tensor(w, tw), offsets])
    want = torch.cat([gi.float() @ gw.float().T
                      for gi, gw in zip(inp.split(group_sizes), w.unbind())], dim=0)
    block = n // d
    torch.testing.assert_close(got.float(), want[:, rank * block:(rank + 1) * block],
                               rtol=2e-2, atol=2e-2)
    if d > 1:
        assert "communicate" not in fd.host_program(), fd.host_program()


@pytest.mark.mpi
def test_row_parallel_matmul_from_the_operands_shardings():
    """What to write instead of the rFactor: k sharded on both operands, the output left
    unannotated; each rank's output is the whole product (the partials' Allreduce)."""
    d, rank, mesh = _world()
    e = 8
    torch.manual_seed(40)
    a, b = torch.randn(4, d * e), torch.randn(d * e, e)
    with FusionDefinition() as fd:
        ta = fd.define_tensor([-1, d * e], contiguity=True)
        tb = fd.define_tensor([d * e, e], contiguity=True)
        fd.add_output(fd.ops.matmul(ta, tb))
        for t, dim in ((ta, 1), (tb, 0)):
            t.set_device_mesh(mesh)
            t.outer_split(dim, d)
            t.axis(dim).parallelize(ParallelType.mesh_x)
    (got,) = fd.execute([shard_tensor(a, ta), shard_tensor(b, tb)])
    torch.testing.assert_close(got, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.mpi
@pytest.mark.parametrize("scatter", [False, True])
def test_reduction_id_on_the_mesh_sums_the_partials(scatter):
    """nvFuser marks a sum over a sharded dim with mesh_x on the output's reduction ID (the
    devices' partials are summed). It shards nothing of the output: the rank gets the whole sum
    (an Allreduce) or, with the output's other dim also on mesh_x, its block of it (a
    ReduceScatter). Either was an internal error before."""
    d, rank, mesh = _world()
    torch.manual_seed(41)
    x = torch.randn(2 * d, 3 * d)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, -1], contiguity=True)
        out = fd.ops.sum(tx, [1])
        fd.add_output(out)
        for t in (tx, out):
            t.set_device_mesh(mesh)
            t.outer_split(1, d)
            t.axis(1).parallelize(ParallelType.mesh_x)
        if scatter:
            out.outer_split(0, d)
            out.axis(0).parallelize(ParallelType.mesh_x)
    (got,) = fd.execute([shard_tensor(x, tx)])
    want = x.double().sum(1)
    if scatter:
        want = want[rank * 2:(rank + 1) * 2]
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(shard_tensor(x.double().sum(1), out), want, rtol=0, atol=0)


def test_sharded_expanded_broadcast_says_what_to_write():
    """A DID on an expanded broadcast dim (one value repeated) is refused, saying to shard a
    tensor where the dim is an iteration dim; the message's form runs."""
    d, rank, mesh = _world()
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        y = fd.ops.broadcast_in_dim(x, [2 * d, 4], [1])
        z = fd.ops.neg(y)
        fd.add_output(z)
        for t in (x, y, z):
            t.set_device_mesh(mesh)
        z.outer_split(0, d)
        z.axis(0).parallelize(ParallelType.mesh_x)
    with pytest.raises(loom.UserError, match=r"T\d+: DIDx loop ID .* shards the broadcast ID .* "
                                             r"an expanded broadcast .* leave it unsharded"):
        fd.execute([torch.randn(4)])
    torch.manual_seed(42)
    x_whole, base = torch.randn(4), torch.randn(2 * d, 4)
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        b = fd.define_tensor([2 * d, 4], contiguity=True)
        z = fd.ops.add(fd.ops.broadcast_in_dim(x, [2 * d, 4], [1]), b)
        fd.add_output(z)
        for t in (x, b, z):
            t.set_device_mesh(mesh)
        z.outer_split(0, d)
        z.axis(0).parallelize(ParallelType.mesh_x)
    (got,) = fd.execute([x_whole, shard_tensor(base, b)])
    want = (x_whole.double()[None, :] + base.double())[rank * 2:(rank + 1) * 2]
    torch.testing.assert_close(got, want.float(), rtol=1e-6, atol=1e-6)


@pytest.mark.mpi
def test_local_piece_merged_with_the_next_dim():
    """A loop merge of the local piece with the next dim ([DIDx, s/d, e] -> [DIDx, s/d * e]) is
    loop scheduling: shard_tensor cuts the same block (it refused the merge) and the fusion
    runs."""
    d, rank, mesh = _world()
    torch.manual_seed(43)
    x = torch.randn(2 * d, 3)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.exp(tx))
        tx.set_device_mesh(mesh)
        tx.outer_split(0, d)
        tx.axis(0).parallelize(ParallelType.mesh_x)
        tx.merge(1, 2)
    local = shard_tensor(x, tx)
    torch.testing.assert_close(local, x[rank * 2:(rank + 1) * 2], rtol=0, atol=0)
    (got,) = fd.execute([local])
    torch.testing.assert_close(got, x.double().exp()[rank * 2:(rank + 1) * 2].float())


@pytest.mark.mpi
def test_head_sharded_attention_returns_its_seed_and_offset():
    """nvFuser's transformer forward returns sdpfa_fwd's seed and offset from a sharded fusion:
    tensors made from no tensor and read by none, which no propagation reaches (an internal
    error before). They go unsharded on the fusion's mesh; the attention is sharded by heads."""
    d, rank, mesh = _world()
    torch.manual_seed(5)
    q, k, v = (torch.randn(1, 2 * d, 8, 4) for _ in range(3))
    with FusionDefinition() as fd:
        tq, tk, tv = (fd.define_tensor([1, 2 * d, 8, 4], contiguity=True) for _ in range(3))
        out, _, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, None, True, None,
                                                rng_seed=11, rng_offset=3)
        for t in (out, seed, offset):
            fd.add_output(t)
        for t in (tq, tk, tv):
            t.set_device_mesh(mesh)
            t.outer_split(1, d)
            t.axis(1).parallelize(ParallelType.mesh_x)
    got, got_seed, got_offset = fd.execute([shard_tensor(t, tq) for t in (q, k, v)])
    want = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=True)[:, rank * 2:(rank + 1) * 2]
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-5)
    # nvFuser's RNG state: [2] (seed, offset) and the 0-D offset, whole on every rank.
    assert got_seed.tolist() == [11, 3] and int(got_offset) == 3


@pytest.fixture(scope="module")
def process_group():
    """torch.distributed over gloo on the MPI ranks (DTensors need a process group)."""
    import os

    import torch.distributed as dist

    if not dist.is_initialized():
        c = Communicator.instance()
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        dist.init_process_group("gloo", rank=c.rank(), world_size=c.size())
    yield dist


@pytest.mark.mpi
def test_dtensor_execute_places_outputs_as_the_fusion_shards_them(process_group):
    """nvFuser's dtensor_execute: the fusion runs on the DTensors' local shards (the definition
    sharded its inputs as their placements say) and returns DTensors on the same mesh, Shard(d)
    where the fusion shards output dim d, Replicate where it reduces across devices."""
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    import loom.direct as nvfd

    dist = process_group
    d, rank, _ = _world()
    mesh = dist.device_mesh.init_device_mesh("cpu", [d])
    loom_mesh = DeviceMesh(mesh.mesh.tolist())
    torch.manual_seed(7)
    x, w = torch.randn(3, 4 * d), torch.randn(5, 4 * d)
    x_dt = distribute_tensor(x, mesh, [Shard(1)])
    w_dt = distribute_tensor(w, mesh, [Shard(1)])
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, -1], contiguity=True)
        tw = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.add(tx, 1.0))       # sharded like x
        fd.add_output(fd.ops.linear(tx, tw))     # row parallel: a sum across devices
        for t in (tx, tw):
            t.set_device_mesh(loom_mesh)
            t.outer_split(1, d)
            t.axis(1).parallelize(ParallelType.mesh_x)
    plus_one, y = nvfd.dtensor_execute(fd, [x_dt, w_dt])
    assert isinstance(plus_one, DTensor) and plus_one.placements == (Shard(1),)
    assert plus_one.device_mesh == mesh
    torch.testing.assert_close(plus_one.to_local(), x_dt.to_local() + 1)
    assert y.placements == (Replicate(),)
    torch.testing.assert_close(y.to_local(), x @ w.t(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(plus_one.full_tensor(), x + 1)
