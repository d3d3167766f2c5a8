#!/usr/bin/env bash
# a2a-repeat.sh -- inside the VM: the same all-to-all job (tests/mpi/a2a-check.sh: mpirun of
# wireup_a2a, every connection checked) RUNS times in one boot, then the spread of the wall
# times (min, median, p90, max, mean) and how many runs failed.
#
#   scripts/vm/run.sh --timeout 7200 --share build -- \
#     scripts/vm/a2a-repeat.sh --a2a build/tools/wireup_a2a [--runs 100] [--np 16] [--lanes 4]
#
# Each run's time is the whole job as a transport sees it (mpirun start to exit, checks
# included), printed as it ends: "run 7: 23.41 s ok". Exit 0 when every run passed.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
A2A="" RUNS=100 NP=16 LANES=4
while (($#)); do
  case "$1" in
    --a2a) A2A=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --lanes) LANES=$2; shift 2 ;;
    *) echo "a2a-repeat.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x $A2A ]] || { echo "a2a-repeat.sh: --a2a BIN (an executable wireup_a2a) is required" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "a2a-repeat.sh: --runs must be a positive integer, got '$RUNS'" >&2; exit 2; }

times=()
failed=0
for ((i = 1; i <= RUNS; i++)); do
  t0=$(date +%s.%N)
  if "$HERE/../../tests/mpi/a2a-check.sh" --a2a "$A2A" --np "$NP" --lanes "$LANES" >"${TMPDIR:-/tmp}/a2a-repeat.$i.log" 2>&1; then
    verdict=ok
  else
    verdict=FAILED
    failed=$((failed + 1))
    tail -20 "${TMPDIR:-/tmp}/a2a-repeat.$i.log"
  fi
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  times+=("$t")
  printf 'run %d: %.2f s %s\n' "$i" "$t" "$verdict"
done
printf '%s\n' "${times[@]}" | sort -g | awk -v np="$NP" -v lanes="$LANES" -v failed="$failed" '
  { t[NR] = $1; sum += $1 }
  END {
    n = NR
    med = (n % 2) ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2
    p90 = t[int(0.9 * (n - 1)) + 1]
    printf "a2a-repeat: %d runs of %d ranks x %d lanes: min %.2f s, median %.2f s, p90 %.2f s, max %.2f s, mean %.2f s; %d failed\n",
           n, np, lanes, t[1], med, p90, t[n], sum / n, failed
  }'
((failed == 0))
