#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds Loom and runs its test tiers (ctest labels; docs/testing.md says what each holds):
#   unit              no device: IR, passes, schedulers, CLI, options     always
#   emu               end to end on the host backend (kernels on the CPU)  always
#   python            pytest of the package loom (CPU tensors)           when Python deps exist
#   packaging         install + find_package / pkg-config consumers       always
#   packaging_subdir  add_subdirectory consumer (shared libraries)        CI=true only
#   packaging_python  pip install . into a fresh venv                     CI=true only
#   libfuzzer         .fus parser and evaluator, LOOM_LIBFUZZER_SECONDS    with clang (0: skipped)
#                     each (default 60)
#   gpu               kernels on a GPU                                    when nvidia-smi works
#   mpi               sharded runs under mpirun (CPU ranks)               when mpirun exists
#
#   ./test.sh           preset `release` (or `ci`, warnings as errors, when CI=true), build/
#   ./test.sh --asan    preset `asan` (AddressSanitizer + UBSan), build-asan/, unit and emu only
#   ./test.sh --tsan    preset `tsan` (ThreadSanitizer), build-tsan/, the `threads` tests only
#
# A first build on 2 cores takes about 10 minutes (ccache makes later ones quick); all tiers
# about 15 minutes more.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

asan=0
tsan=0
for arg in "$@"; do
  case $arg in
    --asan) asan=1 ;;
    --tsan) tsan=1 ;;
    -h | --help)
      sed -n '3,22s/^# \{0,1\}//p' "$0"
      exit 0
      ;;
    *)
      echo "test.sh: unknown argument '$arg' (expected --asan or --tsan)" >&2
      exit 2
      ;;
  esac
done
if [[ $asan == 1 && $tsan == 1 ]]; then
  echo "test.sh: --asan and --tsan cannot be combined" >&2
  exit 2
fi

tools/install-deps.sh
# Make UBSan findings fail the test that hit them (ASan aborts by default).
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if [[ $tsan == 1 ]]; then
  # Only the tests that start threads, and what they link: a ThreadSanitizer build of everything
  # would take most of an hour on two cores. Races are errors (exit code 66).
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
  echo "test.sh: preset tsan (build-tsan/), label threads"
  cmake --preset tsan
  targets=$(ctest --test-dir build-tsan -N -L '^threads$' | sed -n 's/^ *Test *#[0-9]*: *//p')
  if [[ -z $targets ]]; then
    echo "test.sh: no tests carry the label threads" >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # one target per word
  cmake --build --preset tsan -j "$(nproc)" --target $targets
  if ctest --test-dir build-tsan --output-on-failure -L '^threads$'; then
    echo "== test.sh summary (preset tsan) =="
    echo "  ran:     threads ($(echo "$targets" | wc -w) tests)"
    echo "  all tiers that ran passed"
    exit 0
  fi
  echo "== test.sh summary (preset tsan) =="
  echo "  FAILED:  threads"
  exit 1
fi

if [[ $asan == 1 ]]; then
  preset=asan build_dir=build-asan
elif [[ ${CI:-} == true ]]; then
  preset=ci build_dir=build
else
  preset=release build_dir=build
fi
echo "test.sh: preset $preset ($build_dir/)"
# The Python the package loom is built for (tools/install-deps.sh: LOOM_PYTHON, its .venv, python3),
# as the real interpreter's path (not a shim).
python_args=()
loom_python=${LOOM_PYTHON:-}
if [[ -z $loom_python && -x .venv/bin/python ]]; then loom_python=.venv/bin/python; fi
loom_python=${loom_python:-python3}
if command -v "$loom_python" >/dev/null 2>&1; then
  python_args=(-DPython_EXECUTABLE="$("$loom_python" -c 'import sys; print(sys.executable)')")
fi
cmake --preset "$preset" "${python_args[@]}"
echo "test.sh: free space for $build_dir/: $(df -h --output=avail . | tail -1 | tr -d ' ')"
if ! cmake --build --preset "$preset" -j "$(nproc)"; then
  # A compiler killed for memory or disk prints little: say what the machine had, then build once
  # more with one job, which gets past a memory kill and fails again on an error in the code.
  echo "test.sh: the build failed; disk and memory now:" >&2
  df -h . >&2 || true
  free -m >&2 || true
  echo "test.sh: building again with one job" >&2
  cmake --build --preset "$preset" -j 1
fi

# Number of registered tests carrying exactly this label.
count_tests() {
  ctest --test-dir "$build_dir" -N -L "^$1\$" | sed -n 's/^Total Tests: *//p'
}

ran=()
skipped=()
failed=()

# Runs one tier; a failure is recorded and the remaining tiers still run.
run_tier() {
  local name=$1
  shift
  echo "== tier $name =="
  if ctest --test-dir "$build_dir" --output-on-failure "$@"; then
    ran+=("$name")
  else
    ran+=("$name")
    failed+=("$name")
  fi
}

for label in unit emu; do
  n=$(count_tests "$label")
  if [[ ${n:-0} == 0 ]]; then skipped+=("$label (no tests registered yet)"); fi
done
run_tier "unit|emu ($(count_tests unit) unit, $(count_tests emu) emu tests)" -L 'unit|emu' -j2

# The Python package (tests/python): pytest against the module in the build tree.
if [[ $asan == 1 ]]; then
  skipped+=("python (--asan runs unit and emu only)")
elif [[ $(count_tests python) == 0 ]]; then
  skipped+=("python (no python tests registered: Python, nanobind, torch or pytest missing)")
else
  run_tier "python ($(count_tests python) test)" -L '^python$' -j1
fi

# Loom as a package (tests/packaging): an install into a temp prefix and a consumer of it, cheap
# since it reuses the built libraries. The subproject consumer rebuilds the libraries (a few
# CPU-minutes with a cold ccache), so only CI runs it. Neither under --asan.
if [[ $asan == 1 ]]; then
  skipped+=("packaging (--asan runs unit and emu only)")
else
  run_tier "packaging ($(count_tests packaging) test)" -L '^packaging$' -j1
  if [[ ${CI:-} == true ]]; then
    run_tier "packaging_subdir ($(count_tests packaging_subdir) test)" -L '^packaging_subdir$' -j1
    if [[ $(count_tests packaging_python) != 0 ]]; then
      run_tier "packaging_python ($(count_tests packaging_python) test)" -L '^packaging_python$' -j1
    fi
  else
    skipped+=("packaging_subdir (CI only: rebuilds the libraries as a subproject)")
    skipped+=("packaging_python (CI only: pip install . rebuilds the libraries)")
  fi
fi

# libFuzzer: the .fus parser and the parse-verify-evaluate path, LOOM_LIBFUZZER_SECONDS (60) each
# from the examples and the regression inputs, in a clang build with ASan and UBSan (build-fuzz/).
libfuzzer_tier() {
  local seconds=${LOOM_LIBFUZZER_SECONDS:-60} work
  work=$(mktemp -d)
  cmake --preset libfuzzer >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; return 1; }
  cmake --build --preset libfuzzer -j "$(nproc)" --target loom_fus_parse_fuzzer loom_fus_eval_fuzzer ||
    return 1
  local ok=0 name
  for name in fus_parse_fuzzer fus_eval_fuzzer; do
    mkdir -p "$work/$name"
    cp examples/*.fus examples/scheduled/*.fus tests/libfuzzer/regressions/*.fus "$work/$name/"
    echo "libfuzzer: $name for ${seconds}s"
    if ! build-fuzz/bin/loom_$name -seed=1 -max_total_time="$seconds" -max_len=8192 \
      -rss_limit_mb=4096 -artifact_prefix="$work/$name-" "$work/$name" >"$work/$name.log" 2>&1; then
      echo "libfuzzer: $name found a failure:"
      grep -E 'ERROR|non-user|does not|!=|SUMMARY' "$work/$name.log" | head -5
      for f in "$work/$name"-*; do [[ -f $f ]] && { echo "input ($f):"; head -c 2000 "$f"; echo; }; done
      ok=1
    else
      grep -E '^Done [0-9]+ runs' "$work/$name.log" || true
    fi
  done
  [[ $ok == 0 ]] && rm -rf "$work"
  return $ok
}

if [[ $asan == 1 ]]; then
  skipped+=("libfuzzer (--asan runs unit and emu only)")
elif [[ ${LOOM_LIBFUZZER_SECONDS:-60} == 0 ]]; then
  skipped+=("libfuzzer (LOOM_LIBFUZZER_SECONDS=0)")
elif ! [[ ${LOOM_LIBFUZZER_SECONDS:-60} =~ ^[0-9]+$ ]]; then
  echo "test.sh: LOOM_LIBFUZZER_SECONDS must be a whole number of seconds, got" \
    "'${LOOM_LIBFUZZER_SECONDS}'" >&2
  exit 2
elif ! command -v clang++ >/dev/null 2>&1; then
  skipped+=("libfuzzer (clang++ not found)")
elif ! printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' |
  clang++ -fsanitize=fuzzer -x c++ - -o /dev/null >/dev/null 2>&1; then
  skipped+=("libfuzzer (clang++ cannot link -fsanitize=fuzzer)")
else
  echo "== tier libfuzzer =="
  if libfuzzer_tier; then ran+=("libfuzzer (2 targets)"); else ran+=("libfuzzer"); failed+=("libfuzzer"); fi
fi

if [[ $asan == 1 ]]; then
  skipped+=("gpu (--asan runs unit and emu only)" "mpi (--asan runs unit and emu only)")
else
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    skipped+=("gpu (nvidia-smi not found)")
  elif ! nvidia-smi >/dev/null 2>&1; then
    skipped+=("gpu (nvidia-smi found but failed: no usable GPU or driver)")
  elif [[ $(count_tests gpu) == 0 ]]; then
    skipped+=("gpu (no gpu tests registered)")
  else
    run_tier "gpu ($(count_tests gpu) tests)" -L '^gpu$' -j1
  fi

  if ! command -v mpirun >/dev/null 2>&1; then
    skipped+=("mpi (mpirun not found)")
  elif [[ $(count_tests mpi) == 0 ]]; then
    skipped+=("mpi (no mpi tests registered)")
  else
    # Each mpi test starts several ranks itself; run them one at a time.
    run_tier "mpi ($(count_tests mpi) tests)" -L '^mpi$' -j1
  fi
fi

echo "== test.sh summary (preset $preset) =="
for t in "${ran[@]}"; do echo "  ran:     $t"; done
for t in "${skipped[@]}"; do echo "  skipped: $t"; done
if [[ ${#failed[@]} -gt 0 ]]; then
  for t in "${failed[@]}"; do echo "  FAILED:  $t"; done
  exit 1
fi
echo "  all tiers that ran passed"
