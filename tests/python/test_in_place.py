# SPDX-License-Identifier: Apache-2.0
"""nvFuser's in-place updates, add_output(alias_input=) (issue 36): the output is written into the
input's memory, which the caller sees updated; execute() returns nothing for it unless it was an
output before (then the returned tensor shares the input's storage). Each test compares the
updated input with torch computed on a copy taken before the run, on CPU tensors (the host
backend) and CUDA tensors (the gpu run)."""

import pytest
import torch

import loom
import loom.direct
from loom.direct import DataType, FusionDefinition


def test_optimizer_step_updates_the_parameter_in_place(device):
    p = torch.randn(33, 70, device=device)
    g = torch.randn(33, 70, device=device)
    p_before, address = p.clone(), p.data_ptr()
    with FusionDefinition() as fd:
        tp = fd.from_pytorch(p)
        tg = fd.from_pytorch(g)
        lr = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.sub(tp, fd.ops.mul(tg, lr)), alias_input=tp)
    assert fd.execute([p, g, 0.125]) == []  # nothing returned for the aliased output
    assert p.data_ptr() == address
    torch.testing.assert_close(p, p_before - 0.125 * g)
    assert "in place: step 0 stores T" in fd.host_program()
    fd.execute([p, g, 0.125])  # a cached run updates the updated parameter
    torch.testing.assert_close(p, p_before - 0.25 * g)
    # nvFuser's FusionExecutorCache of the fusion hides the output too.
    assert loom.direct.FusionExecutorCache(fd.fusion).execute([p, g, 0.25]) == []
    torch.testing.assert_close(p, p_before - 0.5 * g)


def test_output_added_before_is_returned_sharing_the_inputs_storage(device):
    x = torch.randn(4, 9, device=device)
    x_before = x.clone()
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        y = fd.ops.relu(fd.ops.neg(tx))
        fd.add_output(y)
        fd.add_output(y, alias_input=tx)  # nvFuser's: an output already, so still returned
    (out,) = fd.execute([x])
    assert out.data_ptr() == x.data_ptr()
    torch.testing.assert_close(x, torch.relu(-x_before))


def test_a_reduction_reading_the_input_sees_the_old_values(device):
    x = torch.randn(16, 96, device=device)
    x_before = x.clone()
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        mean = fd.ops.sum(tx, [1], keepdim=True)
        fd.add_output(fd.ops.sub(tx, fd.ops.div(mean, 96.0)), alias_input=tx)
    fd.execute([x])
    torch.testing.assert_close(x, x_before - x_before.mean(1, keepdim=True))


def test_batch_norm_running_mean_update(device):
    x = torch.randn(64, 8, device=device)
    running = torch.randn(8, device=device)
    running_before = running.clone()
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        tr = fd.from_pytorch(running)
        mean = fd.ops.div(fd.ops.sum(tx, [0]), 64.0)
        fd.add_output(fd.ops.add(fd.ops.mul(tr, 0.9), fd.ops.mul(mean, 0.1)), alias_input=tr)
        fd.add_output(fd.ops.sub(tx, fd.ops.broadcast_in_dim(mean, [64, 8], [1])))
    (centered,) = fd.execute([x, running])
    torch.testing.assert_close(running, 0.9 * running_before + 0.1 * x.mean(0))
    torch.testing.assert_close(centered, x - x.mean(0))


def test_two_segments_the_second_stores_it(device):
    acc = torch.randn(12, 20, device=device)
    a = torch.randn(12, 9, device=device)
    b = torch.randn(9, 20, device=device)
    acc_before = acc.clone()
    with FusionDefinition() as fd:
        t_acc, ta, tb = fd.from_pytorch(acc), fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.add(t_acc, fd.ops.matmul(ta, tb)), alias_input=t_acc)
    fd.execute([acc, a, b])
    torch.testing.assert_close(acc, acc_before + a @ b)
    assert "in place: step 1 stores" in fd.host_program()


def test_input_read_by_a_later_segment_reads_the_old_values(device):
    x = torch.randn(8, 8, device=device)
    x_before = x.clone()
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        doubled = fd.ops.mul(tx, 2.0)
        fd.add_output(doubled, alias_input=tx)
        fd.add_output(fd.ops.matmul(tx, fd.ops.permute(doubled, [1, 0])))
    (product,) = fd.execute([x])
    torch.testing.assert_close(x, 2.0 * x_before)
    torch.testing.assert_close(product, x_before @ (2.0 * x_before).T)
    assert "then: copy" in fd.host_program()


def test_validate_compares_the_updated_input(device):
    x = torch.randn(5, 7, device=device)
    y = torch.randn(5, 7, device=device)
    with FusionDefinition() as fd:
        tx, ty = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.add(tx, ty), alias_input=tx)
        fd.add_output(fd.ops.mul(tx, ty))
    x_before = x.clone()
    (product,) = fd.validate([x, y])
    torch.testing.assert_close(x, x_before + y)
    torch.testing.assert_close(product, x_before * y)


def test_declaration_errors_name_the_tensors():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        v = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        with pytest.raises(loom.UserError, match=r"written into input T1 .*the dtypes differ"):
            fd.add_output(fd.ops.neg(x), alias_input=i)
        with pytest.raises(loom.UserError, match=r"the ranks differ \(2 and 1\)"):
            fd.add_output(fd.ops.neg(x), alias_input=v)
        with pytest.raises(loom.UserError, match="is not a fusion input"):
            fd.add_output(fd.ops.neg(x), alias_input=fd.ops.abs(x))
        with pytest.raises(TypeError, match="must be tensors"):
            fd.add_output(fd.ops.neg(x), alias_input=1.0)


def test_run_time_errors_name_the_tensors(device):
    def define(fd, x, y):
        tx, ty = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.add(ty, 1.0), alias_input=tx)

    x, y = torch.randn(4, 6, device=device), torch.randn(4, 6, device=device)
    with FusionDefinition() as fd:
        define(fd, x, y)
    with pytest.raises(loom.UserError, match=r"the output has sizes \[4, 5\] but the input has"):
        fd.execute([x, torch.randn(4, 5, device=device)])
    with pytest.raises(loom.UserError, match=r"input 1 \(T1\) shares memory with input 0"):
        fd.execute([x, x])
    # An input whose rows overlap cannot hold the output (a transposed or padded one can:
    # test_in_place_strided.py).
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
        ty = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.add(ty, 1.0), alias_input=tx)
    overlapping = torch.randn(16, device=device).as_strided((3, 4), (2, 1))
    with pytest.raises(loom.UserError, match=r"written into input 0 \(T0\).*strides \[2, 1\]\) "
                       r"may address one element twice"):
        fd.execute([overlapping, torch.randn(3, 4, device=device)])
