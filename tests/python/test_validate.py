# SPDX-License-Identifier: Apache-2.0
# fd.validate (against Loom's reference evaluator or given outputs; a mismatch raises
# loom.ValidationError naming the worst element), manual_execute and manual_validate for a hand
# schedule, the tolerances, and validate_with_auto_inferred_outputs.
import pytest
import torch

import loom
import loom.direct as nvfuser
from loom.direct import DataType, FusionDefinition, ParallelType


def softmax():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.softmax(x, -1))
        fd.add_output(fd.ops.sum(x, [1]))
    return fd


def test_validate_against_the_reference_evaluator(device):
    fd = softmax()
    x = torch.randn(5, 33, device=device)
    outs = fd.validate([x])
    torch.testing.assert_close(outs[0], torch.softmax(x, -1))
    assert outs[0].device.type == device


def test_validate_against_given_outputs_names_the_worst_element():
    fd = softmax()
    x = torch.randn(5, 33)
    good = [torch.softmax(x, -1), x.sum(1)]
    fd.validate([x], good)
    bad = [good[0].clone(), good[1].clone()]
    bad[1][3] += 0.5
    bad[1][1] += 0.01
    with pytest.raises(loom.ValidationError) as info:
        fd.validate([x], bad)
    msg = str(info.value)
    assert "output 1 (T" in msg and "differs from the reference (reference_outputs) at [3]" in msg
    assert "2 of 5 elements are out of tolerance" in msg
    assert isinstance(info.value, AssertionError)
    with pytest.raises(loom.ValidationError, match="has shape \\(5,\\) but the reference"):
        fd.validate([x], [good[0], x.sum(0)])
    with pytest.raises(loom.ValidationError, match="NaN|nan"):
        fd.validate([x], [good[0], torch.full((5,), float("nan"))])


def test_integer_and_bool_outputs_are_exact():
    with FusionDefinition() as fd:
        i = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        fd.add_output(fd.ops.add(i, 1))
        fd.add_output(fd.ops.gt(i, 0))
    i = torch.arange(-3, 4)
    fd.validate([i])
    wrong = i + 1
    wrong[6] = 5  # i[6] + 1 is 4
    with pytest.raises(loom.ValidationError, match="output 0 .*at \\[6\\].*got 4, expected 5"):
        fd.validate([i], [wrong, i > 0])


def test_the_reference_catches_a_wrong_kernel(monkeypatch):
    """validate() compares with the reference evaluator: outputs that are not what the fusion
    computes fail (here the run's outputs are replaced by wrong ones)."""
    fd = softmax()
    x = torch.randn(4, 9)
    real_execute = FusionDefinition.execute

    def wrong(self, inputs, *args, **kwargs):
        outs = real_execute(self, inputs, *args, **kwargs)
        outs[0][2, 5] += 1e-3
        return outs

    monkeypatch.setattr(FusionDefinition, "execute", wrong)
    with pytest.raises(loom.ValidationError,
                       match="output 0 .*reference evaluator.*at \\[2, 5\\], its worst element"):
        fd.validate([x])


def test_tolerances_and_auto_inferred_outputs():
    fd = softmax()
    x = torch.randn(4, 100)
    outs = fd.execute([x])
    (atol0, rtol0), (atol1, rtol1) = nvfuser.get_val_tolerances(fd, [x])
    assert 0 < rtol0 < rtol1  # the sum reduces 100 elements into each output
    nvfuser.validate_with_auto_inferred_outputs(fd.fusion, outs, [x])
    fd.fec.validate_with_auto_inferred_outputs(outs, [x])
    assert fd.fec.get_val_tolerances([x]) == [(atol0, rtol0), (atol1, rtol1)]
    outs[1][0] += 1.0
    with pytest.raises(loom.ValidationError, match="output 1"):
        nvfuser.validate_with_auto_inferred_outputs(fd.fusion, outs, [x])


def test_manual_execute_runs_a_hand_schedule():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        out = fd.ops.add(fd.ops.mul(x, 2.0), 1.0)
        fd.add_output(out)
        out.merge(0).split(0, 128)
        out.axis(0).parallelize(ParallelType.grid_x)
        out.axis(1).parallelize(ParallelType.block_x)
        nvfuser.propagate_transforms(out)
        nvfuser.parallelize_all_like(out)
        nvfuser.inline_most(fd.fusion)
    x = torch.randn(7, 300)
    (y,) = fd.manual_execute([x])
    torch.testing.assert_close(y, x * 2 + 1)
    assert "blockIdx.x" in fd.last_cuda_code()
    (y2,) = fd.manual_validate([torch.randn(3, 50)])     # the compiled kernel again
    assert y2.shape == (3, 50)
    assert fd.ke is not None
    with pytest.raises(loom.UserError, match="heuristic_params must be what schedule.schedule"):
        fd.manual_execute([x], heuristic_params=object())
    (y3,) = fd.execute([x], auto_schedule=False)         # nvFuser's spelling of the same
    torch.testing.assert_close(y3, x * 2 + 1)


def test_a_sharded_fusion_needs_reference_outputs():
    mesh = nvfuser.multidevice.DeviceMesh([0])
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 8], contiguity=True)
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(mesh)
    x = torch.randn(2, 8)
    with pytest.raises(loom.UserError, match="sharded.*pass reference_outputs"):
        fd.validate([x])
    fd.validate([x], [-x])
