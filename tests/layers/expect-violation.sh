#!/usr/bin/env bash
# expect-violation.sh CHECKER SOURCE_ROOT WORK_DIR FILE INCLUDE
# Copies SOURCE_ROOT's src/ and include/ to WORK_DIR, appends `#include "INCLUDE"` to FILE
# (relative to the copy) and runs CHECKER on the copy. Passes only if the checker fails AND
# names FILE at the injected line; so a checker that stopped looking fails this test.
set -euo pipefail
checker=$1 root=$2 work=$3 file=$4 inc=$5

rm -rf "$work"
mkdir -p "$work"
cp -R "$root/src" "$root/include" "$work/"
line=$(($(wc -l <"$work/$file") + 1))
printf '#include "%s"\n' "$inc" >>"$work/$file"

set +e
out=$("$checker" "$work" 2>&1)
rc=$?
set -e
printf '%s\n' "$out"
if ((rc != 1)); then
  echo "expect-violation: the checker exited $rc, expected 1 for $file:$line including \"$inc\"" >&2
  exit 1
fi
if ! grep -qF "$file:$line: error:" <<<"$out"; then
  echo "expect-violation: the checker failed but did not name $file:$line" >&2
  exit 1
fi
echo "expect-violation: caught $file:$line including \"$inc\""
