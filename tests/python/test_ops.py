# SPDX-License-Identifier: Apache-2.0
# End-to-end fusions through loom.direct compared with torch's own result: every op family, with
# scalar operands, broadcasting, type promotion, non-contiguous and 0-size inputs.
import math
import re

import pytest
import torch
import torch.nn.functional as F

import loom

from loom.direct import DataType, FusionDefinition


def close(actual, expected, **kw):
    torch.testing.assert_close(actual, expected, equal_nan=True, **kw)


UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2,
    "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "relu": torch.relu, "silu": F.silu, "erf": torch.erf, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round,
    # Loom's sign keeps NaN (as numpy does; torch's CPU kernel gives 0): docs/python.md.
    "sign": lambda x: torch.where(x.isnan(), x, torch.sign(x)), "isnan": torch.isnan,
    "isinf": torch.isinf, "logical_not": torch.logical_not, "reciprocal": torch.reciprocal,
}
POSITIVE = {"log": torch.log, "log2": torch.log2, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt}


def test_unary_ops(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        p = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        for name in UNARY:
            fd.add_output(getattr(fd.ops, name)(x))
        for name in POSITIVE:
            fd.add_output(getattr(fd.ops, name)(p))
    x = torch.randn(5, 7, device=device) * 3
    x[0, 0], x[1, 1], x[2, 2] = float("nan"), float("inf"), -float("inf")
    x[3, 3] = 2.5  # round half to even
    p = torch.rand(5, 7, device=device) + 0.1
    outs = fd.execute([x, p])
    refs = [f(x) for f in UNARY.values()] + [f(p) for f in POSITIVE.values()]
    assert len(outs) == len(refs)
    for name, out, ref in zip(list(UNARY) + list(POSITIVE), outs, refs):
        assert out.dtype == ref.dtype, name
        assert out.device == ref.device, name
        close(out, ref, msg=name)


def test_binary_ops_with_scalars_broadcasting_and_promotion(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        bias = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Int)
        names = ["add", "sub", "mul", "div", "fmod", "maximum", "minimum", "eq", "ne", "lt",
                 "le", "gt", "ge", "logical_and", "logical_or"]
        for name in names:
            fd.add_output(getattr(fd.ops, name)(x, y))
        fd.add_output(fd.ops.pow(fd.ops.abs(x), y))
        fd.add_output(fd.ops.add(x, bias))          # [n, m] + [m]
        fd.add_output(fd.ops.mul(3, x))             # a Python int on the left
        fd.add_output(fd.ops.sub(x, 0.5))
        fd.add_output(fd.ops.add(i, 2))             # stays Int64
        fd.add_output(fd.ops.mul(i, 1.5))           # int tensor * float -> Float
        fd.add_output(fd.ops.truediv(i, 4))         # true division -> Float
    x = torch.randn(4, 6, device=device)
    y = torch.randn(4, 6, device=device)
    y[0, :3] = x[0, :3]  # some equal elements for the comparisons
    bias = torch.randn(6, device=device)
    i = torch.randint(-9, 9, (4, 6), device=device)
    outs = fd.execute([x, y, bias, i])
    refs = [getattr(torch, n if n not in ("add", "sub", "mul", "div") else n)(x, y) for n in names]
    refs += [torch.pow(x.abs(), y), x + bias, 3 * x, x - 0.5, i + 2, i * 1.5, i / 4]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert out.dtype == ref.dtype, k
        close(out, ref, msg=str(k))


def test_where_clamp_lerp_cast(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.where(fd.ops.gt(x, 0.0), x, y))
        fd.add_output(fd.ops.where(fd.ops.lt(x, 0.0), 1.0, y))
        fd.add_output(fd.ops.clamp(x, -0.5, 0.5))
        fd.add_output(fd.ops.lerp(x, y, 0.25))
        for dt in (DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32,
                   DataType.Int, DataType.Bool):
            fd.add_output(fd.ops.cast(x, dt))
        fd.add_output(fd.ops.cast(x, torch.float16))  # a torch dtype works too
    x = torch.randn(33, device=device) * 4
    y = torch.randn(33, device=device)
    outs = fd.execute([x, y])
    refs = [torch.where(x > 0, x, y), torch.where(x < 0, 1.0, y), x.clamp(-0.5, 0.5),
            torch.lerp(x, y, 0.25)]
    refs += [x.to(d) for d in (torch.float16, torch.bfloat16, torch.float64, torch.int32,
                               torch.int64, torch.bool, torch.float16)]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert out.dtype == ref.dtype, k
        close(out, ref, msg=str(k))


def test_reductions(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[1]))
        fd.add_output(fd.ops.sum(x, dims=[0, 2], keepdim=True))
        fd.add_output(fd.ops.sum(x, [2], dtype=DataType.Double))
        fd.add_output(fd.ops.prod(x, [2]))
        fd.add_output(fd.ops.max(x, [1]))
        fd.add_output(fd.ops.min(x, [-1], keepdim=True))
        fd.add_output(fd.ops.var(x, [2]))
        var, mean = fd.ops.var_mean(x, dims=[2], correction=0, keepdim=True)
        fd.add_output(var)
        fd.add_output(mean)
        fd.add_output(fd.ops.mean(x, [0]))
    x = torch.randn(3, 17, 40, device=device)
    outs = fd.execute([x])
    refs = [x.sum(1), x.sum((0, 2), keepdim=True), x.double().sum(2), x.prod(2),
            x.amax(1), x.amin(-1, keepdim=True), x.var(2)]
    refs += list(torch.var_mean(x, 2, correction=0, keepdim=True)) + [x.mean(0)]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert out.dtype == ref.dtype, k
        assert out.shape == ref.shape, k
        close(out, ref, rtol=1e-4, atol=1e-4, msg=str(k))


def test_welford_returns_avg_var_sum_and_count(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        avg, var_sum, n = fd.ops.welford(x, [1])
        for t in (avg, var_sum, n):
            fd.add_output(t)
    x = torch.randn(6, 50, device=device)
    avg, var_sum, n = fd.execute([x])
    close(avg, x.mean(1), rtol=1e-5, atol=1e-5)
    close(var_sum, x.var(1, correction=0) * 50, rtol=1e-4, atol=1e-4)
    assert torch.equal(n, torch.full((6,), 50, dtype=torch.int64, device=device))


def test_broadcast_permute(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)  # [4, 6]
        b = fd.define_tensor(shape=[-1], contiguity=True)      # [6]
        fd.add_output(fd.ops.add(x, fd.ops.broadcast(b, [True, False])))
        fd.add_output(fd.ops.permute(x, [1, 0]))
        fd.add_output(fd.ops.transpose(x, 0, 1))
        # Scalar sizes (the usual form: the shape of another input).
        fd.add_output(fd.ops.mul(x, fd.ops.broadcast_in_dim(b, fd.ops.shape(x), [1])))
    with FusionDefinition() as fd2:  # constant sizes
        x2 = fd2.define_tensor(shape=[4, 6], contiguity=True)
        b2 = fd2.define_tensor(shape=[-1], contiguity=True)
        fd2.add_output(fd2.ops.mul(x2, fd2.ops.broadcast_in_dim(b2, [4, 6], [1])))
    x = torch.randn(4, 6, device=device)
    b = torch.randn(6, device=device)
    outs = fd.execute([x, b]) + fd2.execute([x, b])
    refs = [x + b, x.permute(1, 0), x.t(), x * b, x * b]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert out.shape == ref.shape, k
        close(out, ref, msg=str(k))


@pytest.mark.parametrize("op", ["reshape", "unsqueeze"])
def test_reshape_unsqueeze(op, device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        if op == "reshape":
            fd.add_output(fd.ops.reshape(x, [2, 12]))
        else:
            fd.add_output(fd.ops.unsqueeze(x, 1))
    x = torch.randn(4, 6, device=device)
    (out,) = fd.execute([x])
    close(out, x.reshape(2, 12) if op == "reshape" else x.unsqueeze(1))


# broadcast_in_dim to constant sizes against an operand of symbolic sizes: the expanded dim and
# the symbolic one are one space (it did not lower until the inliner knew that).
def test_constant_broadcast_in_dim_with_symbolic_operand(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        b = fd.define_tensor(shape=[-1], contiguity=True)
        y = fd.define_tensor(shape=[-1, -1], contiguity=True)
        c = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.mul(x, fd.ops.broadcast_in_dim(b, [4, 6], [1])))
        fd.add_output(fd.ops.add(fd.ops.exp(fd.ops.broadcast_in_dim(c, [6, 4], [0])), y))
    x, b, y, c = (torch.randn(4, 6, device=device), torch.randn(6, device=device),
                  torch.randn(6, 4, device=device), torch.randn(6, device=device))
    out, out2 = fd.execute([x, b, y, c])
    close(out, x * b)
    close(out2, c.exp()[:, None] + y)


# broadcast_in_dim of dims whose sizes are known only at run time, to constant sizes: a dim of the
# size asked for passes and any other size is refused when the inputs are bound, naming the
# tensor, the dim and both sizes (it returned the input's size silently). A dim declared -1 is not
# a broadcast, so size 1 does not stretch either, as in nvFuser. The operand added to a tensor of
# those constant sizes computes the right values (an earlier fix that gave the output dim the
# constant extent broke the inlining of that add).
def test_broadcast_in_dim_checks_run_time_sizes(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.broadcast_in_dim(x, [4, 7], [0, 1]))
        r = fd.define_tensor(shape=[-1], contiguity=True)
        b = fd.define_tensor(shape=[2, 4], contiguity=True)
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(r, [2, 4], [1]), b))
    x, r, b = (torch.randn(4, 7, device=device), torch.randn(4, device=device),
               torch.randn(2, 4, device=device))
    out, added = fd.execute([x, r, b])
    close(out, x)
    close(added, r[None, :] + b)
    for shape, dim in (((4, 6), 1), ((1, 7), 0)):
        with pytest.raises(loom.UserError, match=rf"dimension {dim} of T0 must have size "
                                                 rf"{(4, 7)[dim]}, as output dimension {dim} of "
                                                 rf"the shape \[4, 7\] says .* the arguments "
                                                 rf"make that extent {shape[dim]}"):
            fd.execute([torch.randn(*shape, device=device), r, b])


# Expanding a run-time dim (not a broadcast) to the size it has, by a constant or a Scalar, and
# using the result with a tensor of that size: the values are right (the expand's output dim had
# an extent of its own, and the pointwise schedule then iterated the expanded operand unexpanded,
# leaving zeros past its first row), another size is refused, and the printed definition keeps
# the sizes asked for.
def test_expand_to_the_size_a_run_time_dim_has_computes_right(device):
    def define(fd):
        r = fd.define_tensor(shape=[-1], contiguity=True)
        b = fd.define_tensor(shape=[2, 4], contiguity=True)
        rows = fd.define_scalar(None, dtype=DataType.Index)
        cols = fd.define_scalar(None, dtype=DataType.Index)
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(r, [rows, 4], [1]), b))
        fd.add_output(fd.ops.mul(fd.ops.expand(x, [2, cols]), b))

    with FusionDefinition() as fd:
        define(fd)
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(repr(fd), namespace)
    with FusionDefinition() as printed:
        namespace["nvfuser_fusion"](printed)
    r, b, x = (torch.randn(4, device=device), torch.randn(2, 4, device=device),
               torch.randn(2, 4, device=device))
    for f in (fd, printed):
        added, scaled = f.execute([r, b, 2, 4, x])
        close(added, r[None, :] + b)
        close(scaled, x * b)
        # (the add's shapes disagree first, naming the size)
        with pytest.raises(loom.UserError, match=r"has size 5|make that extent 5"):
            f.execute([torch.randn(5, device=device), b, 2, 4, x])
        with pytest.raises(loom.UserError,
                           match=r"dimension 1 of T\d+ is not a broadcast dimension.* the "
                                 r"arguments make that extent 4 and s\d+ 3"):
            f.execute([r, b, 2, 3, x])


# broadcast_in_dim to constant sizes of run-time dims prints as nvFuser prints it (one call, not
# broadcast and expand to -1, which would drop the size check); the printed definition and the
# text form (its `require` lines) each rebuild a fusion that refuses another size.
def test_broadcast_in_dim_prints_as_nvfuser_and_keeps_its_size_check(device):
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float,
                               is_cpu=False)
        fd.add_output(fd.ops.broadcast_in_dim(tv0, shape=[2, 2, 2], broadcast_dims=[0, 1]))
    text = repr(fd)
    assert "tv2 = fd.ops.broadcast_in_dim(tv0, shape=[2, 2, 2], broadcast_dims=[0, 1])" in text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as printed:
        namespace["nvfuser_fusion"](printed)
    fus = fd.fusion.print_math()
    assert re.search(r'# requirements\nrequire s0 == 2, extent s0: "broadcast_in_dim to T\d+: '
                     r'dimension 0', fus)
    with FusionDefinition() as from_text:
        from_text.define_from_text(fus)
    x = torch.randn(2, 2, device=device)
    for f in (fd, printed, from_text):
        close(f.execute([x])[0], x[:, :, None].expand(2, 2, 2))
        with pytest.raises(loom.UserError, match=r"dimension 0 of T0 must have size 2"):
            f.execute([torch.randn(3, 3, device=device)])


# The same with a Scalar among the sizes (nvFuser's mixed inline definition): one call again,
# the new dim expanded to the Scalar, the constant sizes of the run-time dims required, and a
# Scalar size of a run-time dim required too (it equals that dim's extent, or the run fails).
def test_broadcast_in_dim_to_scalar_sizes_prints_as_one_call(device):
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float,
                               is_cpu=False)
        c3 = fd.define_scalar(None, dtype=DataType.Index)
        fd.add_output(fd.ops.broadcast_in_dim(tv0, shape=[2, 2, c3], broadcast_dims=[0, 1]))
    text = repr(fd)
    assert "tv2 = fd.ops.broadcast_in_dim(tv0, shape=[2, 2, c3], broadcast_dims=[0, 1])" in text
    assert "fd.ops.expand" not in text and "fd.ops.broadcast(" not in text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as printed:
        namespace["nvfuser_fusion"](printed)
    with FusionDefinition() as from_text:
        from_text.define_from_text(fd.fusion.print_math())
    x = torch.randn(2, 2, device=device)
    for f in (fd, printed, from_text):
        out = f.execute([x, 5])[0]
        assert out.shape == (2, 2, 5)
        close(out, x[:, :, None].expand(2, 2, 5))
        with pytest.raises(loom.UserError, match=r"dimension 1 of T0 must have size 2"):
            f.execute([torch.randn(2, 3, device=device), 5])

    # A Scalar size of a run-time dim: required to equal it; added to a tensor of that shape
    # the values are right in every row (the expanded operand is not iterated unexpanded).
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        w = fd.define_tensor(shape=[-1], contiguity=True)
        n = fd.define_scalar(None, dtype=DataType.Int)
        m = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.add(x, fd.ops.broadcast_in_dim(w, shape=[n, m], broadcast_dims=[1])))
    text = repr(fd)
    assert re.search(r"fd\.ops\.broadcast_in_dim\(tv1, shape=\[c\d+, c\d+\], broadcast_dims=\[1\]\)",
                     text), text
    exec(text, namespace)
    with FusionDefinition() as printed:
        namespace["nvfuser_fusion"](printed)
    x, w = torch.randn(4, 6, device=device), torch.randn(6, device=device)
    for f in (fd, printed):
        close(f.execute([x, w, 4, 6])[0], x + w)
        with pytest.raises(loom.UserError, match=r"dimension 0 of T1 must have size s\d+.* extent 5 "
                                                 r"and s\d+ 6"):
            f.execute([torch.randn(4, 5, device=device), torch.randn(5, device=device), 4, 6])


# The printed definition keeps every size check of the fusion, each with its own op: two expands
# of one dim to two Scalar sizes (the printer gave both the second's size), a floating Scalar
# used as a size (the printer wrote nvFuser's truncating cast), and broadcast_in_dim that adds no
# dim (it printed as a bare expand, or nothing). print(fd) compares the fusion it rebuilds with the
# original, size checks included, and these are in nvFuser's form.
def test_printed_definition_keeps_each_size_check(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        y = fd.define_tensor(shape=[-1, -1])
        z = fd.define_tensor(shape=[-1, -1])
        n = fd.define_scalar(None, dtype=DataType.Int)
        half = fd.ops.mul(fd.define_scalar(0.5, dtype=DataType.Double), n)
        fd.add_output(fd.ops.add(fd.ops.expand(x, [fd.ops.size(y, 0), fd.ops.size(y, 1)]), y))
        fd.add_output(fd.ops.add(fd.ops.expand(x, [fd.ops.size(z, 0), fd.ops.size(z, 1)]), z))
        fd.add_output(fd.ops.full([half], 1.0, dtype=DataType.Float))
        fd.add_output(fd.ops.broadcast_in_dim(y, [4, 8], [0, 1]))
    text = repr(fd)
    assert "fd.define_from_text" not in text, text
    # full takes the product itself (a Double), not a cast of it to Int
    assert re.search(r"(c\d+) = fd\.ops\.mul\(.*\n(.*\n)*.*fd\.ops\.full\(shape=\[\1\]", text), text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as printed:
        namespace["nvfuser_fusion"](printed)
    x, y, z = (torch.randn(1, 8, device=device), torch.randn(4, 8, device=device),
               torch.randn(3, 8, device=device))
    for f in (fd, printed):
        a, b, c, d = f.execute([x, y, z, 6])
        close(a, x + y)
        close(b, x + z)
        assert c.shape == (3,)
        close(d, y)
        with pytest.raises(loom.UserError, match=r"expand to T\d+: dimension 1 of T0|shapes "
                                                 r"disagree in T\d+ = add"):
            f.execute([x, y, torch.randn(3, 5, device=device), 6])
        with pytest.raises(loom.UserError, match=r"floating Scalar.* integral value"):
            f.execute([x, y, z, 7])  # 3.5 elements
        with pytest.raises(loom.UserError, match=r"broadcast_in_dim to T\d+: dimension 0 of T1"):
            f.execute([x, torch.randn(5, 8, device=device), z, 6])


# A negative broadcast dim counts from the end of the output (nvFuser's alphafold3 layer norm
# writes broadcast_dims=[-1]), with constant sizes and with Scalar sizes (fd.ops.shape).
def test_broadcast_in_dim_negative_dims(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 3, 4], contiguity=True)
        w = fd.define_tensor(shape=[4], contiguity=True)
        m = fd.define_tensor(shape=[3, 4], contiguity=True)
        fd.add_output(fd.ops.mul(x, fd.ops.broadcast_in_dim(w, [2, 3, 4], [-1])))
        fd.add_output(fd.ops.add(x, fd.ops.broadcast_in_dim(w, fd.ops.shape(x), [-1])))
        fd.add_output(fd.ops.sub(x, fd.ops.broadcast_in_dim(m, [2, 3, 4], [-2, 2])))
        with pytest.raises(loom.UserError, match=r"Invalid broadcast_dims value"):
            fd.ops.broadcast_in_dim(w, [2, 3, 4], [-4])
    x, w, m = (torch.randn(2, 3, 4, device=device), torch.randn(4, device=device),
               torch.randn(3, 4, device=device))
    a, b, c = fd.execute([x, w, m])
    close(a, x * w)
    close(b, x + w)
    close(c, x - m)


def test_squeeze_expand(device):
    with FusionDefinition() as fd:
        o = fd.define_tensor(shape=[1, -1], contiguity=True)   # [1, 6]
        fd.add_output(fd.ops.squeeze(o, [0]))
        fd.add_output(fd.ops.expand(o, [4, 6]))
    o = torch.randn(1, 6, device=device)
    a, b = fd.execute([o])
    close(a, o.squeeze(0))
    close(b, o.expand(4, 6))


@pytest.mark.parametrize("op", ["slice", "pad", "cat", "set"])
def test_slice_pad_cat_set(op, device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        if op == "slice":
            fd.add_output(fd.ops.slice(x, [1, 2], [3, 6]))
        elif op == "pad":
            fd.add_output(fd.ops.pad(x, [1, 2], 0.5))
        elif op == "cat":
            fd.add_output(fd.ops.cat([x, x], 0))
        else:
            fd.add_output(fd.ops.set(x))
    x = torch.randn(4, 6, device=device)
    ref = {"slice": lambda: x[1:3, 2:6], "pad": lambda: F.pad(x, [1, 2], value=0.5),
           "cat": lambda: torch.cat([x, x], 0), "set": lambda: x}[op]()
    (out,) = fd.execute([x])
    assert out.shape == ref.shape
    close(out, ref)


def test_factories_and_scalar_inputs(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Double)
        n = fd.define_scalar(dtype=DataType.Int)
        two = fd.define_scalar(2.0)
        fd.add_output(fd.ops.add(fd.ops.mul(x, s), two))
        fd.add_output(fd.ops.full([3, 2], 1.5, DataType.Float))
        fd.add_output(fd.ops.iota(n, 2, 3, DataType.Int))
        fd.add_output(fd.ops.arange(0, 10, 2))
        fd.add_output(fd.ops.zeros([2], DataType.Int32))
        fd.add_output(fd.ops.ones([2, 2]))
    x = torch.randn(8, device=device)
    outs = fd.execute([x, 0.25, 5])
    refs = [x * 0.25 + 2.0, torch.full((3, 2), 1.5), torch.arange(5) * 3 + 2,
            torch.arange(0, 10, 2), torch.zeros(2, dtype=torch.int32), torch.ones(2, 2)]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out.cpu(), ref.cpu(), msg=str(k))


def test_define_vector_reshape(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        shape = fd.define_vector(2)
        fd.add_output(fd.ops.reshape(x, shape))
        fd.add_output(fd.ops.reshape(x, [fd.ops.size(x, 1), -1]))
    x = torch.randn(6, 4, device=device)
    a, b = fd.execute([x, [3, 8]])
    close(a, x.reshape(3, 8))
    close(b, x.reshape(4, 6))


def test_composites(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        w = fd.define_tensor(shape=[-1], contiguity=True)
        bias = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.softmax(x, -1))
        fd.add_output(fd.ops.log_softmax(x, 1))
        y, mean, rstd = fd.ops.layer_norm(x, 1, w, bias, eps=1e-5)
        fd.add_output(y)
        fd.add_output(fd.ops.rms_norm(x, 1, w, eps=1e-6))
        fd.add_output(fd.ops.gelu(x))
        fd.add_output(fd.ops.gelu(x, approximate="tanh"))
    x = torch.randn(5, 64, device=device)
    w = torch.randn(64, device=device)
    bias = torch.randn(64, device=device)
    outs = fd.execute([x, w, bias])
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    refs = [torch.softmax(x, -1), torch.log_softmax(x, 1), F.layer_norm(x, [64], w, bias, 1e-5),
            rms, F.gelu(x), F.gelu(x, approximate="tanh")]
    for k, (out, ref) in enumerate(zip(outs, refs)):
        close(out, ref, rtol=1e-4, atol=1e-4, msg=str(k))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32,
                                   torch.int64, torch.bool], ids=str)
def test_every_dtype_through_a_fusion(dtype, device):
    """Each dtype in and out of a kernel: a cast to Double and a copy."""
    with FusionDefinition() as fd:
        x = fd.from_pytorch(torch.empty(2, 3, dtype=dtype))
        fd.add_output(fd.ops.cast(x, DataType.Double))
        fd.add_output(fd.ops.set(x))
    if dtype == torch.bool:
        x = torch.rand(7, 5, device=device) < 0.5
    elif dtype.is_floating_point:
        x = torch.randn(7, 5, device=device).to(dtype)
    else:
        x = torch.randint(-50, 50, (7, 5), device=device, dtype=dtype)
    as_double, copy = fd.execute([x])
    assert copy.dtype == dtype
    assert torch.equal(copy, x)
    assert copy.data_ptr() != x.data_ptr()
    assert torch.equal(as_double, x.double())


def test_non_contiguous_and_zero_size_inputs(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[False, False])
        y = fd.define_tensor(shape=[-1, -1], contiguity=[False, False])
        fd.add_output(fd.ops.add(fd.ops.mul(x, 2.0), y))
        fd.add_output(fd.ops.sum(x, [1]))
    base = torch.randn(8, 10, device=device)
    x = base.t()[:, 1:7]          # transposed and sliced: strides (1, 10)
    y = torch.randn(10, 9, device=device)[:, 2:8]  # sliced rows: strides (9, 1)
    z, s = fd.execute([x, y])
    close(z, x * 2 + y)
    close(s, x.sum(1), rtol=1e-5, atol=1e-5)
    # A broadcast (stride 0) input.
    e = torch.randn(1, 6, device=device).expand(10, 6)
    z, s = fd.execute([e, y])
    close(z, e * 2 + y)
    # 0-size inputs.
    empty = torch.empty(0, 6, device=device)
    z, s = fd.execute([empty, empty])
    assert z.shape == (0, 6) and s.shape == (0,)
    empty_rows = torch.empty(3, 0, device=device)
    z, s = fd.execute([empty_rows, empty_rows])
    assert z.shape == (3, 0)
    assert torch.equal(s, torch.zeros(3, device=device))


def test_numpy_inputs():
    import numpy as np

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Double)
        fd.add_output(fd.ops.mul(x, x))
    a = np.linspace(-2, 2, 9)
    (out,) = fd.execute([a])
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), a * a)
    assert math.isclose(float(out[0]), 4.0)


# Arithmetic on Scalars alone gives Scalars that tensor ops read: an epsilon and a scale from
# scalar inputs, integer true division, a comparison choosing a branch, a cast.
def test_scalar_arithmetic(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        a = fd.define_scalar(dtype=DataType.Double)
        n = fd.define_scalar(dtype=DataType.Int)
        eps = fd.ops.add(fd.ops.mul(a, 2.0), 1e-3)
        inv = fd.ops.truediv(1, n)
        fd.add_output(fd.ops.add(fd.ops.mul(x, inv), eps))
        fd.add_output(fd.ops.div(x, fd.ops.sqrt(n)))
        fd.add_output(fd.ops.where(fd.ops.gt(n, 3), x, fd.ops.neg(x)))
        fd.add_output(fd.ops.mul(x, fd.ops.cast(fd.ops.floor(a), DataType.Int)))
    x = torch.randn(5, 7, device=device)
    o1, o2, o3, o4 = fd.execute([x, 2.75, 4])
    close(o1, x * 0.25 + (2.75 * 2 + 1e-3))
    close(o2, x / 2.0)
    close(o3, x)
    close(o4, x * 2)
