#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Loom benchmark (when built) and the torch baseline in one go on the GPU machine, then
# prints one side-by-side table (benchmarks/README.md).
#
#   benchmarks/run_all.sh [OUT_DIR] [-- torch_baseline.py options]
#
# OUT_DIR (default build-bench/<UTC time>) receives loom.json, torch.json, the logs, table.txt and
# table.md. The Loom binary is $LOOM_BENCH, else the first of build-gpu/bin/loom_bench and
# build/bin/loom_bench that exists; it is called as `loom_bench --json OUT_DIR/loom.json`, plus
# the options both sides share (--cases, --dtypes, --reps, --warmup, --skip-host) when given.
# This script builds nothing.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

out=""
torch_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help)
      sed -n '3,11s/^# \{0,1\}//p' "$0"
      exit 0
      ;;
    --)
      shift
      torch_args=("$@")
      break
      ;;
    -*)
      echo "run_all.sh: unknown option '$1' (torch_baseline.py options go after --)" >&2
      exit 2
      ;;
    *)
      if [[ -n $out ]]; then
        echo "run_all.sh: more than one OUT_DIR ('$out', '$1')" >&2
        exit 2
      fi
      out=$1
      ;;
  esac
  shift
done
out=${out:-$root/build-bench/$(date -u +%Y%m%d-%H%M%S)}

# loom_bench takes the torch options that mean the same thing on both sides. (Its own
# --skip-compile skips the compile-time probe, not torch.compile, so that one is not passed on.)
loom_args=()
for ((i = 0; i < ${#torch_args[@]}; i++)); do
  arg=${torch_args[i]}
  case $arg in
    --cases | --dtypes | --reps | --warmup)
      loom_args+=("$arg" "${torch_args[i + 1]:-}")
      ((i++))
      ;;
    --cases=* | --dtypes=* | --reps=* | --warmup=* | --skip-host)
      loom_args+=("$arg")
      ;;
  esac
done
mkdir -p "$out" || exit 2
echo "run_all.sh: writing to $out"

if ! command -v python3 > /dev/null; then
  echo "run_all.sh: python3 not found (the GPU machine has python3 3.12 with torch)" >&2
  exit 2
fi

status=0
bench=${LOOM_BENCH:-}
if [[ -z $bench ]]; then
  for candidate in "$root/build-gpu/bin/loom_bench" "$root/build/bin/loom_bench"; do
    if [[ -x $candidate ]]; then
      bench=$candidate
      break
    fi
  done
fi

loom_json=()
if [[ -n $bench ]]; then
  if [[ ! -x $bench ]]; then
    echo "run_all.sh: LOOM_BENCH='$bench' is not an executable file" >&2
    exit 2
  fi
  echo "run_all.sh: Loom: $bench --json $out/loom.json ${loom_args[*]} (log: $out/loom.log)"
  rm -f "$out/loom.json"
  "$bench" --json "$out/loom.json" "${loom_args[@]}" > "$out/loom.log" 2>&1
  loom_rc=$?
  # A failed case (wrong output, error) still leaves a JSON with the other numbers: show them.
  if [[ -s $out/loom.json ]]; then
    loom_json=(--loom "$out/loom.json")
  fi
  if [[ $loom_rc != 0 || ! -s $out/loom.json ]]; then
    echo "run_all.sh: loom_bench exited with $loom_rc (a FAIL/ERROR case, or no GPU);" \
      "see $out/loom.log" >&2
    tail -n 20 "$out/loom.log" >&2
    status=1
  fi
else
  echo "run_all.sh: no Loom benchmark binary (build-gpu/bin/loom_bench); Loom columns show '-'"
fi

echo "run_all.sh: torch: benchmarks/torch_baseline.py (log: $out/torch.log)"
python3 "$root/benchmarks/torch_baseline.py" --out "$out/torch.json" "${torch_args[@]}" \
  2>&1 | tee "$out/torch.log"
torch_rc=${PIPESTATUS[0]}
torch_json=()
if [[ -s $out/torch.json ]]; then
  torch_json=(--torch "$out/torch.json")
fi
if [[ $torch_rc != 0 ]]; then
  echo "run_all.sh: torch_baseline.py exited with $torch_rc; see $out/torch.log" >&2
  status=1
fi

if [[ ${#torch_json[@]} == 0 && ${#loom_json[@]} == 0 ]]; then
  echo "run_all.sh: no numbers from Loom or torch; nothing to compare" >&2
  exit 1
fi
python3 "$root/benchmarks/compare.py" "${torch_json[@]}" "${loom_json[@]}" --markdown \
  --out "$out/table.md" > /dev/null || status=1
echo
python3 "$root/benchmarks/compare.py" "${torch_json[@]}" "${loom_json[@]}" --out "$out/table.txt" \
  || status=1
exit $status
