# SPDX-License-Identifier: Apache-2.0
"""A grid reduction inside a serial loop of a run-time extent (issue 36, nvFuser's
test_tutorial_reduction): `sum(x, [1])` scheduled by hand with only the reduced axis on
`grid_x`, so the rows are a serial loop of x's first extent. The grid scratch each row needs is
sized at launch, so one compiled kernel runs any number of rows. Compared with torch, on CPU
tensors (the host backend) and CUDA tensors (the gpu run)."""

import torch

from loom.direct import FusionDefinition, ParallelType


def test_rows_in_a_serial_loop_reduced_across_blocks(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1])
        out = fd.ops.sum(x, dims=[1])
        fd.add_output(out)
        out.axis(1).parallelize(ParallelType.grid_x)
    for rows, cols in [(10, 1024), (3, 7), (1, 5), (25, 64)]:
        t = torch.randn(rows, cols, device=device)
        (got,) = fd.manual_execute([t])
        torch.testing.assert_close(got, t.sum(1), rtol=1e-5, atol=1e-4)


def test_split_rows_and_block_thread_reduction(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1])
        out = fd.ops.max(x, dims=[1])
        fd.add_output(out)
        out.split(1, 32)
        out.split(0, 4)
        out.axis(2).parallelize(ParallelType.grid_x)
        out.axis(3).parallelize(ParallelType.block_x)
    for rows, cols in [(10, 100), (4, 33), (13, 64)]:
        t = torch.randn(rows, cols, device=device)
        (got,) = fd.manual_execute([t])
        assert torch.equal(got, t.amax(1))
