# SPDX-License-Identifier: Apache-2.0
"""``fd.validate``: outputs compared with Loom's reference evaluator (double precision, each op
rounded to its dtype; include/loom/eval/reference_evaluator.h) or with outputs the caller gives,
element by element within the tolerance Loom's own tests use (eval::defaultTolerance: it grows
with the dtype's epsilon and the number of elements reduced into each output). A mismatch raises
loom.ValidationError naming the output and its worst element.
"""

from .. import UserError, ValidationError, _C
from .._dumps import dump_output
from ._types import to_loom_dtype, torch_to_dtype


REFERENCE = "Loom's reference evaluator, double precision"


def _numpy():
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy comes with torch
        raise UserError("validate needs numpy to compare outputs; pip install numpy") from None
    return numpy


def _as_numpy(t):
    """A host float64 numpy copy of a torch tensor, numpy array or loom._C.Tensor."""
    np = _numpy()
    if hasattr(t, "detach") and hasattr(t, "cpu"):  # torch
        t = t.detach().cpu()
        return t.double().numpy() if t.dtype.is_floating_point else t.numpy()
    if isinstance(t, _C.Tensor):
        if t.dtype in (_C.DataType.Float8_e4m3fn, _C.DataType.Float8_e5m2):
            import torch  # numpy has no 8-bit floats; torch reads DLPack's codes for them

            return torch.from_dlpack(t).double().numpy()
        return np.from_dlpack(t)
    return np.asarray(t)


def _host(x):
    """An input for the reference evaluator: CUDA tensors copied to the host."""
    if hasattr(x, "device") and getattr(x.device, "type", "cpu") != "cpu" and hasattr(x, "cpu"):
        return x.cpu()
    return x


def _numel(x):
    shape = getattr(x, "shape", None)
    n = 1
    for s in shape or ():
        n *= int(s)
    return n if shape is not None else 0


def _loom_dtype(out):
    dtype = getattr(out, "dtype", None)
    if isinstance(dtype, _C.DataType):
        return dtype
    t = torch_to_dtype(dtype)
    if t is not None:
        return t.loom
    np = _numpy()
    table = {np.float64: "Float64", np.float32: "Float32", np.float16: "Float16",
             np.int64: "Int64", np.int32: "Int32", np.int16: "Int16", np.int8: "Int8",
             np.uint8: "UInt8", np.uint16: "UInt16", np.uint32: "UInt32", np.uint64: "UInt64",
             np.bool_: "Bool",
             np.complex64: "ComplexFloat", np.complex128: "ComplexDouble"}
    name = table.get(np.dtype(dtype).type)
    return to_loom_dtype(getattr(_C.DataType, name)) if name else _C.DataType.Float64


def reference_outputs(fusion, inputs):
    """The reference evaluator's outputs for `inputs` (on the host)."""
    if any(tv.has_device_mesh() for tv in fusion.inputs() if isinstance(tv, _C.TensorView)):
        raise UserError(
            "validate: the fusion is sharded and the inputs are this rank's shards, which the "
            "reference evaluator does not take; pass reference_outputs"
        )
    with dump_output():
        return _C.evaluate_fusion(fusion, [_host(x) for x in inputs])


def _worst(actual, expected, rtol, atol):
    """(flat index, excess) of the worst element, and the number of mismatches; None when all
    match. NaN matches only NaN, an infinity only itself."""
    np = _numpy()
    if actual.dtype.kind in "biu" and expected.dtype.kind in "biu":
        bad = actual.ravel().astype(np.int64) != expected.ravel().astype(np.int64)
        return (int(np.argmax(bad)), int(bad.sum())) if bad.any() else None
    if actual.dtype.kind == "c" or expected.dtype.kind == "c":
        # Complex values compare part by part: element i's parts are 2i and 2i + 1.
        a = actual.astype(np.complex128).ravel().view(np.float64)
        e = expected.astype(np.complex128).ravel().view(np.float64)
        worst = _worst_of(a, e, rtol, atol)
        return None if worst is None else (worst[0] // 2, worst[1])
    return _worst_of(actual.astype(np.float64).ravel(), expected.astype(np.float64).ravel(), rtol,
                     atol)


def _number(x):
    """An element as a Python float, or complex for a complex element."""
    return x if isinstance(x, complex) else float(x)


def _worst_of(a, e, rtol, atol):
    """_worst of two flat float64 arrays."""
    np = _numpy()
    both_nan = np.isnan(a) & np.isnan(e)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
        allowed = atol + rtol * np.abs(e)
        same_inf = np.isinf(a) & np.isinf(e) & (a == e)
        bad = ~(both_nan | same_inf | (diff <= allowed))
        score = np.where(np.isnan(diff), np.inf, diff - allowed)
    if not bad.any():
        return None
    score = np.where(bad, score, -np.inf)
    return int(np.argmax(score)), int(bad.sum())


def _tolerance(out_dtype, out_numel, widest):
    """(rtol, atol) for an output: the elements reduced into each are estimated as the widest
    input's over the output's, as `loom run` does."""
    return _C.default_tolerance(out_dtype, max(1, widest // max(1, out_numel)))


def _widest(inputs):
    return max([_numel(x) for x in inputs] + [1])


def tolerances(fusion, inputs):
    """(atol, rtol) per output of `fusion` for `inputs` (nvFuser's get_val_tolerances)."""
    refs = reference_outputs(fusion, inputs)
    widest = _widest(inputs)
    out = []
    for r in refs:
        rtol, atol = _tolerance(_loom_dtype(r), _numel(r), widest)
        out.append((atol, rtol))
    return out


def compare(fusion, outputs, references, inputs, against):
    """Raises ValidationError at the first output whose worst element is out of tolerance."""
    np = _numpy()
    if len(outputs) != len(references):
        raise ValidationError(
            f"validate: the fusion has {len(outputs)} outputs but {len(references)} reference "
            "outputs were given"
        )
    widest = _widest(inputs)
    names = [v.name for v in fusion.outputs()]
    for i, (out, ref) in enumerate(zip(outputs, references)):
        name = names[i] if i < len(names) else f"output {i}"
        a, e = _as_numpy(out), _as_numpy(ref)
        if tuple(a.shape) != tuple(e.shape):
            raise ValidationError(
                f"validate: output {i} ({name}) has shape {tuple(a.shape)} but the reference "
                f"({against}) has {tuple(e.shape)}"
            )
        dtype = _loom_dtype(out)
        rtol, atol = _tolerance(dtype, a.size, widest)
        found = _worst(a, e, rtol, atol)
        if found is None:
            continue
        flat, count = found
        index = tuple(int(k) for k in np.unravel_index(flat, a.shape)) if a.shape else ()
        got, want = a.ravel()[flat].item(), e.ravel()[flat].item()
        raise ValidationError(
            f"validate: output {i} ({name}, {dtype.name}) differs from the reference ({against}) "
            f"at {list(index)}, its worst element: got {got!r}, expected {want!r} "
            f"(|difference| {abs(_number(got) - _number(want))!r} > atol {atol:.3g} + rtol {rtol:.3g}"
            f" * |expected|); {count} of {a.size} elements are out of tolerance"
        )
