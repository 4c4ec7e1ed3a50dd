#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Runs inside the guest as PID 1, in the overlay root (host / read-only plus a
# tmpfs upper layer), started by the initramfs /init once everything is
# mounted. Not for direct use.
#
# Sets the hostname and the plane addresses, runs the test script with the
# contract's environment, then leaves in $RESULTS:
#   output.log   the script's stdout and stderr
#   dmesg.txt    the kernel log after the script (dmesg.stream while running)
#   exit_status  the script's exit status (125: the guest setup failed)
#   timing       guest uptime when the script started and ended
# and powers the guest off. Uses builtins where it can: every program started
# from the 9p root costs a few tenths of a second under TCG.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8

con() { echo "vmtest: $*" >/dev/console; }

power_off() {
	sync
	/bin/busybox poweroff -f 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 10
	exit 1 # PID 1 exiting panics; with panic=-1 and -no-reboot qemu exits
}

setup_fail() {
	con "SETUP FAILED: $*"
	echo "vmtest guest setup failed: $*" >>"$RESULTS/output.log"
	echo 125 >"$RESULTS/exit_status"
	power_off
}

[ -n "${RESULTS:-}" ] || { con "RESULTS not set"; power_off; }
# shellcheck source=/dev/null
. "$RESULTS/.vmtest/env" || setup_fail "cannot read $RESULTS/.vmtest/env"

read -r KVER </proc/sys/kernel/osrelease
if [ ! -d "/lib/modules/$KVER/kernel" ] && [ -n "${VMTEST_MODULES:-}" ]; then
	mount --bind "$VMTEST_MODULES" /lib/modules # initramfs of an older harness
fi
[ -d "/lib/modules/$KVER/kernel" ] || setup_fail "/lib/modules/$KVER missing in $VMTEST_MODULES"

echo "vm$GUEST_INDEX" >/proc/sys/kernel/hostname
echo "vm$GUEST_INDEX" >/etc/hostname
{
	for ((g = 0; g < GUEST_COUNT; g++)); do
		for ((p = 0; p < PLANES; p++)); do
			echo "10.77.$p.$((g + 1)) vm$g-p$p"
		done
	done
} >>/etc/hosts

# One ip(8) run for all links.
{
	echo "link set lo up"
	for ((p = 0; p < PLANES; p++)); do
		echo "addr add 10.77.$p.$((GUEST_INDEX + 1))/24 dev eth$p"
		echo "link set eth$p up"
	done
} >/run/vmtest-net.batch
ip -batch /run/vmtest-net.batch >/run/vmtest-net.log 2>&1 ||
	setup_fail "network setup: $(</run/vmtest-net.log) (plane NICs: $(ls /sys/class/net))"

export GUEST_INDEX GUEST_COUNT PLANES KVER METAROCE_SRC RESULTS
export VMTEST_LIB="$METAROCE_SRC/tests/vm/guest-lib.sh"

# Self-test hook (vm_selftest_boot_retry in tests/vm/CMakeLists.txt): vmtest.inject=early-int3
# on the kernel command line makes the first boot attempt end as the
# emulator's boot-time crash does, an "Oops: int3" line and no script run;
# vmtest.sh must boot again and the second attempt runs the script.
read -r cmdline </proc/cmdline
if [[ " $cmdline " == *" vmtest.inject=early-int3 "* && " $cmdline " == *" vmtest.attempt=1 "* ]]; then
	echo "<1>Oops: int3: 0000 [#1] injected by the vmtest self-test (vmtest.inject=early-int3)" >/dev/kmsg
	power_off
fi
# vmtest.inject=early-hang (vm_selftest_boot_hang): the first attempt stops
# before its script as a guest hung while booting does.
if [[ " $cmdline " == *" vmtest.inject=early-hang "* && " $cmdline " == *" vmtest.attempt=1 "* ]]; then
	while :; do sleep 3600; done
fi

read -r up _ </proc/uptime
echo "script_start_uptime=$up" >"$RESULTS/timing"
: >"$RESULTS/.started" # its host mtime marks the boot-to-script time
dmesg -w >"$RESULTS/dmesg.stream" 2>&1 &
dmesg_pid=$!

con "guest $GUEST_INDEX ($KVER, up ${up}s): running $VMTEST_SCRIPT ${VMTEST_ARGS[*]}"
(cd "$RESULTS" && exec bash "$VMTEST_SCRIPT" "${VMTEST_ARGS[@]}") \
	>"$RESULTS/output.log" 2>&1 </dev/null
rc=$?
read -r up _ </proc/uptime
echo "script_end_uptime=$up" >>"$RESULTS/timing"

kill "$dmesg_pid" 2>/dev/null
dmesg >"$RESULTS/dmesg.txt" 2>&1
echo "$rc" >"$RESULTS/exit_status"
con "guest $GUEST_INDEX: script exit status $rc"
power_off
