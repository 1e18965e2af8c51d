# SPDX-License-Identifier: Apache-2.0
"""Outputs that are views of an input (issue 36): as nvFuser does, a reshape of a contiguous
input, a permute, a squeeze, an unsqueeze and a slice are returned over the input's memory (the
same storage, torch's strides for the view), with no kernel; a view the input's strides cannot
express, an explicit `set` and a view of an input written in place are new tensors. Each test
compares with torch, on CPU tensors (the host backend) and CUDA tensors (the gpu run)."""

import torch

from loom.direct import DataType, FusionDefinition


def assert_view_of(out, x, expected):
    """`out` is `expected` (a torch view of `x`): same storage, offset, sizes and strides."""
    assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert out.data_ptr() == expected.data_ptr()
    assert out.shape == expected.shape
    assert all(s == e for n, s, e in zip(out.shape, out.stride(), expected.stride()) if n > 1)
    assert torch.equal(out, expected)


# nvFuser's test_mark_alias_pass: the reshape of a contiguous input is the input.
def test_reshape_of_a_contiguous_input_is_the_input(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor([2, 3, 4], contiguity=[True, True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [2, 12]))
    x = torch.rand(2, 3, 4, device=device)
    (y,) = fd.execute([x])
    assert_view_of(y, x, x.reshape(2, 12))
    # It is the input's memory: writing the input shows in the output.
    x.fill_(3.0)
    assert torch.equal(y, torch.full((2, 12), 3.0, device=device))


def test_permute_squeeze_unsqueeze_and_slice_are_views(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(x, [2, 0, 1]))
        fd.add_output(fd.ops.squeeze(x, [1]))
        fd.add_output(fd.ops.broadcast(x, [True, False, False, False]))
        fd.add_output(fd.ops.slice(x, [1, 0, 2], [5, 1, 6]))
    x = torch.randn(6, 1, 7, device=device)
    permuted, squeezed, unsqueezed, sliced = fd.execute([x])
    assert_view_of(permuted, x, x.permute(2, 0, 1))
    assert_view_of(squeezed, x, x.squeeze(1))
    assert_view_of(unsqueezed, x, x.unsqueeze(0))
    assert_view_of(sliced, x, x[1:5, :, 2:6])


# A strided input's views keep its strides: a slice of a transposed tensor, reshaped where its
# dims split.
def test_views_of_a_strided_input(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=[False, False], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(fd.ops.slice(x, [2, 0], [8, 6]), [2, 3, 6]))
    x = torch.randn(6, 10, device=device).T
    (y,) = fd.execute([x])
    assert_view_of(y, x, x[2:8, 0:6].reshape(2, 3, 6))


# What cannot be a view is a new tensor with the right values: a reshape across the dims of a
# transposed input, an explicit copy (set), a view next to a computed output stays a view.
def test_what_is_not_a_view_is_a_new_tensor(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=[False, False], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [-1]))
        fd.add_output(fd.ops.set(x))
        fd.add_output(fd.ops.mul(x, 2.0))
        fd.add_output(fd.ops.permute(x, [1, 0]))
    x = torch.randn(5, 4, device=device).T
    flat, copy, doubled, permuted = fd.execute([x])
    assert flat.data_ptr() != x.data_ptr() and torch.equal(flat, x.reshape(-1))
    assert copy.data_ptr() != x.data_ptr() and torch.equal(copy, x)
    torch.testing.assert_close(doubled, x * 2)
    assert_view_of(permuted, x, x.T)


# A view of an input that is updated in place would show the new values: it is a copy holding
# the input as it was.
def test_view_of_an_input_written_in_place_is_a_copy(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [-1]))
        fd.add_output(fd.ops.mul(x, 2.0), alias_input=x)
    x = torch.randn(3, 5, device=device)
    before = x.clone()
    (flat,) = fd.execute([x])
    assert flat.data_ptr() != x.data_ptr()
    assert torch.equal(flat, before.reshape(-1))
    torch.testing.assert_close(x, before * 2)


# A view another kernel reads (a permute feeding a reduction segment) and returned too: the
# values are right whichever way the segments pass it.
def test_view_read_by_a_later_kernel(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        t = fd.ops.permute(x, [1, 0])
        fd.add_output(t)
        fd.add_output(fd.ops.sum(fd.ops.exp(t), [1]))
    x = torch.randn(16, 40, device=device)
    t, s = fd.execute([x])
    assert torch.equal(t, x.T)
    torch.testing.assert_close(s, x.T.exp().sum(1))
