#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom_comm_bench's configurations in one call (benchmarks/README.md). Each configuration writes
# NAME.txt (what rank 0 printed: header, progress, the table) and NAME.csv under OUT_DIR, and a
# line with its exit status to OUT_DIR/status.txt; the tables are printed at the end.
#
#   benchmarks/run_comm_bench.sh [--cpu] [--gpu] OUT_DIR [-- FLAGS passed to every run]
#
#   --cpu  CPU ranks: mpirun -np 2 and 4 (oversubscribed), host tensors, MPI       cpu-np{2,4}
#   --gpu  GPU ranks: -np 1 forced through NCCL (a team of one: Loom's host time next to raw
#          NCCL of one rank)                                                        gpu-np1-nccl
#          -np 2 and 4 with the transport Loom picks: staged through the host where the ranks
#          share a GPU (raw: the same copies and MPI by hand), NCCL with a GPU each gpu-np{2,4}
#          -np <GPU count> as well when the machine has more than 4 GPUs            gpu-npN
#   neither flag: --cpu, and --gpu where nvidia-smi lists a GPU
#
# The binary: $LOOM_COMM_BENCH, else the first of build-gpu/bin and build/bin/loom_comm_bench.
# GPU runs sweep 1 KiB to COMM_BENCH_GPU_MAX (default 1G); runs where ranks share a GPU stop at
# COMM_BENCH_STAGED_MAX (default 256M: every staged call copies through pageable host memory,
# and a sweep to 1 GiB would take over ten minutes). NCCL_NVLS_ENABLE=0 on GPU runs (multicast
# off, as KINDS.md asks for the lent machines). Each run is stopped after COMM_BENCH_RUN_TIMEOUT
# seconds (default 1800; mpirun ends its ranks). Exit status: 1 when any run failed.
set -u -o pipefail
cpu=0 gpu=0 out="" extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --cpu) cpu=1 ;;
    --gpu) gpu=1 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "run_comm_bench.sh: unknown option '$1'" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
[[ -n $out ]] || { echo "usage: run_comm_bench.sh [--cpu] [--gpu] OUT_DIR [-- FLAGS]" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [[ $cpu == 0 && $gpu == 0 ]]; then
  cpu=1
  [[ $gpus -gt 0 ]] && gpu=1
fi
bench=${LOOM_COMM_BENCH:-}
if [[ -z $bench ]]; then
  for b in build-gpu/bin/loom_comm_bench build/bin/loom_comm_bench; do
    [[ -x $b ]] && { bench=$b; break; }
  done
fi
[[ -n $bench && -x $bench ]] || { echo "run_comm_bench.sh: no loom_comm_bench built" >&2; exit 2; }
mkdir -p "$out"
mpi=(--allow-run-as-root --oversubscribe)
status=0

# run NAME NP FLAGS...: one configuration.
run() {
  local name=$1 np=$2
  shift 2
  timeout "${COMM_BENCH_RUN_TIMEOUT:-1800}" mpirun -np "$np" "${mpi[@]}" -x NCCL_NVLS_ENABLE=0 \
    "$bench" --csv "$out/$name.csv" "$@" "${extra[@]}" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "$name (mpirun -np $np loom_comm_bench $*) rc=$rc" >> "$out/status.txt"
  [[ $rc == 0 ]] || status=1
}

if [[ $cpu == 1 ]]; then
  for np in 2 4; do run "cpu-np$np" "$np" --backend host; done
fi
if [[ $gpu == 1 ]]; then
  gmax=${COMM_BENCH_GPU_MAX:-1G}
  smax=${COMM_BENCH_STAGED_MAX:-256M}
  export NCCL_NVLS_ENABLE=0
  run gpu-np1-nccl 1 --backend cuda --cuda-transport nccl --max "$gmax"
  nps=(2 4)
  [[ $gpus -gt 4 ]] && nps+=("$gpus")
  for np in "${nps[@]}"; do
    max=$gmax
    [[ $np -gt $gpus ]] && max=$smax  # ranks share a GPU: staged
    run "gpu-np$np" "$np" --backend cuda --max "$max"
  done
fi
cat "$out/status.txt"
for f in "$out"/*.txt; do
  [[ $(basename "$f") == status.txt ]] && continue
  echo "== $(basename "$f" .txt)"
  # The header and the table; the progress lines ("# allgather 1 KiB: ...") are in the file.
  grep -vE '^# [a-z_]+ [0-9]+ [KMG]?i?B: ' "$f"
done
exit $status
