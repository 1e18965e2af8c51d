#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates examples/*.fus from the ops layer (loom gen-examples), so the examples and the
# golden texts the tests compare against stay what the current ops and printer produce.
# Usage: tools/regen-examples.sh [BUILD_DIR]   (default: build; needs build/bin/loom)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
loom="$build/bin/loom"
if [[ ! -x "$loom" ]]; then
  echo "regen-examples: $loom not found; build the 'loom' target first" >&2
  exit 1
fi
mkdir -p "$root/examples"
"$loom" gen-examples "$root/examples"
