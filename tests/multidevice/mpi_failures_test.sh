#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One failing rank ends the whole job, within seconds, with the reason on every rank
# (docs/multidevice.md, "When a rank fails"): runs each case of mpi_failure_cases (C++) and, when
# given, of tests/python/mpi_failure_cases.py under `mpirun -np 2`, and checks the exit status,
# the time taken and the lines every rank prints.
#
#   mpi_failures_test.sh MPIEXEC [--cpp CASES_BINARY] [--python PYTHON PY_CASES]
#                        [-- MPIEXEC_PREFLAGS...]
set -uo pipefail
mpiexec="$1"
shift
cases=""
python=""
py_cases=""
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --cpp) cases="$2"; shift 2 ;;
    --python) python="$2"; py_cases="$3"; shift 3 ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
done
[[ "${1:-}" == "--" ]] && shift
preflags=("$@")
failures=0

# check NAME MAX_SECONDS WANT_RC ENV... -- CMD... then one regex per line on stdin: runs CMD under
# `mpirun -np 2` with ENV, checks the exit status (ok: 0, fail: non-zero), that it took at most
# MAX_SECONDS and that the combined output matches every regex (grep -E; a regex after '!' must
# match no line).
check() {
  local name="$1" max="$2" want="$3"
  shift 3
  local env=()
  while [[ "$1" != "--" ]]; do env+=("$1"); shift; done
  shift
  local regexes=()
  while IFS= read -r line; do [[ -n "$line" ]] && regexes+=("$line"); done
  local start end out rc
  start=$(date +%s)
  # timeout: a regression that hangs fails here instead of at ctest's limit (TERM first, so that
  # mpirun ends its ranks).
  out="$(env "${env[@]}" timeout -k 10 120 "$mpiexec" -np 2 --allow-run-as-root --oversubscribe \
    "${preflags[@]}" "$@" 2>&1)"
  rc=$?
  end=$(date +%s)
  local why=""
  if [[ "$want" == ok && "$rc" != 0 ]]; then why="exit status $rc, want 0"; fi
  if [[ "$want" == fail && "$rc" == 0 ]]; then why="exit status 0, want a failure"; fi
  if (( end - start > max )); then why="$why took $((end - start)) s (at most $max)"; fi
  for r in "${regexes[@]}"; do
    if [[ "$r" == '!'* ]]; then
      ! grep -Eq -- "${r:1}" <<<"$out" || why="$why; a line matches: ${r:1}"
    else
      grep -Eq -- "$r" <<<"$out" || why="$why; no line matches: $r"
    fi
  done
  if [[ -n "$why" ]]; then
    echo "FAIL $name: $why; output:"
    echo "$out" | head -40
    failures=$((failures + 1))
  else
    echo "ok   $name ($((end - start)) s)"
  fi
}

if [[ -n "$cases" ]]; then
# A clean run finalizes: exit 0 and no line of the guard.
check ok 30 ok -- "$cases" ok <<'EOF'
!loom: rank
EOF
# An uncaught exception on rank 1 (std::terminate) while rank 0 waits in the run.
check throw 30 fail -- "$cases" throw <<'EOF'
loom: rank 1 of 2: std::terminate: uncaught exception: rank 1 gives up before the run
loom: rank 0 of 2: rank 1 fails \(std::terminate: uncaught exception: rank 1 gives up before the run\); this rank waits in the ranks' agreement check #1 on the world
loom: rank 1 of 2: std::terminate: .* while its peers may wait for it: aborting the job \(MPI_Abort\)
EOF
# A failing exit status on rank 1 (return 3 from main).
check exit-status 30 fail -- "$cases" exit3 <<'EOF'
loom: rank 1 of 2: exits with status 3 while its peers may wait for it: aborting the job \(MPI_Abort\)
loom: rank 0 of 2: rank 1 fails \(exits with status 3\); this rank waits in the ranks' agreement check #1 on the world
EOF
# Rank 1 leaves cleanly (status 0) without taking part: rank 0 learns it from rank 1's guard.
check exit-early 30 fail -- "$cases" exit0 <<'EOF'
loom: rank 1 of 2: left the program \(exit status 0\) while rank 0 waits in the ranks' agreement check #1 on the world
loom: rank 0 of 2: the ranks' agreement check #1 on the world cannot complete: rank 1 has left the program \(exit status 0\) without taking part: aborting the job \(MPI_Abort\)
EOF
# A UserError escaping rank 1's run (its own bad input: one argument too many).
check run-throws 30 fail -- "$cases" run-throws <<'EOF'
loom: rank 1 of 2: std::terminate: uncaught exception: .*the fusion takes 1 inputs \(T0\) but 2 arguments were given
loom: rank 0 of 2: rank 1 fails \(std::terminate: .*the fusion takes 1 inputs .*\); this rank
EOF
# Rank 0 in a barrier, rank 1 in the run's agreement check: each waits for the other, which the
# guards see within seconds, far from any timeout.
check barrier-vs-run 30 fail -- "$cases" barrier-vs-run <<'EOF'
loom: rank [01] of 2: the ranks wait for each other: this rank waits in (barrier|the ranks' agreement check) #1 on the world, which needs rank [01], while rank [01] waits in (barrier|the ranks' agreement check) #1 on the world .*which needs this rank
EOF
# The members name a team in different orders ({0, 1} and {1, 0}): MPI_Comm_create_group never
# returns; the guards see each waits for the other.
check team-order 30 fail -- "$cases" team-order <<'EOF'
loom: rank [01] of 2: the ranks wait for each other: this rank waits in creating the team's MPI communicator #1 on team \[[01], [01]\], which needs rank [01], while rank [01] waits in creating the team's MPI communicator #1 on team \[[01], [01]\] .*\(the ranks name the team differently\)
EOF
# Rank 1 computes past LOOM_COMM_TIMEOUT while rank 0 waits in a barrier.
check timeout 30 fail LOOM_COMM_TIMEOUT=2 -- "$cases" timeout <<'EOF'
loom: rank 0 of 2: barrier #1 on the world did not complete within 2.0 s \(LOOM_COMM_TIMEOUT\): ranks that had arrived: \[0\]; rank 1 is not in a collective of Loom's
EOF
# Making a team's communicator is timed too (rank 1 never joins team [0, 1]).
check team-timeout 30 fail LOOM_COMM_TIMEOUT=2 -- "$cases" team-timeout <<'EOF'
loom: rank 0 of 2: creating the team's MPI communicator #1 on team \[0, 1\] did not complete within 2.0 s \(LOOM_COMM_TIMEOUT\): ranks that had arrived: \[0\]; rank 1 is not in a collective of Loom's
EOF
# A LOOM_COMM_TIMEOUT that is not a number is refused, naming the variable.
check bad-timeout 30 fail LOOM_COMM_TIMEOUT=soon -- "$cases" ok <<'EOF'
LOOM_COMM_TIMEOUT='soon': expected a number of seconds >= 0
EOF
fi

if [[ -n "$python" ]]; then
  # The same from Python: a Python exception, sys.exit(3), sys.exit(0) on rank 1.
  check py-raise 60 fail -- "$python" "$py_cases" raise <<'EOF'
RuntimeError: rank 1 gives up before execute
loom: rank 1 of 2: exits with status 1 while its peers may wait for it: aborting the job \(MPI_Abort\)
loom: rank 0 of 2: rank 1 fails \(exits with status 1\); this rank waits in the ranks' agreement check #1 on the world
EOF
  check py-sys-exit 60 fail -- "$python" "$py_cases" sys-exit <<'EOF'
loom: rank 1 of 2: exits with status 3 while its peers may wait for it
loom: rank 0 of 2: rank 1 fails \(exits with status 3\); this rank waits in the ranks' agreement check #1 on the world
EOF
  check py-exit-early 60 fail -- "$python" "$py_cases" exit0 <<'EOF'
loom: rank 1 of 2: left the program \(exit status 0\) while rank 0 waits in the ranks' agreement check #1 on the world
loom: rank 0 of 2: the ranks' agreement check #1 on the world cannot complete: rank 1 has left the program \(exit status 0\) without taking part
EOF
  check py-ok 60 ok -- "$python" "$py_cases" ok <<'EOF'
!loom: rank
EOF
fi

if (( failures > 0 )); then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"
