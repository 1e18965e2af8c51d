# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``schedule`` module: one of Loom's automatic schedulers applied by hand to a whole
fusion, which ``fd.manual_execute`` then runs as one kernel::

    from loom.direct import SchedulerType, schedule

    with FusionDefinition() as fd:
        ...
        assert schedule.find_compatible_schedulers(fd.fusion, inputs) == [SchedulerType.pointwise]
        params = schedule.schedule(fd.fusion, SchedulerType.pointwise, inputs)
    out = fd.manual_execute(inputs, params)

A scheduler takes the fusion only whole (execute() would segment one it does not take). Loom's
heuristic parameters are not settable from Python: compute_heuristics raises NotSupportedError,
and schedule() takes the inputs, not parameters.
"""

from .. import NotSupportedError, UserError, _C
from ._scheduler_type import SchedulerType


def _fusion_of(fusion):
    return getattr(fusion, "fusion", fusion)  # a FusionDefinition or its fusion


def _verdicts(fusion, inputs):
    return [(SchedulerType(name), ok, why)
            for name, ok, why in _C.scheduler_verdicts(_fusion_of(fusion), list(inputs))]


def find_compatible_schedulers(fusion, inputs):
    """The SchedulerTypes that take the whole fusion for these inputs, in Loom's priority order
    (the first is the one execute() would pick for an unsegmented fusion)."""
    return [t for t, ok, _ in _verdicts(fusion, inputs) if ok]


def can_schedule(fusion, scheduler_type, inputs):
    """(True, "") when the scheduler takes the whole fusion for these inputs, else (False, the
    scheduler's reason)."""
    scheduler_type = SchedulerType(scheduler_type)
    for t, ok, why in _verdicts(fusion, inputs):
        if t is scheduler_type:
            return ok, "" if ok else f"Scheduler {t.value} rejected the fusion: {why}"
    raise UserError(f"schedule.can_schedule: Loom has no {scheduler_type} scheduler")


class HeuristicParams:
    """What schedule.schedule() chose for a fusion (manual_execute takes it back). str() is
    Loom's description of the parameters, one line per field."""

    def __init__(self, fusion, scheduler_type, text):
        self._fusion = fusion
        self.scheduler_type = scheduler_type
        self._text = text

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"<HeuristicParams of the {self.scheduler_type.value} scheduler>"


def schedule(fusion, scheduler_type, inputs):
    """Schedules the fusion in place with that scheduler's heuristics for these inputs (a
    UserError with the scheduler's reason when it does not take the fusion); returns the
    parameters it chose."""
    if isinstance(inputs, HeuristicParams) or not isinstance(inputs, (list, tuple)):
        raise NotSupportedError(
            "schedule.schedule: a heuristic-parameters argument is not supported by Loom (its "
            "parameters are not settable from Python); pass the inputs")
    scheduler_type = SchedulerType(scheduler_type)
    f = _fusion_of(fusion)
    text = _C.apply_scheduler(f, scheduler_type.value, list(inputs))
    return HeuristicParams(f, scheduler_type, text)


def compute_heuristics(fusion, scheduler_type, inputs):
    raise NotSupportedError(
        "schedule.compute_heuristics is not supported by Loom (its heuristic parameters are not "
        "settable from Python); schedule.schedule(fusion, scheduler_type, inputs) computes and "
        "applies them")
