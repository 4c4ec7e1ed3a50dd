#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test: the guest booted with the contract's environment, sees
# the extracted modules tree of its kernel, the source tree and a writable
# RESULTS, and can modprobe rdma_rxe.
set -euo pipefail
# shellcheck source=../guest-lib.sh
. "$VMTEST_LIB"
fail() { echo "FAIL: $*"; exit 1; }

for v in GUEST_INDEX GUEST_COUNT PLANES KVER METAROCE_SRC RESULTS; do
	[ -n "${!v:-}" ] || fail "$v not set"
	echo "$v=${!v}"
done
[ "$KVER" = "$(uname -r)" ] || fail "KVER $KVER != uname -r $(uname -r)"
[ "$(id -u)" = 0 ] || fail "not root"
[ -f "/lib/modules/$KVER/modules.dep" ] || fail "no /lib/modules/$KVER/modules.dep"
[ -f "$METAROCE_SRC/tests/vm/vmtest.sh" ] || fail "METAROCE_SRC=$METAROCE_SRC not visible"
echo ok >"$RESULTS/written-by-guest" || fail "RESULTS not writable"
# The root is an overlay: writes land in the guest only.
echo "driver vmtest-selftest" >/etc/libibverbs.d/vmtest-selftest.driver || fail "/etc not writable"
rm /etc/libibverbs.d/vmtest-selftest.driver

modprobe rdma_rxe || fail "modprobe rdma_rxe"
grep -q '^rdma_rxe ' /proc/modules || fail "rdma_rxe not in /proc/modules"
grep -q '^ib_core ' /proc/modules || fail "ib_core not loaded with rdma_rxe"
echo "loaded: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"
for ((p = 0; p < PLANES; p++)); do
	ip -br addr show dev "eth$p" | grep -q "$(vm_my_addr "$p")/24" || fail "eth$p lacks $(vm_my_addr "$p")/24"
done
vm_dmesg_check
echo "PASS: boot on $KVER"
