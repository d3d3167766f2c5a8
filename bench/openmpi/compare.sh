#!/usr/bin/env bash
# compare.sh BUILD_DIR OUTDIR [ROUNDS] -- Open MPI over wireup's BTL beside what Open MPI users
# run today, in ONE boot of the soft-RoCE VM, configurations alternating round by round:
#
#   wireup_od    ob1 + btl self,wireup, on demand (transports/openmpi)
#   wireup_bulk  ob1 + btl self,wireup, bulk (every peer at MPI_Init)
#   ob1_tcp      ob1 + btl self,tcp over dummy0 (the netdev under rxe0)
#   ucx_rc       the UCX PML on rxe0 (rc_verbs), with UCX_IB_GID_INDEX=0: UCX 1.13's UD
#                side channel drops every UD packet rxe delivers on the IPv4 GID (the default
#                choice) and the job aborts (bench/openmpi/peers-probe.sh, docs/openmpi-btl.md)
#   ucx_tcp      the UCX PML over TCP (pml_ucx_tls/devices any, UCX_TLS=tcp,self)
#
# Per round and configuration: NetPIPE (NPopenmpi, 2 ranks) latency at 8 bytes and bandwidth at
# 64 KiB and 1 MiB; the time from before MPI_Init to the end of a first MPI_Alltoall of 8 ranks
# (bench/openmpi/first_alltoall.c). One line per measurement on stdout, then the medians and
# spreads (min-max) per configuration. Raw outputs under OUTDIR.
#
#   scripts/vm/run.sh --timeout 3000 --share "$PWD/build" -- bench/openmpi/compare.sh "$PWD/build" "$PWD/build/compare" 3
# COMPARE_SUMMARIZE_ONLY=1 reads the logs of an earlier run in OUTDIR again (no VM needed).
set -u
BUILD=${1:?usage: compare.sh BUILD_DIR OUTDIR [ROUNDS]}
OUT=${2:?usage: compare.sh BUILD_DIR OUTDIR [ROUNDS]}
ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$OUT" && cd "$OUT" || exit 2
OUT=$PWD
BUILD=$(cd "$BUILD" && pwd)
OMPI_DIR=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
TRY_T=${COMPARE_TIMEOUT:-240}
COMP=$BUILD/transports/openmpi/component
A2A=$BUILD/bench/first_alltoall
[[ -n ${COMPARE_SUMMARIZE_ONLY:-} || ( -f $COMP/mca_btl_wireup.so && -x $A2A ) ]] ||
  { echo "compare: build $COMP and $A2A first" >&2; exit 2; }
export WIREUP_CONFIG=$ROOT/config/examples/soft-roce-vm.toml WIREUP_LOG_LEVEL=warn

args_for() {
  case $1 in
    wireup_od) echo "--mca mca_base_component_path $OMPI_DIR:$COMP --mca pml ob1 --mca btl self,wireup --mca btl_wireup_mode on_demand" ;;
    wireup_bulk) echo "--mca mca_base_component_path $OMPI_DIR:$COMP --mca pml ob1 --mca btl self,wireup --mca btl_wireup_mode bulk" ;;
    ob1_tcp) echo "--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include dummy0" ;;
    ucx_rc) echo "--mca pml ucx -x UCX_TLS=rc_v,self -x UCX_NET_DEVICES=rxe0:1 -x UCX_IB_GID_INDEX=0" ;;
    ucx_tcp) echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=dummy0" ;;
  esac
}
read -ra CONFIGS <<<"${COMPARE_CONFIGS:-wireup_od wireup_bulk ob1_tcp ucx_rc ucx_tcp}"
results=$OUT/results.txt
: >"$results"
# One round's lines for configuration $1 from its logs (NetPIPE's, first_alltoall's).
record() {
  local c=$1 r=$2 np=$OUT/np.$1.$2.log a2a=$OUT/a2a.$1.$2.log
  if grep -q ' 1048576 bytes ' "$np" 2>/dev/null; then
    # "  5:       8 bytes   1019 times -->      1.27 Mbps in      48.21 usec"
    line() { awk -v b="$1" '$2 == b && $3 == "bytes" { print; exit }' "$np"; }
    echo "compare: round $r $c netpipe lat8_us $(line 8 | awk '{ print $10 }') bw64k_mbps $(line 65536 | awk '{ print $7 }') bw1m_mbps $(line 1048576 | awk '{ print $7 }')"
  else
    echo "compare: round $r $c netpipe FAILED: $(grep -m1 -iE 'fatal|error|abort' "$np" 2>/dev/null)"
  fi
  if grep -q '^first-alltoall:' "$a2a" 2>/dev/null; then
    echo "compare: round $r $c $(grep '^first-alltoall:' "$a2a" | sed 's/^first-alltoall: //')"
  else
    echo "compare: round $r $c first-alltoall FAILED: $(grep -m1 -iE 'fatal|error|abort' "$a2a" 2>/dev/null)"
  fi
}
n=${#CONFIGS[@]}
for ((r = 1; r <= ROUNDS; r++)); do
  # The order rotates each round, so no configuration always runs first after a quiet spell.
  for ((k = 0; k < n; k++)); do
    c=${CONFIGS[$(((k + r - 1) % n))]}
    if [[ -z ${COMPARE_SUMMARIZE_ONLY:-} ]]; then
      # shellcheck disable=SC2046
      timeout "$TRY_T" mpirun --oversubscribe -np 2 $(args_for "$c") NPopenmpi -u 1048576 -o /dev/null \
        >"$OUT/np.$c.$r.log" 2>&1
      # shellcheck disable=SC2046
      timeout "$TRY_T" mpirun --oversubscribe -np 8 $(args_for "$c") "$A2A" >"$OUT/a2a.$c.$r.log" 2>&1
    fi
    record "$c" "$r" | tee -a "$results"
  done
done

# Medians and spreads per configuration and metric.
echo "compare: summary over $ROUNDS rounds (median [min-max])"
for c in "${CONFIGS[@]}"; do
  row="$c:"
  for m in lat8_us bw64k_mbps bw1m_mbps total_ms; do
    vals=$(grep " $c " "$results" | grep -o " $m [0-9.]*" | awk '{ print $2 }' | sort -g)
    cnt=$(printf '%s\n' "$vals" | grep -c .)
    if ((cnt == 0)); then
      row+=" $m -"
    else
      med=$(printf '%s\n' "$vals" | awk -v n="$cnt" '{ v[NR] = $1 } END { print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')
      row+=" $m $med [$(printf '%s\n' "$vals" | head -1)-$(printf '%s\n' "$vals" | tail -1)]"
    fi
  done
  echo "compare: $row"
done
