#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Demo guest script (two guests, one plane): the kernel's own rdma_rxe
# (RoCEv2, go-back-N) under packet loss, as the baseline MetaRoCE is measured
# against. Run by scripts/demo.sh as
#   tests/vm/vmtest.sh --guests 2 --planes 1 -- scripts/demo/guest-rxe-loss.sh LOSS...
#
# For each loss rate (percent) both guests put netem on eth0; guest 0 serves
# and guest 1 runs ibv_rc_pingpong and ib_write_bw against it. Guest 1 writes
# results.csv (transport,loss_pct,test,value,unit) into $RESULTS.
set -euo pipefail
[ $# -ge 1 ] || set -- 0 1
. "$VMTEST_LIB"
peer=$(vm_addr 0 0)
dev=rxe0

vm_rxe_add "$dev" eth0

# Index of the RoCE v2 GID that carries this guest's IPv4 address.
ipv4_gid_index() {
	local p=/sys/class/infiniband/$dev/ports/1 i gid
	for i in $(seq 0 15); do
		gid=$(cat "$p/gids/$i" 2>/dev/null) || continue
		[ "$(cat "$p/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
		case $gid in 0000:0000:0000:0000:0000:ffff:*) echo "$i"; return 0 ;; esac
	done
	return 1
}
for _ in $(seq 50); do gidx=$(ipv4_gid_index) && break; sleep 0.2; done
[ -n "${gidx:-}" ] || { echo "no IPv4 RoCE v2 GID on $dev"; exit 1; }

set_loss() {
	vm_netem_clear eth0
	if [ "$1" != 0 ]; then
		vm_netem eth0 loss "$1%"
	fi
}

# Client side: retry until the server of this phase listens.
retry() {
	local i
	for i in $(seq 60); do
		"$@" && return 0
		sleep 1
	done
	return 1
}

csv=$RESULTS/results.csv
for loss in "$@"; do
	set_loss "$loss"
	vm_barrier "loss-$loss"
	if [ "$GUEST_INDEX" = 0 ]; then
		ibv_rc_pingpong -d "$dev" -g "$gidx" -n 300 -s 4096 >/dev/null
		ib_write_bw -d "$dev" -x "$gidx" -D 4 -F >/dev/null
		continue
	fi
	out=$(retry ibv_rc_pingpong -d "$dev" -g "$gidx" -n 300 -s 4096 "$peer")
	echo "$out"
	usec=$(sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' <<<"$out")
	echo "rxe,$loss,ibv_rc_pingpong,$usec,usec_per_iter" >>"$csv"
	out=$(retry ib_write_bw -d "$dev" -x "$gidx" -D 4 -F "$peer")
	echo "$out"
	# Data line: bytes iterations BW-peak BW-average MsgRate (MB/s).
	bw=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v }' <<<"$out")
	echo "rxe,$loss,ib_write_bw,$bw,MB_per_s" >>"$csv"
done
set_loss 0
rdma link delete "$dev"
