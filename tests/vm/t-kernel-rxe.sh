#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# RoCEv2-mode interoperation with a second implementation, the kernel's
# own rdma_rxe, in one guest:
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-rxe.sh BUILD_DIR
#
# rdma_rxe works only in init_net, while rdma_metaroce opens its sockets in
# the netdev's namespace: rxe0 sits on rxv0 (10.89.0.1, init_net), mr0
# (module default_transport=rocev2) on the other end of the veth pair,
# veth0 in netns mra (10.89.0.2), so each has its own UDP 4791.  In both
# directions (mr0 server / rxe0 client, and the reverse), through the
# provider built in this tree and Debian's rdma-core for rxe, the matrix of
# rxe-interop-lib.sh: ibv_rc_pingpong --chk (64 B, 4 KiB), ibv_ud_pingpong,
# ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw and rping -v -V.
# (t-kernel-rxe-two-guests.sh runs the same between two guests.)
# A tcpdump capture of a pingpong in each direction must hold RC packets
# from both sides whose IBTA ICRC icrc-check.py recomputes correctly; rxe
# counted received packets (it counts only those whose ICRC it verified)
# and logged no "bad ICRC"; mr0 counted no CRC, malformed-packet or
# transmit error; dmesg is clean.  Throughputs and pingpong rates go to
# $RESULTS/results.txt (reported, not asserted: the testbed is TCG).
# covers: MR-COMPAT-001 MR-COMPAT-010 MR-COMPAT-012 MR-COMPAT-013
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"
. "$METAROCE_SRC/tests/vm/rxe-interop-lib.sh"

RXE_ITERS=${METAROCE_TEST_ITERS:-100}
rxe_ip=10.89.0.1
mr_ip=10.89.0.2
RXE_RXE_IP=$rxe_ip
RXE_MR_IP=$mr_ip
# Both directions pass the veth end in init_net.
RXE_CAPTURE_DEV=rxv0

cleanup() {
	rxe_capture_stop
	rdma link delete rxe0 2>/dev/null || :
	rdma link delete mr0 2>/dev/null || :
	ip link del rxv0 2>/dev/null || :
	ip netns del mra 2>/dev/null || :
}
trap cleanup EXIT

step "rxe0 on rxv0 (init_net), mr0 (RoCEv2 default) on veth0 (netns mra)"
# rdma_rxe first, as where both would want 4791 in one namespace
# (t-provider-basic.sh); here they are in two and both get it.
modprobe rdma_rxe || fail "modprobe rdma_rxe"
vm_load_module "$(mr_ko "$build")" default_transport=rocev2 || fail "loading the module"
ip netns add mra || fail "ip netns add mra"
ip link add rxv0 type veth peer name veth0 netns mra || fail "veth rxv0/veth0"
ip addr add "$rxe_ip/24" dev rxv0 && ip link set rxv0 up || fail "rxv0 up"
ip -n mra -batch - <<-EOF || fail "veth0 in mra"
	addr add $mr_ip/24 dev veth0
	link set lo up
	link set veth0 up
EOF
vm_rxe_add rxe0 rxv0 || fail "rxe0"
ip netns exec mra rdma link add mr0 type metaroce netdev veth0 || fail "rdma link add mr0"
mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
mr_wait "mr0's IPv4 GID" grep -q 'ffff:0a59:0002' -r /sys/class/infiniband/mr0/ports/1/gids/
mr_wait "rxe0's IPv4 GID" grep -q 'ffff:0a59:0001' -r /sys/class/infiniband/rxe0/ports/1/gids/
vm_install_provider "$build" || fail "installing the provider"
mr_gid=$(mr_gid_index mr0)
rxe_gid=$(mr_gid_index rxe0)
grep -qx rocev2 /sys/class/infiniband/mr0/default_transport ||
	fail "mr0's default transport is $(cat /sys/class/infiniband/mr0/default_transport)"
RXE_UD_SIZE=$(ibv_devinfo -d mr0 | awk '$1 == "active_mtu:" { print $2; exit }')
[ -n "$RXE_UD_SIZE" ] || fail "no active_mtu for mr0"
rxe_rcvd0=$(mr_counter rxe0 rcvd_pkts)

# rxe_sides DIRECTION: who serves (mr: mr0 in mra; rxe: rxe0 in init_net).
rxe_sides() {
	if [ "$1" = mr ]; then
		export MR_SRV_NS=mra MR_SRV_DEV=mr0 MR_SRV_GID=$mr_gid
		export MR_CLI_NS=- MR_CLI_DEV=rxe0 MR_CLI_GID=$rxe_gid
		server=$mr_ip
	else
		export MR_SRV_NS=- MR_SRV_DEV=rxe0 MR_SRV_GID=$rxe_gid
		export MR_CLI_NS=mra MR_CLI_DEV=mr0 MR_CLI_GID=$mr_gid
		server=$rxe_ip
	fi
}

for dir in mr rxe; do
	rxe_interop "$dir"
done

step "counters and resources"
rxe_check_mr_end
rxe_check_rxe_end "$rxe_rcvd0"

step "teardown"
cleanup
trap - EXIT
vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"
vm_dmesg_check || fail "dmesg"
cat "$RESULTS/results.txt"
echo "PASS: RoCEv2 interop with rdma_rxe, both directions, on $KVER"
