# SPDX-License-Identifier: Apache-2.0
# The mistakes nvFuser's own Python tests catch with pytest.raises(<type>, match=<regex>) (issue
# 36; docs/python.md, "Error messages nvFuser tests match", lists them with their sources): each
# one is made here on CPU tensors as a user of nvFuser's Python API would make it, and Loom's
# error must be of nvFuser's exception type, match nvFuser's regex, and still say in Loom's words
# which tensor (or argument) is wrong and what was expected.
import re

import pytest
import torch

import loom
from loom.direct import DataType, FusionDefinition


def define_and_execute(build, inputs):
    """What nvFuser's exec_nvfuser does with a fusion function: define it, then execute it."""
    with FusionDefinition() as fd:
        build(fd)
    return fd.execute(inputs)


def raises(exc_type, regex, call):
    """The error `call` raises: exc_type, matching regex (pytest.raises' search), a loom.UserError
    (a mistake, not a bug of Loom's) or, for a form nvFuser also lacks (a slice stride), a
    loom.NotSupportedError; returned so its Loom words can be checked too."""
    with pytest.raises(exc_type, match=regex) as info:
        call()
    assert isinstance(info.value, (loom.UserError, loom.NotSupportedError)), repr(info.value)
    return str(info.value)


# ---- slice: nvFuser's test_slice_error_checks (tests/python/direct/test_high_complexity.py) ------
# Its regexes, verbatim (pytest.raises(RuntimeError, match=...)), on 10x10 and 5x5 inputs.
SLICE_CASES = [
    ("start_indices", dict(start_indices=[-1, -2], end_indices=[5, 5], strides=[7, 7]),
     "Slice operation start_indices must be greater than or equal to 0. .*",
     "start -1 at dimension 0 is negative"),
    ("end_indices", dict(start_indices=[3, 4], end_indices=[1, 2], strides=[1, 1]),
     "Slice operation end_indices must be greater than or equal to start_indices. .*",
     "end 1 at dimension 0 is before start 3"),
    ("strides", dict(start_indices=[0, 0], end_indices=[5, 5], strides=[5, 5]),
     "nvFuser Limitation: All slice operation strides must be of const size 1.*",
     "stride 5 at dimension 0"),
    ("tensor_dims", dict(start_indices=[0, 0, 0], end_indices=[4, 4, 4], strides=[1, 1, 1]),
     "Number of tensor dimensions does not match slice dimensions! .*",
     "has rank 2 but 3 starts and 3 stops"),
    ("slice_dims_start", dict(start_indices=[0, 0, 0], end_indices=[4, 4], strides=[1, 1]),
     "Slice start_indices and strides don't match! .*",
     "3 start_indices but 2 strides"),
    ("slice_dims_end", dict(start_indices=[0, 0], end_indices=[4, 4, 4], strides=[1, 1]),
     "Slice indexing attribute dimensions don't match! .*",
     "has rank 2 but 2 starts and 3 stops"),
    ("slice_dims_stride", dict(start_indices=[0, 0], end_indices=[4, 4], strides=[1, 1, 1]),
     "Slice start_indices and strides don't match! .*",
     "2 start_indices but 3 strides"),
]


@pytest.mark.parametrize("size", [10, 5])
@pytest.mark.parametrize("case", SLICE_CASES, ids=[c[0] for c in SLICE_CASES])
def test_slice_errors(size, case):
    _, kwargs, regex, words = case
    x = torch.randn(size, size)

    def build(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.slice(t0, **kwargs))

    msg = raises(RuntimeError, regex, lambda: define_and_execute(build, [x]))
    assert "T0" in msg and words in msg, msg


@pytest.mark.parametrize("size", [10, 5])
def test_slice_without_strides_and_legal_slices_run(size):
    # The two cases of nvFuser's test that must not raise.
    x = torch.randn(size, size)

    def build(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.slice(t0, start_indices=[2, 2], end_indices=[4, 4]))
        if size == 10:
            fd.add_output(fd.ops.slice(t0, start_indices=[6, 6], end_indices=[8, 8],
                                       strides=[1, 1]))

    outs = define_and_execute(build, [x])
    torch.testing.assert_close(outs[0], x[2:4, 2:4])
    if size == 10:
        torch.testing.assert_close(outs[1], x[6:8, 6:8])


def test_slice_run_time_negative_start_still_counts_from_the_end():
    # nvFuser refuses only a constant negative start; a start known at run time wraps.
    x = torch.randn(4, 6)

    def build(fd):
        t0 = fd.from_pytorch(x)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.slice(t0, [0, s], [4, 6]))

    (out,) = define_and_execute(build, [x, -4])
    torch.testing.assert_close(out, x[:, -4:])


# ---- op-info error samples (nvFuser's tests/python/opinfo_input_generators.py) ------------------
# Each (exception type, text) pair an error generator yields, checked by nvFuser's op-info runner
# with pytest.raises(type, match=...); the texts are matched literally here (re.escape), which
# a message holding the text verbatim passes however the runner builds its regex.
def _op(x, op):
    def build(fd):
        fd.add_output(op(fd, fd.from_pytorch(x)))
    return build, [x]


def _two(x, y, op):
    def build(fd):
        fd.add_output(op(fd, fd.from_pytorch(x), fd.from_pytorch(y)))
    return build, [x, y]


def _cat(shapes, dim):
    ts = [torch.randn(s) for s in shapes]

    def build(fd):
        fd.add_output(fd.ops.cat([fd.from_pytorch(t) for t in ts], dim))
    return build, ts


def _no_inputs(op):
    def build(fd):
        fd.add_output(op(fd))
    return build, []


def _iota(length, start, step, dtype):
    return _no_inputs(lambda fd: fd.ops.iota(fd.define_scalar(length), fd.define_scalar(start),
                                             fd.define_scalar(step), dtype))


def _pad(widths):
    return _op(torch.randn(2, 2), lambda fd, t: fd.ops.pad(t, widths, fd.define_scalar(1.0)))


def _topk(k, dim):
    return _op(torch.randn(128, 7, 32), lambda fd, t: fd.ops.topk(t, k, dim, True, False)[0])


def _rank8(op):
    x = torch.randn(*[2] * 8)
    return _op(x, lambda fd, t: fd.ops.mul(t, op(t)))


X22, X23, X4D, X816 = (2, 2), (2, 3), (10, 3, 4, 4), (8, 1, 6)
R, T = RuntimeError, TypeError

# (id, (build, inputs), nvFuser's type, nvFuser's text, Loom's words naming what is wrong)
OPINFO_CASES = [
    ("broadcast_fewer_false",
     _op(torch.randn(X23), lambda fd, t: fd.ops.broadcast(t, [True, False])),
     R, "Invalid broadcast, number of false entries in is_broadcast_dim expected to be",
     "T0 has rank 2 but is_broadcast_dim has 1 false entries"),
    ("broadcast_more_false",
     _op(torch.randn(X23), lambda fd, t: fd.ops.broadcast(t, [True, False, False, False])),
     R, "Invalid broadcast, number of false entries in is_broadcast_dim expected to be",
     "T0 has rank 2 but is_broadcast_dim has 3 false entries"),
    ("broadcast_in_dim_missing_axis",
     _op(torch.randn(X22), lambda fd, t: fd.ops.broadcast_in_dim(t, [2, 2, 3], [0])),
     R, "The broadcast dimensions should match the input dimensions.",
     "T0 has rank 2 but broadcast_dims has 1 entries"),
    ("broadcast_in_dim_fewer_output_dims",
     _op(torch.randn(X22), lambda fd, t: fd.ops.broadcast_in_dim(t, [2], [0])),
     R, "The new shape is expected to be greater-then-or-equal to the input",
     "the output shape [2] has fewer dimensions than T0 of rank 2"),
    ("broadcast_in_dim_descending",
     _op(torch.randn(X22), lambda fd, t: fd.ops.broadcast_in_dim(t, [2, 2], [1, 0])),
     R, "Broadcast dimension is not greater than the previous value.",
     "broadcast_dims [1, 0] must be increasing and below the output rank 2 (negative ones count from its end; T0)"),
    ("broadcast_in_dim_out_of_bounds",
     _op(torch.randn(X22), lambda fd, t: fd.ops.broadcast_in_dim(t, [2, 2], [0, 2])),
     R, "Invalid broadcast_dims value.",
     "broadcast_dims [0, 2] must be increasing and below the output rank 2 (negative ones count from its end; T0)"),
    ("cat_empty", _cat([], 0), R, "Attempting to concatenate empty list of tensors",
     "cat: needs at least one tensor"),
    ("cat_positive_dim", _cat([(1,), (2,)], 1), R, "Invalid dimension to cat",
     "dimension 1 is out of range for T0 of rank 1"),
    ("cat_negative_dim", _cat([(2,), (2,)], -2), R, "Invalid dimension to cat",
     "dimension -2 is out of range for T0 of rank 1"),
    ("cat_ndims_mismatch", _cat([(2,), (2, 3)], 0), R, "Unexpected number of dimensions",
     "T1 [s2, s4] has rank 2 but T0 [s0] has rank 1"),
    ("cat_shape_mismatch", _cat([(2, 3), (4, 5)], 0), R,
     "a conflict was found with 2 different sizes", "T3 dimension 1 has size 5"),
    ("full_negative_size", _no_inputs(lambda fd: fd.ops.full([2, -2], 1.0, DataType.Float)), R,
     "The value -2 at index 1 was neither symbolic(-1), zero_element(0), broadcast(1), or "
     "static(>1).", "full: size -2 at dimension 1 of [2, -2] is negative"),
    ("topk_dim_past_rank", _topk(3, 3), R, "Tried to access out of boundary index",
     "topk: dimension 3 is out of range for T0 of rank 3"),
    ("topk_dim_before_rank", _topk(3, -4), R, "Tried to access out of boundary index",
     "topk: dimension -4 is out of range for T0 of rank 3"),
    ("topk_negative_k", _topk(-5, 1), R, "Unexpected size of axis",
     "topk: k = -5 is negative"),
    ("topk_k_past_size", _topk(16, 1), R, "selected index k out of range",
     "topk: k = 16 is outside [0, 7]: T0 dimension 1 has size 7"),
    ("index_select_positive_dim",
     _two(torch.randn(4, 2), torch.randint(0, 4, (8,)),
          lambda fd, t, i: fd.ops.index_select(t, i, 2)),
     R, "Tried to access out of boundary index 2. total index: 2",
     "index_select: dimension 2 is out of range for T0 of rank 2"),
    ("index_select_negative_dim",
     _two(torch.randn(4, 2), torch.randint(0, 4, (8,)),
          lambda fd, t, i: fd.ops.index_select(t, i, -3)),
     R, "Tried to access out of boundary index -1. total index: 2",
     "index_select: dimension -3 is out of range for T0 of rank 2"),
    ("iota_complex_length", _iota(1 + 1j, 0, 1, DataType.Int), R, "length must be integer",
     "is c128"),
    ("iota_complex_start", _iota(4, 1 + 2j, 1, DataType.Int), R,
     "iota: start dtype does not match specified dtype argument",
     "iota: start (1.0, 2.0) is c128, which the dtype i64 cannot hold"),
    ("iota_complex_step", _iota(4, 0, 1 + 2j, DataType.Int), R,
     "iota: step dtype does not match specified dtype argument",
     "iota: step (1.0, 2.0) is c128, which the dtype i64 cannot hold"),
    ("iota_infinite", _iota(4, float("inf"), float("inf"), DataType.Float), R,
     "iota: length, start, step must be finite numbers.", "iota: start is inf"),
    ("iota_zero_step", _iota(10, 0, 0, DataType.Int), R, "iota: step value must not equal zero.",
     "iota: step is 0, which would repeat start"),
    ("iota_zero_float_step", _iota(10, 1.5, 0.0, DataType.Float), R,
     "iota: step value must not equal zero.", "iota: step is 0.0"),
    ("pad_cuts_past_the_size", _pad([-3, 0, 0, 0]), R, "Invalid resized domain extent",
     "pad: T1 would have the negative size -1 at dimension 1"),
    ("pad_too_many_widths", _pad([1, 1, 1, 1, 1, 1]), R,
     "Number of pad widths must be at most twice the input dimension",
     "3 (left, right) pairs [1, 1, 1, 1, 1, 1] for T0 [s0, s2] of rank 2"),
    ("pad_uneven_widths", _pad([1, 1, 0]), R, "Invalid number of padding widths",
     "the widths [1, 1, 0] for T0 must come in (left, right) pairs"),
    ("permute_float_dims",
     _op(torch.randn(X4D), lambda fd, t: fd.ops.permute(t, [0.0, 1.0, 2.0, 3.0])),
     T, "permute(): incompatible function arguments",
     "dims must be an int or a list of ints, got [0.0, 1.0, 2.0, 3.0]"),
    ("permute_duplicate", _op(torch.randn(X4D), lambda fd, t: fd.ops.permute(t, [0, 1, 1, 3])),
     R, "duplicated dimension entries", "permute: dimension 1 appears twice for T0 of rank 4"),
    ("permute_past_rank", _op(torch.randn(X4D), lambda fd, t: fd.ops.permute(t, [0, 1, 2, 4])),
     R, "dims argument is out of range, expects",
     "permute: dimension 4 is out of range for T0 of rank 4"),
    ("permute_before_rank", _op(torch.randn(X4D), lambda fd, t: fd.ops.permute(t, [0, 1, 2, -5])),
     R, "dims argument is out of range, expects",
     "permute: dimension -5 is out of range for T0 of rank 4"),
    ("permute_too_few", _op(torch.randn(X4D), lambda fd, t: fd.ops.permute(t, [0])),
     R, "argument to have the same length as input",
     "permute: T0 has rank 4 but the permutation [0] has 1 entries"),
    ("permute_too_many", _op(torch.randn(X4D), lambda fd, t: fd.ops.permute(t, [0, 1, 2, 3, 4])),
     R, "argument to have the same length as input",
     "permute: T0 has rank 4 but the permutation [0, 1, 2, 3, 4] has 5 entries"),
    ("uniform_integer_dtype",
     _no_inputs(lambda fd: fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), [2, 2],
                                          dtype=DataType.Int)),
     R, "Random distributions only create floating point types", "uniform: dtype i64"),
    ("normal_integer_dtype",
     _no_inputs(lambda fd: fd.ops.normal(fd.define_scalar(0.0), fd.define_scalar(1.0), [2, 2],
                                         dtype=DataType.Int32)),
     R, "Random distributions only create floating point types", "normal: dtype i32"),
    ("var_mean_float_dims", _op(torch.randn(X816), lambda fd, t: fd.ops.var_mean(t, 3.0)[0]),
     T, "var_mean(): incompatible function arguments.",
     "dims must be an int or a list of ints, got 3.0"),
    ("reduction_duplicate_axes", _op(torch.randn(X816), lambda fd, t: fd.ops.sum(t, (0, 0, 0))),
     R, "Reduction axes are not unique", "sum: dimension 0 appears twice for T0 of rank 3"),
    ("reduction_axis_before_rank", _op(torch.randn(X816), lambda fd, t: fd.ops.sum(t, (-4,))),
     R, "Reduction on invalid axis", "sum: dimension -4 is out of range for T0 of rank 3"),
    ("reduction_axis_past_rank", _op(torch.randn(X816), lambda fd, t: fd.ops.sum(t, (3,))),
     R, "Reduction on invalid axis", "sum: dimension 3 is out of range for T0 of rank 3"),
    ("reshape_two_inferred", _op(torch.randn(3, 14), lambda fd, t: fd.ops.reshape(t, [3, -1, -1])),
     R, "A maximum of one value of -1", "only one size may be -1 in [3, -1, -1] (reshaping T0"),
    ("reshape_element_count", _op(torch.randn(3, 14), lambda fd, t: fd.ops.reshape(t, [3, 2, 8])),
     R, "Total element counts across view operation must match",
     "cannot reshape T0 of shape [3, 14] (42 elements) to shape [3, 2, 8] (48 elements)"),
    ("where_float_condition",
     _op(torch.randn(2, 3, 4), lambda fd, t: fd.ops.where(t, t, t)),
     R, "Condition should be of DataType Bool", "where: condition T0 must be Bool, got f32"),
    ("size_past_rank", _rank8(lambda t: t.size(8)), R, "Tried to access out of boundary index",
     "size: dim 8 is out of range for T0 of rank 8"),
    ("size_before_rank", _rank8(lambda t: t.size(-9)), R, "Tried to access out of boundary index",
     "size: dim -9 is out of range for T0 of rank 8"),
    ("vector_at_past_length", _rank8(lambda t: t.shape()[8]), R,
     "Tried to access out of boundary index", "index 8 is out of range for a vector of 8 entries"),
    ("vector_at_before_length", _rank8(lambda t: t.shape()[-9]), R,
     "Tried to access out of boundary index", "index -9 is out of range for a vector of 8 entries"),
    ("triu_0d", _op(torch.randn(()), lambda fd, t: fd.ops.triu(t)), R,
     "input tensor for triu must have 2 or more dims, but got 0 dims", "triu: T0 has rank 0"),
    ("triu_1d", _op(torch.randn(4), lambda fd, t: fd.ops.triu(t)), R,
     "input tensor for triu must have 2 or more dims, but got 1 dims", "triu: T0 has rank 1"),
    ("take_along_axis_past_rank",
     _two(torch.randn(4, 2), torch.randint(0, 4, (3, 1)),
          lambda fd, t, i: fd.ops.take_along_axis(t, i, 2)),
     R, "Tensor arguments have dimension", "take_along_axis: dimension 2 is out of range for T0"),
    ("take_along_axis_before_rank",
     _two(torch.randn(4, 2), torch.randint(0, 4, (3, 1)),
          lambda fd, t, i: fd.ops.take_along_axis(t, i, -3)),
     R, "Tensor arguments have dimension", "take_along_axis: dimension -3 is out of range for T0"),
]
for _dims in [(-4, -5), (3, 4), (-3, -4), (2, 3)]:
    OPINFO_CASES.append((f"squeeze_out_of_range_{_dims}",
                         _op(torch.randn(5, 1, 1), lambda fd, t, d=_dims: fd.ops.squeeze(t, d)),
                         R, "Squeeze dim is outside of Tensor size!",
                         "is out of range for T0 of rank 3"))
for _shape, _dims in [((5, 1, 1), (1, 2, 3, 4)), ((5, 1, 1), (-1, -2, -3, -4)), ((), (0,)),
                      ((), (-1,))]:
    OPINFO_CASES.append((f"squeeze_too_many_{_dims}",
                         _op(torch.randn(_shape), lambda fd, t, d=_dims: fd.ops.squeeze(t, d)),
                         R, "The dims to squeeze must be <= the number of dims of the input tensor",
                         f"squeeze: {len(_dims)} dims {list(_dims)} given for T0"))


@pytest.mark.parametrize("case", OPINFO_CASES, ids=[c[0] for c in OPINFO_CASES])
def test_opinfo_error_samples(case):
    _, (build, inputs), exc_type, text, words = case
    msg = raises(exc_type, re.escape(text), lambda: define_and_execute(build, inputs))
    assert words in msg, msg


# ---- define_tensor and define_vector (opinfo define_tensor / define_vector error generators) ---
DEFINE_TENSOR_CASES = [
    ("contiguity_length", dict(shape=[-1, -1], contiguity=[True, True, True], dtype=DataType.Float),
     R, "The size of contiguity must equal to the number of non-broadcasting IterDomains",
     "contiguity has 3 entries for a tensor of rank 2"),
    ("size_past_int64", dict(shape=[2**63], contiguity=[True]),
     T, "define_tensor(): incompatible function arguments",
     "shape entry 0 is 9223372036854775808, which does not fit in a 64-bit integer"),
    ("size_below_symbolic", dict(shape=[-2], contiguity=[True]),
     R, "The value -2 at index 0 was neither symbolic(-1), zero_element(0), broadcast(1), or "
     "static(>1)", "size -2 at dimension 0 of [-2] is invalid"),
    ("float_size", dict(shape=[10.0], contiguity=[True]),
     T, "define_tensor(): incompatible function arguments.", "shape entry 0 is 10.0"),
    ("stride_order_duplicate",
     dict(shape=[-1, -1, -1], contiguity=[True, True, True], stride_order=[0, 1, 1]),
     R, "duplicated stride_order entries", "stride_order [0, 1, 1] must be a permutation of 0..2"),
    ("stride_order_past_rank",
     dict(shape=[-1, -1, -1], contiguity=[True, True, True], stride_order=[0, 1, 5]),
     R, "stride_order argument is out of range", "5 is not in [-3, 3)"),
    ("stride_order_before_rank",
     dict(shape=[-1, -1, -1], contiguity=[True, True, True], stride_order=[0, 1, -4]),
     R, "stride_order argument is out of range", "-4 is not in [-3, 3)"),
]


@pytest.mark.parametrize("case", DEFINE_TENSOR_CASES, ids=[c[0] for c in DEFINE_TENSOR_CASES])
def test_define_tensor_errors(case):
    _, kwargs, exc_type, text, words = case

    def define():
        with FusionDefinition() as fd:
            fd.define_tensor(**kwargs)

    msg = raises(exc_type, re.escape(text), define)
    assert words in msg, msg


def test_define_vector_size_below_symbolic():
    def define():
        with FusionDefinition() as fd:
            fd.define_vector([-2])

    msg = raises(RuntimeError, re.escape("The value -2 at index 0 was neither symbolic(-1), "
                                         "zero_element(0), broadcast(1), or static(>1)"), define)
    assert "define_vector: size -2 at index 0 of [-2] is invalid" in msg, msg


# ---- inputs that do not fit the definition (nvFuser's ExpressionEvaluator binding checks) -----
# nvFuser words these "Expected input N, <tensor>, to be bound to a tensor of rank R, but got a
# tensor of rank r" (and dtype, and scalar versus tensor); Loom says so too, then describes the
# argument given.
def _scalar_times_tensor():
    with FusionDefinition() as fd:
        s = fd.define_scalar(dtype=DataType.Double)
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(t, s))
    return fd


def test_input_of_another_rank():
    fd = _scalar_times_tensor()
    msg = raises(RuntimeError, "Expected input 1, T0, to be bound to a tensor of rank 1, but got "
                 "a tensor of rank 2", lambda: fd.execute([2.0, torch.randn(3, 3)]))
    assert "[3, 3] f32 on cpu" in msg, msg


def test_input_of_another_dtype():
    fd = _scalar_times_tensor()
    msg = raises(RuntimeError, "Expected input 1, T0, to be bound to a tensor of dtype f32, but "
                 "got a tensor of dtype f64",
                 lambda: fd.execute([2.0, torch.randn(3, dtype=torch.float64)]))
    assert "[3] f64 on cpu" in msg, msg


def test_tensor_where_a_scalar_is_expected_and_the_reverse():
    fd = _scalar_times_tensor()
    msg = raises(RuntimeError, "Expected input 0, s0, to be a scalar but got",
                 lambda: fd.execute([torch.randn(15), torch.randn(15)]))
    assert "s0 is a f64 scalar" in msg, msg
    msg = raises(RuntimeError, "Expected input 1, T0, to be a tensor but got",
                 lambda: fd.execute([2.0, 2.0]))
    assert "double 2.0" in msg, msg


# ---- mistakes that ran silently or failed late (found making the cases above) ------------------
@pytest.mark.parametrize("op", ["iota", "full"])
def test_negative_run_time_size_of_a_factory_names_it(op):
    # It failed at the kernel launch ("its BIDx extent is 0 but T0 has -3 elements to write").
    def build(fd):
        n = fd.define_scalar(dtype=DataType.Int)
        if op == "iota":
            fd.add_output(fd.ops.iota(n))
        else:
            fd.add_output(fd.ops.full([n, 2], 1.0, DataType.Float))

    msg = raises(RuntimeError, "would have the negative (length|size) -3 at dimension 0",
                 lambda: define_and_execute(build, [-3]))
    assert f"{op}: T0" in msg and "from input 0 (s0)" in msg, msg
