#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Planes between two guests joined by 2 and then 4 qemu dgram links (issue
# 7's testbed), run by
#   tests/vm/vmtest.sh --guests 2 --planes 4 [--kernel VER] -- \
#       tests/vm/t-kernel-planes-two-guests.sh BUILD_DIR
# Each guest has mr0 on eth0 (plane 0) and adds eth1 (and later eth2,
# eth3) with metaroce-plane; MetaRoCE QPs have the device's 8 paths, path
# i on plane i mod N.  Guest 0 serves, guest 1 is the client and sends most
# of the data.  A cut on one guest is invisible to the other at link level, so
# the other's transport must find it from its timeouts (MR-FAIL-001).
#   1. two planes: metaroce_integrity (every opcode, verified patterns) runs
#      until told to stop; guest 0 takes eth1 down mid-transfer (its plane 1
#      takes its paths out of service, paths_down); guest 1 declares plane
#      1's paths failed (plane1_path_failures) while plane 0 carries on;
#      eth1 comes back (guest 0: paths_up); guest 1 re-admits the paths
#      (plane1_path_recoveries) and, in the same transfer, sends on plane 1
#      again; guest 0 receives on it again.  The transfer then ends with
#      zero mismatches and no bad completion on either side.
#   2. four planes: the same with plane 2 cut silently on guest 1 (netem
#      loss 100% on eth2: its link stays up): guest 1 finds the failure and
#      the recovery from timeouts and probes alone.
#   3. every plane cut (netem loss 100% on all four links of guest 1)
#      during ib_write_bw from guest 1: the client fails with
#      IBV_WC_RETRY_EXC_ERR (MR-FAIL-004, MR-FAIL-007; see
#      mr_perftest_retry_exc for why not a ping-pong); once the links
#      carry traffic again a new pingpong works.
# Then each guest: every transport counter is the sum of its planes', no
# QP is left, no transmit error was counted, the module unloads and dmesg
# is clean.  The waits are bounds on a hang, not timing checks.
# covers: MR-FAIL-001 MR-FAIL-002 MR-FAIL-003 MR-FAIL-005 MR-FAIL-007
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

[ "$GUEST_COUNT" = 2 ] && [ "$PLANES" -ge 4 ] || fail "run with vmtest.sh --guests 2 --planes 4"
tool=$build/tools/metaroce-plane
integrity=$build/tests/progs/metaroce_integrity
for p in "$tool" "$integrity"; do
	[ -x "$p" ] || fail "$p not built"
done
server=$(vm_addr 0 0)

vm_load_module "$(mr_ko "$build")" || fail "loading the module"
trap 'rdma link delete mr0 2>/dev/null || :' EXIT
rdma link add mr0 type metaroce netdev eth0 || fail "rdma link add mr0"
mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
vm_wait_for_peer 60 || fail "the other guest is unreachable on some plane"
# mr_peer: guest 0 serves, both in init_net on mr0.
export MR_SRV_GUEST=0 MR_SRV_NS=- MR_CLI_NS=- MR_SRV_DEV=mr0 MR_CLI_DEV=mr0
export MR_SRV_GID=$gid MR_CLI_GID=$gid

count() { mr_counter mr0 "$1"; }
# grown NAME BASE: counter NAME is above BASE.
grown() { [ "$(count "$1")" -gt "$2" ]; }
# wait_grown WHAT NAME [BASE]: wait until counter NAME grows past BASE
# (default: its value now).
wait_grown() {
	local what=$1 name=$2 base=${3:-$(count "$2")}
	vm_wait_until 120 grown "$name" "$base" || {
		rdma statistic show link mr0/1 || :
		fail "$what: $name stayed at $(count "$name")"
	}
	echo "ok: $what: $name $base -> $(count "$name")"
}
plane_oper() { "$tool" show mr0 | grep -q " $1 .*oper $2 "; }
# both NAME: both guests meet here.
both() { vm_barrier "$1" 300 || fail "barrier $1"; }

# transfer_start TAG: metaroce_integrity from guest 1 to guest 0 in the
# background (pid in $transfer) until transfer_end TAG.
seed=10
transfer_start() {
	seed=$((seed + 1))
	rm -f "done-$1"
	( MR_PEER_TIMEOUT=900 mr_peer "$1" tcp:18516 "$integrity" -e -d @DEV@ -g @GID@ -- \
		-e -d @DEV@ -g @GID@ -u "$PWD/done-$1" -S "$seed" "$server" ) >"peer-$1.txt" 2>&1 &
	transfer=$!
}
# transfer_end TAG: guest 1 stops the transfer; both check their side.
transfer_end() {
	[ "$GUEST_INDEX" = 1 ] && touch "done-$1"
	wait "$transfer" || { cat "peer-$1.txt" "cli-$1.txt" "srv-$1.txt" 2>/dev/null; fail "$1: transfer failed"; }
	mr_integrity_passed "$1"
	if mr_peer_here cli; then
		grep -h '^client: .* windows' "cli-$1.txt" | sed "s/^/$1: /" | tee -a "$RESULTS/results.txt"
	fi
}

# cut_during_transfer TAG PLANE CUTTER HOW: a transfer over every plane;
# guest CUTTER cuts PLANE (HOW: linkdown, or netem: loss 100% on its
# egress) and restores it; guest 1 must fail and re-admit the plane's
# paths and send on it again, guest 0 receive on it again.
cut_during_transfer() {
	local tag=$1 p=$2 cutter=$3 how=$4 dev=eth$2 fails recov
	step "$tag: plane $p cut ($how on guest $cutter) during a transfer"
	fails=$(count "plane${p}_path_failures")
	recov=$(count "plane${p}_path_recoveries")
	both "$tag-start"
	transfer_start "$tag"
	# Running, and on the plane: guest 1 sends, guest 0 receives on it.
	if [ "$GUEST_INDEX" = 1 ]; then
		wait_grown "$tag: the transfer uses plane $p" "plane${p}_tx_packets"
	else
		wait_grown "$tag: the transfer uses plane $p" "plane${p}_rx_packets"
	fi
	both "$tag-running"
	if [ "$GUEST_INDEX" = "$cutter" ]; then
		case $how in
		linkdown)
			ip link set "$dev" down
			mr_wait "plane $p oper down" plane_oper "$dev" down
			[ "$(count "plane${p}_paths_down")" -gt 0 ] || fail "$tag: $dev down took no path out of service" ;;
		netem) vm_netem "$dev" loss 100% || fail "$tag: netem on $dev" ;;
		esac
	fi
	if [ "$GUEST_INDEX" = 1 ]; then
		# The plane's paths fail; the transfer goes on over the others.
		wait_grown "$tag: plane $p's paths declared failed" "plane${p}_path_failures" "$fails"
		wait_grown "$tag: plane 0 carries on" plane0_tx_packets
	fi
	both "$tag-failed"
	if [ "$GUEST_INDEX" = "$cutter" ]; then
		case $how in
		linkdown)
			ip link set "$dev" up
			mr_wait "plane $p oper up" plane_oper "$dev" up
			[ "$(count "plane${p}_paths_up")" -gt 0 ] || fail "$tag: $dev up put no path back" ;;
		netem) vm_netem_clear "$dev" ;;
		esac
	fi
	both "$tag-restored"
	if [ "$GUEST_INDEX" = 1 ]; then
		# Re-admitted: probes stop, what the plane sends now is traffic.
		wait_grown "$tag: plane $p's paths re-admitted" "plane${p}_path_recoveries" "$recov"
		wait_grown "$tag: the same transfer sends on plane $p again" "plane${p}_tx_packets"
	else
		wait_grown "$tag: the same transfer arrives on plane $p again" "plane${p}_rx_packets"
	fi
	both "$tag-back"
	transfer_end "$tag"
}

step "two planes: eth0 and eth1"
"$tool" add mr0 eth1 || fail "metaroce-plane add mr0 eth1"
cut_during_transfer cut2 1 0 linkdown

step "four planes: eth0 .. eth3"
"$tool" add mr0 eth2 || fail "metaroce-plane add mr0 eth2"
"$tool" add mr0 eth3 || fail "metaroce-plane add mr0 eth3"
[ "$("$tool" show mr0 | grep -c 'oper up')" = 4 ] || fail "not four planes up: $("$tool" show mr0)"
cut_during_transfer cut4 2 1 netem

# covers: MR-FAIL-004 MR-FAIL-007
step "every plane cut during ib_write_bw"
both every-start
if [ "$GUEST_INDEX" = 0 ]; then
	timeout 300 stdbuf -oL ib_write_bw -d mr0 -x "$gid" -F -s 4096 -n 1000000 >srv-every.txt 2>&1 &
	srv_pid=$!
	vm_wait_until 30 mr_listening tcp:18515 || fail "ib_write_bw server did not start"
	both every-listening
	# The client fails; the server waits for an end that may never come.
	both every-cut-over
	kill "$srv_pid" 2>/dev/null || :
	wait "$srv_pid" || :
else
	both every-listening
	timeout 200 stdbuf -oL ib_write_bw -d mr0 -x "$gid" -F -s 4096 -n 1000000 "$server" >cli-every.txt 2>&1 &
	cli_pid=$!
	# The out-of-band exchange runs over plane 0: cut after it (perftest
	# prints its table's header after the last handshake).
	vm_wait_until 90 grep -q '#bytes' cli-every.txt || fail "ib_write_bw did not start"
	wait_grown "every: ib_write_bw running" plane0_tx_packets
	for ((p = 0; p < 4; p++)); do vm_netem "eth$p" loss 100% || fail "netem on eth$p"; done
	cut_at=$(vm_uptime)
	rc=0
	wait "$cli_pid" || rc=$?
	echo "every plane cut: the client failed after $(awk -v a="$cut_at" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }') s" |
		tee -a "$RESULTS/results.txt"
	for ((p = 0; p < 4; p++)); do vm_netem_clear "eth$p"; done
	cat cli-every.txt
	[ "$rc" != 0 ] || fail "ib_write_bw survived every plane cut"
	[ "$rc" != 124 ] || fail "the client hung after every plane was cut"
	mr_perftest_retry_exc cli-every.txt || fail "no IBV_WC_RETRY_EXC_ERR completion"
	vm_wait_for_peer 60 || fail "the other guest is unreachable after the cut"
	both every-cut-over
fi
step "new QPs after every plane returned"
mr_peer after tcp:18515 ibv_rc_pingpong -d @DEV@ -g @GID@ -s 4096 -n 50 --chk -- \
	-d @DEV@ -g @GID@ -s 4096 -n 50 --chk "$server"
both after-done

step "counters and resources"
rdma statistic show link mr0/1 | tee "$RESULTS/stats-mr0.txt"
"$tool" show mr0 | tee -a "$RESULTS/results.txt"
mr_check_plane_sums mr0
for c in rx_bad_crc rx_malformed tx_errors; do
	[ "$(count $c)" = 0 ] || fail "mr0 counted $c"
done
[ "$(mr_res_count qp)" = 0 ] || fail "QPs left: $(rdma resource show qp)"

step "teardown"
rdma link delete mr0
trap - EXIT
vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"
vm_dmesg_check || fail "dmesg"
cat "$RESULTS/results.txt" 2>/dev/null || :
echo "PASS: planes between two guests (2 and 4 links) on $KVER"
