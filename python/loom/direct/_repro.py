# SPDX-License-Identifier: Apache-2.0
"""Reproducers: a Python script that rebuilds a fusion from Loom's text form and runs it on
random inputs laid out like the ones that failed. execute() attaches one to every error it
raises (``error.repro``, and a note on Python 3.11+)."""

_TORCH_DTYPES = {
    "torch.float64", "torch.float32", "torch.float16", "torch.bfloat16",
    "torch.int64", "torch.int32", "torch.bool",
}


def _describe_input(i, x):
    shape = getattr(x, "shape", None)
    if shape is not None and hasattr(x, "stride") and hasattr(x, "dtype"):  # torch
        dtype = str(x.dtype)
        device = str(x.device)
        strides = tuple(x.stride())
        sizes = tuple(shape)
        if dtype not in _TORCH_DTYPES:
            return f"    None,  # input {i}: a tensor of {dtype}, which Loom does not take"
        if dtype == "torch.bool":
            fill = "torch.rand(size) < 0.5"
        elif dtype.startswith("torch.int"):
            fill = "torch.randint(-8, 8, size)"
        else:
            fill = "torch.randn(size)"
        return (
            f"    _make({sizes}, {strides}, {dtype}, {device!r}, lambda size: {fill}),"
        )
    if shape is not None:  # numpy and other DLPack producers
        return (
            f"    None,  # input {i}: a {type(x).__name__} of shape {tuple(shape)} and dtype "
            f"{getattr(x, 'dtype', '?')}"
        )
    return f"    {x!r},"


def repro_script(fd, inputs=None):
    text = fd.fusion.to_text()
    lines = [
        "# Loom reproducer: the fusion in Loom's text form and inputs laid out like the ones",
        "# given. Run with python; or save the text as repro.fus and run `loom run repro.fus`.",
        "import torch",
        "from loom.direct import FusionDefinition",
        "",
        "",
        "def _make(sizes, strides, dtype, device, fill):",
        "    # stride 0 (an expanded dim): one element, expanded after filling",
        "    base = [1 if st == 0 else sz for sz, st in zip(sizes, strides)]",
        "    t = torch.empty_strided(base, strides, dtype=dtype, device=device)",
        "    t.copy_(fill(base).to(dtype))",
        "    return t.expand(sizes)",
        "",
        "",
        f"fd = FusionDefinition.from_text('''{text}''')",
    ]
    if inputs is None:
        lines.append("inputs = []  # the inputs were not given")
    else:
        lines.append("inputs = [")
        lines.extend(_describe_input(i, x) for i, x in enumerate(inputs))
        lines.append("]")
    lines.append("outputs = fd.execute(inputs)")
    return "\n".join(lines) + "\n"
