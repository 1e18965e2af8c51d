# SPDX-License-Identifier: Apache-2.0
"""Int64 exactly (issue 36): integer tensors with values past 2^53 (where a double skips odd
numbers) come out of Loom exact, and fd.validate, whose reference evaluator keeps integer tensors
as integers, agrees: add and mul wrap on overflow, div truncates toward zero, fmod keeps the
dividend's sign, shifts, sums, full and iota, against torch's int64 results, on CPU tensors (the
host backend) and CUDA tensors (the gpu run)."""

import torch

from loom.direct import DataType, FusionDefinition

BIG = 2**53


def test_integer_math_past_2_to_53(device):
    x = torch.tensor([[BIG + 1, -(BIG + 3), 2**62 + 7], [2**63 - 3, -(2**63) + 5, 123456789012345679]],
                     dtype=torch.int64, device=device)
    y = torch.tensor([[3, BIG + 5, -7], [4, 2**20, -(BIG - 1)]], dtype=torch.int64, device=device)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        ty = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        fd.add_output(fd.ops.add(tx, ty))
        fd.add_output(fd.ops.mul(tx, ty))
        fd.add_output(fd.ops.div(tx, ty))
        fd.add_output(fd.ops.fmod(tx, ty))
        fd.add_output(fd.ops.bitwise_left_shift(tx, 3))
        fd.add_output(fd.ops.bitwise_right_shift(tx, 1))
        fd.add_output(fd.ops.sum(tx, [1]))
        fd.add_output(fd.ops.where(fd.ops.gt(tx, ty), tx, ty))
        fd.add_output(fd.ops.full([3], BIG + 1, dtype=DataType.Int))
        fd.add_output(fd.ops.iota(4, BIG + 1, 3, dtype=DataType.Int))
    outs = fd.validate([x, y])  # the reference evaluator against the kernels, exactly
    expected = [
        x + y,
        x * y,
        torch.div(x, y, rounding_mode="trunc"),
        torch.fmod(x, y),
        x << 3,
        x >> 1,
        x.sum(1),
        torch.where(x > y, x, y),
        torch.full((3,), BIG + 1, dtype=torch.int64, device=device),
        torch.arange(BIG + 1, BIG + 13, 3, dtype=torch.int64, device=device),
    ]
    for k, (out, ref) in enumerate(zip(outs, expected)):
        assert out.dtype == torch.int64, k
        assert torch.equal(out, ref), (k, out, ref)
