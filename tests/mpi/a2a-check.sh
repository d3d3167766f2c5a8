#!/usr/bin/env bash
# One mpirun job of wireup_a2a on the real RDMA stack (the soft-RoCE VM), checked from its --json.
#
#   a2a-check.sh --a2a BIN --np N --lanes L [--scenario all|ece|kill] [--timeout S]
#                [--host H1:SLOTS,H2:SLOTS] [--set KEY=VALUE]... [--bootstrap pmix|mpi]
#                [--mode bulk|on-demand] [--pattern all|ring:K|random:K] [--srun NODES]
# --host: mpirun's --host (ranks by slot: the first SLOTS ranks on H1...), e.g. the two-node
# pair's "10.0.1.1:2,10.0.1.2:2"; --set: passed to every rank (wireup_a2a --set);
# --bootstrap: wireup_a2a --bootstrap, and the summary must say that one ran (default: mpi).
# --srun NODES: launch with Slurm instead (srun --mpi=pmix -N NODES, N/NODES ranks per node, in
# node order; SLURM_CONF as the caller has it; needs --bootstrap pmix); --node-clocks "0 X...":
# each srun node's clock minus the first's (s), so that the kill scenario compares a notice on
# one node with the victim's exit on another;
# --mode/--pattern: wireup_a2a's; the summary must say that mode ran. On demand the planned
# pairs are the pattern's: every one connected exactly once per lane, no other pair, each asked
# lane's ask-to-ready measured, and (random:K) crossing pairs > 0 (printed with those that
# crossed on the wire).
#
# Scenarios (the "odd" rank is the last one, N-1):
#   all   every planned connection is established, its QPNs cross-check, a SEND goes both ways,
#         and an RDMA WRITE and an RDMA READ go each way (data verified)
#   ece   the odd rank reads ece-required.toml (ECE required, an option bit nobody has): every one
#         of its connections is refused (reason 35 / ece_rejected), every other one stands
#   kill  the odd rank _exit()s mid-wireup: every survivor reports it for each lane it did not
#         connect (or lost), and keeps and verifies every other connection; with pmix, every
#         survivor also gives the dead rank's pending lanes up within 2 s of its death (printed)
# Exit 0 when every expectation holds; otherwise each failed one is printed, with the summary.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

A2A="" NP="" LANES="" SCENARIO=all TIMEOUT=600 HOSTS="" SETS=() BOOTSTRAP=mpi MODE="" PATTERN="" SRUN_NODES="" NODE_CLOCKS=""

while (($#)); do
  case "$1" in
    --a2a) A2A=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --lanes) LANES=$2; shift 2 ;;
    --scenario) SCENARIO=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --host) HOSTS=$2; shift 2 ;;
    --set) SETS+=(--set "$2"); shift 2 ;;
    --bootstrap) BOOTSTRAP=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --pattern) PATTERN=$2; shift 2 ;;
    --srun) SRUN_NODES=$2; shift 2 ;;
    --node-clocks) NODE_CLOCKS=$2; shift 2 ;;
    *) echo "a2a-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$A2A" ] || { echo "a2a-check: --a2a '$A2A' is not an executable" >&2; exit 2; }
[[ "$NP" =~ ^[0-9]+$ && "$LANES" =~ ^[0-9]+$ ]] || { echo "a2a-check: --np and --lanes want numbers" >&2; exit 2; }
LAUNCHER=mpirun
[ -z "$SRUN_NODES" ] || LAUNCHER=srun
for t in $LAUNCHER jq timeout; do command -v $t >/dev/null || { echo "a2a-check: '$t' not found" >&2; exit 2; }; done

ODD=$((NP - 1))
[[ $BOOTSTRAP == mpi || $BOOTSTRAP == pmix ]] || { echo "a2a-check: --bootstrap wants mpi or pmix" >&2; exit 2; }
[[ -z $MODE || $MODE == bulk || $MODE == on-demand ]] || { echo "a2a-check: --mode wants bulk or on-demand" >&2; exit 2; }
[[ -z $PATTERN || $MODE == on-demand ]] || { echo "a2a-check: --pattern needs --mode on-demand" >&2; exit 2; }
[[ $SCENARIO == ece && $MODE == on-demand ]] && { echo "a2a-check: the ece scenario is bulk only" >&2; exit 2; }
if [ -n "$SRUN_NODES" ]; then
  [[ $SRUN_NODES =~ ^[1-9][0-9]*$ ]] && ((NP % SRUN_NODES == 0)) ||
    { echo "a2a-check: --srun wants a node count that divides --np" >&2; exit 2; }
  [[ $BOOTSTRAP == pmix && -z $HOSTS && $SCENARIO != ece ]] ||
    { echo "a2a-check: --srun takes --bootstrap pmix, no --host, no ece scenario" >&2; exit 2; }
fi
COMMON=(--config "$HERE/vm.toml" --lanes "$LANES" --json --no-progress --bootstrap "$BOOTSTRAP" "${SETS[@]}")
[ -z "$MODE" ] || COMMON+=(--mode "$MODE")
[ -z "$PATTERN" ] || COMMON+=(--pattern "$PATTERN")
OD=0
[[ $MODE == on-demand ]] && OD=1
MPI=(mpirun --oversubscribe)
[ -z "$HOSTS" ] || MPI+=(--host "$HOSTS")
# Under srun the ranks are numbered node by node (block), as mpirun's --host slots; the job
# survives a task's death only with --kill-on-bad-exit=0 (the kill scenario).
SRUN=(srun --mpi=pmix -N "$SRUN_NODES" --ntasks-per-node "$((NP / ${SRUN_NODES:-1}))" --distribution block
      --kill-on-bad-exit=0)
case "$SCENARIO" in
  all) JOB=("${MPI[@]}" -np "$NP" "$A2A" "${COMMON[@]}")
       [ -z "$SRUN_NODES" ] || JOB=("${SRUN[@]}" "$A2A" "${COMMON[@]}") ;;
  # A refused pair is settled on both sides at once: reason 35 both ways, or the active side's
  # abandon notice. No wireup timeout of its own: the configured one (600 s) would only show as
  # a hang, and the expectations below want every pair settled within seconds and none timed out.
  ece) JOB=("${MPI[@]}" -np "$ODD" "$A2A" "${COMMON[@]}"
            : -np 1 "$A2A" "${COMMON[@]}" --config "$HERE/ece-required.toml") ;;
  # --enable-recovery: mpirun must not take the whole job down when the victim exits. The
  # victim dies 250 ms after start or once its first connection is up, whichever comes first
  # (np 4 wires up in ~0.5 s here); survivors give up on it after 30 s. This bound stays: a dead
  # rank sends nothing, so a survivor that waits for its REQ learns only at its own deadline.
  # With pmix the victim dies at its first progress after start instead: then every survivor
  # surely has lanes to it pending (with the trigger above it sometimes had all its lanes up
  # before dying, and the survivors, done, had nothing left to give up).
  kill) WHEN=(--kill-after-conns 1 --kill-after-ms 250)
        [[ $BOOTSTRAP == pmix ]] && WHEN=(--kill-after-ms 0)
        JOB=("${MPI[@]}" --enable-recovery -np "$NP" "$A2A" "${COMMON[@]}" --kill-rank "$ODD" "${WHEN[@]}"
             --wireup-timeout-ms 30000)
        [ -z "$SRUN_NODES" ] || JOB=("${SRUN[@]}" "$A2A" "${COMMON[@]}" --kill-rank "$ODD" "${WHEN[@]}"
                                     --wireup-timeout-ms 30000) ;;
  *) echo "a2a-check: unknown scenario '$SCENARIO'" >&2; exit 2 ;;
esac

OUT=$(mktemp) ERR=$(mktemp)
trap 'rm -f "$OUT" "$ERR"' EXIT
echo "a2a-check: ${JOB[*]}"
t0=$(date +%s.%N)
set +e
timeout --kill-after=10 "$TIMEOUT" "${JOB[@]}" >"$OUT" 2>"$ERR"
rc=$?
set -e
# A2A_CHECK_KEEP=PREFIX: the job's stdout (the JSON summary) and stderr kept as PREFIX.json/.err.
if [ -n "${A2A_CHECK_KEEP:-}" ]; then cp "$OUT" "$A2A_CHECK_KEEP.json"; cp "$ERR" "$A2A_CHECK_KEEP.err"; fi
echo "a2a-check: $LAUNCHER exited $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
# The human summary (stderr), without the engines' per-lane warnings of the fault scenarios.
grep -v '^wireup WARN' "$ERR" | grep -v 'PMIX ERROR: BAD-PARAM' | tail -n 40 || true
# The PMIx bootstrap's one line when the launcher has no direct modex (or it was refused).
grep -m 1 '\[a2a\] no direct modex' "$ERR" | sed 's/^/a2a-check: /' || true
# Gets the launcher's PMIx server answered NOT-FOUND before it found the key (pmix_session.cc).
nf=$(grep -c 'answered NOT-FOUND' "$ERR" || true)
((nf == 0)) || echo "a2a-check: $nf PMIx_Get(s) answered NOT-FOUND before finding the key; worst:" \
  "$(sed -n 's/.*NOT-FOUND \([0-9]*\) time.*/\1/p' "$ERR" | sort -n | tail -n 1) retries"
# Exactly one JSON object: jq -e on an empty file answers 0 (jq 1.6), which would let every
# expectation below pass on a job that printed nothing.
if ! [ -s "$OUT" ] || ! jq -e -s 'length == 1 and (.[0] | type == "object")' "$OUT" >/dev/null 2>&1; then
  echo "a2a-check: FAILED: no JSON summary on stdout; stdout was:"; cat "$OUT"
  # What the ranks saw of a killed rank before the job ended anyway.
  grep -E '_exit\(\) mid-wireup|died \(' "$ERR" | sed 's/^/a2a-check: (no summary) /' || true
  exit 1
fi
jq -c '{ranks, lanes, connections, failed, lost, wall_s, conn_per_s, retries, rejects_received, failures}' "$OUT"

fails=0
expect() {  # expect JQ_EXPR MESSAGE: the expression must be true of the summary
  if ! jq -e --argjson np "$NP" --argjson lanes "$LANES" --argjson odd "$ODD" "$1" "$OUT" >/dev/null; then
    echo "a2a-check: FAILED: $2   [$1]"
    fails=$((fails + 1))
  fi
}
PAIRS=$((NP * (NP - 1) / 2))
if ((OD)); then
  expect ".ranks == $NP and .lanes == $LANES and .engine_mode == \"on_demand\" and .pattern.name == \"${PATTERN:-all}\"" \
    "the job has the shape asked for, on demand"
  expect '.planned == .pattern.pairs * $lanes and .pattern.pairs > 0' "the planned connections are the pattern's pairs"
  expect '.check.pattern_dup == 0 and .check.pattern_extra == 0' \
    "no lane connected twice on a rank, no connection between ranks neither of which asked"
  jq -r '"a2a-check: on demand, pattern \(.pattern.name): \(.pattern.pairs) pairs asked in the job, \(.lanes_asked) lanes asked by the ranks, \(.connections) connections, \(.pattern.crossing_pairs) crossing pairs (\(.crossed_won) requests refused by the kept side, \(.crossed_yielded) withdrawn); ask-to-ready p50 \(.ask_to_ready_us.p50 / 100 | round / 10) ms, p99 \(.ask_to_ready_us.p99 / 100 | round / 10) ms over \(.ask_to_ready_us.n) lanes"' "$OUT"
  if [[ ${PATTERN:-all} == random:* ]]; then
    expect '.pattern.crossing_pairs > 0' \
      "the random pattern has crossing pairs (none drawn with this seed: pick another --seed)"
  fi
else
  expect ".ranks == $NP and .lanes == $LANES and .planned == $((PAIRS * LANES))" "the job has the shape asked for"
  [ -z "$MODE" ] || expect '.engine_mode == "bulk"' "the summary says bulk mode ran"
fi
expect '.provider == "rdma" and (.device | length) > 0' "the rdma provider ran on a device"
expect ".bootstrap == \"$BOOTSTRAP\"" "the $BOOTSTRAP bootstrap ran"
expect '.check.ran and .check.qpn_bad == 0 and .check.half_open == 0 and .check.data_bad == 0 and .check.errors == 0' \
  "no QPN mismatch, no half-open connection, no bad SEND/RECV, no error"
expect '.verified' "every established connection between live ranks passed the QPN cross-check and the SEND both ways"
expect '.check.qpn_ok == .connections and .check.send_ok == 2 * .connections and .check.recv_ok == 2 * .connections' \
  "checks cover every connection, both ways"
# RDMA WRITE and READ both ways on every connection: each side's QP must take the peer's
# one-sided requests (remote write/read access on both the initiating and the accepting QP).
jq -r '"a2a-check: one-sided: RDMA WRITE \(.one_sided.write_ok)/\(2 * .connections) completed, \(.one_sided.write_landed) landed; RDMA READ \(.one_sided.read_ok)/\(2 * .connections); bad \(.one_sided.bad) \(.one_sided.bad_by_pair)"' "$OUT"
expect '.one_sided.ran' "the one-sided check ran (RDMA WRITE and READ both ways)"
expect '.one_sided.bad == 0 and .one_sided.write_ok == 2 * .connections and .one_sided.write_landed == 2 * .connections and .one_sided.read_ok == 2 * .connections' \
  "an RDMA WRITE and an RDMA READ each way on every connection, data verified"
case "$SCENARIO" in
  all)
    [ "$rc" = 0 ] || { echo "a2a-check: FAILED: exit status $rc, expected 0"; fails=$((fails + 1)); }
    expect '.connections == .planned and .failed == 0' "every planned connection is established"
    ((OD)) && expect '.ask_to_ready_us.n == .lanes_asked' "every lane a rank asked for came READY, timed from its connect()"
    ;;
  ece)
    [ "$rc" = 3 ] || { echo "a2a-check: FAILED: exit status $rc, expected 3 (some connections failed)"; fails=$((fails + 1)); }
    expect '.failed == $odd * $lanes and .connections == .planned - $odd * $lanes' \
      "exactly the odd rank's connections failed"
    expect '(.rejects_received["35"] // 0) > 0' "the reject path shows: IB reject reason 35 was received"
    expect '[.failed_peers[] | select(.rank == $odd) | .reported_by] == [[range(0; $odd)]]' \
      "every other rank reports the odd rank"
    expect '[.failed_peers[] | select(.rank != $odd) | .reported_by == [$odd]] | all' \
      "nobody but the odd rank reports anyone else"
    # On rxe (no ECE at all) the odd rank cannot even offer ECE as the active side: it fails
    # locally (not_supported) and tells that peer (abandoned); as the passive side it refuses
    # with reason 35, which settles both sides. With ECE hardware every pair would see 35.
    expect '[.failed_peers[].kinds | keys[]] | all(. == "rejected(35)" or . == "ece_rejected" or . == "local_error(not_supported)" or . == "abandoned")' \
      "every failure is an ECE refusal or its consequence (none waited for a timeout)"
    # Every rank is done within seconds of the refusals (0.18-3.1 s in 21 runs on rxe, load 8-9).
    expect '.wall_s < 15' "every rank settled within seconds of the refusals"
    ;;
  kill)
    grep -q "rank $ODD: _exit() mid-wireup" "$ERR" ||
      { echo "a2a-check: FAILED: rank $ODD did not die mid-wireup"; fails=$((fails + 1)); }
    expect '.dead_ranks == [$odd]' "the summary names the killed rank"
    if ((OD)); then
      # Only the survivors that asked the victim have lanes pending to it; whatever it asked
      # of the others may or may not have left before it died (then lost or disconnected).
      expect '.pattern.asked_dead | length > 0' "some survivor asks the victim (else pick another --seed)"
      expect '.connections == (.pattern.pairs - .pattern.pairs_with_dead) * $lanes' \
        "every asked pair among the survivors stands"
      expect '.pattern.asked_dead - ([.failed_peers[] | select(.rank == $odd) | .reported_by[]]) == []' \
        "every survivor that asked the victim reports it"
    else
      expect '.connections == (($np - 1) * ($np - 2) / 2) * $lanes' "every connection among the survivors stands"
      expect '[.failed_peers[] | select(.rank == $odd) | .reported_by] == [[range(0; $odd)]]' \
        "every survivor reports the dead rank"
      expect '[.failed_peers[] | select(.rank == $odd) | .lanes] == [$odd * $lanes]' \
        "each survivor reports every lane of the dead rank: failed, or disconnected/lost after wireup"
    fi
    jq -r '.failed_peers[] | "a2a-check: rank \(.rank) reported by ranks \(.reported_by), lanes \(.lanes), as \(.kinds)"' "$OUT"
    expect '[.failed_peers[] | .rank] == [$odd]' "no survivor reports another survivor"
    if [[ $BOOTSTRAP == pmix ]]; then
      # Death -> given up: the victim's _exit() time against each survivor's "seen at" (same
      # node, CLOCK_REALTIME); the engine gives the lanes up in the same step.
      died=$(sed -n "s/.*rank $ODD: _exit() mid-wireup.* at \([0-9.]*\)$/\1/p" "$ERR" | head -n 1)
      seen=$(grep -c "rank $ODD died (.*), seen at" "$ERR" || true)
      # On demand the survivors that asked the victim watch it (they read its record).
      want=$ODD
      ((OD)) && want=$(jq '.pattern.asked_dead | length' "$OUT")
      # Under srun the survivors on other nodes hear of it only if Slurm's PMIx server raises
      # an event (22.05 did not: notes/slurm.md); those on the victim's node have its pidfd.
      # So every survivor's notice is printed, and only the victim's node's are required.
      if [ -n "$SRUN_NODES" ]; then
        echo "a2a-check: $seen of $ODD survivors got a notice of rank $ODD's death (PMIx event or pidfd)"
        want=$seen
        local_survivors=$((NP / SRUN_NODES - 1))
        ((OD)) || ((seen >= local_survivors)) || want=$local_survivors
      fi
      if [[ -z $died || $seen != "$want" ]]; then
        echo "a2a-check: FAILED: want the victim's exit time and $want survivors' death notices, got '${died}' and $seen"
        fails=$((fails + 1))
      else
        worst=$(sed -n "s/.*\] rank \([0-9]*\): rank $ODD died (\(.*\)), seen at \([0-9.]*\): gave up \([0-9]*\).*/\3 \4 \1 \2/p" "$ERR" |
          awk -v d="$died" -v clocks="$NODE_CLOCKS" -v per="$((NP / ${SRUN_NODES:-1}))" -v odd="$ODD" '
                            BEGIN { k = split(clocks, c, " "); for (i = 1; i <= k; i++) off[i - 1] = c[i]; d -= off[int(odd / per)] }
                            { $1 -= off[int($3 / per)]; s = $1 - d; n += $2; if (s > w) w = s; ev = $4; for (i = 5; i <= NF; i++) ev = ev " " $i
                              printf "a2a-check: survivor rank %d saw rank '"$ODD"' die after %.3f s (%s) and gave up %d pending lane(s)\n", $3, s, ev, $2 }
                            END { printf "a2a-check: death to given up: worst %.3f s, %d pending lanes given up in all\n", w, n; exit !(w < 2.0 && n > 0) }') &&
          echo "$worst" || { echo "$worst"; echo "a2a-check: FAILED: a survivor took 2 s or more to give the dead rank up, or nothing was pending"; fails=$((fails + 1)); }
      fi
    fi
    ;;
esac
if ((fails)); then
  echo "a2a-check: $fails expectation(s) failed; last lines of stderr:"
  tail -n 20 "$ERR"
  exit 1
fi
echo "a2a-check: ok ($SCENARIO, np $NP, lanes $LANES${MODE:+, $MODE}${PATTERN:+ $PATTERN})"
