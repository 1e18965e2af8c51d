# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``multidevice`` names on Loom: DeviceMesh, Communicator, shard_tensor, the executor.

One process per device (``mpirun -np N python ...``); the Communicator reads its rank from the
launcher's environment (docs/multidevice.md). A fusion with device meshes runs this rank's shard.
"""

import enum

from .. import NotSupportedError, _C, to_torch_list

DeviceMesh = _C.multidevice.DeviceMesh
Communicator = _C.multidevice.Communicator


def _is_tensor_view(x):
    return isinstance(x, _C.TensorView)


def shard_tensor(tensor, dim, mesh=None, device_id=None, parallel_type=None):
    """This rank's (or `device_id`'s) shard of the global `tensor`, in either of nvFuser's forms:

    - ``shard_tensor(tensor, tv)``: the shard TensorView `tv`'s sharding gives this rank (any
      form of split, any mesh rank, several sharded dims; a copy where the rank's rows are
      strided, as an inner split's are, else a view);
    - ``shard_tensor(tensor, dim, mesh)``: the block along `dim` when `dim` is sharded over
      `mesh`'s axis of `parallel_type` (mesh_x by default): a view, no copy.
    """
    if device_id is None:
        device_id = Communicator.instance().rank()
    if _is_tensor_view(dim):
        if mesh is not None:
            raise TypeError("shard_tensor(tensor, tv) takes no mesh: the TensorView has its own")
        return _C.multidevice.shard_tensor_like(tensor, dim, device_id)
    if mesh is None:
        raise TypeError("shard_tensor(tensor, dim, mesh): the mesh is missing")
    return mesh.shard_tensor(tensor, dim, device_id, parallel_type)


def shard_tensor_like(tensor, tv, device_id=None):
    """The shard of the global `tensor` that `device_id` holds under the sharding of TensorView
    `tv` (the same as ``shard_tensor(tensor, tv)``)."""
    if device_id is None:
        device_id = Communicator.instance().rank()
    return _C.multidevice.shard_tensor_like(tensor, tv, device_id)


class CommunicatorBackend(enum.Enum):
    """nvFuser's communicator backends. Loom picks the transport by where the tensors live (NCCL
    for CUDA tensors, MPI for host tensors, staged through host memory where ranks share a GPU),
    so every backend named here runs, through that transport: the choice changes how the bytes
    move, never the values."""

    nccl = "nccl"
    ucc = "ucc"
    cuda = "cuda"
    mpi = "mpi"


class MultiDeviceExecutorParams:
    """The parameters nvFuser's MultiDeviceExecutor takes. Loom caches allocations itself and
    indexes streams per rank already; any CommunicatorBackend runs through Loom's transport."""

    def __init__(self):
        self.use_allocation_cache = False
        self.backend_type = CommunicatorBackend.nccl
        self.offset_stream_indexing_by_rank = True


class MultiDeviceExecutor:
    """Runs a fusion with device meshes as this rank (nvFuser's ``MultiDeviceExecutor``): the
    same path as ``FusionDefinition.execute``, communications included."""

    def __init__(self, fusion, params=None):
        params = MultiDeviceExecutorParams() if params is None else params
        if not isinstance(params.backend_type, CommunicatorBackend):
            raise TypeError(
                f"MultiDeviceExecutor: backend_type must be a CommunicatorBackend, got "
                f"{params.backend_type!r}"
            )
        # A FusionDefinition or its fusion.
        self._fusion = getattr(fusion, "fusion", fusion)
        self._executor = _C.FusionExecutor(self._fusion)

    def run(self, args):
        """This rank's outputs for this rank's inputs (shards of sharded inputs), as torch tensors."""
        return to_torch_list(self._executor.run(list(args), None))

    def __str__(self):
        try:
            return self._executor.host_program()
        except Exception:  # nothing has run yet: the fusion itself
            return self._fusion.to_text()


class Sharding:
    """How one output of a run is sharded (``FusionExecutorCache.get_output_shardings()``):
    ``axis_sharded_on(parallel_type)``, the logical dim a mesh axis shards (-1: none). Loom makes these; building one from DTensor placements, as nvFuser's
    FusionDefinitionWrapper does, is not supported."""

    def __init__(self, *args, **kwargs):
        raise NotSupportedError(
            "multidevice.Sharding (DTensor placements) is not supported by Loom: annotate the "
            "TensorViews with set_device_mesh and parallelize(mesh_x), and shard inputs with "
            "shard_tensor"
        )

    @classmethod
    def _of(cls, tv):
        self = object.__new__(cls)
        self._tv = tv
        return self

    def axis_sharded_on(self, parallel_type):
        """The logical dim (reductions skipped) that `parallel_type` (mesh_x, mesh_y, mesh_z)
        shards when the fusion runs, or -1."""
        p = getattr(parallel_type, "loom", parallel_type)
        return _C.multidevice.sharded_axis(self._tv, p)


def output_shardings(fusion):
    """One Sharding per output of a fusion with device meshes (as propagation leaves them, the
    outputs' own annotations included); none for a fusion without meshes, as nvFuser."""
    outs = [t for t in fusion.outputs() if _is_tensor_view(t)]
    if not any(t.has_device_mesh() for t in fusion.vals() if _is_tensor_view(t)):
        return []
    return [Sharding._of(t) for t in outs]


__all__ = [
    "CommunicatorBackend",
    "Communicator",
    "DeviceMesh",
    "MultiDeviceExecutor",
    "MultiDeviceExecutorParams",
    "Sharding",
    "shard_tensor",
    "shard_tensor_like",
]
