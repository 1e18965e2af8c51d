#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `pip install .` of the repository into a fresh virtual environment (with the system's packages
# visible, so torch, nanobind and scikit-build-core are not downloaded again), then a fusion run
# from the installed package, outside the source tree.
#   pip_install_test.sh PYTHON SOURCE_DIR
set -euo pipefail
python=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# A copy of the sources, so the build directory of this check never touches the checkout's.
mkdir "$work/src"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src")
# The build directory one level below the sources and the flags of the ci preset (RelWithDebInfo,
# -Werror), as in the test build: with CCACHE_BASEDIR the compiler command lines are then the same
# and ccache serves the libraries instead of compiling them a second time.
"$work/venv/bin/python" -m pip install --no-build-isolation --no-deps -v "$work/src" \
  -C build-dir="$work/src/build" -C cmake.build-type=RelWithDebInfo \
  -C cmake.define.LOOM_WERROR=ON >"$work/pip.log" 2>&1 || { tail -50 "$work/pip.log"; exit 1; }
cd "$work"
"$work/venv/bin/python" - <<'PY'
import loom
import loom.direct
import torch
from loom.direct import FusionDefinition

assert "site-packages" in loom.__file__, loom.__file__
with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], contiguity=True)
    fd.add_output(fd.ops.sum(fd.ops.mul(x, 2.0), [1]))
x = torch.randn(4, 33)
(y,) = fd.execute([x])
torch.testing.assert_close(y, (x * 2).sum(1), rtol=1e-5, atol=1e-5)
print("pip install: loom", loom.__version__, "from", loom.__file__, "ran a fusion")
PY
