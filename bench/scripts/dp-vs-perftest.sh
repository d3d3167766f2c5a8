#!/usr/bin/env bash
# The data path on wireup's QPs (bench/dp: dp_bench) against perftest's rdma_cm mode, in one
# boot of the soft-RoCE VM (run it inside: scripts/vm/run.sh -- bench/scripts/dp-vs-perftest.sh ...).
#
#   dp-vs-perftest.sh --dp-bench BIN [--rounds N] [--sizes 64,1024,4096,65536]
#                     [--bw-iters N] [--lat-iters N] [--config FILE] [--gross X] [--dev rxe0]
#                     [--addr 10.0.0.1] [--ack-timeout 17] [--idle spin|sleep]
#                     [--spy LIB] [--bind-to core|none] [--launcher none|mpirun]
#                     [--order fixed|alternate]
#
# Each round runs perftest (ib_write_bw -R per size, ib_write_lat -R, ib_read_lat -R: server
# and client in this guest over --addr) and then dp_bench (two ranks, see --launcher), so that
# whatever else takes the host's CPUs meanwhile falls on both alike. --order alternate runs
# dp_bench first in even rounds, so that a tool is not always the one that runs second (after
# the other's processes exit and the guest's page cache and rxe's pools are warm). Both run perftest's wire
# settings: the same sizes and iterations, TX depth 128 and CQ moderation 100 for write_bw,
# inline up to 220 B for write_lat, the path MTU the CM gives (printed for both), one READ in
# flight. Prints, per metric, the median over the rounds and the spread (min-max) of each side
# and the ratio wireup/perftest of the medians (bandwidth: higher is better; latency: lower).
# Exit 1 if a run failed or printed no number, or if a median ratio of a bandwidth or typical
# latency is grossly off (by more than --gross, default 3x: wrong settings or a broken QP, not
# noise; --gross off judges no ratio: one round on a loaded host can stall a ping-pong for a
# scheduler tick per step, 445x seen); a ratio beyond 5% is
# printed, never fatal (the TCG VM shares two host cores with everything else).
# --spy LIB (build/bench/libqp_attr_spy.so) is preloaded into perftest: each of its QPs prints
# what ibv_query_qp says of it at RTS, shown in round 1 beside dp_bench's own "dp_bench qp".
# --launcher none (the default) starts dp_bench's two ranks as two bare processes joined by one
# TCP connection (dp_bench --oob-listen / --oob-connect), as perftest's server and client run:
# no launcher daemon or MPI progress thread shares the guest's two vCPUs with the measured
# loops. --launcher mpirun runs them under mpirun; --bind-to goes to it: "none" by default, as
# perftest runs (a pinned rank cannot move off a vCPU the host has descheduled).
set -euo pipefail

# perftest -R leaves the ACK timeout to the CM (it sets only the TOS: perftest_communication.c).
# What the CM gave its QPs on rxe under Debian 12's kernel, read with --spy (ibv_query_qp inside
# perftest, notes/data-path-perf.md): timeout 19 on both sides. With --spy the script takes the
# value perftest's first QP reports, unless --ack-timeout says otherwise; dp_bench's QPs get the
# same (qp.timeout), printed per rank.
ACK_TIMEOUT=19 ACK_TIMEOUT_GIVEN=0
SPY="" BIND=none LAUNCHER=none ORDER=fixed
IDLE=spin  # dp_bench --idle: its waiting rank spins as perftest's does, or sleeps
DP="" ROUNDS=4 SIZES=64,1024,4096,65536 BW_ITERS=5000 LAT_ITERS=1000 CONFIG="" GROSS=3 DEV=rxe0 ADDR=10.0.0.1
while (($#)); do
  case "$1" in
    --dp-bench) DP=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --bw-iters) BW_ITERS=$2; shift 2 ;;
    --lat-iters) LAT_ITERS=$2; shift 2 ;;
    --config) CONFIG=$2; shift 2 ;;
    --gross) GROSS=$2; shift 2 ;;
    --dev) DEV=$2; shift 2 ;;
    --addr) ADDR=$2; shift 2 ;;
    --ack-timeout) ACK_TIMEOUT=$2; ACK_TIMEOUT_GIVEN=1; shift 2 ;;
    --idle) IDLE=$2; shift 2 ;;
    --spy) SPY=$2; shift 2 ;;
    --bind-to) BIND=$2; shift 2 ;;
    --launcher) LAUNCHER=$2; shift 2 ;;
    --order) ORDER=$2; shift 2 ;;
    *) echo "dp-vs-perftest: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$DP" ] || { echo "dp-vs-perftest: --dp-bench '$DP' is not an executable" >&2; exit 2; }
for t in ib_write_bw ib_write_lat ib_read_lat mpirun awk timeout; do
  command -v $t >/dev/null || { echo "dp-vs-perftest: '$t' not found (Debian: perftest, openmpi-bin)" >&2; exit 2; }
done
[ -z "$SPY" ] || [ -r "$SPY" ] || { echo "dp-vs-perftest: --spy '$SPY' is not a readable library" >&2; exit 2; }
[[ $LAUNCHER == mpirun || $LAUNCHER == none ]] || { echo "dp-vs-perftest: --launcher wants mpirun or none, not '$LAUNCHER'" >&2; exit 2; }
[[ $ORDER == fixed || $ORDER == alternate ]] || { echo "dp-vs-perftest: --order wants fixed or alternate, not '$ORDER'" >&2; exit 2; }
[[ $BIND == core || $BIND == none ]] || { echo "dp-vs-perftest: --bind-to wants core or none, not '$BIND'" >&2; exit 2; }
[[ $GROSS == off || $GROSS =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "dp-vs-perftest: --gross wants a factor or off, not '$GROSS'" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "dp-vs-perftest: --rounds wants a positive number" >&2; exit 2; }
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
LAT_SIZE=2  # perftest's DEF_SIZE_LAT
LAT_INLINE=220  # perftest's DEF_INLINE_WRITE, until its write_lat says what it got

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RESULTS=$WORK/results  # lines: "<side> <metric> <value>"
: >"$RESULTS"
: >"$RESULTS.hw"
PORT=18515

# perftest_pair TOOL CLIENT_OUT ARGS...: a server in the background, then the client against
# it; the client's report is what counts (it measures). The server has no ready signal in
# rdma_cm mode (no TCP socket), so the client starts 2 s later; a failed attempt (no listener
# yet, or perftest crashing, which it sometimes does here) is retried with a fresh server on a
# fresh port, at most 3 times.
perftest_pair() {
  local tool=$1 out=$2; shift 2
  local attempt spid
  for attempt in 1 2 3; do
    PORT=$((PORT + 1))
    timeout 300 env ${SPY:+LD_PRELOAD=$SPY} "$tool" -R -d "$DEV" -p "$PORT" "$@" >"$out.server" 2>&1 &
    spid=$!
    sleep 2
    if timeout 300 env ${SPY:+LD_PRELOAD=$SPY} "$tool" -R -d "$DEV" -p "$PORT" "$@" "$ADDR" >"$out" 2>&1; then
      wait "$spid" || true
      return 0
    fi
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    echo "dp-vs-perftest: $tool $* (attempt $attempt) failed: $(tail -n 3 "$out" | tr '\n' ' ')"
  done
  echo "dp-vs-perftest: FAILED: $tool $* after 3 attempts"
  return 1
}

# perftest times with the TSC, calibrated against gettimeofday after the run
# (perftest's get_clock.c, sample_get_cpu_mhz); under TCG the fit fails now and then
# ("Correlation coefficient r^2: ... < 0.9") and the report shows 0.00: such a run is run again.
CALIBRATION_RETRIES=0
perftest_measured() {  # perftest_measured TOOL OUT SIZE ARGS...: a report with a non-zero number
  local tool=$1 out=$2 z=$3; shift 3
  for _ in 1 2 3 4; do
    perftest_pair "$tool" "$out" "$@" || return 1
    local l; l=$(perftest_line "$out" "$z")
    [[ -n $l ]] && ! grep -q 'Correlation coefficient r^2' "$out" && awk '{ exit !($4 + 0 > 0) }' <<<"$l" && return 0
    CALIBRATION_RETRIES=$((CALIBRATION_RETRIES + 1))
  done
  return 0  # the caller finds no usable number and says so
}

# The data line of a perftest report: the one that starts with the size and the iterations.
perftest_line() { awk -v z="$2" '$1 == z && $2 ~ /^[0-9]+$/ { print; exit }' "$1"; }
header() { sed -n "s/^ *$2 *: *\\([^ ]*\\).*/\\1/p" "$1" | head -n 1; }

# rxe's retransmission counters around each tool's runs: the same wire retransmits alike
# (completer_retry_err: ACK timeouts that resent; duplicate_request: what the responder saw twice).
HWC=/sys/class/infiniband/$DEV/ports/1/hw_counters
counter() { cat "$HWC/$1" 2>/dev/null || echo 0; }
counters_before() { C0=$(counter completer_retry_err) D0=$(counter duplicate_request); }
counters_after() {
  echo "$1 retries $(($(counter completer_retry_err) - C0))" >>"$RESULTS.hw"
  echo "$1 duplicates $(($(counter duplicate_request) - D0))" >>"$RESULTS.hw"
}

fails=0
run_perftest() {
  local r=$1 f
  for z in "${SIZE_LIST[@]}"; do
    f=$WORK/p.bw.$z.$r
    counters_before
    perftest_measured ib_write_bw "$f" "$z" -s "$z" -n "$BW_ITERS" -F || { fails=$((fails + 1)); continue; }
    counters_after perftest
    local l; l=$(perftest_line "$f" "$z")
    [ -n "$l" ] && awk '{ exit !($4 + 0 > 0) }' <<<"$l" && echo "perftest write_bw_MiBps.$z $(awk '{ print $4 }' <<<"$l")" >>"$RESULTS" ||
      { echo "dp-vs-perftest: FAILED: no ib_write_bw report for $z B"; cat "$f"; fails=$((fails + 1)); }
    if ((r == 1 && z == ${SIZE_LIST[0]})) && [ -n "$SPY" ]; then
      sed -n 's/^qp_attr_spy /perftest qp (write_bw client) /p' "$f" | head -n 1
      local spied; spied=$(sed -n 's/^qp_attr_spy .* timeout=\([0-9]*\) .*/\1/p' "$f" | head -n 1)
      if [ -n "$spied" ] && ((!ACK_TIMEOUT_GIVEN)); then ACK_TIMEOUT=$spied; fi
      echo "dp-vs-perftest: perftest's QP timeout $spied, dp_bench's qp.timeout $ACK_TIMEOUT"
    fi
    ((r == 1 && z == ${SIZE_LIST[0]})) && echo "perftest write_bw: MTU $(header "$f" Mtu), TX depth $(header "$f" 'TX depth'), CQ moderation $(header "$f" 'CQ Moderation'), max inline $(header "$f" 'Max inline data')"
  done
  for t in write_lat read_lat; do
    f=$WORK/p.$t.$r
    counters_before
    perftest_measured "ib_$t" "$f" "$LAT_SIZE" -s "$LAT_SIZE" -n "$LAT_ITERS" -F || { fails=$((fails + 1)); continue; }
    counters_after perftest
    local l; l=$(perftest_line "$f" "$LAT_SIZE")
    # columns: bytes iterations t_min t_max t_typical t_avg t_stdev p99 p99.9
    [ -n "$l" ] && awk '{ exit !($5 + 0 > 0) }' <<<"$l" && echo "perftest ${t}_typical_us $(awk '{ print $5 }' <<<"$l")" >>"$RESULTS" &&
      echo "perftest ${t}_avg_us $(awk '{ print $6 }' <<<"$l")" >>"$RESULTS" ||
      { echo "dp-vs-perftest: FAILED: no ib_$t report"; cat "$f"; fails=$((fails + 1)); }
    if ((r == 1)); then
      [ -z "$SPY" ] || sed -n 's/^qp_attr_spy /perftest qp (client) /p' "$f"
      [ -z "$SPY" ] || sed -n 's/^qp_attr_spy /perftest qp (server) /p' "$f.server"
      echo "perftest $t: MTU $(header "$f" Mtu), TX depth $(header "$f" 'TX depth'), max inline $(header "$f" 'Max inline data')"
      # dp_bench inlines write_lat's WRITE as perftest did (it prints what it got: 0 on rxe -R).
      [[ $t == write_lat ]] && LAT_INLINE=$(header "$f" 'Max inline data' | tr -dc 0-9)
    fi
  done
  return 0
}

run_wireup() {
  local r=$1 f=$WORK/w.$r
  local cfg=()
  [ -z "$CONFIG" ] || cfg=(--config "$CONFIG")
  counters_before
  local args=("${cfg[@]}" --set log.level=warn --set qp.timeout="$ACK_TIMEOUT" --sizes "$SIZES" --bw-iters "$BW_ITERS"
              --lat-iters "$LAT_ITERS" --lat-size "$LAT_SIZE" --lat-inline "${LAT_INLINE:-220}" --idle "$IDLE")
  # What it printed before a failure counts; the failure is reported (and fails the run).
  local ok=1
  if [[ $LAUNCHER == mpirun ]]; then
    timeout 600 mpirun --oversubscribe --bind-to "$BIND" -np 2 --mca pml ob1 --mca btl self,vader "$DP" "${args[@]}" \
      >"$f" 2>&1 || ok=0
  else
    # Two bare processes, as perftest's server and client run.
    timeout 600 "$DP" --oob-listen 18600 "${args[@]}" >"$f.0" 2>&1 &
    local server=$!
    timeout 600 "$DP" --oob-connect 127.0.0.1:18600 "${args[@]}" >"$f.1" 2>&1 || ok=0
    wait "$server" || ok=0
    cat "$f.0" "$f.1" >"$f"
  fi
  if ((!ok)); then
    echo "dp-vs-perftest: FAILED: dp_bench (round $r): $(grep -m1 'dp_bench: rank .*FAILED' "$f" || tail -n 5 "$f")"
    fails=$((fails + 1))
  fi
  counters_after wireup
  ((r == 1)) && grep '^dp_bench qp ' "$f" | sed 's/^/wireup /'
  awk '$1 == "dp_bench" && $2 == "write_bw" { split($3, s, "="); split($7, b, "="); print "wireup write_bw_MiBps." s[2], b[2] }
       $1 == "dp_bench" && ($2 == "write_lat" || $2 == "read_lat") {
         for (i = 3; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] }
         print "wireup", $2 "_typical_us", v["t_typical_us"]; print "wireup", $2 "_avg_us", v["t_avg_us"] }' "$f" >>"$RESULTS"
}

order_text="perftest then wireup each round"
[[ $ORDER == alternate ]] && order_text="perftest first in odd rounds, wireup first in even ones"
echo "dp-vs-perftest: $ROUNDS rounds, $order_text; sizes $SIZES (write_bw, $BW_ITERS iterations), $LAT_SIZE B latency ($LAT_ITERS iterations)"
for ((r = 1; r <= ROUNDS; ++r)); do
  # perftest's first round always runs first: its write_lat tells dp_bench the inline size.
  order=(perftest wireup) first=""
  if [[ $ORDER == alternate ]] && ((r % 2 == 0)); then order=(wireup perftest) first=" (wireup first)"; fi
  t0=$(date +%s)
  "run_${order[0]}" "$r"
  t1=$(date +%s)
  "run_${order[1]}" "$r"
  echo "dp-vs-perftest: round $r$first: ${order[0]} $((t1 - t0)) s, ${order[1]} $(($(date +%s) - t1)) s"
done

# Every number, in round order, for a comparison by distribution (bench/scripts/dp-compare.py).
sed 's/^/raw /' "$RESULTS"

METRICS=()
for z in "${SIZE_LIST[@]}"; do METRICS+=("write_bw_MiBps.$z"); done
METRICS+=(write_lat_typical_us write_lat_avg_us read_lat_typical_us read_lat_avg_us)
printf '\n%-24s %28s %28s %8s %8s\n' metric "perftest median [min-max]" "wireup median [min-max]" "w/p" "best w/p"
for m in "${METRICS[@]}"; do
  line=$(awk -v m="$m" -v rounds="$ROUNDS" -v gross="$GROSS" '
    function median(a, n,   i, j, t) { for (i = 2; i <= n; ++i) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; --j) a[j + 1] = a[j]; a[j + 1] = t }
                                      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    $2 == m && $3 ~ /^[0-9.]+$/ { if ($1 == "perftest") p[++np] = $3; else w[++nw] = $3 }
    END {
      if (np < rounds || nw < rounds) { printf "%-24s MISSING: %d perftest and %d wireup numbers of %d\n", m, np, nw, rounds; exit 1 }
      pm = median(p, np); wm = median(w, nw); ratio = pm > 0 ? wm / pm : 0
      # An average is printed, never judged: one descheduled step on a shared host moves it.
      bad = gross == "off" || m ~ /_avg_us/ ? 0 : m ~ /MiBps/ ? ratio < 1 / gross : ratio > gross
      off = m ~ /MiBps/ ? ratio < 0.95 : ratio > 1.05
      # best of each side (highest bandwidth, lowest latency): the least disturbed rounds
      best = m ~ /MiBps/ ? (p[np] > 0 ? w[nw] / p[np] : 0) : (p[1] > 0 ? w[1] / p[1] : 0)
      printf "%-24s %10.2f [%.2f-%.2f] %10.2f [%.2f-%.2f] %8.3f %8.3f%s\n", m, pm, p[1], p[np], wm, w[1], w[nw], ratio, best,
             bad ? "  GROSS GAP" : off ? "  (beyond 5%)" : ""
      exit bad ? 1 : 0
    }' "$RESULTS") && echo "$line" || { echo "$line"; fails=$((fails + 1)); }
done
awk '{ v[$1 " " $2] += $3; n[$1 " " $2]++ }
     END { printf "rxe retransmissions (mean per round): perftest %.0f ACK timeouts, %.0f duplicates; wireup %.0f ACK timeouts, %.0f duplicates\n",
           v["perftest retries"] / ('"$ROUNDS"'), v["perftest duplicates"] / ('"$ROUNDS"'), v["wireup retries"] / ('"$ROUNDS"'), v["wireup duplicates"] / ('"$ROUNDS"') }' "$RESULTS.hw"
echo "perftest runs repeated after a failed clock calibration: $CALIBRATION_RETRIES"
if ((fails)); then
  echo "dp-vs-perftest: FAILED ($fails problem(s))"
  exit 1
fi
echo "dp-vs-perftest: ok (both ran every round; ratios printed above, bandwidth higher is better, latency lower)"
