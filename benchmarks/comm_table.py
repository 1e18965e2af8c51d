#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Markdown table of docs/performance.md's communication section, from loom_comm_bench CSVs.

    python3 benchmarks/comm_table.py RUN.csv [RUN.csv ...]

One run's median moves a lot on a shared machine, so with several runs of one configuration
(same ranks, sizes and collectives) each way's time is its minimum over every run and
repetition (the least disturbed call); comm/raw, fusion/raw and +us come from those minima; and
the last two columns give the median and the range over the runs of each run's own (median-based)
ratio, which says how far a single run can be trusted. With one run they are that run's ratio.
Standard library only.
"""

import argparse
import csv
import statistics
import sys


def label(nbytes):
    """1024 -> '1 KiB', 3 << 20 -> '3 MiB', 1000 -> '1000 B'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def bus_factor(collective, ranks):
    """nccl-tests' bus-bandwidth factor."""
    if ranks <= 1:
        return 0.0
    if collective == "allreduce":
        return 2 * (ranks - 1) / ranks
    return (ranks - 1) / ranks


def time_text(us):
    return f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def spread(values):
    if not values:
        return "-"
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:.2f}"
    return f"{mid:.2f} ({min(values):.2f}-{max(values):.2f})"


def read_runs(paths):
    """{(collective, bytes): [row per run]} in first-seen order, and the rank count."""
    rows = {}
    ranks = None
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                n = int(row["ranks"])
                if ranks is not None and n != ranks:
                    raise ValueError(f"{path}: {n} ranks, another run had {ranks}")
                ranks = n
                rows.setdefault((row["collective"], int(row["bytes"])), []).append(row)
    return rows, ranks or 1


def table(paths):
    rows, ranks = read_runs(paths)
    out = [
        "| collective | bytes | raw us | comm us | fusion us | raw busbw GB/s | comm/raw | "
        "fusion/raw | comm +us | fusion +us | comm/raw per run | fusion/raw per run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (collective, nbytes), runs in rows.items():
        raw = min(float(r["raw_min_us"]) for r in runs)
        comm = min(float(r["comm_min_us"]) for r in runs)
        fusion_runs = [r for r in runs if r["fusion_min_us"]]
        fusion = min((float(r["fusion_min_us"]) for r in fusion_runs), default=None)
        busbw = nbytes / raw / 1e3 * bus_factor(collective, ranks) if raw > 0 else 0.0
        cells = [
            collective,
            label(nbytes),
            time_text(raw),
            time_text(comm),
            time_text(fusion) if fusion is not None else "-",
            f"{busbw:.2f}" if ranks > 1 else "-",
            f"{raw / comm:.2f}" if comm > 0 else "-",
            f"{raw / fusion:.2f}" if fusion else "-",
            time_text(comm - raw),
            time_text(fusion - raw) if fusion is not None else "-",
            spread([float(r["comm_over_raw"]) for r in runs if r["comm_over_raw"]]),
            spread([float(r["fusion_over_raw"]) for r in runs if r["fusion_over_raw"]]),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+", help="loom_comm_bench --csv files of one configuration")
    args = parser.parse_args(argv)
    try:
        print(table(args.csv))
    except (OSError, KeyError, ValueError) as e:
        print(f"comm_table.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
