# SPDX-License-Identifier: Apache-2.0
"""Reproducers: a Python script that defines the fusion (its definition in nvFuser's form, as
``print(fd)`` shows it) and runs it on inputs laid out like the ones given, as nvFuser's
``repro_script_for`` does. ``execute()`` attaches one to every error it raises
(``error.repro``, and a note on Python 3.11+); ``execute(print_repro=True)`` prints it;
``execute(save_repro_inputs=True)`` keeps the inputs' layouts for ``fd.last_repro_script()``.

An input is kept as what the script needs to make one like it, not as its values: a torch
tensor by its sizes, strides, dtype and device; a numpy array by its shape, strides and dtype;
a number by its value; a list (a define_vector input) by its entries.
"""

import math

from .. import __version__

_TORCH_DTYPES = {
    "torch.float64", "torch.float32", "torch.float16", "torch.bfloat16",
    "torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8", "torch.uint16",
    "torch.uint32", "torch.uint64", "torch.bool", "torch.float8_e4m3fn", "torch.float8_e5m2",
}


def _number(x):
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return f'float("{x}")'
    return repr(x)


def describe_input(x):
    """What a reproducer needs to make an input like `x` (a tuple; no reference to `x`)."""
    if isinstance(x, (bool, int, float)):
        return ("number", x)
    if hasattr(x, "item") and hasattr(x, "dtype") and getattr(x, "ndim", None) == 0 and not hasattr(
        x, "stride"
    ):
        return ("number", x.item())  # a numpy scalar
    if isinstance(x, (list, tuple)):
        return ("list", [describe_input(e) for e in x])
    shape = getattr(x, "shape", None)
    if shape is not None and hasattr(x, "stride") and hasattr(x, "dtype"):  # torch
        return ("torch", tuple(shape), tuple(x.stride()), str(x.dtype), str(x.device))
    if shape is not None and hasattr(x, "strides") and hasattr(x, "itemsize"):  # numpy
        strides = tuple(s // x.itemsize for s in x.strides)
        return ("numpy", tuple(shape), strides, str(x.dtype))
    return ("other", type(x).__name__)


def _input_line(d):
    kind = d[0]
    if kind == "number":
        return _number(d[1])
    if kind == "list":
        return "[" + ", ".join(_input_line(e) for e in d[1]) + "]"
    if kind == "torch":
        _, sizes, strides, dtype, device = d
        if dtype not in _TORCH_DTYPES:
            return f"None  # a tensor of {dtype}, which Loom does not take"
        return f"_torch_input({sizes}, {strides}, {dtype}, {device!r})"
    if kind == "numpy":
        _, shape, strides, dtype = d
        return f"_numpy_input({shape}, {strides}, {dtype!r})"
    return f"None  # a {d[1]}, which Loom does not take"


_HELPERS_TORCH = '''

def _torch_input(sizes, strides, dtype, device):
    """Random values laid out as given (stride 0: expanded, filled once)."""
    span = 1 + sum((n - 1) * s for n, s in zip(sizes, strides) if n > 0)
    if 0 in sizes:
        span = 0
    if dtype == torch.bool:
        base = torch.rand(span) < 0.5
    elif dtype.is_floating_point:
        base = torch.randn(span)
    else:
        base = torch.randint(-8, 8, (span,))
    return base.to(dtype=dtype, device=device).as_strided(sizes, strides)
'''

_HELPERS_NUMPY = '''

def _numpy_input(shape, strides, dtype):
    """Random values laid out as given (strides in elements)."""
    dtype = numpy.dtype(dtype)
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    rng = numpy.random.default_rng(0)
    if dtype == numpy.bool_:
        base = rng.random(span) < 0.5
    elif dtype.kind == "f":
        base = rng.standard_normal(span).astype(dtype)
    else:
        base = rng.integers(-8, 8, span).astype(dtype)
    return numpy.lib.stride_tricks.as_strided(
        base, shape, tuple(s * dtype.itemsize for s in strides))
'''


def _kinds(descriptions):
    kinds = set()
    for d in descriptions:
        if d[0] == "list":
            kinds |= _kinds(d[1])
        kinds.add(d[0])
    return kinds


def repro_script(definition, function_name, descriptions=None):
    """The reproducer of the fusion `definition` defines (as `function_name`), with inputs made
    from `descriptions` (describe_input of each; None: the inputs were not given)."""
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:  # pragma: no cover
        torch_version = "not installed"
    kinds = _kinds(descriptions or [])
    lines = [
        "# Loom reproducer: the fusion's definition (nvFuser's direct-binding form), then inputs",
        "# laid out like the ones given (random values), then the run.",
        f"# loom version: {__version__}; torch version: {torch_version}",
        "import torch",
    ]
    if "numpy" in kinds:
        lines.append("import numpy")
    lines.append("from loom.direct import FusionDefinition, DataType")
    script = "\n".join(lines) + "\n"
    if "torch" in kinds:
        script += _HELPERS_TORCH
    if "numpy" in kinds:
        script += _HELPERS_NUMPY
    script += "\n\n" + definition + "\n\nwith FusionDefinition() as fd:\n"
    script += f"    {function_name}(fd)\n\n"
    if descriptions is None:
        script += "inputs = []  # the inputs were not given\n"
    else:
        script += "inputs = [\n" + "".join(f"    {_input_line(d)},\n" for d in descriptions)
        script += "]\n"
    script += "outputs = fd.execute(inputs)\n"
    return script
