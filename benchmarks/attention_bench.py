#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom's fused attention forward next to torch's F.scaled_dot_product_attention (GPU only).

Times torch's SDPA (is_causal, bf16; whichever backend torch picks, flash attention on an H100)
by docs/performance.md's protocol (L2 flushed by a 256 MiB write before each repetition, CUDA
events around the call, median of --reps after --warmup), then runs loom_attention_bench on the
same cases in the same run and prints one table. Writes torch.json, loom.json and table.md to
--out when given.

    attention_bench.py [--cases gpt2,llama] [--reps 100] [--warmup 10] [--composite] [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

# name: (N, H, L, S, E, causal), as loom_attention_bench's cases.
CASES = {
    "gpt2": (8, 12, 1024, 1024, 64, True),
    "llama": (1, 32, 4096, 4096, 128, True),
}


def fail(msg):
    print(f"attention_bench.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def time_torch(torch, case, reps, warmup):
    """(forward us, backward us) of torch's SDPA; the backward is autograd's with
    grad_output = output, as loom_attention_bench's."""
    import torch.nn.functional as F

    n, h, l, s, e, causal = CASES[case]
    q, k, v = (torch.randn(n, h, x, e, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for x in (l, s, s))

    def forward():
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    grad = out.detach().clone()

    def backward():
        return torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

    return time_loop(torch, forward, reps, warmup), time_loop(torch, backward, reps, warmup)


def time_loop(torch, call, reps, warmup):
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for rep in range(reps):
        flush.fill_(rep & 0x7F)
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def loom_binary():
    if os.environ.get("LOOM_ATTENTION_BENCH"):
        return os.environ["LOOM_ATTENTION_BENCH"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for build in ("build-gpu", "build"):
        path = os.path.join(root, build, "bin", "loom_attention_bench")
        if os.path.exists(path):
            return path
    fail("loom_attention_bench not found (build it, or set LOOM_ATTENTION_BENCH)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="gpt2,llama")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--composite", action="store_true", help="also time Loom's composite")
    ap.add_argument("--out", help="directory for torch.json, loom.json and table.md")
    a = ap.parse_args()
    cases = [c for c in a.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            fail(f"unknown case {c} ({', '.join(CASES)})")
    try:
        import torch
    except ImportError as e:
        fail(f"cannot import torch ({e}): run this on the GPU machine")
    if not torch.cuda.is_available():
        fail("torch.cuda.is_available() is False: run this on the GPU machine")

    torch_us = {c: time_torch(torch, c, a.reps, a.warmup) for c in cases}
    out_dir = a.out or tempfile.mkdtemp(prefix="loom-attention-bench-")
    os.makedirs(out_dir, exist_ok=True)
    loom_json = os.path.join(out_dir, "loom.json")
    cmd = [loom_binary(), "--cases", ",".join(cases), "--reps", str(a.reps), "--warmup",
           str(a.warmup), "--json", loom_json] + (["--composite"] if a.composite else [])
    rc = subprocess.run(cmd).returncode
    if not os.path.exists(loom_json):
        fail(f"{' '.join(cmd)} exited with {rc} and wrote no {loom_json}")
    with open(loom_json) as f:
        loom = {c["name"]: c for c in json.load(f)["cases"]}
    with open(os.path.join(out_dir, "torch.json"), "w") as f:
        json.dump({"schema": "loom-attention-bench-torch/1", "torch": torch.__version__,
                   "gpu": torch.cuda.get_device_name(0), "cases": torch_us}, f, indent=2)

    def us(x):
        return "-" if x is None else f"{x:.1f}"

    def ratio(t, x):
        return f"{t / x:.2f}x" if x else "-"

    lines = ["| case | shape [N, H, L, S, E] | check | Loom fwd us | torch fwd us | torch / Loom "
             "| Loom bwd us | torch bwd us | torch / Loom | Loom composite fwd us |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        r = loom.get(c, {})
        fwd, bwd, comp = r.get("fused_us"), r.get("backward_us"), r.get("composite_us")
        tf, tb = torch_us[c]
        lines.append(f"| {c} | {list(CASES[c][:5])} causal bf16 | {r.get('check', 'missing')} | "
                     f"{us(fwd)} | {tf:.1f} | {ratio(tf, fwd)} | {us(bwd)} | {tb:.1f} | "
                     f"{ratio(tb, bwd)} | {us(comp)} |")
    table = "\n".join(lines)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}\n{table}")
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(table + "\n")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
