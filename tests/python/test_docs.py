# SPDX-License-Identifier: Apache-2.0
# Every ```python block of docs/python.md runs, so the tutorial is code that works.
import os
import pathlib
import re

import pytest

DOC = pathlib.Path(os.environ.get("LOOM_SOURCE_DIR", pathlib.Path(__file__).parents[2])) / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_blocks():
    assert len(BLOCKS) == 8


# Blocks 5 and 6 apply a scheduler by hand: scheduled fusions print as the text form.
@pytest.mark.parametrize("index", [
    pytest.param(i, marks=pytest.mark.text_form_definition) if i in (5, 6) else i
    for i in range(len(BLOCKS))])
def test_block_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC}:block{index}", "exec"), {})
    out = capsys.readouterr().out
    if index == 0:
        assert "__global__" in out and "inputs:" in out and "def nvfuser_fusion(" in out
        assert "fd.ops.broadcast_in_dim(tv1, shape=[c0, c1], broadcast_dims=[1])" in out
    if index == 1:
        assert "tv3 = fd.ops.sum(tv2, dims=[1], dtype=DataType.Float)" in out
    if index == 2:
        assert "in place: step 0 stores T" in out
    if index == 4:
        assert "blockIdx.x" in out
    if index == 5:
        assert "Scheduler pointwise rejected the fusion" in out
    if index == 6:
        assert "Pointwise: 1-D break_point=0" in out
