#!/usr/bin/env bash
# pair.sh [options] -- COMMAND1 [ARGS...] [::: COMMAND2 [ARGS...]]
#
# Boots two soft-RoCE guests (scripts/vm/run.sh --node 1 / --node 2: the same kernel and
# initramfs) joined by one virtual Ethernet link: a qemu UDP socket netdev between the two qemu
# processes on the host's loopback (127.0.0.1 only; no host interface, nothing leaves the
# machine). Node N is 10.0.1.N/24 on its eth0 with rxe0 on it; each runs an sshd on that address.
# COMMAND1 runs on node 1, COMMAND2 (if given) on node 2; a node without a command serves the
# other (ssh, mpirun's daemons) until the other's command is done. Both see the share (build
# tree) writable at its host path, and WIREUP_VM_PAIR_DIR, a directory in it for this pair only.
# Each output line is prefixed with "[1] " or "[2] ". A node can cut its own power
# (scripts/vm/pair-power-cut.sh: no orderly shutdown, no CM DREQ) and is then booted again.
#
# Options: --timeout S (default 900, the whole pair), --cache, --share, --smp N (per guest,
# default 2), --mem MB (per guest, default 2048), --env NAME[=VALUE], --verbose: as run.sh.
# --rails 2: a second link between the guests, eth1 = 10.0.2.N/24 with rxe1 on it (ssh and MPI
# stay on the first); --swap-node2: node 2 names its rails the other way round (rxe1 on eth0,
# rxe0 on eth1), so that rails paired by name would cross subnets.
# Exit status: 0 if both nodes exited 0; else node 1's status if non-zero, else node 2's
# (124 timeout, 125 a VM failed, 120 the other node or the link never came up). The last line
# (stderr) gives both: "pair: node 1 exited A, node 2 exited B, booted in X s / Y s ...".
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

die() { echo "pair: error: $*" >&2; exit 125; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 125; }

TIMEOUT=${WIREUP_VM_TIMEOUT:-900}
SHARE="" SMP=2 MEM=2048
PASS=() RAILS=1 SWAP2=0
while (($#)); do
  case "$1" in
    --timeout) (($# >= 2)) || usage; TIMEOUT=$2; shift 2 ;;
    --share) (($# >= 2)) || usage; SHARE=$2; shift 2 ;;
    --smp) (($# >= 2)) || usage; SMP=$2; shift 2 ;;
    --mem) (($# >= 2)) || usage; MEM=$2; shift 2 ;;
    --cache|--env) (($# >= 2)) || usage; PASS+=("$1" "$2"); shift 2 ;;
    --verbose|-v) PASS+=(--verbose); shift ;;
    --rails) (($# >= 2)) || usage; RAILS=$2; shift 2 ;;
    --swap-node2) SWAP2=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    *) echo "pair: unknown option '$1' (the commands go after --)" >&2; usage ;;
  esac
done
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a positive number of seconds"
[[ "$RAILS" =~ ^[12]$ ]] || die "--rails wants 1 or 2"
CMD1=() CMD2=()
while (($#)) && [ "$1" != ":::" ]; do CMD1+=("$1"); shift; done
if (($#)); then shift; CMD2=("$@"); fi
((${#CMD1[@]} + ${#CMD2[@]})) || usage
command -v ssh-keygen >/dev/null || die "'ssh-keygen' not found (run scripts/install-deps.sh)"
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd not found (openssh-server; run scripts/install-deps.sh)"
command -v ss >/dev/null || die "'ss' not found (iproute2)"

if [ -z "$SHARE" ]; then
  d=$PWD
  while [ "$d" != / ] && [ ! -f "$d/CMakeCache.txt" ]; do d=$(dirname "$d"); done
  if [ "$d" != / ]; then SHARE=$d; else SHARE=$PWD; fi
fi
[ -d "$SHARE" ] && [ -w "$SHARE" ] || die "share directory '$SHARE' is not a writable directory"
SHARE=$(cd "$SHARE" && pwd -P)

# Prepare once here, so that the two run.sh below never build the cache at the same time.
"$HERE/prepare.sh" "${WIREUP_VM_CACHE:-$REPO/build/vm-cache}" >&2 || die "prepare.sh failed"

ID=$(date +%s)-$$-$RANDOM
D=$SHARE/.wireup-pair/$ID
mkdir -p "$D"
PIDS=()
# shellcheck disable=SC2317  # invoked by the trap
tree() {  # tree PID: PID and its descendants, children first
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$c"; done
  echo "$1"
}
cleanup() {
  local p
  # Interrupted: end both guests (the qemu processes under each run.sh) and the node loops.
  # shellcheck disable=SC2046  # one pid per word
  for p in "${PIDS[@]}"; do kill -TERM $(tree "$p") 2>/dev/null || true; done
  rm -rf "$D"
  rmdir "$SHARE/.wireup-pair" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
ssh-keygen -q -t ed25519 -N '' -C "wireup-pair-$ID" -f "$D/id_ed25519" || die "ssh-keygen failed"

# Two free UDP ports on the loopback, one per qemu; each sends to the other's.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 30000))
    if ! ss -Hlun "sport = :$p" | grep -q .; then echo "$p"; return 0; fi
  done
  return 1
}
P1=$(free_port) || die "no free UDP port on 127.0.0.1"
P2=$(free_port) || die "no free UDP port on 127.0.0.1"
[ "$P1" != "$P2" ] || P2=$((P1 + 1))
# The second link's ports (--rails 2).
Q1=$(free_port) || die "no free UDP port on 127.0.0.1"
Q2=$(free_port) || die "no free UDP port on 127.0.0.1"
while [ "$Q1" = "$P1" ] || [ "$Q1" = "$P2" ]; do Q1=$((Q1 + 2)); done
while [ "$Q2" = "$P1" ] || [ "$Q2" = "$P2" ] || [ "$Q2" = "$Q1" ]; do Q2=$((Q2 + 3)); done

node() {  # node N LOCAL REMOTE COMMAND...: one guest; its status ends up in $D/rc.N
  # A node that asked for it (pair-power-cut.sh left $D/reboot.N) boots again, with the same
  # MAC (so the same RoCE GID) and WIREUP_VM_BOOT counting its boots.
  local n=$1 lp=$2 rp=$3 boot=1 rc rails=()
  shift 3
  if ((RAILS == 2)); then
    rails=(--rails 2 --link2 "$([ "$n" = 1 ] && echo "$Q1:$Q2" || echo "$Q2:$Q1")")
    ((SWAP2)) && [ "$n" = 2 ] && rails+=(--rail-names swapped)
  fi
  set +e
  while :; do
    "$HERE/run.sh" --timeout "$TIMEOUT" --share "$SHARE" --smp "$SMP" --mem "$MEM" "${PASS[@]}" "${rails[@]}" \
      --node "$n" --link "$lp:$rp" --env WIREUP_VM_PAIR_DIR="$D" --env WIREUP_VM_PAIR_WAIT_S \
      --env WIREUP_VM_BOOT="$boot" -- "$HERE/pair-node.sh" "$@" 2>&1 | sed -u "s/^/[$n] /"
    rc=${PIPESTATUS[0]}
    [ -f "$D/reboot.$n" ] || break
    rm -f "$D/reboot.$n"
    boot=$((boot + 1))
    echo "[$n] pair: node $n lost power (exit $rc); booting it again (boot $boot)"
  done
  echo "$rc" >"$D/rc.$n"
  date +%s.%N >"$D/exited.$n"
}
t0=$(date +%s.%N)
node 1 "$P1" "$P2" "${CMD1[@]}" &
PIDS+=($!)
node 2 "$P2" "$P1" "${CMD2[@]}" &
PIDS+=($!)
wait "${PIDS[0]}" "${PIDS[1]}" || true
PIDS=()
t1=$(date +%s.%N)

rc1=$(cat "$D/rc.1" 2>/dev/null || echo 125)
rc2=$(cat "$D/rc.2" 2>/dev/null || echo 125)
since() { [ -f "$1" ] && awk -v a="$t0" -v b="$(awk '{ print $NF }' "$1")" 'BEGIN { printf "%.1f", b - a }' || echo "?"; }
echo "pair: node 1 exited $rc1, node 2 exited $rc2; ready (sshd up) after $(since "$D/ready.1") s /" \
     "$(since "$D/ready.2") s; pair total $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" >&2
if [ "$rc1" != 0 ]; then exit "$rc1"; fi
exit "$rc2"
