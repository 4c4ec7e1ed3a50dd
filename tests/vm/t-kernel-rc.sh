#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Unmodified upstream verbs programs (Debian's ibverbs-utils and perftest)
# on rdma_metaroce.ko through the provider built in this tree, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-rc.sh BUILD_DIR [MODE]
# MODE is the module's default_transport (metaroce, the default, or rocev2).
#
# mr0 in netns mra is the server, mr1 in netns mrb the client (two UDP
# tunnel sockets, one per namespace):
#   - ibv_rc_pingpong --chk (the receiver checks every buffer) at 64 B,
#     4 KiB and 64 KiB (> MTU, many packets per message), with completion
#     events (-e), and on the syscall path (METAROCE_NO_RINGS=1);
#   - ib_write_bw, ib_send_bw, ib_read_bw (64 KiB), ib_write_lat,
#     ib_send_lat, ib_read_lat (64 B), ib_atomic_bw and ib_atomic_lat;
#     the bandwidth servers stay in RTR, so this also exercises an RTR
#     responder; ib_write_bw and ib_send_bw again with
#     --use_old_post_send (perftest 4.5 takes the ibv_wr_* API only on
#     the mlx5, EFA and HNS devices it knows by vendor id, so both runs
#     post with ibv_post_send; the banner line is recorded);
#   - the ibv_wr_* API (tests/progs/metaroce_wr_test): every opcode with
#     its data, immediate and atomic results, a batch of max_send_wr WRs
#     in one ibv_wr_complete(), ibv_wr_abort(), the latched errors, UD;
#   - ibv_post_send/recv (tests/progs/metaroce_post_test) on the mapped
#     work queues and on the command path (METAROCE_NO_RINGS=1): a list
#     with a refused WR posts the ones before it and nothing after, a
#     full send queue, inline buffers, a ring the process corrupts;
#   - pingpong, ib_write_bw, ib_read_bw and ib_atomic_bw again with 1%
#     netem loss on both ends: rdma statistic counts retransmits, and in
#     MetaRoCE mode SACKs sent and received and out-of-order arrivals
#     (RoCEv2 mode: none of these three);
#   - pingpong under netem "loss 3% ecn": MetaRoCE packets are ECT(0) and
#     arrive CE-marked (counted as rx_ecn_ce), RoCEv2-mode ones are Not-ECT.
# Every program must exit 0 on both sides and report a result; afterwards
# "rdma resource" lists no QP, CQ or MR of mr0/mr1, the counters show no
# CRC or malformed-packet drops and each transport counter is the sum of
# its planes', the module unloads and dmesg is clean.
# Throughputs and latencies go to $RESULTS/results.txt (reported, not
# asserted: the testbed is TCG).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [MODE]}")
mode=${2:-metaroce}
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

wr_test=$build/tests/progs/metaroce_wr_test
post_test=$build/tests/progs/metaroce_post_test
for p in "$wr_test" "$post_test"; do
	[ -x "$p" ] || fail "$p not built"
done
iters=${METAROCE_TEST_ITERS:-200}
server=10.88.0.1

vm_load_module "$(mr_ko "$build")" default_transport="$mode" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"

# peer TAG PROGRAM ARGS...: PROGRAM as server on mr0 and as client on mr1
# with the same ARGS (plus the server address for the client); the server
# listens on TCP 18515 for the out-of-band exchange.
peer() {
	local tag=$1 prog=$2
	shift 2
	mr_peer "$tag" tcp:18515 "$prog" "$@" -- "$@" "$server"
}

# pingpong TAG SIZE: ibv_rc_pingpong, buffers checked by the receivers.
pingpong() {
	local tag=$1 size=$2 line
	step "ibv_rc_pingpong $size B x $iters ($tag)"
	peer "pp-$tag-$size" ibv_rc_pingpong -d @DEV@ -g "$gid" -s "$size" -n "$iters" --chk
	line=$(grep -h 'bytes in' "cli-pp-$tag-$size.txt") || fail "pingpong $size: no result"
	echo "$mode $tag ibv_rc_pingpong $size B: $line" | tee -a "$RESULTS/results.txt"
}

# perf TAG PROGRAM SIZE [ARGS...]: one perftest program; its result row
# must be there.
perf() {
	local tag=$1 prog=$2 size=$3 row
	shift 3
	step "$prog $size B ($tag)"
	peer "$prog-$tag" "$prog" -d @DEV@ -x "$gid" -F -s "$size" -n "$iters" "$@"
	row=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/' "cli-$prog-$tag.txt") ||:
	[ -n "$row" ] || { cat "cli-$prog-$tag.txt"; fail "$prog: no result row for $size B"; }
	echo "$mode $tag $prog: $row" | tee -a "$RESULTS/results.txt"
}

# post_api TAG PROGRAM: which posting API perftest says it used.
post_api() {
	local api
	api=$(sed -n 's/^ *ibv_wr\* API *: *\([A-Z]*\).*/\1/p' "cli-$2-$1.txt")
	[ -n "$api" ] || fail "$2 ($1): no 'ibv_wr* API' line in its banner"
	echo "$mode $1 $2: ibv_wr* API $api" | tee -a "$RESULTS/results.txt"
}

for size in 64 4096 65536; do
	pingpong lossless "$size"
done
# Completion events on every completion (ibv_req_notify_cq, then
# ibv_get_cq_event) over the mapped CQ ring, under traffic; then the
# syscall data path the provider falls back to (METAROCE_NO_RINGS=1).
step "ibv_rc_pingpong -e 4096 B x $iters"
peer pp-events ibv_rc_pingpong -d @DEV@ -g "$gid" -s 4096 -n "$iters" --chk -e
grep -q 'bytes in' cli-pp-events.txt || fail "pingpong -e: no result"
step "ibv_rc_pingpong 4096 B x $iters, METAROCE_NO_RINGS=1"
METAROCE_NO_RINGS=1 peer pp-no-rings ibv_rc_pingpong -d @DEV@ -g "$gid" -s 4096 -n "$iters" --chk
grep -q 'bytes in' cli-pp-no-rings.txt || fail "pingpong without rings: no result"
perf lossless ib_write_bw 65536
perf lossless ib_send_bw 65536
perf old-post ib_write_bw 65536 --use_old_post_send
perf old-post ib_send_bw 65536 --use_old_post_send
for prog in ib_write_bw ib_send_bw; do
	post_api lossless "$prog"
	post_api old-post "$prog"
done

step "ibv_wr_* API (metaroce_wr_test)"
"$wr_test" --a mr0 --b mr1 --gid "$gid" | tee wr-test.txt || fail "metaroce_wr_test"
grep -q '^PASS: wr API' wr-test.txt || fail "metaroce_wr_test did not pass"

step "ibv_post_send/recv on both paths (metaroce_post_test)"
"$post_test" --a mr0 --b mr1 --gid "$gid" --rings yes | tee post-rings.txt ||
	fail "metaroce_post_test, rings"
METAROCE_NO_RINGS=1 "$post_test" --a mr0 --b mr1 --gid "$gid" --rings no |
	tee post-no-rings.txt || fail "metaroce_post_test, METAROCE_NO_RINGS=1"
grep -q '^PASS: post (rings yes)' post-rings.txt &&
	grep -q '^PASS: post (rings no)' post-no-rings.txt ||
	fail "metaroce_post_test did not pass"
perf lossless ib_write_lat 64
perf lossless ib_send_lat 64
# RDMA READ and atomics (perftest has no immediate-data option).
perf lossless ib_read_bw 65536
perf lossless ib_read_lat 64
perf lossless ib_atomic_bw 8
perf lossless ib_atomic_lat 8

# xport NAME: a transport counter summed over mr0 and mr1.
xport() { echo $(( $(mr_counter mr0 "$1") + $(mr_counter mr1 "$1") )); }

step "1% loss on both ends"
retx_before=$(xport retransmits)
sacks_before=$(xport sacks_sent)
sacks_rx_before=$(xport sacks_received)
ooo_before=$(xport rx_out_of_order)
ip netns exec mra tc qdisc replace dev veth0 root netem loss 1% || fail "netem"
ip netns exec mrb tc qdisc replace dev veth0 root netem loss 1% || fail "netem"
pingpong loss1 4096
pingpong loss1 65536
perf loss1 ib_write_bw 65536
perf loss1 ib_read_bw 65536
perf loss1 ib_atomic_bw 8
# rdma statistic's transport counters (issue 7): under loss the
# requesters retransmitted; MetaRoCE-mode responders sent SACKs, the
# requesters accepted some, and data arrived past holes.  RoCEv2 mode
# (go-back-N) has no SACK and drops what arrives past a hole.
retx=$(( $(xport retransmits) - retx_before ))
sacks=$(( $(xport sacks_sent) - sacks_before ))
sacks_rx=$(( $(xport sacks_received) - sacks_rx_before ))
ooo=$(( $(xport rx_out_of_order) - ooo_before ))
echo "$mode loss1: retransmits $retx, SACKs sent $sacks received $sacks_rx, out of order $ooo" |
	tee -a "$RESULTS/results.txt"
[ "$retx" -gt 0 ] || fail "no retransmission counted under 1% loss"
if [ "$mode" = metaroce ]; then
	[ "$sacks" -gt 0 ] && [ "$sacks_rx" -gt 0 ] ||
		fail "SACKs sent $sacks, received $sacks_rx under 1% loss"
	[ "$ooo" -gt 0 ] || fail "no out-of-order arrival counted under 1% loss"
else
	[ "$sacks" = 0 ] && [ "$sacks_rx" = 0 ] && [ "$ooo" = 0 ] ||
		fail "RoCEv2 mode counted SACKs $sacks/$sacks_rx, out of order $ooo"
fi

# netem's "ecn" marks ECN-capable packets CE instead of dropping them:
# MetaRoCE sends ECT(0) and must see marks; RoCEv2 mode (no DCQCN) sends
# Not-ECT, so the same netem drops its packets and nothing is marked.
step "netem loss 3% ecn"
ip netns exec mra tc qdisc replace dev veth0 root netem loss 3% ecn || fail "netem ecn"
ip netns exec mrb tc qdisc replace dev veth0 root netem loss 3% ecn || fail "netem ecn"
ce_before=$(( $(mr_counter mr0 rx_ecn_ce) + $(mr_counter mr1 rx_ecn_ce) ))
pingpong ecn 65536
ce=$(( $(mr_counter mr0 rx_ecn_ce) + $(mr_counter mr1 rx_ecn_ce) - ce_before ))
echo "$mode ecn: $ce CE-marked packets received" | tee -a "$RESULTS/results.txt"
if [ "$mode" = metaroce ]; then
	[ "$ce" -gt 0 ] || fail "no CE mark counted: MetaRoCE packets are not ECT"
else
	[ "$ce" = 0 ] || fail "$ce CE marks in RoCEv2 mode: its packets must be Not-ECT"
fi

step "resources and counters"
mr_check_clean_end
mr_check_plane_sums mr0
mr_check_plane_sums mr1
[ "$(mr_counter mr0 rx_packets)" -gt 0 ] || fail "mr0 counted no received packets"

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: ibv_rc_pingpong and perftest ($mode) on $KVER"
