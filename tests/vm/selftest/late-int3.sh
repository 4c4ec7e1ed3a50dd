#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test (negative): the guest dies with an "Oops: int3" line
# after its script started, its registers a state a CPU can hold.  Only a
# crash before the script, or a CPU state no CPU can hold, is the
# emulator's and booted again; this one must fail the run at once.
echo "<1>Oops: int3: 0000 [#1] injected by tests/vm/selftest/late-int3.sh" >/dev/kmsg
echo "<1>RSP: 0018:ffffc90000013d38 EFLAGS: 00010246" >/dev/kmsg
echo "injected an Oops: int3 line; powering off without an exit status"
sync
echo o >/proc/sysrq-trigger
sleep 30
