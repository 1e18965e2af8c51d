#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the GPU machine: torch baseline (in the background while Loom builds), Release build,
# loom_bench, the gpu test tier, and the side-by-side table. Everything lands in $OUT/all.tgz
# (one file, so the device tool brings it back whole); the table is printed last.
#
#   bash tools/gpu-bench-run.sh [--examples] [--fast-compile] [--ab-hints] [--stages]
#                               [--sweep FILE] [--no-torch] [--mpi] [--comm]
#
#   --examples      also run every full-size example with `loom run --backend cuda` (correctness)
#   --fast-compile  also time every case with LOOM_NVRTC_FAST_COMPILE=min
#   --ab-hints      also time the fp32 cases under each cache-hint define (LOOM_NVRTC_OPTIONS)
#   --stages        also time the CPU compile stages there (loom_compile_stages)
#   --no-torch      skip the torch baseline (a Loom-only run: no side-by-side table)
#   --mpi           also the mpi tier with GPU ranks (ranks share the GPUs) and the founding case
#                   per rank for 1, 2 and 4 ranks next to the single-device run (founding.txt)
#   --comm          also the communication microbenchmark on GPU ranks (loom_comm_bench through
#                   benchmarks/run_comm_bench.sh --gpu: NCCL at -np 1, and -np 2, 4 staged when the
#                   ranks share a GPU or NCCL with a GPU each); tables in comm/*.txt
#   --sweep FILE    also time heuristic variants: each line of FILE is "CASES DTYPES PARAMS"
#                   (loom_bench --cases/--dtypes/--params); '#' starts a comment
set -o pipefail
out=${OUT:?set OUT to the output folder}
examples=0 fast=0 hints=0 stages=0 sweep="" torch=1 mpi=0 comm=0
while [[ $# -gt 0 ]]; do
  a=$1
  shift
  case $a in
    --sweep) sweep=${1:?--sweep needs a file}; shift ;;
    --no-torch) torch=0 ;;
    --mpi) mpi=1 ;;
    --comm) comm=1 ;;
    --examples) examples=1 ;;
    --fast-compile) fast=1 ;;
    --ab-hints) hints=1 ;;
    --stages) stages=1 ;;
    *) echo "gpu-bench-run.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done
[[ -z $sweep || -f $sweep ]] || { echo "gpu-bench-run.sh: no sweep file '$sweep'" >&2; exit 2; }
r=$out/r
mkdir -p "$r"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$r/smi.txt" 2>&1
torch_pid=""
if [[ $torch == 1 ]]; then
  (timeout 420 python3 benchmarks/torch_baseline.py --out "$r/torch.json" > "$r/torch.log" 2>&1
   echo "torch rc=$?" >> "$r/status.txt") &
  torch_pid=$!
fi
if cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_WERROR=ON > "$r/cmake.log" 2>&1 &&
   cmake --build build-gpu -j14 > "$r/build.log" 2>&1; then
  echo "build rc=0" >> "$r/status.txt"
else
  echo "build FAILED" >> "$r/status.txt"
  tail -40 "$r/build.log"
fi
[[ -n $torch_pid ]] && wait $torch_pid  # GPU timings of the two sides never overlap
LOOM_DUMP=scheduler_params,ptxas,cuda_kernel timeout 240 build-gpu/bin/loom_bench \
  --json "$r/loom.json" > "$r/loom.log" 2>&1
echo "bench rc=$?" >> "$r/status.txt"
if [[ $fast == 1 ]]; then  # NVRTC's fast-compile level: compile time and kernel times
  LOOM_NVRTC_FAST_COMPILE=min timeout 240 build-gpu/bin/loom_bench --skip-host \
    --json "$r/loom-fast-compile.json" > "$r/loom-fast-compile.log" 2>&1
  echo "bench (LOOM_NVRTC_FAST_COMPILE=min) rc=$?" >> "$r/status.txt"
fi
if [[ $hints == 1 ]]; then  # cache hints on the fp32 cases (docs/runtime-library.md)
  k=0
  for h in "-DLOOM_INPUT_LOAD_HINT=1" "-DLOOM_INPUT_LOAD_HINT=2" "-DLOOM_INPUT_LOAD_HINT=5" \
           "-DLOOM_OUTPUT_STORE_HINT=1" "-DLOOM_INPUT_LOAD_HINT=2 -DLOOM_OUTPUT_STORE_HINT=1" \
           "-DLOOM_INPUT_LOAD_HINT=5 -DLOOM_OUTPUT_STORE_HINT=1"; do
    k=$((k + 1))
    echo "$k: $h" >> "$r/hints.txt"
    LOOM_NVRTC_OPTIONS="$h" timeout 120 build-gpu/bin/loom_bench --skip-host --skip-compile \
      --dtypes fp32 --cases layer_norm_16384x4096,rms_norm_16384x4096,gelu_tanh_bias_16384x4096,sum_dim0_16384x4096 \
      --json "$r/loom-hint$k.json" > "$r/loom-hint$k.log" 2>&1
    echo "bench hints $k ($h) rc=$?" >> "$r/status.txt"
  done
fi
if [[ -n $sweep ]]; then  # heuristic variants (loom_bench --params), one JSON per line
  k=0
  grep -v '^\s*#' "$sweep" | while read -r cases dtypes params; do
    [[ -z $cases ]] && continue
    k=$((k + 1))
    timeout 120 build-gpu/bin/loom_bench --skip-host --skip-compile --cases "$cases" \
      --dtypes "$dtypes" --params "$params" --json "$r/sweep$k.json" > "$r/sweep$k.log" 2>&1
    echo "sweep $k ($cases $dtypes $params) rc=$?" >> "$r/status.txt"
  done
  python3 benchmarks/sweep_table.py "$r"/sweep*.json > "$r/sweep.txt" 2>&1
fi
if [[ $stages == 1 ]]; then
  timeout 60 build-gpu/bin/loom_compile_stages --case layer_norm --dtype fp32 > "$r/stages.txt" 2>&1
fi
ctest --test-dir build-gpu -L gpu --output-on-failure --timeout 120 > "$r/gpu-tier.log" 2>&1
echo "gpu tier rc=$?" >> "$r/status.txt"
if [[ $mpi == 1 ]]; then  # GPU ranks: the mpi tier, then the founding case's figures
  # -V: the tests' own output too, so a skipped GPU test shows (ctest counts a skip as a pass).
  LOOM_MPI_TEST_BACKEND=cuda ctest --test-dir build-gpu -L mpi -V --timeout 300 \
    > "$r/mpi-tier.log" 2>&1
  echo "mpi tier (GPU ranks) rc=$?" >> "$r/status.txt"
  mpi_flags=(--allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE=0)
  {
    echo "== single device: loom run examples/var_mean_fp32.fus --backend cuda --bench"
    timeout 200 build-gpu/bin/loom run examples/var_mean_fp32.fus --backend cuda --bench
    for d in 1 2 4; do
      echo "== mpirun -np $d loom run examples/multidevice/var_mean_sp_d$d.fus --backend cuda --bench"
      NCCL_NVLS_ENABLE=0 timeout 300 mpirun -np "$d" "${mpi_flags[@]}" build-gpu/bin/loom run \
        "examples/multidevice/var_mean_sp_d$d.fus" --backend cuda --bench
    done
  } > "$r/founding.txt" 2>&1
  echo "founding case rc=$?" >> "$r/status.txt"
fi
if [[ $comm == 1 ]]; then  # collectives through Loom next to NCCL / MPI called directly
  # Staged sweeps stop at 64 MiB here (every staged call copies through pageable host memory;
  # run_comm_bench.sh's own default, 256 MiB, takes minutes more than this call has), and each
  # configuration gets at most 150 s.
  LOOM_COMM_BENCH=build-gpu/bin/loom_comm_bench COMM_BENCH_STAGED_MAX=${COMM_BENCH_STAGED_MAX:-64M} \
    COMM_BENCH_RUN_TIMEOUT=150 bash benchmarks/run_comm_bench.sh --gpu "$r/comm" > "$r/comm.log" 2>&1
  echo "comm bench rc=$?" >> "$r/status.txt"
fi
if [[ $examples == 1 ]]; then  # every full-size example, checked by the reference evaluator
  for f in examples/*.fus; do
    (timeout 200 build-gpu/bin/loom run "$f" --backend cuda > "$r/run-$(basename "$f" .fus).log" 2>&1
     echo "loom run $f rc=$?" >> "$r/examples.txt") &
  done
  wait
  sort "$r/examples.txt" >> "$r/status.txt"
fi
torch_arg=()
[[ -f $r/torch.json ]] && torch_arg=(--torch "$r/torch.json")
python3 benchmarks/compare.py "${torch_arg[@]}" --loom "$r/loom.json" --markdown \
  --out "$r/table.md" > /dev/null 2>&1
python3 benchmarks/compare.py "${torch_arg[@]}" --loom "$r/loom.json" --out "$r/table.txt" \
  > /dev/null 2>&1
tar czf "$out/all.tgz" -C "$r" . && rm -rf "$r"
tar xzf "$out/all.tgz" -O ./status.txt
tar xzf "$out/all.tgz" -O ./gpu-tier.log | grep -E "tests passed|Failed|FAILED"
tar xzf "$out/all.tgz" -O ./table.txt
if [[ $mpi == 1 ]]; then
  tar xzf "$out/all.tgz" -O ./mpi-tier.log | grep -E "tests passed|Failed|FAILED"
  echo "mpi tier: $(tar xzf "$out/all.tgz" -O ./mpi-tier.log | grep -c '\[  SKIPPED \]') gtest lines SKIPPED"
  tar xzf "$out/all.tgz" -O ./founding.txt | grep -E "^==|bench|rank\(s\)|FAIL|error"
fi
[[ $comm == 1 ]] && tar xzf "$out/all.tgz" -O ./comm.log
[[ -n $sweep ]] && tar xzf "$out/all.tgz" -O ./sweep.txt
for j in $(tar tzf "$out/all.tgz" | grep -E 'loom-(fast-compile|hint[0-9]+)\.json$'); do
  tag=$(basename "$j" .json)
  python3 benchmarks/compare.py --loom <(tar xzf "$out/all.tgz" -O "$j") 2>/dev/null |
    sed -n '/^case/,$p' | grep -v "^case\|^---" | sed "s/^/$tag: /" || true
done
tar xzf "$out/all.tgz" -O ./hints.txt 2>/dev/null || true
tar xzf "$out/all.tgz" -O ./stages.txt 2>/dev/null || true
