#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests of the `loom` command-line program. Usage: cli_test.sh LOOM_BINARY SOURCE_DIR
set -uo pipefail
loom="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

# check NAME EXPECTED_RC REGEX -- CMD...: runs CMD, checks its exit code and that its combined
# output matches REGEX (grep -E).
check() {
  local name="$1" want_rc="$2" regex="$3"
  shift 4
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  if [[ "$rc" != "$want_rc" ]] || ! grep -Eq -- "$regex" <<<"$out"; then
    echo "FAIL $name: rc=$rc (want $want_rc), output:"
    echo "$out" | head -20
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

# --help lists the commands, each with its line, the LOOM_* variables and the LOOM_DUMP names,
# each with its line, and exits 0; `loom help` and -h say the same.
check help 0 '^  run +schedule, compile and run on random inputs' -- "$loom" --help
check help-eval 0 '^  eval +evaluate on random inputs' -- "$loom" --help
check help-env 0 '^  LOOM_BACKEND=host\|cuda' -- "$loom" --help
check help-env-line 0 'where kernels run when the program does not say' -- "$loom" --help
check help-dump 0 '^  kernel_ir\(pass\) +the kernel IR after each lowering pass' -- "$loom" --help
check help-debug 0 '^  verify_ir +runs ir::verify' -- "$loom" --help
check help-exit-status 0 '3 unavailable here' -- "$loom" help
check help-disable 0 '^  lowering +eliminate_predicates, unswitch, simplify, hoist_indices' -- "$loom" --help
# LOOM_DISABLE: an optional pass off still gives the right numbers; a pass the kernel needs, or a
# name that is no pass, is a user error that lists the optional ones.
check disable-optional 0 'PASS' -- env LOOM_DISABLE=translate_welford,hoist_indices \
  "$loom" run "$src/examples/var_mean_small.fus" --backend host
check disable-required 1 "the lowering pass 'indexing' cannot be disabled.*optional lowering passes: eliminate_predicates" \
  -- env LOOM_DISABLE=indexing "$loom" run "$src/examples/var_mean_small.fus" --backend host
check disable-unknown 1 "LOOM_DISABLE names 'no_such_pass', which is no pass" \
  -- env LOOM_DISABLE=no_such_pass "$loom" run "$src/examples/var_mean_small.fus" --backend host
check help-short 0 '^Usage: loom \[OPTIONS\] SUBCOMMAND' -- "$loom" -h
# Every command has its --help: usage, its options with their lines, exit 0.
check help-run 0 '--backend host\|cuda +where the kernels run' -- "$loom" run --help
check help-run-progress 0 '--progress-after SECONDS +print progress lines to stderr' -- "$loom" run --help
check help-run-usage 0 '^Usage: loom run \[OPTIONS\] FILE\.fus' -- "$loom" run -h
check help-eval-cmd 0 '--sizes s0=N,\.\.\. +values of the symbolic sizes' -- "$loom" eval --help
check help-codegen 0 '--sms N +the target.s multiprocessor count' -- "$loom" codegen --help
check help-print 0 '^Usage: loom print \[OPTIONS\] FILE\.fus' -- "$loom" print --help
check help-topic 0 '^Usage: loom codegen' -- "$loom" help codegen
check help-unknown-topic 1 "unknown command 'frob'" -- "$loom" help frob
# Every LOOM_* variable loom --help lists is in README.md (the registry's test checks the other
# direction: every variable the sources read is registered and in README.md).
help_vars=$("$loom" --help | grep -oE '^  LOOM_[A-Z0-9_]+' | sort -u)
missing=0
for v in $help_vars; do grep -q "\`$v" "$src/README.md" || { echo "README.md lacks $v"; missing=1; }; done
if [[ -n $help_vars && $missing == 0 ]]; then echo "ok   help-vars-in-readme"; else
  echo "FAIL help-vars-in-readme"; failures=$((failures + 1)); fi
# version prints the project version.
check version 0 '^loom [0-9]+\.[0-9]+' -- "$loom" version
check version-flag 0 '^loom [0-9]+\.[0-9]+' -- "$loom" --version
# No command, or an unknown one, is an error with exit code 1 that says where the list is.
check no-command 1 'Usage: loom' -- "$loom"
# Bare loom prints a short usage: the commands on one line and where the rest is, not the
# whole --help.
out="$("$loom" 2>&1)"
if grep -q '^Commands: print, eval, codegen, run, version, help$' <<<"$out" &&
  grep -q "Run 'loom --help'" <<<"$out" && [[ $(wc -l <<<"$out") -le 4 ]] &&
  ! grep -q 'LOOM_DUMP' <<<"$out"; then echo "ok   no-command-short-usage"; else
  echo "FAIL no-command-short-usage:"; echo "$out" | head -8; failures=$((failures + 1)); fi
check unknown-command 1 "unknown command 'frob'" -- "$loom" frob
# An unknown flag is an error with exit code 1 naming it and the command's --help.
check unknown-flag 1 "unknown option '--bogus' for loom eval" -- "$loom" eval "$src/examples/var_mean_small.fus" --bogus
check unknown-flag-hint 1 "Run 'loom eval --help' for the options" -- "$loom" eval "$src/examples/var_mean_small.fus" --bogus
check unknown-flag-run 1 "unknown option '--seeds' for loom run" -- "$loom" run "$src/examples/var_mean_small.fus" --seeds 3
check missing-value 1 '--seed: 1 required N missing' -- "$loom" eval "$src/examples/var_mean_small.fus" --seed
check missing-file-arg 1 'FILE\.fus is required' -- "$loom" run
check two-files 1 "unexpected argument 'b\.fus' \(loom eval takes one file\)" -- "$loom" eval a.fus b.fus
check flag-with-value 1 'bench' -- "$loom" run "$src/examples/var_mean_small.fus" --bench=yes
check bad-backend 1 "--backend must be host or cuda, got 'gpu'" -- "$loom" run "$src/examples/var_mean_small.fus" --backend=gpu
check bad-progress 1 '--progress-after must be a number of seconds from 0 up' -- \
  "$loom" run "$src/examples/var_mean_small.fus" --progress-after=-1
# --flag=value and --flag value are the same.
a="$("$loom" eval "$src/examples/var_mean_small.fus" --seed=3)"
b="$("$loom" eval "$src/examples/var_mean_small.fus" --seed 3)"
c="$("$loom" eval "$src/examples/var_mean_small.fus" --seed 4)"
if [[ -n "$a" && "$a" == "$b" && "$a" != "$c" ]]; then echo "ok   flag-equals-value"; else
  echo "FAIL flag-equals-value: --seed=3 and --seed 3 must agree"; failures=$((failures + 1)); fi
check run-flag-equals 0 '^backend: host \(--backend host\)' -- "$loom" run "$src/examples/var_mean_small.fus" --backend=host --seed=2

# loom run says what happened: the backend and why, the inputs, each output with what computes it
# and what it was checked against, and the time split into compile, run and reference check.
"$loom" run "$src/examples/var_mean_small.fus" --seed 1 >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
narration_ok=1
for want in '^loom run .*var_mean_small\.fus: 1 input\(s\), 2 output\(s\)$' \
  '^backend: (host \(no GPU found: .+\)|cuda \([0-9]+ GPU\(s\) seen by the CUDA driver\))$' \
  '^inputs: T0 \[1, 64, 256\] f32, random from seed 1$' \
  '^check: each output against the reference evaluator \(double precision\) on the same inputs' \
  '^PASS T4 +\[1, 64\] f32 max_error=[0-9.e+-]+ \(rtol [0-9.e+-]+, atol [0-9.e+-]+\): T4 = div\(T2, 255\.0\), where T2 is the m2 \(sum of squared deviations\) of welford\(T0\)$' \
  '^PASS T1 +\[1, 64\] f32 max_error=.*: T1 = the average of welford\(T0\)$' \
  '^time: compile [0-9]+\.[0-9]{3} s, run [0-9]+\.[0-9]{3} s \(.+\), reference check [0-9]+\.[0-9]{3} s$'; do
  grep -Eq -- "$want" "$tmp/run.out" || { echo "  missing: $want"; narration_ok=0; }
done
if [[ $rc == 0 && $narration_ok == 1 ]]; then echo "ok   run-narration"; else
  echo "FAIL run-narration: rc=$rc"; cat "$tmp/run.out"; failures=$((failures + 1)); fi
# The backend's reason comes from LOOM_BACKEND when that chose it.
check run-backend-env 0 '^backend: host \(LOOM_BACKEND=host\)$' -- \
  env LOOM_BACKEND=host "$loom" run "$src/examples/var_mean_small.fus"
# Progress lines: with --progress-after 0 every step reports, on stderr only; stdout keeps only
# the results. With the default (2 s) a small fusion prints none.
"$loom" run "$src/examples/var_mean_small.fus" --backend host --progress-after 0 \
  >"$tmp/p.out" 2>"$tmp/p.err"
if grep -q '^loom: computing the reference outputs (reference evaluator, double precision) \.\.\.$' "$tmp/p.err" &&
  grep -Eq '^loom: compiling \(segment, schedule, lower, build\) and running on host: done in [0-9.]+ s$' "$tmp/p.err" &&
  ! grep -q '^loom: ' "$tmp/p.out" && grep -q '^PASS T4' "$tmp/p.out" && ! grep -q '^loom: ' "$tmp/run.err"; then
  echo "ok   run-progress"
else
  echo "FAIL run-progress"; cat "$tmp/p.err" "$tmp/run.err"; failures=$((failures + 1))
fi
check eval-progress 0 '^loom: evaluating \(reference evaluator, double precision\): done in' -- \
  "$loom" eval "$src/examples/var_mean_small.fus" --progress-after=0
# A missing file is an error naming it.
check missing-file 1 "cannot open fusion file '$tmp/none.fus'" -- "$loom" print "$tmp/none.fus"
# A directory, a device or a FIFO nobody writes to given as the fusion file is an error naming it
# and what it is, on every command (a FIFO made them wait forever); a pipe with a writer (process
# substitution) is read to its end.
mkdir "$tmp/dir.fus"
mkfifo "$tmp/fifo.fus"
for cmd in print eval codegen run; do
  check "fusion-file-directory-$cmd" 1 "^loom: error: fusion file '$tmp/dir\.fus' is a directory, not a file$" -- \
    timeout 60 "$loom" "$cmd" "$tmp/dir.fus"
  check "fusion-file-fifo-$cmd" 1 "^loom: error: fusion file '$tmp/fifo\.fus' is a FIFO \(named pipe\) and nothing was written to it$" -- \
    timeout 60 "$loom" "$cmd" "$tmp/fifo.fus"
done
check fusion-file-device 1 "^loom: error: fusion file '/dev/zero' is a character device, not a regular file$" -- \
  timeout 60 "$loom" eval /dev/zero
check fusion-file-pipe 0 '= welford\(' -- \
  bash -c '"$1" print <(cat "$2")' _ "$loom" "$src/examples/layer_norm_bf16.fus"

# Output that cannot be written (a full disk: /dev/full) is an error with exit status 1 and a
# message on stderr, whichever command printed it (the stream buffered it, and the exit status
# was 0). The reason is known when the final flush is the write that fails; an output larger than
# the buffer (--help) failed earlier, and the message then says only what failed.
for args in "print $src/examples/var_mean_small.fus" "eval $src/examples/var_mean_small.fus" \
  "codegen $src/examples/scheduled/block_sum.fus" "run $src/examples/var_mean_small.fus --backend host" \
  "version"; do
  name="stdout-full-${args%% *}"
  check "$name" 1 '^loom: error: cannot write to standard output: No space left on device$' -- \
    bash -c '"$1" "${@:2}" >/dev/full' _ "$loom" $args
done
check stdout-full-help 1 '^loom: error: cannot write to standard output' -- \
  bash -c '"$1" --help >/dev/full' _ "$loom"

# A bad file is reported with its line and column.
printf 'inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT1 = frob(T0)\n' \
  >"$tmp/bad.fus"
check bad-file 1 "$tmp/bad.fus:5:6: unknown op 'frob'" -- "$loom" print "$tmp/bad.fus"

# print writes the canonical text: printing its own output gives the same text.
"$loom" print "$src/examples/layer_norm_bf16.fus" >"$tmp/a.fus"
"$loom" print "$tmp/a.fus" >"$tmp/b.fus"
if cmp -s "$tmp/a.fus" "$tmp/b.fus" && grep -q '= welford(' "$tmp/a.fus"; then
  echo "ok   print-fixpoint"
else
  echo "FAIL print-fixpoint"
  failures=$((failures + 1))
fi

# eval prints each output's name, shape, dtype and checksums, deterministic for a seed.
check eval 0 '^T4 +\[1, 64\] f32 +sum=[-0-9.]+ abs_sum=[0-9.]+' -- \
  "$loom" eval "$src/examples/var_mean_small.fus" --seed 3
a="$("$loom" eval "$src/examples/var_mean_small.fus" --seed 3)"
b="$("$loom" eval "$src/examples/var_mean_small.fus" --seed 3)"
c="$("$loom" eval "$src/examples/var_mean_small.fus" --seed 4)"
if [[ "$a" == "$b" && "$a" != "$c" ]]; then
  echo "ok   eval-seed"
else
  echo "FAIL eval-seed: same seed must give the same output, another seed another"
  failures=$((failures + 1))
fi

# Symbolic sizes are bound with --sizes; a missing one is an error that says how to pass it.
printf 'inputs: T0\noutputs: T1\ns0 : i64\nT0 : f32 global [i0{s0}]\nT1 : f32 global [i1{s0}]\nT1 = abs(T0)\n' \
  >"$tmp/sym.fus"
check eval-sizes 0 '^T1 +\[5\] f32' -- "$loom" eval "$tmp/sym.fus" --sizes s0=5
check eval-missing-size 1 'pass it with --sizes s0=N' -- "$loom" eval "$tmp/sym.fus"
# A --sizes name the fusion does not have is an error listing the ones it has (a typo left the
# size it meant unset, or was silently ignored).
check sizes-unknown-name 1 '^loom: error: --sizes names s1, which is not a symbolic size or scalar input of this fusion \(its names: s0\)$' -- \
  "$loom" eval "$tmp/sym.fus" --sizes s0=5,s1=3
check sizes-unknown-name-run 1 '--sizes names s9, which is not a symbolic size or scalar input of this fusion \(it has none\)' -- \
  "$loom" run "$src/examples/var_mean_small.fus" --backend host --sizes s9=1
check sizes-unknown-name-typo 1 '--sizes names S0, .*its names: s0' -- "$loom" run "$tmp/sym.fus" --backend host --sizes S0=4
# A fusion the IR contract rejects, or that cannot run, is a user error naming the problem: an
# output nothing computes, a reduction that reduces no dim, a negative or non-unit broadcast
# extent.
printf 'inputs: T0\noutputs: T1, T2\nT0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT2 : f32 global [i2{4}]\nT1 = abs(T0)\n' >"$tmp/noout.fus"
check output-not-computed 1 'fusion output T2 is neither computed nor a fusion input' -- \
  "$loom" run "$tmp/noout.fus" --backend host
printf 'inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT1 = sum(T0, init=f32(0.0))\n' >"$tmp/red.fus"
check reduction-without-reduced-dim 1 'reduces no dim' -- "$loom" eval "$tmp/red.fus"
check reduction-without-reduced-dim-run 1 'reduces no dim' -- "$loom" run "$tmp/red.fus" --backend host
printf 'inputs: T0\noutputs: T1\nT0 : f32 global [b0{-3}]\nT1 : f32 global [b1{-3}]\nT1 = abs(T0)\n' >"$tmp/negb.fus"
check negative-extent 1 'has the negative extent -3' -- "$loom" eval "$tmp/negb.fus"
printf 'inputs: T0\noutputs: T1\nT0 : f32 global [b0{5}]\nT1 : f32 global [b1{5}]\nT1 = abs(T0)\n' >"$tmp/bigb.fus"
check broadcast-extent 1 "a broadcast's extent is 1" -- "$loom" eval "$tmp/bigb.fus"
# Asking for the GPU on a machine without one is "unavailable" (exit 3), not an internal error.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  check no-gpu 3 '^loom: unavailable: .*(GPU|CUDA)' -- "$loom" run "$tmp/sym.fus" --backend cuda --sizes s0=4
fi
# Sizes whose element count overflows 64 bits are an error naming the input (a heap overflow
# when the inputs were filled).
printf 'inputs: T0\noutputs: T1\ns0 : i64\nT0 : f32 global [i0{s0}, i1{4}]\nT1 : f32 global [i2{s0}, i3{4}]\nT1 = abs(T0)\n' \
  >"$tmp/big.fus"
check eval-size-overflow 1 'element count of input 0 \(T0\) overflows 64 bits' -- \
  "$loom" eval "$tmp/big.fus" --sizes s0=4611686018427387904
check run-size-overflow 1 'element count of input 0 \(T0\) overflows 64 bits' -- \
  "$loom" run "$tmp/big.fus" --backend host --sizes s0=4611686018427387904
# Two inputs of one add with separate symbolic extents: sizes that disagree (a size-1 operand
# where no broadcast is declared included) are an error naming both inputs, on both paths.
printf 'inputs: T0, T1\noutputs: T2\ns0 : i64\ns1 : i64\nT0 : f32 global [i0{s0}]\nT1 : f32 global [i1{s1}]\nT2 : f32 global [i2{s0}]\nT2 = add(T0, T1)\n' \
  >"$tmp/mismatch.fus"
check shapes-disagree-run 1 'shapes disagree in T2 = add\(T0, T1\): T1 dimension 0 has size 1 \(extent s1, from input 1 \(T1\) dimension 0\)' -- \
  "$loom" run "$tmp/mismatch.fus" --backend host --sizes s0=4,s1=1
check shapes-disagree-eval 1 'T2 dimension 0 has size 4 \(extent s0, from input 0 \(T0\) dimension 0\)' -- \
  "$loom" eval "$tmp/mismatch.fus" --sizes s0=4,s1=8
check shapes-agree 0 '^PASS T2 +\[4\] f32' -- "$loom" run "$tmp/mismatch.fus" --backend host --sizes s0=4,s1=4
# Sizes the file contradicts are reported before any input is filled, by eval and run: a symbolic
# size lined up with a constant extent, and two inputs whose dims must agree. The sizes here
# (2^40 f32 elements, 4 TiB) made eval allocate and fill first, failing on memory instead.
printf 'inputs: T0, T1\noutputs: T2\ns0 : i64\nT0 : f32 global [i0{s0}]\nT1 : f32 global [i1{4}]\nT2 : f32 global [i2{4}]\nT2 = add(T0, T1)\n' \
  >"$tmp/const_mismatch.fus"
for cmd in eval "run --backend host"; do
  check "sizes-contradict-constant-${cmd%% *}" 1 '^loom: error: shapes disagree in T2 = add\(T0, T1\): T0 dimension 0 has size 1099511627776 \(extent s0, from input 0 \(T0\) dimension 0\) but T2 dimension 0 has size 4;' -- \
    timeout 60 "$loom" $cmd "$tmp/const_mismatch.fus" --sizes s0=1099511627776
  check "sizes-contradict-input-${cmd%% *}" 1 '^loom: error: shapes disagree in T2 = add\(T0, T1\): T1 dimension 0 has size 1099511627776 \(extent s1, from input 1 \(T1\) dimension 0\)' -- \
    timeout 60 "$loom" $cmd "$tmp/mismatch.fus" --sizes s0=4,s1=1099511627776
done
# --sizes values that are not numbers of the needed kind, names given twice and negative sizes
# are errors naming them (a float scalar input went through an uncaught stod).
check sizes-not-integer 1 "s0 must be an integer, got 'abc'" -- \
  "$loom" eval "$tmp/mismatch.fus" --sizes s0=abc,s1=4
check sizes-twice 1 '--sizes gives s0 twice' -- "$loom" eval "$tmp/mismatch.fus" --sizes s0=4,s0=5,s1=4
check sizes-negative 1 'the size of input 0 \(T0\) axis 0 \(s0\) must not be negative, got -2' -- \
  "$loom" run "$tmp/mismatch.fus" --backend host --sizes s0=-2,s1=-2
printf 'inputs: T0, s1\noutputs: T1\ns1 : f32\nT0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT1 = mul(T0, s1)\n' \
  >"$tmp/fscalar.fus"
check float-scalar-not-number 1 "s1 must be a number, got 'x2'" -- \
  "$loom" run "$tmp/fscalar.fus" --backend host --sizes s1=x2
check float-scalar-runs 0 '^PASS T1 +\[4\] f32' -- "$loom" run "$tmp/fscalar.fus" --backend host --sizes s1=2.5
# A tensor named with the largest int64 is an error with the line (a signed overflow when the
# next name was counted from it); a large but countable name parses and prints renumbered.
printf 'inputs: T9223372036854775807\noutputs: T1\nT9223372036854775807 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT1 = abs(T9223372036854775807)\n' \
  >"$tmp/maxname.fus"
check max-tensor-name 1 'maxname.fus:3:1: the name number 9223372036854775807 is out of range' -- \
  "$loom" print "$tmp/maxname.fus"
check max-tensor-name-run 1 'the name number 9223372036854775807 is out of range' -- \
  "$loom" run "$tmp/maxname.fus" --backend host
printf 'inputs: T4611686018427387904\noutputs: T1\nT4611686018427387904 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT1 = abs(T4611686018427387904)\n' \
  >"$tmp/bigname.fus"
check big-tensor-name 0 'T1 = abs\(T0\)' -- "$loom" print "$tmp/bigname.fus"
printf 'inputs: T9223372036854775808\noutputs: T1\nT9223372036854775808 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT1 = abs(T9223372036854775808)\n' \
  >"$tmp/toobigname.fus"
check too-big-tensor-name 1 'T9223372036854775808' -- "$loom" print "$tmp/toobigname.fus"
# A chain of 15,000 scalar ops: printing and reference evaluation walk it without recursion (a
# stack overflow once); a kernel refuses it by name instead of crashing in code generation.
{
  printf 'inputs: T0, s0\noutputs: T1\ns0 : f32\n'
  seq 1 15000 | awk '{ printf "s%d : f32 = add(s%d, f32(1.0))\n", $1, $1 - 1 }'
  printf 'T0 : f32 global [i0{8}]\nT1 : f32 global [i1{8}]\nT1 = mul(T0, s15000)\n'
} >"$tmp/deep.fus"
check deep-chain-print 0 's15000 : f32  = add\(s14999, f32\(1\.0\)\)' -- "$loom" print "$tmp/deep.fus"
check deep-chain-eval 0 '^T1 +\[8\] f32 +sum=' -- "$loom" eval "$tmp/deep.fus" --sizes s0=1.0
check deep-chain-run 1 'scalar s257 is the end of a chain of more than 256 scalar ops' -- \
  "$loom" run "$tmp/deep.fus" --backend host --sizes s0=1.0

# Every hand-scheduled example lowers to one kernel that `codegen` prints and compiles for sm_90
# with NVRTC (no GPU needed) without register spills, and `eval` computes its outputs.
scheduled=0
for f in "$src"/examples/scheduled/*.fus; do
  name="scheduled-$(basename "$f" .fus)"
  out="$("$loom" codegen "$f" --arch sm_90 2>&1)"
  rc=$?
  if [[ $rc != 0 ]] || ! grep -q '__global__ void loom_kernel_' <<<"$out"; then
    echo "FAIL $name-codegen: rc=$rc, output:"
    echo "$out" | tail -20
    failures=$((failures + 1))
  elif grep -Eq '^// (NVRTC not available|built without the CUDA backend)' <<<"$out"; then
    echo "ok   $name-codegen (printed; NVRTC unavailable, not compiled)"
  elif grep -Eq '^// sm_90 loom_kernel_[0-9a-f]+: [1-9][0-9]* registers, 0 bytes spill stores, 0 bytes spill loads' <<<"$out"; then
    echo "ok   $name-codegen"
  else
    echo "FAIL $name-codegen: no sm_90 compile report without spills:"
    echo "$out" | tail -5
    failures=$((failures + 1))
  fi
  # Symbolic examples take x [6, 300] (and a bias of 300): the file's own free sizes only.
  sizes=""
  for s in $(grep -oE '^s[0-9]+ +: i64 *$' "$f" | awk '{print $1}'); do
    case $s in s0) v=6 ;; *) v=300 ;; esac
    sizes="${sizes:+$sizes,}$s=$v"
  done
  check "$name-eval" 0 '^T[0-9]+ +\[[0-9, ]+\] f32 +sum=' -- \
    "$loom" eval "$f" --seed 1 ${sizes:+--sizes "$sizes"}
  scheduled=$((scheduled + 1))
done
if [[ $scheduled -lt 6 ]]; then
  echo "FAIL scheduled-examples: expected at least 6 in examples/scheduled, found $scheduled"
  failures=$((failures + 1))
fi

# An unscheduled fusion is refused by codegen with the reason and what to run instead (its kernel
# had a 512 MB array on one thread's stack).
check codegen-unscheduled 1 "^loom: error: .*softmax_fp32\.fus is not scheduled \(no tensor is parallelized on blocks or threads and nothing is inlined\).*LOOM_DUMP=cuda_kernel loom run" -- \
  "$loom" codegen "$src/examples/softmax_fp32.fus"
out="$("$loom" codegen "$src/examples/softmax_fp32.fus" 2>/dev/null)"
if [[ -z "$out" ]]; then echo "ok   codegen-unscheduled-prints-no-kernel"; else
  echo "FAIL codegen-unscheduled-prints-no-kernel"; failures=$((failures + 1)); fi

# With the SM count named, a grid that is resident in one wave (64 blocks of 128 threads on 132
# SMs) gets launch bounds; without it the kernel has none. A bad count is an error.
sed -e 's/{s0, BIDx}/{64, BIDx}/g' "$src/examples/scheduled/block_sum.fus" >"$tmp/fixed_sum.fus"
check codegen-launch-bounds 0 '__global__ void __launch_bounds__\(128, 1\) loom_kernel_' -- \
  "$loom" codegen "$tmp/fixed_sum.fus" --sms 132
check codegen-no-sms 0 '__global__ void loom_kernel_[0-9a-f]+\(' -- "$loom" codegen "$tmp/fixed_sum.fus"
check codegen-bad-sms 1 "--sms needs a positive multiprocessor count such as 132, got '0'" -- \
  "$loom" codegen "$tmp/fixed_sum.fus" --sms 0

# A sharded fusion: one process is rank 0 of 1; a 4-device mesh is larger than that world.
# It says the backend first, and rank 0 prints every rank's lines and the summary.
out="$("$loom" run "$src/examples/multidevice/var_mean_sp_d1.fus" --backend host 2>&1)"
rc=$?
if [[ $rc == 0 ]] && grep -q '^backend: host (--backend host)$' <<<"$out" &&
  grep -q '1 rank(s) (single process): all PASS' <<<"$out"; then
  echo "ok   sharded-single-rank"
else
  echo "FAIL sharded-single-rank: rc=$rc"; echo "$out" | tail -8; failures=$((failures + 1))
fi
check sharded-mesh-too-large 1 "a mesh may not be larger than the world" -- \
  "$loom" run "$src/examples/multidevice/var_mean_sp_d4.fus" --backend host

# An in-place output (issue 36): checked against the reference of the inputs as they were, and
# the report says the kernel stored it into the input.
mkdir -p "$tmp/in_place"
"$loom" gen-examples "$tmp/in_place" --rows 37 >/dev/null
check in-place-run 0 '^PASS T3 .*written into input T0 in place \(by segment 0\)' -- \
  "$loom" run "$tmp/in_place/sgd_step_fp32.fus" --backend host
check in-place-print 0 '^outputs: T3 into T0$' -- "$loom" print "$src/examples/sgd_step_fp32.fus"

# The examples are what the generator writes today (run tools/regen-examples.sh if not).
"$loom" gen-examples "$tmp" >/dev/null
stale=0
for f in "$src"/examples/*.fus; do
  cmp -s "$f" "$tmp/$(basename "$f")" || { echo "stale example: $f"; stale=1; }
done
if [[ $stale == 0 ]]; then echo "ok   examples-fresh"; else failures=$((failures + 1)); fi

# Every example end to end through the automatic path (segment, schedule, lower, run) on the
# host backend, on 37 rows instead of 16384 (same row widths, so the same kinds of kernels),
# checked against the reference evaluator by `loom run` itself.
mkdir -p "$tmp/small"
"$loom" gen-examples "$tmp/small" --rows 37 >/dev/null
for f in "$tmp"/small/*.fus; do
  name="run-small-$(basename "$f" .fus)"
  if out="$("$loom" run "$f" --backend host 2>&1)" && ! grep -q "^FAIL" <<<"$out"; then
    echo "ok   $name"
  else
    echo "FAIL $name"
    echo "$out" | tail -n 8
    failures=$((failures + 1))
  fi
done

# --no-check runs without the reference evaluator: RAN lines instead of PASS, no reference step
# among the progress lines, exit 0.
"$loom" run "$src/examples/var_mean_small.fus" --backend host --no-check --progress-after 0 \
  >"$tmp/nc.out" 2>"$tmp/nc.err"
rc=$?
if [[ $rc == 0 ]] && grep -q '^check: skipped (--no-check)' "$tmp/nc.out" &&
  grep -Eq '^RAN  T4 +\[1, 64\] f32: T4 = div' "$tmp/nc.out" && ! grep -q '^PASS' "$tmp/nc.out" &&
  grep -q 'no reference check$' "$tmp/nc.out" && ! grep -q 'reference evaluator' "$tmp/nc.err"; then
  echo "ok   run-no-check"
else
  echo "FAIL run-no-check: rc=$rc"; cat "$tmp/nc.out" "$tmp/nc.err"; failures=$((failures + 1))
fi
check run-no-check-help 0 '--no-check +run without computing the reference outputs' -- "$loom" run --help
check run-no-check-sharded 0 '1 rank\(s\) \(single process\): all ran \(not checked\)' -- \
  "$loom" run "$src/examples/multidevice/var_mean_sp_d1.fus" --backend host --no-check

# LOOM_DUMP=help lists every name with its line on the dump sink (stdout) before the command
# runs, and dumps nothing else; LOOM_DEBUG=help likewise.
out="$(LOOM_DUMP=help "$loom" print "$src/examples/var_mean_small.fus" 2>&1)"
if grep -q '^LOOM_DUMP names' <<<"$(head -1 <<<"$out")" &&
  grep -Eq '^  kernel_ir\(pass\) +the kernel IR after each lowering pass' <<<"$out" &&
  grep -Eq '^  host_program +what a runtime runs' <<<"$out" && grep -q '= welford(' <<<"$out"; then
  echo "ok   dump-help"
else
  echo "FAIL dump-help"; echo "$out" | head -5; failures=$((failures + 1))
fi
check debug-help 0 '^  verify_ir +runs ir::verify' -- env LOOM_DEBUG=help "$loom" version
check dump-unknown 1 "LOOM_DUMP: unknown option 'kernal_ir'.*LOOM_DUMP=help says what each prints" -- \
  env LOOM_DUMP=kernal_ir "$loom" version

# --bench repeats the run and reports the time per run and the bandwidth.
if "$loom" run "$src/examples/var_mean_small.fus" --backend host --bench 2>&1 |
  grep -q "^bench: .* ms per run (mean of 20, host wall time per run), .* GB/s"; then
  echo "ok   run-bench"
else
  echo "FAIL run-bench"
  failures=$((failures + 1))
fi

# The plan cache (on by default; ctest's LOOM_DEBUG keeps it out, so it is cleared here): a
# second process runs the stored plan, and `loom run` reports the segments, schedulers, launches
# and parameters the cold process reported (the runtime is built when asked), with the same
# reference check. LOOM_DUMP=compile_time says the plan served it.
segments() {
  sed -nE 's/, [0-9.]+ ms \(host wall time.*//; /^(kernel|[0-9]+ kernel|  params|PASS|FAIL)/p' <<<"$1"
}
plan_run=(env LOOM_DEBUG= LOOM_CACHE_DIR="$tmp/plan-cache" "$loom" run
  "$src/examples/var_mean_small.fus" --backend host)
plan_cold="$("${plan_run[@]}" 2>&1)"
plan_warm="$(LOOM_DUMP=compile_time "${plan_run[@]}" 2>&1)"
if [[ -n "$(segments "$plan_cold")" && "$(segments "$plan_cold")" == "$(segments "$plan_warm")" ]] &&
  grep -q 'first run from the plan' <<<"$plan_warm" && grep -q '^PASS\|PASS' <<<"$plan_warm"; then
  echo "ok   run-plan-cache"
else
  echo "FAIL run-plan-cache"; diff <(segments "$plan_cold") <(segments "$plan_warm") | head -10
  grep 'plan' <<<"$plan_warm" | head -5
  failures=$((failures + 1))
fi

if [[ $failures != 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
