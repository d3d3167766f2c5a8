#!/bin/bash
# run_path.sh VM_FAULTS NETEM-ARGS... -- VM_FAULTS-PATH-ARGS...
#
# Builds the veth path (path.sh up), puts netem on both ends, runs `vm_faults path` across it,
# prints what netem did, and takes the path down again whatever happened.
set -u
here=$(cd "$(dirname "$0")" && pwd)
vm_faults=$1
shift
netem=()
while (($#)) && [ "$1" != -- ]; do netem+=("$1"); shift; done
shift || true

t0=$(date +%s.%N)
took() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
"$here/path.sh" down  # a previous run that died half-way
"$here/path.sh" up || { echo "run_path.sh: cannot build the veth path" >&2; exit 2; }
echo "[faults] veth path with rxea/rxeb up after $(took)"
trap '"$here/path.sh" down; echo "[faults] path down after $(took)"' EXIT
"$here/path.sh" netem "${netem[@]}" || exit 2
echo "[faults] netem on va and vb: ${netem[*]}"
"$vm_faults" path --a 10.1.0.1 --b 10.1.0.2 "$@"
rc=$?
echo "[faults] vm_faults path exited $rc after $(took)"
for d in va vb; do echo "[faults] $d: $(tc -s qdisc show dev $d | tr -s ' \n' ' ')"; done
exit $rc
