#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copies the header-only dependencies that a machine without a package manager lacks (the GPU
# machine has fmt but not CLI11: docs/testing.md, "GPU results") into .deps/include, which the
# build finds (cmake/LoomCLI11.cmake). Run it here, then send .deps/ along with the tree (it is
# ignored by git). Idempotent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools/install-deps.sh >/dev/null
src=/usr/include/CLI
[[ -f $src/CLI.hpp ]] || { echo "stage-deps: $src/CLI.hpp not found" >&2; exit 1; }
mkdir -p .deps/include
rm -rf .deps/include/CLI
cp -r "$src" .deps/include/CLI
echo "stage-deps: CLI11 headers in .deps/include/CLI ($(du -sh .deps/include/CLI | cut -f1))"
