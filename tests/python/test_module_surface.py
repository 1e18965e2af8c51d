# SPDX-License-Identifier: Apache-2.0
# The module surface nvFuser's own code imports (issue 36): every name below is imported at the
# top, as nvFuser's test modules do, so this module loading at all is the first test (a name Loom
# lacks must import as a stand-in, never fail the import). Each name either works, checked
# against torch on CPU tensors (CUDA variants through the `device` fixture), or raises
# loom.NotSupportedError naming it.
import pytest
import torch

import loom
from loom.direct import (  # noqa: F401 - importing them is part of the test
    BroadcastOp,
    CacheOp,
    CompileParams,
    DataType,
    FusionDefinition,
    IdMappingMode,
    LaunchParams,
    LoadStoreOpType,
    LRUCache,
    LruFusionCache,
    Merge,
    ReshapeOp,
    SchedulerType,
    Split,
    SqueezeOp,
    compute_tensor_descriptor,
    idm,
    version,
)
from loom.direct.pytorch_utils import (
    python_scalar_to_nvfuser_dtype,
    torch_dtype_to_nvfuser_dtype,
)

STAND_INS = {
    "CacheOp": CacheOp,
    "LaunchParams": LaunchParams,
}


def test_compile_params_and_load_store_op_type_are_loom_names():
    # Once stand-ins; test_tma.py runs them.
    assert CompileParams(index_type=DataType.Int32).index_type is DataType.Int32
    assert LoadStoreOpType.tma.name == "tma"


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_names_loom_lacks_raise_naming_themselves_when_used(name):
    stand_in = STAND_INS[name]
    expected = f"loom.direct.{name} is not supported by Loom"
    with pytest.raises(loom.NotSupportedError, match=expected):
        stand_in()
    with pytest.raises(loom.NotSupportedError, match=expected):
        stand_in.ANY_MEMBER
    with pytest.raises(loom.NotSupportedError, match=expected):
        isinstance(torch.zeros(1), stand_in)
    with pytest.raises(loom.NotSupportedError, match=expected):
        class Derived(stand_in):  # noqa: F841
            pass


@pytest.mark.parametrize("torch_dtype,expected", [
    (torch.float64, DataType.Double), (torch.float32, DataType.Float),
    (torch.float16, DataType.Half), (torch.bfloat16, DataType.BFloat16),
    (torch.int64, DataType.Int), (torch.int32, DataType.Int32), (torch.bool, DataType.Bool),
    (torch.int16, DataType.Short), (torch.int8, DataType.Char), (torch.uint8, DataType.Byte),
    (torch.uint16, DataType.UInt16), (torch.uint32, DataType.UInt32),
    (torch.uint64, DataType.UInt64),
    (float, DataType.Double), (int, DataType.Int), (bool, DataType.Bool),
])
def test_torch_dtype_to_nvfuser_dtype(torch_dtype, expected):
    assert torch_dtype_to_nvfuser_dtype(torch_dtype) is expected


def test_dtypes_loom_lacks_raise_naming_them():
    assert python_scalar_to_nvfuser_dtype(2.5) is DataType.Double
    assert python_scalar_to_nvfuser_dtype(True) is DataType.Bool
    with pytest.raises(loom.NotSupportedError,
                       match="torch dtype torch.float8_e4m3fnuz is not supported"):
        torch_dtype_to_nvfuser_dtype(torch.float8_e4m3fnuz)
    if not hasattr(DataType, "ComplexDouble"):  # until Loom has complex types
        with pytest.raises(loom.NotSupportedError, match="DataType.ComplexDouble"):
            torch_dtype_to_nvfuser_dtype(complex)
    with pytest.raises(loom.UserError, match="expected a torch dtype or a Python number type"):
        torch_dtype_to_nvfuser_dtype("float32")


def test_scheduler_type_names_loom_s_schedulers(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.exp(x))
        fd.add_output(fd.ops.sum(x, [1]))
    x_in = torch.randn(8, 32, device=device)
    e, s = fd.execute([x_in])
    torch.testing.assert_close(e, torch.exp(x_in))
    torch.testing.assert_close(s, x_in.sum(1))
    assert set(fd.last_schedulers()) <= set(SchedulerType)
    assert SchedulerType.pointwise == "pointwise" and str(SchedulerType.reduction) == "reduction"
    assert SchedulerType("inner_persistent") is SchedulerType.inner_persistent
    with pytest.raises(loom.NotSupportedError, match="SchedulerType.matmul is not supported"):
        SchedulerType.matmul


def test_scheduler_type_names_the_persistent_schedulers(device):
    # x - x.mean(0): one outer-persistent kernel; layer_norm's backward (grad input and the
    # per-column grad weight): one inner-outer-persistent kernel. last_schedulers() names them.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        mean = fd.ops.mean(x, [0])
        fd.add_output(fd.ops.sub(x, fd.ops.broadcast(mean, [True, False])))
    x_in = torch.randn(64, 24, device=device)
    (out,) = fd.execute([x_in])
    torch.testing.assert_close(out, x_in - x_in.mean(0))
    assert fd.last_schedulers() == [SchedulerType.outer_persistent]

    with FusionDefinition() as fd:
        dy = fd.define_tensor(shape=[-1, -1], contiguity=True)
        xh = fd.define_tensor(shape=[-1, -1], contiguity=True)
        w = fd.define_tensor(shape=[-1], contiguity=True)
        g = fd.ops.mul(dy, fd.ops.broadcast(w, [True, False]))
        # grad input of rms-norm-like rows (unit rstd) and grad weight = sum over rows of dy * xh
        dx = fd.ops.sub(g, fd.ops.mul(xh, fd.ops.broadcast(
            fd.ops.div(fd.ops.sum(fd.ops.mul(g, xh), [1]), 24.0), [False, True])))
        fd.add_output(dx)
        fd.add_output(fd.ops.sum(fd.ops.mul(dy, xh), [0]))
    dy_in, xh_in, w_in = (torch.randn(40, 24, device=device), torch.randn(40, 24, device=device),
                          torch.randn(24, device=device))
    dx_out, dw_out = fd.execute([dy_in, xh_in, w_in])
    g_ref = dy_in * w_in
    torch.testing.assert_close(dx_out, g_ref - xh_in * ((g_ref * xh_in).sum(1, keepdim=True) / 24))
    torch.testing.assert_close(dw_out, (dy_in * xh_in).sum(0))
    assert fd.last_schedulers() == [SchedulerType.inner_outer_persistent]


def test_version_and_tensor_descriptor():
    assert version() == loom.__version__
    # nvFuser's Version: compares by numbers with strings and Versions.
    from loom.direct.nvfuser_direct_version import Version
    assert version() > "0.0.0" and version() > Version("0.0.0")
    assert Version("0.10.0") > Version("0.9.9") and Version("1.2") == "1.2.0"
    assert Version("0.1.0") < "0.1.1" and not Version("0.1.0") < "0.1"
    # A transposed [4, 6] tensor: contiguous, dim 0 innermost.
    t = torch.randn(6, 4).t()
    assert compute_tensor_descriptor(t.shape, t.stride()) == ([True, True], [0, 1])
    with pytest.raises(loom.UserError, match="2 sizes but 1 strides"):
        compute_tensor_descriptor([2, 3], [1])


@pytest.mark.parametrize("static_sizes", [False, True])
def test_define_tensor_from_sizes_and_strides(device, static_sizes):
    base = torch.randn(6, 1, 4, device=device)
    x_in = base.permute(2, 1, 0)  # sizes [4, 1, 6], strides [1, 4, 4]: dim 0 innermost
    with FusionDefinition() as fd:
        x = fd.define_tensor(sizes=x_in.shape, strides=x_in.stride(), dtype=DataType.Float,
                             static_sizes=static_sizes)
        fd.add_output(fd.ops.mul(fd.ops.exp(x), 2.0))
    (out,) = fd.execute([x_in])
    torch.testing.assert_close(out, torch.exp(x_in) * 2.0)
    assert ("shape=[4, 1, 6]" in repr(fd)) == static_sizes
    # dim 0 innermost, then dim 2; the size-1 dim 1 (stride tied with dim 2) keeps its logical
    # place outside it, as from_pytorch decides.
    assert "stride_order=[0, 2, 1]" in repr(fd)
    with FusionDefinition() as bad:
        with pytest.raises(loom.UserError, match="sizes= and strides= go together"):
            bad.define_tensor(sizes=[2, 3])
        with pytest.raises(loom.UserError, match="without shape, contiguity or stride_order"):
            bad.define_tensor(sizes=[2, 3], strides=[3, 1], shape=[-1, -1])


def test_tensor_view_questions():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1, 5], contiguity=[True, None, True],
                             dtype=DataType.Half)
        y = fd.ops.permute(fd.ops.cast(x, DataType.Float), [2, 1, 0])
        fd.add_output(y)
    assert x.dtype() is DataType.Half and y.dtype() is DataType.Float
    assert x.dtype == loom._C.DataType.Float16 and x.dtype == DataType.Half  # both spellings
    assert x.is_tensor() and not x.size(0).is_tensor()
    assert x.size(0).is_symbolic() and not x.size(2).is_symbolic()
    assert len(x.shape()) == 3 and str(x.shape()[2]) == str(x.size(2))
    assert not x.has_root() and y.has_root()  # a permute has a root domain
    # A dtype() given back to an op is a DataType like any other.
    with FusionDefinition() as fd2:
        a = fd2.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Half)
        fd2.add_output(fd2.ops.cast(fd2.ops.neg(a), a.dtype()))
        fd2.add_output(fd2.ops.cast(a, x.dtype))
    a_in = torch.randn(7).half()
    neg, same = fd2.execute([a_in])
    assert neg.dtype == torch.float16 and torch.equal(neg, -a_in) and torch.equal(same, a_in)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_reductions_take_dtype_positionally(device, op):
    x_in = torch.rand(4, 6, device=device) + 0.5
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(getattr(fd.ops, op)(x, [1], False, DataType.Double))  # (arg, dims, keepdim, dtype)
        fd.add_output(getattr(fd.ops, op)(x, [0], True, DataType.Double))
        fd.add_output(getattr(fd.ops, op)(x, DataType.Double))  # every dim
    a, b, c = fd.execute([x_in])
    ref = x_in.double()
    ops = {"sum": lambda t, **k: torch.sum(t, **k), "prod": lambda t, **k: torch.prod(t, **k),
           "max": lambda t, **k: torch.amax(t, **k), "min": lambda t, **k: torch.amin(t, **k)}
    for out in (a, b, c):
        assert out.dtype == torch.float64
    torch.testing.assert_close(a, ops[op](ref, dim=1))
    torch.testing.assert_close(b, ops[op](ref, dim=0, keepdim=True))
    torch.testing.assert_close(c, ops[op](ref.reshape(-1), dim=0))


def test_arguments_loom_lacks_raise_naming_them():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1], contiguity=[True, None])
        y = fd.ops.neg(x)
        with pytest.raises(loom.NotSupportedError,
                           match=r"define_tensor: argument\(s\) maybe_sizes not supported"):
            fd.define_tensor(shape=[-1], maybe_sizes=[1])
        fd.add_output(y)
    x_in = torch.randn(5, 1)
    (out,) = fd.execute([x_in])
    assert torch.equal(out, -x_in)


def test_squeeze_expanded(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1], contiguity=[True, None])
        y = fd.define_tensor(shape=[-1], contiguity=True)
        n = fd.define_scalar(dtype=DataType.Int)
        e = fd.ops.expand(x, [-1, n])                               # [4, n], dim 1 expanded
        with pytest.raises(loom.UserError, match="squeeze_expanded removes it"):
            fd.ops.squeeze(e, [1])                                  # nvFuser's default refuses
        fd.add_output(fd.ops.add(fd.ops.squeeze(e, [1], squeeze_expanded=True), y))
        fd.add_output(fd.ops.squeeze(fd.ops.exp(x), [1], squeeze_expanded=True))  # size 1 too
        fd.add_output(fd.ops.sum(e, [1]))                           # e is still [4, n]
    x_in, y_in = torch.randn(4, 1, device=device), torch.randn(4, device=device)
    a, b, c = fd.execute([x_in, y_in, 7])
    torch.testing.assert_close(a, x_in.expand(4, 7)[:, 0] + y_in)
    torch.testing.assert_close(b, torch.exp(x_in).squeeze(1))
    torch.testing.assert_close(c, x_in.expand(4, 7).sum(1))
    assert "fd.ops.squeeze(tv" in repr(fd) and "squeeze_expanded=True)" in repr(fd)


def test_lru_fusion_cache_decorator(device):
    @LruFusionCache(max_fusions=4)
    def scaled_exp(scale):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1], contiguity=True)
            fd.add_output(fd.ops.mul(fd.ops.exp(x), scale))
        return fd

    x_in = torch.randn(9, device=device)
    for scale in (2.0, 2.0, 3.0):
        (out,) = scaled_exp(scale).execute([x_in])
        torch.testing.assert_close(out, torch.exp(x_in) * scale)
    assert scaled_exp.num_fusions() == 2  # one per constant
    assert "Cache Hits: 1" in scaled_exp.stats()


def test_reductions_take_nvfusers_dim_and_keep_dim(device):
    """fd.ops.sum(t, dim=-1) (nvFuser's one-dim form) and keep_dim= (older versions' name)."""
    x = torch.randn(3, 5, device=device)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.sum(t, dim=-1))
        fd.add_output(fd.ops.max(t, dims=[0], keep_dim=True))
        fd.add_output(fd.ops.var(t, dim=1, keep_dim=True))
        with pytest.raises(TypeError, match="give dims or dim, not both"):
            fd.ops.sum(t, [0], dim=1)
    s, m, v = fd.execute([x])
    torch.testing.assert_close(s, x.sum(-1))
    torch.testing.assert_close(m, x.amax(0, keepdim=True))
    torch.testing.assert_close(v, x.var(1, keepdim=True))


def test_add_output_with_stride_order(device):
    """nvFuser's add_output(tv, stride_order=[...]): the output laid out in that order."""
    x = torch.randn(2, 3, 4, device=device)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        fd.add_output(fd.ops.neg(t), stride_order=[0, 1, 2])  # dim 0 innermost
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, -x)
    assert out.stride() == (1, 2, 6)


def test_running_a_definition_both_ways_or_an_empty_one(device):
    """nvFuser's errors: execute() after manual_execute() and the reverse (each keeps its own
    kernels), and running a FusionDefinition never defined or defined empty."""
    x = torch.randn(2, 4, device=device)

    def pointwise():
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1, -1], contiguity=True)
            fd.add_output(fd.ops.exp(t))
        return fd

    fd = pointwise()
    torch.testing.assert_close(fd.manual_execute([x])[0], x.exp())
    assert fd.ke.is_compiled()
    with pytest.raises(AssertionError, match=r"KernelExecutor already exists! Use "
                                             r"manual_execute\(\) to execute the fusion."):
        fd.execute([x])
    fd = pointwise()
    torch.testing.assert_close(fd.execute([x])[0], x.exp())
    with pytest.raises(AssertionError, match=r"FusionExecutorCache already exists! Use "
                                             r"execute\(\) to execute the fusion."):
        fd.manual_execute([x])
    with pytest.raises(NotImplementedError, match="Fusion does not exist! Use `with "
                                                  "FusionDefinition"):
        FusionDefinition().execute([x])
    with FusionDefinition() as empty:
        pass
    with pytest.raises(NotImplementedError, match="Fusion is empty!"):
        empty.execute([x])
    assert issubclass(loom.UserAssertionError, loom.UserError)
