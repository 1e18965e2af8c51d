#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The wheel as a user gets it: `pip wheel` of the repository, its extension module checked to need
# nothing beyond the C++ runtime (no libmpi, libfmt or libboost), then `pip install` of that wheel
# into a fresh virtual environment (with the system's packages visible, so torch and numpy are not
# downloaded again), the installed module checked again with ldd (what it needs, transitively) and,
# from the installed package outside the source tree, with MPI hidden from the loader when
# HIDE_MPI (tests/multidevice/hide_mpi.cpp, an LD_AUDIT module) is given, as on a machine without
# MPI: `import loom`, a fusion run, and a collective between two ranks refused with a UserError
# that names the MPI libraries it could not open.
#   pip_install_test.sh PYTHON SOURCE_DIR [HIDE_MPI]
set -euo pipefail
python=$1
src=$2
hide_mpi=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# A copy of the sources, so the build directory of this check never touches the checkout's.
mkdir "$work/src"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src")
# The build directory one level below the sources and the flags of the ci preset (RelWithDebInfo,
# -Werror), as in the test build: with CCACHE_BASEDIR the compiler command lines are then the same
# and ccache serves most of the libraries instead of compiling them a second time (those that
# format with fmt compile it in for the wheel, pyproject.toml).
"$python" -m pip wheel --no-build-isolation --no-deps -v -w "$work/wheels" "$work/src" \
  -C build-dir="$work/src/build" -C cmake.build-type=RelWithDebInfo \
  -C cmake.define.LOOM_WERROR=ON >"$work/pip-wheel.log" 2>&1 || { tail -50 "$work/pip-wheel.log"; exit 1; }
wheels=("$work"/wheels/loom_fusion-*.whl)
[[ ${#wheels[@]} == 1 && -f ${wheels[0]} ]] || { echo "FAIL: expected one wheel, got: ${wheels[*]}"; exit 1; }
wheel=${wheels[0]}

# What the module needs from the system: the C++ runtime and libc, nothing of MPI, fmt or Boost.
mkdir "$work/unpacked"
"$python" -m zipfile -e "$wheel" "$work/unpacked"
modules=("$work"/unpacked/loom/_C*.so)
[[ -f ${modules[0]} ]] || { echo "FAIL: no loom/_C*.so in $(basename "$wheel")"; exit 1; }
needed=$(readelf -d "${modules[0]}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$(basename "${modules[0]}") needs: $(echo $needed)"
if grep -E '^lib(mpi|open-|fmt|boost)' <<< "$needed"; then
  echo "FAIL: the wheel's module needs the libraries above; it must need only the C++ runtime"
  exit 1
fi

"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-deps --no-index "$wheel" >"$work/pip-install.log" 2>&1 ||
  { cat "$work/pip-install.log"; exit 1; }
# Every shared object installed in the package, with all it needs through the loader's search.
installed=$(find "$work/venv" -path '*/site-packages/loom/*' -name '*.so*')
[[ -n $installed ]] || { echo "FAIL: no shared object installed under site-packages/loom"; exit 1; }
for so in $installed; do
  deps=$(ldd "$so")
  if grep -E 'lib(mpi|open-pal|open-rte|fmt|boost)' <<< "$deps"; then
    echo "FAIL: the installed $(basename "$so") needs the libraries above (ldd)"
    exit 1
  fi
done
echo "installed: $(for so in $installed; do basename "$so"; done | tr '\n' ' ')need no MPI, fmt or Boost (ldd)"
cd "$work"
if [[ -n $hide_mpi ]]; then
  [[ -f $hide_mpi ]] || { echo "FAIL: $hide_mpi is not there"; exit 1; }
  export LD_AUDIT=$hide_mpi
fi
unset LOOM_MPI_LIBRARY
"$work/venv/bin/python" - "$work/venv" "$hide_mpi" <<'PY'
import ctypes
import os
import subprocess
import sys

import loom
import loom.direct
import torch
from loom.direct import FusionDefinition

venv = sys.argv[1]
assert loom.__file__.startswith(venv) and "site-packages" in loom.__file__, loom.__file__


def mapped(name):
    with open("/proc/self/maps") as maps:
        return any(name in line for line in maps)


# The loader must not find any MPI (LD_AUDIT), or what follows proves nothing of a machine
# without it.
hidden = bool(sys.argv[2])
if hidden:
    for name in ("libmpi.so.40", "libmpi.so"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        raise SystemExit(f"{name} still loads under LD_AUDIT={os.environ['LD_AUDIT']}")

with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], contiguity=True)
    fd.add_output(fd.ops.sum(fd.ops.mul(x, 2.0), [1]))
x = torch.randn(4, 33)
(y,) = fd.execute([x])
torch.testing.assert_close(y, (x * 2).sum(1), rtol=1e-5, atol=1e-5)
assert not mapped("/libmpi.so"), "a single-process fusion loaded libmpi"

# Two ranks by the launcher's variables, and no MPI to load (hidden from the loader, or else named
# by LOOM_MPI_LIBRARY as a file that is not there): the communicator comes up, and its first
# collective says what it could not open and how to fix it.
env = dict(os.environ, RANK="1", WORLD_SIZE="2")
if hidden:
    expected = ("a barrier between 2 ranks needs MPI, and no MPI library could be loaded "
                "(libmpi.so.40: cannot open shared object file", "; libmpi.so: cannot open shared "
                "object file", "): install OpenMPI's runtime")
else:
    env["LOOM_MPI_LIBRARY"] = "/nonexistent/libmpi.so.40"
    expected = ("a barrier between 2 ranks needs MPI, and LOOM_MPI_LIBRARY=/nonexistent/libmpi.so.40 "
                "cannot be used: /nonexistent/libmpi.so.40: cannot open shared object file",
                "set LOOM_MPI_LIBRARY to the path of OpenMPI's libmpi.so.40")
for v in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
    env.pop(v, None)
child = subprocess.run([sys.executable, "-c", """
import loom
from loom.direct.multidevice import Communicator
c = Communicator.instance()
assert (c.rank(), c.size()) == (1, 2), (c.rank(), c.size())
assert not Communicator.has_mpi()
try:
    c.barrier()
except loom.UserError as e:
    print(e)
else:
    raise SystemExit("a barrier between 2 ranks without MPI did not raise")
"""], env=env, capture_output=True, text=True, cwd=venv)
assert child.returncode == 0, child.stdout + child.stderr
for part in expected:
    assert part in child.stdout, child.stdout
print("wheel: loom", loom.__version__, "from", loom.__file__, "ran a fusion",
      "with MPI hidden from the loader;" if hidden else "without loading MPI;",
      "two ranks are told:", child.stdout.strip())
PY
