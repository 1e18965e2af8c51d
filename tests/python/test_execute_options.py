# SPDX-License-Identifier: Apache-2.0
# execute()'s options: _enable_options and _disable_options mapped onto Loom's dump, debug and pass
# names (unknown names: an error listing the known ones), capture_debug_output, and LOOM_DUMP
# output reaching Python's sys.stdout (redirect_stdout, pytest's capture) with LOOM_DUMP=help.
import contextlib
import io
import os
import subprocess
import sys

import pytest
import torch

import loom
from loom import _C
from loom.direct import DataType, FusionDefinition


def pointwise():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.relu(fd.ops.add(fd.ops.mul(x, 2.0), 1.0)))
    return fd


def test_dump_names_print_to_sys_stdout():
    fd = pointwise()
    x = torch.randn(4, 8)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        (out,) = fd.execute([x], _enable_options=["cuda_kernel", "segments"])
    text = buf.getvalue()
    assert "__global__ void" in text
    assert "segmented fusion: 1 segment(s)" in text
    torch.testing.assert_close(out, torch.relu(x * 2 + 1))


def test_dumps_reach_pytests_capture(capsys):
    fd = pointwise()
    fd.execute([torch.randn(2, 3)], _enable_options=["scheduler_params"])
    assert "Pointwise" in capsys.readouterr().out


def test_capture_debug_output_keeps_the_calls_dumps():
    fd = pointwise()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fd.execute([torch.randn(4, 8)], _enable_options=["cuda_kernel"],
                   capture_debug_output=True)
    assert buf.getvalue() == ""  # captured, not printed
    assert "__global__ void" in fd.debug_output()
    # Each set of options compiles once: the same options again only launch, and dump nothing.
    fd.execute([torch.randn(4, 8)], _enable_options=["cuda_kernel"], capture_debug_output=True)
    assert fd.debug_output() == ""
    fd.execute([torch.randn(4, 8)])
    assert fd.debug_output() is None


def test_kernel_ir_of_one_pass_and_a_disabled_pass():
    fd = pointwise()
    fd.execute([torch.randn(4, 8)], _enable_options=["kernel_ir(simplify)"],
               capture_debug_output=True)
    with_pass = fd.debug_output()
    assert "=== kernel IR after simplify ===" in with_pass
    assert "after indexing" not in with_pass
    # nvFuser's name for the pass: the pass does not run, so its dump does not show.
    fd.execute([torch.randn(4, 8)], _enable_options=["kernel_ir(simplify)"],
               _disable_options=["expr_simplify"], capture_debug_output=True)
    assert "after simplify" not in fd.debug_output()


def test_a_disabled_pass_still_computes_the_same():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True)
        var, mean = fd.ops.var_mean(x, [1])
        fd.add_output(var)
        fd.add_output(mean)
    x = torch.randn(6, 40)
    outs = fd.validate([x], _disable_options=["translate_welford", "hoist_indices",
                                               "predicate_elimination"])
    torch.testing.assert_close(outs[0], x.var(1), rtol=1e-4, atol=1e-4)


def test_poison_outputs_and_debug_names():
    fd = pointwise()
    x = torch.randn(3, 5)
    (out,) = fd.execute([x], _enable_options=["poison_outputs", "verify_ir", "verify_kernel_ir"])
    torch.testing.assert_close(out, torch.relu(x * 2 + 1))


def test_unknown_names_list_the_known_ones():
    fd = pointwise()
    x = torch.randn(2, 2)
    with pytest.raises(loom.UserError, match="_enable_options names 'no_such_option', which Loom "
                       "does not have.*LOOM_DUMP names \\(fusion_ir, .*cuda_kernel.*LOOM_DEBUG "
                       "names \\(verify_kernel_ir, verify_ir\\) and poison_outputs"):
        fd.execute([x], _enable_options=["no_such_option"])
    with pytest.raises(loom.UserError, match="_disable_options names 'no_such_pass', which "
                       "Loom does not have.*optional lowering passes \\(eliminate_predicates, "
                       "unswitch, simplify, hoist_indices\\).*expr_simplify, index_hoist"):
        fd.execute([x], _disable_options=["no_such_pass"])
    # nvFuser's options that change results are not taken as no-ops.
    with pytest.raises(loom.UserError, match="_disable_options names 'fma'"):
        fd.execute([x], _disable_options=["fma"])
    with pytest.raises(loom.UserError, match="the lowering pass 'indexing' cannot be disabled"):
        fd.execute([x], _disable_options=["indexing"])
    with pytest.raises(loom.UserError, match="missing '\\)' in 'kernel_ir\\(x'"):
        fd.execute([x], _enable_options=["kernel_ir(x"])
    names = _C.execute_option_names()
    assert "cuda_kernel" in names["enable"] and "poison_outputs" in names["enable"]
    assert "simplify" in names["disable"] and "index_hoist" in names["disable"]


def _run_with_env(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=300)


SCRIPT = """
import contextlib, io, torch
from loom.direct import FusionDefinition
with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1], contiguity=True)
    fd.add_output(fd.ops.exp(x))
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    fd.execute([torch.randn(4)])
print("REDIRECTED", "__global__" in buf.getvalue(), "LOOM_DUMP names" in buf.getvalue())
"""


def test_loom_dump_from_the_environment_reaches_sys_stdout():
    r = _run_with_env(SCRIPT, LOOM_DUMP="cuda_kernel")
    assert r.returncode == 0, r.stderr
    assert "REDIRECTED True False" in r.stdout
    assert "__global__" not in r.stdout.replace("REDIRECTED", "")  # nothing past the redirect


def test_loom_dump_help_lists_the_names():
    r = _run_with_env(SCRIPT, LOOM_DUMP="help")
    assert r.returncode == 0, r.stderr
    assert "REDIRECTED False True" in r.stdout
    r = _run_with_env(SCRIPT.replace("redirect_stdout(buf)", "nullcontext()"), LOOM_DUMP="help")
    for name in ("fusion_ir(input|pass)", "cuda_kernel", "host_program"):
        assert f"  {name}" in r.stdout
    r = _run_with_env(SCRIPT, LOOM_DUMP="cuda_kernal")
    assert r.returncode != 0
    assert "LOOM_DUMP: unknown option 'cuda_kernal'" in r.stderr
    assert "LOOM_DUMP=help says what each prints" in r.stderr


def test_options_apply_to_the_call_only():
    """The options of one call are not seen by a call without them (ScopedOptions is per call)."""
    fd = pointwise()
    fd.execute([torch.randn(2, 2)], _enable_options=["cuda_kernel"], capture_debug_output=True)
    assert "__global__" in fd.debug_output()
    with FusionDefinition() as other:
        x = other.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Double)
        other.add_output(other.ops.neg(x))
    other.execute([torch.randn(3, dtype=torch.float64)], capture_debug_output=True)
    assert other.debug_output() == ""


PLAN_SCRIPT = """
import hashlib, torch, loom
from loom.direct import FusionDefinition
with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], contiguity=True)
    fd.add_output(fd.ops.sum(fd.ops.exp(x), [1]))
x = torch.linspace(-1, 1, 64 * 33).reshape(64, 33)
out = fd.execute([x])[0]
torch.testing.assert_close(out, torch.exp(x.double()).sum(1).float())
print("PLAN_HITS", fd.fec.plan_hits)
print("SCHEDULERS", fd.last_schedulers())
print("CODE", hashlib.sha256(fd.last_cuda_code().encode()).hexdigest())
print("PROGRAM", fd.host_program().splitlines()[1].strip())
out = fd.execute([x])[0]  # a hit of the runtime built for the planned run
torch.testing.assert_close(out, torch.exp(x.double()).sum(1).float())
print("RUNTIMES", fd.fec.num_runtimes, fd.fec.hits)
"""


def _lines(stdout):
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in stdout.splitlines()
            if " " in line}


def test_plan_cache_warm_start_from_python(tmp_path):
    # The first process compiles and stores the plan; the second runs it (the same outputs), and
    # its last_* methods answer as the cold process's did (the runtime is built on first ask).
    env = dict(LOOM_CACHE_DIR=str(tmp_path), LOOM_DEBUG="")  # the plan cache's default: on
    cold = _run_with_env(PLAN_SCRIPT, **env)
    assert cold.returncode == 0, cold.stderr
    assert list((tmp_path / "plans").glob("*.plan"))
    warm = _run_with_env(PLAN_SCRIPT, **env)
    assert warm.returncode == 0, warm.stderr
    c, w = _lines(cold.stdout), _lines(warm.stdout)
    assert c["PLAN_HITS"] == "0" and w["PLAN_HITS"] == "1", warm.stdout
    for key in ("SCHEDULERS", "CODE", "PROGRAM", "RUNTIMES"):
        assert w[key] == c[key], (key, cold.stdout, warm.stdout)
    off = _run_with_env(PLAN_SCRIPT, LOOM_PLAN_CACHE="0", **env)
    assert off.returncode == 0, off.stderr
    assert _lines(off.stdout)["PLAN_HITS"] == "0"


REQUIREMENT_SCRIPT = """
import torch
from loom.direct import FusionDefinition, DataType
with FusionDefinition() as loose:
    t = loose.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
    loose.add_output(loose.ops.expand(loose.ops.broadcast(t, [False, False, True]), [-1, -1, 2]))
print("LOOSE", tuple(loose.execute([torch.randn(3, 3)])[0].shape))
with FusionDefinition() as fd:
    t = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
    fd.add_output(fd.ops.broadcast_in_dim(t, shape=[2, 2, 2], broadcast_dims=[0, 1]))
try:
    print("STRICT", tuple(fd.execute([torch.randn(3, 3)])[0].shape))
except Exception as e:
    print("STRICT", str(e).splitlines()[0])
"""


def test_plans_of_fusions_differing_in_size_requirements_are_kept_apart(tmp_path):
    # broadcast_in_dim to constant sizes requires its run-time dims to have them; broadcast and
    # expand to -1 does not, and the text form (the plan key) is otherwise the same. The plan the
    # loose fusion stored ran the strict one without its check: a [3, 3, 2] output for a shape
    # of [2, 2, 2].
    env = dict(LOOM_CACHE_DIR=str(tmp_path), LOOM_DEBUG="")  # the plan cache's default: on
    r = _run_with_env(REQUIREMENT_SCRIPT, **env)
    assert r.returncode == 0, r.stderr
    lines = _lines(r.stdout)
    assert lines["LOOSE"] == "(3, 3, 2)", r.stdout
    assert "dimension 0 of T0 must have size 2" in lines["STRICT"], r.stdout


# nvFuser's names for features Loom lacks or always uses (its resize scheduler, TMA, the ID model,
# host IR lowering, ...) are accepted and change nothing, as nvFuser's tests pass them.
@pytest.mark.parametrize("enable, disable", [
    (["host_ir_lowering"], []),
    (["id_model", "kernel_lineinfo", "tma_pointwise"], ["resize_scheduler", "parallel_compile"]),
    ([], ["id_model", "kernel_reuse", "magic_zero"]),
])
def test_nvfuser_names_of_features_loom_lacks_change_nothing(enable, disable):
    fd = pointwise()
    x = torch.randn(3, 4)
    (out,) = fd.execute([x], _enable_options=enable, _disable_options=disable)
    torch.testing.assert_close(out, torch.relu(x * 2 + 1))
