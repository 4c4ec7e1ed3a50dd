#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest half of benchmarks/perftest-vs-rxe.sh (vmtest.sh --guests 2):
#   guest-perftest-vs-rxe.sh BUILD_DIR ROUNDS LOSSES...
# Both guests put mr0 (rdma_metaroce, MetaRoCE mode) and rxe0 (the kernel's
# rdma_rxe) on the same eth0, so both transports cross the same qemu link
# with the same MTU and the same netem.  For every round, loss and perftest
# program the two transports run back to back, their order alternating
# between rounds; guest 0 is the server, guest 1 the client and writes
# "round loss transport program value" lines to $RESULTS/bench.txt
# (bandwidth: BW average MB/s; latency: t_typical us).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR ROUNDS LOSSES...}")
rounds=${2:?}
shift 2
losses=("$@")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

[ "$GUEST_COUNT" = 2 ] || fail "run with --guests 2"
vm_load_module "$(mr_ko "$build")" || fail "loading rdma_metaroce"
vm_install_provider "$build" || fail "installing the provider"
# rdma_rxe binds UDP 4791 when it loads and fails if that port is taken;
# a MetaRoCE-mode device that finds it taken runs without UD/GSI (RC on
# 4793 is all perftest needs here), so rxe goes first.
vm_rxe_add rxe0 eth0 || fail "rxe0"
rdma link add mr0 type metaroce netdev eth0 || fail "rdma link add mr0"
mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
vm_wait_for_peer 60 || fail "peer unreachable"

gid_of() {
	local g i t
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${g##*/}
		grep -q '0000:0000:0000:0000:0000:ffff:' "$g" || continue
		read -r t <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null || continue
		[ "$t" = "RoCE v2" ] && { echo "$i"; return 0; }
	done
	fail "$1: no IPv4 RoCE v2 GID"
}
declare -A gid=([mr0]=$(gid_of mr0) [rxe0]=$(gid_of rxe0))

# prog SIZE COLUMN: what each program runs with and which column is reported.
declare -A size=([ib_write_bw]=65536 [ib_send_bw]=65536 [ib_write_lat]=64 [ib_send_lat]=64)
declare -A col=([ib_write_bw]=4 [ib_send_bw]=4 [ib_write_lat]=5 [ib_send_lat]=5)
iters=${BENCH_ITERS:-200}
port=19000
out=$RESULTS/bench.txt
: >"$out"

run() {
	local r=$1 loss=$2 dev=$3 prog=$4 args row
	port=$((port + 1))
	args=(-d "$dev" -x "${gid[$dev]}" -F -p "$port" -s "${size[$prog]}" -n "$iters")
	vm_barrier "r$r-$loss-$dev-$prog" 300 || fail "barrier"
	if [ "$GUEST_INDEX" = 0 ]; then
		timeout 240 "$prog" "${args[@]}" >"srv.txt" 2>&1 || echo "server $prog on $dev failed: $(tail -3 srv.txt)"
	else
		if vm_retry 30 1 timeout 240 "$prog" "${args[@]}" "$(vm_peer_addr 0)" >cli.txt 2>&1; then
			row=$(awk -v s="${size[$prog]}" -v c="${col[$prog]}" '$1 == s && $2 ~ /^[0-9]+$/ { print $c }' cli.txt)
			echo "$r $loss ${dev%0} $prog ${row:-nan}" | tee -a "$out"
		else
			echo "$r $loss ${dev%0} $prog fail" | tee -a "$out"
		fi
	fi
}

for ((r = 1; r <= rounds; r++)); do
	for loss in "${losses[@]}"; do
		if [ "$loss" = 0 ]; then vm_netem_clear eth0; else vm_netem eth0 loss "$loss%"; fi
		for prog in ib_write_bw ib_send_bw ib_write_lat ib_send_lat; do
			if ((r % 2)); then order=(mr0 rxe0); else order=(rxe0 mr0); fi
			for dev in "${order[@]}"; do
				run "$r" "$loss" "$dev" "$prog"
			done
		done
	done
done
vm_barrier done 120 || fail "final barrier"
