#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdma_metaroce.ko load/unload, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-load.sh BUILD_DIR
#
# Ten rounds of insmod / rdma link add / rmmod: odd rounds delete the
# devices first, even rounds unload with two devices present.  After each
# round the devices and the module must be gone and the netdevs must be
# deletable (a leaked netdev reference would block "ip link del").
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

ko=$(mr_ko "$build")
for round in $(seq 1 10); do
	step "round $round"
	mr_load "$ko"
	mr_veth mrv0 mrv1
	rdma link add mr0 type metaroce netdev mrv0
	rdma link add mr1 type metaroce netdev mrv1
	mr_dev_exists mr0 && mr_dev_exists mr1 || fail "devices not created"
	if ((round % 2)); then
		rdma link delete mr0
		rdma link delete mr1
		mr_dev_gone mr0 && mr_dev_gone mr1 || fail "devices left after delete"
	fi
	mr_unload
	mr_dev_gone mr0 && mr_dev_gone mr1 || fail "devices left after rmmod"
	[ -z "$(rdma link show)" ] || fail "rdma link still lists: $(rdma link show)"
	timeout 60 ip link del mrv0 || fail "ip link del mrv0 blocked or failed"
done
echo "PASS: 10 load/unload rounds on $KVER"
