#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test: the emulator corrupts the guest's CPU state after its
# script started.  The first boot dies with an oops whose RFLAGS has
# reserved bits set (the value of a 6.12 guest's real "Oops: double
# fault"), which no x86-64 CPU can hold: the run is booted again, and the
# second boot passes.
if grep -qw 'vmtest.attempt=1' /proc/cmdline; then
	echo "<1>Oops: double fault: 0000 [#1] injected by tests/vm/selftest/late-emulator-rflags.sh" >/dev/kmsg
	echo "<1>RSP: 0018:ffffc9000061ba80 EFLAGS: 062bde9a" >/dev/kmsg
	echo "injected an oops with an impossible RFLAGS; powering off without an exit status"
	sync
	echo o >/proc/sysrq-trigger
	sleep 30
fi
echo "boot $(grep -o 'vmtest.attempt=[0-9]*' /proc/cmdline): nothing injected"
