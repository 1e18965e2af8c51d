#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The founding case ([1, 2048, 12288] var_mean, sequence sharded) on GPU ranks: the single-device
# run, then 1, 2 and 4 ranks (mpirun), each with its kernel time (`loom run --bench`).
#   tools/founding-per-rank.sh BUILD_DIR
# Run by tools/gpu-bench-run.sh --mpi; NVLink multicast stays off in every rank.
set -eo pipefail
build=${1:?usage: founding-per-rank.sh BUILD_DIR}
if [[ ${2:-} == --help ]]; then
  sed -n '3,6s/^# \{0,1\}//p' "$0"
  "$build/bin/loom" run --help > /dev/null
  command -v mpirun > /dev/null
  exit 0
fi
export NCCL_NVLS_ENABLE=0
echo "== single device: loom run examples/var_mean_fp32.fus --backend cuda --bench"
"$build/bin/loom" run examples/var_mean_fp32.fus --backend cuda --bench
for d in 1 2 4; do
  echo "== mpirun -np $d loom run examples/multidevice/var_mean_sp_d$d.fus --backend cuda --bench"
  mpirun -np "$d" --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE=0 "$build/bin/loom" run \
    "examples/multidevice/var_mean_sp_d$d.fus" --backend cuda --bench
done
