#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# RoCEv2-mode interoperation with the kernel's rdma_rxe between two guests
# (issue 6's testbed), run by
#   tests/vm/vmtest.sh --guests 2 [--kernel VER] -- \
#       tests/vm/t-kernel-rxe-two-guests.sh BUILD_DIR
# Guest 0 runs mr0 (rdma_metaroce, module default_transport=rocev2) on
# eth0, guest 1 rxe0 (rdma_rxe, Debian's rdma-core) on eth0, across the
# qemu dgram link between them.  In both directions (guest 0 serves, then
# guest 1) the matrix of rxe-interop-lib.sh, the same as the one-guest
# t-kernel-rxe.sh: ibv_rc_pingpong --chk (64 B, 4 KiB), ibv_ud_pingpong,
# ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw and rping -v -V; each
# guest runs its side and checks its side's output.  Guest 0 captures the
# 4 KiB pingpong of each direction on eth0: both devices' RC packets must
# carry IBTA ICRCs that icrc-check.py recomputes.  Then guest 0: mr0
# counted no CRC, malformed-packet, wrong-transport or transmit error and
# no QP is left; guest 1: rxe0 received packets (it counts only those
# whose ICRC checked out) and logged no bad ICRC; both: dmesg is clean.
# Rates go to $RESULTS/results.txt of the client's guest (not asserted).
# covers: MR-COMPAT-001 MR-COMPAT-010 MR-COMPAT-012 MR-COMPAT-013
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"
. "$METAROCE_SRC/tests/vm/rxe-interop-lib.sh"

[ "$GUEST_COUNT" = 2 ] || fail "run with vmtest.sh --guests 2"
RXE_ITERS=${METAROCE_TEST_ITERS:-100}
RXE_MR_IP=$(vm_addr 0 0)
RXE_RXE_IP=$(vm_addr 1 0)
RXE_CAPTURE_DEV=

cleanup() {
	rxe_capture_stop
	rdma link delete "$dev" 2>/dev/null || :
}
if [ "$GUEST_INDEX" = 0 ]; then
	step "mr0 (RoCEv2 default) on eth0"
	dev=mr0
	vm_load_module "$(mr_ko "$build")" default_transport=rocev2 || fail "loading the module"
	trap cleanup EXIT
	rdma link add mr0 type metaroce netdev eth0 || fail "rdma link add mr0"
	mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
	vm_install_provider "$build" || fail "installing the provider"
	grep -qx rocev2 /sys/class/infiniband/mr0/default_transport ||
		fail "mr0's default transport is $(cat /sys/class/infiniband/mr0/default_transport)"
	RXE_CAPTURE_DEV=eth0
else
	step "rxe0 on eth0"
	dev=rxe0
	trap cleanup EXIT
	vm_rxe_add rxe0 eth0 || fail "rxe0"
	rxe_rcvd0=$(mr_counter rxe0 rcvd_pkts)
fi
gid=$(mr_gid_index "$dev")
RXE_UD_SIZE=$(ibv_devinfo -d "$dev" | awk '$1 == "active_mtu:" { print $2; exit }')
[ -n "$RXE_UD_SIZE" ] || fail "no active_mtu for $dev"
vm_wait_for_peer 60 0 || fail "the other guest is unreachable"

# rxe_sides DIRECTION: who serves (mr: guest 0, rxe: guest 1); each guest
# runs its own device in init_net.
rxe_sides() {
	local g=0
	[ "$1" = rxe ] && g=1
	export MR_SRV_GUEST=$g MR_SRV_NS=- MR_CLI_NS=-
	export MR_SRV_DEV=$dev MR_CLI_DEV=$dev MR_SRV_GID=$gid MR_CLI_GID=$gid
	server=$(vm_addr $g 0)
}

for dir in mr rxe; do
	rxe_interop "$dir"
done
vm_barrier matrix-done 300 || fail "the other guest did not finish the matrix"

step "counters and resources"
if [ "$GUEST_INDEX" = 0 ]; then
	rxe_check_mr_end
else
	rxe_check_rxe_end "$rxe_rcvd0"
fi

step "teardown"
cleanup
trap - EXIT
[ "$GUEST_INDEX" = 0 ] && { vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"; }
vm_dmesg_check || fail "dmesg"
cat "$RESULTS/results.txt" 2>/dev/null || :
echo "PASS: RoCEv2 interop with rdma_rxe in two guests, both directions, on $KVER"
