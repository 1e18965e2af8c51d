#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The shape sweep's report: Loom (`loom_bench --sweep --json`) next to torch eager and
torch.compile (`torch_sweep.py --out`), shape by shape, with the goals of docs/performance.md.

Writes into --out: table.md (one row per shape: times, torch.compile / Loom, kernels, check),
summary.txt (per family and dtype geomeans, counts against the goals, misses), and
ratio_vs_width.png (torch.compile time / Loom time against the row width, one panel per family
in the results;
only when matplotlib is importable). A ratio above 1 means Loom is faster.

    sweep_report.py --loom loom.json --torch torch.json --out DIR
"""

import argparse
import json
import math
import os
import sys

FAMILIES = ["layer_norm", "rms_norm", "softmax", "var_mean", "sum_dim0", "layer_norm_bwd",
            "rms_norm_bwd"]
# docs/performance.md's goals for the sweep.
GOAL_SHARE_AHEAD = 0.90
GOAL_FLOOR = 0.90
GOAL_GEOMEAN = 1.10
VOCAB_WIDTH = 50257


def load(path, what):
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"sweep_report.py: cannot read the {what} JSON {path}: {e}", file=sys.stderr)
        return None


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def families_of(rows):
    """The families the results hold, in table order."""
    return [f for f in FAMILIES if any(r["family"] == f for r in rows)]


def merge(loom, torch):
    """One row per Loom result, keyed (case, dtype), with the torch entry of the same shape."""
    by_key = {}
    for e in (torch or {}).get("results", []):
        by_key[(e["case"], e["dtype"])] = e
    rows = []
    for r in (loom or {}).get("results", []):
        t = by_key.get((r["case"], r["dtype"]), {})
        row = {k: r.get(k) for k in ("case", "family", "dtype", "regime", "rows", "width",
                                     "bytes", "loom_us", "kernels", "scheduler", "check",
                                     "error")}
        row["eager_us"] = t.get("eager_us")
        row["compile_us"] = t.get("compile_us")
        row["torch_error"] = t.get("eager_error") or t.get("compile_error")
        lu = row["loom_us"]
        row["vs_compile"] = row["compile_us"] / lu if lu and row["compile_us"] else None
        row["vs_eager"] = row["eager_us"] / lu if lu and row["eager_us"] else None
        row["tbps"] = row["bytes"] / (lu * 1e6) if lu else None
        rows.append(row)
    return rows


def table(rows):
    head = ("| shape | dtype | regime | Loom us | TB/s | eager us | compile us | compile/Loom | "
            "eager/Loom | kernels | scheduler | check |")
    out = [head, "|" + "---|" * 12]
    for r in rows:
        check = r["check"] if r["check"] != "ERROR" else f"ERROR: {r['error']}"
        out.append(f"| {r['family']} [{r['rows']}, {r['width']}] | {r['dtype']} | {r['regime']} "
                   f"| {fmt(r['loom_us'])} | {fmt(r['tbps'], '.2f')} | {fmt(r['eager_us'])} "
                   f"| {fmt(r['compile_us'])} | {fmt(r['vs_compile'], '.2f')} "
                   f"| {fmt(r['vs_eager'], '.2f')} | {fmt(r['kernels'], 'd')} "
                   f"| {r['scheduler'] or '-'} | {check} |")
    return "\n".join(out) + "\n"


def summary(rows, loom, torch):
    lines = []
    dev = (loom or {}).get("device", "?")
    lines.append(f"device: {dev}; torch {(torch or {}).get('torch', '-')}; "
                 f"{len(rows)} shapes")
    failed = [r for r in rows if r["check"] != "PASS"]
    lines.append(f"Loom checks: {len(rows) - len(failed)} PASS, {len(failed)} not "
                 f"({', '.join(r['case'] + ' ' + r['dtype'] for r in failed[:12])})")
    for regime in ("bandwidth", "latency"):
        rr = [r for r in rows if r["regime"] == regime]
        if not rr:
            continue
        ratios = [r["vs_compile"] for r in rr if r["vs_compile"]]
        ahead = sum(v >= 1.0 for v in ratios)
        below = [r for r in rr if r["vs_compile"] and r["vs_compile"] < GOAL_FLOOR]
        lines.append("")
        lines.append(f"== {regime} regime: {len(rr)} shapes, {len(ratios)} with both times")
        if ratios:
            lines.append(f"at or ahead of torch.compile: {ahead} of {len(ratios)} "
                         f"({100.0 * ahead / len(ratios):.0f}%, goal {GOAL_SHARE_AHEAD:.0%}); "
                         f"below {GOAL_FLOOR}x: {len(below)} (goal 0); geomean "
                         f"{geomean(ratios):.2f}x (goal {GOAL_GEOMEAN}x)")
        for family in families_of(rr):
            for dtype in ("fp32", "bf16"):
                fr = [r for r in rr if r["family"] == family and r["dtype"] == dtype]
                if not fr:
                    continue
                g = geomean([r["vs_compile"] for r in fr])
                ge = geomean([r["vs_eager"] for r in fr])
                worst = min((r for r in fr if r["vs_compile"]), key=lambda r: r["vs_compile"],
                            default=None)
                multi = [str(r["width"]) for r in fr if (r["kernels"] or 0) > 1]
                lines.append(f"  {family:14} {dtype}: geomean vs compile {fmt(g, '.2f')}x, vs "
                             f"eager {fmt(ge, '.2f')}x; worst "
                             f"{fmt(worst and worst['vs_compile'], '.2f')}x at "
                             f"{worst and worst['width']}; several kernels at widths "
                             f"{', '.join(multi) or 'none'}")
        vocab = [r for r in rr if r["width"] == VOCAB_WIDTH and
                 r["family"] in ("softmax", "layer_norm")]
        if vocab:
            lines.append("  width 50257 (goal >= 1.0x): " + ", ".join(
                f"{r['family']} {r['dtype']} {fmt(r['vs_compile'], '.2f')}x" for r in vocab))
        if below:
            lines.append("  below the floor: " + ", ".join(
                f"{r['family']} {r['dtype']} {r['width']} {r['vs_compile']:.2f}x"
                for r in sorted(below, key=lambda r: r["vs_compile"])))
    terr = [r for r in rows if r["torch_error"]]
    if terr:
        lines.append(f"torch errors: {len(terr)} ({terr[0]['case']}: {terr[0]['torch_error']})")
    return "\n".join(lines) + "\n"


def plot(rows, path):
    """One row of panels per regime (their ratios differ by an order of magnitude), one panel
    per family, fp32 and bf16 in each; the y axis is logarithmic."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    regimes = [g for g in ("bandwidth", "latency") if any(r["regime"] == g for r in rows)]
    if not regimes:
        return False
    families = families_of(rows)
    fig, axes = plt.subplots(len(regimes), len(families), figsize=(4 * len(families),
                                                                   3.2 * len(regimes)),
                             sharey="row", squeeze=False)
    for i, regime in enumerate(regimes):
        for ax, family in zip(axes[i], families):
            for dtype, style in (("fp32", "o-"), ("bf16", "s--")):
                pts = sorted((r["width"], r["vs_compile"]) for r in rows
                             if r["family"] == family and r["dtype"] == dtype and
                             r["regime"] == regime and r["vs_compile"])
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, ms=3, label=dtype)
            ax.axhline(1.0, color="gray", lw=0.8)
            ax.axhline(GOAL_FLOOR, color="red", lw=0.6, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
            ax.set_title(f"{family}, {regime}", fontsize=9)
            ax.set_xlabel("row width H", fontsize=8)
        axes[i][0].set_ylabel("torch.compile / Loom time")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--loom", required=True, help="loom_bench --sweep JSON")
    p.add_argument("--torch", help="torch_sweep.py JSON")
    p.add_argument("--out", required=True, help="folder for table.md, summary.txt, the plot")
    args = p.parse_args(argv)
    loom = load(args.loom, "Loom")
    if loom is None:
        print(f"sweep_report.py: no Loom results ({args.loom})", file=sys.stderr)
        return 1
    torch = load(args.torch, "torch")
    rows = merge(loom, torch)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "table.md"), "w", encoding="utf-8") as f:
        f.write(table(rows))
    text = summary(rows, loom, torch)
    if plot(rows, os.path.join(args.out, "ratio_vs_width.png")):
        text += "plot: ratio_vs_width.png\n"
    with open(os.path.join(args.out, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
