#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The table of a heuristic tuning run (tools/gpu-bench-run.sh --tune): for each sweep shape,
the time under the heuristics' own parameters, the best variant, and every variant's time, from
the loom_bench --sweep JSON of each tune line. Usage: tune_table.py LINES_FILE RESULT_DIR, where
LINES_FILE has one "tuneK: FAMILIES WIDTHS DTYPES PARAMS" line per variant and RESULT_DIR holds
tuneK.json. Variants that failed (an override no kernel has, a check that failed) are listed
with their error, never dropped."""

import json
import os
import sys


def read_lines(path):
    """[(k, params)] in file order."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, rest = line.partition(":")
            fields = rest.split()
            if not name.startswith("tune") or len(fields) != 4:
                continue
            out.append((name, fields[3]))
    return out


def collect(lines, folder):
    """{(family, dtype, width): [(params, us or None, note)]}."""
    shapes = {}
    for name, params in lines:
        path = os.path.join(folder, name + ".json")
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            shapes.setdefault(("?", "?", 0), []).append((params, None, f"{name}: {e}"))
            continue
        for r in doc.get("results", []):
            key = (r["family"], r["dtype"], r["width"])
            if r.get("check") == "PASS" and r.get("loom_us") is not None:
                shapes.setdefault(key, []).append((params, r["loom_us"], ""))
            elif r.get("check") == "PASS" and not doc.get("timed", True):
                shapes.setdefault(key, []).append((params, None, "PASS (untimed: host backend)"))
            else:
                note = r.get("error") or r.get("check_detail") or r.get("check", "?")
                shapes.setdefault(key, []).append((params, None, note.splitlines()[0][:100]))
    return shapes


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    shapes = collect(read_lines(argv[0]), argv[1])
    for key in sorted(shapes):
        runs = shapes[key]
        timed = [(us, p) for p, us, _ in runs if us is not None]
        default = next((us for p, us, _ in runs if p == "-" and us is not None), None)
        best = min(timed) if timed else None
        head = f"{key[0]} {key[1]} {key[2]}:"
        if best is None:
            print(f"{head} no variant ran")
        else:
            gain = f" ({default / best[0]:.2f}x)" if default else ""
            dflt = f"{default:.1f}" if default else "-"
            print(f"{head} default {dflt} us, best {best[0]:.1f} us{gain} with {best[1]}")
        for p, us, note in runs:
            if us is not None:
                print(f"    {us:9.1f} us  {p}")
            else:
                label = "ran" if note.startswith("PASS") else "ERROR"
                print(f"    {label:>12}  {p}: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
