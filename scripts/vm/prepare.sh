#!/usr/bin/env bash
# prepare.sh CACHE_DIR
#
# Builds (once) what scripts/vm/run.sh boots: Debian's stock amd64 kernel and a small
# initramfs (busybox-static + the virtio/9p/dummy/RDMA modules + scripts/vm/init.sh).
#
# Everything lives in CACHE_DIR; the results are
#   CACHE_DIR/vmlinuz      the kernel image
#   CACHE_DIR/initrd.gz    the initramfs (gzip'ed newc cpio)
#   CACHE_DIR/kver         the kernel release string
# Idempotent: with a warm cache it downloads nothing and returns in a few milliseconds.
# The initramfs is rebuilt whenever init.sh, this script, the kernel or busybox changes.
set -euo pipefail

die() { echo "vm-prepare: error: $*" >&2; exit 1; }
log() { echo "vm-prepare: $*" >&2; }

(($# == 1)) || die "usage: $0 CACHE_DIR"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INIT_SRC=$HERE/init.sh
[ -f "$INIT_SRC" ] || die "missing $INIT_SRC"

mkdir -p "$1"
CACHE=$(cd "$1" && pwd)

# Modules the guest needs; their dependencies are resolved with modprobe --show-depends.
# crc32_generic: rdma_rxe asks the crypto API for "crc32" at runtime (not a symbol dependency).
# veth + sch_netem: tests/vm/faults builds a RoCE path across a veth pair and loses/delays on it.
# virtio_net: the pair's link (scripts/vm/pair.sh), a virtio NIC on a qemu socket netdev.
# sch_ingress + cls_matchall + act_gact: a partition cut on one node in both directions
# (netem drops what leaves, a matchall drop on ingress what arrives: tests/twonode/suite.sh).
MODULES=(virtio_pci 9pnet_virtio 9p dummy crc32_generic veth sch_netem sch_ingress cls_matchall act_gact virtio_net
         ib_uverbs rdma_ucm rdma_rxe)
# Extra insmod arguments. numdummies=0: otherwise the module creates dummy0 itself.
declare -A MODARGS=([dummy]="numdummies=0")

for tool in apt-cache apt-get dpkg depmod modprobe cpio gzip sha256sum flock; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/install-deps.sh)"
done
BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
  # The initramfs has no libc: only a statically linked busybox (busybox-static) will do.
  if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then BUSYBOX=$b; break; fi
done
[ -n "$BUSYBOX" ] || die "no statically linked busybox found (apt-get install busybox-static)"

# One prepare at a time per cache (run.sh may be started concurrently).
exec 9>"$CACHE/.lock"
flock 9

# --- 1. which kernel package? -------------------------------------------------------------
# apt-cache takes ~1 s on this machine kind (its binary cache is disabled), so the answer is
# memoised, keyed on the apt package lists: an `apt-get update` that changes them re-resolves.
lists_key() {
  { stat -c '%n %s %Y' /var/lib/apt/lists/*_Packages* 2>/dev/null || true; } | sha256sum | cut -c1-32
}
resolve_kpkg() {
  LC_ALL=C apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }'
}
apt_update() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq </dev/null || die "apt-get update failed"
}
KEY=$(lists_key)
KPKG=""
if [ -f "$CACHE/kpkg" ] && [ "$(sed -n 1p "$CACHE/kpkg")" = "$KEY" ]; then
  KPKG=$(sed -n 2p "$CACHE/kpkg")
fi
if [ -z "$KPKG" ]; then
  KPKG=$(resolve_kpkg || true)
  if [ -z "$KPKG" ]; then
    log "apt-cache knows no linux-image-amd64: running apt-get update"
    apt_update
    KEY=$(lists_key)
    KPKG=$(resolve_kpkg || true)
    [ -n "$KPKG" ] || die "cannot resolve the package linux-image-amd64 depends on"
  fi
  printf '%s\n%s\n' "$KEY" "$KPKG" >"$CACHE/kpkg"
fi

# --- 2. download the .deb (once) -------------------------------------------------------------
mkdir -p "$CACHE/debs"
rm -rf "$CACHE"/debs/.dl.* "$CACHE"/.initramfs.* # leftovers of an interrupted run
shopt -s nullglob
debs=("$CACHE/debs/${KPKG}_"*.deb)
attempt=1
while ((${#debs[@]} == 0)); do
  log "downloading $KPKG (about 70 MB, once)"
  dl=$(mktemp -d "$CACHE/debs/.dl.XXXXXX")
  # As root, apt drops to the _apt user for downloads; that user cannot write into an
  # arbitrary (root-owned) cache directory, so apt would warn and fall back to root anyway.
  sandbox=()
  [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
  if (cd "$dl" && apt-get download -q "${sandbox[@]}" "$KPKG" </dev/null >&2); then
    got=("$dl"/*.deb)
    ((${#got[@]} == 1)) || { rm -rf "$dl"; die "apt-get download produced ${#got[@]} files"; }
    mv "${got[0]}" "$CACHE/debs/"
    rm -rf "$dl"
    # Older kernel packages are no longer needed.
    for old in "$CACHE"/debs/*.deb; do
      [ "$old" = "$CACHE/debs/$(basename "${got[0]}")" ] || rm -f "$old"
    done
  else
    rm -rf "$dl"
    ((attempt == 1)) || die "apt-get download $KPKG failed"
    # Stale package lists name a version the archive no longer has: refresh them once.
    log "download failed: running apt-get update and retrying"
    apt_update
    KEY=$(lists_key)
    KPKG=$(resolve_kpkg || true)
    [ -n "$KPKG" ] || die "cannot resolve the package linux-image-amd64 depends on"
    printf '%s\n%s\n' "$KEY" "$KPKG" >"$CACHE/kpkg"
  fi
  attempt=$((attempt + 1))
  debs=("$CACHE/debs/${KPKG}_"*.deb)
done
DEB=${debs[-1]}

# --- 3. unpack + depmod (once per .deb) ----------------------------------------------------
TREE=$CACHE/kernel/$(basename "$DEB" .deb)
if [ ! -f "$TREE/.unpacked" ]; then
  log "unpacking $(basename "$DEB")"
  rm -rf "$TREE" "$TREE.tmp"
  mkdir -p "$TREE.tmp"
  dpkg -x "$DEB" "$TREE.tmp"
  kvers=("$TREE.tmp"/lib/modules/*)
  ((${#kvers[@]} == 1)) || die "expected one kernel release in $DEB, found ${#kvers[@]}"
  kv=$(basename "${kvers[0]}")
  [ -f "$TREE.tmp/boot/vmlinuz-$kv" ] || die "no boot/vmlinuz-$kv in $DEB"
  depmod -b "$TREE.tmp" "$kv"
  echo "$kv" >"$TREE.tmp/.kver"
  touch "$TREE.tmp/.unpacked"
  mv "$TREE.tmp" "$TREE"
  # Trees of older kernel packages are no longer needed.
  for old in "$CACHE"/kernel/*; do
    [ "$old" = "$TREE" ] || rm -rf "$old"
  done
fi
KVER=$(cat "$TREE/.kver")

# --- 3b. uncompressed kernel for a PVH boot (once per .deb) -------------------------------
# Under TCG the bzImage's own xz decompressor takes ~5 s of every boot. A kernel built with
# CONFIG_PVH=y (Debian's is) can instead be booted by qemu as the plain ELF vmlinux, so unpack
# it here once. run.sh uses CACHE_DIR/vmlinux when it exists and vmlinuz otherwise.
extract_vmlinux() { # BZIMAGE OUT: find the embedded compressed payload, keep the first ELF
  local img=$1 out=$2 magic tool off
  for magic in $'\xfd7zXZ:xz -dc --single-stream' $'\x28\xb5\x2f\xfd:zstd -qdc' \
               $'\x1f\x8b\x08:gzip -dc'; do
    tool=${magic#*:}; magic=${magic%%:*}
    command -v "${tool%% *}" >/dev/null || continue
    for off in $(LC_ALL=C grep -aboF -- "$magic" "$img" 2>/dev/null | cut -d: -f1 | head -5); do
      tail -c +$((off + 1)) "$img" | $tool >"$out" 2>/dev/null
      [ "$(head -c 4 "$out" 2>/dev/null)" = $'\x7fELF' ] && return 0
    done
  done
  rm -f "$out"
  return 1
}
if [ "$(cat "$CACHE/vmlinux.src" 2>/dev/null)" != "$(basename "$DEB")" ]; then
  rm -f "$CACHE/vmlinux" "$CACHE/vmlinux.src"
  if grep -qx 'CONFIG_PVH=y' "$TREE/boot/config-$KVER" 2>/dev/null; then
    if extract_vmlinux "$TREE/boot/vmlinuz-$KVER" "$CACHE/vmlinux.tmp"; then
      mv "$CACHE/vmlinux.tmp" "$CACHE/vmlinux"
    else
      log "note: could not extract vmlinux; booting the compressed vmlinuz (slower)"
    fi
  fi
  basename "$DEB" >"$CACHE/vmlinux.src"
fi

# --- 4. initramfs (rebuilt when any input changes) ------------------------------------------
STAMP=$( {
  echo "kernel $DEB $KVER"
  echo "modules ${MODULES[*]}"
  for m in "${!MODARGS[@]}"; do echo "args $m ${MODARGS[$m]}"; done | sort
  stat -L -c 'busybox %s %Y' "$BUSYBOX"
  sha256sum "$INIT_SRC" "${BASH_SOURCE[0]}" | cut -d' ' -f1
} | sha256sum | cut -c1-64)

if [ -f "$CACHE/initrd.gz" ] && [ -f "$CACHE/vmlinuz" ] &&
   [ "$(cat "$CACHE/initrd.stamp" 2>/dev/null)" = "$STAMP" ]; then
  exit 0
fi

log "building initramfs for $KVER"
STAGE=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"/{bin,dev,proc,sys,tmp,newroot,share,src,lib/modules,etc}
ln -s bin "$STAGE/sbin"
cp "$BUSYBOX" "$STAGE/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$STAGE/bin/$applet"
done
install -m 0755 "$INIT_SRC" "$STAGE/init"
# The kernel opens /dev/console for init before anything is mounted; init re-opens it after
# mounting devtmpfs anyway, so a missing node (non-root build) only loses nothing important.
mknod -m 600 "$STAGE/dev/console" c 5 1 2>/dev/null || true

# Resolve the load order: dependencies first, each module once.
declare -A seen=()
order=()
for mod in "${MODULES[@]}"; do
  out=$(modprobe -C /dev/null -d "$TREE" -S "$KVER" --show-depends "$mod" 2>&1) ||
    die "modprobe --show-depends $mod: $out"
  while read -r kind path _; do
    [ "$kind" = insmod ] || continue # "builtin NAME": compiled into the kernel
    name=$(basename "$path"); name=${name%%.ko*}; name=${name//-/_}
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=1
    case "$path" in
      *.ko) cp "$path" "$STAGE/lib/modules/$name.ko" ;;
      *.ko.xz) xz -dc "$path" >"$STAGE/lib/modules/$name.ko" ;;
      *.ko.zst) zstd -qdc "$path" >"$STAGE/lib/modules/$name.ko" ;;
      *.ko.gz) gzip -dc "$path" >"$STAGE/lib/modules/$name.ko" ;;
      *) die "unexpected module file $path" ;;
    esac
    order+=("$name")
  done <<<"$out"
done
for name in "${order[@]}"; do
  echo "$name ${MODARGS[$name]:-}"
done >"$STAGE/lib/modules/load.list"
echo "$KVER" >"$STAGE/etc/kver"

(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
  gzip -6 >"$CACHE/initrd.gz.tmp"
mv "$CACHE/initrd.gz.tmp" "$CACHE/initrd.gz"
cp "$TREE/boot/vmlinuz-$KVER" "$CACHE/vmlinuz.tmp"
mv "$CACHE/vmlinuz.tmp" "$CACHE/vmlinuz"
echo "$KVER" >"$CACHE/kver"
echo "$STAMP" >"$CACHE/initrd.stamp"
log "initramfs: ${#order[@]} modules (${order[*]}), $(du -k "$CACHE/initrd.gz" | cut -f1) KiB"
