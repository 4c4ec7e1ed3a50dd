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
# provider built in this tree and Debian's rdma-core for rxe:
#   - ibv_rc_pingpong --chk at 64 B and 4 KiB (> MTU: several packets per
#     message), ibv_ud_pingpong at the path MTU;
#   - ib_write_bw, ib_read_bw, ib_send_bw (64 KiB) and ib_atomic_bw;
#     perftest hands each QP the peer's READ/atomic depth, 128 from rxe,
#     which mr0 clamps to its 16 (MR-COMPAT-013);
#   - rping -v -V -C 200 (rdma_cm; SEND, READ and WRITE, buffers checked).
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

iters=${METAROCE_TEST_ITERS:-100}
rxe_ip=10.89.0.1
mr_ip=10.89.0.2

cleanup() {
	kill "${tcpdump_pid:-}" 2>/dev/null || :
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
mtu=$(ibv_devinfo -d mr0 | awk '$1 == "active_mtu:" { print $2; exit }')
[ -n "$mtu" ] || fail "no active_mtu for mr0"
rxe_rcvd0=$(mr_counter rxe0 rcvd_pkts)

# sides DIRECTION: who serves (mr: mr0 in mra; rxe: rxe0 in init_net).
sides() {
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

# peer TAG PROGRAM ARGS...: the same ARGS on both sides, plus the server
# address for the client; out-of-band exchange on TCP 18515.
peer() {
	local tag=$1 prog=$2
	shift 2
	mr_peer "$tag" tcp:18515 "$prog" "$@" -- "$@" "$server"
}

# pingpong DIR PROGRAM SIZE [ARGS...]: a pingpong, its rate recorded.
pingpong() {
	local dir=$1 prog=$2 size=$3 line
	shift 3
	step "$prog $size B x $iters ($dir server)"
	peer "$dir-$prog-$size" "$prog" -d @DEV@ -g @GID@ -s "$size" -n "$iters" "$@"
	line=$(grep -h 'bytes in\|iters in' "cli-$dir-$prog-$size.txt" | tr '\n' ' ') ||:
	[ -n "$line" ] || fail "$prog $size: no result"
	echo "$dir server $prog $size B: $line" | tee -a "$RESULTS/results.txt"
}

# perf DIR PROGRAM SIZE: one perftest program; its result row must be there.
perf() {
	local dir=$1 prog=$2 size=$3 row
	step "$prog $size B ($dir server)"
	peer "$dir-$prog" "$prog" -d @DEV@ -x @GID@ -F -s "$size" -n "$iters"
	row=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/' "cli-$dir-$prog.txt") ||:
	[ -n "$row" ] || { cat "cli-$dir-$prog.txt"; fail "$prog: no result row for $size B"; }
	echo "$dir server $prog: $row" | tee -a "$RESULTS/results.txt"
}

for dir in mr rxe; do
	sides "$dir"
	# A few hundred packets of a checked pingpong, both ways, on the wire.
	tcpdump -i rxv0 -s 0 -U -w "$RESULTS/rxe-$dir.pcap" udp port 4791 2>"tcpdump-$dir.txt" &
	tcpdump_pid=$!
	vm_wait_until 10 grep -q 'listening on' "tcpdump-$dir.txt" || fail "tcpdump did not start"
	pingpong "$dir" ibv_rc_pingpong 4096 --chk
	kill -INT "$tcpdump_pid"
	wait "$tcpdump_pid" || :
	tcpdump_pid=
	python3 "$METAROCE_SRC/tests/vm/icrc-check.py" "$RESULTS/rxe-$dir.pcap" "$mr_ip" "$rxe_ip" |
		tee "icrc-$dir.txt" || fail "ICRC check of the $dir-server capture"

	pingpong "$dir" ibv_rc_pingpong 64 --chk
	pingpong "$dir" ibv_ud_pingpong "$mtu"
	perf "$dir" ib_write_bw 65536
	perf "$dir" ib_read_bw 65536
	perf "$dir" ib_send_bw 65536
	perf "$dir" ib_atomic_bw 8

	step "rping -v -V -C 200 ($dir server)"
	mr_peer "$dir-rping" cm:7174 rping -s -a "$server" -v -V -C 200 -- -c -a "$server" -v -V -C 200
	n=$(grep -cE '^ping data: rdma-ping-[0-9]+: ' "cli-$dir-rping.txt") || :
	[ "$n" = 200 ] || fail "rping client ($dir server) printed $n pings, expected 200"
done

step "counters and resources"
ip netns exec mra rdma statistic show link mr0/1 | tee "$RESULTS/stats-mr0.txt"
rdma statistic show link rxe0/1 | tee "$RESULTS/stats-rxe0.txt"
for c in rx_bad_crc rx_malformed rx_wrong_transport tx_errors; do
	[ "$(mr_counter mr0 $c)" = 0 ] || fail "mr0 counted $c: $(cat "$RESULTS/stats-mr0.txt")"
done
[ "$(mr_counter mr0 rx_packets)" -gt 0 ] || fail "mr0 counted no received packets"
# rxe counts a packet as received only once its ICRC checked out.
rxe_rcvd=$(( $(mr_counter rxe0 rcvd_pkts) - rxe_rcvd0 ))
[ "$rxe_rcvd" -gt 0 ] || fail "rxe0 received no packet"
! dmesg | grep -i 'bad ICRC' || fail "rxe logged bad ICRCs"
[ "$(mr_res_count qp)" = 0 ] || fail "QPs left on mr0: $(rdma resource show qp)"
echo "rxe0 received $rxe_rcvd packets" | tee -a "$RESULTS/results.txt"

step "teardown"
cleanup
trap - EXIT
vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"
vm_dmesg_check || fail "dmesg"
cat "$RESULTS/results.txt"
echo "PASS: RoCEv2 interop with rdma_rxe, both directions, on $KVER"
