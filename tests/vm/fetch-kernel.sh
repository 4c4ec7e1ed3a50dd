#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Fetch a Debian kernel image package for the qemu testbed without installing
# it on the host, and build the guest initramfs for it.
#
#   tests/vm/fetch-kernel.sh [--cache DIR] [--quiet] [VER]
#
# VER is 6.1 (default), 6.12, or a full `uname -r` string from
# scripts/kernel-versions.sh. On success the kernel directory is printed on
# stdout; it holds
#   kver                 the uname -r string
#   vmlinuz              the kernel image
#   vmlinux              the same kernel decompressed (ELF, booted through its
#                        PVH entry: skips ~5 s of TCG decompression and BIOS)
#   root/lib/modules/    the extracted modules tree, with depmod run on it
#   initramfs.cpio.gz    busybox-static + the modules needed to reach 9p root
#
# Everything is cached under $METAROCE_VM_CACHE or
# ${XDG_CACHE_HOME:-$HOME/.cache}/metaroce-vm and reused on later calls; the
# initramfs is rebuilt when tests/vm/initramfs-init.sh or this script change.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)

die() { echo "fetch-kernel: $*" >&2; exit 1; }
say() { [ -n "$quiet" ] || echo "fetch-kernel: $*" >&2; }

cache=${METAROCE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metaroce-vm}
quiet=
ver=6.1
while [ $# -gt 0 ]; do
	case $1 in
	--cache) cache=$2; shift 2 ;;
	--cache=*) cache=${1#*=}; shift ;;
	--quiet|-q) quiet=1; shift ;;
	-h|--help) sed -n '4,20p' "$0"; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) ver=$1; shift ;;
	esac
done

# Modules the initramfs loads before it can mount the root (virtio_pci is a
# module in 6.1 and built in in 6.12; modprobe reports builtins itself) plus
# virtio_net so the plane NICs exist before the guest script runs.
INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay virtio_net)
BUSYBOX_APPLETS=(sh mount umount mkdir insmod switch_root chroot poweroff
	reboot cat echo sleep ls dmesg ln mknod)

# kernel_versions: scripts/kernel-versions.sh, whose apt-cache queries take
# seconds; its answer is kept in the cache until apt's package lists change.
kernel_versions() {
	local f=$cache/kernel-versions newest
	if [ -n "${METAROCE_KERNELS:-}" ]; then
		"$src/scripts/kernel-versions.sh"
		return
	fi
	newest=$(ls -t /var/lib/apt/lists/*_Packages* 2>/dev/null | head -n 1)
	if [ -s "$f" ] && { [ -z "$newest" ] || [ "$f" -nt "$newest" ]; }; then
		cat "$f"
		return
	fi
	mkdir -p "$cache"
	"$src/scripts/kernel-versions.sh" >"$f.$$" && mv "$f.$$" "$f" && cat "$f"
	rm -f "$f.$$"
}

resolve_kver() {
	local v=$1 k all
	case $v in
	*-amd64) echo "$v"; return ;;
	esac
	all=$(kernel_versions) || die "scripts/kernel-versions.sh failed"
	for k in $all; do
		case $k in
		"$v".*|"$v"-*) echo "$k"; return ;;
		esac
	done
	die "no kernel matching '$v' in scripts/kernel-versions.sh ($(echo $all))"
}

# extract_vmlinux BZIMAGE OUT: decompress the ELF kernel inside a bzImage
# (what the kernel's scripts/extract-vmlinux does). qemu boots it through
# the PVH entry point (CONFIG_PVH=y in Debian's kernels).
extract_vmlinux() {
	local in=$1 out=$2 magic dec pos
	for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
		dec=${magic%%:*}
		command -v "$dec" >/dev/null || continue
		for pos in $(LC_ALL=C grep -obUaP "${magic#*:}" "$in" 2>/dev/null | cut -d: -f1 | head -n 3); do
			case $dec in
			xz) tail -c +$((pos + 1)) "$in" | xz -dc --single-stream >"$out.tmp" 2>/dev/null ;;
			zstd) tail -c +$((pos + 1)) "$in" | zstd -qdc >"$out.tmp" 2>/dev/null ;;
			gzip) tail -c +$((pos + 1)) "$in" | gzip -dc >"$out.tmp" 2>/dev/null ;;
			esac
			if [ "$(head -c 4 "$out.tmp" | od -An -c | tr -d ' ')" = 177ELF ] &&
				LC_ALL=C grep -qaF 'Xen' "$out.tmp"; then
				mv "$out.tmp" "$out"
				return 0
			fi
		done
	done
	rm -f "$out.tmp"
	return 1
}

kver=$(resolve_kver "$ver")
kdir=$cache/$kver
mkdir -p "$kdir" || die "cannot create cache dir $kdir"

# Serialise concurrent fetches of the same kernel (parallel ctest runs).
exec 9>"$kdir/.lock"
flock 9

for t in apt-get dpkg depmod modprobe cpio gzip; do
	command -v "$t" >/dev/null || die "'$t' not found (run scripts/install-deps.sh)"
done

if [ ! -f "$kdir/.extracted" ]; then
	pkg=linux-image-$kver
	say "downloading $pkg"
	rm -rf "$kdir/dl" "$kdir/root" "$kdir/vmlinuz"
	mkdir -p "$kdir/dl"
	# apt-get download writes into the current directory. As root it warns
	# that the download is unsandboxed; that is expected.
	if ! (cd "$kdir/dl" && apt-get download -q "$pkg" 2>"$kdir/dl/apt.err" >/dev/null); then
		cat "$kdir/dl/apt.err" >&2
		die "apt-get download $pkg failed (apt-get update? is $kver still published?)"
	fi
	deb=$(ls "$kdir"/dl/*.deb)
	say "extracting $(basename "$deb")"
	dpkg -x "$deb" "$kdir/root"
	[ -f "$kdir/root/boot/vmlinuz-$kver" ] || die "$deb has no boot/vmlinuz-$kver"
	# usrmerge: some packages ship /lib/modules, others /usr/lib/modules.
	if [ ! -d "$kdir/root/lib/modules/$kver" ] && [ -d "$kdir/root/usr/lib/modules/$kver" ]; then
		mkdir -p "$kdir/root/lib"
		mv "$kdir/root/usr/lib/modules" "$kdir/root/lib/modules"
	fi
	[ -d "$kdir/root/lib/modules/$kver" ] || die "$deb has no lib/modules/$kver"
	say "depmod -b (6.12 .ko.xz takes ~10 s)"
	depmod -b "$kdir/root" "$kver"
	ln -sf "root/boot/vmlinuz-$kver" "$kdir/vmlinuz"
	echo "$kver" >"$kdir/kver"
	rm -rf "$kdir/dl"
	touch "$kdir/.extracted"
fi

if [ ! -f "$kdir/vmlinux" ] && [ ! -f "$kdir/.no-vmlinux" ]; then
	extract_vmlinux "$kdir/vmlinuz" "$kdir/vmlinux" || {
		say "no vmlinux extracted from vmlinuz; guests boot the bzImage (slower)"
		touch "$kdir/.no-vmlinux"
	}
fi

# The initramfs depends on the init script and on this script.
stamp=$(cat "$here/initramfs-init.sh" "$0" /bin/busybox 2>/dev/null | sha256sum | cut -c1-16)
if [ ! -f "$kdir/initramfs.cpio.gz" ] || [ "$(cat "$kdir/.initramfs-stamp" 2>/dev/null)" != "$stamp" ]; then
	bb=
	for b in /bin/busybox /usr/bin/busybox "$(command -v busybox || true)"; do
		[ -n "$b" ] && [ -x "$b" ] || continue
		# A static binary has no program interpreter.
		if command -v readelf >/dev/null && readelf -l "$b" 2>/dev/null | grep -q 'program interpreter'; then
			continue
		fi
		bb=$b; break
	done
	[ -n "$bb" ] || die "no statically linked busybox found (apt-get install busybox-static)"
	say "building initramfs for $kver"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp"/{bin,dev,proc,sys,modules,lower,rw,newroot,results}
	cp "$bb" "$tmp/bin/busybox"
	for a in "${BUSYBOX_APPLETS[@]}"; do ln -s busybox "$tmp/bin/$a"; done
	install -m 0755 "$here/initramfs-init.sh" "$tmp/init"
	: >"$tmp/modules/order"
	# modprobe prints the dependency closure in load order, one
	# "insmod PATH" per module (with repeats); keep the first of each.
	modprobe -d "$kdir/root" -S "$kver" --show-depends -a "${INITRAMFS_MODULES[@]}" |
		awk '$1 == "insmod" && !seen[$2]++ { print $2 }' |
		while read -r ko; do
			name=$(basename "$ko")
			case $name in
			*.ko.xz) xz -dc "$ko" >"$tmp/modules/${name%.xz}"; name=${name%.xz} ;;
			*.ko.zst) zstd -qdc "$ko" >"$tmp/modules/${name%.zst}"; name=${name%.zst} ;;
			*.ko.gz) gzip -dc "$ko" >"$tmp/modules/${name%.gz}"; name=${name%.gz} ;;
			*) cp "$ko" "$tmp/modules/$name" ;;
			esac
			echo "$name" >>"$tmp/modules/order"
		done
	[ -s "$tmp/modules/order" ] || die "no initramfs modules resolved for $kver"
	(cd "$tmp" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$kdir/initramfs.cpio.gz.new"
	mv "$kdir/initramfs.cpio.gz.new" "$kdir/initramfs.cpio.gz"
	echo "$stamp" >"$kdir/.initramfs-stamp"
	say "initramfs: $(tr '\n' ' ' <"$tmp/modules/order")"
fi

echo "$kdir"
