# SPDX-License-Identifier: Apache-2.0
"""nvFuser's SchedulerType with the schedulers Loom has (and none). A member is also its name as a string,
so ``fd.last_schedulers()[0] == SchedulerType.pointwise`` holds; nvFuser's other members raise
loom.NotSupportedError naming them (the list in _unsupported.py)."""

import enum

from ._types import _unsupported_enum_meta


class SchedulerType(str, enum.Enum, metaclass=_unsupported_enum_meta("SchedulerType")):
    """The scheduler of a kernel (fd.last_schedulers() gives them as these names)."""

    none = "none"  # nvFuser's "no scheduler": no kernel of Loom's has it
    pointwise = "pointwise"
    reduction = "reduction"
    inner_persistent = "inner_persistent"
    scan = "scan"
    sort = "sort"
    transpose = "transpose"
    inner_outer_persistent = "inner_outer_persistent"
    outer_persistent = "outer_persistent"
    scatter = "scatter"

    def __repr__(self):
        return f"SchedulerType.{self.name}"

    def __str__(self):
        return self.value


# pybind11's table of an enum's members, {name: (member, doc)}, which nvFuser's code reads to
# list every SchedulerType (its tutorial's check_auto_schedule). Set after the class: inside it
# the name would be mangled.
setattr(SchedulerType, "__entries", {m.name: (m, None) for m in SchedulerType})
