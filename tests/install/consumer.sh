#!/usr/bin/env bash
# consumer.sh BUILD_DIR SOURCE_DIR OUT_DIR
# What a transport sees of wireup once installed: `cmake --install` of BUILD_DIR into
# OUT_DIR/prefix, then examples/c_transport built out of tree against that prefix twice --
# OUT_DIR/cmake/c_transport with find_package(wireup CONFIG), OUT_DIR/pkgconfig/c_transport with
# pkg-config alone (the Makefile) -- and the installed archive checked for simulator symbols.
# tests/vm runs OUT_DIR/pkgconfig/c_transport under mpirun on rxe0.
set -euo pipefail
build=$1 src=$2 out=$3
prefix=$out/prefix
step() { printf '\n== %s\n' "$*"; }
fail() { echo "consumer: FAILED: $*" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"

step "install (component Development) into $prefix"
cmake --install "$build" --prefix "$prefix" --component Development >"$out/install.log"
for f in include/wireup/wireup.h include/wireup/wireup_version.h include/wireup/wireup_results.h include/wireup/wireup_events.h include/wireup/wireup_stats.h include/wireup/wireup_on_demand.h include/wireup/wireup.hpp lib/libwireup.a \
         lib/cmake/wireup/wireupConfig.cmake lib/cmake/wireup/wireupConfigVersion.cmake \
         lib/cmake/wireup/wireupTargets.cmake lib/pkgconfig/wireup.pc; do
  [[ -f $prefix/$f ]] || fail "not installed: $f"
  echo "  $f"
done
# Only the public headers: nothing of src/ is installed.
extra=$(cd "$prefix/include" && find . -type f ! -path './wireup/wireup.h' ! -path './wireup/wireup_version.h' ! -path './wireup/wireup_results.h' ! -path './wireup/wireup_events.h' ! -path './wireup/wireup_stats.h' ! -path './wireup/wireup_on_demand.h' ! -path './wireup/wireup.hpp')
[[ -z $extra ]] || fail "headers other than the public ones installed: $extra"

step "no simulator in the installed libwireup.a"
# Positive controls first, so that an empty nm or a pattern that matches nothing cannot pass:
# the C API is in the archive, and the pattern does match the simulator's own library.
sim_re='prov::sim::|SimMesh|sim_drive|SimFabric'
nm -C "$prefix/lib/libwireup.a" >"$out/nm.txt"
grep -q ' T wireup_context_create$' "$out/nm.txt" ||
  fail "nm finds no wireup_context_create in the installed libwireup.a"
sim_lib=$(find "$build/src" -name 'libwireup_provider_sim.a' | head -1)
[[ -n $sim_lib ]] || fail "no libwireup_provider_sim.a under $build/src"
nm -C "$sim_lib" >"$out/nm-sim.txt"
grep -qE "$sim_re" "$out/nm-sim.txt" || fail "the simulator pattern matches nothing in $sim_lib"
n=$(grep -cE "$sim_re" "$out/nm.txt" || true)
echo "  nm -C lib/libwireup.a | grep -cE '$sim_re' = $n ($(wc -l <"$out/nm.txt") symbols;" \
     "$(grep -cE "$sim_re" "$out/nm-sim.txt") in libwireup_provider_sim.a)"
((n == 0)) || { grep -E "$sim_re" "$out/nm.txt" | head; fail "simulator symbols in libwireup.a"; }
# Nor the rest of the test support (src/testsupport: the sim drive, the C API on the sim).
support_re='wireup::capi_seam::|wireup::sim_drive'
support_lib=$(find "$build/src" -name 'libwireup_sim.a' | head -1)
[[ -n $support_lib ]] || fail "no libwireup_sim.a under $build/src"
nm -C "$support_lib" >"$out/nm-support.txt"
grep -qE "$support_re" "$out/nm-support.txt" || fail "the test-support pattern matches nothing in $support_lib"
n=$(grep -cE "$support_re" "$out/nm.txt" || true)
echo "  nm -C lib/libwireup.a | grep -cE '$support_re' = $n ($(grep -cE "$support_re" "$out/nm-support.txt")" \
     "in libwireup_sim.a)"
((n == 0)) || { grep -E "$support_re" "$out/nm.txt" | head; fail "test-support symbols in libwireup.a"; }

step "a man page for every exported function"
# Every C function the archive exports (T wireup_*) has share/man/man3/<function>.3 (the page
# itself or its alias), and `man` finds the installed page through the prefix.
fns=$(sed -n 's/^[0-9a-f]* T \(wireup_[a-z0-9_]*\)$/\1/p' "$out/nm.txt" | sort -u)
[[ -n $fns ]] || fail "nm lists no exported wireup_ function"
missing=()
for fn in $fns; do [[ -f $prefix/share/man/man3/$fn.3 ]] || missing+=("$fn"); done
((${#missing[@]} == 0)) || fail "no man page for: ${missing[*]} (add it to a man/*.md NAME line)"
echo "  $(wc -w <<<"$fns") functions, each with share/man/man3/<function>.3"
[[ -f $prefix/share/man/man7/wireup.7 ]] || fail "not installed: share/man/man7/wireup.7"
if command -v man >/dev/null; then
  page=$(man --manpath="$prefix/share/man" -w wireup_progress) || fail "man -w wireup_progress finds nothing under $prefix/share/man"
  [[ $page == "$prefix/share/man/man3/wireup_progress.3"* ]] || fail "man -w wireup_progress gave $page"
  MANWIDTH=80 man --manpath="$prefix/share/man" wireup_fd 2>/dev/null | grep -q '^WIREUP_PROGRESS(3)' ||
    fail "man wireup_fd does not show wireup_progress(3)'s page"
  echo "  man -w wireup_progress: $page; man wireup_fd shows its page"
else
  fail "man is not installed (Debian: man-db, scripts/install-deps.sh)"
fi

step "no PMIx in the installed libwireup.a (the PMIx bootstrap is optional, src/bootstrap)"
# Neither the bootstrap's code nor a reference to PMIx: a transport need not have OpenPMIx.
# The positive control is the bootstrap's own archive, where this build has one.
pmix_re='PMIx_|wireup::bootstrap::'
n=$(grep -cE "$pmix_re" "$out/nm.txt" || true)
boot_lib=$(find "$build/src" -name 'libwireup_bootstrap.a' | head -1)
if [[ -n $boot_lib ]]; then
  nm -C "$boot_lib" >"$out/nm-bootstrap.txt"
  grep -qE "$pmix_re" "$out/nm-bootstrap.txt" || fail "the PMIx pattern matches nothing in $boot_lib"
  echo "  nm -C lib/libwireup.a | grep -cE '$pmix_re' = $n ($(grep -cE "$pmix_re" "$out/nm-bootstrap.txt") in libwireup_bootstrap.a)"
else
  echo "  nm -C lib/libwireup.a | grep -cE '$pmix_re' = $n (this build has no PMIx bootstrap)"
fi
((n == 0)) || { grep -E "$pmix_re" "$out/nm.txt" | head; fail "PMIx symbols in libwireup.a"; }
grep -q pmix "$prefix/lib/pkgconfig/wireup.pc" && fail "wireup.pc names pmix"

# Out of the tree: a copy of the example alone, so that nothing of the source tree is in reach.
cp -R "$src/examples/c_transport" "$out/example"

step "CMake: find_package(wireup CONFIG) from $prefix"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$out/example" -B "$out/cmake" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_FLAGS="-Werror" >"$out/cmake-configure.log" || { cat "$out/cmake-configure.log"; fail "configure"; }
found=$(sed -n 's/^wireup_DIR:PATH=//p' "$out/cmake/CMakeCache.txt")
[[ $found == "$prefix/lib/cmake/wireup" ]] || fail "find_package found wireup in '$found', not in $prefix"
echo "  wireup_DIR=$found"
cmake --build "$out/cmake" --verbose >"$out/cmake-build.log" 2>&1 || { cat "$out/cmake-build.log"; fail "build (cmake)"; }
grep -qF "$prefix/lib/libwireup.a" "$out/cmake-build.log" ||
  fail "the cmake build did not link $prefix/lib/libwireup.a"
[[ -x $out/cmake/c_transport ]] || fail "no $out/cmake/c_transport"
echo "  built $out/cmake/c_transport"

step "pkg-config: make -f examples/c_transport/Makefile"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
echo "  pkg-config --static --libs wireup: $(pkg-config --static --libs wireup)"
[[ $(pkg-config --variable=libdir wireup) -ef $prefix/lib ]] || fail "wireup.pc libdir is not $prefix/lib"
mkdir -p "$out/pkgconfig"
make -C "$out/pkgconfig" -f "$out/example/Makefile" CFLAGS="-O2 -g -Werror" >"$out/pkgconfig-build.log" 2>&1 ||
  { cat "$out/pkgconfig-build.log"; fail "build (pkg-config)"; }
cat "$out/pkgconfig-build.log"
[[ -x $out/pkgconfig/c_transport ]] || fail "no $out/pkgconfig/c_transport"

# Both programs start and parse their arguments (a bad one is refused); wiring up needs the
# VM's rxe0, where tests/vm runs the pkg-config build.
# (Leak checks off for this in a sanitizer build: MPI_Abort leaves Open MPI's allocations.)
for b in "$out/cmake/c_transport" "$out/pkgconfig/c_transport"; do
  if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$b" --no-such-option >"$out/run.log" 2>&1; then fail "$b accepted --no-such-option"; fi
  grep -q usage "$out/run.log" || { cat "$out/run.log"; fail "$b did not print its usage"; }
done
echo
echo "consumer: installed, built both ways, no simulator symbols"
