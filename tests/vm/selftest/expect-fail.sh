#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
#   tests/vm/selftest/expect-fail.sh PATTERN VMTEST_ARGS...
#
# Runs tests/vm/vmtest.sh VMTEST_ARGS... and succeeds only if it exits 1 (a
# failed guest, not a usage or host error) and its summary matches PATTERN
# (grep -E): proves the harness fails runs for the reason given.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pattern=${1:?usage: expect-fail.sh PATTERN VMTEST_ARGS...}
shift
out=$("$here/vmtest.sh" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 1 ]; then
	echo "expect-fail: vmtest.sh exited $rc, expected 1"
	exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
	echo "expect-fail: vmtest.sh failed, but its output does not match '$pattern'"
	exit 1
fi
echo "expect-fail: vmtest.sh failed as expected ('$pattern')"
