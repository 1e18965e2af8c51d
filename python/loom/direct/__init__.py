# SPDX-License-Identifier: Apache-2.0
"""The dialect of nvFuser's direct bindings on Loom.

A test written against ``nvfuser_direct`` runs here with its import line changed::

    import loom.direct as nvfuser
    from loom.direct import FusionDefinition, DataType

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.add(x, 1.0)))
    (y,) = fd.execute([torch.randn(4, 8)])

docs/python.md is the tutorial and the table of supported names.
"""

from .. import (
    Error,
    InternalError,
    NotSupportedError,
    UnavailableError,
    UserError,
    _C,
    to_torch_list,
)
from . import multidevice
from ._repro import repro_script
from ._types import DataType, MemoryType, ParallelType, to_loom_dtype, torch_to_dtype
from .ops import Ops

TensorView = _C.TensorView
Scalar = _C.Scalar
IterDomain = _C.IterDomain
Val = _C.Val
Fusion = _C.Fusion

# Hand scheduling beyond a tensor's own domain (Loom's names; nvFuser's direct bindings have
# their own spellings of these, which Loom does not copy).
propagate_transforms = _C.propagate_transforms
parallelize_all_like = _C.parallelize_all_like
inline_most = _C.inline_most

_EXECUTE_OPTIONS = {
    "override_user_schedule": False,
    "capture_debug_output": False,
    "print_repro": False,
    "profile": False,
    "save_repro_inputs": False,
    "_enable_options": (),
    "_disable_options": (),
}

_NO_DEFAULT = object()


class Vector(list):
    """fd.define_vector's value: a list of ints and integer Scalars (sizes for reshape, ...)."""


def _stride_order_to_loom(stride_order, rank):
    """nvFuser's stride_order (per dim, larger = outer) as Loom's allocation order."""
    order = [o + rank if isinstance(o, int) and -rank <= o < 0 else o for o in stride_order]
    if sorted(order) != list(range(rank)):
        raise UserError(
            f"define_tensor: stride_order {order} must be a permutation of 0..{rank - 1}"
        )
    return sorted(range(rank), key=lambda i: -order[i])


class FusionDefinition:
    """A fusion being defined (``with FusionDefinition() as fd: ...``), then run by execute()."""

    def __init__(self, fusion=None):
        self._fusion = _C.Fusion() if fusion is None else fusion
        self._executor = None
        self.ops = Ops(self)

    @classmethod
    def from_text(cls, text):
        """A FusionDefinition of a fusion in Loom's text form (``fd.fusion.to_text()``)."""
        return cls(_C.parse_fusion(text))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return False

    @property
    def fusion(self):
        return self._fusion

    def _fusion_for_ops(self):
        return self._fusion

    # ---- inputs and outputs -------------------------------------------------------------------
    def define_tensor(
        self,
        shape=None,
        contiguity=None,
        dtype=DataType.Float,
        is_cpu=False,
        stride_order=None,
        **kwargs,
    ):
        """An input tensor. shape: -1 for a size known at run time, 1 for a broadcast dim, any
        other value for a constant size. contiguity: a bool for every dim or one entry per dim,
        in allocation order when stride_order is given (None for broadcast dims; None for a dim
        of size -1 or above 1 makes it an expanded broadcast, a stride-0 dim). stride_order: per
        dim, its place from the innermost (0)."""
        for name in ("symbolic_sizes", "static_sizes"):
            if name in kwargs:
                if shape is not None:
                    raise UserError(f"define_tensor: pass shape or {name}, not both")
                shape = kwargs.pop(name)
        if kwargs:
            raise NotSupportedError(
                f"define_tensor: argument(s) {', '.join(sorted(kwargs))} not supported by Loom"
            )
        if shape is None:
            raise UserError("define_tensor: shape is required")
        if is_cpu:
            raise NotSupportedError(
                "define_tensor: is_cpu=True (a CPU scalar tensor in a GPU fusion) is not "
                "supported by Loom; pass the value as define_scalar instead"
            )
        shape = [int(s) for s in shape]
        rank = len(shape)
        if contiguity is None or isinstance(contiguity, bool):
            flag = True if contiguity is None else contiguity
            contiguity = [None if s == 1 else flag for s in shape]
        else:
            contiguity = list(contiguity)
        order = [] if not stride_order else _stride_order_to_loom(stride_order, rank)
        if order and len(contiguity) == rank:
            # nvFuser gives contiguity in allocation order (outermost first) when a stride order
            # is given; Loom's builder takes it per logical dim.
            logical = [None] * rank
            for place, dim in enumerate(order):
                logical[dim] = contiguity[place]
            contiguity = logical
        return _C.ops.define_tensor(
            self._fusion, shape, to_loom_dtype(dtype, "define_tensor"), contiguity, order
        )

    def from_pytorch(self, tensor, static_sizes=False):
        """An input shaped like `tensor` (symbolic sizes, or its sizes with static_sizes), with its
        dtype, its contiguity and its dims' order in memory."""
        dtype = torch_to_dtype(tensor.dtype)
        if dtype is None:
            raise UserError(f"from_pytorch: expected a torch.Tensor, got {type(tensor).__name__}")
        if tensor.device.type not in ("cpu", "cuda"):
            raise NotSupportedError(f"from_pytorch: device {tensor.device} is not supported")
        sizes = list(tensor.shape)
        strides = list(tensor.stride())
        rank = len(sizes)
        # Outer to inner by stride (ties keep the logical order); stride-0 dims keep their
        # places, as nvFuser's descriptor does, so an expanded dim alone is no permutation.
        moving = [i for i in range(rank) if strides[i] != 0]
        order = list(range(rank))
        for place, dim in zip(moving, sorted(moving, key=lambda i: (-strides[i], i))):
            order[place] = dim
        contiguity = [None] * rank  # per logical dim; None for size-1 and stride-0 dims
        inner_span = 1
        for i in reversed(order):
            if sizes[i] == 1 or strides[i] == 0:
                continue
            contiguity[i] = strides[i] == inner_span
            inner_span = strides[i] * sizes[i]
        shape = [1 if s == 1 else (s if static_sizes else -1) for s in sizes]
        stride_order = [0] * rank
        for place, i in enumerate(order):
            stride_order[i] = rank - 1 - place
        permuted = order != list(range(rank))
        return self.define_tensor(
            shape=shape,
            # define_tensor takes it in allocation order when a stride order is given.
            contiguity=[contiguity[i] for i in order] if permuted else contiguity,
            dtype=dtype,
            stride_order=stride_order if permuted else None,
        )

    def define_scalar(self, value=None, dtype=_NO_DEFAULT):
        """A scalar: an input when value is None (given to execute()), else a constant. The dtype
        defaults to Double, or follows the Python value's type."""
        if dtype is _NO_DEFAULT:
            if isinstance(value, bool):
                dtype = DataType.Bool
            elif isinstance(value, int):
                dtype = DataType.Int
            else:
                dtype = DataType.Double
        if value is not None and not isinstance(value, (bool, int, float)):
            raise NotSupportedError(
                f"define_scalar: a {type(value).__name__} value is not supported by Loom "
                "(complex and tensor values are not)"
            )
        return _C.ops.define_scalar(self._fusion, to_loom_dtype(dtype, "define_scalar"), value)

    def define_vector(self, values, dtype=DataType.Int):
        """A list of sizes. An int `values` makes that many Int scalar inputs (execute() then takes
        a list of ints for them); a list of ints and Scalars is used as it is."""
        if dtype is not DataType.Int:
            raise NotSupportedError("define_vector: Loom's vectors hold Int (index) values only")
        if isinstance(values, int):
            vec = Vector(self.define_scalar(None, DataType.Int) for _ in range(values))
        else:
            vec = Vector(values)
        return vec

    def add_input(self, val):
        self._fusion.add_input(val)

    def add_output(self, output, alias_input=None):
        if alias_input is not None:
            raise NotSupportedError("add_output: alias_input (in-place outputs) is not supported by Loom")
        self._fusion.add_output(output)

    # ---- running ------------------------------------------------------------------------------
    def execute(self, inputs, device=None, **options):
        """Runs the fusion on `inputs` (torch tensors, numpy arrays or numbers, in input order)
        and returns the outputs as torch tensors. CUDA tensors run on their GPU and torch's
        current stream there; CPU tensors on the host backend. The first run of an input layout
        segments, schedules and compiles; later ones only launch."""
        if options:
            self._check_execute_options(options)
        ex = self._executor
        if ex is None:
            ex = self._executor = _C.FusionExecutor(self._fusion)
        try:
            return to_torch_list(ex.run(inputs, device))
        except Error as e:
            _attach_repro(e, self, inputs)
            raise

    def _check_execute_options(self, options):
        for name, value in options.items():
            if name not in _EXECUTE_OPTIONS:
                raise TypeError(f"execute() got an unexpected keyword argument {name!r}")
            if value != _EXECUTE_OPTIONS[name] and not (
                name.startswith("_") and not value
            ):
                raise NotSupportedError(f"execute: {name}={value!r} is not supported by Loom")

    def last_cuda_code(self, intrinsic_code=False, override_user_schedule=False):
        """The CUDA C++ of the kernels of the last execute() (intrinsic_code: with the runtime
        library Loom compiles it with)."""
        if override_user_schedule:
            raise NotSupportedError("last_cuda_code: override_user_schedule is not supported by Loom")
        if self._executor is None:
            raise UserError("last_cuda_code: the fusion has not been executed yet")
        return self._executor.last_cuda_code(intrinsic_code)

    def last_schedulers(self):
        """The scheduler of each kernel of the last execute() (Loom extension)."""
        if self._executor is None:
            raise UserError("last_schedulers: the fusion has not been executed yet")
        return self._executor.last_schedulers()

    def host_program(self):
        """What the last execute() ran, step by step (kernels and communications)."""
        if self._executor is None:
            raise UserError("host_program: the fusion has not been executed yet")
        return self._executor.host_program()

    def repro_script(self, inputs=None):
        """A Python script that rebuilds this fusion and runs it on inputs like `inputs`."""
        return repro_script(self, inputs)

    def __repr__(self):
        return self._fusion.to_text()

    __str__ = __repr__


class KernelExecutor:
    """One hand-scheduled kernel: compile(fusion) lowers the fusion as scheduled, run() launches."""

    def __init__(self):
        self._ke = _C.KernelExecutor()

    def compile(self, fusion, inputs=None, device=None):
        if isinstance(fusion, FusionDefinition):
            fusion = fusion.fusion
        if device is None and inputs:
            for t in inputs:
                dev = getattr(t, "device", None)
                if dev is not None and getattr(dev, "type", None) == "cuda":
                    device = f"cuda:{dev.index or 0}"
                    break
                if dev is not None:
                    device = "cpu"
        self._ke.compile(fusion, device)

    def run(self, inputs):
        return to_torch_list(self._ke.run(inputs))

    def kernel_code(self, intrinsic_code=False):
        return self._ke.kernel_code(intrinsic_code)

    last_cuda_code = kernel_code


def _attach_repro(error, fd, inputs):
    try:
        script = repro_script(fd, inputs)
    except Exception as e:  # the reproducer must never hide the error itself
        script = f"# (no reproducer: {type(e).__name__}: {e})"
    error.repro = script
    if hasattr(error, "add_note"):
        error.add_note("Loom reproducer (also in the exception's .repro):\n" + script)


__all__ = [
    "FusionDefinition",
    "KernelExecutor",
    "DataType",
    "ParallelType",
    "MemoryType",
    "TensorView",
    "Scalar",
    "IterDomain",
    "Val",
    "Fusion",
    "Vector",
    "multidevice",
    "propagate_transforms",
    "parallelize_all_like",
    "inline_most",
    "Error",
    "UserError",
    "InternalError",
    "UnavailableError",
    "NotSupportedError",
]
