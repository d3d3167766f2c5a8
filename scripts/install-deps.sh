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
  # message authentication of the private data, PMIx bootstrap, build cache
  libsodium-dev libpmix-dev ccache
)

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
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
