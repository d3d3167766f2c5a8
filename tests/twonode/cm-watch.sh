#!/usr/bin/env bash
# cm-watch.sh SECONDS [DEV]: samples the IB CM's REQ counters of DEV (default rxe0) port 1
# every 10 ms for SECONDS and prints one line per change: "T req_sent req_retries rej_rx rep_rx"
# (T: seconds since the epoch). The intervals between retries of a REQ that gets no answer are
# the per-attempt CM timeout as the real kernel applies it.
set -uo pipefail
secs=$1 dev=${2:-rxe0}
base=/sys/class/infiniband_cm/$dev/1
[ -r "$base/cm_tx_msgs/req" ] || base=/sys/class/infiniband/$dev/ports/1
[ -r "$base/cm_tx_msgs/req" ] || { echo "cm-watch: no CM counters for $dev" >&2; exit 1; }
end=$(($(date +%s) + secs)) last=""
while (($(date +%s) < end)); do
  read -r a <"$base/cm_tx_msgs/req"
  read -r b <"$base/cm_tx_retries/req"
  read -r c <"$base/cm_rx_msgs/rej"
  read -r d <"$base/cm_rx_msgs/rep"
  now="$a $b $c $d"
  if [ "$now" != "$last" ]; then echo "$(date +%s.%N) $now"; last=$now; fi
  sleep 0.01
done
