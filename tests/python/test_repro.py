# SPDX-License-Identifier: Apache-2.0
# Reproducers as nvFuser gives them: repro_script_for(inputs), execute(print_repro=True),
# execute(save_repro_inputs=True) then last_repro_script(), and the one every execute() error
# carries. Each script defines the fusion in nvFuser's form and runs it on inputs laid out like
# the given ones (torch tensors, numpy arrays, numbers, define_vector lists); run, it gives
# outputs of the same shapes, or the same error.
import contextlib
import io

import numpy as np
import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition


def definition():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[False, False])
        i = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int32)
        s = fd.define_scalar(dtype=DataType.Double)
        v = fd.define_vector(2)
        y = fd.ops.add(fd.ops.mul(x, s), fd.ops.cast(i, DataType.Float))
        fd.add_output(y)
        fd.add_output(fd.ops.reshape(y, v))
    return fd


def run_script(script):
    namespace = {}
    exec(compile(script, "<repro>", "exec"), namespace)
    return namespace["outputs"]


def test_repro_script_for_torch_numpy_and_numbers():
    fd = definition()
    x = torch.randn(8, 6).t()[:, 1:5]               # strided: (6, 4), strides (1, 6)
    i = np.arange(4, dtype=np.int32)
    inputs = [x, i, 0.5, [2, 12]]
    ref = fd.execute(inputs)
    script = fd.repro_script_for(inputs)
    assert "def nvfuser_fusion(fd : FusionDefinition) -> None :" in script
    assert "_torch_input((6, 4), (1, 6), torch.float32, 'cpu')" in script
    assert "_numpy_input((4,), (1,), 'int32')" in script
    assert "    0.5,\n    [2, 12],\n" in script
    outs = run_script(script)
    assert [tuple(o.shape) for o in outs] == [tuple(r.shape) for r in ref]
    assert all(o.dtype == r.dtype for o, r in zip(outs, ref))
    assert fd.repro_script().startswith("# Loom reproducer")  # Loom's name, no inputs


def test_save_repro_inputs_then_last_repro_script():
    fd = definition()
    with pytest.raises(loom.UserError, match="save_repro_inputs=True"):
        fd.last_repro_script()
    x = torch.randn(1, 6).expand(4, 6)              # a stride-0 (expanded) input
    i = torch.arange(6, dtype=torch.int32)
    fd.execute([x, i, 2.0, [3, 8]], save_repro_inputs=True)
    del x  # the inputs' layouts were kept, not the tensors
    script = fd.last_repro_script()
    assert "_torch_input((4, 6), (0, 1), torch.float32, 'cpu')" in script
    outs = run_script(script)
    assert tuple(outs[1].shape) == (3, 8)


def test_print_repro_prints_before_running():
    fd = definition()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fd.execute([torch.randn(2, 3), np.zeros(3, dtype=np.int32), 1.0, [3, 2]],
                   print_repro=True)
    assert "# Loom reproducer" in buf.getvalue()
    assert "outputs = fd.execute(inputs)" in buf.getvalue()


def test_an_errors_reproducer_fails_the_same_way():
    fd = definition()
    with pytest.raises(loom.UserError) as info:
        fd.execute([torch.randn(2, 3), np.zeros(5, dtype=np.int32), 1.0, [3, 2]])
    message = str(info.value).split("\n")[0]
    assert "shapes disagree" in message or "size" in message
    with pytest.raises(loom.UserError) as again:
        run_script(info.value.repro)
    assert str(again.value).split("\n")[0] == message
