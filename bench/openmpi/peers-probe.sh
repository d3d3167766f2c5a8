#!/usr/bin/env bash
# peers-probe.sh OUTDIR
#
# Runs INSIDE the soft-RoCE VM (scripts/vm/README.md) and tries, one after the other, the
# Open MPI / UCX configurations that could carry a 2-rank MPI program over rxe0 (or over TCP
# as a measurable peer): NetPIPE (NPopenmpi, 2 ranks, one VM) with ob1 and with the UCX PML,
# plus two UCT-level ucx_perftest pairs. Each try has its own timeout; the script prints ONE
# line per configuration:
#
#   RAN  | name | settings | lat8=...us bw=...Mbps@N lanes=... rxe_pkts=+N | time
#   FAIL | name | settings | exit N: <first fatal line of the output>  rxe_pkts=+N | time
#   SKIP | name | settings | why
#
# lanes = the UCP lanes UCX chose for the peer endpoint (UCX_LOG_LEVEL=info "ep_cfg" line),
# rxe_pkts = rxe0's rcvd_pkts counter delta over the try (from `rdma statistic`).
# Full output of each try: OUTDIR/<name>.log, NetPIPE data: OUTDIR/<name>.np.
#
#   cd /work/main/build && ../scripts/vm/run.sh --timeout 900 --share "$PWD" -- \
#       /work/main/bench/openmpi/peers-probe.sh "$PWD/peers-probe"
#
# Environment: PROBE_TIMEOUT (default 90 s, per try), PROBE_BUDGET (default 840 s: a try that
# would end later is skipped, so the whole probe fits in run.sh --timeout 900), NP_UPPER
# (NetPIPE -u, default 65536), PROBE_ONLY (space-separated try names to run, default all).
# Needs: openmpi-bin, netpipe-openmpi (NPopenmpi), rdma-core/iproute2 (rdma), ucx-utils
# (ucx_info, ucx_perftest: optional, its parts are skipped without it).
set -u

OUT=${1:?usage: peers-probe.sh OUTDIR (writable in the guest, e.g. under the --share dir)}
if ! { mkdir -p "$OUT" && touch "$OUT/.w" && rm -f "$OUT/.w"; }; then
  echo "peers-probe: $OUT not writable" >&2; exit 2
fi
cd "$OUT" || exit 2
TRY_T=${PROBE_TIMEOUT:-90}
BUDGET=${PROBE_BUDGET:-840}
UPPER=${NP_UPPER:-65536}
ONLY=${PROBE_ONLY:-}
T0=$(date +%s)

for b in mpirun NPopenmpi rdma; do
  command -v $b >/dev/null || { echo "peers-probe: $b missing (openmpi-bin / netpipe-openmpi / iproute2)" >&2; exit 2; }
done
if [ ! -e /sys/class/infiniband/rxe0 ]; then
  echo "peers-probe: no rxe0 here: run it inside scripts/vm/run.sh" >&2; exit 2
fi
HAVE_UCX_UTILS=1
command -v ucx_info >/dev/null && command -v ucx_perftest >/dev/null || HAVE_UCX_UTILS=0

rxe_rcvd() { rdma statistic show link rxe0/1 2>/dev/null | tr ' ' '\n' | awk 'p{print; exit} $0=="rcvd_pkts"{p=1}'; }

# first line that says why a try failed, most specific first
fatal_line() { # LOG
  local re
  for re in 'Fatal:' 'UCX  ERROR' 'cannot be selected' 'support level is none' \
            'Error:|error:|ERROR' 'abort|Abort|ABORT'; do
    grep -m1 -E "$re" "$1" && return
  done
  return 1
}

# the UCP lanes of the endpoint to the peer rank (ep_cfg lines without the self transport)
lanes() { # LOG
  grep -E 'ep_cfg\[[0-9]+\]:' "$1" | grep -v 'self/' | head -1 | sed -E 's/.*ep_cfg\[[0-9]+\]: *//; s/ /,/g'
}

line() { printf '%-4s | %-18s | %s | %s | %ss\n' "$@"; }

# try NAME TIMEOUT KIND SETTINGS CMD...   KIND: np (CMD is an mpirun line: the NetPIPE command
# is appended) or perftest (CMD is the ucx_perftest pair below)
try() {
  local name=$1 t=$2 kind=$3 settings=$4; shift 4
  if [ -n "$ONLY" ] && ! [[ " $ONLY " == *" $name "* ]]; then return; fi
  local now
  now=$(date +%s)
  if (( now - T0 + t > BUDGET )); then
    line SKIP "$name" "$settings" "budget: ${BUDGET}s total would be exceeded (elapsed $((now - T0))s, try timeout ${t}s)" 0
    return
  fi
  local log=$name.log r0 r1 rc s e
  rm -f "$log" "$name.np"
  r0=$(rxe_rcvd)
  s=$(date +%s%N)
  { echo "# $settings"; echo "# $*"; } > "$log"
  if [ "$kind" = np ]; then
    timeout -k 5 "$t" "$@" "${NP[@]}" -o "$name.np" >> "$log" 2>&1 </dev/null
  else
    timeout -k 5 "$t" "$@" >> "$log" 2>&1 </dev/null
  fi
  rc=$?
  e=$((($(date +%s%N) - s) / 1000000)); e=$(printf '%d.%01d' $((e / 1000)) $((e % 1000 / 100)))
  r1=$(rxe_rcvd)
  local pk="rxe_pkts=+$((${r1:-0} - ${r0:-0}))"
  if [ "$kind" = np ]; then
    # NetPIPE: " 5:       8 bytes   1161 times -->      0.26 Mbps in     231.92 usec"
    local l8 lmax
    l8=$(awk '$3=="bytes" && $2==8 && $8=="Mbps" {print $10; exit}' "$log")
    lmax=$(awk -v u="$UPPER" '$3=="bytes" && $2==u && $8=="Mbps" {print $7; exit}' "$log")
    if [ $rc = 0 ] && [ -n "$lmax" ]; then
      line RAN "$name" "$settings" "lat8=${l8:-?}us bw=${lmax}Mbps@${UPPER}B lanes=$(lanes "$log") $pk" "$e"
      return
    fi
  elif [ $rc = 0 ]; then
    # ucx_perftest: "Final: iters typical avg overall ..." (latency in usec)
    local f
    f=$(grep -m1 '^Final:' "$log" | awk '{print "typical="$3"us avg="$4"us"}')
    line RAN "$name" "$settings" "${f:-no Final line} $pk" "$e"
    return
  fi
  local why warn
  why=$(fatal_line "$log" | sed -E 's/^\[[0-9.]+\] +//; s/ +/ /g')
  warn=$(grep -m1 'UCX  WARN' "$log" | sed -E 's/.*UCX  WARN +//')
  [ -n "$warn" ] && why="$why (UCX WARN: $warn)"
  if [ $rc = 124 ] || [ $rc = 137 ]; then why="killed by timeout ${t}s${why:+; first error: $why}"; fi
  [ -z "$why" ] && why="no error line; last: $(grep -v '^#' "$log" | tail -1)"
  [ $rc = 0 ] && why="exit 0 but no NetPIPE line for ${UPPER} bytes; $why"
  line FAIL "$name" "$settings" "exit $rc: $why $pk" "$e"
}

echo "peers-probe: $(mpirun --version 2>&1 | head -1); UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' || echo '?'); NetPIPE -u $UPPER -p 0; try timeout ${TRY_T}s; budget ${BUDGET}s; out $OUT"
if ((HAVE_UCX_UTILS)); then
  ucx_info -d > ucx_info-d.txt 2>&1
  echo "peers-probe: ucx_info -d: $(awk '/Transport:/{t=$3} /Device:/{printf "%s/%s ", t, $3}' ucx_info-d.txt)"
else
  echo "peers-probe: ucx_info/ucx_perftest missing: they are in Debian package ucx-utils (apt-get install ucx-utils); UCT tries skipped"
fi
echo "peers-probe: rxe0 GIDs: $(for i in 0 1; do printf '[%s] %s %s  ' $i "$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i)" "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)"; done)"

M=(mpirun --oversubscribe -np 2)
U=(--mca pml ucx -x UCX_LOG_LEVEL=info)          # UCX PML; info prints the lanes (ep_cfg)
NP=(NPopenmpi -p 0 -u "$UPPER")
nodgid=UCX_UD_VERBS_ETH_DGID_CHECK=n

# --- quick failures: UCX PML not selectable / nothing to wire up rc_verbs with --------------
try ucx-tcp-default "$TRY_T" np "pml ucx; UCX_TLS=tcp,self (pml_ucx_tls/devices default)" \
  "${M[@]}" "${U[@]}" --mca pml_ucx_verbose 2 -x UCX_TLS=tcp,self
try ucx-rc_x "$TRY_T" np "pml ucx; UCX_TLS=rc_x,self" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_x,self
try ucx-rc_verbs-noaux "$TRY_T" np "pml ucx; UCX_TLS=rc_verbs,self (no ud_verbs aux)" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_verbs,self
try ucx-rc_verbs-tcp "$TRY_T" np "pml ucx; UCX_TLS=rc_verbs,tcp,self (tcp as aux?)" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_verbs,tcp,self

# --- the peers that should run -----------------------------------------------------------------
try ob1-tcp "$TRY_T" np "pml ob1; btl self,tcp; btl_tcp_if_include dummy0" \
  "${M[@]}" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include dummy0
try ucx-tcp-any "$TRY_T" np "pml ucx; pml_ucx_tls any; pml_ucx_devices any; UCX_TLS=tcp,self UCX_NET_DEVICES=dummy0" \
  "${M[@]}" "${U[@]}" --mca pml_ucx_tls any --mca pml_ucx_devices any \
     -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=dummy0
try ucx-rc_v-nodgid "$TRY_T" np "pml ucx; UCX_TLS=rc_v,self $nodgid" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,self -x $nodgid
try ucx-rc_v-gid0 "$TRY_T" np "pml ucx; UCX_TLS=rc_v,self UCX_IB_GID_INDEX=0 (RoCEv2/IPv6 link-local GID)" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,self -x UCX_IB_GID_INDEX=0
try ucx-ud_v-nodgid "$TRY_T" np "pml ucx; UCX_TLS=ud_v,self $nodgid" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=ud_v,self -x $nodgid

# --- UCT level, no MPI: rc_verbs connects ep-to-ep (no UD); ud_verbs alone ----------------------
if ((HAVE_UCX_UTILS)); then
  # bash -c PT _ TL [ENV...]: server in the background, client to 10.0.0.1 (the OOB socket
  # only); each side bounded by its own timeout so that no server outlives its try
  # shellcheck disable=SC2016  # expanded by the inner bash
  PT='tl=$1; shift
    env "$@" timeout 50 ucx_perftest -t am_lat -x "$tl" -d rxe0:1 -n 2000 -w 100 -s 8 &
    sleep 2
    env "$@" timeout 45 ucx_perftest 10.0.0.1 -t am_lat -x "$tl" -d rxe0:1 -n 2000 -w 100 -s 8
    rc=$?; wait; exit $rc'
  try uct-rc_verbs 60 perftest "ucx_perftest am_lat -x rc_verbs -d rxe0:1 -s 8 (UCT, no MPI)" \
    bash -c "$PT" _ rc_verbs
  try uct-ud_verbs 60 perftest "ucx_perftest am_lat -x ud_verbs -d rxe0:1 -s 8 (UCT, no MPI)" \
    bash -c "$PT" _ ud_verbs
  try uct-ud_verbs-nodgid 60 perftest "ucx_perftest am_lat -x ud_verbs -d rxe0:1 -s 8 $nodgid" \
    bash -c "$PT" _ ud_verbs $nodgid
else
  line SKIP uct-rc_verbs "ucx_perftest" "ucx-utils not installed" 0
fi

# --- rxe with UCX's default UD wireup: the known failures and the knobs that do not help --------
try ucx-rc_v "$TRY_T" np "pml ucx; UCX_TLS=rc_v,self" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,self
try ucx-rc_v-tcp "$TRY_T" np "pml ucx; UCX_TLS=rc_v,tcp,self" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,tcp,self
try ucx-rc_v-knobs "$TRY_T" np "pml ucx; UCX_TLS=rc_v,self UCX_NET_DEVICES=rxe0:1 UCX_IB_GID_INDEX=1 UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_RC_VERBS_TIMEOUT=10s UCX_RC_VERBS_RNR_TIMEOUT=10ms UCX_RC_VERBS_RNR_RETRY_COUNT=7" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,self -x UCX_NET_DEVICES=rxe0:1 \
     -x UCX_IB_GID_INDEX=1 -x UCX_SOCKADDR_TLS_PRIORITY=rdmacm -x UCX_RC_VERBS_TIMEOUT=10s \
     -x UCX_RC_VERBS_RNR_TIMEOUT=10ms -x UCX_RC_VERBS_RNR_RETRY_COUNT=7
try ucx-rc_v-sm "$TRY_T" np "pml ucx; UCX_TLS=rc_v,sm,self" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,sm,self
try ucx-rc_v-udtimeout 60 np "pml ucx; UCX_TLS=rc_v,self UCX_UD_VERBS_TIMEOUT=300s (try timeout 60s)" \
  "${M[@]}" "${U[@]}" -x UCX_TLS=rc_v,self -x UCX_UD_VERBS_TIMEOUT=300s

echo "peers-probe: done in $(($(date +%s) - T0))s; logs in $OUT"
