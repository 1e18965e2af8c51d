# SPDX-License-Identifier: Apache-2.0
# The founding case's own test, as nvFuser's direct-binding test suite has it (test_welford in
# tests/python/multidevice/test_multidevice.py, added by nvFuser PR #5552), with only the import
# lines changed from nvfuser_direct to loom.direct. The mpi ctest tier runs it under mpirun -np 2.
import pytest
import torch

import loom.direct as nvfuser
from loom.direct import FusionDefinition


@pytest.mark.mpi
def test_welford(multidevice_direct_test):
    d = multidevice_direct_test.size
    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
    b, s, e = 1, 2048, 12288

    def _definition(fd: FusionDefinition):
        inp = fd.define_tensor(shape=[b, s, e], contiguity=True)
        var, mean = fd.ops.var_mean(inp, dims=[2], correction=0, keepdim=False)
        fd.add_output(var)
        fd.add_output(mean)

    def _multidevice_schedule(fd: FusionDefinition):
        (inp,) = fd.fusion.inputs()
        inp.set_device_mesh(mesh)
        inp.split(1, d, inner_split=False)
        inp.axis(1).parallelize(nvfuser.ParallelType.mesh_x)

    unsharded = torch.randn(b, s, e)
    sharded = multidevice_direct_test.shard_tensor(unsharded, 1, mesh)

    with FusionDefinition() as fd:
        _definition(fd)
        _multidevice_schedule(fd)
    var, mean = fd.execute([sharded])

    torch.testing.assert_close(var, sharded.var(2), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(mean, sharded.mean(2), rtol=1e-3, atol=1e-3)
