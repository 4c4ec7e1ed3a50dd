#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# /init of the testbed initramfs (busybox sh, PID 1). Built into
# initramfs.cpio.gz by tests/vm/fetch-kernel.sh.
#
# Loads the virtio/9p/overlay modules listed in /modules/order, mounts the
# host's / read-only over virtio-9p (tag "hostroot") with a tmpfs overlay on
# top, mounts the writable results share (tag "results") at its host path
# inside that root, the extracted modules tree over /lib/modules and the
# pseudo filesystems, and switches to that root to run tests/vm/guest-run.sh.
# The harness writes the paths into <results>/.vmtest/init.conf.
#
# All mounting happens here, with the static busybox from the initramfs:
# every dynamically linked program started from the 9p root costs a few
# tenths of a second under TCG.
export PATH=/bin

fail() {
	echo "VMTEST-INIT-FAILED: $*" >/dev/console
	poweroff -f
	sleep 5
	echo o >/proc/sysrq-trigger
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

while read -r m; do
	insmod "/modules/$m" || fail "insmod $m"
done </modules/order

p9="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || fail "mount hostroot (9p)"
mount -t 9p -o "$p9,cache=none" results /results || fail "mount results (9p)"
[ -f /results/.vmtest/init.conf ] || fail "no .vmtest/init.conf in the results share"
. /results/.vmtest/init.conf
[ -n "$RESULTS" ] && [ -n "$RUNNER" ] || fail "init.conf lacks RESULTS or RUNNER"

mount -t tmpfs -o mode=0755 overlay-rw /rw || fail "mount tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	fail "mount overlay"
n=/newroot
mkdir -p "$n$RESULTS" || fail "mkdir $RESULTS"
mount --move /results "$n$RESULTS" || fail "move results mount to $RESULTS"
[ -f "$n$RUNNER" ] || fail "$RUNNER not visible in the guest root"
if [ -n "$MODULES" ]; then
	[ -d "$n$MODULES" ] || fail "$MODULES not visible in the guest root"
	mount --bind "$n$MODULES" "$n/lib/modules" || fail "bind $MODULES on /lib/modules"
fi

umount /proc /sys
mount --move /dev $n/dev || fail "move /dev"
mount -t proc proc $n/proc
mount -t sysfs sysfs $n/sys
mkdir -p $n/dev/pts $n/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $n/dev/pts
mount -t tmpfs -o mode=1777 shm $n/dev/shm
mount -t tmpfs -o mode=0755 run $n/run
mount -t debugfs debugfs $n/sys/kernel/debug
mount -t configfs configfs $n/sys/kernel/config
mount -t tracefs tracefs $n/sys/kernel/tracing 2>/dev/null
ln -sf /proc/self/fd $n/dev/fd
ln -sf /proc/self/fd/0 $n/dev/stdin
ln -sf /proc/self/fd/1 $n/dev/stdout
ln -sf /proc/self/fd/2 $n/dev/stderr

exec switch_root $n /bin/bash "$RUNNER"
fail "switch_root failed"
