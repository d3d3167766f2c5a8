#!/usr/bin/env bash
# run.sh [options] -- COMMAND [ARGS...]
#
# Runs COMMAND inside a throw-away qemu VM with Debian's stock kernel and a soft-RoCE device
# (rdma_rxe "rxe0" on dummy0, 10.0.0.1/24), so the real kernel RDMA CM / verbs stack is used.
# The guest sees the host's root file system read-only and the share directory writable at the
# same absolute path; COMMAND runs in the current directory. Its output streams to stdout and
# its exit status becomes ours. See scripts/vm/README.md.
#
# Options:
#   --timeout SECONDS  kill the VM after this long (default 900, env WIREUP_VM_TIMEOUT)
#   --cache DIR        kernel/initramfs cache (default REPO/build/vm-cache, env WIREUP_VM_CACHE)
#   --share DIR        writable directory shared with the guest (default: the nearest enclosing
#                      directory holding CMakeCache.txt, else the current directory)
#   --smp N            virtual CPUs (default: host CPUs, at most 8)
#   --mem MB           guest memory (default 2048)
#   --env NAME[=VAL]   pass one more environment variable (repeatable)
#   --verbose          show the whole console (kernel log, init trace)
#   --node N --link LOCAL:REMOTE
#                      one node (1 or 2) of a pair (scripts/vm/pair.sh): a virtio NIC on a qemu
#                      UDP socket netdev bound to 127.0.0.1:LOCAL, sending to 127.0.0.1:REMOTE;
#                      the guest is 10.0.1.N/24 on eth0 with rxe0 on it
#   --rails 2          a second rail: dummy1 = 10.0.2.1/24 with rxe1 (one guest), or with
#                      --link2 LOCAL:REMOTE a second link, eth1 = 10.0.2.N/24 with rxe1 (a pair)
#   --rail-names swapped
#                      (a node of a pair) rxe1 on eth0 and rxe0 on eth1: names that would cross
#                      subnets if rails were paired by name
# Exit status: COMMAND's, or 124 on timeout, or 125 if the VM failed before reporting one.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

die() { echo "vm: error: $*" >&2; exit 125; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 125; }

TIMEOUT=${WIREUP_VM_TIMEOUT:-900}
CACHE=${WIREUP_VM_CACHE:-$REPO/build/vm-cache}
SHARE=""
SMP=$(nproc 2>/dev/null || echo 2)
((SMP > 8)) && SMP=8
MEM=2048
VERBOSE=0
EXTRA_ENV=()
NODE=""
LINK=""
LINK2=""
RAILS=1
RAIL_NAMES=straight

while (($#)); do
  case "$1" in
    --timeout) (($# >= 2)) || usage; TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#*=}; shift ;;
    --cache) (($# >= 2)) || usage; CACHE=$2; shift 2 ;;
    --cache=*) CACHE=${1#*=}; shift ;;
    --share) (($# >= 2)) || usage; SHARE=$2; shift 2 ;;
    --share=*) SHARE=${1#*=}; shift ;;
    --smp) (($# >= 2)) || usage; SMP=$2; shift 2 ;;
    --smp=*) SMP=${1#*=}; shift ;;
    --mem) (($# >= 2)) || usage; MEM=$2; shift 2 ;;
    --mem=*) MEM=${1#*=}; shift ;;
    --env) (($# >= 2)) || usage; EXTRA_ENV+=("$2"); shift 2 ;;
    --env=*) EXTRA_ENV+=("${1#*=}"); shift ;;
    --verbose|-v) VERBOSE=1; shift ;;
    --node) (($# >= 2)) || usage; NODE=$2; shift 2 ;;
    --link) (($# >= 2)) || usage; LINK=$2; shift 2 ;;
    --link2) (($# >= 2)) || usage; LINK2=$2; shift 2 ;;
    --rails) (($# >= 2)) || usage; RAILS=$2; shift 2 ;;
    --rail-names) (($# >= 2)) || usage; RAIL_NAMES=$2; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    *) echo "vm: unknown option '$1' (the command goes after --)" >&2; usage ;;
  esac
done
(($# >= 1)) || usage
if ! [[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]]; then die "--timeout wants a positive number of seconds"; fi
if ! [[ "$SMP" =~ ^[1-9][0-9]*$ ]]; then die "--smp wants a positive number"; fi
if ! [[ "$MEM" =~ ^[1-9][0-9]*$ ]] || ((MEM < 256)); then die "--mem wants at least 256 (MB)"; fi
if [ -n "$NODE$LINK" ]; then
  [[ "$NODE" =~ ^[12]$ ]] || die "--node wants 1 or 2 (and --link)"
  [[ "$LINK" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || die "--link wants LOCALPORT:REMOTEPORT (and --node)"
fi

[[ "$RAILS" =~ ^[12]$ ]] || die "--rails wants 1 or 2"
[[ "$RAIL_NAMES" == straight || "$RAIL_NAMES" == swapped ]] || die "--rail-names wants straight or swapped"
if [ -n "$NODE" ] && ((RAILS == 2)); then
  [[ "$LINK2" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || die "--rails 2 on a node of a pair wants --link2 LOCALPORT:REMOTEPORT"
fi

for tool in qemu-system-x86_64 timeout perl; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/install-deps.sh)"
done

# --- the share ----------------------------------------------------------------------------
if [ -z "$SHARE" ]; then
  d=$PWD
  while [ "$d" != / ] && [ ! -f "$d/CMakeCache.txt" ]; do d=$(dirname "$d"); done
  if [ "$d" != / ]; then SHARE=$d; else SHARE=$PWD; fi
fi
[ -d "$SHARE" ] || die "share directory '$SHARE' does not exist"
SHARE=$(cd "$SHARE" && pwd -P)
[ "$SHARE" != / ] || die "refusing to share / writable"
[ -w "$SHARE" ] || die "share directory '$SHARE' is not writable"
case "$SHARE" in *$'\n'*) die "share path contains a newline" ;; esac
CWD=$(pwd -P)
case "$CWD/" in
  "$SHARE"/*) ;;
  /tmp/*|/run/*|/var/tmp/*|/dev/*|/proc/*|/sys/*)
    echo "vm: warning: $CWD is outside the share and hidden in the guest (tmpfs/proc mounts there)" >&2 ;;
esac

# The guest covers /tmp, /run and /var/tmp with its own tmpfs: a source tree there (scripts,
# test data, configs) would be invisible, so it is shared read-only at the same path.
SRC_SHARE=""
case "$REPO/" in
  "$SHARE"/*) ;;
  /tmp/*|/run/*|/var/tmp/*) SRC_SHARE=$(cd "$REPO" && pwd -P) ;;
esac
case "$SRC_SHARE" in *,*|*$'\n'*) die "the source tree's path $SRC_SHARE (under a guest tmpfs) has a comma or newline: move the checkout" ;; esac

# --- kernel + initramfs -------------------------------------------------------------------
"$HERE/prepare.sh" "$CACHE" || die "prepare.sh failed"
CACHE=$(cd "$CACHE" && pwd)

# --- the per-run directory in the share ---------------------------------------------------
RUN=$(date +%s)-$$-$RANDOM
RUNDIR=$SHARE/.wireup-vm/$RUN
mkdir -p "$RUNDIR"
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
  rm -rf "$RUNDIR"
  rmdir "$SHARE/.wireup-vm" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
printf '%s\n' "$SHARE" >"$RUNDIR/share_path"
[ -z "$SRC_SHARE" ] || printf '%s\n' "$SRC_SHARE" >"$RUNDIR/src_path"

{
  echo '#!/bin/bash'
  echo '# generated by scripts/vm/run.sh: the command, its environment and directory'
  # Pass-through: PATH, the project's and test runners' variables, locale, sanitizer options.
  while read -r name; do
    if [[ "$name" =~ ^(PATH|LD_LIBRARY_PATH|LANG|LANGUAGE|TZ|TERM|LC_[A-Z_]+|WIREUP_[A-Za-z0-9_]*|GTEST_[A-Za-z0-9_]*|CTEST_[A-Za-z0-9_]*|OMPI_MCA_[A-Za-z0-9_]*|PRTE_MCA_[A-Za-z0-9_]*|PMIX_MCA_[A-Za-z0-9_]*|[A-Z]SAN_OPTIONS|UBSAN_OPTIONS)$ ]]; then
      printf 'export %s=%q\n' "$name" "${!name}"
    fi
  done < <(compgen -e)
  for e in "${EXTRA_ENV[@]}"; do
    name=${e%%=*}
    [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "bad --env '$e'"
    if [[ "$e" == *=* ]]; then
      printf 'export %s=%q\n' "$name" "${e#*=}"
    elif [ -n "${!name+set}" ]; then
      printf 'export %s=%q\n' "$name" "${!name}"
    fi
  done
  echo 'export HOME=/tmp/home TMPDIR=/tmp USER=root LOGNAME=root'
  echo 'export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1'
  if [ -n "$NODE" ]; then
    echo "export WIREUP_IN_VM=1 WIREUP_VM_ADDR=10.0.1.$NODE WIREUP_VM_NODE=$NODE"
  else
    echo 'export WIREUP_IN_VM=1 WIREUP_VM_ADDR=10.0.0.1'
  fi
  # shellcheck disable=SC2016  # expanded in the guest
  echo 'mkdir -p "$HOME"'
  printf 'cd -- %q || { echo "vm: cannot enter %q in the guest" >&2; exit 126; }\n' "$CWD" "$CWD"
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} >"$RUNDIR/command.sh"

# --- qemu ---------------------------------------------------------------------------------
# The uncompressed ELF kernel boots through its PVH entry point: that skips the xz
# decompressor, which alone takes ~5 s under TCG. prepare.sh makes it when it can.
KERNEL=$CACHE/vmlinuz
[ -f "$CACHE/vmlinux" ] && KERNEL=$CACHE/vmlinux
if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
  ACCEL=(-accel kvm -cpu host)
else
  # shellcheck disable=SC2054  # the commas belong to qemu's option syntax
  ACCEL=(-accel tcg,thread=multi -cpu max)
fi
if ((VERBOSE)); then
  APPEND="console=ttyS0 loglevel=7 panic=-1 wireup.verbose=1"
else
  APPEND="console=ttyS0 quiet loglevel=1 panic=-1"
fi
APPEND+=" wireup.run=$RUN"
[ -z "$NODE" ] || APPEND+=" wireup.node=$NODE"
((RAILS == 1)) || APPEND+=" wireup.rails=$RAILS"
[ "$RAIL_NAMES" = straight ] || APPEND+=" wireup.rail_names=$RAIL_NAMES"
QEMU=(qemu-system-x86_64 "${ACCEL[@]}" -smp "$SMP" -m "$MEM"
  -nodefaults -nographic -no-reboot -serial stdio -nic none
  -kernel "$KERNEL" -initrd "$CACHE/initrd.gz" -append "$APPEND"
  -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=${SHARE//,/,,},mount_tag=share,security_model=none,multidevs=remap")
[ -z "$SRC_SHARE" ] ||
  QEMU+=(-virtfs "local,path=$SRC_SHARE,mount_tag=src,security_model=none,readonly=on,multidevs=remap")
if [ -n "$NODE" ]; then
  # The pair's link: UDP datagrams between the two qemu processes on the host's loopback only.
  QEMU+=(-netdev "socket,id=link,udp=127.0.0.1:${LINK#*:},localaddr=127.0.0.1:${LINK%%:*}"
    -device "virtio-net-pci,netdev=link,mac=52:54:00:10:01:0$NODE")
  ((RAILS == 1)) ||
    QEMU+=(-netdev "socket,id=link2,udp=127.0.0.1:${LINK2#*:},localaddr=127.0.0.1:${LINK2%%:*}"
      -device "virtio-net-pci,netdev=link2,mac=52:54:00:10:02:0$NODE")
fi
# shellcheck disable=SC2206  # extra qemu arguments, split on blanks on purpose
QEMU+=(${WIREUP_VM_QEMU_ARGS:-})

START="===== wireup-vm $RUN: command start ====="
END="===== wireup-vm $RUN: command end,"
# Console filter: drop the boot chatter before the start marker and the power-off chatter after
# the end marker, strip the serial console's CRs, and stream everything else line by line.
# If the command never started, show the tail of the console so the failure can be diagnosed.
# shellcheck disable=SC2016  # perl code
FILTER='
  $| = 1;
  my ($start, $end, $verbose) = @ARGV;
  my ($state, @pre) = (0);
  while (my $l = <STDIN>) {
    $l =~ s/\r//g;
    if ($verbose) { print $l; next; }
    if ($state == 0) {
      my $i = index($l, $start);
      if ($i >= 0) { $state = 1; print substr($l, $i); }
      else { push @pre, $l; shift @pre if @pre > 60; }
    } elsif ($state == 1) {
      print $l;
      $state = 2 if index($l, $end) >= 0;
    }
  }
  if (!$verbose && $state == 0 && @pre) {
    print STDERR "vm: the command did not start; last console lines:\n", map { "  | $_" } @pre;
  }
'

t0=$(date +%s.%N)
set +e
timeout --kill-after=5 "$TIMEOUT" "${QEMU[@]}" </dev/null | perl -e "$FILTER" "$START" "$END" "$VERBOSE"
st=("${PIPESTATUS[@]}")
set -e
t1=$(date +%s.%N)

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
mtime() { stat -c %.9Y "$1" 2>/dev/null || echo ""; }
if [ "${st[0]}" = 124 ] || [ "${st[0]}" = 137 ]; then
  echo "vm: TIMEOUT: the VM was killed after ${TIMEOUT}s (--timeout), $(elapsed "$t0" "$t1")s in all" >&2
  exit 124
fi
if [ ! -f "$RUNDIR/status" ]; then
  echo "vm: error: the guest reported no exit status (qemu exited ${st[0]} after $(elapsed "$t0" "$t1")s)" >&2
  exit 125
fi
rc=$(cat "$RUNDIR/status")
[[ "$rc" =~ ^[0-9]+$ ]] || { echo "vm: error: bad exit status '$rc' from the guest" >&2; exit 125; }
ts=$(mtime "$RUNDIR/started")
te=$(mtime "$RUNDIR/status")
if [ -n "$ts" ] && [ -n "$te" ]; then
  echo "vm: booted in $(elapsed "$t0" "$ts")s, command exited $rc after $(elapsed "$ts" "$te")s" \
       "(VM total $(elapsed "$t0" "$t1")s)" >&2
else
  echo "vm: command exited $rc (VM total $(elapsed "$t0" "$t1")s)" >&2
fi
exit "$rc"
