#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what Loom needs to build and test on Debian 12. Idempotent: when everything is present it
# only checks (no apt-get, no root needed); otherwise it runs apt-get update + install as root, or
# through `sudo -n` when not root.
#
#   tools/install-deps.sh          required packages; libbenchmark-dev too when apt runs anyway
#   LOOM_INSTALL_OPTIONAL=1 ...    also install missing optional packages
set -euo pipefail

# package:probe, where probe is a command (cmd/NAME) or a header (inc/PATH) that proves the package
# is there even when it was not installed through dpkg.
required=(
  cmake:cmd/cmake
  ninja-build:cmd/ninja
  g++:cmd/g++
  clang:cmd/clang++
  libgtest-dev:inc/gtest/gtest.h
  libgmock-dev:inc/gmock/gmock.h
  openmpi-bin:cmd/mpirun
  libopenmpi-dev:cmd/mpicc
  libfmt-dev:inc/fmt/format.h
  libcli11-dev:inc/CLI/CLI.hpp
  libboost-context-dev:inc/boost/context/detail/fcontext.hpp
)
optional=(
  libbenchmark-dev:inc/benchmark/benchmark.h
)

have() {
  local pkg=${1%%:*} probe=${1#*:}
  if command -v dpkg-query >/dev/null 2>&1 &&
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    return 0
  fi
  case $probe in
    cmd/*) command -v "${probe#cmd/}" >/dev/null 2>&1 ;;
    inc/*) [[ -f /usr/include/${probe#inc/} || -f /usr/local/include/${probe#inc/} ]] ;;
    *) return 1 ;;
  esac
}

missing=()
for entry in "${required[@]}"; do have "$entry" || missing+=("${entry%%:*}"); done
missing_optional=()
for entry in "${optional[@]}"; do have "$entry" || missing_optional+=("${entry%%:*}"); done

if [[ ${#missing[@]} -eq 0 && ( ${#missing_optional[@]} -eq 0 || ${LOOM_INSTALL_OPTIONAL:-0} != 1 ) ]]; then
  echo "install-deps: all required packages present; nothing installed"
  if [[ ${#missing_optional[@]} -gt 0 ]]; then
    echo "install-deps: optional ${missing_optional[*]} missing (benchmarks are not built);" \
      "LOOM_INSTALL_OPTIONAL=1 installs it"
  fi
else
  wanted=("${missing[@]}" "${missing_optional[@]}")
  if [[ $(id -u) -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    echo "install-deps: missing ${wanted[*]}; run this script as root" \
      "(or with passwordless sudo) to install them" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: missing ${missing[*]} and apt-get is not available (Debian 12 expected)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "install-deps: installing ${wanted[*]}"
  "${as_root[@]}" apt-get update -qq
  if [[ ${#missing[@]} -gt 0 ]]; then
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
    echo "install-deps: installed ${missing[*]}"
  fi
  for pkg in "${missing_optional[@]}"; do
    if "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$pkg"; then
      echo "install-deps: installed optional $pkg"
    else
      echo "install-deps: optional $pkg could not be installed; continuing without it"
    fi
  done
fi

# Debian 12 ships CMake 3.25, the minimum CMakePresets.json (version 6) needs.
cmake_version=$(cmake --version | sed -n '1s/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
if [[ -n $cmake_version ]] &&
  ! printf '%s\n' 3.25 "$cmake_version" | sort -V -C; then
  echo "install-deps: CMake $cmake_version is older than the 3.25 Loom needs" >&2
  exit 1
fi

# Python (the package loom and its tests, docs/python.md): nanobind and scikit-build-core to build
# it, torch, numpy and pytest to test it, from PyPI when missing. The interpreter is LOOM_PYTHON,
# else python3. An interpreter that refuses pip installs (PEP 668, Debian's own python3) gets a
# virtual environment in .venv/ (seeing the system's packages), which test.sh then uses.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${LOOM_PYTHON:-}
if [[ -z $py && -x $root/.venv/bin/python ]]; then py=$root/.venv/bin/python; fi
py=${py:-python3}
if ! command -v "$py" >/dev/null 2>&1; then
  echo "install-deps: no Python ($py); the Python package and its tests are skipped" >&2
  exit 0
fi
py_missing=()
for entry in torch:torch numpy:numpy pytest:pytest nanobind:nanobind \
  scikit_build_core:scikit-build-core; do
  "$py" -c "import ${entry%%:*}" >/dev/null 2>&1 || py_missing+=("${entry#*:}")
done
py_headers=$("$py" -c 'import sysconfig, os; print(os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))')
debian_py=()
[[ $py_headers == True ]] || debian_py+=(python3-dev)
if [[ ${#py_missing[@]} -gt 0 ]] &&
  "$py" -c 'import sys, sysconfig, os; sys.exit(0 if os.path.isfile(os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")) else 1)'; then
  "$py" -c 'import venv, ensurepip' >/dev/null 2>&1 || debian_py+=(python3-venv)
  externally_managed=1
else
  externally_managed=0
fi
"$py" -m pip --version >/dev/null 2>&1 || [[ $externally_managed == 1 ]] || debian_py+=(python3-pip)
if [[ ${#debian_py[@]} -gt 0 ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: installing ${debian_py[*]} (for $py)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debian_py[@]}"
  else
    echo "install-deps: $py needs ${debian_py[*]}; run this script as root to install them" >&2
  fi
fi
if [[ ${#py_missing[@]} -eq 0 ]]; then
  echo "install-deps: Python packages present for $py; nothing installed"
  exit 0
fi
if [[ $externally_managed == 1 ]]; then
  echo "install-deps: $py is externally managed; making the virtual environment $root/.venv"
  "$py" -m venv --system-site-packages "$root/.venv"
  py=$root/.venv/bin/python
fi
echo "install-deps: pip installing ${py_missing[*]} for $py"
"$py" -m pip install --quiet --disable-pip-version-check "${py_missing[@]}"
