#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the GPU machine. Each step writes its log under $OUT's working folder and one line
# to status.txt (name, exit status, seconds); everything lands in $OUT/all.tgz (one file, so the
# device tool brings it back whole) and $OUT/summary.txt, which is also printed last. Steps that
# would start after --deadline seconds are skipped (and say so), so the archive is always written
# inside the device tool's 10-minute limit.
#
#   bash tools/gpu-bench-run.sh [--verify] [--dry-run] [--build-dir DIR] [--deadline SECONDS]
#                               [--examples] [--fast-compile] [--ab-hints] [--stages]
#                               [--sweep FILE] [--shape-sweep] [--no-torch] [--mpi] [--comm]
#
#   --verify        the whole GPU verification (docs/testing.md, "GPU verification"): the build
#                   with the Python package, the gpu tier, the python tier on CUDA tensors (CUDA
#                   variants counted), the mpi tier with GPU ranks, the founding Python test under
#                   mpirun -np 1 and -np 2, host time of a cached execute from Python next to
#                   torch eager and torch.compile, loom_bench with its torch side, and the shape
#                   sweep (--mpi --shape-sweep implied)
#   --dry-run       run on a machine without a GPU: every step runs that can (build, python tier
#                   and mpi tier on CPU, host time on CPU tensors); steps that need a GPU run their
#                   binaries' --help instead, so a typo fails here and not on the device
#   --build-dir DIR the build folder (default build-gpu; a dry run reuses build/ when it exists)
#   --deadline S    skip steps that would start after S seconds, and stop any step 30 s after
#                   it (default 540)
#   --only A,B,...  run only the steps so named (status.txt names them; the build always runs,
#                   a no-op when the build folder is up to date): a second call on a warm machine;
#                   "tune" names every --tune step, "linear" every --linear step
#   --examples      also run every full-size example with `loom run --backend cuda` (correctness)
#   --fast-compile  also time every case with LOOM_NVRTC_FAST_COMPILE=min
#   --ab-hints      also time the fp32 cases under each cache-hint define (LOOM_NVRTC_OPTIONS)
#   --stages        also time the CPU compile stages there (loom_compile_stages)
#   --compile-probe also a cold and two warm compile probes of loom_bench with LOOM_DUMP=compile_time
#                   (where a warm start's milliseconds go; compile_probe*.log)
#   --linear        also the linear cases (bf16 and fp32) with 300 repetitions, Loom and torch
#                   eager alternating three times each (linear/loom-K.json, linear/torch-K.json),
#                   so a gap of a few percent is told from run-to-run drift
#   --attention     also the fused attention next to torch's SDPA (benchmarks/attention_bench.py
#                   --composite; attention/ holds torch.json, loom.json and table.md)
#   --no-torch      skip the torch side (a Loom-only run: no side-by-side tables)
#   --mpi           also the mpi tier with GPU ranks (ranks share the GPUs) and the founding case
#                   per rank for 1, 2 and 4 ranks next to the single-device run (founding.txt)
#   --comm          also the communication microbenchmark on GPU ranks (loom_comm_bench through
#                   benchmarks/run_comm_bench.sh --gpu); tables in comm/*.txt
#   --shape-sweep   also the shape sweep (loom_bench --sweep next to torch_sweep.py; sweep/)
#   --no-shape-sweep  leave the shape sweep out of --verify
#   --norm-bwd-sweep  also issue 37's layer_norm / rms_norm backward sweep (bandwidth regime,
#                   widths 256..65536 and the model widths; loom_bench --sweep-families next to
#                   torch_sweep.py --families; sweep-norm-bwd/)
#   --sweep-regimes L the shape sweep's regimes (bandwidth,latency; default both)
#   --sweep FILE    also time heuristic variants: each line of FILE is "CASES DTYPES PARAMS"
#                   (loom_bench --cases/--dtypes/--params); '#' starts a comment
#   --tune FILE     also time heuristic variants on shapes of the shape sweep (bandwidth regime):
#                   each line of FILE is "FAMILIES WIDTHS DTYPES PARAMS" (PARAMS '-': the
#                   heuristics' own choice); tune.txt lists the best variant of each shape
#                   (benchmarks/tune_table.py)
#   --build-targets L  build only these targets (comma-separated), e.g. loom_bench for --tune
set -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
examples=0 fast=0 hints=0 stages=0 probe=0 attention=0 linear=0 nbwd=0 sweep="" tune="" targets="" torch=1 mpi=0 comm=0 verify=0 dry=0 shape=0
build="" deadline=540 only="" regimes=bandwidth,latency
while [[ $# -gt 0 ]]; do
  a=$1
  shift
  case $a in
    --verify) verify=1 mpi=1 shape=1 ;;
    --dry-run) dry=1 ;;
    --build-dir) build=${1:?--build-dir needs a folder}; shift ;;
    --deadline) deadline=${1:?--deadline needs seconds}; shift ;;
    --only) only=,${1:?--only needs step names},; shift ;;
    --sweep) sweep=${1:?--sweep needs a file}; shift ;;
    --tune) tune=${1:?--tune needs a file}; shift ;;
    --build-targets) targets=${1:?--build-targets needs target names}; shift ;;
    --shape-sweep) shape=1 ;;
    --no-shape-sweep) shape=0 ;;
    --norm-bwd-sweep) nbwd=1 ;;
    --sweep-regimes) regimes=${1:?--sweep-regimes needs bandwidth, latency or both}; shift ;;
    --no-torch) torch=0 ;;
    --mpi) mpi=1 ;;
    --comm) comm=1 ;;
    --examples) examples=1 ;;
    --fast-compile) fast=1 ;;
    --ab-hints) hints=1 ;;
    --stages) stages=1 ;;
    --compile-probe) probe=1 ;;
    --attention) attention=1 ;;
    --linear) linear=1 ;;
    -h | --help) sed -n '3,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "gpu-bench-run.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done
[[ -z $sweep || -f $sweep ]] || { echo "gpu-bench-run.sh: no sweep file '$sweep'" >&2; exit 2; }
[[ -z $tune || -f $tune ]] || { echo "gpu-bench-run.sh: no tune file '$tune'" >&2; exit 2; }
target_args=()
[[ -n $targets ]] && target_args=(--target ${targets//,/ })
if [[ $dry == 1 ]]; then
  out=${OUT:-$(mktemp -d)}
  [[ -z $build && -d build ]] && build=build
else
  out=${OUT:?set OUT to the output folder}
fi
build=${build:-build-gpu}
r=$out/r
rm -rf "$r"
mkdir -p "$r"
py=$(command -v python3)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
mpi_flags=(--allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE=0 -x PYTHONPATH -x LOOM_BACKEND)
gpu=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$r/smi.txt" 2>&1 &&
  gpu=1
if [[ $gpu == 0 && $dry == 0 ]]; then
  echo "gpu-bench-run.sh: nvidia-smi sees no GPU; --dry-run runs what a CPU can" >&2
  exit 2
fi
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: ${LOOM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "gpu: $(cat "$r/smi.txt")"
  echo "mode: $([[ $dry == 1 ]] && echo dry-run || echo device)"
} > "$r/header.txt"

# step NAME TIMEOUT COMMAND...: runs COMMAND with its output in NAME.log, one status line.
step() {
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  if [[ -n $only && $name != build && $name != configure && $only != *",${name%-dry},"* &&
        ! ( $only == *,tune,* && $name == tune[0-9]* ) &&
        ! ( $only == *,linear,* && $name == linear_* ) ]]; then
    return 1
  fi
  if ((SECONDS - start > deadline)); then
    echo "$name SKIPPED (past the ${deadline} s deadline)" >> "$r/status.txt"
    return 1
  fi
  # No step runs past the deadline's grace (30 s), so the archive is always written in time.
  local left=$((deadline + 30 - (SECONDS - start)))
  ((left < limit)) && limit=$left
  timeout --kill-after=5 "$limit" "$@" > "$r/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" >> "$r/status.txt"
  return $rc
}
# gpu_step NAME TIMEOUT COMMAND...: as step where there is a GPU; a dry run checks the binary's
# --help instead (the first word of COMMAND that is a file or a command).
gpu_step() {
  local name=$1 limit=$2
  if [[ $gpu == 1 ]]; then
    step "$@"
    return
  fi
  shift 2
  local bin=$1
  [[ $bin == timeout || $bin == env || $bin == *=* ]] && bin=$3
  step "$name-dry" 60 "$bin" --help
}

# Not -Werror: another compiler's new warning must not cost the call; the summary counts them.
# The torch side runs while Loom builds (CPU-bound); its GPU timings never overlap Loom's.
torch_pids=()
if [[ $torch == 1 && $gpu == 1 && ( -z $only || $only == *,torch,* ) ]]; then
  (step torch 420 "$py" benchmarks/torch_baseline.py --out "$r/torch.json") &
  torch_pids+=($!)
fi
if [[ $dry == 1 && -f $build/CMakeCache.txt ]]; then
  step build 1800 cmake --build "$build" -j "$(nproc)" "${target_args[@]}"
else
  step configure 300 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLOOM_BUILD_PYTHON=ON -DPython_EXECUTABLE="$py" &&
    step build 600 cmake --build "$build" -j "$(nproc)" "${target_args[@]}"
fi
((${#torch_pids[@]})) && wait "${torch_pids[@]}"
export PYTHONPATH=$PWD/$build/python

# torch.compile's side of the shape sweep compiles every shape now (while the gpu and python
# tiers run), in processes that share Inductor's disk cache, so its timing run later loads them
# (benchmarks/torch_sweep.py).
precompile_pids=()
if [[ $shape == 1 && $torch == 1 && $gpu == 1 && ( -z $only || $only == *,shape_sweep_precompile,* ) ]]
then
  (step shape_sweep_precompile 560 "$py" benchmarks/torch_sweep.py --precompile-only \
    --precompile-jobs 8 --regimes "$regimes") &
  precompile_pids+=($!)
fi
nbwd_families=layer_norm_bwd,rms_norm_bwd
if [[ $nbwd == 1 && $torch == 1 && $gpu == 1 && ( -z $only || $only == *,norm_bwd_sweep_precompile,* ) ]]
then
  (step norm_bwd_sweep_precompile 560 "$py" benchmarks/torch_sweep.py --precompile-only \
    --precompile-jobs 8 --families "$nbwd_families" --regimes bandwidth) &
  precompile_pids+=($!)
fi

gpu_step gpu_tier 240 ctest --test-dir "$build" -L gpu --output-on-failure --timeout 120 -j 4

if [[ $verify == 1 ]]; then
  # Every CUDA test of the python tier runs (device fixture "cuda"); skips are counted, and on
  # the GPU machine every skip's reason is in the log (-rs). -v names each test as it ends, so a
  # failure is named even when the deadline stops the tier before pytest's summary.
  # Only the CUDA variants: the CPU ones are CI's python tier.
  step python_tier 300 "$py" -m pytest -p no:cacheprovider --color=no -v -rfEs -m "not mpi" -k cuda tests/python
  if [[ -f $r/python_tier.log ]]; then
    grep -E '^SKIPPED' "$r/python_tier.log" > "$r/python_counts.txt"
    echo "python tier (CUDA variants): $(grep -E '[0-9]+ (passed|failed|skipped)' \
      "$r/python_tier.log" | tail -1)" >> "$r/python_counts.txt"
  fi
  # The founding test, one rank and two, on GPU ranks where there is a GPU.
  for n in 1 2; do
    step "founding_py_np$n" 240 mpirun -np "$n" "${mpi_flags[@]}" "$py" -m pytest \
      -p no:cacheprovider --color=no -q -rs tests/python/test_welford_mpi.py
  done
  # Host time of a cached execute from Python, next to torch eager and torch.compile.
  if [[ $gpu == 1 ]]; then
    step host_time 180 "$py" benchmarks/python_host_time.py --device cuda
  else
    step host_time 180 "$py" benchmarks/python_host_time.py --device cpu --iters 2000
  fi
fi
if [[ $shape == 1 ]]; then
  # The shape sweep: Loom's side, then torch's (its compiles done while Loom built), then the
  # report (docs/performance.md, "Shape sweep").
  mkdir -p "$r/sweep"
  if [[ $gpu == 1 ]]; then
    # The compiles touch the GPU once per shape: never while Loom is timed.
    ((${#precompile_pids[@]})) && wait "${precompile_pids[@]}"
    step shape_sweep_loom 400 "$build/bin/loom_bench" --sweep --sweep-regimes "$regimes" \
      --json "$r/sweep/loom.json"
    if [[ $torch == 1 ]]; then
      step shape_sweep_torch 400 "$py" benchmarks/torch_sweep.py --regimes "$regimes" \
        --out "$r/sweep/torch.json"
    fi
  else
    step shape_sweep_loom-dry 900 "$build/bin/loom_bench" --sweep --backend host --sweep-rows 3 \
      --sweep-regimes bandwidth --json "$r/sweep/loom.json"
    step shape_sweep_torch-dry 60 "$py" benchmarks/torch_sweep.py --list
  fi
  step shape_sweep_report 60 "$py" benchmarks/sweep_report.py --loom "$r/sweep/loom.json" \
    --torch "$r/sweep/torch.json" --out "$r/sweep"
fi
if [[ $nbwd == 1 ]]; then
  # Issue 37's norm-backward sweep, the same way (docs/performance.md, "layer_norm and rms_norm
  # backward").
  d=$r/sweep-norm-bwd
  mkdir -p "$d"
  if [[ $gpu == 1 ]]; then
    ((${#precompile_pids[@]})) && wait "${precompile_pids[@]}"
    step norm_bwd_sweep_loom 300 "$build/bin/loom_bench" --sweep --sweep-regimes bandwidth \
      --sweep-families "$nbwd_families" --json "$d/loom.json"
    if [[ $torch == 1 ]]; then
      step norm_bwd_sweep_torch 300 "$py" benchmarks/torch_sweep.py --regimes bandwidth \
        --families "$nbwd_families" --out "$d/torch.json"
    fi
  else
    step norm_bwd_sweep_loom-dry 600 "$build/bin/loom_bench" --sweep --backend host \
      --sweep-rows 3 --sweep-regimes bandwidth --sweep-families "$nbwd_families" \
      --json "$d/loom.json"
    step norm_bwd_sweep_torch-dry 60 "$py" benchmarks/torch_sweep.py --list \
      --families "$nbwd_families" --regimes bandwidth
  fi
  step norm_bwd_sweep_report 60 "$py" benchmarks/sweep_report.py --loom "$d/loom.json" \
    --torch "$d/torch.json" --out "$d"
fi
gpu_step loom_bench 240 env LOOM_DUMP=scheduler_params,ptxas "$build/bin/loom_bench" \
  --json "$r/loom.json"
if [[ $mpi == 1 ]]; then
  # -V: the tests' own output too, so a skipped GPU test shows (ctest counts a skip as a pass).
  backend=cuda
  [[ $gpu == 0 ]] && backend=host
  step mpi_tier 300 env LOOM_MPI_TEST_BACKEND=$backend ctest --test-dir "$build" -L mpi -V \
    --timeout 240
  if [[ -f $r/mpi_tier.log ]]; then
    echo "mpi tier: $(grep -c '\[  SKIPPED \]' "$r/mpi_tier.log") gtest lines SKIPPED" \
      > "$r/mpi_counts.txt"
    grep -E 'tests passed|tests failed' "$r/mpi_tier.log" >> "$r/mpi_counts.txt"
  fi
  if [[ $gpu == 1 ]]; then
    step founding 300 bash tools/founding-per-rank.sh "$build"
  else
    step founding-dry 60 bash tools/founding-per-rank.sh "$build" --help
  fi
fi
if [[ $fast == 1 ]]; then  # NVRTC's fast-compile level: compile time and kernel times
  gpu_step loom_fast_compile 240 env LOOM_NVRTC_FAST_COMPILE=min "$build/bin/loom_bench" \
    --skip-host --json "$r/loom-fast-compile.json"
fi
if [[ $hints == 1 ]]; then  # cache hints on the fp32 cases (docs/runtime-library.md)
  k=0
  for h in "-DLOOM_INPUT_LOAD_HINT=1" "-DLOOM_INPUT_LOAD_HINT=2" "-DLOOM_INPUT_LOAD_HINT=5" \
           "-DLOOM_OUTPUT_STORE_HINT=1" "-DLOOM_INPUT_LOAD_HINT=2 -DLOOM_OUTPUT_STORE_HINT=1" \
           "-DLOOM_INPUT_LOAD_HINT=5 -DLOOM_OUTPUT_STORE_HINT=1"; do
    k=$((k + 1))
    echo "$k: $h" >> "$r/hints.txt"
    gpu_step "loom-hint$k" 120 env LOOM_NVRTC_OPTIONS="$h" "$build/bin/loom_bench" --skip-host \
      --skip-compile --dtypes fp32 \
      --cases layer_norm_16384x4096,rms_norm_16384x4096,gelu_tanh_bias_16384x4096,sum_dim0_16384x4096 \
      --json "$r/loom-hint$k.json"
  done
fi
if [[ -n $sweep ]]; then  # heuristic variants (loom_bench --params), one JSON per line
  k=0
  while read -r cases dtypes params; do
    [[ -z $cases || $cases == \#* ]] && continue
    k=$((k + 1))
    gpu_step "sweep$k" 120 "$build/bin/loom_bench" --skip-host --skip-compile --cases "$cases" \
      --dtypes "$dtypes" --params "$params" --json "$r/sweep$k.json"
  done < "$sweep"
  ls "$r"/sweep[0-9]*.json > /dev/null 2>&1 &&
    "$py" benchmarks/sweep_table.py "$r"/sweep[0-9]*.json > "$r/sweep.txt" 2>&1
fi
if [[ $stages == 1 ]]; then
  step stages 60 "$build/bin/loom_compile_stages" --case layer_norm --dtype fp32
fi
if [[ $probe == 1 ]]; then  # the warm start's breakdown: one cache dir, cold then warm twice
  probe_dir=$(mktemp -d)
  # Without the plan cache (LOOM_PLAN_CACHE=0): the warm starts run the whole CPU pipeline.
  for k in cold warm1 warm2; do
    gpu_step "compile_probe_$k" 60 env LOOM_CACHE_DIR="$probe_dir" LOOM_DUMP=compile_time \
      LOOM_PLAN_CACHE=0 "$build/bin/loom_bench" --compile-probe --compile-case layer_norm_16384x4096
  done
  # Then with it (the default): the first stores the plan, the next two are the warm starts
  # that skip segmentation, scheduling, lowering and codegen (and never load libnvrtc).
  for k in plan_store plan_warm1 plan_warm2; do
    gpu_step "compile_probe_$k" 60 env LOOM_CACHE_DIR="$probe_dir" LOOM_DUMP=compile_time \
      "$build/bin/loom_bench" --compile-probe --compile-case layer_norm_16384x4096
  done
  rm -rf "$probe_dir"
fi
if [[ $linear == 1 ]]; then  # the linear cases, Loom and torch eager alternating
  mkdir -p "$r/linear"
  lcases=linear_8192x4096x16384,linear_gelu_tanh_8192x4096x16384
  for k in 1 2 3; do
    gpu_step "linear_loom$k" 120 "$build/bin/loom_bench" --cases "$lcases" --reps 300 \
      --skip-host --skip-compile --json "$r/linear/loom-$k.json"
    if [[ $torch == 1 && $gpu == 1 ]]; then
      step "linear_torch$k" 120 "$py" benchmarks/torch_baseline.py --cases "$lcases" --reps 300 \
        --skip-compile --skip-host --out "$r/linear/torch-$k.json"
    fi
  done
fi
if [[ $attention == 1 ]]; then  # the fused attention kernels next to torch's SDPA
  if [[ $gpu == 1 ]]; then
    step attention 240 env LOOM_ATTENTION_BENCH="$build/bin/loom_attention_bench" \
      "$py" benchmarks/attention_bench.py \
      --composite --out "$r/attention"
  else
    step attention-dry 60 "$py" benchmarks/attention_bench.py --help
  fi
fi
if [[ $comm == 1 ]]; then  # collectives through Loom next to NCCL / MPI called directly
  gpu_step comm 300 env LOOM_COMM_BENCH="$build/bin/loom_comm_bench" \
    COMM_BENCH_STAGED_MAX="${COMM_BENCH_STAGED_MAX:-64M}" COMM_BENCH_RUN_TIMEOUT=150 \
    bash benchmarks/run_comm_bench.sh --gpu "$r/comm"
fi
if [[ $examples == 1 ]]; then  # every full-size example, checked by the reference evaluator
  for f in examples/*.fus; do
    gpu_step "run-$(basename "$f" .fus)" 200 "$build/bin/loom" run "$f" --backend cuda
  done
fi
if [[ -n $tune ]]; then  # heuristic variants on sweep shapes, one JSON per line
  k=0
  while read -r families widths dtypes params; do
    [[ -z $families || $families == \#* ]] && continue
    k=$((k + 1))
    echo "tune$k: $families $widths $dtypes $params" >> "$r/tune-lines.txt"
    param_args=()
    [[ $params != - ]] && param_args=(--params "$params")
    if [[ $gpu == 1 ]]; then
      step "tune$k" 120 "$build/bin/loom_bench" --sweep --sweep-regimes bandwidth \
        --sweep-families "$families" --sweep-widths "$widths" --dtypes "$dtypes" --reps 20 \
        --warmup 3 "${param_args[@]}" --json "$r/tune$k.json"
    else  # the options parse, and each variant schedules and checks on the host backend
      step "tune$k-dry" 300 "$build/bin/loom_bench" --sweep --backend host --sweep-rows 3 \
        --sweep-regimes bandwidth --sweep-families "$families" --sweep-widths "$widths" \
        --dtypes "$dtypes" "${param_args[@]}" --json "$r/tune$k.json"
    fi
  done < "$tune"
  "$py" benchmarks/tune_table.py "$r/tune-lines.txt" "$r" > "$r/tune.txt" 2>&1
fi
torch_arg=()
[[ -f $r/torch.json ]] && torch_arg=(--torch "$r/torch.json")
if [[ -f $r/loom.json ]]; then
  "$py" benchmarks/compare.py "${torch_arg[@]}" --loom "$r/loom.json" --markdown \
    --out "$r/table.md" > /dev/null 2>&1
  "$py" benchmarks/compare.py "${torch_arg[@]}" --loom "$r/loom.json" --out "$r/table.txt" \
    > /dev/null 2>&1
fi

{
  cat "$r/header.txt"
  echo "elapsed: $((SECONDS - start)) s"
  echo "== steps"
  cat "$r/status.txt"
  [[ -f $r/build.log ]] && echo "build warnings: $(grep -c 'warning:' "$r/build.log")"
  [[ -f $r/gpu_tier.log ]] && grep -E "tests passed|tests failed|\(Failed\)|\*\*\*Failed" \
    "$r/gpu_tier.log"
  [[ -f $r/python_counts.txt ]] && { echo "== python tier"; cat "$r/python_counts.txt"; }
  for n in 1 2; do
    [[ -f $r/founding_py_np$n.log ]] &&
      echo "founding python np$n: $(grep -E 'passed|failed|error' "$r/founding_py_np$n.log" | tail -1)"
  done
  [[ -f $r/mpi_counts.txt ]] && { echo "== mpi tier"; cat "$r/mpi_counts.txt"; }
  [[ -f $r/founding.log ]] && grep -E "^==|bench|rank\(s\)|FAIL|error" "$r/founding.log"
  [[ -f $r/host_time.log ]] && { echo "== host time"; tail -8 "$r/host_time.log"; }
  [[ -f $r/table.txt ]] && { echo "== loom_bench"; cat "$r/table.txt"; }
  [[ -f $r/sweep/summary.txt ]] && { echo "== shape sweep"; cat "$r/sweep/summary.txt"; }
  [[ -f $r/sweep.txt ]] && cat "$r/sweep.txt"
  [[ -f $r/tune.txt ]] && { echo "== tune"; cat "$r/tune.txt"; }
  [[ -f $r/comm.log ]] && tail -40 "$r/comm.log"
  [[ -f $r/hints.txt ]] && cat "$r/hints.txt"
  [[ -f $r/stages.log ]] && cat "$r/stages.log"
  [[ -f $r/attention/table.md ]] && { echo "== attention"; cat "$r/attention/table.md"; }
  for k in cold warm1 warm2 plan_store plan_warm1 plan_warm2; do
    [[ -f $r/compile_probe_$k.log ]] &&
      { echo "== compile probe $k"; grep -E 'compile_time|compile_probe' "$r/compile_probe_$k.log"; }
  done
  # The first failing step's last lines, so that a failure reads without unpacking the archive.
  failed=$(grep -m1 -E 'rc=[1-9]' "$r/status.txt" | cut -d' ' -f1)
  if [[ -n $failed && -f $r/$failed.log ]]; then
    echo "== first failed step: $failed (last 40 lines)"
    tail -40 "$r/$failed.log"
  fi
} > "$out/summary.txt" 2>&1
tar czf "$out/all.tgz" -C "$r" . && rm -rf "$r"
cat "$out/summary.txt"
