#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
#   tests/vm/selftest/expect-pass.sh PATTERN VMTEST_ARGS...
#
# Runs tests/vm/vmtest.sh VMTEST_ARGS... and succeeds only if it exits 0 and
# its output matches PATTERN (grep -E): proves the harness passes a run for
# the reason given (e.g. after booting a crashed guest again).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pattern=${1:?usage: expect-pass.sh PATTERN VMTEST_ARGS...}
shift
out=$("$here/vmtest.sh" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
	echo "expect-pass: vmtest.sh exited $rc, expected 0"
	exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
	echo "expect-pass: vmtest.sh passed, but its output does not match '$pattern'"
	exit 1
fi
echo "expect-pass: vmtest.sh passed as expected ('$pattern')"
