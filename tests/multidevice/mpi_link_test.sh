#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nothing of Loom links MPI (it is opened at run time, csrc/multidevice/mpi_api.h): no Loom
# library references an MPI symbol (a function, or a predefined handle such as
# ompi_mpi_comm_world, which MPI_COMM_WORLD names in OpenMPI), and no program or module built
# from them needs libmpi.
#   mpi_link_test.sh NM READELF --libs LIB... --programs FILE...
set -euo pipefail
nm=$1 readelf=$2
shift 2
libs=() programs=() list=
for a in "$@"; do
  case $a in
    --libs) list=libs ;;
    --programs) list=programs ;;
    *) if [[ $list == libs ]]; then libs+=("$a"); else programs+=("$a"); fi ;;
  esac
done
(( ${#libs[@]} > 0 && ${#programs[@]} > 0 )) || { echo "FAIL: no libraries or programs given"; exit 1; }
fail=0
for lib in "${libs[@]}"; do
  refs=$("$nm" --undefined-only "$lib" | awk '$1 == "U" {print $2}' |
    grep -E '^(P?MPI_|ompi_|opal_)' | sort -u || true)
  if [[ -n $refs ]]; then
    echo "FAIL: $(basename "$lib") references MPI: $(echo $refs)"
    fail=1
  fi
done
for p in "${programs[@]}"; do
  needed=$("$readelf" -d "$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if grep -q '^libmpi' <<< "$needed"; then
    echo "FAIL: $(basename "$p") needs $(grep '^libmpi' <<< "$needed" | tr '\n' ' ')"
    fail=1
  fi
done
(( fail == 0 )) || exit 1
echo "PASS: ${#libs[@]} libraries reference no MPI symbol; ${#programs[@]} programs need no libmpi"
