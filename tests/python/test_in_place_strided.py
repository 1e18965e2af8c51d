# SPDX-License-Identifier: Apache-2.0
"""In-place updates (add_output(alias_input=)) into inputs that are not dense (issue 36): padded,
column-major, transposed and sliced tensors take the output through their own strides, as
nvFuser writes them, and the memory between their elements is left alone. Each test compares the
updated input with torch computed on a copy taken before the run, on CPU tensors (the host
backend) and CUDA tensors (the gpu run)."""

import pytest
import torch

from loom.direct import DataType, FusionDefinition


def relu_in_place(fd, shape, contiguity, stride_order=None):
    x = fd.define_tensor(shape=shape, contiguity=contiguity, dtype=DataType.Float,
                         stride_order=stride_order)
    y = fd.ops.cast(fd.ops.where(fd.ops.gt(x, 0.0), x, 0.0), dtype=DataType.Float)
    out = fd.ops.set(y)
    fd.add_output(out, alias_input=x)
    fd.add_output(out)


# nvFuser's own case: shape (2, 2) with strides (1, 3) in a buffer of five floats; the element at
# offset 2 belongs to no element of the view.
def test_padded_column_major_input_is_updated_through_its_strides(device):
    buffer = torch.randn(5, device=device)
    x = buffer.as_strided((2, 2), (1, 3))
    before = buffer.clone()
    with FusionDefinition() as fd:
        relu_in_place(fd, [2, 2], [False, True], stride_order=[0, 1])
    (out,) = fd.execute([x])
    torch.testing.assert_close(x, before.as_strided((2, 2), (1, 3)).relu())
    assert out.data_ptr() == x.data_ptr() and out.stride() == x.stride()
    torch.testing.assert_close(out, x)
    assert buffer[2].item() == before[2].item()  # the gap


@pytest.mark.parametrize(
    "make",
    [
        lambda d: torch.randn(70, 33, device=d).T,  # transposed
        lambda d: torch.randn(33, 80, device=d)[:, 5:75],  # sliced columns
        lambda d: torch.randn(66, 70, device=d)[::2],  # every other row
        lambda d: torch.randn(33, 3, 70, device=d)[:, 1],  # one row of each 3-row block
    ],
    ids=["transposed", "sliced", "stepped", "block_rows"],
)
def test_optimizer_step_into_a_strided_parameter(device, make):
    p = make(device)
    assert not p.is_contiguous()
    whole = p._base if p._base is not None else p
    base_before = whole.clone()
    before = p.clone()
    g = torch.randn(33, 70, device=device)
    with FusionDefinition() as fd:
        tp = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
        tg = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        lr = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.sub(tp, fd.ops.mul(tg, lr)), alias_input=tp)
    assert fd.execute([p, g, 0.25]) == []
    torch.testing.assert_close(p, before - g * 0.25)
    # Only the view's elements changed in the tensor it was taken from.
    untouched = torch.ones_like(whole, dtype=torch.bool)
    untouched.as_strided(p.shape, p.stride(), p.storage_offset() - whole.storage_offset()).fill_(
        False)
    assert torch.equal(whole[untouched], base_before[untouched])


# A reduction reads the input, so the output is computed aside and copied in after the kernels,
# through the input's strides.
def test_centering_a_transposed_input_in_place(device):
    x = torch.randn(96, 16, device=device).T
    before = x.clone()
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
        mean = fd.ops.div(fd.ops.sum(tx, dims=[1], keepdim=True), 96.0)
        fd.add_output(fd.ops.sub(tx, mean), alias_input=tx)
    fd.execute([x])
    torch.testing.assert_close(x, before - before.mean(dim=1, keepdim=True))
