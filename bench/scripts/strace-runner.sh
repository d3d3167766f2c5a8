#!/usr/bin/env bash
# The runner's system calls per connection per rank on rxe, in one soft-RoCE VM boot:
# wireup_a2a 2 ranks x N lanes (as bench/scripts/compare-cmtime-vm.sh runs it) with each rank under
# `strace -f -c`, then a table per system call: calls and failed calls (EAGAIN for the
# reads and writes that found nothing) per connection per rank at each N, and the marginal
# cost between the smallest and the largest N (the process start, the bootstrap and the
# checks cancel out there).
#
#   bench/scripts/strace-runner.sh [--build DIR] [--tuning FILE] [--window CW:QW] [--no-run] [N ...]
#        (default N: 64 256; --window: engine.connect_window:qp_create_window through the
#        environment, as compare-cmtime.sh's second run; default: the tuning file's, vm.toml;
#        --no-run: the table again from the traces of the last run, no VM)
#
# strace stops the rank at every system call, so the rates it runs at mean nothing and any
# count that depends on time (idle waits, retries) is higher than without it.
# Raw outputs stay in BUILD/strace-runner/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

if [ "${1:-}" = --in-vm ]; then  # the guest's half: A2A TUNING OUT WIN N...
  A2A=$2 TUNING=$3 OUT=$4 WIN=$5
  shift 5
  env=()
  [ -z "$WIN" ] || env=(-x "WIREUP_ENGINE_CONNECT_WINDOW=${WIN%%:*}" -x "WIREUP_ENGINE_QP_CREATE_WINDOW=${WIN#*:}")
  for n in "$@"; do
    # Each rank under its own strace (its threads too), named by its PMIx rank: fds shown with
    # their paths (-y), the first 28 bytes of each buffer in hex (an rdma_cm command's header
    # and, for QUERY and SET_OPTION, what it asks).
    mpirun --oversubscribe -np 2 "${env[@]}" bash -c \
      'exec strace -f -y -xx -s 28 -o "$0.${PMIX_RANK:-$OMPI_COMM_WORLD_RANK}" "$@"' "$OUT/trace-$n" \
      "$A2A" --config "$TUNING" --lanes "$n" --json --no-progress >"$OUT/a2a-$n.json" 2>"$OUT/a2a-$n.txt" ||
      echo "strace-runner: wireup_a2a 2 x $n exited $?" >&2
    jq -r --arg n "$n" '"2 x \($n) lanes: failed \(.failed), verified \(.verified)"' "$OUT/a2a-$n.json" 2>/dev/null ||
      echo "strace-runner: 2 x $n gave no summary" >&2
  done
  exit 0
fi

BUILD=$ROOT/build
TUNING=$ROOT/tests/mpi/vm.toml
WINDOW=""
RUN=1
while (($#)); do
  case "$1" in
    --no-run) RUN=0; shift ;;
    --window) WINDOW=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --tuning) TUNING=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    --*) echo "strace-runner: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
NS=("$@")
((${#NS[@]})) || NS=(64 256)
for n in "${NS[@]}"; do [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "strace-runner: N '$n' is not a count" >&2; exit 2; }; done
[ -z "$WINDOW" ] || [[ "$WINDOW" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || { echo "strace-runner: --window wants CW:QW" >&2; exit 2; }
for t in strace mpirun jq; do
  command -v "$t" >/dev/null || { echo "strace-runner: '$t' not found (scripts/install-deps.sh)" >&2; exit 2; }
done
BUILD=$(cd "$BUILD" && pwd)
A2A=$BUILD/tools/wireup_a2a
[ -x "$A2A" ] || { echo "strace-runner: $A2A not built (cmake --build $BUILD --target wireup_a2a)" >&2; exit 2; }

OUT=$BUILD/strace-runner
if ((RUN)); then
  rm -rf "$OUT"
  mkdir -p "$OUT"
  cd "$BUILD"
  "$ROOT/scripts/vm/run.sh" --timeout 1800 --share "$BUILD" -- \
    "$ROOT/bench/scripts/strace-runner.sh" --in-vm "$A2A" "$TUNING" "$OUT" "$WINDOW" "${NS[@]}" >"$OUT/vm.log" 2>&1 || {
    echo "strace-runner: the VM run failed; its log:" >&2
    tail -n 40 "$OUT/vm.log" >&2
    exit 1
  }
fi
grep -h 'lanes: failed\|strace-runner:' "$OUT/vm.log" || true

# Each trace line becomes "window key again": window 1 between the rank's two getrusage(RUSAGE_SELF)
# (run_wireup()'s CPU readings: just after start() .. every connection established, the time
# the summary reports), key the call and for reads and writes what the fd is (an rdma_cm write:
# its command), again 1 for a call that failed with EAGAIN.
classify() {
  awk '
    BEGIN {
      split("CREATE_ID DESTROY_ID BIND_IP RESOLVE_IP RESOLVE_ROUTE QUERY_ROUTE CONNECT LISTEN ACCEPT REJECT " \
            "DISCONNECT INIT_QP_ATTR GET_EVENT GET_OPTION SET_OPTION NOTIFY JOIN_IP_MCAST LEAVE_MCAST MIGRATE_ID " \
            "QUERY BIND RESOLVE_ADDR JOIN_MCAST", cmd, " ")
      split("ADDR PATH GID", query, " ")
      for (i = 0; i < 16; i++) hex[substr("0123456789abcdef", i + 1, 1)] = i
    }
    function byte(s, k,   h) { h = substr(s, 4 * k + 3, 2); return hex[substr(h, 1, 1)] * 16 + hex[substr(h, 2, 1)] }
    function unhex(s,   out, i) {  # -xx prints paths as \xHH too
      out = ""
      for (i = 1; i <= length(s); i++)
        if (substr(s, i, 2) == "\\x") { out = out sprintf("%c", hex[substr(s, i + 2, 1)] * 16 + hex[substr(s, i + 3, 1)]); i += 3 }
        else out = out substr(s, i, 1)
      return out
    }
    function key(name, rest,   path, b, c, k) {
      if (name !~ /^(read|write|readv|writev|ioctl)$/) return name
      if (!match(rest, /^[0-9]+<[^>]*>/)) return name
      path = unhex(substr(rest, RSTART, RLENGTH)); sub(/^[0-9]+</, "", path); sub(/>$/, "", path)
      if (path ~ /rdma_cm$/) {
        k = name " rdma_cm"
        if (name == "write" && match(rest, /"(\\x[0-9a-f][0-9a-f])+"/)) {
          b = substr(rest, RSTART + 1, RLENGTH - 2); c = byte(b, 0)
          k = k " " ((c + 1) in cmd ? cmd[c + 1] : c)
          if (c == 19 && length(b) >= 84) k = k " " query[byte(b, 20) + 1]
        }
        return k
      }
      if (path ~ /uverbs/) return name " uverbs"
      if (path ~ /^anon_inode:/) { sub(/^anon_inode:\[?/, "", path); sub(/\]$/, "", path); return name " " path }
      if (path ~ /^(socket|pipe):/) { sub(/:.*/, "", path); return name " " path }
      return name " file"
    }
    / resumed>/ {
      pid = $1; if (!(pid in pending)) next
      k = pending[pid]; delete pending[pid]
      print win + 0 "\t" k "\t" ($0 ~ /= -1 EAGAIN/)
      next
    }
    $2 ~ /^[a-z_0-9]+\(/ {
      pid = $1; name = $2; sub(/\(.*/, "", name)
      rest = $0; sub(/^[0-9]+ +[a-z_0-9]+\(/, "", rest)
      k = key(name, rest)
      if (name == "getrusage" && rest ~ /^RUSAGE_SELF/) { marks++; win = marks == 1 }
      if ($0 ~ /<unfinished \.\.\.>$/) { pending[pid] = k; next }
      print win + 0 "\t" k "\t" ($0 ~ /= -1 EAGAIN/)
    }' "$1"
}
for n in "${NS[@]}"; do
  for f in "$OUT/trace-$n".*; do
    [ -s "$f" ] || { echo "strace-runner: no trace for N = $n" >&2; exit 1; }
    classify "$f" | awk -v n="$n" -F'\t' '{ c[$1 "\t" $2]++; a[$1 "\t" $2] += $3 }
      END { for (k in c) print n "\t" k "\t" c[k] "\t" a[k] }'
  done
done >"$OUT/counts.tsv"

echo "system calls per connection per rank, wireup_a2a 2 x N lanes on rxe (strace -f of each rank:"
echo "'wireup' from just after start() to every connection established, as the summary times it;"
echo "EAGAIN: calls that found nothing)"
awk -F'\t' -v ns="${NS[*]}" '
  BEGIN { k = split(ns, N, " "); lo = N[1]; hi = N[k] }
  { # n window key calls again, both ranks: halved
    if ($2 == 1) { c[$3, $1] += $4 / 2; a[$3, $1] += $5 / 2; if (!($3 in seen)) { seen[$3] = 1; keys[++m] = $3 } }
    life[$1] += $4 / 2; lifea[$1] += $5 / 2
  }
  END {
    printf "%-30s", "in wireup"
    for (i = 1; i <= k; i++) printf " %8s %6s", "N=" N[i], "EAGAIN"
    if (hi > lo) printf " %10s %6s", lo "->" hi, "EAGAIN"
    printf "\n"
    # largest first (at the largest N)
    for (j = 1; j <= m; j++) for (l = j + 1; l <= m; l++)
      if (c[keys[l], hi] > c[keys[j], hi]) { t = keys[j]; keys[j] = keys[l]; keys[l] = t }
    for (j = 1; j <= m; j++) {
      s = keys[j]; big = 0
      for (i = 1; i <= k; i++) { tc[N[i]] += c[s, N[i]]; ta[N[i]] += a[s, N[i]]; if (c[s, N[i]] / N[i] >= 0.05) big = 1 }
      if (big) { row(s, c[s, lo], a[s, lo], c[s, hi], a[s, hi], s); continue }
      for (i = 1; i <= k; i++) { c["(others)", N[i]] += c[s, N[i]]; a["(others)", N[i]] += a[s, N[i]] }
    }
    row("(others)", 0, 0, 0, 0, "(others)")
    for (i = 1; i <= k; i++) { c["total", N[i]] = tc[N[i]]; a["total", N[i]] = ta[N[i]] }
    row("total in wireup", 0, 0, 0, 0, "total")
    for (i = 1; i <= k; i++) { c["life", N[i]] = life[N[i]]; a["life", N[i]] = lifea[N[i]] }
    row("total, whole process", 0, 0, 0, 0, "life")
  }
  function row(label, x1, x2, x3, x4, s,   i) {
    printf "%-30s", label
    for (i = 1; i <= k; i++) printf " %8.2f %6.2f", c[s, N[i]] / N[i], a[s, N[i]] / N[i]
    if (hi > lo) printf " %10.2f %6.2f", (c[s, hi] - c[s, lo]) / (hi - lo), (a[s, hi] - a[s, lo]) / (hi - lo)
    printf "\n"
  }' "$OUT/counts.tsv"
