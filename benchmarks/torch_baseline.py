#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Times torch eager and torch.compile on the cases of shared/docs/performance.md (GPU only).

Protocol (as triton.testing.do_bench): random inputs; warm-up calls (the first compiles); then each
repetition writes a flush buffer larger than L2, records a CUDA event, calls the function, records a
second event; the reported time is the median over repetitions. Bytes and case names come from
compare.py. Writes the raw numbers to a JSON file and prints a table.

    torch_baseline.py --out torch.json [--cases NAME,...] [--dtypes fp32,bf16] [--reps 100]
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (stdlib-only: the case table, byte counts and table printing)


def fail(msg):
    print(f"torch_baseline.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def import_torch():
    """torch, or a clear exit when this is not the GPU machine."""
    try:
        import torch
    except ImportError as e:
        fail(f"cannot import torch ({e}): run this on the GPU machine (shared/docs/gpu.md)")
    import torch._dynamo  # torch.compile's cache, reset between cases
    if not torch.cuda.is_available():
        fail("torch.cuda.is_available() is False: run this on the GPU machine")
    return torch


def make_case(torch, case, dtype):
    """(function, input tensors) for one case; inputs random, on the GPU, in the case's dtype."""
    import torch.nn.functional as F

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    inputs = [torch.randn(s, device="cuda", dtype=tdtype) for s in case.input_shapes()]
    if case.op.startswith("bn_"):
        return make_batch_norm(torch, case, inputs)
    if case.op.endswith("norm_bwd"):
        return make_norm_backward(torch, case, inputs)
    if case.op == "index_add":  # the ids: int64 in [0, V)
        inputs[1] = torch.randint(0, case.shape[2], (case.shape[0],), device="cuda")

        def fn(x, ids, src):
            return x.index_add(0, ids, src)
        return fn, inputs
    cols = case.shape[-1]
    # bf16 computes as PyTorch does on bf16 tensors (fp32 accumulation inside the kernels).
    if case.op == "var_mean":
        def fn(x):
            return torch.var_mean(x, dim=2)
    elif case.op == "layer_norm":
        def fn(x, w, b):
            return F.layer_norm(x, (cols,), w, b, eps=1e-5)
    elif case.op == "rms_norm":
        def fn(x, w):
            return F.rms_norm(x, (cols,), w, eps=1e-5)
    elif case.op == "softmax":
        def fn(x):
            return torch.softmax(x, dim=-1)
    elif case.op == "gelu_tanh_bias":
        def fn(x, bias):
            return F.gelu(x + bias, approximate="tanh")
    elif case.op == "sum_dim0":
        def fn(x):
            return torch.sum(x, dim=0)
    elif case.op == "linear":
        def fn(x, w, b):
            return F.linear(x, w, b)
    elif case.op == "linear_gelu_tanh":
        def fn(x, w, b):
            return F.gelu(F.linear(x, w, b), approximate="tanh")
    elif case.op == "transpose":
        def fn(x):
            return x.t().contiguous()
    elif case.op == "copy":
        def fn(x):
            return x.clone()
    elif case.op == "to_nhwc":
        def fn(x):
            return x.permute(0, 2, 3, 1).contiguous()
    elif case.op == "gelu_bias_t":
        def fn(x, bias):
            return F.gelu(x + bias, approximate="tanh").t().contiguous()
    else:
        raise AssertionError(f"no torch function for op '{case.op}'")
    return fn, inputs


def make_batch_norm(torch, case, inputs):
    """Batch-norm of the logical [N, C, H, W] tensor: the NHWC cases are torch's channels_last
    (the same bytes as Loom's [N, H, W, C] input). Forward in training mode (batch statistics,
    no running stats); backward is aten's native_batch_norm_backward, the kernel autograd runs,
    with grad input, grad weight and grad bias."""
    import torch.nn.functional as F

    channels_last = case.op.endswith("nhwc")

    def logical(t):  # Loom's [N, H, W, C] data as torch's channels_last [N, C, H, W]
        return t.permute(0, 3, 1, 2) if channels_last else t

    data = [logical(t) for t in inputs[:1 if case.op.startswith("bn_fwd") else 2]]
    rest = inputs[len(data):]
    if case.op.startswith("bn_fwd"):
        def fn(x, w, b):
            return F.batch_norm(x, None, None, w, b, training=True, eps=1e-5)
        return fn, data + rest

    def fn(dy, x, mean, rstd, w):
        return torch.ops.aten.native_batch_norm_backward(
            dy, x, w, None, None, mean, rstd, True, 1e-5, [True, True, True])
    # torch keeps the saved statistics in fp32 for half-precision data (its kernels refuse
    # others), and mixed precision keeps the weight in fp32: [C] vectors, negligible bytes.
    return fn, data + [t.float() for t in rest]


def make_norm_backward(torch, case, inputs):
    """The backward of layer_norm (aten's native_layer_norm_backward, the kernel autograd runs,
    with the saved mean and rstd in fp32 as torch keeps them) and of rms_norm (its math, with
    rstd recomputed from x as Loom's fusion does: torch has no separate rms_norm backward op), each
    giving grad input, grad weight and (layer_norm) grad bias."""
    cols = case.shape[-1]
    if case.op == "layer_norm_bwd":
        dy, x, mean, rstd, w = inputs
        mean, rstd = mean.float(), rstd.float()

        def fn(dy, x, mean, rstd, w):
            return torch.ops.aten.native_layer_norm_backward(
                dy, x, (cols,), mean, rstd, w, w, [True, True, True])
        return fn, [dy, x, mean, rstd, w]

    def fn(dy, x, w):
        xf, gf = x.float(), dy.float() * w.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
        dx = r * (gf - xf * r * r * (gf * xf).mean(-1, keepdim=True))
        dw = (dy.float() * xf * r).sum(0)
        return dx.to(x.dtype), dw.to(w.dtype)
    return fn, inputs


def time_kernel_us(torch, call, flush, reps, warmup):
    """Median and all per-repetition times in microseconds, L2 flushed before each repetition."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.zero_()
        starts[i].record()
        call()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]
    return statistics.median(times), times


def time_do_bench_us(call):
    """triton.testing.do_bench's median (its own 256 MB flush and rep count), as a cross-check."""
    import triton.testing

    return triton.testing.do_bench(call, return_mode="median") * 1e3, []


def max_abs_diff(torch, a, b):
    a = a if isinstance(a, (tuple, list)) else (a,)
    b = b if isinstance(b, (tuple, list)) else (b,)
    return max((x.float() - y.float()).abs().max().item() for x, y in zip(a, b))


def bench_case(torch, case, dtype, args, flush):
    """One result entry: eager and compiled medians, raw times, and eager-vs-compile difference."""
    nbytes = compare.io_bytes(case, dtype)
    entry = {"case": case.name, "dtype": dtype, "shape": list(case.shape), "bytes": nbytes}
    fn, inputs = make_case(torch, case, dtype)

    def timed(call):
        if args.timer == "triton":
            return time_do_bench_us(call)
        return time_kernel_us(torch, call, flush, args.reps, args.warmup)

    try:
        eager_out = fn(*inputs)
        entry["eager_us"], entry["eager_reps_us"] = timed(lambda: fn(*inputs))
        entry["eager_tbps"] = compare.tbps(nbytes, entry["eager_us"])
    except Exception as e:  # noqa: BLE001  (record and go on with the other cases)
        entry["eager_error"] = f"{type(e).__name__}: {e}"
        eager_out = None
    if not args.skip_compile:
        try:
            torch._dynamo.reset()
            # dynamic=False: each shape gets its own specialized kernel, as a user's fixed shapes would.
            compiled = torch.compile(fn, dynamic=False, mode=args.compile_mode)
            t0 = time.perf_counter()
            out = compiled(*inputs)
            torch.cuda.synchronize()
            entry["compile_first_call_s"] = time.perf_counter() - t0
            if eager_out is not None:
                entry["compile_vs_eager_max_abs_diff"] = max_abs_diff(torch, out, eager_out)
            entry["compile_us"], entry["compile_reps_us"] = timed(lambda: compiled(*inputs))
            entry["compile_tbps"] = compare.tbps(nbytes, entry["compile_us"])
        except Exception as e:  # noqa: BLE001
            entry["compile_error"] = f"{type(e).__name__}: {e}"
    del inputs, eager_out
    torch.cuda.empty_cache()
    return entry


def host_overhead(torch, args):
    """Wall time per call of a 3-op pointwise expression on 1024 elements (eager: 3 kernels)."""
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")

    def fn(a, b):
        return torch.tanh(a * b + 1.0)

    entry = {"case": compare.HOST_CASE, "dtype": "fp32", "calls": args.host_calls,
             "expr": "tanh(x * y + 1.0)"}
    variants = [("eager", fn)]
    if not args.skip_compile:
        torch._dynamo.reset()
        variants.append(("compile", torch.compile(fn, dynamic=False, mode=args.compile_mode)))
    for name, f in variants:
        try:
            for _ in range(200):
                f(x, y)
            torch.cuda.synchronize()
            loops = []
            for _ in range(args.host_loops):
                t0 = time.perf_counter()
                for _ in range(args.host_calls):
                    f(x, y)
                torch.cuda.synchronize()
                loops.append((time.perf_counter() - t0) / args.host_calls * 1e6)
            entry[f"{name}_us_per_call"] = statistics.median(loops)
            entry[f"{name}_loops_us_per_call"] = loops
        except Exception as e:  # noqa: BLE001
            entry[f"{name}_error"] = f"{type(e).__name__}: {e}"
    return entry


def select_cases(spec):
    if not spec:
        return list(compare.CASES)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if compare.case_by_name(n) is None]
    if unknown:
        fail(f"unknown case(s) {', '.join(unknown)}; known: "
             f"{', '.join(c.name for c in compare.CASES)}")
    return [compare.case_by_name(n) for n in names]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, metavar="JSON", help="where to write the raw numbers")
    p.add_argument("--cases", help="comma-separated case names (default: all)")
    p.add_argument("--dtypes", default="fp32,bf16", help="comma-separated, of fp32,bf16")
    p.add_argument("--reps", type=int, default=100, help="timed repetitions (at least 20)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before timing")
    p.add_argument("--flush-mb", type=int, default=256, help="L2 flush buffer size in MiB")
    p.add_argument("--timer", choices=("events", "triton"), default="events",
                   help="our CUDA-event loop, or triton.testing.do_bench as a cross-check")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile mode (default: torch's default)")
    p.add_argument("--skip-compile", action="store_true", help="time eager only")
    p.add_argument("--skip-host", action="store_true", help="skip the host-overhead case")
    p.add_argument("--host-calls", type=int, default=2000, help="calls per host-overhead loop")
    p.add_argument("--host-loops", type=int, default=5, help="loops; the median is reported")
    args = p.parse_args(argv)
    if args.reps < 20:
        p.error("--reps must be at least 20 (the protocol's minimum)")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in compare.DTYPE_BYTES]
    if bad or not dtypes:
        p.error(f"--dtypes: expected a list of {', '.join(compare.DTYPES)}, got '{args.dtypes}'")
    args.dtype_list = dtypes
    return args


def main(argv=None):
    args = parse_args(argv)
    cases = select_cases(args.cases)
    torch = import_torch()
    import triton

    props = torch.cuda.get_device_properties(0)
    flush_bytes = args.flush_mb << 20
    l2 = getattr(props, "L2_cache_size", 0)
    if l2 and flush_bytes < 2 * l2:
        print(f"torch_baseline.py: warning: flush buffer {args.flush_mb} MiB is under twice the "
              f"{l2 >> 20} MiB L2", file=sys.stderr)
    flush = torch.empty(flush_bytes, dtype=torch.int8, device="cuda")
    torch.manual_seed(0)

    doc = {
        "schema": compare.TORCH_SCHEMA,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
        "protocol": {"timer": args.timer, "reps": args.reps, "warmup": args.warmup,
                     "flush_bytes": flush_bytes, "l2_bytes": l2, "statistic": "median",
                     "compile_mode": args.compile_mode or "default", "dynamic": False},
        "copy_ceiling_tbps": compare.COPY_CEILING_TBPS,
        "results": [], "host_overhead": [],
    }
    for dtype in args.dtype_list:
        for case in cases:
            print(f"torch_baseline.py: {case.name} {dtype}", file=sys.stderr, flush=True)
            doc["results"].append(bench_case(torch, case, dtype, args, flush))
    if not args.skip_host:
        print(f"torch_baseline.py: {compare.HOST_CASE} (host overhead)", file=sys.stderr, flush=True)
        doc["host_overhead"].append(host_overhead(torch, args))

    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")

    errors = [f"{e['case']} {e['dtype']}: {k} {e[k]}" for e in doc["results"] + doc["host_overhead"]
              for k in ("eager_error", "compile_error") if k in e]
    for err in errors:
        print(f"torch_baseline.py: error: {err}", file=sys.stderr)
    rows = []
    for e in doc["results"]:
        label = compare.case_by_name(e["case"]).label
        rows.append([label, e["dtype"], compare._fmt(e.get("eager_us"), ".1f"),
                     compare._fmt(e.get("eager_tbps"), ".2f"),
                     compare._fmt(e.get("compile_us"), ".1f"),
                     compare._fmt(e.get("compile_tbps"), ".2f")])
    for e in doc["host_overhead"]:
        print(f"host overhead {e['case']} ({e['expr']}, {e['calls']} calls): eager "
              f"{compare._fmt(e.get('eager_us_per_call'), '.1f')} us/call, torch.compile "
              f"{compare._fmt(e.get('compile_us_per_call'), '.1f')} us/call")
    print(f"{doc['gpu']}, torch {doc['torch']}, {doc['date']}; raw numbers in {args.out}\n")
    print(compare.format_table(["case", "dtype", "eager us", "eager TB/s", "compile us",
                                "compile TB/s"], rows))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
