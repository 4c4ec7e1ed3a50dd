#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
#   tests/vm/selftest/expect.sh pass|fail PATTERN VMTEST_ARGS...
#
# Runs tests/vm/vmtest.sh VMTEST_ARGS... and succeeds only if it exits as
# expected (0 for pass; 1 for fail: a failed guest, not a usage or host
# error) and its output matches PATTERN (grep -E): proves the harness
# passes or fails a run for the reason given.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: expect.sh pass|fail PATTERN VMTEST_ARGS..."
case ${1:?$usage} in
pass) want=0 ;;
fail) want=1 ;;
*) echo "$usage" >&2; exit 2 ;;
esac
expect=$1
pattern=${2:?$usage}
shift 2
out=$("$here/vmtest.sh" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want" ]; then
	echo "expect: vmtest.sh exited $rc, expected $want ($expect)"
	exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
	echo "expect: vmtest.sh exited $rc as expected, but its output does not match '$pattern'"
	exit 1
fi
echo "expect: vmtest.sh ${expect}ed as expected ('$pattern')"
