# SPDX-License-Identifier: Apache-2.0
"""nvFuser's ``schedule`` module: one of Loom's automatic schedulers applied by hand to a whole
fusion, which ``fd.manual_execute`` then runs as one kernel::

    from loom.direct import SchedulerType, schedule

    with FusionDefinition() as fd:
        ...
        assert schedule.find_compatible_schedulers(fd.fusion, inputs) == [SchedulerType.pointwise]
        params = schedule.schedule(fd.fusion, SchedulerType.pointwise, inputs)
    out = fd.manual_execute(inputs, params)

A scheduler takes the fusion only whole (execute() would segment one it does not take). The
parameters can be computed first, changed by field name, then applied::

        params = schedule.compute_heuristics(fd.fusion, SchedulerType.pointwise, inputs)
        params.unroll = 2                     # Loom's field names: str(params) lists them
        schedule.schedule(fd.fusion, SchedulerType.pointwise, params)
    out = fd.manual_execute(inputs, params)

Loom's fields are its own schedulers' (``fields()``); nvFuser's ``vectorization_factor`` is
Loom's ``vectorize``, and a name of nvFuser's that Loom's scheduler has no counterpart for
raises NotSupportedError naming it.
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


# nvFuser's names for fields that mean the same in Loom's schedulers.
_NVFUSER_NAMES = {"vectorization_factor": "vectorize"}


class HeuristicParams:
    """One scheduler's parameters for one fusion, from compute_heuristics() or schedule().
    Fields read and set as attributes (``params.vectorize = 4``); str() is Loom's description,
    one line, the fields as name=value. Changing a field changes what a later
    schedule(fusion, scheduler_type, params) applies, not a schedule already applied."""

    def __init__(self, fusion, scheduler_type, params):
        object.__setattr__(self, "_fusion", fusion)
        object.__setattr__(self, "scheduler_type", scheduler_type)
        object.__setattr__(self, "_params", params)

    def fields(self):
        """{name: value} of every field the schedule is made from."""
        return dict(self._params.fields())

    def _field(self, name):
        fields = self.fields()
        field = _NVFUSER_NAMES.get(name, name)
        if field in fields:
            return field
        raise NotSupportedError(
            f"HeuristicParams.{name} is not supported by Loom: the "
            f"{self.scheduler_type.value} scheduler's parameters are {', '.join(fields)}")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.fields()[self._field(name)]

    def __setattr__(self, name, value):
        if name.startswith("_") or name == "scheduler_type":
            raise AttributeError(f"HeuristicParams.{name} cannot be set")
        field = self._field(name)
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            raise UserError(f"HeuristicParams.{name} takes an int, got {value!r}")
        self._params.set(field, value)

    def __str__(self):
        return self._params.text()

    def __repr__(self):
        return f"<HeuristicParams of the {self.scheduler_type.value} scheduler>"


def compute_heuristics(fusion, scheduler_type, inputs):
    """The scheduler's parameters for the whole fusion and these inputs, not applied (a
    UserError with the scheduler's reason when it does not take the fusion)."""
    scheduler_type = SchedulerType(scheduler_type)
    f = _fusion_of(fusion)
    return HeuristicParams(f, scheduler_type,
                           _C.compute_heuristics(f, scheduler_type.value, list(inputs)))


def schedule(fusion, scheduler_type, inputs_or_params):
    """Schedules the fusion in place with that scheduler: with the inputs, its heuristics for
    them (a UserError with the scheduler's reason when it does not take the fusion); with a
    HeuristicParams (compute_heuristics', maybe changed), those. Returns the parameters."""
    scheduler_type = SchedulerType(scheduler_type)
    f = _fusion_of(fusion)
    if isinstance(inputs_or_params, HeuristicParams):
        params = inputs_or_params
        if params.scheduler_type is not scheduler_type:
            raise UserError(
                f"schedule.schedule: the parameters are the {params.scheduler_type.value} "
                f"scheduler's, not the {scheduler_type.value} scheduler's")
        _C.apply_scheduler_params(f, params._params)
        object.__setattr__(params, "_fusion", f)
        return params
    if not isinstance(inputs_or_params, (list, tuple)):
        raise UserError(
            "schedule.schedule takes the inputs (a list) or a HeuristicParams, got "
            f"{type(inputs_or_params).__name__}")
    return HeuristicParams(f, scheduler_type,
                           _C.apply_scheduler(f, scheduler_type.value, list(inputs_or_params)))
