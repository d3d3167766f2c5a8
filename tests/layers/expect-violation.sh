#!/usr/bin/env bash
# expect-violation.sh CHECKER SOURCE_ROOT LINKS WORK_DIR MODE ARGS...
# Copies SOURCE_ROOT's src/, include/, transports/, examples/ and the links file LINKS to WORK_DIR, breaks the
# layering there one way, runs `CHECKER --links <copy> <copy>` and passes only if the checker
# fails AND names the break -- so a checker that stopped looking fails this test.
#   include FILE HEADER   append `#include "HEADER"` to FILE; expects FILE:<that line>: error:
#   link FOLDER DEP       make layer FOLDER link DEP in the links file; expects its mismatch
#   dead FOLDER DEP       drop every include of DEP's headers from src/FOLDER/*; expects the
#                         table's use of DEP by FOLDER reported as included by no file
set -euo pipefail
checker=$1 root=$2 links=$3 work=$4 mode=$5
shift 5

rm -rf "$work"
mkdir -p "$work"
cp -R "$root/src" "$root/include" "$work/"
# The consumers too (transports/, examples/): the checker holds them to the public headers.
for d in transports examples; do [[ -d $root/$d ]] && cp -R "$root/$d" "$work/"; done
cp "$links" "$work/links.txt"
case $mode in
  include)
    file=$1 inc=$2
    line=$(($(wc -l <"$work/$file") + 1))
    printf '#include "%s"\n' "$inc" >>"$work/$file"
    want="$file:$line: error:"
    ;;
  link)
    folder=$1 dep=$2
    grep -q "^$folder " "$work/links.txt" || { echo "expect-violation: no layer $folder in $links" >&2; exit 2; }
    sed -i "s|^$folder .*|& $dep|" "$work/links.txt"
    want="error: layer $folder links ["
    ;;
  dead)
    folder=$1 dep=$2
    n=$(grep -l -E "#include \"$dep/[^/]+\"" "$work/src/$folder"/* | wc -l)
    ((n > 0)) || { echo "expect-violation: src/$folder includes nothing of $dep" >&2; exit 2; }
    sed -i -E "\\|#include \"$dep/[^/]+\"|d" "$work/src/$folder"/*
    want="error: layer $folder uses $dep in the table, but none of its files includes a header of $dep"
    ;;
  *) echo "expect-violation: unknown mode $mode" >&2; exit 2 ;;
esac

set +e
out=$("$checker" --links "$work/links.txt" "$work" 2>&1)
rc=$?
set -e
printf '%s\n' "$out"
if ((rc != 1)); then
  echo "expect-violation: the checker exited $rc, expected 1 ($mode $*)" >&2
  exit 1
fi
if ! grep -qF "$want" <<<"$out"; then
  echo "expect-violation: the checker failed without saying: $want" >&2
  exit 1
fi
echo "expect-violation: caught ($mode $*): $want"
