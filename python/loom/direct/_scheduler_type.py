# SPDX-License-Identifier: Apache-2.0
"""nvFuser's SchedulerType with the schedulers Loom has. A member is also its name as a string,
so ``fd.last_schedulers()[0] == SchedulerType.pointwise`` holds; nvFuser's other members raise
loom.NotSupportedError naming them (the list in _unsupported.py)."""

import enum

from ._types import _unsupported_enum_meta


class SchedulerType(str, enum.Enum, metaclass=_unsupported_enum_meta("SchedulerType")):
    """The scheduler of a kernel (fd.last_schedulers() gives them as these names)."""

    pointwise = "pointwise"
    reduction = "reduction"
    inner_persistent = "inner_persistent"
    scan = "scan"
    sort = "sort"
    transpose = "transpose"
    inner_outer_persistent = "inner_outer_persistent"
    outer_persistent = "outer_persistent"

    def __repr__(self):
        return f"SchedulerType.{self.name}"

    def __str__(self):
        return self.value
