# SPDX-License-Identifier: Apache-2.0
"""One failing rank in a job of two, from Python (run by tests/multidevice/mpi_failures_test.sh
under mpirun -np 2): rank 1 does one wrong thing while rank 0 executes a sharded fusion (a sum
over the sharded dim: an Allreduce); the script checks the job ends within seconds with the
reason on every rank.

    python mpi_failure_cases.py CASE     CASE: ok, raise, sys-exit, exit0
"""

import sys
import time

import torch

import loom.direct as nvfuser
from loom.direct import FusionDefinition, ParallelType
from loom.direct.multidevice import Communicator, DeviceMesh, shard_tensor


def execute():
    d = Communicator.instance().size()
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2 * d, 3], contiguity=True)
        fd.add_output(fd.ops.sum(x, dims=[0]))
        x.set_device_mesh(mesh)
        x.split(0, d, inner_split=False)
        x.axis(0).parallelize(ParallelType.mesh_x)
    full = torch.arange(6 * d, dtype=torch.float32).reshape(2 * d, 3)
    (out,) = fd.execute([shard_tensor(full, 0, mesh)])
    torch.testing.assert_close(out, full.sum(0))


def main(case):
    rank = Communicator.instance().rank()
    assert nvfuser.multidevice.Communicator.instance().size() == 2
    if case == "ok":
        execute()
    elif case == "raise":  # a Python exception nobody catches, before execute
        if rank == 1:
            time.sleep(0.5)  # rank 0 waits in execute by now
            raise RuntimeError("rank 1 gives up before execute")
        execute()
    elif case == "sys-exit":
        if rank == 1:
            time.sleep(0.5)
            sys.exit(3)
        execute()
    elif case == "exit0":  # rank 1 leaves cleanly without taking part
        if rank == 1:
            sys.exit(0)
        execute()
    else:
        sys.exit(f"unknown case {case!r}")


if __name__ == "__main__":
    main(sys.argv[1])
