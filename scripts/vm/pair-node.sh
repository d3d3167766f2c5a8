#!/usr/bin/env bash
# pair-node.sh [COMMAND [ARGS...]]: the command scripts/vm/pair.sh runs on each node of the pair
# (inside the guest, through run.sh). Starts an sshd on the link address, waits for the other
# node (its "ready" file in the pair directory, then its sshd over the link), runs COMMAND with
# the pair's environment, then keeps the node up until the other node is finished too (its
# COMMAND may still be using this one through ssh/mpirun). Without COMMAND the node only serves.
#
# Environment (set by pair.sh / run.sh): WIREUP_VM_PAIR_DIR, WIREUP_VM_NODE (1|2).
# Given to COMMAND: WIREUP_VM_PEER_ADDR, WIREUP_VM_NODE_ADDRS ("10.0.1.1 10.0.1.2"), WIREUP_VM_PAIR_SSH
# (an ssh that reaches the other node), and OMPI_MCA_* so that mpirun starts its daemon on the
# other node through that ssh and keeps its out-of-band traffic and MPI (ob1, TCP BTL) on the link.
# Exit status: COMMAND's; 120 if the other node never came up or the link is dead.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N=${WIREUP_VM_NODE:?pair-node: WIREUP_VM_NODE is not set (run through scripts/vm/pair.sh)}
D=${WIREUP_VM_PAIR_DIR:?pair-node: WIREUP_VM_PAIR_DIR is not set}
P=$((3 - N))
PEER=10.0.1.$P
WAIT_S=${WIREUP_VM_PAIR_WAIT_S:-180}
say() { echo "pair-node $N: $*" >&2; }

# --- sshd on the link address (keys in the guest's tmpfs; the client key is the pair's) ---
S=/tmp/pair-ssh
mkdir -p "$S" /run/sshd /tmp/home
chmod 700 "$S"
ssh-keygen -q -t ed25519 -N '' -f "$S/host_key" || { say "ssh-keygen failed"; exit 120; }
cp "$D/id_ed25519.pub" "$S/authorized_keys"
cat >"$S/sshd_config" <<EOF
ListenAddress 10.0.1.$N
HostKey $S/host_key
AuthorizedKeysFile $S/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PidFile $S/sshd.pid
SetEnv HOME=/tmp/home TMPDIR=/tmp WIREUP_VM_PAIR_DIR=$D WIREUP_VM_NODE=$N WIREUP_IN_VM=1 WIREUP_VM_ADDR=10.0.1.$N OMPI_MCA_oob_tcp_if_include=10.0.1.0/24 OMPI_MCA_btl_tcp_if_include=10.0.1.0/24
EOF
/usr/sbin/sshd -f "$S/sshd_config" -E "$S/sshd.log" || { say "sshd did not start:"; cat "$S/sshd.log" >&2; exit 120; }
echo "${WIREUP_VM_BOOT:-1} $(date +%s.%N)" >"$D/ready.$N"

# --- the other node: booted, and its sshd reachable over the link -------------------------
# A node that only serves (no COMMAND) and was booted again after a power cut may find the other
# node's command already over (a power cut as the suite's last case): nothing is left to serve,
# which is no failure. A node with a COMMAND of its own still needs the other one.
other_done() { (($# == 0)) && [ "${WIREUP_VM_BOOT:-1}" -gt 1 ] && { [ -f "$D/finished.$P" ] || [ -f "$D/exited.$P" ]; }; }
if other_done "$@"; then say "node $P finished while this node was down: nothing left to serve"; exit 0; fi
t0=$(date +%s)
until [ -f "$D/ready.$P" ]; do
  if [ -f "$D/exited.$P" ]; then say "FAILED: node $P's VM exited before it was ready"; exit 120; fi
  if (($(date +%s) - t0 > WAIT_S)); then say "FAILED: node $P not ready after ${WAIT_S}s"; exit 120; fi
  sleep 0.2
done
t1=$(date +%s)
until timeout 2 bash -c "exec 3<>/dev/tcp/$PEER/22" 2>/dev/null; do
  if other_done "$@"; then say "node $P finished while this node was down: nothing left to serve"; exit 0; fi
  if (($(date +%s) - t1 > 30)); then say "FAILED: node $P's sshd at $PEER:22 unreachable over the link for 30s"; exit 120; fi
  sleep 0.3
done

export WIREUP_VM_PEER_ADDR=$PEER WIREUP_VM_NODE_ADDRS="10.0.1.1 10.0.1.2" WIREUP_VM_PAIR_SSH=$HERE/pair-ssh.sh
export OMPI_MCA_plm_rsh_agent=$HERE/pair-ssh.sh
export OMPI_MCA_oob_tcp_if_include=10.0.1.0/24 OMPI_MCA_btl_tcp_if_include=10.0.1.0/24
# MPI itself over TCP on the link (ob1): UCX or openib must not take rxe0 from the tests.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
rc=0
if (($#)); then
  "$@"
  rc=$?
fi
echo "$rc" >"$D/finished.$N"

# --- stay up while the other node may still use this one ----------------------------------
until [ -f "$D/finished.$P" ] || [ -f "$D/exited.$P" ]; do sleep 0.3; done
exit "$rc"
