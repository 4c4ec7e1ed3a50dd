#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# UD QPs, the GSI QP1 and rdma_cm connection setup on rdma_metaroce.ko,
# with unmodified upstream programs (ibverbs-utils, rdmacm-utils,
# perftest) through the provider built in this tree, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-ud.sh BUILD_DIR [MODE]
# MODE is the module's default_transport (metaroce or rocev2); UD is IBTA
# RoCEv2 UD on UDP 4791 in both (MR-COMPAT-010).
#
# mr0 in netns mra is the server, mr1 in netns mrb the client:
#   - tests/progs/metaroce_ud_test: UD datagrams mr1 -> mr0 over IPv4 and
#     IPv6 GIDs, every field of the receive completion and the GRH area,
#     sizes up to the path MTU; a wrong Q_Key is dropped and counted
#     (rx_bad_qkey goes up by exactly one), a send of MTU + 1 bytes fails
#     with EMSGSIZE;
#   - ibv_ud_pingpong at several sizes up to the path MTU;
#   - rdma_cm (ib_cm over the GSI QP1, then RC QPs moved to RTR/RTS with
#     the attributes the kernel computes): ucmatose, rping -v -V -C 1000,
#     ib_send_bw -R,
#     ib_write_bw -R and ib_send_lat -R;
# afterwards "rdma resource" lists no user QP, CQ, MR or PD of mr0/mr1
# (ib_mad's own QP1, PD and CQ stay with the device), no CRC or malformed
# drops were counted, the module unloads and dmesg is clean.
# covers: MR-COMPAT-010 (with tests/progs/metaroce_ud_test.cpp)
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [MODE]}")
mode=${2:-metaroce}
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

iters=${METAROCE_TEST_ITERS:-200}
server=10.88.0.1
ud_test=$build/tests/progs/metaroce_ud_test
[ -x "$ud_test" ] || fail "$ud_test not built"

# rdma_cm and its user-space interface; ib_mad is part of ib_core.
modprobe -a ib_cm rdma_cm rdma_ucm || fail "modprobe rdma_cm"
vm_load_module "$(mr_ko "$build")" default_transport="$mode" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"

step "GSI QP1 of ib_mad"
for d in mr0 mr1; do
	rdma resource show qp link "$d/1" | tee "qp1-$d.txt"
	grep -Eq "lqpn 1 type GSI state RTS .*comm \[ib_core\]" "qp1-$d.txt" ||
		fail "$d has no GSI QP1 in RTS"
done

# IPv6 GIDs (nodad: usable at once); index of DEV's GID for ADDR.
ip -n mra addr add fd88::1/64 dev veth0 nodad || fail "IPv6 address mra"
ip -n mrb addr add fd88::2/64 dev veth0 nodad || fail "IPv6 address mrb"
gid_of() {
	local g
	# One grep over the 1024 entries: a process per entry is slow in TCG.
	for g in $(grep -lx "$2" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null); do
		[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/${g##*/}")" = "RoCE v2" ] &&
			{ echo "${g##*/}"; return 0; }
	done
	return 1
}
mr_wait "IPv6 GIDs" eval "gid_of mr1 fd88:0000:0000:0000:0000:0000:0000:0002 >/dev/null"
gid6=$(gid_of mr0 fd88:0000:0000:0000:0000:0000:0000:0001) || fail "mr0 has no fd88::1 GID"
[ "$(gid_of mr1 fd88:0000:0000:0000:0000:0000:0000:0002)" = "$gid6" ] ||
	fail "mr0 and mr1 list their IPv6 GIDs at different indexes"

step "UD datagrams, Q_Key and size checks (metaroce_ud_test)"
bad_qkey=$(mr_counter mr0 rx_bad_qkey)
"$ud_test" --from mr1 --to mr0 --gid "$gid" --gid6 "$gid6" --iters "$iters" |
	tee ud-test.txt || fail "metaroce_ud_test"
bad_qkey=$(( $(mr_counter mr0 rx_bad_qkey) - bad_qkey ))
[ "$bad_qkey" = 1 ] || fail "rx_bad_qkey went up by $bad_qkey, expected 1 (one wrong-Q_Key datagram)"

mtu=$(ibv_devinfo -d mr0 | awk '$1 == "active_mtu:" { print $2; exit }')
[ -n "$mtu" ] || fail "no active_mtu for mr0"
for size in 64 $((mtu / 2)) "$mtu"; do
	step "ibv_ud_pingpong $size B x $iters"
	tag=ud-$size
	mr_peer "$tag" tcp:18515 ibv_ud_pingpong -d @DEV@ -g "$gid" -s "$size" -n "$iters" \
		-- -d @DEV@ -g "$gid" -s "$size" -n "$iters" "$server"
	line=$(grep -h 'bytes in' "cli-$tag.txt") || fail "ibv_ud_pingpong $size: no result"
	echo "$mode ibv_ud_pingpong $size B: $line" | tee -a "$RESULTS/results.txt"
done

step "ucmatose (rdma_cm, RC)"
mr_peer ucmatose cm:7471 ucmatose -b "$server" -- -s "$server"
grep -q "test complete" "cli-ucmatose.txt" || fail "ucmatose: no 'test complete'"
grep -q "test complete" "srv-ucmatose.txt" || fail "ucmatose server: no 'test complete'"

step "rping -v -V -C 1000 (rdma_cm, RC SEND, READ and WRITE)"
mr_peer rping cm:7174 rping -s -a "$server" -v -V -C 1000 -- -c -a "$server" -v -V -C 1000
# -V: each side compares the buffers; -v prints the pattern of every ping.
n=$(grep -cE '^ping data: rdma-ping-[0-9]+: ' "cli-rping.txt") || :
[ "$n" = 1000 ] || fail "rping client printed $n pings, expected 1000"
grep -q "ping data: rdma-ping-999: " "cli-rping.txt" || fail "rping: no ping 999"

# perf_cm PROGRAM SIZE: a perftest program over rdma_cm (-R); its result
# row must be there.
perf_cm() {
	local prog=$1 size=$2 row
	step "$prog -R $size B"
	mr_peer "$prog-R" cm:18515 "$prog" -d @DEV@ -R -F -s "$size" -n "$iters" \
		-- -d @DEV@ -R -F -s "$size" -n "$iters" "$server"
	row=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/' "cli-$prog-R.txt") ||:
	[ -n "$row" ] || { cat "cli-$prog-R.txt"; fail "$prog -R: no result row for $size B"; }
	echo "$mode $prog -R: $row" | tee -a "$RESULTS/results.txt"
}
perf_cm ib_send_bw 65536
perf_cm ib_write_bw 65536
perf_cm ib_send_lat 64

step "resources and counters"
mr_check_clean_end

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: UD, GSI and rdma_cm programs ($mode) on $KVER"
