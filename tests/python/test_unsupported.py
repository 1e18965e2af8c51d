# SPDX-License-Identifier: Apache-2.0
# nvFuser names Loom lacks: every one of the list (_unsupported.py) raises NotSupportedError
# naming it wherever nvFuser has it (module-level names import as stand-ins), and
# docs/python.md's table is the list's; version().
import os
import pathlib
import re

import pytest
import torch

import loom
import loom.direct as nvfuser
from loom.direct import (
    DataType,
    FusionDefinition,
    LoadStoreOpType,
    MemoryType,
    ParallelType,
    SchedulerType,
)
from loom.direct._unsupported import UNSUPPORTED, markdown

DOC = pathlib.Path(os.environ.get("LOOM_SOURCE_DIR", pathlib.Path(__file__).parents[2])) / "docs" / "python.md"


def test_docs_table_is_generated_from_the_list():
    text = DOC.read_text()
    m = re.search(r"<!-- BEGIN generated: python3 -m loom.direct._unsupported -->\n(.*?)"
                  r"<!-- END generated -->", text, re.S)
    assert m, "docs/python.md lacks the generated table's markers"
    assert m.group(1) == markdown(), (
        "docs/python.md's table is stale: paste the output of "
        "`python3 -m loom.direct._unsupported` between its markers")
    for scope, names in UNSUPPORTED.items():
        for name in names:
            assert f"{name}" in m.group(1)


def test_module_level_names_import_as_stand_ins():
    from loom.direct import CompileParams, execute_with_dtensors  # noqa: F401 - import works
    for name in UNSUPPORTED["loom.direct"]:
        stand_in = getattr(nvfuser, name)
        assert f"loom.direct.{name}" in repr(stand_in)
        with pytest.raises(loom.NotSupportedError,
                           match=f"loom.direct.{name} is not supported by Loom"):
            stand_in()
        with pytest.raises(loom.NotSupportedError, match=f"loom.direct.{name} "):
            stand_in.anything
        assert not hasattr(stand_in, "anything")
    with pytest.raises(AttributeError, match="has no attribute 'NotAName'"):
        nvfuser.NotAName
    with pytest.raises(ImportError):
        from loom.direct import NotAName  # noqa: F401


@pytest.fixture
def fd():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.neg(x))
    return fd


def test_every_listed_name_raises_where_nvfuser_has_it(fd):
    for name in UNSUPPORTED["FusionDefinition"]:
        with pytest.raises(loom.NotSupportedError, match=f"fd.{name} is not supported by Loom"):
            getattr(fd, name)
        assert not hasattr(fd, name)
    for name in UNSUPPORTED["fd.ops"]:
        with pytest.raises(loom.NotSupportedError, match=f"fd.ops.{name} is not supported"):
            getattr(fd.ops, name)
    for scope, enum in (("DataType", DataType), ("ParallelType", ParallelType),
                        ("MemoryType", MemoryType), ("SchedulerType", SchedulerType),
                        ("LoadStoreOpType", LoadStoreOpType)):
        for name in UNSUPPORTED[scope]:
            with pytest.raises(loom.NotSupportedError, match=f"{scope}.{name} is not supported"):
                getattr(enum, name)
    for name in UNSUPPORTED["FusionDefinition.execute"]:
        with pytest.raises(loom.NotSupportedError, match=f"execute: {name}=True is not supported"):
            fd.execute([torch.randn(3)], **{name: True})
    fec = nvfuser.FusionExecutorCache(fd.fusion)
    for name in UNSUPPORTED["FusionExecutorCache"]:
        with pytest.raises(loom.NotSupportedError, match=f"FusionExecutorCache.{name} "):
            getattr(fec, name)
    for name in UNSUPPORTED["fd.sched"]:
        with pytest.raises(loom.NotSupportedError, match=f"fd.sched.{name} is not supported"):
            getattr(fd.sched, name)
    (x,) = fd.fusion.inputs()
    for name in UNSUPPORTED["Val"]:
        with pytest.raises(loom.NotSupportedError, match=f"Val.{name} is not supported"):
            getattr(x, name)()
    covered = {"loom.direct", "FusionDefinition", "fd.ops", "DataType", "ParallelType",
               "LoadStoreOpType",
               "MemoryType", "SchedulerType", "FusionDefinition.execute", "FusionExecutorCache", "Val",
               "fd.sched"}
    assert set(UNSUPPORTED) == covered, "a scope of the list is not tested here"


def test_unknown_names_stay_attribute_errors(fd):
    with pytest.raises(AttributeError, match="no attribute 'not_a_method'") as info:
        fd.not_a_method
    assert not isinstance(info.value, loom.NotSupportedError)


def test_what_loom_has_instead(fd):
    (x,) = fd.fusion.inputs()
    assert x.size(0).is_symbolic() and x.is_tensor() and not x.size(0).is_tensor()
    assert [str(s) for s in x.shape()] == [str(x.size(0))]
    assert not x.has_root()
    assert nvfuser.compute_tensor_descriptor([4, 1, 6], [6, 6, 1]) == ([True, None, True],
                                                                       [2, 1, 0])
    assert nvfuser.compute_tensor_descriptor([4, 6], [1, 4]) == ([True, True], [0, 1])


def test_version():
    assert nvfuser.version() == loom.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", nvfuser.version())
