# SPDX-License-Identifier: Apache-2.0
"""``print(fd)``: the fusion as a Python function in nvFuser's direct-binding form.

The translation (python/csrc/translate.cpp) writes one ``fd.ops`` call per expr and the
schedule after it. Every text it returns is checked here before anyone sees it: it is executed
on a new FusionDefinition and the result compared with the fusion (structural equality,
include/loom/ir/equality.h). Where the translation cannot express something, or the check finds
a difference, the function rebuilds the fusion from Loom's text form instead
(``fd.define_from_text``), with a comment saying why, so the printed definition always
rebuilds the same fusion.
"""

import re

from .. import Error, _C

_LOCATION = re.compile(r"^\S+:\d+: ")


def _reason(error):
    """A C++ error's text without the file:line it comes with."""
    return _LOCATION.sub("", str(error)).strip()


def _rebuild(text, function_name):
    """The FusionDefinition that executing `text` and calling `function_name` makes."""
    from . import DataType, FusionDefinition

    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(compile(text, "<loom fusion definition>", "exec"), namespace)
    fd = FusionDefinition()
    namespace[function_name](fd)
    return fd


def difference(text, function_name, fusion):
    """None when `text` rebuilds `fusion` (structurally), else what differs."""
    try:
        rebuilt = _rebuild(text, function_name)
    except Exception as e:  # noqa: BLE001 - any failure means the text does not rebuild it
        return f"the translation does not run ({type(e).__name__}: {_reason(e)})"
    return fusion.structural_difference(rebuilt.fusion)


def _text_form_definition(fusion, function_name, why):
    body = fusion.to_text().rstrip("\n")
    comment = "\n".join(
        "    # " + line
        for line in (
            f"Loom: {why};",
            "nvFuser's form cannot say this, so the fusion is rebuilt from Loom's text form",
            "(docs/text-format.md).",
        )
    )
    return (
        f"def {function_name}(fd : FusionDefinition) -> None:\n"
        f"{comment}\n"
        f'    fd.define_from_text("""\n{body}\n""")\n'
    )


def python_definition(fusion, function_name, drawn=(), returns=None, derived=()):
    """(text, how): the definition, and None when it is in nvFuser's form, else the reason it
    rebuilds the fusion from the text form. `drawn`: names of the seed and offset inputs of
    random ops defined without them, left out as the definition left them out (the printed
    random ops draw them again at execute). `returns`: the names execute() returns, one per
    add_output without alias_input in call order (None: the fusion's outputs). `derived`:
    (scalar, tensor) names of inputs read from tensor inputs (sdpfa_bwd's seed and offset),
    printed as the tensors."""
    try:
        text = _C.translate_fusion(fusion, function_name, list(drawn),
                                   None if returns is None else list(returns),
                                   [tuple(p) for p in derived])
    except Error as e:
        why = _reason(e)
    else:
        why = difference(text, function_name, fusion)
        if why is None:
            return text, None
        why = f"the nvFuser form did not rebuild the same fusion ({why})"
    return _text_form_definition(fusion, function_name, why), why
