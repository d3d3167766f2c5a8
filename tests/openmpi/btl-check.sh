#!/usr/bin/env bash
# btl-check.sh -- runs one real MPI program under mpirun with ob1 and `btl self,wireup` only
# (no vader, no tcp: every byte between two ranks rides QPs wireup connected), then checks the
# program's own verdict lines and the BTL's counters (btl_wireup_counters 1):
#   - one counters line per rank;
#   - every QP the factory made was destroyed once: qps_created == qps_destroyed + qps_released,
#     and qps_destroyed == lanes_ready (the lanes handed over);
#   - what ranks sent is what ranks received (sum send_bytes == sum recv_bytes), and something
#     was sent at all;
#   - --expect-rdma: RDMA READ/WRITE moved bytes, registrations went through the cache
#     (reg_requests > reg_native > 0) and every native registration was undone;
#   - --min-bytes B: SEND + RDMA bytes of all ranks >= B (what the program itself moved);
#   - --expect-rails N: every rank has lanes on N rails and RDMA went over each of them
#     (lanes_by_rail, rdma_by_rail).
# --expect-death: a rank of the program dies on purpose; the job must end with a non-zero
# status within the time the caller gives (ctest's TIMEOUT), and the verdicts must match
# (the dead rank named); the counters are not checked (the ranks are killed).
# Inside the soft-RoCE VM (tests/vm, label btl) or on RDMA hardware.
#
# btl-check.sh --component-dir DIR --np N [--mode on_demand|bulk] [--lanes L] [--expect-rdma]
#              [--min-bytes B] [--verdict REGEX]... [--verdict-count REGEX:N]... [--reject REGEX]...
#              [--workdir DIR] [--hpcc N:P:Q] [--mca NAME VALUE]... [--host LIST] [--log FILE]
#              -- PROGRAM ARGS...
# WIREUP_* variables of the caller reach every rank (-x), on other nodes too.
set -uo pipefail

rails=0 death=0 comp='' np='' mode=on_demand lanes='' rdma=0 min_bytes=0 workdir='' hpcc='' log=''
verdicts=() counts=() rejects=() mca=()
while (($#)); do
  case $1 in
    --component-dir) comp=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --lanes) lanes=$2; shift 2 ;;
    --expect-rdma) rdma=1; shift ;;
    --expect-death) death=1; shift ;;
    --expect-rails) rails=$2; shift 2 ;;
    --min-bytes) min_bytes=$2; shift 2 ;;
    --verdict) verdicts+=("$2"); shift 2 ;;
    --verdict-count) counts+=("$2"); shift 2 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --hpcc) hpcc=$2; shift 2 ;;
    --mca) mca+=(--mca "$2" "$3"); shift 3 ;;
    --host) mca+=(--host "$2"); shift 2 ;;
    --log) log=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "btl-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n $comp && -n $np && $# -gt 0 ]] || { echo "btl-check: --component-dir, --np and a program are required" >&2; exit 2; }
[[ -f $comp/mca_btl_wireup.so ]] || { echo "btl-check: FAILED: no $comp/mca_btl_wireup.so" >&2; exit 1; }
comp=$(cd "$comp" && pwd)  # mca_base_component_path takes absolute directories only
ompi_dir=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')

workdir=${workdir:-$(mktemp -d)}
mkdir -p "$workdir"
log=${log:-$workdir/btl-check.log}
cd "$workdir" || exit 1
if [[ -n $hpcc ]]; then
  # hpcc reads hpccinf.txt from its working directory and writes hpccoutf.txt there.
  IFS=: read -r hn hp hq <<<"$hpcc"
  rm -f hpccoutf.txt
  cat >hpccinf.txt <<EOF
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$hn          Ns
1            # of NBs
40           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
$hp          Ps
$hq          Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
EOF
fi

lane_args=()
[[ -n $lanes ]] && lane_args=(--mca btl_wireup_lanes "$lanes")
cmd=(mpirun --oversubscribe -np "$np" --mca mca_base_component_path "$ompi_dir:$comp"
     --mca pml ob1 --mca btl 'self,wireup' --mca btl_wireup_mode "$mode" --mca btl_wireup_counters 1
     "${lane_args[@]}" "${mca[@]}")
for v in $(compgen -e | grep '^WIREUP_' || true); do cmd+=(-x "$v"); done
cmd+=("$@")
echo "btl-check: ${cmd[*]}"
t0=$(date +%s.%N)
"${cmd[@]}" >"$log" 2>&1
rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[[ -n $hpcc && -f hpccoutf.txt ]] && cat hpccoutf.txt >>"$log"

fail() {
  echo "btl-check: the output's last lines:"
  grep -v '^btl wireup counters' "$log" | tail -25 | sed 's/^/  | /'
  echo "btl-check: FAILED: $*"
  exit 1
}
if ((death)); then
  ((rc != 0)) || fail "mpirun exited 0: the rank that should have died did not"
  for v in "${verdicts[@]}"; do
    grep -Eq -- "$v" "$log" || fail "the dead rank is not named: /$v/ is not in the output"
  done
  echo "btl-check: PASS np=$np mode=$mode: the job ended (mpirun exit $rc) ${secs} s after it began, naming the dead rank:"
  for v in "${verdicts[@]}"; do grep -Em3 -- "$v" "$log" | sed 's/^/btl-check: verdict | /'; done
  exit 0
fi
((rc == 0)) || fail "mpirun exited $rc after ${secs} s"
for v in "${verdicts[@]}"; do
  grep -Eq -- "$v" "$log" || fail "the program's verdict /$v/ is not in its output"
done
for c in "${counts[@]}"; do
  re=${c%:*} want=${c##*:}
  got=$(grep -Ec -- "$re" "$log")
  ((got == want)) || fail "/$re/ printed $got times, expected $want"
done
for r in "${rejects[@]}"; do
  if grep -Eq -- "$r" "$log"; then fail "the output has /$r/: $(grep -Em1 -- "$r" "$log")"; fi
done

# The counters: key=value pairs, one line per rank.
counters=$(grep -o 'btl wireup counters: .*' "$log" | sed 's/^btl wireup counters: //')
lines=$(printf '%s\n' "$counters" | grep -c 'rank=')
((lines == np)) || fail "$lines counters lines for $np ranks (btl_wireup_counters 1 prints one per rank)"
sum() { printf '%s\n' "$counters" | grep -o " $1=[0-9]*" | cut -d= -f2 | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
while read -r line; do
  declare -A c=()
  for kv in $line; do c[${kv%%=*}]=${kv#*=}; done
  r=${c[rank]}
  ((c[qps_created] == c[qps_destroyed] + c[qps_released])) ||
    fail "rank $r: ${c[qps_created]} QPs created, ${c[qps_destroyed]} destroyed + ${c[qps_released]} released"
  ((c[qps_destroyed] == c[lanes_ready])) || fail "rank $r: ${c[lanes_ready]} lanes handed over, ${c[qps_destroyed]} QPs destroyed"
  ((c[reg_native] == c[dereg_native])) || fail "rank $r: ${c[reg_native]} registrations, ${c[dereg_native]} undone"
  [[ ${c[mode]} == "$mode" ]] || fail "rank $r ran mode ${c[mode]}, not $mode"
  if ((rails)); then
    IFS=/ read -ra lr <<<"${c[lanes_by_rail]}"
    IFS=/ read -ra rr <<<"${c[rdma_by_rail]}"
    ((${#lr[@]} == rails)) || fail "rank $r: lanes_by_rail ${c[lanes_by_rail]}: not $rails rails"
    for ((i = 0; i < rails; i++)); do
      ((lr[i] > 0)) || fail "rank $r: no lane on rail $i (lanes_by_rail ${c[lanes_by_rail]})"
      ((rr[i] > 0)) || fail "rank $r: no RDMA on rail $i (rdma_by_rail ${c[rdma_by_rail]})"
    done
  fi
  unset c
done <<<"$counters"
sent=$(sum send_bytes) received=$(sum recv_bytes) sends=$(sum sends) lanes_ready=$(sum lanes_ready)
gets=$(sum gets) puts=$(sum puts) rdma_bytes=$(($(sum get_bytes) + $(sum put_bytes)))
regs=$(sum reg_requests) reg_native=$(sum reg_native)
((sends > 0 && sent > 0)) || fail "no SEND went through the BTL"
((sent == received)) || fail "ranks sent $sent bytes and received $received"
((lanes_ready > 0)) || fail "no lane was handed over"
if ((rdma)); then
  ((gets + puts > 0 && rdma_bytes > 0)) || fail "no RDMA READ or WRITE (gets $gets, puts $puts)"
  ((reg_native > 0 && regs >= reg_native)) || fail "registrations: $regs asked, $reg_native made"
fi
total=$((sent + rdma_bytes))
((total >= min_bytes)) || fail "the BTL moved $total bytes, the program at least $min_bytes"
echo "btl-check: PASS np=$np mode=$mode ${secs} s: lanes=$lanes_ready sends=$sends send_bytes=$sent rdma_ops=$((gets + puts)) rdma_bytes=$rdma_bytes registrations=$regs (native $reg_native)"
for v in "${verdicts[@]}"; do grep -Em2 -- "$v" "$log" | sed 's/^/btl-check: verdict | /'; done
printf '%s\n' "$counters" | sed 's/^/btl-check: counters | /'
