# SPDX-License-Identifier: Apache-2.0
# nvFuser semantics Loom matches (issue 36's compatibility classes), written the way nvFuser's
# Python tests are: a fusion defined, run on CPU (and CUDA where there is one) and compared with
# torch, and with the reference evaluator through fd.validate where the values matter.
import pytest
import torch

from loom.direct import DataType, FusionDefinition


# where selects and does no arithmetic: the result has the operands' result type, half and
# bfloat16 included (torch.where's dtype), and two Scalars keep their own dtype (nvFuser's rule).
@pytest.mark.parametrize("da, db", [(torch.float16, torch.float16), (torch.bfloat16,) * 2,
                                    (torch.float16, torch.float32), (torch.bfloat16, torch.float16),
                                    (torch.int32, torch.int64), (torch.bool, torch.float16)])
def test_where_keeps_the_operands_dtype(device, da, db):
    g = torch.Generator().manual_seed(36)
    pred = torch.rand(7, generator=g) > 0.5
    a = (torch.randn(7, generator=g) * 4).to(da).to(device)
    b = (torch.randn(7, generator=g) * 4).to(db).to(device)
    pred = pred.to(device)
    with FusionDefinition() as fd:
        tp, ta, tb = fd.from_pytorch(pred), fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.where(tp, ta, tb))
        fd.add_output(fd.ops.where(tp, ta, fd.define_scalar(2.5)))
    out = fd.validate([pred, a, b])
    for got, want in zip(out, [torch.where(pred, a, b), torch.where(pred, a, 2.5)]):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("value, dtype, want", [
    (3.0, None, torch.float64), (3.0, DataType.Float, torch.float32),
    (3.0, DataType.Double, torch.float64), (3, DataType.Int32, torch.int32),
    (3, None, torch.int64), (complex(3.0), None, torch.complex128),
    (3.0 + 0j, DataType.ComplexFloat, torch.complex64), (True, DataType.Bool, torch.bool)])
def test_where_of_two_scalars_has_their_dtype(device, value, dtype, want):
    pred = torch.tensor([True, False, True], device=device)
    other = value * 0 if not isinstance(value, bool) else False
    with FusionDefinition() as fd:
        tp = fd.from_pytorch(pred)
        if dtype is None:
            a, b = fd.define_scalar(value), fd.define_scalar(other)
        else:
            a, b = fd.define_scalar(value, dtype), fd.define_scalar(other, dtype)
        fd.add_output(fd.ops.where(tp, a, b))
    (out,) = fd.validate([pred])
    assert out.dtype == want
    torch.testing.assert_close(out, torch.where(pred, torch.tensor(value, dtype=want),
                                                torch.tensor(other, dtype=want)).to(device))


# embedding_fwd takes nvFuser's optional arguments as numbers or Scalars (also ones given at
# execute); max_norm renormalizes the picked rows as torch does (the weight is not written back).
@pytest.mark.parametrize("norm_type", [None, 1.0, 3.0, float("inf"), 0.0])
@pytest.mark.parametrize("runtime", [False, True])
def test_embedding_max_norm(device, norm_type, runtime):
    g = torch.Generator().manual_seed(36)
    weight = (torch.randn(10, 6, generator=g) * 3).to(device)
    weight[4] = 0.01  # a row under max_norm keeps its values
    idx = torch.tensor([[4, 0, 9], [2, 2, 7]], device=device)
    max_norm = 1.5
    with FusionDefinition() as fd:
        ti, tw = fd.from_pytorch(idx), fd.from_pytorch(weight)
        if runtime:
            m = fd.define_scalar(None, dtype=DataType.Double)
            p = None if norm_type is None else fd.define_scalar(None, dtype=DataType.Double)
            pad = fd.define_scalar(None, dtype=DataType.Int)
        else:
            m, p, pad = max_norm, norm_type, 3
        fd.add_output(fd.ops.embedding_fwd(ti, tw, pad, m, p, fd.define_scalar(True), None))
    inputs = [idx, weight]
    if runtime:
        inputs += [max_norm] + ([] if norm_type is None else [norm_type]) + [3]
    before = weight.clone()
    (out,) = fd.validate(inputs)
    assert torch.equal(weight, before)
    # The oracle runs on the CPU: torch's CUDA renorm sums pow(x, p) without abs() for p other
    # than 1 and 2, so it is no p-norm there (p = 3 lets negative entries cancel); Loom computes
    # the norm that torch's CPU path and the documentation define, on both backends.
    want = torch.nn.functional.embedding(idx.cpu(), weight.cpu().clone(), 3, max_norm,
                                         2.0 if norm_type is None else norm_type)
    torch.testing.assert_close(out.cpu(), want)
    if norm_type != 0.0:  # (the 0-"norm" counts nonzeros: 6 > max_norm for every row)
        torch.testing.assert_close(out[0, 0], weight[4])


def test_embedding_max_norm_keeps_half_weights_half(device):
    weight = torch.randn(10, 6, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    weight = weight.to(device)
    idx = torch.tensor([1, 5, 5], device=device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.embedding_fwd(fd.from_pytorch(idx), fd.from_pytorch(weight),
                                           None, 0.5))
    (out,) = fd.validate([idx, weight])
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, torch.nn.functional.embedding(idx, weight.clone(),
                                                                  max_norm=0.5))


def test_embedding_argument_errors():
    with FusionDefinition() as fd:
        idx = fd.define_tensor([-1], dtype=DataType.Int)
        w = fd.define_tensor([-1, -1], dtype=DataType.Int)
        fw = fd.define_tensor([-1, -1])
        with pytest.raises(Exception, match="max_norm renormalizes rows, so the weight T1 "
                                            "must be floating, got i64"):
            fd.ops.embedding_fwd(idx, w, None, 1.0)
        with pytest.raises(Exception, match="padding_idx must be an int or an integer Scalar, "
                                            "got 1.5"):
            fd.ops.embedding_fwd(idx, fw, 1.5)
        with pytest.raises(Exception, match="max_norm and norm_type are numbers or Scalars"):
            fd.ops.embedding_fwd(idx, fw, None, fw)


# execute() returns one tensor per add_output without alias_input, in call order, as nvFuser
# does: a tensor added twice comes twice, an input added as an output is the input itself, and
# an in-place output is returned (as its input's tensor, updated) wherever it is added plainly.
def test_output_added_twice_is_returned_twice(device):
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(1)).to(device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        r = fd.ops.relu(t)
        fd.add_output(r)
        fd.add_output(fd.ops.neg(t))
        fd.add_output(r)
    out = fd.validate([x])
    assert len(out) == 3
    torch.testing.assert_close(out[0], torch.relu(x))
    torch.testing.assert_close(out[1], -x)
    torch.testing.assert_close(out[2], torch.relu(x))


def test_input_added_as_output_is_returned_as_itself(device):
    x = torch.randn(4, generator=torch.Generator().manual_seed(2)).to(device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.exp(t))
        fd.add_output(t)
    out = fd.execute([x])
    assert len(out) == 2 and out[1] is x
    torch.testing.assert_close(out[0], torch.exp(x))


@pytest.mark.parametrize("order", ["alias_first", "plain_first"])
def test_in_place_output_returned_where_added_plainly(device, order):
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(3)).to(device)
    before = x.clone()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        r = fd.ops.where(fd.ops.gt(t, 0.0), t, 0.0)
        if order == "plain_first":
            fd.add_output(r)
        fd.add_output(r, alias_input=t)
        fd.add_output(r)
        fd.add_output(t)
    out = fd.validate([x])
    assert len(out) == (3 if order == "plain_first" else 2)
    assert all(o.data_ptr() == x.data_ptr() for o in out)
    torch.testing.assert_close(x, torch.relu(before))


# A reshape that merges or splits an expanded broadcast reads every expanded element: the result
# has the expanded size there (the loops covered the size-1 extent, leaving most outputs unset).
@pytest.mark.parametrize("shape", [[2, 12], [6, 4], [24], [2, 3, 2, 2], [2, 3, 4], [4, 3, 2]])
@pytest.mark.parametrize("symbolic", [False, True])
def test_reshape_of_an_expanded_broadcast(device, shape, symbolic):
    b = torch.randn(2, 1, 4, generator=torch.Generator().manual_seed(6)).to(device)
    with FusionDefinition() as fd:
        if symbolic:
            t = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
        else:
            t = fd.define_tensor(shape=[2, 1, 4], contiguity=[True, None, True])
        e = fd.ops.expand(t, [2, 3, 4])
        fd.add_output(fd.ops.reshape(e, shape))
        fd.add_output(fd.ops.reshape(fd.ops.mul(e, 2.0), shape))
    out = fd.validate([b])
    torch.testing.assert_close(out[0], b.expand(2, 3, 4).reshape(shape))
    torch.testing.assert_close(out[1], (b * 2).expand(2, 3, 4).reshape(shape))


# shape() and size() of an expanded broadcast give its expanded size, as nvFuser's do (the size
# a later broadcast_in_dim or reshape needs), for sizes known at definition or only at execute.
@pytest.mark.parametrize("symbolic", [False, True])
def test_shape_of_an_expanded_broadcast(device, symbolic):
    g = torch.Generator().manual_seed(5)
    big = torch.randn(2, 3, 4, generator=g).to(device)
    a = torch.randn(2, 1, 4, generator=g).to(device)
    b = torch.randn(2, 1, 4, generator=g).to(device)
    with FusionDefinition() as fd:
        if symbolic:
            t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True])
            t1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
            t2 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
        else:
            t0, t1, t2 = fd.from_pytorch(big), fd.from_pytorch(a), fd.from_pytorch(b)
        e1 = fd.ops.broadcast_in_dim(t1, t0.shape(), [0, 1, 2])
        e2 = fd.ops.broadcast_in_dim(t2, e1.shape(), [0, 1, 2])
        n = fd.ops.size(e1, 1)
        fd.add_output(fd.ops.add(e2, e1))
        fd.add_output(fd.ops.reshape(e2, [e1.size(0), fd.ops.mul(n, e1.size(2))]))
    out = fd.validate([big, a, b])
    torch.testing.assert_close(out[0], (a + b).expand(2, 3, 4))
    torch.testing.assert_close(out[1], b.expand(2, 3, 4).reshape(2, 12))


# index_select with a 0-D index keeps the dim with size 1, as torch.index_select (and nvFuser).
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_with_a_0d_index_keeps_the_dim(device, dim):
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(8)).to(device)
    index = torch.tensor(3, device=device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.index_select(fd.from_pytorch(x), fd.from_pytorch(index), dim))
    (out,) = fd.validate([x, index])
    want = torch.index_select(x, dim, index)
    assert out.shape == want.shape
    torch.testing.assert_close(out, want)


# scatter's value form (torch.scatter(x, dim, index, value)): a number or a Scalar given at
# execute, cast to the input's dtype.
@pytest.mark.parametrize("runtime", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_scatter_a_scalar_value(device, runtime, dtype):
    g = torch.Generator().manual_seed(9)
    x = (torch.randn(6, 5, generator=g) * 10).to(dtype).to(device)
    index = torch.argsort(torch.rand(6, 5, generator=g), dim=0)[:3].to(device)
    with FusionDefinition() as fd:
        tx, ti = fd.from_pytorch(x), fd.from_pytorch(index)
        v = fd.define_scalar(None, dtype=DataType.Double) if runtime else 2.5
        fd.add_output(fd.ops.scatter(tx, ti, v, 0))
    (out,) = fd.validate([x, index] + ([2.5] if runtime else []))
    torch.testing.assert_close(out, torch.scatter(x, 0, index, 2.5))


# rsqrt is defined on complex values as torch defines it, 1 / sqrt(z) (principal branch).
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_rsqrt(device, dtype):
    g = torch.Generator().manual_seed(10)
    edges = torch.tensor([1 + 0j, -1 + 0j, 1j, -4j, 3 - 4j, -2.5 + 0.5j, 1e10 - 1e10j])
    z = torch.cat([edges, torch.randn(32, generator=g, dtype=torch.complex128)]).to(dtype)
    z = z.to(device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.rsqrt(fd.from_pytorch(z)))
    (out,) = fd.validate([z])
    assert out.dtype == dtype
    torch.testing.assert_close(out, torch.rsqrt(z))


# A random op given no rng_seed / rng_offset draws them from torch's generator at each execute,
# as nvFuser's do: new numbers per run, the same ones after torch.manual_seed, and inputs defined
# after it are passed as usual (the drawn ones are not the caller's to give).
def test_random_ops_without_a_seed_draw_from_torchs_generator(device):
    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(11)).to(device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        n = fd.ops.normal(3.0, 2.0, t.shape(), dtype=DataType.Double)
        u = fd.ops.uniform(-1.0, 1.0, t.shape())
        scale = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.mul(n, scale))
        fd.add_output(fd.ops.add(u, t))
    torch.manual_seed(36)
    first = fd.validate([x, 1.0])
    second = fd.execute([x, 1.0])
    torch.manual_seed(36)
    again = fd.execute([x, 1.0])
    assert first[0].dtype == torch.float64 and first[1].dtype == torch.float32
    assert not torch.equal(first[0], second[0]) and not torch.equal(first[1], second[1])
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    n = first[0]
    assert abs(n.mean().item() - 3.0) < 0.1 and abs(n.std().item() - 2.0) < 0.1
    u = first[1] - x
    assert -1.0 <= u.min().item() and u.max().item() < 1.0
    # The reproducer runs the printed definition, whose inputs include the drawn pair.
    namespace = {}
    exec(fd.repro_script_for([x, 1.0]), namespace)
    assert len(namespace["inputs"]) == 6  # x, two seeds and offsets, the scale


def test_random_op_seed_and_offset_come_together():
    with FusionDefinition() as fd:
        with pytest.raises(Exception, match="fd.ops.normal: rng_seed and rng_offset are given "
                                            "together or not at all"):
            fd.ops.normal(0.0, 1.0, [4], rng_offset=3)
