#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints one line per timed case of loom_bench JSON files (schema loom-bench-loom/1), with the
heuristic parameters each kernel ran with: the table of a heuristic sweep
(tools/gpu-bench-run.sh --sweep). Files that cannot be read are reported, not skipped silently."""

import json
import sys


def rows(paths):
    """(file, case, dtype, median us, TB/s, check, params) per result; errors as their text."""
    out = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            out.append((path, "-", "-", None, None, "UNREADABLE", str(e)))
            continue
        for r in doc.get("results", []):
            params = " | ".join(line.strip() for line in r.get("params", "").splitlines()
                                if line.strip())
            out.append((path, r["case"], r["dtype"], r.get("loom_us"), r.get("loom_tbps"),
                        r.get("check", "?"), params or r.get("error", "")))
    return out


def main(argv):
    if not argv:
        print("usage: sweep_table.py LOOM_JSON...", file=sys.stderr)
        return 2
    for path, case, dtype, us, tbps, check, params in rows(argv):
        name = path.rsplit("/", 1)[-1]
        t = "-" if us is None else f"{us:8.1f} us {tbps:5.2f} TB/s"
        print(f"{name:14} {case:28} {dtype:5} {t:24} {check:10} {params}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
