# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# The RoCEv2 interop matrix of rdma_metaroce.ko against the kernel's
# rdma_rxe (issue 6), shared by t-kernel-rxe.sh (one guest: rxe0 in
# init_net, mr0 in a netns) and t-kernel-rxe-two-guests.sh (mr0 on guest 0,
# rxe0 on guest 1).  Source it after kernel/guest-test-lib.sh.  The caller
# sets up both devices and provides:
#   rxe_sides DIR   exports the mr_peer sides (MR_SRV_*, MR_CLI_*, and
#                   MR_SRV_GUEST with two guests) for direction DIR (mr:
#                   mr0 serves, rxe: rxe0 serves) and sets $server, the
#                   serving device's address;
#   RXE_MR_IP, RXE_RXE_IP  the devices' addresses;
#   RXE_CAPTURE_DEV        the netdev this guest captures the first
#                          pingpong of each direction on (empty: none);
#   RXE_UD_SIZE            the ibv_ud_pingpong message size (the path MTU);
#   RXE_ITERS              iterations of each program (default 100).
# rxe_interop DIR then runs, through mr_peer (so in two guests each guest
# runs its side and checks its side's output):
#   - ibv_rc_pingpong --chk at 4 KiB (> MTU: several packets per message)
#     under a capture whose IBTA ICRCs icrc-check.py recomputes (both
#     devices must have sent RC packets) and at 64 B, ibv_ud_pingpong;
#   - ib_write_bw, ib_read_bw, ib_send_bw (64 KiB) and ib_atomic_bw;
#     perftest hands each QP the peer's READ/atomic depth, 128 from rxe,
#     which mr0 clamps to its 16 (MR-COMPAT-013);
#   - rping -v -V -C 200 (rdma_cm; SEND, READ and WRITE, buffers checked).
# Rates go to $RESULTS/results.txt (reported, not asserted).

# rxe_peer TAG PROGRAM ARGS...: the same ARGS on both sides, plus the
# server address for the client; out-of-band exchange on TCP 18515.
rxe_peer() {
	local tag=$1 prog=$2
	shift 2
	# shellcheck disable=SC2154 # server is set by the caller's rxe_sides
	mr_peer "$tag" tcp:18515 "$prog" "$@" -- "$@" "$server"
}

# rxe_pingpong DIR PROGRAM SIZE [ARGS...]: a pingpong, its rate recorded.
rxe_pingpong() {
	local dir=$1 prog=$2 size=$3 tag line
	shift 3
	tag=$dir-$prog-$size
	step "$prog $size B x ${RXE_ITERS:-100} ($dir server)"
	rxe_peer "$tag" "$prog" -d @DEV@ -g @GID@ -s "$size" -n "${RXE_ITERS:-100}" "$@"
	mr_peer_here cli || return 0
	line=$(grep -h 'bytes in\|iters in' "cli-$tag.txt" | tr '\n' ' ') || :
	[ -n "$line" ] || fail "$prog $size: no result"
	echo "$dir server $prog $size B: $line" | tee -a "$RESULTS/results.txt"
}

# rxe_perf DIR PROGRAM SIZE: one perftest program; its result row must be
# there.
rxe_perf() {
	local dir=$1 prog=$2 size=$3 row
	step "$prog $size B ($dir server)"
	rxe_peer "$dir-$prog" "$prog" -d @DEV@ -x @GID@ -F -s "$size" -n "${RXE_ITERS:-100}"
	mr_peer_here cli || return 0
	row=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/' "cli-$dir-$prog.txt") || :
	[ -n "$row" ] || { cat "cli-$dir-$prog.txt"; fail "$prog: no result row for $size B"; }
	echo "$dir server $prog: $row" | tee -a "$RESULTS/results.txt"
}

# rxe_capture_start DIR / rxe_capture_check DIR: tcpdump on
# RXE_CAPTURE_DEV into $RESULTS/rxe-DIR.pcap, then every RoCEv2 packet's
# ICRC recomputed; nothing where RXE_CAPTURE_DEV is empty.
rxe_capture_start() {
	[ -n "${RXE_CAPTURE_DEV:-}" ] || return 0
	tcpdump -i "$RXE_CAPTURE_DEV" -s 0 -U -w "$RESULTS/rxe-$1.pcap" udp port 4791 2>"tcpdump-$1.txt" &
	rxe_tcpdump_pid=$!
	vm_wait_until 10 grep -q 'listening on' "tcpdump-$1.txt" || fail "tcpdump did not start"
}
rxe_capture_check() {
	[ -n "${RXE_CAPTURE_DEV:-}" ] || return 0
	kill -INT "$rxe_tcpdump_pid"
	wait "$rxe_tcpdump_pid" || :
	rxe_tcpdump_pid=
	python3 "$METAROCE_SRC/tests/vm/icrc-check.py" "$RESULTS/rxe-$1.pcap" "$RXE_MR_IP" "$RXE_RXE_IP" |
		tee "icrc-$1.txt" || fail "ICRC check of the $1-server capture"
}
# rxe_capture_stop: end a capture left running (for an EXIT trap).
rxe_capture_stop() { kill "${rxe_tcpdump_pid:-}" 2>/dev/null || :; }

# rxe_interop DIR: the matrix with DIR's device serving.
rxe_interop() {
	local dir=$1 n
	rxe_sides "$dir"
	# A few hundred packets of a checked pingpong, both ways, on the wire.
	rxe_capture_start "$dir"
	rxe_pingpong "$dir" ibv_rc_pingpong 4096 --chk
	rxe_capture_check "$dir"

	rxe_pingpong "$dir" ibv_rc_pingpong 64 --chk
	rxe_pingpong "$dir" ibv_ud_pingpong "$RXE_UD_SIZE"
	rxe_perf "$dir" ib_write_bw 65536
	rxe_perf "$dir" ib_read_bw 65536
	rxe_perf "$dir" ib_send_bw 65536
	rxe_perf "$dir" ib_atomic_bw 8

	step "rping -v -V -C 200 ($dir server)"
	mr_peer "$dir-rping" cm:7174 rping -s -a "$server" -v -V -C 200 -- -c -a "$server" -v -V -C 200
	if mr_peer_here cli; then
		n=$(grep -cE '^ping data: rdma-ping-[0-9]+: ' "cli-$dir-rping.txt") || :
		[ "$n" = 200 ] || fail "rping client ($dir server) printed $n pings, expected 200"
	fi
}

# rxe_check_mr_end: after the matrix, mr0 counted no CRC, malformed-packet,
# wrong-transport or transmit error, received packets, and no user QP is
# left on it.  Its counters in $RESULTS/stats-mr0.txt.
rxe_check_mr_end() {
	local c
	rdma statistic show link mr0/1 | tee "$RESULTS/stats-mr0.txt"
	for c in rx_bad_crc rx_malformed rx_wrong_transport tx_errors; do
		[ "$(mr_counter mr0 $c)" = 0 ] || fail "mr0 counted $c: $(cat "$RESULTS/stats-mr0.txt")"
	done
	[ "$(mr_counter mr0 rx_packets)" -gt 0 ] || fail "mr0 counted no received packets"
	[ "$(mr_res_count qp)" = 0 ] || fail "QPs left on mr0: $(rdma resource show qp)"
}

# rxe_check_rxe_end RCVD0: rxe0 received packets since its rcvd_pkts
# counter was RCVD0 (rxe counts a packet only once its ICRC checked out)
# and logged no bad ICRC.  Its counters in $RESULTS/stats-rxe0.txt.
rxe_check_rxe_end() {
	local rcvd
	rdma statistic show link rxe0/1 | tee "$RESULTS/stats-rxe0.txt"
	rcvd=$(( $(mr_counter rxe0 rcvd_pkts) - $1 ))
	[ "$rcvd" -gt 0 ] || fail "rxe0 received no packet"
	! dmesg | grep -i 'bad ICRC' || fail "rxe logged bad ICRCs"
	echo "rxe0 received $rcvd packets" | tee -a "$RESULTS/results.txt"
}
