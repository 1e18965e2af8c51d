#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_snippets.sh DOC.md SOURCE...: every ```cpp and ```cmake block of DOC.md comes after a
# `<!-- snippet: NAME -->` line and equals, line for line, the region of a SOURCE between
# `// [snippet NAME]` (or `# [snippet NAME]`) and `// [end snippet]` (or `# [end snippet]`), less
# the region's common indentation; every region is shown in the document. Prints a diff for each
# mismatch.
set -euo pipefail
doc=$1
shift
src="$*"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/doc" "$work/src"

# The document's blocks, one file per snippet name.
awk -v out="$work/doc" '
  /^<!-- snippet: [a-z0-9-]+ -->$/ { name = $3; next }
  /^```(cpp|cmake)$/ {
    if (name == "") { printf "%s:%d: a code block without a <!-- snippet: NAME --> line\n", FILENAME, NR; bad = 1 }
    inblock = 1; file = out "/" name; printf "" > file; next
  }
  /^```$/ && inblock { inblock = 0; name = ""; close(file); next }
  inblock { print > file }
  END { exit bad }
' "$doc"

# The source regions, dedented by their least indentation.
awk -v out="$work/src" '
  /(\/\/|#) \[snippet [a-z0-9-]+\]$/ { name = $NF; sub(/\]$/, "", name); n = 0; next }
  /(\/\/|#) \[end snippet\]$/ {
    min = -1
    for (i = 1; i <= n; i++) {
      if (lines[i] ~ /^[[:space:]]*$/) continue
      match(lines[i], /^ */); if (min < 0 || RLENGTH < min) min = RLENGTH
    }
    file = out "/" name; printf "" > file
    for (i = 1; i <= n; i++) print substr(lines[i], min + 1) > file
    close(file); name = ""; next
  }
  name != "" { lines[++n] = $0 }
' "$@"

status=0
for f in "$work"/src/*; do
  name=$(basename "$f")
  if [[ ! -f $work/doc/$name ]]; then
    echo "$doc: snippet '$name' of $src is not shown (add <!-- snippet: $name --> and its block)"
    status=1
  elif ! diff -u --label "$doc ($name)" --label "$src ($name)" "$work/doc/$name" "$f"; then
    status=1
  fi
done
for f in "$work"/doc/*; do
  name=$(basename "$f")
  [[ -f $work/src/$name ]] || { echo "$doc: snippet '$name' is not in $src"; status=1; }
done
[[ $status == 0 ]] && echo "check_snippets: $(find "$work/src" -type f | wc -l) snippets of $doc match $src"
exit $status
