#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The testbed's one dmesg check. Sourced by vmtest.sh (applied to every
# guest's dmesg after its script) and by guest-lib.sh (vm_dmesg_check, for
# scripts that want to check mid-test); also runnable:
#
#   tests/vm/dmesg-check.sh [FILE]      (stdin without FILE)
#
# Fails (status 1) and prints the offending lines if any kernel line shows a
# warning splat, BUG, oops, GPF, KASAN/UBSAN report or refcount_t error. The
# taint notices printed when an unsigned out-of-tree module is loaded
# ("loading out-of-tree module taints kernel", "module verification failed")
# are expected and ignored; they match none of the patterns anyway.

VMTEST_DMESG_BAD='(^|[^[:alnum:]_])(WARNING:|BUG:|Oops|general protection|KASAN|UBSAN|refcount_t)'
VMTEST_DMESG_EXPECTED='(loading out-of-tree module taints kernel|module verification failed: signature and/or required key missing|Disabling lock debugging due to kernel taint)'

# vmtest_dmesg_check [FILE]: 0 if clean, 1 (and the bad lines on stdout) if
# not, 2 if the log cannot be read.
vmtest_dmesg_check() {
	local log bad
	if [ $# -gt 0 ]; then
		log=$(tr -d '\r' <"$1") || { echo "dmesg-check: cannot read $1"; return 2; }
	else
		log=$(tr -d '\r') || { echo "dmesg-check: cannot read stdin"; return 2; }
	fi
	bad=$(printf '%s\n' "$log" | grep -E -- "$VMTEST_DMESG_BAD" | grep -Ev -- "$VMTEST_DMESG_EXPECTED")
	if [ -n "$bad" ]; then
		printf '%s\n' "$bad"
		return 1
	fi
	return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	out=$(vmtest_dmesg_check "$@")
	rc=$?
	case $rc in
	0) echo "dmesg-check: clean" ;;
	1) echo "dmesg-check: FAILED:"; printf '%s\n' "$out" | head -n 20 | sed 's/^/  /' ;;
	*) echo "$out" ;;
	esac
	exit "$rc"
fi
