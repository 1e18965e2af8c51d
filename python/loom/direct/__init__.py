# SPDX-License-Identifier: Apache-2.0
"""The dialect of nvFuser's direct bindings on Loom.

A test written against ``nvfuser_direct`` runs here with its import line changed::

    import loom.direct as nvfuser
    from loom.direct import FusionDefinition, DataType

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.add(x, 1.0)))
    (y,) = fd.execute([torch.randn(4, 8)])
    print(fd)            # the definition above, as nvFuser prints it

docs/python.md is the tutorial and the table of supported names; a name nvFuser has and Loom
lacks raises loom.NotSupportedError naming it (_unsupported.py holds the list).
"""

import builtins
import operator
import time

from .. import (
    Error,
    InternalError,
    NotSupportedError,
    UnavailableError,
    UserAssertionError,
    UserError,
    UserNotImplementedError,
    ValidationError,
    _C,
    __version__,
    to_torch_list,
)
from .._dumps import dump_output
from . import _profiler, _validate, multidevice, nvfuser_direct_version, pytorch_utils, schedule
from .multidevice import CommunicatorBackend
from ._dtensor import dtensor_execute
from ._cache import FusionExecutorCache, LRUCache, LruFusionCache, returned_outputs
from ._profiler import FusionProfile, KernelProfile, PythonProfiler
from ._definition import python_definition
from ._repro import describe_input, repro_script
from ._sched import Sched
from ._scheduler_type import SchedulerType
from .schedule import HeuristicParams
from ._types import (
    DataType,
    LoadStoreOpType,
    MemoryType,
    ParallelType,
    to_loom_dtype,
    torch_to_dtype,
)
from ._unsupported import UNSUPPORTED, StandIn, argument_error, check_attribute
from .ops import Ops

TensorView = _C.TensorView
Scalar = _C.Scalar
IterDomain = _C.IterDomain
Val = _C.Val
Fusion = _C.Fusion
# IR expressions (Val.definition(), Val.uses()): one class per kind, nvFuser's names.
Expr = _C.Expr
for _kind in ("UnaryOp", "BinaryOp", "TernaryOp", "ReductionOp", "WelfordOp", "BroadcastOp",
              "SqueezeOp", "ExpandOp", "ReshapeOp", "LoadStoreOp", "SliceOp", "PadOp", "CatOp",
              "FullOp", "IotaOp", "RngOp", "ScanOp", "ArgsortOp", "TopKOp", "IndexSelectOp",
              "GatherOp", "ScatterOp", "MatmulOp", "LinearOp", "SdpaFwdOp", "SdpaBwdOp", "Split",
              "Merge", "Resize"):
    globals()[_kind] = getattr(_C, _kind)
del _kind
# IterDomain graphs (nvFuser's idm module and IdMappingMode).
idm = _C.idm
IdMappingMode = _C.IdMappingMode

# Hand scheduling beyond a tensor's own domain (Loom's names; nvFuser's direct bindings have
# their own spellings of these, which Loom does not copy).
propagate_transforms = _C.propagate_transforms
parallelize_all_like = _C.parallelize_all_like
inline_most = _C.inline_most

_NO_DEFAULT = object()


def version():
    """Loom's version, as nvFuser's version() gives its own: "major.minor.patch", a Version
    (nvfuser_direct_version) that compares by its numbers with strings and Versions."""
    return nvfuser_direct_version.Version(__version__)


def __getattr__(name):
    """Module-level nvFuser names Loom lacks import as stand-ins that raise when used."""
    if name in UNSUPPORTED["loom.direct"]:
        return StandIn(name)
    raise AttributeError(f"module 'loom.direct' has no attribute {name!r}")


class Vector(list):
    """fd.define_vector's value: a list of ints and integer Scalars (sizes for reshape, ...).
    An index out of range is a UserIndexError (an IndexError, and a RuntimeError as nvFuser's
    is) naming the vector's length."""

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Vector(list.__getitem__(self, i))
        n = len(self)
        k = _index_arg(i, "Vector[]", "index")
        if not -n <= k < n:
            raise _C.UserIndexError(
                f"Vector[]: index {k} is out of range for a vector of {n} entries "
                f"(expected {-n} <= index < {n}). Tried to access out of boundary index "
                f"{k + n if k < 0 else k}. total index: {n}"
            )
        return list.__getitem__(self, k)


def _index_arg(v, what, name):
    try:
        return operator.index(v)
    except TypeError:
        raise _C.UserTypeError(
            f"{what}: incompatible function arguments. {name} must be an int, got {v!r}"
        ) from None


def _stride_order_to_loom(stride_order, rank):
    """nvFuser's stride_order (per dim, larger = outer) as Loom's allocation order."""
    given = list(stride_order)
    if len(given) != rank:
        raise UserError(
            f"define_tensor: stride_order {given} has {len(given)} entries for a tensor of rank "
            f"{rank} (one per dimension)"
        )
    order = [o + rank if isinstance(o, int) and -rank <= o < 0 else o for o in given]
    bad = [o for o in given if not isinstance(o, int) or not -rank <= o < rank]
    if bad:
        raise UserError(
            f"define_tensor: stride_order {given} must be a permutation of 0..{rank - 1}: "
            f"{bad[0]} is not in [{-rank}, {rank}) (stride_order argument is out of range)"
        )
    if sorted(order) != list(range(rank)):
        raise UserError(
            f"define_tensor: stride_order {given} must be a permutation of 0..{rank - 1} "
            "(duplicated stride_order entries)"
        )
    return sorted(range(rank), key=lambda i: -order[i])


def _shape_entry(s, i):
    """One define_tensor shape entry: an int of int64 (a float, even 10.0, is refused, with the
    TypeError nvFuser's bindings raise for it; sizes below -1 are refused by Loom's builder)."""
    if isinstance(s, bool) or not hasattr(s, "__index__"):
        raise _C.UserTypeError(
            f"define_tensor(): incompatible function arguments. shape entry {i} is {s!r}; sizes "
            "are ints (-1 for a size known at run time, 1 for a broadcast)"
        )
    v = operator.index(s)
    if not -(2**63) <= v < 2**63:
        raise _C.UserTypeError(
            f"define_tensor(): incompatible function arguments. shape entry {i} is {v}, which "
            "does not fit in a 64-bit integer"
        )
    return v


def compute_tensor_descriptor(sizes, strides):
    """(contiguity, stride_order) of a tensor of `sizes` and `strides`, as nvFuser computes them
    for define_tensor: contiguity in allocation order (outermost first), each entry whether the
    dim is contiguous with the next inner one, None for size-1 and stride-0 dims; stride_order
    per dim, its place from the innermost (0). Stride-0 dims keep their places, so an expanded
    dim alone is no permutation."""
    sizes, strides = [int(s) for s in sizes], [int(s) for s in strides]
    if len(sizes) != len(strides):
        raise UserError(
            f"compute_tensor_descriptor: {len(sizes)} sizes but {len(strides)} strides"
        )
    if any(s < 0 for s in strides):
        raise UserError(f"compute_tensor_descriptor: negative strides {strides} are not supported")
    rank = len(sizes)
    # Outer to inner by stride (ties keep the logical order), stride-0 dims in place.
    moving = [i for i in range(rank) if strides[i] != 0]
    order = list(range(rank))
    for place, dim in zip(moving, sorted(moving, key=lambda i: (-strides[i], i))):
        order[place] = dim
    per_dim = [None] * rank
    inner_span = 1
    for i in reversed(order):
        if sizes[i] == 1 or strides[i] == 0:
            continue
        per_dim[i] = strides[i] == inner_span
        inner_span = strides[i] * sizes[i]
    contiguity = [per_dim[i] for i in order]
    stride_order = [0] * rank
    for place, i in enumerate(order):
        stride_order[i] = rank - 1 - place
    return contiguity, stride_order


# Fusion ids for printed definitions: one per structure (its text form), as nvFuser numbers the
# fusions of its cache.
_FUSION_IDS = {}


def _fusion_id(fusion):
    return _FUSION_IDS.setdefault(fusion.to_text(), len(_FUSION_IDS))


def translate_fusion(fusion):
    """The fusion as a Python function in nvFuser's direct-binding form (what print(fd) shows)."""
    fusion = getattr(fusion, "fusion", fusion)
    return python_definition(fusion, "nvfuser_fusion")[0]


def get_val_tolerances(fusion, inputs):
    """(atol, rtol) per output of `fusion` for `inputs`, as validate() uses them."""
    fusion = getattr(fusion, "fusion", fusion)
    return _validate.tolerances(fusion, inputs)


def validate_with_auto_inferred_outputs(fusion, fusion_outputs, inputs):
    """Compares `fusion_outputs` with the reference evaluator's outputs for `inputs`."""
    fusion = getattr(fusion, "fusion", fusion)
    refs = _validate.reference_outputs(fusion, inputs)
    _validate.compare(fusion, fusion_outputs, refs, inputs, _validate.REFERENCE)


def _seed_and_offset(seed_tensor, offset_tensor):
    """The dropout mask's (seed, offset) as Int64 bit patterns from the tensors holding them:
    nvFuser's [2] (seed, offset) tensor, or 0-D seed and offset tensors (sdpfa_fwd's)."""

    def as_int64(x):
        v = int(x)
        return v - 2**64 if v >= 2**63 else v

    def values(t):
        t = to_torch_list([t])[0] if not hasattr(t, "reshape") else t
        return [x for x in t.reshape(-1).tolist()]

    seed = values(seed_tensor)
    if len(seed) == 2:
        return as_int64(seed[0]), as_int64(seed[1])
    offset = values(offset_tensor)
    if len(seed) != 1 or len(offset) != 1:
        raise UserError(
            f"sdpfa_bwd: the seed tensor has {len(seed)} elements and the offset tensor "
            f"{len(offset)}: give a [2] (seed, offset) tensor, or 0-D seed and offset tensors")
    return as_int64(seed[0]), as_int64(offset[0])


class FusionDefinition:
    """A fusion being defined (``with FusionDefinition() as fd: ...``), then run by execute()
    (scheduled automatically) or manual_execute() (as scheduled by hand)."""

    def __init__(self, fusion=None):
        self._fusion = _C.Fusion() if fusion is None else fusion
        self.ops = Ops(self)
        self.sched = Sched(self)
        self._debug_output = None
        self._repro_inputs = None
        # Names of the Int Scalar inputs holding the Philox seed and offset of random ops given
        # none (nvFuser draws them from torch's generator): execute() supplies their values.
        self._drawn_inputs = []
        # (seed scalar, offset scalar, seed tensor, offset tensor) names: Int Scalar inputs that
        # execute() fills from tensor inputs holding a dropout mask's seed and offset (sdpfa_bwd
        # given them as fusion inputs).
        self._derived_inputs = []
        # A `with` block ran (nvFuser tells a fusion never defined from an empty one).
        self._entered = fusion is not None

    def _check_runnable(self, how):
        """nvFuser's errors for running a FusionDefinition that defines nothing, or one run
        both by execute() and by manual_execute() (each keeps its own compiled kernels)."""
        if "fec" not in self.__dict__ and "ke" not in self.__dict__ and self._fusion.is_empty():
            if not self._entered:
                raise UserNotImplementedError(
                    "Fusion does not exist! Use `with FusionDefinition() as fd: ...` to define a "
                    "fusion.")
            raise UserNotImplementedError("Fusion is empty!")
        if how == "execute" and "ke" in self.__dict__:
            raise UserAssertionError(
                "KernelExecutor already exists! Use manual_execute() to execute the fusion.")
        if how == "manual_execute" and "fec" in self.__dict__:
            raise UserAssertionError(
                "FusionExecutorCache already exists! Use execute() to execute the fusion.")

    @classmethod
    def from_text(cls, text):
        """A FusionDefinition of a fusion in Loom's text form (``fd.fusion.to_text()``)."""
        return cls(_C.parse_fusion(text))

    def define_from_text(self, text):
        """Defines this (empty) FusionDefinition's fusion from Loom's text form: what a printed
        definition does for a fusion nvFuser's form cannot express."""
        if "fec" in self.__dict__ or not self._fusion.is_empty():
            raise UserError("define_from_text: this FusionDefinition has a fusion already")
        self._fusion = _C.parse_fusion(text)

    def __enter__(self):
        self._entered = True
        return self

    def __exit__(self, exc_type, exc, tb):
        return False

    def __getattr__(self, name):
        # Only names normal lookup did not find: nvFuser's methods Loom lacks raise naming them.
        check_attribute("FusionDefinition", "FusionDefinition", name)

    @property
    def fusion(self):
        fec = self.__dict__.get("fec")
        return fec.fusion() if fec is not None else self._fusion

    def _fusion_for_ops(self):
        return self.fusion

    def id(self):
        """The fusion's id: one per structure in this process (nvFuser's fusion cache numbers its
        fusions so)."""
        return _fusion_id(self.fusion)

    # ---- inputs and outputs -------------------------------------------------------------------
    def define_tensor(
        self,
        shape=None,
        contiguity=None,
        dtype=DataType.Float,
        is_cpu=False,
        stride_order=None,
        *,
        sizes=None,
        strides=None,
        **kwargs,
    ):
        """An input tensor. shape: -1 for a size known at run time, 1 for a broadcast dim, any
        other value for a constant size. contiguity: a bool for every dim or one entry per dim,
        in allocation order when stride_order is given (None for broadcast dims; None for a dim
        of size -1 or above 1 makes it an expanded broadcast, a stride-0 dim). stride_order: per
        dim, its place from the innermost (0).
        Or, as nvFuser's other form, sizes= and strides= of a tensor like the ones it will take
        (contiguity and stride order computed from them; static_sizes=True keeps the sizes
        constant, else they are symbolic).
        is_cpu=True: a 0-dim tensor that may be given on the host (a CPU scalar) while the other
        inputs are CUDA tensors; execute copies it to their GPU, as torch takes such a tensor in
        a CUDA op. (Any 0-dim host tensor is taken so; the flag is what the printed definition
        says.)"""
        if sizes is not None or strides is not None:
            return self._define_tensor_like(sizes, strides, shape, contiguity, stride_order,
                                            dtype, is_cpu, kwargs)
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
        shape = [_shape_entry(s, i) for i, s in enumerate(shape)]
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
            self.fusion, shape, to_loom_dtype(dtype, "define_tensor"), contiguity, order,
            bool(is_cpu)
        )

    def _define_tensor_like(self, sizes, strides, shape, contiguity, stride_order, dtype, is_cpu,
                            kwargs):
        if sizes is None or strides is None:
            raise UserError("define_tensor: sizes= and strides= go together; pass both")
        if shape is not None or contiguity is not None or stride_order is not None:
            raise UserError(
                "define_tensor: sizes= and strides= describe the tensor; pass them without "
                "shape, contiguity or stride_order"
            )
        static_sizes = kwargs.pop("static_sizes", False)
        if kwargs:
            raise NotSupportedError(
                f"define_tensor: argument(s) {', '.join(sorted(kwargs))} not supported by Loom"
            )
        sizes, strides = [int(s) for s in sizes], [int(s) for s in strides]
        contiguity, order = compute_tensor_descriptor(sizes, strides)
        rank = len(sizes)
        shape = [1 if n == 1 else (n if static_sizes else -1) for n in sizes]
        identity = order == list(reversed(range(rank)))
        return self.define_tensor(shape=shape, contiguity=contiguity, dtype=dtype, is_cpu=is_cpu,
                                  stride_order=None if identity else order)

    def from_pytorch(self, tensor, static_sizes=False):
        """An input shaped like `tensor` (symbolic sizes, or its sizes with static_sizes), with its
        dtype, its contiguity and its dims' order in memory."""
        dtype = torch_to_dtype(tensor.dtype)
        if dtype is None:
            raise UserError(f"from_pytorch: expected a torch.Tensor, got {type(tensor).__name__}")
        if tensor.device.type not in ("cpu", "cuda"):
            raise NotSupportedError(f"from_pytorch: device {tensor.device} is not supported")
        sizes = list(tensor.shape)
        contiguity, stride_order = compute_tensor_descriptor(sizes, tensor.stride())
        rank = len(sizes)
        shape = [1 if s == 1 else (s if static_sizes else -1) for s in sizes]
        identity = stride_order == list(reversed(range(rank)))
        return self.define_tensor(
            shape=shape,
            contiguity=contiguity,
            dtype=dtype,
            stride_order=None if identity else stride_order,
        )

    def define_scalar(self, value=None, dtype=_NO_DEFAULT):
        """A scalar: an input when value is None (given to execute()), else a constant. The dtype
        defaults to Double, or follows the Python value's type. define_scalar(DataType.X) alone
        is nvFuser's spelling of an input of that dtype."""
        if isinstance(value, DataType) and dtype is _NO_DEFAULT:
            value, dtype = None, value
        if dtype is _NO_DEFAULT:
            if isinstance(value, bool):
                dtype = DataType.Bool
            elif isinstance(value, int):
                dtype = DataType.Int
            elif isinstance(value, complex):
                dtype = DataType.ComplexDouble
            else:
                dtype = DataType.Double
        if value is not None and not isinstance(value, (bool, int, float, complex)):
            raise NotSupportedError(
                f"define_scalar: a {type(value).__name__} value is not supported by Loom "
                "(tensor values are not)"
            )
        return _C.ops.define_scalar(self.fusion, to_loom_dtype(dtype, "define_scalar"), value,
                                    dtype is DataType.Index)

    def define_vector(self, values, dtype=DataType.Int):
        """A list of sizes. An int `values` makes that many Int scalar inputs (execute() then takes
        a list of ints for them); a list of ints and Scalars is used as it is."""
        if dtype not in (DataType.Int, DataType.Index):
            raise NotSupportedError("define_vector: Loom's vectors hold Int (index) values only")
        if isinstance(values, int):
            vec = Vector(self.define_scalar(None, DataType.Int) for _ in range(values))
        else:
            vec = Vector(values)
            for i, v in enumerate(vec):
                if isinstance(v, int) and not isinstance(v, bool) and v < -1:
                    raise UserError(
                        f"define_vector: size {v} at index {i} of {list(values)} is invalid (-1 "
                        f"is a size known at run time). The value {v} at index {i} was neither "
                        "symbolic(-1), zero_element(0), broadcast(1), or static(>1)"
                    )
        return vec

    def add_input(self, val):
        self.fusion.add_input(val)

    def add_output(self, output, alias_input=None, stride_order=None):
        """Marks `output` as an output of the fusion, as nvFuser does: execute() returns one
        tensor per add_output without alias_input, in call order (a tensor added twice is
        returned twice, an input added as an output is returned as itself, not copied). With
        alias_input (a tensor input of the fusion with output's dtype and shape), nvFuser's
        in-place update: the output is written into that input's memory and returned only where
        it is (or is later) added without alias_input, as the input's tensor, updated. A kernel
        stores it there directly when that is safe, else Loom copies it in after the kernels
        (docs/python.md, "In-place outputs"). stride_order (nvFuser's): the output is laid out
        in that order (as fd.ops.stride_order gives it)."""
        if stride_order is not None:
            if alias_input is not None:
                raise _C.UserError(
                    "add_output: stride_order and alias_input cannot be given together (the "
                    "in-place output takes the input's layout)")
            output = self.ops.stride_order(output, list(stride_order))
        fusion = self.fusion
        returns = self._returns
        if returns is None:
            aliased = {o.name for o, _ in fusion.aliases()}
            returns = [("output", o.name) for o in fusion.outputs() if o.name not in aliased]
        if alias_input is None:
            if isinstance(output, _C.TensorView) and output.is_fusion_input():
                returns.append(("input", output.name))
            else:
                if getattr(output, "name", None) not in {o.name for o in fusion.outputs()}:
                    fusion.add_output(output)
                returns.append(("output", output.name))
        else:
            if not isinstance(output, _C.TensorView) or not isinstance(alias_input,
                                                                       _C.TensorView):
                raise _C.UserTypeError(
                    "add_output: alias_input: the output and the aliased input must be tensors, "
                    f"got {output!r} and {alias_input!r}")
            fusion.alias_output_to_input(output, alias_input)
        # The fusion holds them, so a cache of the bare fusion (LRUCache.cache_compile(
        # fd.fusion)) returns what this definition's execute() does.
        fusion.returns = returns

    @property
    def _returns(self):
        """What execute() returns (FusionExecutorCache.returns): ("output" | "input", name) per
        add_output without alias_input, in call order, as nvFuser returns them; None until
        add_output is called (a fusion given whole returns its outputs but the in-place ones).
        Kept by the fusion (Fusion.returns)."""
        return self.fusion.returns

    def _returned(self, outputs, inputs):
        """The outputs manual_execute() returns, as execute()'s cache returns them."""
        return returned_outputs(self.fusion, self._returns, outputs, inputs)

    def _complete_inputs(self, inputs):
        """`inputs` with values for the seed and offset inputs of random ops defined without
        rng_seed / rng_offset, as nvFuser fills them: the seed of torch's default generator and
        a Philox offset counting the draws since it was seeded, so the i-th run after
        torch.manual_seed(s) equals a run with rng_seed=s, rng_offset=i, each run draws new
        numbers, and seeding again repeats them (_seedless_rng); and for the seed and offset
        inputs of an sdpfa_bwd given them as tensor inputs, the values those tensors hold.
        Inputs that already hold them (every fusion input given) pass unchanged."""
        if not self._drawn_inputs and not self._derived_inputs:
            return inputs
        inputs = list(inputs)
        fusion_inputs = self.fusion.inputs()
        drawn = self._drawn_inputs  # (seed, offset) name pairs, one per op, in definition order
        derived = {name for entry in self._derived_inputs for name in entry[:2]}
        if len(inputs) != len(fusion_inputs) - len(drawn) - len(derived):
            return inputs  # every input given, or a count execute() reports
        value_of = {}
        if drawn:
            seed, first = _seedless_rng.take(len(drawn) // 2)
            for k in range(0, len(drawn), 2):
                value_of[drawn[k]] = seed
                value_of[drawn[k + 1]] = first + k // 2
        given = iter(inputs)
        named = {}
        for v in fusion_inputs:
            if v.name not in value_of and v.name not in derived:
                named[v.name] = next(given)
        for seed_name, offset_name, seed_tensor, offset_tensor in self._derived_inputs:
            value_of[seed_name], value_of[offset_name] = _seed_and_offset(
                named[seed_tensor], named[offset_tensor])
        return [value_of[v.name] if v.name in value_of else named[v.name] for v in fusion_inputs]

    def _validated(self, run, inputs, reference_outputs):
        """run(inputs), then its outputs compared (see validate). With in-place outputs the
        reference reads copies of the inputs taken before the run, and the inputs the run
        updated are compared as the outputs they hold."""
        fusion = self.fusion
        inputs = self._complete_inputs(inputs)
        written = {[v.name for v in fusion.inputs()].index(i.name) for _, i in fusion.aliases()}
        before = [_copy_of(x) if k in written else x for k, x in enumerate(inputs)]
        outputs = run(inputs)
        if reference_outputs is not None:
            _validate.compare(fusion, outputs, list(reference_outputs), before,
                              "reference_outputs")
            return outputs
        # Every fusion output, for the comparison: a returned one where it was returned, an
        # in-place one in its input (which the run updated).
        in_at = {v.name: k for k, v in enumerate(fusion.inputs())}
        into = {o.name: in_at[i.name] for o, i in fusion.aliases()}
        returns = self._returns
        if returns is None:
            returns = [("output", o.name) for o in fusion.outputs() if o.name not in into]
        got = {name: x for (kind, name), x in zip(returns, outputs) if kind == "output"}
        every = [got[o.name] if o.name in got else inputs[into[o.name]]
                 for o in fusion.outputs()]
        refs = _validate.reference_outputs(fusion, before)
        _validate.compare(fusion, every, refs, before, _validate.REFERENCE)
        return outputs

    # ---- running ------------------------------------------------------------------------------
    def _executor_cache(self):
        fec = self.__dict__.get("fec")
        if fec is None:
            fec = self.fec = FusionExecutorCache(self._fusion)  # takes the fusion's returns
        return fec

    def execute(
        self,
        inputs,
        device=None,
        *,
        override_user_schedule=False,
        capture_debug_output=False,
        print_repro=False,
        profile=False,
        save_repro_inputs=False,
        _enable_options=(),
        _disable_options=(),
        auto_schedule=True,
    ):
        """Runs the fusion on `inputs` (torch tensors, numpy arrays or numbers, in input order)
        and returns the outputs as torch tensors. CUDA tensors run on their GPU and torch's
        current stream there; CPU tensors on the host backend. The first run of an input layout
        segments, schedules and compiles; later ones only launch.

        capture_debug_output: the call's dumps go to fd.debug_output() instead of sys.stdout.
        print_repro: prints fd.repro_script_for(inputs) first. save_repro_inputs: keeps the
        inputs' layouts for fd.last_repro_script(). _enable_options / _disable_options: Loom's
        dump, debug and pass names for this call (docs/python.md lists them)."""
        if override_user_schedule:
            raise argument_error("FusionDefinition.execute", "override_user_schedule",
                                 override_user_schedule)
        self._check_runnable("execute" if auto_schedule else "manual_execute")
        inputs = self._complete_inputs(inputs)
        if not auto_schedule:
            return self.manual_execute(inputs)
        if print_repro:
            print(self.repro_script_for(inputs))
        if save_repro_inputs:
            self._repro_inputs = [describe_input(x) for x in inputs]
        capture = dump_output(capture=True) if capture_debug_output else None
        try:
            fec = self._executor_cache()
            profiled = profile or _profiler.current() is not None
            if profiled:
                fec.fusion_id = self.id()  # prints the fusion: only for a profile
            outputs = fec.execute(
                inputs,
                device,
                _enable_options=_enable_options,
                _disable_options=_disable_options,
                _capture=capture,
                _profile=profile,
            )
            if profiled:
                self._profile = fec.profile()
            return outputs  # the cache leaves out the in-place outputs nvFuser hides
        except Error as e:
            _attach_repro(e, self, inputs)
            raise
        finally:
            self._debug_output = capture.text if capture is not None else None

    def profile(self):
        """The FusionProfile (loom.direct.FusionProfile) of the last profiled run: an
        execute(profile=True), or a run inside a PythonProfiler's block."""
        if self.__dict__.get("_profile") is None:
            raise UserError(
                "FusionDefinition.profile(): no run was profiled; call execute(inputs, "
                "profile=True) or run inside `with PythonProfiler():`")
        return self._profile

    def debug_output(self):
        """What the last execute(capture_debug_output=True) dumped; None when the last execute()
        did not capture."""
        return self._debug_output

    def manual_execute(self, inputs, heuristic_params=None):
        """Runs the fusion as scheduled by hand (one kernel, lowered as scheduled): compiled on
        the first call, launched on later ones."""
        if heuristic_params is not None and (
                not isinstance(heuristic_params, schedule.HeuristicParams)
                or heuristic_params._fusion is not self.fusion):
            raise UserError(
                "manual_execute: heuristic_params must be what schedule.schedule() returned for "
                "this fusion (Loom's kernel takes its launch from that schedule)"
            )
        self._check_runnable("manual_execute")
        inputs = self._complete_inputs(inputs)
        ke = self.__dict__.get("ke")
        try:
            if ke is None:
                ke = KernelExecutor()
                ke.compile(self, inputs)
                self.ke = ke
            profiler = _profiler.current()
            if profiler is None:
                return self._returned(ke.run(inputs), inputs)
            start = time.perf_counter()
            outs = ke.run(inputs, profile=True)
            self._profile = _profiler.make_profile(
                self.id(), ke._ke.last_profile(), inputs, time.perf_counter() - start)
            profiler.profiles.append(self._profile)
            return self._returned(outs, inputs)
        except Error as e:
            _attach_repro(e, self, inputs)
            raise

    def validate(self, inputs, reference_outputs=None, device=None, **kwargs):
        """execute(), then compares the outputs with `reference_outputs` or, without them, with
        Loom's reference evaluator (double precision); raises loom.ValidationError naming the
        worst element of the first output out of tolerance. Returns the outputs. In-place
        outputs (add_output(alias_input=)) are compared in the inputs they were written into,
        against a reference of the inputs as they were before the run."""
        return self._validated(lambda x: self.execute(x, device=device, **kwargs), inputs,
                               reference_outputs)

    def manual_validate(self, inputs, reference_outputs=None):
        """manual_execute(), then compares as validate() does."""
        return self._validated(self.manual_execute, inputs, reference_outputs)

    def _ran(self, what):
        fec = self.__dict__.get("fec")
        # A run served by the plan cache has no runtime until asked: plan_hits says it ran.
        if fec is None or (fec.num_runtimes == 0 and fec.plan_hits == 0):
            raise UserError(f"{what}: the fusion has not been executed yet")
        return fec

    def last_cuda_code(self, intrinsic_code=False, override_user_schedule=False):
        """The CUDA C++ of the kernels of the last execute() (intrinsic_code: with the runtime
        library Loom compiles it with); after manual_execute, its kernel's."""
        if override_user_schedule:
            raise NotSupportedError("last_cuda_code: override_user_schedule is not supported by Loom")
        ke = self.__dict__.get("ke")
        if ke is not None and "fec" not in self.__dict__:
            return ke.kernel_code(intrinsic_code)
        return self._ran("last_cuda_code").last_cuda_code(intrinsic_code)

    def last_schedulers(self):
        """The scheduler of each kernel of the last execute() (Loom extension)."""
        return self._ran("last_schedulers").last_schedulers()

    def host_program(self):
        """What the last execute() ran, step by step (kernels and communications)."""
        return self._ran("host_program").host_program()

    def fusion_ir(self):
        """The fusion in Loom's text form (.fus, docs/text-format.md)."""
        return self.fusion.to_text()

    # ---- printing and reproducers -------------------------------------------------------------
    def _function_name(self):
        return "nvfuser_fusion"  # the name nvFuser's direct bindings print

    def __repr__(self):
        # Random ops defined without rng_seed / rng_offset print without them, as defined.
        return python_definition(self.fusion, self._function_name(), self._drawn_inputs,
                                 self._returned_names(), self._derived_names())[0]

    __str__ = __repr__

    def repr(self):
        """The fusion as a Python function in nvFuser's form (what print(fd) shows)."""
        return builtins.repr(self)

    def repro_script_for(self, inputs=None):
        """A Python script that defines this fusion and runs it on inputs laid out like
        `inputs` (random values): torch tensors, numpy arrays, numbers."""
        # The script's definition takes the seed and offset of random ops given none as inputs,
        # with the values this run drew, so it repeats this run's numbers.
        inputs = None if inputs is None else self._complete_inputs(inputs)
        descriptions = None if inputs is None else [describe_input(x) for x in inputs]
        return repro_script(self._explicit_definition(), self._function_name(), descriptions)

    def _explicit_definition(self):
        """The definition with the drawn seeds and offsets as inputs (repro scripts)."""
        return python_definition(self.fusion, self._function_name(),
                                 returns=self._returned_names(),
                                 derived=self._derived_names())[0]

    def _derived_names(self):
        """(scalar, tensor) name pairs: the seed and offset inputs read from tensor inputs, each
        printed as the tensor it is read from."""
        pairs = []
        for seed, offset, seed_tensor, offset_tensor in self._derived_inputs:
            pairs += [(seed, seed_tensor), (offset, offset_tensor)]
        return pairs

    def _returned_names(self):
        """The names execute() returns in add_output order (None: the fusion's outputs)."""
        return None if self._returns is None else [name for _, name in self._returns]

    repro_script = repro_script_for

    def last_repro_script(self):
        """repro_script_for the inputs of the last execute(save_repro_inputs=True)."""
        if self._repro_inputs is None:
            raise UserError(
                "last_repro_script: no inputs were saved; run fd.execute(inputs, "
                "save_repro_inputs=True) first"
            )
        return repro_script(self._explicit_definition(), self._function_name(),
                            self._repro_inputs)


class _SeedlessRng:
    """The seed and offsets of random ops defined without rng_seed / rng_offset, as nvFuser
    takes them from its generator: the seed of torch's default generator and offsets counting
    the ops drawn since it was seeded, so the i-th op drawn after torch.manual_seed(s) runs as
    rng_seed=s, rng_offset=i. torch's CPU generator keeps no such offset, so this one does, and
    tells from the generator's state what happened since its last draw:
    - the state is the freshly seeded one (torch.manual_seed, even with the same seed): count
      from 0;
    - the state is the one its last draw left: continue the count;
    - torch drew numbers since (torch.randn for the inputs): continue from an offset drawn from
      torch's generator, so the run is new, and repeats when the same seed and draws precede it.
    Each draw takes one number from torch's generator, so the state after it is never the
    fresh one."""

    def __init__(self):
        self._seed = None
        self._fresh = None  # the generator's state right after manual_seed(self._seed)
        self._after = None  # its state after this object's last draw
        self._next = 0

    def take(self, count):
        """(seed as a 64-bit pattern, first offset) for `count` ops; the ops take first,
        first + 1, ..."""
        import torch

        gen = torch.default_generator
        seed = gen.initial_seed()
        state = gen.get_state()
        if seed != self._seed:
            self._seed = seed
            self._fresh = torch.Generator().manual_seed(seed).get_state()
        if torch.equal(state, self._fresh):
            self._next = 0
            torch.randint(0, 2, (1,), generator=gen)  # off the fresh state
        elif self._after is None or not torch.equal(state, self._after):
            self._next = int(torch.randint(0, 2**62, (1,), generator=gen).item())
        else:
            torch.randint(0, 2, (1,), generator=gen)
        self._after = gen.get_state()
        first = self._next
        self._next += count
        return (seed - 2**64 if seed >= 2**63 else seed), first


_seedless_rng = _SeedlessRng()


class CompileParams:
    """How KernelExecutor.compile builds a kernel (nvFuser's CompileParams, keyword-only).

    index_type: DataType.Int32 or DataType.Int (64-bit indices); None lets Loom pick per run (32
    bits where every tensor's offsets fit). With Int32, a run whose sizes need 64 bits is a
    UserError. maxrregcount: registers per thread (16 to 255; 255, the hardware's limit, adds no
    bound of its own). enable_magic_zero: nvFuser's guard against its compiler hoisting some
    index math; Loom's kernels need none, so either value compiles the same kernel. device: the
    device compile() uses when it is not given one. enable_ptxas_verbose and include_paths have no
    Loom form: LOOM_DUMP=ptxas prints the register report, and Loom's kernels include no headers
    of the user's.
    """

    def __init__(self, *, index_type=None, maxrregcount=255, enable_magic_zero=True,
                 enable_ptxas_verbose=False, device=None, include_paths=()):
        if index_type is not None:
            loom_type = to_loom_dtype(index_type)
            if loom_type not in (_C.DataType.Int32, _C.DataType.Int64):
                raise UserError(f"CompileParams: index_type must be DataType.Int32 or "
                                f"DataType.Int, got {index_type!r}")
        if not isinstance(maxrregcount, int) or not 16 <= maxrregcount <= 255:
            raise UserError(f"CompileParams: maxrregcount must be an int from 16 to 255, got "
                            f"{maxrregcount!r}")
        if enable_ptxas_verbose:
            raise NotSupportedError("CompileParams: enable_ptxas_verbose=True is not supported by "
                                    "Loom; LOOM_DUMP=ptxas prints each kernel's registers and "
                                    "spills")
        if list(include_paths):
            raise NotSupportedError("CompileParams: include_paths is not supported by Loom "
                                    "(its kernels include no headers of the user's)")
        self.index_type = index_type
        self.maxrregcount = maxrregcount
        self.enable_magic_zero = bool(enable_magic_zero)
        self.enable_ptxas_verbose = False
        self.device = device
        self.include_paths = []

    def __repr__(self):
        return (f"CompileParams(index_type={self.index_type!r}, maxrregcount={self.maxrregcount}, "
                f"enable_magic_zero={self.enable_magic_zero}, device={self.device!r})")


class KernelExecutor:
    """One hand-scheduled kernel: compile(fusion) lowers the fusion as scheduled, run() launches."""

    def __init__(self):
        self._ke = _C.KernelExecutor()
        self._compiled = False

    def is_compiled(self):
        """True once compile() succeeded."""
        return self._compiled

    def compile(self, fusion, inputs=None, device=None, compile_params=None):
        """Lowers `fusion` as scheduled for the device of `inputs` (or `device`); compile_params
        is a CompileParams."""
        if isinstance(fusion, FusionDefinition):
            fusion = fusion.fusion
        params = compile_params if compile_params is not None else CompileParams()
        if not isinstance(params, CompileParams):
            raise UserError(f"KernelExecutor.compile: compile_params must be a CompileParams, got "
                            f"{params!r}")
        if device is None:
            device = params.device
        if device is None and inputs:
            for t in inputs:
                dev = getattr(t, "device", None)
                if dev is not None and getattr(dev, "type", None) == "cuda":
                    device = f"cuda:{dev.index or 0}"
                    break
                if dev is not None:
                    device = "cpu"
        index_type = None if params.index_type is None else to_loom_dtype(params.index_type)
        max_registers = 0 if params.maxrregcount == 255 else params.maxrregcount
        with dump_output():
            self._ke.compile(fusion, device, index_type, max_registers)
        self._compiled = True

    def run(self, inputs, profile=False):
        """Launches the kernel; `profile` times it (last_profile())."""
        with dump_output():
            return to_torch_list(self._ke.run(inputs, profile))

    def last_profile(self, inputs=(), fusion_id=0):
        """The KernelProfile of the last run(profile=True), in a FusionProfile."""
        return _profiler.make_profile(fusion_id, self._ke.last_profile(), inputs, 0.0)

    def kernel_code(self, intrinsic_code=False):
        return self._ke.kernel_code(intrinsic_code)

    last_cuda_code = kernel_code


# nvFuser's TensorView and Val methods that are questions about the node.
def _tv_size(self, dim):
    """The extent of logical dim `dim` (a Scalar), as fd.ops.size."""
    return Ops(None).size(self, dim)


def _tv_shape(self):
    """The extents of the logical dims (Scalars), as fd.ops.shape."""
    return Ops(None).shape(self)


def _tv_has_root(self):
    """True when the tensor has a root domain (a reshape, permute, slice, pad or rFactor)."""
    return [str(i) for i in self.get_root_domain()] != [str(i) for i in self.get_logical_domain()]


def _val_is_symbolic(self):
    """True for a value known only at run time (not a constant)."""
    return not (isinstance(self, _C.Scalar) and self.is_const())


def _val_is_tensor(self):
    return isinstance(self, _C.TensorView)


class _ValDtype:
    """Val.dtype: Loom's property (compares equal to a loom._C.DataType) that nvFuser's code
    calls as a method, tv.dtype(), for the DataType."""

    __slots__ = ("loom",)

    def __init__(self, loom_dtype):
        self.loom = loom_dtype

    def __call__(self):
        for d in DataType:
            if d.loom == self.loom:
                return d
        raise NotSupportedError(f"the type {self.loom.name} has no DataType in loom.direct")

    def __eq__(self, other):
        if isinstance(other, _ValDtype):
            return self.loom == other.loom
        if isinstance(other, DataType):
            return other.loom == self.loom
        return self.loom == other

    def __hash__(self):
        return hash(self.loom)

    def __getattr__(self, name):  # .name, ... of the loom._C.DataType
        return getattr(self.loom, name)

    def __repr__(self):
        return repr(self.loom)

    __str__ = __repr__


# loom._C's own property, kept once (a reload of this module must not wrap the wrapper).
if "_loom_dtype" not in Val.__dict__:
    Val._loom_dtype = Val.__dict__["dtype"]
_C_VAL_DTYPE = Val._loom_dtype.fget


def _val_dtype(self):
    return _ValDtype(_C_VAL_DTYPE(self))


def _val_unsupported(name):
    def method(self, *args, **kwargs):
        check_attribute("Val", "Val", name)

    method.__name__ = name
    return method


TensorView.size = _tv_size
TensorView.shape = _tv_shape
TensorView.has_root = _tv_has_root
Val.dtype = property(_val_dtype)
Val.is_symbolic = _val_is_symbolic
Val.is_tensor = _val_is_tensor
for _name in UNSUPPORTED["Val"]:  # empty now: Val's methods are all bound
    setattr(Val, _name, _val_unsupported(_name))
globals().pop("_name", None)


def _copy_of(x):
    """A copy of a tensor argument (torch, numpy, loom._C.Tensor) that a run will not write."""
    for name in ("clone", "copy"):
        if hasattr(x, name):
            return getattr(x, name)()
    return x


def _attach_repro(error, fd, inputs):
    try:
        script = fd.repro_script_for(inputs)
    except Exception as e:  # the reproducer must never hide the error itself
        script = f"# (no reproducer: {type(e).__name__}: {e})"
    error.repro = script
    if hasattr(error, "add_note"):
        error.add_note("Loom reproducer (also in the exception's .repro):\n" + script)


__all__ = [
    "FusionDefinition",
    "KernelExecutor",
    "CompileParams",
    "FusionExecutorCache",
    "PythonProfiler",
    "FusionProfile",
    "KernelProfile",
    "LRUCache",
    "LruFusionCache",
    "version",
    "translate_fusion",
    "compute_tensor_descriptor",
    "get_val_tolerances",
    "validate_with_auto_inferred_outputs",
    "DataType",
    "SchedulerType",
    "HeuristicParams",
    "ParallelType",
    "LoadStoreOpType",
    "MemoryType",
    "TensorView",
    "Scalar",
    "IterDomain",
    "Val",
    "Fusion",
    "Expr",
    "Split",
    "Merge",
    "Resize",
    "BroadcastOp",
    "ReshapeOp",
    "SqueezeOp",
    "idm",
    "IdMappingMode",
    "Vector",
    "multidevice",
    "CommunicatorBackend",
    "dtensor_execute",
    "propagate_transforms",
    "parallelize_all_like",
    "inline_most",
    "Error",
    "UserError",
    "InternalError",
    "UnavailableError",
    "NotSupportedError",
    "ValidationError",
]
