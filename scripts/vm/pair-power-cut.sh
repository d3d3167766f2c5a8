#!/usr/bin/env bash
# pair-power-cut.sh: inside a node of the pair, cuts this node's power at once: the kernel
# resets without closing anything (no CM DREQ, no TCP FIN: what peers see of a node that lost
# power), qemu exits (-no-reboot) and scripts/vm/pair.sh boots the node again with the same MAC,
# hence the same RoCE GID, and fresh QPNs. Run on the other node through ssh, e.g.
#   "$WIREUP_VM_PAIR_SSH" 10.0.1.2 /path/to/scripts/vm/pair-power-cut.sh
set -euo pipefail
D=${WIREUP_VM_PAIR_DIR:?pair-power-cut: WIREUP_VM_PAIR_DIR is not set (run inside scripts/vm/pair.sh)}
N=${WIREUP_VM_NODE:?pair-power-cut: WIREUP_VM_NODE is not set}
date +%s.%N >"$D/reboot.$N"
sync
echo b >/proc/sysrq-trigger
sleep 30
echo "pair-power-cut: node $N is still running after sysrq b" >&2
exit 1
