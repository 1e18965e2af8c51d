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
