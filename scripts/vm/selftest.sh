#!/usr/bin/env bash
# selftest.sh [--cache DIR] [run.sh options...]
#
# Boots the soft-RoCE VM once (scripts/vm/run.sh) and checks inside it that the RDMA stack
# the project's tests rely on works: rxe0 is ACTIVE, libibverbs sees it, the RDMA CM connects
# (rdmacm-utils ucmatose), and Open MPI can launch. Exit 0 only if every check passes.
# The scratch share is CACHE/selftest (CACHE defaults to REPO/build/vm-cache).
set -euo pipefail
# shellcheck disable=SC2317  # the guest-side check functions are called through check()

if [ "${1:-}" = --guest ]; then
  # ---------------------------------------------------------------- runs inside the VM ----
  set +e
  passed=0 failed=0
  check() { # NAME CMD...: run CMD, show its output, count the result
    local name=$1 out rc t0 t
    shift
    echo "--- $name"
    t0=$(date +%s%N)
    out=$("$@" 2>&1)
    rc=$?
    t=$((($(date +%s%N) - t0) / 1000000))
    [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/    /'
    if [ $rc = 0 ]; then
      echo "PASS $name (${t} ms)"; passed=$((passed + 1))
    else
      echo "FAIL $name (exit $rc, ${t} ms)"; failed=$((failed + 1))
    fi
  }
  rdma_link() { rdma link show && rdma link show | grep -q 'link rxe0/1 state ACTIVE'; }
  ibv_list() { ibv_devices && ibv_devices | grep -qw rxe0; }
  ibv_info() { ibv_devinfo -d rxe0 && ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE; }
  environment() {
    echo "hostname=$(hostname) WIREUP_IN_VM=${WIREUP_IN_VM:-} WIREUP_VM_ADDR=${WIREUP_VM_ADDR:-}"
    echo "HOME=$HOME TMPDIR=$TMPDIR cwd=$PWD"
    [ "${WIREUP_IN_VM:-}" = 1 ] && [ "${WIREUP_VM_ADDR:-}" = 10.0.0.1 ] &&
      [ "$(hostname)" = wireup-vm ] && ip -4 addr show dev dummy0 | grep -q 'inet 10.0.0.1/24' &&
      [ -c /dev/infiniband/rdma_cm ] && touch "$HOME/.probe" "$TMPDIR/.probe" ./.probe &&
      rm -f ./.probe
  }
  cmatose() {
    local srv rc
    timeout 60 ucmatose -c 10 &
    srv=$!
    sleep 1 # let the server listen
    timeout 60 ucmatose -s "$WIREUP_VM_ADDR" -c 10
    rc=$?
    wait "$srv" || rc=$?
    return "$rc"
  }
  mpi() {
    local out
    out=$(timeout 120 mpirun --oversubscribe -np 2 hostname) || return 1
    echo "$out"
    [ "$(grep -cx wireup-vm <<<"$out")" = 2 ]
  }
  check environment environment
  check rdma-link rdma_link
  check ibv_devices ibv_list
  check ibv_devinfo ibv_info
  check ucmatose cmatose
  check mpirun mpi
  echo "selftest: $passed passed, $failed failed"
  [ $failed = 0 ]
  exit
fi

# ------------------------------------------------------------------- runs on the host ----
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${WIREUP_VM_CACHE:-$HERE/../../build/vm-cache}
args=()
while (($#)); do
  case "$1" in
    --cache) CACHE=$2; shift 2 ;;
    --cache=*) CACHE=${1#*=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$CACHE/selftest"
SHARE=$(cd "$CACHE/selftest" && pwd -P)
# The guest half runs from the share, so it works wherever the checkout lives.
cp "${BASH_SOURCE[0]}" "$SHARE/selftest.sh"
cd "$SHARE"
set +e
"$HERE/run.sh" --cache "$CACHE" --share "$SHARE" --timeout 300 "${args[@]}" -- \
  /bin/bash "$SHARE/selftest.sh" --guest
rc=$?
if [ $rc = 0 ]; then echo "vm selftest: OK"; else echo "vm selftest: FAILED ($rc)"; fi
exit $rc
