#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Requirement traceability check.
#   check_req_coverage.sh SPEC_DIR TEST_DIR...
# Fails unless every requirement ID defined in SPEC_DIR/*.md (as **MR-X-NNN**)
# is cited on a "covers:" line of some TEST_DIR/*.{c,cpp,sh}, every cited ID is
# defined, and SPEC_DIR/README.md (if present) indexes exactly the defined IDs.
set -euo pipefail

spec=$1
shift
id='MR-[A-Z]+-[0-9]{3}'

defined=$(cat "$spec"/*.md | grep -oE "\*\*$id\*\*" | tr -d '*' | sort -u)
# C and C++ tests and the guest test scripts.
cited=$(find "$@" -maxdepth 1 -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.sh' \) \
	-exec cat {} + | grep 'covers:' |
	grep -oE "$id" | sort -u)
status=0

if [ -z "$defined" ]; then
	echo "no requirement IDs defined in $spec" >&2
	exit 1
fi
uncovered=$(comm -23 <(echo "$defined") <(echo "$cited"))
unknown=$(comm -13 <(echo "$defined") <(echo "$cited"))
if [ -n "$uncovered" ]; then
	echo "requirements not covered by any test:" $uncovered >&2
	status=1
fi
if [ -n "$unknown" ]; then
	echo "tests cite undefined requirements:" $unknown >&2
	status=1
fi
if [ -f "$spec/README.md" ]; then
	indexed=$(grep -oE "^\| $id" "$spec/README.md" | cut -c3- | sort -u)
	if [ "$indexed" != "$defined" ]; then
		echo "requirement index in $spec/README.md is out of date:" >&2
		diff <(echo "$defined") <(echo "$indexed") >&2 || true
		status=1
	fi
fi
[ $status -eq 0 ] && echo "$(echo "$defined" | wc -l) requirements, all covered"
exit $status
