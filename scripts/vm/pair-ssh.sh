#!/usr/bin/env bash
# pair-ssh.sh HOST COMMAND...: ssh from one node of the pair to the other (inside the guests
# only), with the pair's own key and no host-key bookkeeping (the host keys are made at boot).
# Keepalives: a session to a node that lost power ends after ~20 s (a 10 s partition does not end it).
# Open MPI's rsh agent in the pair (OMPI_MCA_plm_rsh_agent), or by hand:
#   "$WIREUP_VM_PAIR_SSH" "$WIREUP_VM_PEER_ADDR" hostname
set -euo pipefail
D=${WIREUP_VM_PAIR_DIR:?pair-ssh: WIREUP_VM_PAIR_DIR is not set (run inside scripts/vm/pair.sh)}
exec ssh -F /dev/null -i "$D/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no \
  -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=20 \
  -o ServerAliveInterval=5 -o ServerAliveCountMax=4 "$@"
