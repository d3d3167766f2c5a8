#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang in a build dir of their own and runs
# each one in turn.
#   scripts/fuzz.sh [-n RUNS | -t SECONDS] [TARGET...]
#     -n RUNS     executions per target (default 1000000)
#     -t SECONDS  run each target for SECONDS instead
#     TARGET      private_data, address, liveness, config (default: all four)
# Env: FUZZ_BUILD_DIR (default ./build-fuzz), WIREUP_JOBS (default nproc).
#
# The corpus of each target grows in FUZZ_BUILD_DIR/corpus/TARGET and is kept between runs;
# the seeds are regenerated every run (fuzz_seeds, plus the shipped tuning files for config).
# A finding (crash, UB, leak, an input running > 60 s, RSS > 2 GB) stops its target; the input lands in
# FUZZ_BUILD_DIR/findings/TARGET/ and the report in FUZZ_BUILD_DIR/logs/TARGET.log. Reproduce:
#   FUZZ_BUILD_DIR/fuzz_TARGET FUZZ_BUILD_DIR/findings/TARGET/crash-...
# Exit status: 0 = no findings, 1 = a target found something, 2 = usage or build error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
B=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
JOBS=${WIREUP_JOBS:-$(nproc)}
ALL=(private_data address liveness config)

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
limit=(-runs=1000000)
while getopts "n:t:h" o; do
  case $o in
    n) [[ $OPTARG =~ ^[0-9]+$ ]] || usage; limit=(-runs="$OPTARG") ;;
    t) [[ $OPTARG =~ ^[0-9]+$ ]] || usage; limit=(-max_total_time="$OPTARG") ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
((${#targets[@]})) || targets=("${ALL[@]}")
for t in "${targets[@]}"; do [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target '$t'" >&2; usage; }; done

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
t0=$(date +%s)
if ! { CC=clang CXX=clang++ cmake -S "$ROOT/tests/fuzz" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DWIREUP_FUZZ=ON >/dev/null &&
       cmake --build "$B" -j "$JOBS" --target fuzz_seeds "${targets[@]/#/fuzz_}"; }; then
  echo "fuzz.sh: build failed" >&2
  exit 2
fi
rm -rf "$B/seeds"
"$B/fuzz_seeds" "$B/seeds"
echo "fuzz.sh: build took $(($(date +%s) - t0)) s"

findings_total=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "$B/corpus/$t" "$B/findings/$t" "$B/logs"
  dirs=("$B/corpus/$t" "$B/seeds/$t")
  [ -d "$ROOT/tests/fuzz/regressions/$t" ] && dirs+=("$ROOT/tests/fuzz/regressions/$t")
  extra=()
  if [ "$t" = config ]; then
    dirs+=("$ROOT/config" "$ROOT/tests/data/config")
    extra=(-dict="$B/seeds/config.dict")
  fi
  before=$(find "$B/findings/$t" -type f | wc -l)
  log="$B/logs/$t.log"
  ts=$(date +%s)
  rc=0
  # Leak and UB reports end the run too (-error_exitcode); LSan checks every input.
  # -timeout: inputs take milliseconds; 60 s is a hang even on a machine shared with builds
  # and VMs (a 10 s limit fired there on a page-fault stall of an 8 ms input).
  "$B/fuzz_$t" "${limit[@]}" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$B/findings/$t/" "${extra[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - ts))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')  # stopped early
  new=$(($(find "$B/findings/$t" -type f | wc -l) - before))
  corpus=$(find "$B/corpus/$t" -type f | wc -l)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  if ((rc != 0 && new == 0)); then new=1; fi  # died without writing an input: still a finding
  findings_total=$((findings_total + new))
  line=$(printf '%-12s %10s executions in %5d s, corpus %5d files, %s, %d findings' \
    "$t" "${execs:-?}" "$secs" "$corpus" "${cov:-cov: ?}" "$new")
  summary+=("$line")
  echo "fuzz.sh: $line"
  if ((rc != 0)); then
    echo "fuzz.sh: $t: libFuzzer exited $rc; report ($log):" >&2
    grep -vE '^#[0-9]+|NEW_FUNC' "$log" | tail -40 >&2
    find "$B/findings/$t" -type f -newermt "@$ts" -printf 'fuzz.sh: finding: %p\n' >&2
  fi
done

echo "fuzz.sh: summary (${limit[*]})"
printf '  %s\n' "${summary[@]}"
if ((findings_total)); then
  echo "fuzz.sh: $findings_total finding(s)"
  exit 1
fi
echo "fuzz.sh: no findings"
