#!/usr/bin/env bash
# In-VM half of bench/scripts/compare-cmtime.sh (run it through that script, not by hand):
#   compare-cmtime-vm.sh A2A_BINARY TUNING.toml OUT_DIR CW:QW N...
# For each N, in this order on rxe0: rdma-core's cmtime (N connections, client and server in
# this VM), ucmatose (N connections, one message each way), and wireup_a2a with 2 ranks x N
# lanes twice: with the tuning file's windows, then with engine.connect_window = CW and
# engine.qp_create_window = QW (environment overrides). Writes OUT_DIR/results.tsv (N, tool,
# connections/s, seconds, what the seconds cover) and keeps every tool's raw output in OUT_DIR.
set -uo pipefail
A2A=$1 TUNING=$2 OUT=$3 WIN=$4
shift 4
CW=${WIN%%:*} QW=${WIN#*:}
ADDR=${WIREUP_VM_ADDR:-10.0.0.1}
mkdir -p "$OUT"
RES=$OUT/results.tsv
printf 'n\ttool\tconn_per_s\tseconds\tcovers\n' >"$RES"

# bash's own clock: a `date` per line costs ~0.1 s of fork+exec under TCG and would be measured.
now() { printf '%s' "$EPOCHREALTIME"; }
# Waits until COMM listens on the RDMA CM (the kernel's view), so a client never meets
# "nothing listening" (REJECTED 8) while the server is still starting under TCG.
wait_listener() {
  local comm=$1 i
  for ((i = 0; i < 300; i++)); do
    rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN.*comm $comm" && return 0
    sleep 0.1
  done
  echo "compare: $comm never listened" >&2
  return 1
}
stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

for n in "$@"; do
  # --- cmtime: the setup steps' totals (create id .. connect), as cmtime measures them ------
  cmtime -b "$ADDR" -c "$n" >"$OUT/cmtime-server-$n.txt" 2>&1 &
  srv=$!
  if wait_listener cmtime; then
    cmtime -s "$ADDR" -b "$ADDR" -c "$n" >"$OUT/cmtime-$n.txt" 2>&1
    awk -v n="$n" '
      /^(create id|bind addr|resolve addr|resolve route|create qp|connect) *:/ {
        split($0, f, ":"); split(f[2], v, " "); ms += v[1]
      }
      END { if (ms > 0) printf "%d\tcmtime\t%.1f\t%.3f\tcreate id + bind + resolve addr + resolve route + create qp + connect\n", n, n * 1000 / ms, ms / 1000 }
    ' "$OUT/cmtime-$n.txt" >>"$RES"
  fi
  stop "$srv"

  # --- ucmatose: "connecting" to "receiving data transfers" on the client --------------------
  ucmatose -b "$ADDR" -c "$n" -C 1 >"$OUT/ucmatose-server-$n.txt" 2>&1 &
  srv=$!
  if wait_listener ucmatose; then
    # Line-buffered, so that each line is stamped when ucmatose prints it, not when it exits.
    stdbuf -oL ucmatose -s "$ADDR" -c "$n" -C 1 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$(now)" "$line"; done \
      >"$OUT/ucmatose-$n.txt"
    awk -v n="$n" '
      /cmatose: connecting/ { t0 = $1 }
      /receiving data transfers/ && !t1 { t1 = $1 }
      END { if (t0 && t1 > t0) printf "%d\tucmatose\t%.1f\t%.3f\tconnecting .. first data transfer (all N connected)\n", n, n / (t1 - t0), t1 - t0 }
    ' "$OUT/ucmatose-$n.txt" >>"$RES"
  fi
  stop "$srv"

  # --- wireup_a2a: 2 ranks x N lanes (application-owned QPs, ECE attempt, migration) --------
  # tool name, then mpirun's extra options (the window overrides of the second run)
  a2a() {
    local tool=$1
    shift
    mpirun --oversubscribe -np 2 "$@" "$A2A" --config "$TUNING" --lanes "$n" --json --no-progress \
      >"$OUT/$tool-$n.json" 2>"$OUT/$tool-$n.txt"
    jq -r --arg n "$n" --arg t "$tool" '"\($n)\t\($t)\t\(.conn_per_s)\t\(.wall_s)\tstart .. every connection established on both ranks (failed \(.failed), verified \(.verified); cpu \(.cpu_user_s) user + \(.cpu_sys_s) sys)"' \
      "$OUT/$tool-$n.json" >>"$RES" 2>/dev/null || echo "compare: $tool -c $n gave no summary" >&2
  }
  a2a wireup_a2a
  a2a wireup_a2a_wide -x "WIREUP_ENGINE_CONNECT_WINDOW=$CW" -x "WIREUP_ENGINE_QP_CREATE_WINDOW=$QW"
done
cat "$RES"
