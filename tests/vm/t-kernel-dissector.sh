#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The Wireshark dissector (tools/wireshark/metaroce.lua) on real traffic of
# rdma_metaroce.ko (issue 9), run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-dissector.sh BUILD_DIR
#
# mr0 in netns mra and mr1 in netns mrb, MetaRoCE mode.  Each run is
# captured on mrb's veth0 (mr_capture) and decoded by tshark with the
# dissector; tests/dissector/check_dissector.py --truth, the checker of the
# host test with a second source, compares what it decoded with what the
# programs and the kernel reported (its docstring has the rules):
#   - ibv_rc_pingpong 4 KiB, lossless and with 2% loss on both ends: the
#     QPNs and first PSNs it printed, packets = iterations x 4 per side;
#     each device's retransmits, sacks_sent (rdma statistic, after the
#     QPs were destroyed: retired counts) and plane0_tx_packets deltas;
#   - metaroce_dv_test transfer over 4 paths with 2% loss: 256 KiB of RDMA
#     WRITEs from mr0 to mr1, and the writer's per-path data packets and
#     retransmissions from metarocedv_query_qp_stats, which must also equal
#     the device counters' deltas after the QPs are gone.
# Every frame must decode with no malformed flag and a good CRC32C; a
# capture of a lossy run must hold retransmissions and SACKs.  Each check
# must also fail with the first endpoint's QPN changed (the checker's
# self-check, on the same decoded frames).
#
# The loss is dropped at ingress (tc matchall + gact random drop, 1 in 50)
# rather than by netem, which only acts on egress: tcpdump sees a sent
# packet after the egress qdisc, so with netem the capture could not show
# every transmission and "retransmissions decoded == retransmissions
# counted" would not hold.  mrb's tcpdump sees mrb's packets as they leave
# and mra's as they arrive, before mrb's ingress filter.
#
# On the first kernel only (tests/vm/kernel-tests.cmake): the dissector and
# the counters are the same code on every kernel; the kernel-specific glue
# of the traffic is covered on both by t-kernel-rc.sh and others.
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

iters=${METAROCE_TEST_ITERS:-50}
server=10.88.0.1
client=10.88.0.2
lua=$METAROCE_SRC/tools/wireshark/metaroce.lua
checker=$METAROCE_SRC/tests/dissector/check_dissector.py
# A HOME of its own: a metaroce.lua among root's personal plugins would
# register the protocol a second time.
export HOME=$PWD/home
mkdir -p "$HOME"

vm_load_module "$(mr_ko "$build")" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)

# loss_on / loss_off: drop 1 in 50 MetaRoCE datagrams as they arrive, in
# both namespaces (see the top of the file).
loss_on() {
	local ns
	for ns in mra mrb; do
		ip netns exec $ns tc qdisc add dev veth0 ingress &&
			ip netns exec $ns tc filter add dev veth0 ingress protocol ip \
				u32 match ip protocol 17 0xff match ip dport 4793 0xffff \
				action gact ok random netrand drop 50 ||
			fail "ingress loss in $ns"
	done
}
loss_off() {
	ip netns exec mra tc qdisc del dev veth0 ingress || fail "ingress qdisc of mra"
	ip netns exec mrb tc qdisc del dev veth0 ingress || fail "ingress qdisc of mrb"
}

# snap TAG: the counters the ground truth needs, of both devices, into
# snap-TAG.txt as "DEV NAME VALUE" lines.
snap() {
	local d c
	for d in mr0 mr1; do
		for c in retransmits sacks_sent plane0_tx_packets; do
			echo "$d $c $(mr_counter $d $c)"
		done
	done >"snap-$1.txt"
}
# delta BEFORE AFTER DEV NAME
delta() {
	echo $(( $(awk -v d="$3" -v n="$4" '$1 == d && $2 == n { print $3 }' "snap-$2.txt") -
		 $(awk -v d="$3" -v n="$4" '$1 == d && $2 == n { print $3 }' "snap-$1.txt") ))
}

# pp_addr FILE local|remote: "QPN PSN" of that line of ibv_rc_pingpong's
# output ("  local address:  LID 0x0000, QPN 0x000011, PSN 0x6f7ab1, ...").
pp_addr() {
	sed -n "s/.*$2 address:.*QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\).*/\1 \2/p" "$1"
}

# endpoint ADDR DST_QPN PSN PACKETS RETRANSMITS SACKS_SENT TX_FRAMES
#          [PATH_TX PATH_RETX]: one endpoint of the truth, as JSON.
endpoint() {
	printf '{"addr": "%s", "dst_qpn": %d, "psn": %d, "packets": %d, "retransmits": %d, "sacks_sent": %d, "tx_frames": %d' \
		"$1" "$2" "$3" "$4" "$5" "$6" "$7"
	[ $# -lt 9 ] || printf ', "path_tx": [%s], "path_retx": [%s]' "$8" "$9"
	printf '}'
}

# check TAG: decode cap-TAG.pcap and compare with truth-TAG.json (both
# stay in $RESULTS, the cwd, for a look from the host).
check() {
	local t0=$SECONDS
	step "tshark -X lua_script:metaroce.lua over cap-$1.pcap"
	python3 "$checker" tshark "$lua" "cap-$1.pcap" --truth "truth-$1.json" |
		tee "check-$1.txt" || { cat "truth-$1.json"; fail "$1: the dissector disagrees with the senders"; }
	grep -q '^self-check: ' "check-$1.txt" || fail "$1: the checker did not check itself"
	echo "dissector $1 (checked in $((SECONDS - t0)) s): $(head -1 "check-$1.txt")" >>"$RESULTS/results.txt"
}

# pingpong TAG LOSSY: ibv_rc_pingpong of 4 KiB messages under a capture,
# and the truth of it.
pingpong() {
	local tag=$1 lossy=$2 s_qpn s_psn c_qpn c_psn r_qpn r_psn pkts
	step "ibv_rc_pingpong 4096 B x $iters ($tag)"
	snap "$tag-before"
	mr_capture "$tag" mr_peer "$tag" tcp:18515 ibv_rc_pingpong -d @DEV@ -g "$gid" \
		-s 4096 -n "$iters" -- -d @DEV@ -g "$gid" -s 4096 -n "$iters" "$server"
	snap "$tag-after"
	read -r s_qpn s_psn <<<"$(pp_addr "srv-$tag.txt" local)"
	read -r c_qpn c_psn <<<"$(pp_addr "cli-$tag.txt" local)"
	read -r r_qpn r_psn <<<"$(pp_addr "cli-$tag.txt" remote)"
	[ -n "$s_qpn" ] && [ -n "$c_qpn" ] || fail "$tag: no QPN/PSN printed"
	[ "$r_qpn $r_psn" = "$s_qpn $s_psn" ] || fail "$tag: the client saw $r_qpn $r_psn, the server printed $s_qpn $s_psn"
	pkts=$((iters * 4))	# 4 KiB messages, path MTU 1024 (ibv_rc_pingpong's default)
	{
		printf '{"opcodes": [1], "lossy": %s, "endpoints": [' "$lossy"
		endpoint "$server" "$c_qpn" "$s_psn" "$pkts" \
			"$(delta "$tag-before" "$tag-after" mr0 retransmits)" \
			"$(delta "$tag-before" "$tag-after" mr0 sacks_sent)" \
			"$(delta "$tag-before" "$tag-after" mr0 plane0_tx_packets)"
		printf ', '
		endpoint "$client" "$s_qpn" "$c_psn" "$pkts" \
			"$(delta "$tag-before" "$tag-after" mr1 retransmits)" \
			"$(delta "$tag-before" "$tag-after" mr1 sacks_sent)" \
			"$(delta "$tag-before" "$tag-after" mr1 plane0_tx_packets)"
		printf ']}\n'
	} >"truth-$tag.json"
	check "$tag"
}

pingpong pp-lossless false
loss_on
pingpong pp-lossy true

# dv_stat WHO FIELD: a number of metaroce_dv_test's statistics line of WHO
# ("A (writer): metaroce, 4 paths: tx 1100 (retransmits 76) ... sacks sent
# 0 received 40 ...").
dv_stat() {
	sed -n "s/^$1 ([a-z]*): [a-z0-9]*, [0-9]* paths: .*$2 \([0-9]*\).*/\1/p" dv-xfer.txt
}
# dv_paths FIELD: the writer's per-path FIELD (tx or retransmits), comma
# separated, path 0 first.
dv_paths() {
	awk -v f="$1" '/^A \(writer\): [a-z]/ { a = 1; next } /^B \(target\): [a-z]/ { a = 0 }
		a && $1 == "path" { for (i = 1; i < NF; i++) if ($i == f || $i == "(" f) { v = $(i + 1); gsub(/[^0-9]/, "", v); printf "%s%s", sep, v; sep = "," } }' dv-xfer.txt
}

step "metaroce_dv_test transfer, 4 paths (256 KiB of RDMA WRITE, 2% loss)"
snap dv-before
dv_run() {
	ip netns exec mra "$build/tests/progs/metaroce_dv_test" transfer mr0 mr1 \
		--gid "$gid" --paths 4 --kib 256 --lossy >dv-xfer.txt 2>&1 ||
		{ cat dv-xfer.txt; fail "metaroce_dv_test transfer"; }
}
mr_capture dv dv_run
snap dv-after
loss_off
cat dv-xfer.txt
read -r a_qpn a_psn b_qpn b_psn <<<"$(sed -n 's/^A (writer): qpn \(0x[0-9a-f]*\) psn \(0x[0-9a-f]*\); B (target): qpn \(0x[0-9a-f]*\) psn \(0x[0-9a-f]*\)$/\1 \2 \3 \4/p' dv-xfer.txt)"
[ -n "$a_qpn" ] || fail "metaroce_dv_test printed no QPNs"
a_tx=$(dv_stat 'A' tx)
a_retx=$(dv_stat 'A' retransmits)
b_sacks=$(dv_stat 'B' 'sacks sent')
a_path_tx=$(dv_paths tx)
a_path_retx=$(dv_paths retransmits)
[ -n "$a_tx" ] && [ -n "$a_retx" ] && [ -n "$b_sacks" ] && [ -n "$a_path_tx" ] ||
	fail "metaroce_dv_test's statistics not found"
# The QP's own counts, read before it was destroyed, are what the device
# counters kept after it was (metaroce_stats_retire()).
[ "$(delta dv-before dv-after mr0 retransmits)" = "$a_retx" ] ||
	fail "mr0 counted $(delta dv-before dv-after mr0 retransmits) retransmits, its QP $a_retx"
[ "$(delta dv-before dv-after mr1 sacks_sent)" = "$b_sacks" ] ||
	fail "mr1 counted $(delta dv-before dv-after mr1 sacks_sent) SACKs sent, its QP $b_sacks"
{
	printf '{"opcodes": [2], "lossy": true, "endpoints": ['
	endpoint "$server" "$b_qpn" "$a_psn" "$((a_tx - a_retx))" "$a_retx" \
		"$(delta dv-before dv-after mr0 sacks_sent)" \
		"$(delta dv-before dv-after mr0 plane0_tx_packets)" "$a_path_tx" "$a_path_retx"
	printf ', '
	endpoint "$client" "$a_qpn" "$b_psn" 0 \
		"$(delta dv-before dv-after mr1 retransmits)" "$b_sacks" \
		"$(delta dv-before dv-after mr1 plane0_tx_packets)"
	printf ']}\n'
} >truth-dv.json
check dv

step "resources and counters"
mr_check_clean_end
mr_check_plane_sums mr0
mr_check_plane_sums mr1

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: the dissector decodes captured traffic as its senders sent it on $KVER"
