#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# End-to-end data integrity on rdma_metaroce.ko (issues 5 and 7):
# tests/progs/metaroce_integrity (every RC opcode, random sizes up to
# 64 KiB, several SGEs, inline sends, seeded patterns checked on both
# sides) between mr0 (netns mra, server) and mr1 (netns mrb, client), run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-integrity.sh \
#       BUILD_DIR [MODE [BYTES [LOSSY_BYTES]]]
# MODE is the module's default_transport (metaroce, the default, or
# rocev2); BYTES (default 256M) and LOSSY_BYTES (default 256M in MetaRoCE
# mode, 32M in RoCEv2 mode) the amounts of the two runs:
#   - lossless: zero mismatches and bad completions, and neither device
#     counted a CRC or malformed-packet drop;
#   - 1% loss, 1% duplication, 1% corruption and reordering (1 ms delay for
#     3 packets of 4) on both ends of the link: zero mismatches and bad
#     completions, the transport retransmitted and saw duplicates, and
#     the corrupted packets were counted and dropped by the module's
#     check (rx_bad_crc on both devices): the ICRC in RoCEv2 mode, the
#     core's CRC32C in MetaRoCE mode, both sent with UDP checksum 0
#     (MR-WIRE-001), so UDP lets them through to the module;
# then no QP, CQ, MR or PD is left, no transmit error was counted, the
# module unloads and dmesg is clean.  Rates and counters go to
# $RESULTS/results.txt (not asserted).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [MODE [BYTES [LOSSY_BYTES]]]}")
mode=${2:-metaroce}
bytes=${3:-256M}
# RoCEv2's go-back-N resends everything after a lost or overtaken packet:
# at 1% loss with reordering it moves ~1 MB/s here (MetaRoCE ~4 MB/s).
lossy_default=256M
[ "$mode" = rocev2 ] && lossy_default=32M
lossy_bytes=${4:-$lossy_default}
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

tool=$build/tests/progs/metaroce_integrity
[ -x "$tool" ] || fail "$tool not built"
server=10.88.0.1
# A bound on a hung transfer only: 256 MiB under loss took 70 s of guest
# time in MetaRoCE mode on a host at load 5.
export MR_PEER_TIMEOUT=${MR_PEER_TIMEOUT:-900}

# A veth hands each packet to its peer's per-CPU backlog, which drops
# above net.core.netdev_max_backlog (1000): a burst of READ responses
# overflows it.  Room for every packet a transfer can have in flight, so
# that the lossless run is lossless and the lossy one loses what netem
# drops; such drops count as tx_errors in RoCEv2 mode.
sysctl -qw net.core.netdev_max_backlog=100000 || fail "netdev_max_backlog"
vm_load_module "$(mr_ko "$build")" default_transport="$mode" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"

# integrity TAG BYTES SEED: one run; both sides must pass.
integrity() {
	local tag=$1 n=$2 seed=$3 t0 line
	step "metaroce_integrity $n ($tag, seed $seed)"
	t0=$(vm_uptime)
	mr_peer "int-$tag" tcp:18516 "$tool" -e -d @DEV@ -g "$gid" -- \
		-e -d @DEV@ -g "$gid" -b "$n" -S "$seed" "$server"
	cat "cli-int-$tag.txt" "srv-int-$tag.txt"
	mr_integrity_passed "int-$tag"
	line=$(grep -h '^client: .* windows' "cli-int-$tag.txt")
	echo "$mode $tag metaroce_integrity: $line; $(awk -v a="$t0" -v b="$(vm_uptime)" \
		'BEGIN { printf "%.0f s with setup", b - a }')" | tee -a "$RESULTS/results.txt"
}

# counters TAG: both devices' counters and both namespaces' UDP counters,
# as shell variables TAG_DEV_NAME and TAG_NS_udp_NAME.
counters() {
	local tag=$1 d ns n v c
	for d in mr0 mr1; do
		while read -r n v; do
			printf -v "${tag}_${d}_$n" %s "$v"
		done < <(rdma statistic show link "$d/1" | tr ' ' '\n' |
			awk 'NR > 2 { if (n) { print n, $0; n = "" } else n = $0 }')
	done
	for ns in mra mrb; do
		for c in InCsumErrors InErrors; do
			printf -v "${tag}_${ns}_udp_$c" %s "$(mr_udp_stat "$ns" "$c")"
		done
	done
}
# delta NAME: the growth of counter NAME (DEV_NAME or NS_udp_NAME) from
# "before" to "after".
delta() { local b=before_$1 a=after_$1; echo $(( ${!a} - ${!b} )); }

integrity lossless "$bytes" 1
for ns in mra mrb; do
	echo "$mode lossless $ns: $(ip netns exec $ns ip -s -o link show veth0)" >>"$RESULTS/results.txt"
done
for d in mr0 mr1; do
	for c in rx_bad_crc rx_malformed tx_errors; do
		[ "$(mr_counter $d $c)" = 0 ] || fail "$d counted $c on a lossless link"
	done
done

step "1% loss, 1% duplication, 1% corruption and reordering on both ends"
# The queue limit is far above what a window of this transfer can queue
# in the 1 ms delay: netem drops only what it is told to.
netem="loss 1% duplicate 1% corrupt 1% delay 1ms reorder 25% 50% limit 100000"
for ns in mra mrb; do
	# shellcheck disable=SC2086 # netem is a word list
	ip netns exec $ns tc qdisc replace dev veth0 root netem $netem || fail "netem in $ns"
done
counters before
integrity loss-dup-corrupt-reorder "$lossy_bytes" 2
counters after
for ns in mra mrb; do
	ip netns exec $ns tc -s qdisc show dev veth0 | tee -a "$RESULTS/results.txt"
	ip netns exec $ns tc qdisc del dev veth0 root
done
for d in mr0 mr1; do
	line="$d:"
	for c in rx_packets retransmits rx_duplicates rx_out_of_order rx_bad_crc rx_malformed rx_no_qp; do
		line+=" $c +$(delta ${d}_$c)"
	done
	echo "$mode lossy $line" | tee -a "$RESULTS/results.txt"
done
for ns in mra mrb; do
	echo "$mode lossy $ns: UDP InCsumErrors +$(delta ${ns}_udp_InCsumErrors) InErrors +$(delta ${ns}_udp_InErrors)" |
		tee -a "$RESULTS/results.txt"
done
# The conditions happened: both requesters (client and, for READ
# responses and ACKs, server) saw their packets lost or duplicated.
[ "$(delta mr1_retransmits)" -gt 0 ] || fail "mr1 retransmitted nothing at 1% loss"
[ "$(delta mr0_rx_duplicates)" -gt 0 ] || fail "mr0 received no duplicate at 1% duplication"
# Corrupted packets were counted and dropped by the module's check.
for d in mr0 mr1; do
	[ "$(delta ${d}_rx_bad_crc)" -gt 0 ] ||
		fail "$d counted no bad $([ "$mode" = rocev2 ] && echo ICRC || echo CRC32C) at 1% corruption"
done

step "resources and counters"
for t in qp cq mr pd; do
	[ "$(mr_res_count $t)" = 0 ] || fail "$t left after the programs exited: $(rdma resource show $t)"
done
for d in mr0 mr1; do
	[ "$(mr_counter $d tx_errors)" = 0 ] || fail "$d counted tx_errors"
done

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: metaroce_integrity ($mode) on $KVER"
