# SPDX-License-Identifier: Apache-2.0
"""Fixtures of Loom's Python tests (tests/python, docs/testing.md "python").

* ``device``: every test that takes it runs on "cpu" (the host backend) and, when torch sees a
  GPU and Loom was built with its CUDA backend, on "cuda" too; otherwise the cuda case is
  skipped with the reason.
* ``multidevice_direct_test``: what nvFuser's direct-binding tests get under ``mpirun``: this
  rank's size, rank, local rank, the communicator, and ``shard_tensor(t, dim, mesh)``.
* ``@pytest.mark.mpi``: tests meant to run with one process per device (the mpi ctest tier runs
  them under ``mpirun -np 2``); they also run as a single process.
* Every fusion a test runs (``execute``, ``validate``, ``manual_execute``,
  ``KernelExecutor.compile``) is checked after the test as nvFuser's conftest checks its own
  (``check_captured_python_definition``): its printed definition (``repr(fd)``) is executed on
  a new FusionDefinition, which must hold a structurally equal fusion, and it must be in
  nvFuser's form, unless the test is marked ``@pytest.mark.text_form_definition`` (a hand
  schedule the nvFuser form cannot express: rFactors, caches, inline positions of its own).
"""

import os
import re

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
    config.addinivalue_line(
        "markers",
        "text_form_definition: the test's fusions may print as a rebuild from the text form",
    )


def check_captured_python_definition(fusion, allow_text_form=False):
    """Executes the printed definition of `fusion` on a new FusionDefinition and asserts it
    rebuilds a structurally equal fusion (in nvFuser's form unless `allow_text_form`). Returns
    the new FusionDefinition."""
    fd_str = ld.translate_fusion(fusion)
    func_name = re.findall(r"def (\w+)\(fd : FusionDefinition\)", fd_str)[0]
    namespace = {"FusionDefinition": ld.FusionDefinition, "DataType": ld.DataType}
    exec(compile(fd_str, "<printed definition>", "exec"), namespace)
    with ld.FusionDefinition() as fd_cap:
        namespace[func_name](fd_cap)
    why = fusion.structural_difference(fd_cap.fusion)
    assert why is None, f"the printed definition rebuilds another fusion ({why}):\n{fd_str}"
    if not allow_text_form:
        assert "define_from_text" not in fd_str, f"not in nvFuser's form:\n{fd_str}"
    return fd_cap


@pytest.fixture(autouse=True)
def printed_definitions_rebuild(request, monkeypatch):
    """The check of the module docstring, on every fusion the test runs."""
    fusions = {}

    def record(fusion):
        fusions[id(fusion)] = fusion

    def wrap(cls, name, fusion_of):
        original = getattr(cls, name)

        def wrapper(self, *args, **kwargs):
            fusion = fusion_of(self, *args, **kwargs)
            if fusion is not None:
                record(fusion)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    for method in ("execute", "manual_execute"):
        wrap(ld.FusionDefinition, method, lambda fd, *a, **k: fd.fusion)
    wrap(ld.KernelExecutor, "compile",
         lambda ke, fusion, *a, **k: getattr(fusion, "fusion", fusion))
    yield
    allow = request.node.get_closest_marker("text_form_definition") is not None
    for fusion in fusions.values():
        check_captured_python_definition(fusion, allow_text_form=allow)


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

