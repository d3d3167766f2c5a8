#!/usr/bin/env bash
# abi-check.sh [--update] [BUILD_DIR]
# Compares the ABI of this build's libwireup (the shared build of the same objects,
# BUILD_DIR/src/libwireup_abi.so, cmake/WireupAbi.cmake) with the committed reference
# abi/libwireup.abi, and fails with libabigail's report on any change. Only the types of the
# public headers (include/wireup) count. With --update it writes the reference instead: do that
# deliberately, with the change it records (notes/abi.md says when the major version moves).
# BUILD_DIR defaults to ./build; it must be built with debug info (RelWithDebInfo or Debug).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
update=0
if [[ ${1:-} == --update ]]; then
  update=1
  shift
fi
build=$(cd "${1:-$root/build}" && pwd)
ref=$root/abi/libwireup.abi
fail() { echo "abi-check: FAILED: $*" >&2; exit 1; }

for tool in abidw abidiff; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found: it is in Debian's abigail-tools (scripts/install-deps.sh installs it)"
done
so=$build/src/libwireup_abi.so
[[ -e $so ]] || fail "$so does not exist: build the target wireup_abi_so first (cmake --build $build --target wireup_abi_so)"
so=$(readlink -f "$so")
readelf -S "$so" | grep -q '\.debug_info' ||
  fail "$so has no debug info: configure $build with CMAKE_BUILD_TYPE RelWithDebInfo or Debug"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The soname carries the major version, the file name all of it: the dump names neither path.
abidw --headers-dir "$root/include/wireup" --drop-private-types --suppressions "$root/abi/libwireup.abignore" \
  --no-corpus-path --no-comp-dir-path --no-elf-needed --no-show-locs --out-file "$tmp/current.abi" "$so" || fail "abidw $so"
grep -q 'wireup_create' "$tmp/current.abi" || fail "the dump of $so has no wireup_create: nothing was read"

if ((update)); then
  cp "$tmp/current.abi" "$ref"
  echo "abi-check: wrote $ref from $so ($(grep -c '<elf-symbol ' "$ref") symbols)"
  exit 0
fi
[[ -f $ref ]] || fail "no reference $ref: scripts/abi-check.sh --update writes it"
rc=0
# --harmless: abidiff's default filters out changes it calls harmless (an enumerator appended,
# for one), which would pass unseen; every change must be seen and the reference updated.
abidiff --harmless --no-show-locs "$ref" "$tmp/current.abi" >"$tmp/report.txt" 2>&1 || rc=$?
if ((rc != 0)); then
  cat "$tmp/report.txt"
  fail "the ABI of $so differs from $ref (abidiff exit $rc). If the change is deliberate, run" \
       "scripts/abi-check.sh --update and commit abi/libwireup.abi with it (notes/abi.md: the rules)"
fi
echo "abi-check: $so matches $ref ($(grep -c '<elf-symbol ' "$ref") symbols)"
