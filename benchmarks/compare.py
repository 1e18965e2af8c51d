#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Merges the torch and Loom benchmark JSON files into the side-by-side table of the protocol.

This module is also the one place that knows the benchmark cases and their byte counts, so the
torch script, the future C++ harness's JSON and this table agree on names and TB/s. Standard
library only: it runs (and is tested) on machines without torch or a GPU.

    compare.py --torch torch.json [--loom loom.json] [--markdown] [--out table.txt]
"""

import argparse
import json
import sys
from dataclasses import dataclass

# Device-to-device copy on the H200, bytes read plus written (shared/docs/performance.md).
COPY_CEILING_TBPS = 4.26
# The goal on large cases: at least this fraction of the copy ceiling.
LARGE_CASE_GOAL_FRACTION = 0.90

TORCH_SCHEMA = "loom-bench-torch/1"
LOOM_SCHEMA = "loom-bench-loom/1"

DTYPE_BYTES = {"fp32": 4, "bf16": 2}
DTYPES = ("fp32", "bf16")


@dataclass(frozen=True)
class Case:
    """One benchmark case: an operation on a fixed input shape; dtype is chosen separately."""

    name: str  # stable id used in every JSON file
    op: str  # var_mean | layer_norm | rms_norm | softmax | gelu_tanh_bias | sum_dim0 | linear
    #          | linear_gelu_tanh
    #          | transpose | gelu_bias_t | copy | to_nhwc | bn_{fwd,bwd}_{nchw,nhwc}
    #          | layer_norm_bwd | rms_norm_bwd | index_add
    shape: tuple
    label: str  # what the table prints
    large: bool  # held to the 90%-of-ceiling goal

    def input_shapes(self):
        """Shapes of the tensors the case reads: the main input, then any per-column vectors."""
        if self.op in ("linear", "linear_gelu_tanh"):  # (m, k, n): x [m, k], w [n, k], bias [n]
            m, k, n = self.shape
            return [(m, k), (n, k), (n,)]
        if self.op == "index_add":  # shape is (T, H, V): x [V, H], ids [T] (int64), src [T, H]
            t, h, v = self.shape
            return [(v, h), (t,), (t, h)]
        if self.op.startswith("bn_"):  # shape is (N, C, H, W); channels last stored (N, H, W, C)
            data, c = self.bn_data_shape(), (self.shape[1],)
            return [data, c, c] if self.op.startswith("bn_fwd") else [data, data, c, c, c]
        if self.op.endswith("norm_bwd"):  # dy, x, (saved mean, rstd [R, 1],) weight
            rows, cols = (self.shape[0], 1), (self.shape[-1],)
            saved = [rows, rows] if self.op == "layer_norm_bwd" else []
            return [self.shape, self.shape] + saved + [cols]
        cols = (self.shape[-1],)
        extra = {"layer_norm": [cols, cols], "rms_norm": [cols], "gelu_tanh_bias": [cols],
                 "gelu_bias_t": [cols]}
        return [self.shape] + extra.get(self.op, [])

    def output_shapes(self):
        """Shapes of the tensors the case writes (what torch returns, keepdim=False)."""
        if self.op == "var_mean":
            return [self.shape[:-1], self.shape[:-1]]
        if self.op == "sum_dim0":
            return [self.shape[1:]]
        if self.op in ("linear", "linear_gelu_tanh"):
            return [(self.shape[0], self.shape[2])]
        if self.op == "index_add":
            return [(self.shape[2], self.shape[1])]
        if self.op in ("transpose", "gelu_bias_t"):
            return [(self.shape[1], self.shape[0])]
        if self.op == "to_nhwc":
            n, c, h, w = self.shape
            return [(n, h, w, c)]
        if self.op.endswith("norm_bwd"):  # dx, grad weight (, grad bias)
            cols = (self.shape[-1],)
            return [self.shape, cols] + ([cols] if self.op == "layer_norm_bwd" else [])
        if self.op.startswith("bn_"):  # y; or dx, grad weight, grad bias
            c = (self.shape[1],)
            return [self.bn_data_shape()] if self.op.startswith("bn_fwd") else [
                self.bn_data_shape(), c, c]
        return [self.shape]

    def bn_data_shape(self):
        """The batch-norm data tensor as Loom stores it: (N, H, W, C) for the NHWC cases."""
        n, c, h, w = self.shape
        return (n, h, w, c) if self.op.endswith("nhwc") else (n, c, h, w)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# Table order of shared/docs/performance.md. The small var_mean case (100 MB in fp32, 50 MB in bf16,
# close to the 60 MB L2) is the only one not held to the bandwidth goal.
CASES = (
    Case("var_mean_1x2048x12288", "var_mean", (1, 2048, 12288),
         "var_mean dim 2, [1, 2048, 12288]", False),
    Case("var_mean_16x2048x12288", "var_mean", (16, 2048, 12288),
         "var_mean dim 2, [16, 2048, 12288]", True),
    Case("layer_norm_16384x4096", "layer_norm", (16384, 4096), "layer_norm, [16384, 4096]", True),
    Case("rms_norm_16384x4096", "rms_norm", (16384, 4096), "rms_norm, [16384, 4096]", True),
    Case("softmax_16384x4096", "softmax", (16384, 4096), "softmax dim -1, [16384, 4096]", True),
    Case("gelu_tanh_bias_16384x4096", "gelu_tanh_bias", (16384, 4096),
         "gelu_tanh(x + bias), [16384, 4096]", True),
    Case("sum_dim0_16384x4096", "sum_dim0", (16384, 4096), "sum dim 0, [16384, 4096]", True),
    # Compute-bound (both sides call cuBLAS): held to torch's time, not to the bandwidth goal.
    Case("linear_8192x4096x16384", "linear", (8192, 4096, 16384),
         "linear [8192, 4096] x [16384, 4096]^T + bias", False),
    Case("linear_gelu_tanh_8192x4096x16384", "linear_gelu_tanh", (8192, 4096, 16384),
         "gelu_tanh(linear [8192, 4096] x [16384, 4096]^T + bias)", False),
    # The transpose scheduler (issue 37): x^T written contiguous, alone and behind bias + gelu.
    Case("transpose_8192x8192", "transpose", (8192, 8192), "x^T, [8192, 8192]", True),
    Case("transpose_16384x768", "transpose", (16384, 768), "x^T, [16384, 768]", True),
    Case("transpose_4096x12288", "transpose", (4096, 12288), "x^T, [4096, 12288]", True),
    Case("gelu_bias_t_8192x8192", "gelu_bias_t", (8192, 8192),
         "gelu_tanh(x + bias)^T, [8192, 8192]", True),
    Case("gelu_bias_t_16384x768", "gelu_bias_t", (16384, 768),
         "gelu_tanh(x + bias)^T, [16384, 768]", True),
    Case("gelu_bias_t_4096x12288", "gelu_bias_t", (4096, 12288),
         "gelu_tanh(x + bias)^T, [4096, 12288]", True),
    # The device's measured copy, what the transposes' bandwidth is compared with.
    Case("copy_8192x8192", "copy", (8192, 8192), "copy, [8192, 8192]", True),
    # NCHW -> NHWC at ResNet's stage shapes (7 x 7 and 14 x 14: the transpose scheduler's
    # merged dims).
    Case("to_nhwc_256x512x7x7", "to_nhwc", (256, 512, 7, 7), "NCHW->NHWC, [256, 512, 7, 7]", True),
    Case("to_nhwc_256x256x14x14", "to_nhwc", (256, 256, 14, 14),
         "NCHW->NHWC, [256, 256, 14, 14]", True),
    Case("to_nhwc_128x64x56x56", "to_nhwc", (128, 64, 56, 56), "NCHW->NHWC, [128, 64, 56, 56]",
         True),
    # The outer-persistent scheduler (issue 37): batch-norm of a ResNet-50 stage, both formats. Not
    # held to the bandwidth goal: 100 MB of fp32 does not fit on chip, so the statistics and the
    # normalization read the data twice (the fallback plan).
    Case("bn_fwd_nchw_32x256x56x56", "bn_fwd_nchw", (32, 256, 56, 56),
         "batch_norm fwd, NCHW [32, 256, 56, 56]", False),
    Case("bn_fwd_nhwc_32x256x56x56", "bn_fwd_nhwc", (32, 256, 56, 56),
         "batch_norm fwd, NHWC [32, 256, 56, 56]", False),
    Case("bn_bwd_nchw_32x256x56x56", "bn_bwd_nchw", (32, 256, 56, 56),
         "batch_norm bwd, NCHW [32, 256, 56, 56]", False),
    Case("bn_bwd_nhwc_32x256x56x56", "bn_bwd_nhwc", (32, 256, 56, 56),
         "batch_norm bwd, NHWC [32, 256, 56, 56]", False),
    # The inner-outer-persistent scheduler (issue 37): the backward of layer_norm and rms_norm.
    Case("layer_norm_bwd_16384x4096", "layer_norm_bwd", (16384, 4096),
         "layer_norm bwd, [16384, 4096]", True),
    Case("rms_norm_bwd_16384x4096", "rms_norm_bwd", (16384, 4096),
         "rms_norm bwd, [16384, 4096]", True),
    Case("layer_norm_bwd_65536x768", "layer_norm_bwd", (65536, 768),
         "layer_norm bwd, [65536, 768]", True),
    # Embedding backward (issue 30's atomic scatter_add): x.index_add(0, ids, src). Atomics, not
    # streaming: not held to the bandwidth goal.
    Case("index_add_32768x1024_into_50257", "index_add", (32768, 1024, 50257),
         "index_add dim 0, [32768, 1024] into [50257, 1024]", False),
)

# Host-side overhead: one fused 3-op pointwise expression on 1024 fp32 elements, wall time per call.
HOST_CASE = "pointwise3_1024"


def case_by_name(name):
    for case in CASES:
        if case.name == name:
            return case
    return None


def io_bytes(case, dtype):
    """Bytes moved by an ideal kernel: each input read once plus each output written once."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype '{dtype}' (expected one of {', '.join(DTYPES)})")
    elements = sum(_numel(s) for s in case.input_shapes() + case.output_shapes())
    ids = case.shape[0] if case.op == "index_add" else 0  # int64 whatever the dtype
    return (elements - ids) * DTYPE_BYTES[dtype] + ids * 8


def tbps(nbytes, us):
    """Achieved bandwidth in TB/s (10^12 bytes per second) of moving nbytes in us microseconds."""
    return nbytes / (us * 1e-6) / 1e12


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read the {what} JSON '{path}': {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"the {what} JSON '{path}' is not valid JSON: {e}") from e


def _positive_or_none(entry, key, where):
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"{where}: '{key}' must be a positive number of microseconds, got {value!r}")
    return float(value)


def _entries(doc, key, what):
    """The list of result entries of a JSON document: doc[key], or the document itself if a list."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        entries = doc.get(key, [])
        if isinstance(entries, list):
            return entries
    raise ValueError(f"the {what} JSON must be a list of entries or an object with a '{key}' list")


def index_results(doc, what, time_keys):
    """Maps (case, dtype) to the entry, checking names, dtypes, time fields and duplicates."""
    out = {}
    for i, entry in enumerate(_entries(doc, "results", what)):
        where = f"{what} results[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object, got {entry!r}")
        case, dtype = entry.get("case"), entry.get("dtype")
        if not isinstance(case, str) or not case:
            raise ValueError(f"{where}: missing 'case' (a name such as '{CASES[0].name}')")
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"{where} (case '{case}'): dtype {dtype!r} is not one of "
                             f"{', '.join(DTYPES)}")
        for key in time_keys:
            _positive_or_none(entry, key, f"{where} (case '{case}', {dtype})")
        if (case, dtype) in out:
            raise ValueError(f"{where}: case '{case}' {dtype} appears twice")
        out[(case, dtype)] = entry
    return out


def index_host(doc, what, time_keys):
    """Maps host-overhead case name to its entry (the optional 'host_overhead' list)."""
    if not isinstance(doc, dict):
        return {}
    out = {}
    for i, entry in enumerate(doc.get("host_overhead", [])):
        where = f"{what} host_overhead[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("case"), str):
            raise ValueError(f"{where}: expected an object with a 'case' name, got {entry!r}")
        for key in time_keys:
            _positive_or_none(entry, key, f"{where} (case '{entry['case']}')")
        out[entry["case"]] = entry
    return out


# Compile-time goals of performance.md: a cold compile of a normalization fusion, and a warm start
# from the disk cache, in milliseconds.
COMPILE_GOAL_MS = {"cold": 150.0, "warm": 2.0}


def _fmt_ms(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return str(value)


def _fmt(value, spec, suffix=""):
    return "-" if value is None else format(value, spec) + suffix


def build_rows(torch_doc, loom_doc, warn=None):
    """The side-by-side rows, one per (case, dtype): known cases in table order, then unknown ones.

    Each row is a dict of raw numbers (None where missing) plus the printed cells.
    """
    torch_idx = index_results(torch_doc, "torch", ("eager_us", "compile_us")) if torch_doc else {}
    loom_idx = index_results(loom_doc, "loom", ("loom_us",)) if loom_doc else {}

    keys = [(c.name, d) for d in DTYPES for c in CASES]
    for key in list(torch_idx) + list(loom_idx):
        if key not in keys:
            keys.append(key)
            if warn and case_by_name(key[0]) is None:
                warn(f"case '{key[0]}' is not in the case table of compare.py")

    rows = []
    for name, dtype in keys:
        t = torch_idx.get((name, dtype), {})
        lm = loom_idx.get((name, dtype), {})
        if not t and not lm:
            continue
        case = case_by_name(name)
        nbytes = io_bytes(case, dtype) if case else (lm.get("bytes") or t.get("bytes"))
        loom_us = _positive_or_none(lm, "loom_us", name)
        eager_us = _positive_or_none(t, "eager_us", name)
        compile_us = _positive_or_none(t, "compile_us", name)
        loom_tbps = tbps(nbytes, loom_us) if (loom_us and nbytes) else None
        fraction = loom_tbps / COPY_CEILING_TBPS if loom_tbps is not None else None
        ratio = compile_us / loom_us if (compile_us and loom_us) else None
        compile_tbps = tbps(nbytes, compile_us) if (compile_us and nbytes) else None
        goal = None
        check = lm.get("check")
        if check in ("FAIL", "ERROR"):
            # loom_bench found wrong outputs (FAIL) or could not run the case (ERROR).
            goal = check
        elif loom_us is not None:
            misses = []
            if ratio is not None and ratio < 1.0:
                misses.append("slower")
            if case and case.large and fraction is not None and fraction < LARGE_CASE_GOAL_FRACTION:
                misses.append("bw")
            goal = ",".join(misses) or "ok"
        rows.append({
            "case": name, "dtype": dtype, "bytes": nbytes, "loom_us": loom_us,
            "loom_tbps": loom_tbps, "fraction": fraction, "eager_us": eager_us,
            "compile_us": compile_us, "ratio": ratio, "compile_tbps": compile_tbps, "goal": goal,
            "cells": [
                case.label if case else name, dtype, _fmt(loom_us, ".1f"), _fmt(loom_tbps, ".2f"),
                _fmt(fraction, ".2f"), _fmt(eager_us, ".1f"), _fmt(compile_us, ".1f"),
                _fmt(ratio, ".2f", "x"), _fmt(compile_tbps, ".2f"), goal or "-",
            ],
        })
    return rows


TABLE_HEADERS = ["case", "dtype", "Loom us", "Loom TB/s", f"of {COPY_CEILING_TBPS} TB/s",
                 "eager us", "compile us", "compile/Loom", "compile TB/s", "goal"]


def build_host_rows(torch_doc, loom_doc):
    t_idx = index_host(torch_doc, "torch", ("eager_us_per_call", "compile_us_per_call"))
    l_idx = index_host(loom_doc, "loom", ("loom_us_per_call",))
    rows = []
    for name in list(dict.fromkeys(list(t_idx) + list(l_idx))):
        t, lm = t_idx.get(name, {}), l_idx.get(name, {})
        rows.append([name, _fmt(lm.get("loom_us_per_call"), ".1f"),
                     _fmt(t.get("eager_us_per_call"), ".1f"),
                     _fmt(t.get("compile_us_per_call"), ".1f")])
    return rows


HOST_HEADERS = ["host overhead case", "Loom us/call (C++)", "eager us/call", "compile us/call"]


def format_table(headers, rows, markdown=False, text_columns=2):
    """Renders rows of strings as an aligned text table, or as a Markdown table.

    The first text_columns columns (names) align left, the rest (numbers) right.
    """
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    def line(cells):
        return "  ".join(c.ljust(w) if i < text_columns else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def describe(doc, what):
    """One line naming where the numbers come from (GPU, date, versions), if the JSON says."""
    if not isinstance(doc, dict):
        return None
    keys = ("gpu", "date", "torch", "triton", "loom")
    parts = [f"{k} {doc[k]}" for k in keys if doc.get(k)]
    return f"{what}: " + ", ".join(parts) if parts else None


def render(torch_doc, loom_doc, markdown=False, warn=None):
    """The whole report as text: provenance and host overhead first, the main table last."""
    out = []
    for doc, what in ((torch_doc, "torch"), (loom_doc, "loom")):
        line = describe(doc, what)
        if line:
            out.append(line)
    if isinstance(loom_doc, dict) and isinstance(loom_doc.get("compile_ms"), dict):
        cm = loom_doc["compile_ms"]
        out.append("loom compile ms: " + ", ".join(f"{k} {_fmt_ms(v)}" for k, v in cm.items())
                   + f" (goals: cold <= {COMPILE_GOAL_MS['cold']:g}, "
                     f"warm <= {COMPILE_GOAL_MS['warm']:g})")
    if isinstance(loom_doc, dict):
        for key in ("compile_error", "host_overhead_error"):
            if loom_doc.get(key):
                out.append(f"loom {key.replace('_', ' ')}: {loom_doc[key]}")
    host = build_host_rows(torch_doc, loom_doc)
    if host:
        out += ["", format_table(HOST_HEADERS, host, markdown, text_columns=1)]
    rows = build_rows(torch_doc, loom_doc, warn)
    out += ["", f"goal: compile/Loom >= 1.00x; large cases >= {LARGE_CASE_GOAL_FRACTION:.0%} of "
                f"{COPY_CEILING_TBPS} TB/s. bytes = inputs read once + outputs written once.", ""]
    out.append(format_table(TABLE_HEADERS, [r["cells"] for r in rows], markdown))
    return "\n".join(out).lstrip("\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torch", metavar="JSON", help="written by torch_baseline.py")
    parser.add_argument("--loom", metavar="JSON", help="written by loom_bench --json (README.md)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--out", metavar="FILE", help="also write the report to FILE")
    args = parser.parse_args(argv)
    if not args.torch and not args.loom:
        parser.error("give --torch JSON, --loom JSON or both")

    def warn(msg):
        print(f"compare.py: warning: {msg}", file=sys.stderr)

    try:
        torch_doc = load_json(args.torch, "torch") if args.torch else None
        loom_doc = load_json(args.loom, "loom") if args.loom else None
        text = render(torch_doc, loom_doc, args.markdown, warn)
    except ValueError as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 1
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
