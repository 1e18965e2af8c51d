#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps loom_comm_bench from rotting (mpi tier): at -np 2 on small sizes it exits 0 with a table
# row per collective and size, every result checked; with Loom's output corrupted on purpose
# (--corrupt-for-test) it exits non-zero and says FAIL, so the check itself is checked.
# LOOM_MPI_TEST_BACKEND=cuda runs the ranks on the GPU, as the rest of the mpi tier does.
#
#   comm_bench_smoke.sh MPIRUN LOOM_COMM_BENCH
set -u -o pipefail
mpirun=${1:?mpirun} bench=${2:?loom_comm_bench}
flags=(-np 2 --allow-run-as-root --oversubscribe)
backend=${LOOM_MPI_TEST_BACKEND:-host}
[[ $backend == cuda ]] || backend=host
fail() { echo "FAIL: $*"; exit 1; }

out=$("$mpirun" "${flags[@]}" "$bench" --backend "$backend" --min 1K --max 64K --factor 4 \
  --iters 3 --warmup 1 2>&1)
rc=$?
echo "$out"
# Status 2 on GPU ranks: no GPU here (the binary says why); skipped, as the tier's gtests skip.
if [[ $backend == cuda && $rc == 2 ]]; then
  echo "loom_comm_bench smoke test: SKIPPED (GPU ranks asked for, none usable)"
  exit 0
fi
[[ $rc == 0 ]] || fail "exit status $rc, expected 0"
for c in allgather allreduce reduce_scatter; do
  # collective, size, transport (mpi; on GPU ranks staged or nccl), the figures, the check.
  n=$(grep -cE "^$c +[0-9]+ KiB +(mpi|staged|nccl) +[0-9]+ .* ok$" <<< "$out")
  [[ $n == 4 ]] || fail "$n table rows for $c, expected 4 (1, 4, 16 and 64 KiB)"
done
grep -q "^# every result checked: ok" <<< "$out" || fail "no 'every result checked: ok' line"

out=$("$mpirun" "${flags[@]}" "$bench" --backend "$backend" --sizes 4K --iters 1 --warmup 0 --batch 1 \
  --collectives allreduce --corrupt-for-test 2>&1)
rc=$?
echo "$out"
[[ $rc != 0 ]] || fail "a corrupted result exited 0"
grep -qE "^allreduce +4 KiB .* FAIL$" <<< "$out" || fail "no FAIL row for the corrupted result"
echo "loom_comm_bench smoke test: PASS"
