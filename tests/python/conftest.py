# SPDX-License-Identifier: Apache-2.0
"""Fixtures of Loom's Python tests (tests/python, docs/testing.md "python").

* ``device``: every test that takes it runs on "cpu" (the host backend) and, when torch sees a
  GPU and Loom was built with its CUDA backend, on "cuda" too; otherwise the cuda case is
  skipped with the reason.
* ``multidevice_direct_test``: what nvFuser's direct-binding tests get under ``mpirun``: this
  rank's size, rank, local rank, the communicator, and ``shard_tensor(t, dim, mesh)``.
* ``@pytest.mark.mpi``: tests meant to run with one process per device (the mpi ctest tier runs
  them under ``mpirun -np 2``); they also run as a single process.
"""

import os

import pytest
import torch

import loom.direct as ld
from loom import _C


def cuda_skip_reason():
    if not torch.cuda.is_available():
        return "torch sees no GPU"
    if not _C.has_cuda_backend():
        return "Loom was built without its CUDA backend"
    if _C.gpu_count() == 0:
        return "Loom's CUDA backend sees no GPU (no driver)"
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: runs with one process per device under mpirun")


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    if request.param == "cuda":
        reason = cuda_skip_reason()
        if reason is not None:
            pytest.skip(f"cuda: {reason}")
    return request.param


class MultideviceDirectTest:
    """This process as one device of a sharded run."""

    def __init__(self):
        self._communicator = ld.multidevice.Communicator.instance()
        # Ranks share the GPUs round-robin, as Loom's runtime does (docs/multidevice.md).
        self._device = "cpu"
        if os.environ.get("LOOM_PY_TEST_BACKEND", "auto") != "cpu" and cuda_skip_reason() is None:
            self._device = f"cuda:{self.local_rank % torch.cuda.device_count()}"

    @property
    def communicator(self):
        return self._communicator

    @property
    def size(self):
        return self._communicator.size()

    @property
    def rank(self):
        return self._communicator.rank()

    @property
    def local_size(self):
        return self._communicator.local_size()

    @property
    def local_rank(self):
        return self._communicator.local_rank()

    def shard_tensor(self, t, dim, mesh):
        """This rank's block of the global `t` along `dim` (sharded over `mesh`), on this rank's
        device."""
        shard = ld.multidevice.shard_tensor(t, dim, mesh, self.rank)
        return shard.to(self._device)


@pytest.fixture(scope="session")
def multidevice_direct_test():
    test = MultideviceDirectTest()
    yield test
    test.communicator.barrier()

