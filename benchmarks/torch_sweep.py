#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Times torch eager and torch.compile on the shapes of Loom's shape sweep (GPU only).

The shapes are those of `loom_bench --sweep` (benchmarks/bench_sweep.cpp): five families
(layer_norm, rms_norm, softmax, var_mean over the last dim, sum over dim 0), fp32 and bf16, row
widths 256..131072 by powers of two plus the model widths, R x H = 2^26 (bandwidth) and 2^20
(latency). `--families layer_norm_bwd,rms_norm_bwd` times issue 37's norm backward instead (aten's
native_layer_norm_backward and rms_norm's backward math, torch_baseline.py's functions; widths 256
to 65536 and the model widths up to 12288). `--list` prints them without a GPU;
tests/benchmarks checks that the list equals `loom_bench --list-sweep`'s. The protocol is torch_baseline.py's: random inputs, an L2 flush before
each repetition, CUDA events around one call, the median of --reps (30).

torch.compile compiles each shape (dynamic=False). `--precompile-jobs N` first compiles every shape
in N worker processes that share Inductor's on-disk caches, so the timing process loads each
compiled graph from the cache instead of compiling it; tools/gpu-bench-run.sh starts
`--precompile-only` while Loom builds.

    torch_sweep.py --out torch.json [--families ...] [--widths ...] [--regimes ...] [--dtypes ...]
    torch_sweep.py --list [--families ...]
    torch_sweep.py --precompile-only --precompile-jobs 12
"""

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (stdlib-only, as torch_baseline.py at import)
import torch_baseline  # noqa: E402  (the timing protocol and the backward functions)

FAMILIES = ["layer_norm", "rms_norm", "softmax", "var_mean", "sum_dim0"]
BACKWARD_FAMILIES = ["layer_norm_bwd", "rms_norm_bwd"]
REGIMES = {"bandwidth": 1 << 26, "latency": 1 << 20}
DTYPE_BYTES = {"fp32": 4, "bf16": 2}
SCHEMA = "loom-bench-torch-sweep/1"


def default_widths(family):
    """bench_sweep.cpp's defaultSweepWidths: 256 .. 131072 and the model widths; the backward
    families stop at 65536 and take the model widths up to 12288."""
    widest = 65536 if family in BACKWARD_FAMILIES else 131072
    widths = [w for w in (256 << k for k in range(10)) if w <= widest]
    widths += [w for w in (768, 1536, 3072, 5120, 12288, 50257, 128256)
               if w <= (12288 if family in BACKWARD_FAMILIES else widest)]
    return sorted(widths)


def sweep_rows(width, regime):
    """bench_sweep.cpp's rule: the regime's elements / width rounded to nearest, at least 1
    (C++ llround: halves away from zero)."""
    return max(1, int(math.floor(REGIMES[regime] / width + 0.5)))


def io_bytes(family, rows, width, dtype):
    """bench_cases.cpp's ioBytes: inputs read once and outputs written once."""
    n = rows * width
    inputs = {"layer_norm": n + 2 * width, "rms_norm": n + width,
              "layer_norm_bwd": 2 * n + 2 * rows + width,  # dy, x, mean, rstd, weight
              "rms_norm_bwd": 2 * n + width}.get(family, n)
    outputs = {"var_mean": 2 * rows, "sum_dim0": width,
               "layer_norm_bwd": n + 2 * width, "rms_norm_bwd": n + width}.get(family, n)
    return (inputs + outputs) * DTYPE_BYTES[dtype]


def shapes(families, widths, regimes, dtypes, rows=None):
    """The sweep in loom_bench's order: dtype, regime, family, width."""
    out = []
    for dtype in dtypes:
        for regime in regimes:
            for family in families:
                for width in widths or default_widths(family):
                    r = rows or sweep_rows(width, regime)
                    name = f"{family}_{r}x{width}" + ("@latency" if regime == "latency" else "")
                    out.append({"case": name, "family": family, "dtype": dtype,
                                "regime": regime, "rows": r, "width": width,
                                "shape": [r, width],
                                "bytes": io_bytes(family, r, width, dtype)})
    return out


def make_fn(torch, family, width):
    import torch.nn.functional as F

    if family == "layer_norm":
        return lambda x, w, b: F.layer_norm(x, (width,), w, b, eps=1e-5)
    if family == "rms_norm":
        return lambda x, w: F.rms_norm(x, (width,), w, eps=1e-5)
    if family == "softmax":
        return lambda x: torch.softmax(x, dim=-1)
    if family == "var_mean":
        return lambda x: torch.var_mean(x, dim=-1)
    if family == "sum_dim0":
        return lambda x: torch.sum(x, dim=0)
    raise AssertionError(f"no torch function for family '{family}'")


def make_call(torch, s):
    """(function, inputs) of shape `s`: the backward families through torch_baseline.py's
    functions for the same cases, so both benchmarks time the same torch code."""
    if s["family"] in BACKWARD_FAMILIES:
        case = compare.Case(s["case"], s["family"], tuple(s["shape"]), s["case"], True)
        return torch_baseline.make_case(torch, case, s["dtype"])
    return make_fn(torch, s["family"], s["width"]), make_inputs(torch, s)


def make_inputs(torch, s):
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[s["dtype"]]
    rows, width = s["rows"], s["width"]
    x = torch.randn(rows, width, device="cuda", dtype=tdtype)
    extra = {"layer_norm": 2, "rms_norm": 1}.get(s["family"], 0)
    return [x] + [torch.randn(width, device="cuda", dtype=tdtype) for _ in range(extra)]


def compile_one(torch, s):
    """The compiled function of shape `s` after its first (compiling) call, and that call's time."""
    torch._dynamo.reset()
    fn, inputs = make_call(torch, s)
    compiled = torch.compile(fn, dynamic=False)
    t0 = time.perf_counter()
    out = compiled(*inputs)
    torch.cuda.synchronize()
    return compiled, inputs, out, time.perf_counter() - t0


def bench_one(torch, s, args, flush):
    entry = dict(s)
    fn, inputs = make_call(torch, s)
    eager_out = None
    try:
        eager_out = fn(*inputs)
        entry["eager_us"], entry["eager_reps_us"] = torch_baseline.time_kernel_us(
            torch, lambda: fn(*inputs), flush, args.reps, args.warmup)
    except Exception as e:  # noqa: BLE001  (recorded; the other shapes go on)
        entry["eager_error"] = f"{type(e).__name__}: {e}"
    if not args.skip_compile:
        try:
            compiled, cinputs, out, first_s = compile_one(torch, s)
            entry["compile_first_call_s"] = first_s
            if eager_out is not None:
                entry["compile_vs_eager_max_abs_diff"] = torch_baseline.max_abs_diff(
                    torch, out, fn(*cinputs))
            entry["compile_us"], entry["compile_reps_us"] = torch_baseline.time_kernel_us(
                torch, lambda: compiled(*cinputs), flush, args.reps, args.warmup)
            del cinputs, out
        except Exception as e:  # noqa: BLE001
            entry["compile_error"] = f"{type(e).__name__}: {e}"
    del inputs, eager_out
    return entry


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def import_torch():
    try:
        import torch
    except ImportError as e:
        print(f"torch_sweep.py: error: cannot import torch ({e})", file=sys.stderr)
        sys.exit(2)
    import torch._dynamo  # noqa: F401  (reset between shapes)
    if not torch.cuda.is_available():
        print("torch_sweep.py: error: torch.cuda.is_available() is False: run this on the GPU "
              "machine", file=sys.stderr)
        sys.exit(2)
    return torch


def precompile(args, todo):
    """Compiles every shape in --precompile-jobs processes (Inductor's caches are shared on disk)."""
    jobs = max(1, args.precompile_jobs)
    procs = []
    for k in range(jobs):
        cmd = [sys.executable, os.path.abspath(__file__), "--precompile-worker", f"{k}/{jobs}",
               *args.selection]
        procs.append(subprocess.Popen(cmd))
    return sum(p.wait() != 0 for p in procs)


def parse_list(text, known, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if known is not None and t not in known]
    if bad or not items:
        raise SystemExit(f"torch_sweep.py: error: --{what}: unknown {', '.join(bad) or '(empty)'}"
                         f"; known: {', '.join(known)}")
    return items


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", metavar="JSON", help="where to write the raw numbers")
    p.add_argument("--list", action="store_true", help="print the shapes as JSON and exit")
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--widths", default=None, help="comma-separated row widths (default: all)")
    p.add_argument("--regimes", default="bandwidth,latency")
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--reps", type=int, default=30, help="timed repetitions (at least 20)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--flush-mb", type=int, default=256)
    p.add_argument("--skip-compile", action="store_true", help="time eager only")
    p.add_argument("--precompile-jobs", type=int, default=0,
                   help="compile every shape in N processes first (Inductor's disk cache)")
    p.add_argument("--precompile-only", action="store_true",
                   help="only the parallel compile (with --precompile-jobs, default 12)")
    p.add_argument("--precompile-worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.reps < 20:
        p.error("--reps must be at least 20 (the protocol's minimum)")
    args.family_list = parse_list(args.families, FAMILIES + BACKWARD_FAMILIES, "families")
    args.regime_list = parse_list(args.regimes, list(REGIMES), "regimes")
    args.dtype_list = parse_list(args.dtypes, list(DTYPE_BYTES), "dtypes")
    if args.widths is None:
        args.width_list = None  # each family's default_widths
    else:
        try:
            args.width_list = [int(w) for w in parse_list(args.widths, None, "widths")]
        except ValueError:
            p.error(f"--widths expects whole numbers, got '{args.widths}'")
    args.selection = ["--families", args.families, "--regimes", args.regimes,
                      "--dtypes", args.dtypes] + (["--widths", args.widths] if args.widths else [])
    if not (args.list or args.precompile_only or args.precompile_worker) and not args.out:
        p.error("--out is required (or --list, --precompile-only)")
    return args


def main(argv=None):
    args = parse_args(argv)
    todo = shapes(args.family_list, args.width_list, args.regime_list, args.dtype_list)
    if args.list:
        json.dump({"schema": "loom-bench-sweep-shapes/1", "shapes": todo}, sys.stdout, indent=1)
        print()
        return 0
    torch = import_torch()
    if args.precompile_worker:
        k, n = (int(v) for v in args.precompile_worker.split("/"))
        failed = 0
        for i, s in enumerate(todo):
            if i % n != k:
                continue
            try:
                compile_one(torch, s)
            except Exception as e:  # noqa: BLE001  (the timing run records it)
                failed += 1
                print(f"torch_sweep.py: precompile {s['case']} {s['dtype']}: {e}", file=sys.stderr)
        return 1 if failed else 0
    if args.precompile_only or args.precompile_jobs > 0:
        t0 = time.perf_counter()
        if args.precompile_only and args.precompile_jobs == 0:
            args.precompile_jobs = 12
        bad = precompile(args, todo)
        print(f"torch_sweep.py: precompiled {len(todo)} shapes in {args.precompile_jobs} "
              f"processes, {time.perf_counter() - t0:.0f} s ({bad} workers failed)",
              file=sys.stderr)
        if args.precompile_only:
            return 1 if bad else 0
    import triton

    flush = torch.empty(args.flush_mb << 20, dtype=torch.int8, device="cuda")
    torch.manual_seed(0)
    doc = {
        "schema": SCHEMA,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
        "protocol": {"timer": "events", "reps": args.reps, "warmup": args.warmup,
                     "flush_bytes": args.flush_mb << 20, "statistic": "median",
                     "dynamic": False},
        "results": [],
    }
    for s in todo:
        print(f"torch_sweep.py: {s['case']} {s['dtype']}", file=sys.stderr, flush=True)
        doc["results"].append(bench_one(torch, s, args, flush))
        torch.cuda.empty_cache()
        # After every shape, so a run stopped at its time limit keeps what it measured.
        write_json(args.out, doc)
    errors = [e for e in doc["results"] if "eager_error" in e or "compile_error" in e]
    for e in errors:
        print(f"torch_sweep.py: error: {e['case']} {e['dtype']}: "
              f"{e.get('eager_error', '')} {e.get('compile_error', '')}", file=sys.stderr)
    print(f"torch_sweep.py: {len(doc['results'])} shapes on {doc['gpu']}, {len(errors)} errors; "
          f"raw numbers in {args.out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
