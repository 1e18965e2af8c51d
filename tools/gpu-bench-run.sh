#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the GPU machine: torch baseline (in the background while Loom builds), Release build,
# loom_bench, the gpu test tier, and the side-by-side table. Everything lands in $OUT/all.tgz
# (one file, so the device tool brings it back whole); the table is printed last.
#
#   bash tools/gpu-bench-run.sh            # on the GPU machine, from the repository root
set -o pipefail
out=${OUT:?set OUT to the output folder}
r=$out/r
mkdir -p "$r"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$r/smi.txt" 2>&1
(timeout 420 python3 benchmarks/torch_baseline.py --out "$r/torch.json" > "$r/torch.log" 2>&1
 echo "torch rc=$?" >> "$r/status.txt") &
torch_pid=$!
if cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_WERROR=ON > "$r/cmake.log" 2>&1 &&
   cmake --build build-gpu -j14 > "$r/build.log" 2>&1; then
  echo "build rc=0" >> "$r/status.txt"
else
  echo "build FAILED" >> "$r/status.txt"
  tail -40 "$r/build.log"
fi
wait $torch_pid  # GPU timings of the two sides never overlap
LOOM_DUMP=scheduler_params,ptxas,cuda_kernel timeout 240 build-gpu/bin/loom_bench \
  --json "$r/loom.json" > "$r/loom.log" 2>&1
echo "bench rc=$?" >> "$r/status.txt"
# The same kernels built with NVRTC's fast-compile level: compile time and kernel times side by side.
LOOM_NVRTC_FAST_COMPILE=min timeout 240 build-gpu/bin/loom_bench --skip-host \
  --json "$r/loom-fast-compile.json" > "$r/loom-fast-compile.log" 2>&1
echo "bench (LOOM_NVRTC_FAST_COMPILE=min) rc=$?" >> "$r/status.txt"
ctest --test-dir build-gpu -L gpu --output-on-failure --timeout 120 > "$r/gpu-tier.log" 2>&1
echo "gpu tier rc=$?" >> "$r/status.txt"
# Every full-size example through the automatic path on the GPU, checked by the reference evaluator.
for f in examples/*.fus; do
  (timeout 200 build-gpu/bin/loom run "$f" --backend cuda > "$r/run-$(basename "$f" .fus).log" 2>&1
   echo "loom run $f rc=$?" >> "$r/examples.txt") &
done
wait
sort "$r/examples.txt" >> "$r/status.txt"
python3 benchmarks/compare.py --torch "$r/torch.json" --loom "$r/loom.json" --markdown \
  --out "$r/table.md" > /dev/null 2>&1
python3 benchmarks/compare.py --torch "$r/torch.json" --loom "$r/loom.json" --out "$r/table.txt" \
  > /dev/null 2>&1
tar czf "$out/all.tgz" -C "$r" . && rm -rf "$r"
tar xzf "$out/all.tgz" -O ./status.txt
tar xzf "$out/all.tgz" -O ./gpu-tier.log | grep -E "tests passed|Failed|FAILED"
tar xzf "$out/all.tgz" -O ./table.txt
python3 benchmarks/compare.py --loom <(tar xzf "$out/all.tgz" -O ./loom-fast-compile.json) 2>/dev/null |
  sed -n '/^case/,$p' | sed 's/^/fast-compile: /' || true
