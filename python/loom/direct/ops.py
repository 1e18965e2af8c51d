# SPDX-License-Identifier: Apache-2.0
"""``fd.ops``: Loom's ops under nvFuser's direct-binding names and arguments.

Each method checks its arguments, maps nvFuser's forms onto Loom's (dims lists, DataType, ...)
and calls ``loom._C.ops``. An nvFuser op or argument Loom does not implement raises
``loom.NotSupportedError`` naming it (the table in docs/python.md lists them).
"""

import operator

from .. import NotSupportedError, _C
from ._types import DataType, to_loom_dtype
from ._unsupported import UNSUPPORTED, error

# nvFuser ops Loom does not have (the reason shows in the error); docs/ops.md lists what Loom has.
UNSUPPORTED_OPS = {
    name: "no such op in Loom"
    for name in (
        "var_mean_welford"
    ).split()
}
# Names on nvFuser-compatibility lists that nvFuser's public Python bindings (python_direct) do
# not have: nothing says what they would mean, so Loom names what does exist instead.
UNSUPPORTED_OPS.update(
    {
        "size_of": "nvFuser's Python ops have no size_of; fd.ops.size(arg, dim) gives a dim's "
                   "extent and fd.ops.shape(arg) all of them",
        "uniform_like": "nvFuser's Python ops have no uniform_like; fd.ops.rand_like(arg) draws "
                        "U[0, 1) of arg's shape and fd.ops.uniform(minval, maxval, shape) any range",
        "rng_uniform": "nvFuser's Python ops have no rng_uniform; fd.ops.uniform(minval, maxval, "
                       "shape, rng_seed=, rng_offset=) draws uniform numbers",
    }
)
UNSUPPORTED["fd.ops"] = UNSUPPORTED_OPS  # the one list of what Loom lacks (_unsupported.py)


def _index(v, what, name):
    """An integer argument (a dim, a diagonal, ...): a Python or numpy int. A float is refused,
    never truncated (int(0.5) would quietly name dim 0), with a TypeError as nvFuser's bindings
    raise for it."""
    try:
        return operator.index(v)
    except TypeError:
        raise _C.UserTypeError(
            f"{what}(): incompatible function arguments. {name} must be an int, got {v!r}"
        ) from None


def _dims(dims, what):
    if dims is None:
        return []
    try:
        if not hasattr(dims, "__iter__"):
            return [operator.index(dims)]
        return [operator.index(d) for d in dims]
    except TypeError:
        raise _C.UserTypeError(
            f"{what}(): incompatible function arguments. dims must be an int or a list of ints, "
            f"got {dims!r}"
        ) from None


def _key_bits(op, name, v):
    """An int seed or offset as the Int64 of its 64-bit pattern (others pass unchanged)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if not -(2**63) <= v < 2**64:
            raise _C.UserError(
                f"{op}: {name}={v} does not fit in 64 bits (-2**63 <= {name} < 2**64)"
            )
        v = v - 2**64 if v >= 2**63 else v
    return v


def _const_int(v):
    """v as an int when it is a Python or numpy int (a Scalar is known only at run time)."""
    if isinstance(v, bool) or not hasattr(v, "__index__") or isinstance(v, _C.Val):
        return None
    return operator.index(v)


def _is_tensor(x):
    return isinstance(x, _C.TensorView)


def _reduction_kwargs(op, dims, keepdim, dim, keep_dim):
    """(dims, keepdim) of a reduction given nvFuser's dim= (one dim) or keep_dim= spellings."""
    if dim is not None:
        if dims is not None:
            raise TypeError(f"fd.ops.{op}: give dims or dim, not both")
        dims = [dim] if isinstance(dim, int) else dim
    if keep_dim is not None:
        keepdim = keep_dim
    return dims, keepdim


class Ops:
    """The op namespace of one FusionDefinition."""

    def __init__(self, fd):
        self._fd = fd

    @property
    def _f(self):
        return self._fd._fusion_for_ops()

    def __getattr__(self, name):
        if name in UNSUPPORTED_OPS:
            raise error("fd.ops", name)
        raise AttributeError(f"fd.ops has no op {name!r}")

    def __dir__(self):
        return sorted(n for n in type(self).__dict__ if not n.startswith("_"))

    # ---- pointwise -------------------------------------------------------------------------
    def _binary(self, name, a, b):
        if not (_is_tensor(a) or _is_tensor(b)):
            # Scalars (and numbers) alone: a Scalar computed from them (ops::scalarBinary).
            return _C.ops.scalar_binary(self._f, name, a, b)
        return getattr(_C.ops, name)(self._f, a, b)

    def _ternary(self, name, a, b, c):
        if not (_is_tensor(a) or _is_tensor(b) or _is_tensor(c)):
            raise NotSupportedError(
                f"fd.ops.{name} of scalars only: Loom's ops need a TensorView operand"
            )
        return getattr(_C.ops, name)(self._f, a, b, c)

    def where(self, pred, value1, value2):
        return self._ternary("where", pred, value1, value2)

    def clamp(self, arg, min, max):  # noqa: A002 - nvFuser's argument names
        return self._ternary("clamp", arg, min, max)

    def lerp(self, start, end, weight):
        return self._ternary("lerp", start, end, weight)

    def addcmul(self, arg1, arg2, arg3, alpha=1.0, value=None):
        """arg1 + alpha * arg2 * arg3 (torch.addcmul; ``value`` is torch's name for alpha)."""
        return _C.ops.addcmul(self._f, arg1, arg2, arg3, alpha if value is None else value)

    def threshold(self, arg, threshold, value):
        """arg where arg > threshold, else value (torch.nn.functional.threshold)."""
        return _C.ops.threshold(self._f, arg, threshold, value)

    def triu(self, arg, diagonal=0):
        """The elements on and above the diagonal-th diagonal of the last two dims, others 0."""
        return _C.ops.triu(self._f, arg, _index(diagonal, "triu", "diagonal"))

    def tril(self, arg, diagonal=0):
        """The elements on and below the diagonal-th diagonal of the last two dims, others 0."""
        return _C.ops.tril(self._f, arg, _index(diagonal, "tril", "diagonal"))

    def ceilDiv(self, lhs, rhs):  # noqa: N802 - nvFuser's name
        """The quotient rounded up (integers; by zero: 0), ceil(lhs / rhs) for floats."""
        return _C.ops.ceil_div(self._f, lhs, rhs)

    def cast(self, arg, dtype):
        if isinstance(arg, _C.Scalar):
            return _C.ops.scalar_cast(self._f, arg, to_loom_dtype(dtype, "cast"))
        return _C.ops.cast(self._f, arg, to_loom_dtype(dtype, "cast"))

    def gelu(self, arg, approximate="none"):
        """Loom extension (torch.nn.functional.gelu): approximate is "none" or "tanh"."""
        if approximate not in ("none", "tanh"):
            raise _C.UserError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return _C.ops.gelu(self._f, arg, approximate == "tanh")

    # ---- reductions ------------------------------------------------------------------------
    def _reduce(self, name, arg, dims, keepdim, dtype, dim=None, keep_dim=None):
        dims, keepdim = _reduction_kwargs(name, dims, keepdim, dim, keep_dim)
        if isinstance(dims, DataType):  # nvFuser's sum(arg, dtype): every dim
            dims, dtype = None, dims
        f = self._f
        if dtype is not None and dtype is not DataType.Null:
            arg = _C.ops.cast(f, arg, to_loom_dtype(dtype, f"{name} dtype"))
        out = getattr(_C.ops, name)(f, arg, _dims(dims, name), bool(keepdim))
        if dtype is not None and dtype is not DataType.Null:
            out = _C.ops.cast(f, out, to_loom_dtype(dtype))
        return out

    # nvFuser's reductions also take dim= (one dim, its int overload) and, in older versions,
    # keep_dim= for keepdim.
    def sum(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None, keep_dim=None):
        return self._reduce("sum", arg, dims, keepdim, dtype, dim, keep_dim)

    def prod(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None,
             keep_dim=None):
        return self._reduce("prod", arg, dims, keepdim, dtype, dim, keep_dim)

    def max(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None, keep_dim=None):
        return self._reduce("max", arg, dims, keepdim, dtype, dim, keep_dim)

    def min(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None, keep_dim=None):
        return self._reduce("min", arg, dims, keepdim, dtype, dim, keep_dim)

    def mean(self, arg, dims=None, keepdim=False, dtype=DataType.Null, *, dim=None,
             keep_dim=None):
        """Loom extension (torch.mean)."""
        return self._reduce("mean", arg, dims, keepdim, dtype, dim, keep_dim)

    def var(self, arg, dims=None, correction=1, keepdim=False, *, dim=None, keep_dim=None):
        dims, keepdim = _reduction_kwargs("var", dims, keepdim, dim, keep_dim)
        return _C.ops.variance(self._f, arg, _dims(dims, "var"), float(correction), bool(keepdim))

    def var_mean(self, arg, dims=None, correction=1, keepdim=False, *, dim=None, keep_dim=None):
        dims, keepdim = _reduction_kwargs("var_mean", dims, keepdim, dim, keep_dim)
        return _C.ops.var_mean(self._f, arg, _dims(dims, "var_mean"), float(correction),
                               bool(keepdim))

    def welford(self, arg, dims):
        """(avg, var_sum, n): the running mean, the sum of squared deviations and the count."""
        return _C.ops.welford(self._f, arg, _dims(dims, "welford"))

    def argmax(self, arg, dim=None, keepdim=False):
        """torch.argmax: the first index (Int) of the largest value along dim (NaN is the
        largest); dim=None indexes the flattened tensor."""
        dim = None if dim is None else _index(dim, "argmax", "dim")
        return _C.ops.argmax(self._f, arg, dim, bool(keepdim))

    def argmin(self, arg, dim=None, keepdim=False):
        """torch.argmin: the first index (Int) of the smallest value along dim (NaN is the
        smallest); dim=None indexes the flattened tensor."""
        dim = None if dim is None else _index(dim, "argmin", "dim")
        return _C.ops.argmin(self._f, arg, dim, bool(keepdim))

    # ---- scans (inclusive, along one dim) --------------------------------------------------
    # ---- sorting ---------------------------------------------------------------------------
    def argsort(self, arg, dim, descending=False, stable=False):
        """torch.argsort: the Int indices that sort arg along dim (NaN is the largest). Loom's
        sort is always stable, which also meets stable=False."""
        del stable  # every order Loom gives is the stable one
        return _C.ops.argsort(self._f, arg, _index(dim, "argsort", "dim"), bool(descending))

    def topk(self, arg, k, dim=-1, largest=True, sorted=False):  # noqa: A002 - nvFuser's names
        """torch.topk: (values, indices) of the k largest (or smallest) elements along dim, in
        order, ties in input order. k is an int or an integer Scalar. Loom always returns them
        sorted, which also meets sorted=False (any order)."""
        del sorted  # always sorted
        return _C.ops.topk(self._f, arg, k, _index(dim, "topk", "dim"), bool(largest))

    def cumsum(self, arg, dim):
        """torch.cumsum (Bool and integer inputs sum in Int)."""
        return _C.ops.cumsum(self._f, arg, _index(dim, "cumsum", "dim"))

    def cumprod(self, arg, dim):
        """torch.cumprod (Bool and integer inputs multiply in Int)."""
        return _C.ops.cumprod(self._f, arg, _index(dim, "cumprod", "dim"))

    def cummax(self, arg, dim):
        """The values of torch.cummax (as nvFuser's, no indices)."""
        return _C.ops.cummax(self._f, arg, _index(dim, "cummax", "dim"))

    def cummin(self, arg, dim):
        """The values of torch.cummin (as nvFuser's, no indices)."""
        return _C.ops.cummin(self._f, arg, _index(dim, "cummin", "dim"))

    # ---- shapes ----------------------------------------------------------------------------
    def broadcast_in_dim(self, arg, shape, broadcast_dims):
        """arg's dim i becomes output dim broadcast_dims[i]; the other output dims are new and
        expanded to `shape` (ints, or Scalars such as fd.ops.shape(x))."""
        return _C.ops.broadcast_in_dim(
            self._f, arg, list(shape), _dims(broadcast_dims, "broadcast_in_dim")
        )

    def broadcast(self, arg, is_broadcast_dim):
        return _C.ops.broadcast(self._f, arg, [bool(b) for b in is_broadcast_dim])

    def reshape(self, arg, new_shape):
        return _C.ops.reshape(self._f, arg, list(new_shape))

    def permute(self, arg, dims):
        return _C.ops.permute(self._f, arg, _dims(dims, "permute"))

    def transpose(self, arg, dim0, dim1):
        """Loom extension (torch.transpose)."""
        dim0 = _index(dim0, "transpose", "dim0")
        dim1 = _index(dim1, "transpose", "dim1")
        return _C.ops.transpose(self._f, arg, dim0, dim1)

    def squeeze(self, arg, dims, squeeze_expanded=False):
        return _C.ops.squeeze(self._f, arg, _dims(dims, "squeeze"), bool(squeeze_expanded))

    def unsqueeze(self, arg, dim):
        """Loom extension (torch.unsqueeze)."""
        return _C.ops.unsqueeze(self._f, arg, _index(dim, "unsqueeze", "dim"))

    def expand(self, arg, shape):
        return _C.ops.expand(self._f, arg, list(shape))

    def set(self, arg):
        return _C.ops.set(self._f, arg)

    def segment_set(self, arg):
        """A copy at which the fusion is cut in two kernels (arg goes through global memory)."""
        return _C.ops.segment_set(self._f, arg)

    def stride_order(self, arg, stride_order):
        """A copy of arg allocated with its dims in `stride_order` (per dim, its place counted
        from the innermost): the output tensor has those strides."""
        return _C.ops.stride_order(self._f, arg, list(stride_order))

    def slice(self, arg, start_indices, end_indices, strides=None, manual_normalization=False):
        """arg[start:end] per dim. nvFuser's binding checks, in its order and with its words
        (tests written for it match them): the counts of starts and strides, then (in
        ops::slice) starts against the rank and the ends, then per dim a constant start of 0 or
        more, a constant end not before it and a stride of 1."""
        starts, ends = list(start_indices), list(end_indices)
        name = getattr(arg, "name", "arg")
        if strides is not None:
            strides = list(strides)
            if len(strides) != len(starts):
                raise _C.UserError(
                    f"fd.ops.slice of {name}: {len(starts)} start_indices but {len(strides)} "
                    "strides (one of each per dimension). Slice start_indices and strides "
                    f"don't match! Start Indices: {len(starts)} Strides: {len(strides)}"
                )
        if manual_normalization:
            raise NotSupportedError("fd.ops.slice: manual_normalization=True is not supported by Loom")
        rank = len([i for i in arg.get_logical_domain() if not i.is_reduction()])
        if len(starts) == rank and len(ends) == rank:
            for d, (s, e) in enumerate(zip(starts, ends)):
                s, e = _const_int(s), _const_int(e)
                if s is not None and s < 0:
                    raise _C.UserError(
                        f"fd.ops.slice of {name}: start {s} at dimension {d} is negative "
                        "(Slice operation start_indices must be greater than or equal to 0. "
                        f"Start Indices: {s})"
                    )
                if s is not None and e is not None and e < s:
                    raise _C.UserError(
                        f"fd.ops.slice of {name}: end {e} at dimension {d} is before start {s} "
                        "(Slice operation end_indices must be greater than or equal to "
                        f"start_indices. Start Indices: {s} End Indices: {e})"
                    )
                if strides is not None and _const_int(strides[d]) != 1:
                    raise NotSupportedError(
                        f"fd.ops.slice of {name}: stride {strides[d]} at dimension {d}: strides "
                        "other than 1 are not supported by Loom (nvFuser Limitation: All slice "
                        "operation strides must be of const size 1)"
                    )
        return _C.ops.slice(self._f, arg, starts, ends, [])

    def pad(self, arg, pad_widths, value=None):
        return _C.ops.pad(self._f, arg, list(pad_widths), value)

    def cat(self, tensors, dim, manual_padding=False):
        if manual_padding:
            raise NotSupportedError("fd.ops.cat: manual_padding=True is not supported by Loom")
        return _C.ops.cat(self._f, list(tensors), _index(dim, "cat", "dim"))

    def index_select(self, arg, index, dim):
        """arg's slices along dim picked by the 1-D index (torch.index_select)."""
        return _C.ops.index_select(self._f, arg, index, _index(dim, "index_select", "dim"))

    def select(self, arg, index, dim):
        """torch.select: arg at position index (an int or integer Scalar; negative counts from
        the end) along dim, which the result drops."""
        return _C.ops.select(self._f, arg, index, _index(dim, "select", "dim"))

    def gather(self, arg, index, dim):
        """torch.gather: out[i] = arg[i with dim replaced by index[i]]."""
        return _C.ops.gather(self._f, arg, index, _index(dim, "gather", "dim"), False)

    def take_along_axis(self, arg, index, dim):
        """numpy.take_along_axis: gather with index of arg's size off dim."""
        return _C.ops.gather(self._f, arg, index, _index(dim, "take_along_axis", "dim"), True)

    def scatter(self, arg, index, src, dim):
        """torch.scatter: arg with src written at index along dim."""
        return _C.ops.scatter(self._f, arg, index, src, _index(dim, "scatter", "dim"), False)

    def scatter_add(self, arg, index, src, dim):
        """torch.scatter_add: arg with src added at index along dim (a Loom extension)."""
        return _C.ops.scatter(self._f, arg, index, src, _index(dim, "scatter_add", "dim"), True)

    def index_put_accumulate(self, acc, index, value):
        """torch's acc.index_put((index,), value, accumulate=True) in nvFuser's form: index is
        1-D [m] (or [m, 1]), value [m, ...] and acc [n, ...]; value's row i is added to acc's row
        index[i], repeated indices adding up (an embedding's weight gradient)."""
        return _C.ops.index_put_accumulate(self._f, acc, index, value)

    def embedding_fwd(self, input, weight, padding_idx=None, max_norm=None, norm_type=None,
                      scale_grad_by_freq=None, sparse=None):
        """torch.nn.functional.embedding's forward: the rows of weight picked by input, each
        renormalized to at most max_norm (in norm_type's norm, 2.0 by default) when max_norm is
        given. max_norm and norm_type may be numbers or Scalars (also ones given at execute);
        padding_idx, scale_grad_by_freq and sparse change only the backward, so they may be
        anything nvFuser takes there (numbers, Scalars, None). Unlike torch, weight is not
        renormalized in place."""
        return _C.ops.embedding(self._f, input, weight, padding_idx, max_norm, norm_type)

    def shape(self, arg):
        """The sizes of arg's logical dims as Scalars (a Vector for reshape, expand, ...); an
        expanded broadcast's is its expanded size, as in nvFuser."""
        from . import Vector

        return Vector(i.logical_extent() for i in arg.get_logical_domain()
                      if not i.is_reduction())

    def size(self, arg, dim):
        """The size of logical dim `dim` of `arg` as a Scalar (for reshape and expand sizes); an
        expanded broadcast's is its expanded size."""
        ids = [i for i in arg.get_logical_domain() if not i.is_reduction()]
        if not -len(ids) <= dim < len(ids):
            raise _C.UserIndexError(
                f"size: dim {dim} is out of range for {arg.name} of rank {len(ids)} "
                f"(expected {-len(ids)} <= dim < {len(ids)}). Tried to access out of boundary "
                f"index {dim + len(ids) if dim < 0 else dim}. total index: {len(ids)}"
            )
        return ids[dim].logical_extent()

    # ---- factories -------------------------------------------------------------------------
    def full(self, shape, fill_value, dtype):
        return _C.ops.full(self._f, list(shape), fill_value, to_loom_dtype(dtype, "full"))

    def zeros(self, shape, dtype=DataType.Float):
        return self.full(shape, 0, dtype)

    def ones(self, shape, dtype=DataType.Float):
        return self.full(shape, 1, dtype)

    def iota(self, length, start=None, step=None, dtype=DataType.Int):
        return _C.ops.iota(
            self._f, length, 0 if start is None else start, 1 if step is None else step,
            to_loom_dtype(dtype, "iota"),
        )

    def arange(self, start, end, step=1, dtype=None):
        return _C.ops.arange(
            self._f, start, end, step, None if dtype is None else to_loom_dtype(dtype, "arange")
        )

    # ---- random numbers (Philox4x32-10, docs/ops.md "Random numbers") ----------------------
    def _rng_key(self, op, rng_seed, rng_offset):
        """Seed and offset: ints (below 2**64; read as 64-bit patterns) or Int Scalars. Without
        either, as in nvFuser, every execute() draws them from torch's default generator: they
        become Int Scalar inputs the definition supplies (FusionDefinition._complete_inputs)."""
        if (rng_seed is None) != (rng_offset is None):
            raise _C.UserError(
                f"fd.ops.{op}: rng_seed and rng_offset are given together or not at all (without "
                "them each execute() draws both from torch's generator)"
            )
        if rng_seed is None:
            fd = self._fd
            if fd is None:
                raise NotSupportedError(
                    f"fd.ops.{op} without rng_seed and rng_offset needs a FusionDefinition to "
                    "draw them at execute; pass rng_seed= and rng_offset="
                )
            rng_seed = fd.define_scalar(None, DataType.Int)
            rng_offset = fd.define_scalar(None, DataType.Int)
            fd._drawn_inputs += [rng_seed.name, rng_offset.name]
        return [_key_bits(op, "rng_seed", rng_seed), _key_bits(op, "rng_offset", rng_offset)]

    def uniform(self, minval, maxval, shape, dtype=DataType.Float, rng_seed=None, rng_offset=None):
        seed, offset = self._rng_key("uniform", rng_seed, rng_offset)
        return _C.ops.uniform(
            self._f, minval, maxval, list(shape), seed, offset, to_loom_dtype(dtype, "uniform")
        )

    def normal(self, mean, std, shape, dtype=DataType.Float, rng_seed=None, rng_offset=None):
        seed, offset = self._rng_key("normal", rng_seed, rng_offset)
        return _C.ops.normal(
            self._f, mean, std, list(shape), seed, offset, to_loom_dtype(dtype, "normal")
        )

    def rand(self, shape, dtype=DataType.Float, rng_seed=None, rng_offset=None):
        """Loom extension (torch.rand): uniform(0, 1, shape)."""
        return self.uniform(0.0, 1.0, shape, dtype, rng_seed, rng_offset)

    def randn(self, shape, dtype=DataType.Float, rng_seed=None, rng_offset=None):
        """Loom extension (torch.randn): normal(0, 1, shape)."""
        return self.normal(0.0, 1.0, shape, dtype, rng_seed, rng_offset)

    def rand_like(self, arg, rng_seed=None, rng_offset=None):
        seed, offset = self._rng_key("rand_like", rng_seed, rng_offset)
        return _C.ops.rand_like(self._f, arg, seed, offset)

    def randn_like(self, arg, rng_seed=None, rng_offset=None):
        seed, offset = self._rng_key("randn_like", rng_seed, rng_offset)
        return _C.ops.randn_like(self._f, arg, seed, offset)

    def bernoulli(self, arg, rng_seed=None, rng_offset=None):
        """Loom extension (torch.bernoulli): 1 with probability arg per element, else 0."""
        seed, offset = self._rng_key("bernoulli", rng_seed, rng_offset)
        return _C.ops.bernoulli(self._f, arg, seed, offset)

    def dropout(self, arg, p, rng_seed=None, rng_offset=None):
        """Loom extension (torch.nn.functional.dropout in training): (output, keep mask)."""
        seed, offset = self._rng_key("dropout", rng_seed, rng_offset)
        return _C.ops.dropout(self._f, arg, p, seed, offset)

    # ---- matrix products ----------------------------------------------------------------------
    def matmul(self, arg1, arg2):
        """torch.matmul: 1-D, 2-D and batched with broadcasting; f32, bf16 or f16 in, the same
        dtype out (f32 accumulation). Runs as a segment of its own (cuBLASLt on a GPU)."""
        return _C.ops.matmul(self._f, arg1, arg2)

    def linear(self, arg1, arg2, bias=None):
        """torch.nn.functional.linear: arg1 @ arg2^T + bias (arg2 is [out, in] or [in])."""
        return _C.ops.linear(self._f, arg1, arg2, bias)

    def grouped_mm(self, mat1, mat2, offsets=None):
        """torch._grouped_mm: mat1 [m, k] x mat2 [g, k, n] with offsets [g] (each group's end
        along m) -> [m, n]; [g, m, k] x [k, n] (offsets along n) -> [m, n]; [m, k] x [k, n]
        (offsets along k) -> [g, m, n]; [g, m, k] x [g, k, n] (no offsets) -> [g, m, n]. A
        composition around one matmul (docs/ops.md, "grouped_mm")."""
        return _C.ops.grouped_mm(self._f, mat1, mat2, offsets)

    def scaled_mm(self, mat1, mat2, scale1, scale2, alpha=None, bias=None, beta=None,
                  dtype=DataType.BFloat16, output_block_scale_size=0,
                  output_block_scale_dtype=DataType.BFloat16, output_gamma=False):
        """nvFuser's scaled_mm with per-tensor scales: (out, None, None), out = cast(alpha *
        ((mat1 * scale1) @ (mat2 * scale2)) + beta * bias, dtype); mat1 [m, k] and mat2 [k, n]
        8-bit floats, the scales, alpha and beta one-element f32 tensors, f32 accumulation
        (docs/ops.md, "scaled_mm"). Output block scales and the global scale (nvfp4's
        quantized output) raise NotSupportedError, as do block-scaled inputs."""
        if output_block_scale_size or output_gamma:
            raise NotSupportedError(
                "fd.ops.scaled_mm: output_block_scale_size / output_gamma (a block-quantized "
                "output, nvfp4/mxfp8) are not supported; Loom's scaled_mm takes per-tensor "
                "scales and returns (out, None, None)"
            )
        for name, s in (("scale1", scale1), ("scale2", scale2)):
            if isinstance(s, _C.TensorView) and s.dtype != _C.DataType.Float32:
                raise NotSupportedError(
                    f"fd.ops.scaled_mm: {name} is {s.dtype}; block-scaled forms (mxfp8 with "
                    "e8m0 scales, nvfp4) are not supported, only per-tensor f32 scales"
                )
        out = _C.ops.scaled_mm(self._f, mat1, mat2, scale1, scale2, alpha, bias, beta,
                               to_loom_dtype(dtype, "scaled_mm"))
        return out, None, None

    # ---- attention (nvFuser's sdpfa_fwd / sdpfa_bwd; docs/ops.md "Attention") ---------------
    def _dropout_may_be_on(self, dropout_p):
        if dropout_p is None:
            return False
        if isinstance(dropout_p, (int, float)) and not isinstance(dropout_p, bool):
            return dropout_p != 0
        if isinstance(dropout_p, _C.Scalar) and dropout_p.is_const():
            return dropout_p.const_double() != 0  # fd.define_scalar(0.1) draws a seed as 0.1
        return True  # read when the fusion runs

    def sdpfa_fwd(self, query, key, value, dropout_p=None, is_causal=None, scale=None, *,
                  rng_seed=None, rng_offset=None, bias=None, mask=None):
        """Scaled dot-product attention: (output, log_sumexp, philox_seed, philox_offset).
        query [N, H, L, E], key [N, H, S, E], value [N, H, S, Ev]; log_sumexp [N, H, L] Float;
        philox_seed is a [2] UInt64 tensor holding the dropout mask's seed and offset,
        philox_offset a 0-D UInt64 holding the offset (nvFuser's form since torch 2.7).
        Without rng_seed= and rng_offset=, a dropout_p that may be above 0 draws them from
        torch's generator at each execute, as nvFuser does. bias= (added to the scores) and
        mask= (Bool, false hides a key) have the scores' rank [.., L, S]."""
        seed = offset = None
        if self._dropout_may_be_on(dropout_p) or rng_seed is not None or rng_offset is not None:
            seed, offset = self._rng_key("sdpfa_fwd", rng_seed, rng_offset)
        return _C.ops.sdpfa_fwd(self._f, query, key, value, dropout_p, is_causal, scale, seed,
                                offset, bias, mask)

    def sdpfa_bwd(self, grad_output, query, key, value, output, log_sumexp, dropout_p,
                  is_causal, philox_seed, philox_offset, scale):
        """The gradients (grad_query, grad_key, grad_value) of sdpfa_fwd from its output and
        log_sumexp. philox_seed / philox_offset: what sdpfa_fwd returned in this fusion, the
        seed and offset given to it (ints or Int Scalars), or tensor inputs of this fusion
        holding them (a backward fusion of its own, as training runs it: sdpfa_fwd's [2]
        seed-and-offset tensor and its 0-D offset, or 0-D seed and offset); with dropout_p
        None or 0 they are not read."""
        if (self._dropout_may_be_on(dropout_p) and _is_tensor(philox_seed)
                and philox_seed.is_fusion_input()):
            philox_seed, philox_offset = self._key_from_inputs(philox_seed, philox_offset)
        return _C.ops.sdpfa_bwd(
            self._f, grad_output, query, key, value, output, log_sumexp, dropout_p, is_causal,
            _key_bits("sdpfa_bwd", "philox_seed", philox_seed),
            _key_bits("sdpfa_bwd", "philox_offset", philox_offset), scale,
        )

    def _key_from_inputs(self, seed_tv, offset_tv):
        """Int Scalar inputs that execute() fills from the tensor inputs holding a dropout mask's
        seed and offset (FusionDefinition._complete_inputs): seed_tv [2] holds both (nvFuser's
        form), else seed_tv and offset_tv are 0-D."""
        fd = self._fd
        if fd is None or not _is_tensor(offset_tv) or not offset_tv.is_fusion_input():
            raise _C.UserError(
                "sdpfa_bwd: philox_seed is a tensor input of the fusion, so philox_offset must be "
                "one too (the 0-D offset sdpfa_fwd returned, or nvFuser's 0-D offset)")
        seed = fd.define_scalar(None, DataType.Int)
        offset = fd.define_scalar(None, DataType.Int)
        fd._derived_inputs.append((seed.name, offset.name, seed_tv.name, offset_tv.name))
        return seed, offset

    # ---- composites (Loom extensions, with torch's arguments) -------------------------------
    def softmax(self, arg, dim):
        return _C.ops.softmax(self._f, arg, _index(dim, "softmax", "dim"))

    def log_softmax(self, arg, dim):
        return _C.ops.log_softmax(self._f, arg, _index(dim, "log_softmax", "dim"))

    def layer_norm(self, arg, normalized_ndims, weight=None, bias=None, eps=1e-5):
        """(y, mean, rstd) over the last `normalized_ndims` dims."""
        normalized_ndims = _index(normalized_ndims, "layer_norm", "normalized_ndims")
        return _C.ops.layer_norm(self._f, arg, normalized_ndims, weight, bias, float(eps))

    def rms_norm(self, arg, normalized_ndims, weight, eps=1e-6):
        normalized_ndims = _index(normalized_ndims, "rms_norm", "normalized_ndims")
        return _C.ops.rms_norm(self._f, arg, normalized_ndims, weight, float(eps))

    # ---- backward and loss composites (Loom extensions, docs/ops.md) ------------------------
    def softmax_backward(self, grad, y, dim):
        """The gradient of softmax given its output y: y * (grad - sum(grad * y, dim))."""
        return _C.ops.softmax_backward(self._f, grad, y, _index(dim, "softmax_backward", "dim"))

    def log_softmax_backward(self, grad, y, dim):
        """The gradient of log_softmax given its output y: grad - exp(y) * sum(grad, dim)."""
        dim = _index(dim, "log_softmax_backward", "dim")
        return _C.ops.log_softmax_backward(self._f, grad, y, dim)

    def layer_norm_backward(self, grad, arg, normalized_ndims, mean, rstd, weight=None,
                            bias=None):
        """(grad_input, grad_weight, grad_bias) of layer_norm, given the mean and rstd it
        returned; grad_weight / grad_bias are None without weight / bias (bias is only asked
        whether it is there)."""
        normalized_ndims = _index(normalized_ndims, "layer_norm_backward", "normalized_ndims")
        return _C.ops.layer_norm_backward(
            self._f, grad, arg, normalized_ndims, mean, rstd, weight, bias is not None
        )

    def rms_norm_backward(self, grad, arg, normalized_ndims, weight=None, eps=1e-6):
        """(grad_input, grad_weight) of rms_norm (grad_weight None without weight)."""
        normalized_ndims = _index(normalized_ndims, "rms_norm_backward", "normalized_ndims")
        return _C.ops.rms_norm_backward(
            self._f, grad, arg, normalized_ndims, weight, float(eps)
        )

    def gelu_backward(self, grad, arg, approximate="none"):
        """grad * d gelu(arg) / d arg; approximate is "none" or "tanh"."""
        if approximate not in ("none", "tanh"):
            raise _C.UserError(
                f"gelu_backward: approximate must be 'none' or 'tanh', got {approximate!r}"
            )
        return _C.ops.gelu_backward(self._f, grad, arg, approximate == "tanh")

    def silu_backward(self, grad, arg):
        """grad * d silu(arg) / d arg."""
        return _C.ops.silu_backward(self._f, grad, arg)

    def cross_entropy(self, logits, target, ignore_index=-100, reduction="mean"):
        """torch.nn.functional.cross_entropy of logits [N, C] and class indices target [N]."""
        ignore_index = _index(ignore_index, "cross_entropy", "ignore_index")
        return _C.ops.cross_entropy(self._f, logits, target, ignore_index, str(reduction))

    def cross_entropy_backward(self, grad, logits, target, ignore_index=-100, reduction="mean"):
        """The gradient of cross_entropy with respect to the logits (grad: the loss's shape)."""
        ignore_index = _index(ignore_index, "cross_entropy_backward", "ignore_index")
        return _C.ops.cross_entropy_backward(
            self._f, grad, logits, target, ignore_index, str(reduction)
        )


def _def_unary(name):
    def op(self, arg):
        if isinstance(arg, _C.Scalar):
            return _C.ops.scalar_unary(self._f, name, arg)
        return getattr(_C.ops, name)(self._f, arg)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (Loom's ops::unaryOp); on a Scalar, a Scalar."
    setattr(Ops, name, op)


def _def_binary(name):
    def op(self, arg1, arg2):
        return self._binary(name, arg1, arg2)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}, with PyTorch's broadcasting and type promotion."
    setattr(Ops, name, op)


# The plain elementwise ops come from the extension's list (ir/op_types.h, the one place an op is
# named); div is C++'s operator / (integers truncate toward zero), truediv true division, as
# nvFuser's.
for _name in _C.ops.unary_names:
    _def_unary(_name)
for _name in _C.ops.binary_names:
    _def_binary(_name)
del _name
