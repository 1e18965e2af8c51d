# SPDX-License-Identifier: Apache-2.0
"""The one list of nvFuser names Loom does not implement, with the reason for each.

Every name here raises ``loom.NotSupportedError`` naming it where nvFuser has it: a module-level
name imports as a stand-in (``from loom.direct import CompileParams`` works; using it raises), an
attribute (``fd.profile``, ``fd.ops.matmul``, ``DataType.Float4_e2m1fn``) raises when it is looked up (the
error is also an AttributeError, so ``hasattr`` says False), an execute() keyword raises when it
asks for something. docs/python.md's table of what Loom lacks is generated from this list::

    PYTHONPATH=build/python python3 -m loom.direct._unsupported   # prints the table

and tests/python/test_unsupported.py keeps the two equal.
"""

from .. import NotSupportedError

# scope -> {name: reason}. Scopes are where the name is looked up.
UNSUPPORTED = {
    "loom.direct": {
        "FusionGuard": "Loom's ops take their fusion from the FusionDefinition, not from a "
                       "current-fusion guard",
        "define_tensor": "module-level definitions need a current-fusion guard; use "
                         "fd.define_tensor",
        "define_scalar": "module-level definitions need a current-fusion guard; use "
                         "fd.define_scalar",
        "Statement": "Loom binds Val (TensorView, Scalar, IterDomain) and Expr (one class per "
                     "kind), with no common base class",
        "TensorDomain": "TensorView.domain() gives the domains as text",
        "PointwiseParams": "Loom's parameters are not built directly: "
                           "schedule.compute_heuristics returns them (HeuristicParams), "
                           "settable by field name",
        "ReductionParams": "Loom's parameters are not built directly: "
                           "schedule.compute_heuristics returns them (HeuristicParams), "
                           "settable by field name",
        "MatmulParams": "Loom's matmul is a cuBLASLt call (host GEMM on the host backend), with no matmul scheduler to tune",
        "LaunchParams": "Loom's launch parameters are not settable from Python",
        "MatmulTilingStrategy": "Loom's matmul is a cuBLASLt call (host GEMM on the host backend), with no matmul scheduler to tune",
        "MatmulBufferingLoopLevel": "Loom's matmul is a cuBLASLt call (host GEMM on the host backend), with no matmul scheduler to tune",
        "MatmulCircularBufferingStrategy": "Loom's matmul is a cuBLASLt call (host GEMM on the host backend), with no matmul scheduler to tune",
        "CacheOp": "no cache hints on loads in Loom's Python frontend",
        "Sharding": "no DTensor placements in Loom; FusionExecutorCache.get_output_shardings() "
                    "gives each output's multidevice.Sharding (axis_sharded_on)",
        "execute_with_dtensors": "no DTensor support: execute this rank's shards "
                                 "(multidevice.shard_tensor)",
        "cutlass": "no CUTLASS kernels in Loom",
    },
    "FusionDefinition": {
        "segment": "Loom segments inside execute()",
        "schedule": "hand schedules are written on the fusion and run with manual_execute",
        "last_scheduled_fusion_ir": "LOOM_DUMP=fusion_ir_scheduled prints the scheduled "
                                    "fusions when they are compiled",
        "scheduled_fusion_ir_for": "LOOM_DUMP=fusion_ir_scheduled prints the scheduled fusions "
                                   "when they are compiled",
        "cuda_code_for": "run execute(), then last_cuda_code()",
        "user_schedule_ir": "hand schedules are written on the fusion itself",
    },
    "fd.sched": {
        "inline_at": "Loom inlines the whole fusion at once (fd.sched.inline_most)",
        "bounded_transform_backward": "Loom's propagation is fd.sched.transform_like",
        "bounded_transform_forward": "Loom's propagation is fd.sched.transform_like",
    },
    "FusionDefinition.execute": {
        "override_user_schedule": "execute() always schedules automatically; manual_execute "
                                  "runs a hand schedule",
    },
    "FusionExecutorCache": {
        "is_compiled": "not tracked per input layout in Python",
        "get_cuda_kernel": "run execute(), then last_cuda_code()",
        "get_scheduled_ir": "LOOM_DUMP=fusion_ir_scheduled prints the scheduled fusions",
        "get_most_recent_scheduled_ir": "LOOM_DUMP=fusion_ir_scheduled prints the scheduled "
                                        "fusions",
    },
    "Val": {
        "swizzle1d": "no loop swizzles: nvFuser's swizzle1d with stream parallelism runs a "
                     "collective per stream; rfactor of the matmul and its ReduceScatter run "
                     "without it",
    },
    # fd.ops: the list stays next to the ops (ops.py, UNSUPPORTED_OPS), which fills it in.
    "fd.ops": {},
    "DataType": {
        "Float8_e8m0fnu": "no e8m0 (MX block-scale) type; Float8_e4m3fn and Float8_e5m2 are "
                          "supported",
        "Float4_e2m1fn": "no 4-bit floats",
        "Float4_e2m1fn_x2": "no 4-bit floats",
    },
    "ParallelType": {
        "stream": "no stream parallelism",
        "mma": "no MMA instructions",
        "group": "no grouped reductions",
        "misaligned_vectorize": "vectorization needs aligned accesses",
    },
    "LoadStoreOpType": {
        "load_matrix": "no ldmatrix copies in hand schedules",
        "cp_async": "no cp.async copies in hand schedules",
    },
    "SchedulerType": {
        name: "Loom's schedulers are pointwise, reduction, inner_persistent, scan, sort, "
              "transpose, inner_outer_persistent, outer_persistent and scatter"
        for name in ("no_op", "matmul", "expr_eval", "resize")
    },
    "MemoryType": {
        "tensor": "no tensor memory",
        "symmetric": "no symmetric memory",
    },
}


class NotSupportedAttributeError(NotSupportedError, AttributeError):
    """A NotSupportedError raised by an attribute lookup: hasattr() of the name is False."""


# Scopes that are a method's keyword arguments (the name is the argument's): the call as the
# error names it, and as the table shows it.
_ARGUMENT_SCOPES = {
    "FusionDefinition.execute": ("execute", "fd.execute"),
    "FusionDefinition.add_output": ("add_output", "fd.add_output"),
    "FusionDefinition.define_tensor": ("define_tensor", "fd.define_tensor"),
}


def message(scope, name):
    """The error text for `name` in `scope`."""
    where = {"fd.ops": "fd.ops", "FusionDefinition": "fd", "loom.direct": "loom.direct"}.get(
        scope, scope
    )
    return (
        f"{where}.{name} is not supported by Loom ({UNSUPPORTED[scope][name]}); docs/python.md "
        "lists what Loom lacks"
    )


def argument_error(scope, name, value):
    """The NotSupportedError for a keyword argument `name`=`value` of the method `scope` names."""
    return NotSupportedError(
        f"{_ARGUMENT_SCOPES[scope][0]}: {name}={value!r} is not supported by Loom "
        f"({UNSUPPORTED[scope][name]}); docs/python.md lists what Loom lacks"
    )


def error(scope, name):
    """The NotSupportedError for `name` in `scope` (an AttributeError too)."""
    return NotSupportedAttributeError(message(scope, name))


def check_attribute(scope, owner, name):
    """In a __getattr__: raise NotSupportedError for a listed name, else AttributeError."""
    if name in UNSUPPORTED[scope]:
        raise error(scope, name)
    raise AttributeError(f"{owner} has no attribute {name!r}")


class StandIn:
    """Stands in for a module-level nvFuser name Loom lacks: importing it works, so a test file
    that imports it still runs its other tests; calling it or any attribute raises."""

    def __init__(self, name):
        self._name = name

    def _fail(self, *args, **kwargs):
        raise error("loom.direct", self._name)

    __call__ = _fail
    __iter__ = _fail
    __getitem__ = _fail
    # isinstance(x, Split) and class X(CompileParams) raise too: answering False would be wrong
    # for names such as Statement, of which Loom's values are instances in nvFuser's terms.
    __instancecheck__ = _fail
    __subclasscheck__ = _fail
    __mro_entries__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        self._fail()

    def __repr__(self):
        return f"<loom.direct.{self._name}: not supported by Loom>"


def markdown():
    """docs/python.md's table of what Loom lacks (between its markers)."""
    rows = ["| nvFuser name | why Loom lacks it |", "|---|---|"]
    for scope, names in UNSUPPORTED.items():
        by_reason = {}
        for name, reason in names.items():
            by_reason.setdefault(reason, []).append(name)
        for reason, group in by_reason.items():
            prefix = {"loom.direct": "", "FusionDefinition": "fd.", "fd.ops": "fd.ops.",
                      "Val": "Val."}.get(scope, scope + ".")
            suffix = ""
            if scope in _ARGUMENT_SCOPES:
                prefix, suffix = f"{_ARGUMENT_SCOPES[scope][1]}(", "=...)"
            if len(group) > 4 and prefix:  # a long list: the prefix once
                names_md = f"`{prefix}`: " + ", ".join(f"`{n}`" for n in group)
            else:
                names_md = ", ".join(f"`{prefix}{n}{suffix}`" for n in group)
            rows.append(f"| {names_md} | {reason} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    # The package's copy of this module: ops.py registered fd.ops's list there, not here.
    from loom.direct import _unsupported

    print(_unsupported.markdown(), end="")
