#!/bin/sh
# /init of the wireup VM initramfs (runs as PID 1 under busybox sh). Copied in by prepare.sh.
#
# 1. loads the modules listed in /lib/modules/load.list (dependencies first),
# 2. mounts the host root read-only (9p tag "hostroot") on /newroot, with fresh proc, sys,
#    devtmpfs and tmpfs mounts, and the writable host share (9p tag "share") at its host path,
#    and, if the host asked for it (a checkout under a path the guest covers with tmpfs), the
#    source tree read-only (9p tag "src") at its host path,
# 3. brings up lo and dummy0 (10.0.0.1/24) and the soft-RoCE device rxe0 on dummy0; or, as
#    node N of a pair (scripts/vm/pair.sh), eth0 (the virtio link) = 10.0.1.N/24 and rxe0 on it;
#    with wireup.rails=2 a second rail beside it (below),
# 4. runs the command script command.sh left in SHARE/.wireup-vm/RUN/ inside the chroot,
# 5. writes the exit status next to it and powers off (sysrq o).
#
# Kernel command line parameters: wireup.run=RUN (required), wireup.verbose=1, wireup.node=N
# (1 or 2: one node of a pair), wireup.rails=2 (a second rail: dummy1 = 10.0.2.1/24 with rxe1
# in one guest; eth1 = 10.0.2.N/24 with rxe1 on a node of a pair), wireup.rail_names=swapped
# (a node of a pair names its rails the other way round: rxe1 on eth0, rxe0 on eth1, so that
# pairing by name would cross subnets).

export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/null >/dev/console 2>&1

poweroff_now() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 30
}
fail() {
  echo "wireup-vm: init: $*"
  poweroff_now
}

RUN=""
VERBOSE=0
NODE=
RAILS=1
RAIL_NAMES=straight
# shellcheck disable=SC2013  # the command line is one line of words
for w in $(cat /proc/cmdline); do
  case "$w" in
    wireup.run=*) RUN=${w#wireup.run=} ;;
    wireup.verbose=1) VERBOSE=1 ;;
    wireup.node=[12]) NODE=${w#wireup.node=} ;;
    wireup.rails=[12]) RAILS=${w#wireup.rails=} ;;
    wireup.rail_names=swapped) RAIL_NAMES=swapped ;;
  esac
done
[ -n "$RUN" ] || fail "no wireup.run= on the kernel command line"
[ "$VERBOSE" = 1 ] && set -x

while read -r mod args; do
  [ -n "$mod" ] || continue
  # shellcheck disable=SC2086  # args are word lists by design
  insmod "/lib/modules/$mod.ko" $args || fail "insmod $mod $args failed"
done </lib/modules/load.list

opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot || fail "cannot mount the host root (9p hostroot)"
mount -t 9p -o "$opts,cache=mmap" share /share || fail "cannot mount the share (9p share)"
RUNDIR=/share/.wireup-vm/$RUN
[ -f "$RUNDIR/share_path" ] || fail "$RUNDIR/share_path missing"
SHARE_PATH=$(cat "$RUNDIR/share_path")

R=/newroot
mount -t proc proc $R/proc || fail "mount proc"
mount -t sysfs sysfs $R/sys || fail "mount sysfs"
mount -t devtmpfs devtmpfs $R/dev || fail "mount devtmpfs"
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
for d in /tmp /run /var/tmp; do
  [ -d "$R$d" ] && mount -t tmpfs -o mode=1777 tmpfs "$R$d"
done
if [ -f "$RUNDIR/src_path" ]; then
  SRC_PATH=$(cat "$RUNDIR/src_path")
  mount -t 9p -o "$opts,ro,cache=loose" src /src || fail "cannot mount the source tree (9p src)"
  mkdir -p "$R$SRC_PATH" 2>/dev/null
  mount -o bind /src "$R$SRC_PATH" || fail "cannot bind the source tree to $SRC_PATH"
fi
mkdir -p "$R$SHARE_PATH" 2>/dev/null # succeeds only below a tmpfs; elsewhere it exists already
mount -o bind /share "$R$SHARE_PATH" || fail "cannot bind the share to $SHARE_PATH"

NAME=wireup-vm
[ -n "$NODE" ] && NAME=wireup-node$NODE
hostname $NAME
echo $NAME >/proc/sys/kernel/hostname
in_root() { chroot $R "$@"; }
in_root ip link set lo up || fail "ip link set lo up"
# rail K (0 or 1) of this guest: its netdev, subnet 10.0.(K+1).0/24 on a pair (10.0.0.0/24 and
# 10.0.2.0/24 in one guest, 10.0.0.1 staying the single guest's address), and its rxe name.
rail_up() {
  k=$1 name=rxe$1
  [ "$RAIL_NAMES" = swapped ] && name=rxe$((1 - k))
  if [ -n "$NODE" ]; then
    # One node of a pair: virtio NIC K is a link to the other guest (a qemu socket netdev on
    # the host's loopback); both guests use 10.0.(K+1).0/24 on it, nothing else is reachable.
    dev=eth$k addr=10.0.$((k + 1)).$NODE/24
    in_root ip link set $dev up || fail "ip link set $dev up (no virtio NIC $k?)"
  else
    dev=dummy$k addr=10.0.$((2 * k)).1/24
    in_root ip link add $dev type dummy || fail "ip link add $dev"
    in_root ip link set $dev up || fail "ip link set $dev up"
  fi
  in_root ip addr add $addr dev $dev || fail "ip addr add $addr dev $dev"
  in_root rdma link add $name type rxe netdev $dev || fail "rdma link add $name ($dev)"
  RXE_NAMES="$RXE_NAMES $name"
}
RXE_NAMES=
rail_up 0
[ "$RAILS" = 2 ] && rail_up 1
for name in $RXE_NAMES; do
  i=0
  until in_root rdma link show $name/1 2>/dev/null | grep -q 'state ACTIVE'; do
    i=$((i + 1))
    [ $i -le 100 ] || fail "$name did not become ACTIVE"
    usleep 50000
  done
done

# RDMA memory registration pins pages: lift the locked-memory limit (busybox ash has -l/-n).
# shellcheck disable=SC3045
ulimit -l unlimited 2>/dev/null
# shellcheck disable=SC3045
ulimit -n 65536 2>/dev/null
[ "$VERBOSE" = 1 ] && set +x

date +%s >"$RUNDIR/started" # its host mtime marks the end of the boot
echo "===== wireup-vm $RUN: command start ====="
chroot $R /usr/bin/env -i /bin/bash "$SHARE_PATH/.wireup-vm/$RUN/command.sh" </dev/null
rc=$?
echo "$rc" >"$RUNDIR/status"
echo "===== wireup-vm $RUN: command end, exit $rc ====="
poweroff_now
