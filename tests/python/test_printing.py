# SPDX-License-Identifier: Apache-2.0
# print(fd): the fusion as a Python function in nvFuser's direct-binding form, which rebuilds a
# structurally equal fusion when executed, for every example fusion of examples/ and for hand
# schedules and sharding; where the form cannot say something, a rebuild from the text form
# with the reason.
import os
import pathlib
import re

import pytest
import torch

import loom
import loom.direct as nvfuser
from conftest import check_captured_python_definition
from loom import _C
from loom.direct import DataType, FusionDefinition, ParallelType, translate_fusion

ROOT = pathlib.Path(os.environ.get("LOOM_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
EXAMPLES = sorted((ROOT / "examples").rglob("*.fus"))
# The inline positions of this hand schedule are its own (not inline_most's), which nvFuser's
# form has no call for.
TEXT_FORM = {"scheduled/layer_norm.fus": "inline positions"}


def test_the_examples_are_found():
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_every_example_rebuilds_from_its_printed_definition(path):
    fusion = _C.parse_fusion(path.read_text(), str(path))
    name = str(path.relative_to(ROOT / "examples"))
    check_captured_python_definition(fusion, allow_text_form=name in TEXT_FORM)
    text = translate_fusion(fusion)
    if name in TEXT_FORM:
        assert "fd.define_from_text(" in text and TEXT_FORM[name] in text
    else:
        assert "define_from_text" not in text and "fd.ops." in text


def test_the_form_is_nvfusers():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1, 4], contiguity=[True, None, False],
                             dtype=DataType.Half, stride_order=[0, 1, 2])
        s = fd.define_scalar(dtype=DataType.Double)
        y = fd.ops.add(fd.ops.cast(x, DataType.Float), s)
        fd.add_output(fd.ops.sum(y, dims=[2]))
    text = str(fd)
    lines = text.split("\n")
    # nvFuser's direct bindings: nvfuser_fusion, tensors tv<n> and scalars c<n> counted apart,
    # each by nvFuser's own counter: c5 because x's three sizes (c0-c2), the fusion's zero (c3)
    # and one (c4, for the size-1 dim) come first, and a scalar Loom made (the cast) is numbered past
    # every one nvFuser would have made; a reduction names its output's dtype and
    # leaves keepdim=False out, as nvFuser's printer.
    assert lines[0] == "def nvfuser_fusion(fd : FusionDefinition) -> None :"
    assert lines[1:] == [
        "    tv0 = fd.define_tensor(shape=[-1, 1, 4], contiguity=[True, None, False], "
        "dtype=DataType.Half, is_cpu=False, stride_order=[0, 1, 2])",
        "    c5 = fd.define_scalar(None, dtype=DataType.Double)",
        "    tv1 = fd.ops.cast(tv0, dtype=DataType.Float)",
        "    c7 = fd.ops.cast(c5, dtype=DataType.Float)",
        "    tv2 = fd.ops.add(tv1, c7)",
        "    tv3 = fd.ops.sum(tv2, dims=[2], dtype=DataType.Float)",
        "    fd.add_output(tv3)",
        "",
    ]
    assert fd.repr() == text == repr(fd)


def test_names_are_nvfusers_counters():
    # Tensors keep the number of their making (tv6 is made after tv4 and tv5 though printed
    # before them: exprs print producers first, following the outputs); a constant is defined
    # before its first use and numbered by nvFuser's counter (c7: the six sizes and the zero).
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        b = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        c = fd.define_scalar(3.0)
        s = fd.ops.sum(fd.ops.mul(fd.ops.add(a, b), c), [-1], False, DataType.Float)
        fd.add_output(s)
    assert str(fd) == """def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.ops.add(tv0, tv1)
    c7 = fd.define_scalar(3.00000, dtype=DataType.Double)
    tv3 = fd.ops.mul(tv2, c7)
    tv4 = fd.ops.sum(tv3, dims=[2], dtype=DataType.Float)
    fd.add_output(tv4)
"""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True])
        t1 = fd.define_tensor(sizes=[1, 4, 1], strides=[4, 1, 1])
        t2 = fd.define_tensor(sizes=[2, 1, 4], strides=[4, 4, 1])
        t3 = fd.ops.squeeze(t1, [0, -1])
        t5 = fd.ops.sum(fd.ops.squeeze(t2, [-2]), [0])
        fd.add_output(fd.ops.mul(fd.ops.mul(t0, t3), t5))
    body = str(fd).split("\n")[4:9]
    assert body == [
        "    tv3 = fd.ops.squeeze(tv1, dims=[0, 2])",
        "    tv6 = fd.ops.mul(tv0, tv3)",
        "    tv4 = fd.ops.squeeze(tv2, dims=[1])",
        "    tv5 = fd.ops.sum(tv4, dims=[0], dtype=DataType.Float)",
        "    tv7 = fd.ops.mul(tv6, tv5)",
    ]
    check_captured_python_definition(fd.fusion)


def test_constants_print_all_the_digits_six_would_lose():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.mul(fd.ops.add(x, 1e-5), 0.7978845608028654))
    text = str(fd)
    assert "fd.define_scalar(1.00000e-05, dtype=DataType.Double)" in text
    assert "fd.define_scalar(0.7978845608028654, dtype=DataType.Double)" in text
    check_captured_python_definition(fd.fusion)


def test_fusion_ids_follow_the_structure():
    def define(fd):
        x = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.exp(x))

    with FusionDefinition() as a:
        define(a)
    with FusionDefinition() as b:
        define(b)
    with FusionDefinition() as c:
        x = c.define_tensor(shape=[-1], contiguity=True)
        c.add_output(c.ops.log(x))
    assert a.id() == b.id() != c.id()
    assert str(a) == str(b) != str(c)


def test_constants_keep_their_values_and_types():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Half)
        i = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int32)
        f32 = fd.define_scalar(0.1, dtype=DataType.Float)
        n = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.add(x, float("inf")))
        fd.add_output(fd.ops.where(fd.ops.isnan(x), float("nan"), x))
        fd.add_output(fd.ops.mul(i, -7))
        fd.add_output(fd.ops.add(x, fd.ops.mul(f32, 3.0)))   # a Float constant in scalar math
        fd.add_output(fd.ops.mul(x, fd.ops.div(1, n)))       # integer true division
        fd.add_output(fd.ops.gt(x, True))
    text = str(fd)
    assert 'float("inf")' in text and 'float("nan")' in text
    # nvFuser's form of a constant: six digits and the point (%#g), all the digits a value needs
    # where six would change it.
    assert "fd.define_scalar(0.100000, dtype=DataType.Float)" in text
    assert "fd.define_scalar(3.00000, dtype=DataType.Double)" in text
    check_captured_python_definition(fd.fusion)
    x = torch.randn(5).half()
    x[0] = float("nan")
    i = torch.arange(5, dtype=torch.int32)
    fd.validate([x, i, 4])


def test_hand_schedule_and_sharding_print_as_calls():
    mesh = nvfuser.multidevice.DeviceMesh([0])
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        y = fd.ops.neg(x)
        z = fd.ops.exp(y)
        fd.add_output(z)
        x.set_device_mesh(mesh)
        x.split(0, 1, inner_split=False)
        x.axis(0).parallelize(ParallelType.mesh_x)
        z.merge(0).split(0, 128)
        z.axis(0).parallelize(ParallelType.grid_x)
        z.axis(1).parallelize(ParallelType.block_x)
        nvfuser.propagate_transforms(z, [y])
        nvfuser.parallelize_all_like(z, [y])
        y.set_memory_type(nvfuser.MemoryType.shared)
        logical = z.get_logical_domain()
        z.set_allocation_domain([logical[1], logical[0]], True)
    text = str(fd)
    for call in ("tv0.set_device_mesh(DeviceMesh([0]))", "tv0.outer_split(0, 1)",
                 "tv0.axis(0).parallelize(ParallelType.mesh_x)", ".merge(0, 1)", ".split(0, 128)",
                 "axis(1).parallelize(ParallelType.block_x)", "set_memory_type(MemoryType.shared)",
                 "set_allocation_domain([tv2.get_logical_domain()[1], tv2.get_logical_domain()[0]]"):
        assert call in text, call
    check_captured_python_definition(fd.fusion)


def test_inline_most_prints_when_it_gives_the_positions():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        out = fd.ops.add(fd.ops.mul(x, 2.0), 1.0)
        fd.add_output(out)
        out.merge(0).split(0, 128)
        out.axis(0).parallelize(ParallelType.grid_x)
        nvfuser.propagate_transforms(out)
        nvfuser.parallelize_all_like(out)
        nvfuser.inline_most(fd.fusion)
    assert str(fd).rstrip().endswith("inline_most(fd.fusion)")
    check_captured_python_definition(fd.fusion)


# An rFactor rewrites the reduction: no fd.ops call makes it, so the definition rebuilds the
# fusion from the text form and says why; the rebuilt fusion is the same.
@pytest.mark.text_form_definition
def test_what_the_form_cannot_say_rebuilds_from_the_text_form():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        s = fd.ops.sum(x, [1])
        fd.add_output(s)
        s.split(1, 8)
        s.rfactor([1])
    text = str(fd)
    assert "fd.define_from_text(" in text
    assert re.search(r"# Loom: '.*sum.*' is not a reduction fd.ops makes", text)
    check_captured_python_definition(fd.fusion, allow_text_form=True)
    x = torch.randn(3, 40)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.sum(1), rtol=1e-5, atol=1e-5)


def test_define_from_text_needs_an_empty_definition():
    with FusionDefinition() as fd:
        fd.define_tensor(shape=[-1], contiguity=True)
    with pytest.raises(loom.UserError, match="has a fusion already"):
        fd.define_from_text("inputs:\noutputs:\n")


def test_outputs_returned_and_updated_in_place_print_as_added():
    """An output added plainly, in place (alias_input) and plainly again, and an input added as
    an output (nvFuser's test_returning_aliased_outputs): print(fd) has every add_output, so
    its definition returns the same tensors (it printed the in-place one only)."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t4 = fd.ops.where(fd.ops.gt(t0, 0.0), t0, 0.0)
        fd.add_output(t4)
        fd.add_output(t4, t0)
        fd.add_output(t4)
        fd.add_output(t0)
    text = repr(fd)
    assert text.count("fd.add_output(") == 4, text
    x = torch.randn(3, 4)
    want = fd.execute([x.clone()])
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    got = again.execute([x.clone()])
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
