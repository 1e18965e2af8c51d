# SPDX-License-Identifier: Apache-2.0
"""``fd.sched``: nvFuser's whole-fusion scheduling helpers, given Loom's meaning.

nvFuser's tutorial schedules by hand and then spreads the schedule with ``fd.sched``::

    reference.split(-1, 128)
    fd.sched.transform_like(reference)       # Loom: propagate_transforms
    reference.axis(0).parallelize(ParallelType.grid_x)
    fd.sched.parallelize_like(reference)     # Loom: parallelize_all_like
    fd.sched.inline_most()                   # Loom: inline_most

The arguments Loom's transforms have no counterpart for (a position limit, a subset of parallel
types, tensors to inline) raise NotSupportedError naming them; so do the helpers Loom lacks
(``UNSUPPORTED["fd.sched"]``).
"""

from .. import NotSupportedError, _C
from ._unsupported import check_attribute


def _unsupported_argument(method, name, why):
    return NotSupportedError(
        f"fd.sched.{method}: {name}= is not supported by Loom ({why}); docs/python.md lists what "
        "Loom lacks"
    )


class Sched:
    """The ``fd.sched`` of one FusionDefinition."""

    def __init__(self, fd):
        self._fd = fd

    def transform_like(self, reference_tv, selected_tensors=()):
        """Replays the reference's loop domain (its splits, merges and reorders) onto every
        tensor of the fusion, or onto `selected_tensors`."""
        _C.propagate_transforms(reference_tv, list(selected_tensors))

    def parallelize_like(self, reference_tv, pos=-1, selected_tensors=(),
                         selected_parallel_types=(), propagate_padding=True):
        """Gives every tensor (or `selected_tensors`) the parallel types of the reference's
        matching loop axes."""
        if pos != -1:
            raise _unsupported_argument("parallelize_like", "pos", "Loom's parallelize_all_like "
                                        "copies every axis of the reference")
        if selected_parallel_types:
            raise _unsupported_argument("parallelize_like", "selected_parallel_types",
                                        "Loom's parallelize_all_like copies every parallel type")
        if not propagate_padding:
            raise _unsupported_argument("parallelize_like", "propagate_padding",
                                        "Loom pads no warps when parallelizing")
        _C.parallelize_all_like(reference_tv, list(selected_tensors))

    def inline_most(self, selected_tensors=()):
        """Inlines every tensor of the fusion as far as its producers and consumers allow."""
        if selected_tensors:
            raise _unsupported_argument("inline_most", "selected_tensors",
                                        "Loom's inline_most inlines the whole fusion")
        _C.inline_most(self._fd.fusion)

    def __getattr__(self, name):
        check_attribute("fd.sched", "fd.sched", name)
