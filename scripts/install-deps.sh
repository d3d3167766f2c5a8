#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test wireup.
# Idempotent: packages already present are not touched; apt-get update runs only when needed.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config ninja-build
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers ibverbs-utils rdmacm-utils
  libhwloc-dev hwloc-nox
  # hwloc.pc's Libs.private: `pkg-config --static --libs wireup` (tests/install) links -ludev
  libudev-dev
  libtomlplusplus-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  openmpi-bin libopenmpi-dev
  # soft-RoCE VM harness: qemu (TCG), busybox for the initramfs, kmod for depmod/modprobe
  qemu-system-x86 busybox-static kmod cpio xz-utils iproute2
  # the two-node pair (scripts/vm/pair.sh): sshd/ssh between the guests (never started on the host)
  openssh-server openssh-client
  # fuzzers and sanitizers
  clang libclang-rt-14-dev
  jq
  # the data path against perftest (perf.dp_vs_perftest) and the RoCE TOS capture (twonode tos)
  perftest tcpdump
  # the man pages (man/*.md through pandoc; `man` reads them back in tests/install)
  pandoc man-db
  # the ABI check (scripts/abi-check.sh: abidw, abidiff)
  abigail-tools
  # message authentication of the private data, PMIx bootstrap, JSON output, build cache
  libsodium-dev libpmix-dev nlohmann-json3-dev ccache
  # Slurm in the two-node pair (scripts/vm/slurm-up.sh; never started on the host). Its PMIx
  # plugin (slurm-wlm-basic-plugins: mpi_pmix_v4.so) dlopens pmix2/lib/libpmix.so, which only
  # libpmix-dev ships.
  slurmctld slurmd slurm-client munge
  # real MPI programs over the Open MPI BTL (transports/openmpi, tests/openmpi): NetPIPE, HPC
  # Challenge, mpi4py's benchmarks, ScaLAPACK's test programs (which bring MPICH along)
  netpipe-openmpi hpcc python3-mpi4py scalapack-mpi-test
)
# Daemons these packages would start and enable at install: they run only inside the pair's
# guests, never on the host.
DAEMONS=(munge slurmd slurmctld)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# A policy-rc.d that refuses every start while apt runs (unless one is there already, as in
# containers), so that no daemon of DAEMONS starts here even for a moment.
POLICY=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e $POLICY ]; then
  printf '#!/bin/sh\n# wireup install-deps.sh: no daemon starts during this install\nexit 101\n' | $SUDO tee $POLICY >/dev/null
  $SUDO chmod 755 $POLICY
  own_policy=1
fi
set +e
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
rc=$?
set -e
if ((own_policy)); then $SUDO rm -f $POLICY; fi
((rc == 0)) || exit $rc
for d in "${DAEMONS[@]}"; do
  [ -e "/lib/systemd/system/$d.service" ] || [ -e "/etc/init.d/$d" ] || continue
  if [ -d /run/systemd/system ]; then $SUDO systemctl stop "$d" 2>/dev/null || true; fi
  if command -v systemctl >/dev/null; then $SUDO systemctl disable "$d" 2>/dev/null || true; fi
  if [ -e "/etc/init.d/$d" ]; then $SUDO update-rc.d "$d" disable >/dev/null 2>&1 || true; fi
done
echo "install-deps: ${DAEMONS[*]} are disabled here (they run only in the pair's guests)"
