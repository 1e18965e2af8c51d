# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``dtensor_execute``: a fusion run on torch DTensors' local shards, its outputs
returned as DTensors placed by how the fusion shards them."""

from .. import NotSupportedError, UserError
from ._cache import returned_outputs
from ._types import ParallelType


def _returned_tensor_views(fd):
    """The TensorViews execute() returns, in its order (_cache.returned_outputs' choice)."""
    fusion = fd.fusion
    return returned_outputs(fusion, fd._returns, list(fusion.outputs()), list(fusion.inputs()))


def dtensor_execute(fd, in_dtensors, device=None):
    """Runs `fd` on the local shards of `in_dtensors` (DTensors on one 1-D device mesh, or plain
    tensors), whose TensorViews the definition sharded as their placements say, and returns the
    outputs as DTensors on that mesh: Shard(d) where the fusion shards output dim d on mesh_x,
    Replicate otherwise (a sum across devices is reduced inside the fusion)."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.placement_types import Replicate, Shard

    meshes = [t.device_mesh for t in in_dtensors if isinstance(t, DTensor)]
    if not meshes:
        raise UserError("dtensor_execute: none of the inputs is a DTensor (use fd.execute)")
    mesh = meshes[0]
    if any(m != mesh for m in meshes):
        raise UserError("dtensor_execute: the input DTensors are on different device meshes")
    if mesh.ndim != 1:
        raise NotSupportedError(
            f"dtensor_execute: a {mesh.ndim}-D device mesh is not supported by Loom (nor by "
            "nvFuser's dtensor_execute): give DTensors on a 1-D mesh")
    local = [t.to_local() if isinstance(t, DTensor) else t for t in in_dtensors]
    outs = fd.execute(local, device=device)
    from .multidevice import Sharding

    results = []
    for out, tv in zip(outs, _returned_tensor_views(fd)):
        dim = Sharding._of(tv).axis_sharded_on(ParallelType.mesh_x)
        placements = [Shard(dim)] if dim >= 0 else [Replicate()]
        results.append(DTensor.from_local(out, mesh, placements, run_check=False))
    return results


__all__ = ["dtensor_execute"]
