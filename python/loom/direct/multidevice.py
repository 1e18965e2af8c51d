# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``multidevice`` names on Loom: DeviceMesh, Communicator, shard_tensor.

One process per device (``mpirun -np N python ...``); the Communicator reads its rank from the
launcher's environment (docs/multidevice.md). A fusion with device meshes runs this rank's shard.
"""

from .. import _C

DeviceMesh = _C.multidevice.DeviceMesh
Communicator = _C.multidevice.Communicator


def shard_tensor(tensor, dim, mesh, device_id=None, parallel_type=None):
    """This rank's (or `device_id`'s) block of `tensor` along `dim`, when `dim` is sharded over
    `mesh`'s axis of `parallel_type` (mesh_x by default): a view, no copy."""
    if device_id is None:
        device_id = Communicator.instance().rank()
    return mesh.shard_tensor(tensor, dim, device_id, parallel_type)


def shard_tensor_like(tensor, tv, device_id=None):
    """The shard of the global `tensor` that `device_id` holds under the sharding of TensorView
    `tv` (any mesh rank, several sharded dims)."""
    if device_id is None:
        device_id = Communicator.instance().rank()
    return _C.multidevice.shard_tensor_like(tensor, tv, device_id)


__all__ = ["DeviceMesh", "Communicator", "shard_tensor", "shard_tensor_like"]
