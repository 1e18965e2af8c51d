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

# The main job.
exec "$loom" eval examples/var_mean_small.fus --seed 0
