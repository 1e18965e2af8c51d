#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs dependencies, builds the loom CLI (preset `release`, build/) and runs the main job.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

tools/install-deps.sh
cmake --preset release
if ! cmake --build --preset release -j "$(nproc)" --target loom; then
  echo "run.sh: building the loom CLI (CMake target 'loom', tools/) failed" >&2
  exit 1
fi

loom=build/bin/loom
if [[ ! -x $loom ]]; then
  echo "run.sh: $loom was not produced by the build; is the 'loom' executable defined in tools/?" >&2
  exit 1
fi

# The main job: the sequence-length var_mean ([1, 2048, 12288] over the last dim) scheduled
# automatically, run, and checked against the reference evaluator; on the GPU when there is one
# (then also timed), on the host backend otherwise (about 20 s on 2 cores).
# `loom run` says which backend it picked and why, each output and its check, and the time split
# into compile, run and reference check; long steps print progress lines to stderr.
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  echo "run.sh: a GPU is present: running on it, then timing 20 runs (--bench)" >&2
  exec "$loom" run examples/var_mean_fp32.fus --seed 0 --bench
fi
echo "run.sh: no GPU (nvidia-smi sees none): running on the host backend (about 20 s on 2 cores)" >&2
exec "$loom" run examples/var_mean_fp32.fus --seed 0
