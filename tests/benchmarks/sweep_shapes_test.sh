#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shape sweep's two sides time the same shapes: `loom_bench --list-sweep` (C++,
# benchmarks/bench_sweep.cpp) and `torch_sweep.py --list` (Python) print the same JSON list, and
# sweep_report.py reads a Loom sweep JSON without torch's.
#   sweep_shapes_test.sh LOOM_BENCH PYTHON SOURCE_DIR
set -euo pipefail
bench=$1 py=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bench" --list-sweep "$work/loom.json" > /dev/null
"$py" "$src/benchmarks/torch_sweep.py" --list > "$work/torch.json"
"$py" - "$work/loom.json" "$work/torch.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["shapes"]
b = json.load(open(sys.argv[2]))["shapes"]
assert len(a) == 340, f"expected 340 shapes (5 families x 17 widths x 2 regimes x 2 dtypes), got {len(a)}"
for x, y in zip(a, b):
    assert x == y, f"the sides disagree: loom_bench {x} vs torch_sweep.py {y}"
assert len(a) == len(b), f"loom_bench lists {len(a)} shapes, torch_sweep.py {len(b)}"
widths = sorted({s["width"] for s in a})
assert 50257 in widths and 128256 in widths and widths[0] == 256 and widths[-1] == 131072, widths
for s in a:
    elements = s["rows"] * s["width"]
    target = 1 << 26 if s["regime"] == "bandwidth" else 1 << 20
    assert abs(elements - target) <= s["width"] / 2, s
print(f"sweep shapes agree: {len(a)} shapes")
PY
# The backward families (named only): the same list on both sides, with their own widths.
fams=layer_norm_bwd,rms_norm_bwd
"$bench" --list-sweep "$work/bwd-loom.json" --sweep-families "$fams" > /dev/null
"$py" "$src/benchmarks/torch_sweep.py" --list --families "$fams" > "$work/bwd-torch.json"
"$py" - "$work/bwd-loom.json" "$work/bwd-torch.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["shapes"]
b = json.load(open(sys.argv[2]))["shapes"]
assert a == b, "the sides disagree on the backward families"
widths = sorted({s["width"] for s in a})
assert widths == [256, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120, 8192, 12288, 16384, 32768,
                  65536], widths
assert len(a) == 2 * 14 * 2 * 2, len(a)
ln = next(s for s in a if s["case"] == "layer_norm_bwd_16384x4096" and s["dtype"] == "bf16")
n = 16384 * 4096
assert ln["bytes"] == (3 * n + 2 * 16384 + 3 * 4096) * 2, ln
print(f"backward sweep shapes agree: {len(a)} shapes")
PY
# A part of the sweep: the options select families, widths and regimes.
"$bench" --list-sweep "$work/part.json" --sweep-families softmax --sweep-widths 50257 \
  --sweep-regimes latency --dtypes bf16 > /dev/null
grep -q '"case": "softmax_21x50257@latency"' "$work/part.json"
[[ $(grep -c '"case"' "$work/part.json") == 1 ]]
if "$bench" --sweep-widths 10 > "$work/err.txt" 2>&1; then
  echo "--sweep-widths without --sweep was accepted" >&2
  exit 1
fi
grep -q 'need --sweep' "$work/err.txt"
echo "sweep options: OK"
