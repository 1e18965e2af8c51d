# SPDX-License-Identifier: Apache-2.0
# FusionDefinition itself: inputs and outputs, from_pytorch, printing, the generated kernel, the
# cache, reproducers, and the errors (Loom's messages, and NotSupportedError for nvFuser names
# Loom does not implement).
import pytest
import torch

import loom
import loom.direct as nvfuser
from loom.direct import DataType, FusionDefinition, ParallelType


@pytest.fixture(scope="module")
def pointwise():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.add(fd.ops.mul(x, 2.0), y)))
    return fd


def test_inputs_outputs_and_printing(pointwise):
    fd = pointwise
    ins = fd.fusion.inputs()
    outs = fd.fusion.outputs()
    assert [type(v) for v in ins] == [nvfuser.TensorView, nvfuser.TensorView]
    assert len(outs) == 1
    assert ins[0].ndim == 2 and ins[0].dtype == loom._C.DataType.Float32
    assert ins[0].is_fusion_input() and outs[0].is_fusion_output()
    # print(fd) is the definition in nvFuser's form; fusion_ir() the text form.
    assert str(fd) == repr(fd) == fd.repr()
    assert str(fd).split("\n")[0] == "def nvfuser_fusion(fd : FusionDefinition) -> None :"
    # The constant is defined before its use and numbered as nvFuser would (c5: the inputs' four
    # sizes and the fusion's zero come first).
    for needle in ("c5 = fd.define_scalar(2.00000, dtype=DataType.Double)",
                   "fd.ops.mul(tv0, c5)", "fd.ops.add(tv2, tv1)", "fd.ops.relu(tv3)",
                   "fd.add_output(tv4)"):
        assert needle in str(fd)
    text = fd.fusion_ir()
    assert text == fd.fusion.to_text()
    for needle in ("mul", "add", "relu", ins[0].name, outs[0].name):
        assert needle in text
    # The text form parses back to the same fusion.
    assert FusionDefinition.from_text(text).fusion.to_text() == text


def test_execute_cache_and_kernel_code(pointwise):
    fd = pointwise
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, torch.relu(x * 2 + y))
    (again,) = fd.execute([x, y])
    torch.testing.assert_close(again, out)
    code = fd.last_cuda_code()
    assert "__global__" in code
    assert len(fd.last_cuda_code(intrinsic_code=True)) > len(code)
    assert fd.last_schedulers() == ["pointwise"]
    assert "kernel (pointwise)" in fd.host_program()
    assert fd.fec.hits >= 1


def test_outputs_are_fresh_tensors(pointwise):
    x, y = torch.randn(2, 2), torch.randn(2, 2)
    (a,) = pointwise.execute([x, y])
    (b,) = pointwise.execute([x, y])
    assert a.data_ptr() != b.data_ptr()


def test_a_fusion_is_frozen_once_executed(pointwise):
    pointwise.execute([torch.randn(2, 2), torch.randn(2, 2)])
    assert pointwise.fusion.frozen
    (x,) = pointwise.fusion.inputs()[:1]
    with pytest.raises(loom.UserError, match="split: the fusion was executed already"):
        x.split(0, 2)
    with pytest.raises(loom.UserError, match="add: the fusion was executed already"):
        pointwise.ops.add(x, 1.0)


def test_execute_errors_carry_loom_messages_and_a_reproducer(pointwise):
    with pytest.raises(loom.UserError, match="expected 2 inputs|2 arguments|inputs") as info:
        pointwise.execute([torch.randn(2, 2)])
    assert "def nvfuser_fusion(" in info.value.repro
    assert "outputs = fd.execute(inputs)" in info.value.repro
    with pytest.raises(loom.UserError, match="dtype|f64|Float64|float64") as info:
        pointwise.execute([torch.randn(2, 2, dtype=torch.float64), torch.randn(2, 2)])
    script = info.value.repro
    assert "torch.float64" in script and "(2, 2)" in script
    # The reproducer runs and fails the same way.
    with pytest.raises(loom.UserError):
        exec(compile(script, "<repro>", "exec"), {})
    with pytest.raises(loom.UserError, match="device must be None, 'cpu', 'cuda', 'cuda:N'"):
        pointwise.execute([torch.randn(2, 2), torch.randn(2, 2)], device="meta")


def test_mixing_fusions_is_a_user_error():
    with FusionDefinition() as a:
        x = a.define_tensor(shape=[-1], contiguity=True)
    with FusionDefinition() as b:
        with pytest.raises(loom.UserError, match="belongs to another fusion"):
            b.ops.neg(x)


def test_define_tensor_forms():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, 1, 4], contiguity=[True, None, True], dtype=DataType.Half)
        b = fd.define_tensor(shape=[-1, -1], contiguity=True, stride_order=[0, 1])
        c = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=False, dtype=DataType.Int32)
        fd.add_output(fd.ops.cast(a, DataType.Float))
        fd.add_output(fd.ops.neg(b))
        fd.add_output(fd.ops.neg(c))
    assert a.dtype == loom._C.DataType.Float16
    assert a.get_logical_domain()[1].is_broadcast()
    a_in = torch.randn(3, 1, 4).half()
    b_in = torch.randn(5, 6).t()  # column-major, as stride_order [0, 1] says
    c_in = torch.randint(0, 9, (4, 6), dtype=torch.int32)[:, ::2]
    outs = fd.execute([a_in, b_in, c_in])
    torch.testing.assert_close(outs[0], a_in.float())
    torch.testing.assert_close(outs[1], -b_in)
    torch.testing.assert_close(outs[2], -c_in)


def test_from_pytorch_reads_layout():
    t = torch.randn(4, 1, 6).permute(2, 1, 0)  # [6, 1, 4], strides (1, 6, 6)
    with FusionDefinition() as fd:
        x = fd.from_pytorch(t)
        fd.add_output(fd.ops.mul(x, 3.0))
    assert x.get_logical_domain()[1].is_broadcast()
    (out,) = fd.execute([t])
    torch.testing.assert_close(out, t * 3)
    with FusionDefinition() as fd2:
        s = fd2.from_pytorch(torch.randn(2, 3), static_sizes=True)
    assert [str(i.extent()) for i in s.get_logical_domain()] == ["2", "3"]
    with FusionDefinition() as fd3:
        d = fd3.from_pytorch(torch.randn(2, 3))
    assert [i.extent().is_const() for i in d.get_logical_domain()] == [False, False]


def test_errors_from_cpp_keep_their_message():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        with pytest.raises(loom.UserError, match="out of range|axis|dim") as info:
            fd.ops.sum(x, dims=[5])
        assert isinstance(info.value, ValueError)
        with pytest.raises(loom.UserError, match="permute"):
            fd.ops.permute(x, [0, 0])
        with pytest.raises(loom.UserError, match="must be a TensorView, a Scalar or a Python number, got str"):
            fd.ops.add(x, "one")
        with pytest.raises(loom.UserError, match="must be a TensorView, got float"):
            fd.ops.exp(1.0)


@pytest.mark.parametrize("name", ["rng_uniform", "size_of", "uniform_like",
                                  "var_mean_welford"])
def test_unsupported_ops_are_named(name):
    with FusionDefinition() as fd:
        with pytest.raises(loom.NotSupportedError, match=f"fd.ops.{name} is not supported by Loom"):
            getattr(fd.ops, name)
        with pytest.raises(AttributeError, match="no op 'not_an_op'"):
            fd.ops.not_an_op


def test_unsupported_arguments_are_named():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(loom.NotSupportedError, match="strides other than 1"):
            fd.ops.slice(x, [0], [2], [2])
        with pytest.raises(loom.NotSupportedError, match="of scalars only"):
            fd.ops.clamp(fd.define_scalar(1.0), 0.0, 2.0)
        with pytest.raises(loom.NotSupportedError, match="argument\\(s\\) maybe_sizes"):
            fd.define_tensor(shape=[-1], maybe_sizes=[1])
        fd.add_output(fd.ops.neg(x))
    with pytest.raises(loom.NotSupportedError, match="override_user_schedule=True"):
        fd.execute([torch.randn(3)], override_user_schedule=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        fd.execute([torch.randn(3)], bogus=1)


@pytest.mark.parametrize("name", ["Float8_e8m0fnu", "Float4_e2m1fn"])
def test_unsupported_dtypes_are_named(name):
    with pytest.raises(loom.NotSupportedError, match=f"DataType.{name} is not supported by Loom"):
        getattr(DataType, name)


def test_unsupported_parallel_types_are_named():
    with pytest.raises(loom.NotSupportedError, match="ParallelType.stream is not supported"):
        ParallelType.stream
    with pytest.raises(loom.NotSupportedError, match="torch dtype torch.float8_e5m2fnuz"):
        with FusionDefinition() as fd:
            fd.from_pytorch(torch.zeros(2, dtype=torch.float8_e5m2fnuz))


def test_data_type_names():
    assert DataType.Float.loom == loom._C.DataType.Float32
    assert DataType.Double.loom == loom._C.DataType.Float64
    assert DataType.Half.loom == loom._C.DataType.Float16
    assert DataType.Int.loom == loom._C.DataType.Int64
    assert DataType.Null.loom is None
    assert ParallelType.mesh_x.loom == loom._C.ParallelType.DIDx
    assert ParallelType.grid_x.loom == loom._C.ParallelType.BIDx
    assert ParallelType.block_x.loom == loom._C.ParallelType.TIDx


def test_torch_dtype_loom_lacks_is_a_type_error_naming_it():
    from loom.direct._types import to_loom_dtype

    with pytest.raises(loom.UserTypeError,
                       match="define_tensor: torch dtype torch.float8_e5m2fnuz is not"):
        to_loom_dtype(torch.float8_e5m2fnuz, "define_tensor")
    with FusionDefinition() as fd:
        with pytest.raises(TypeError,
                           match="torch dtype torch.float8_e4m3fnuz is not supported by Loom"):
            fd.define_tensor(shape=[-1], dtype=torch.float8_e4m3fnuz)
        with pytest.raises(TypeError, match="expected a DataType or a torch dtype, got 'float'"):
            fd.define_tensor(shape=[-1], dtype="float")
        # The supported torch dtypes map as before, complex ones included.
        assert to_loom_dtype(torch.complex128) == loom._C.DataType.ComplexDouble
