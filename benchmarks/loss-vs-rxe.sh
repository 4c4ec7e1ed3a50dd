#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# MetaRoCE (rdma_metaroce.ko + libmetaroce) against the kernel's rdma_rxe
# (RoCEv2, go-back-N) under loss, burst loss and reordering, and a plane
# failure, in one run of the two-guest qemu testbed joined by two planes:
#   benchmarks/loss-vs-rxe.sh [BUILD_DIR]
# Environment (defaults): ROUNDS (3), CONDS (0,0.1,1,5,burst,reorder),
# PROGS (ib_write_bw,ib_send_bw,ib_read_bw,ib_send_lat), BW_ITERS (100 messages
# of 64 KiB per bandwidth run), ITERS (300 per latency run), PLANEFAIL (1: also the plane-
# failure runs), OUT (docs/results: where the CSV, JSON and PNG files go),
# PERF (1: profile both guests during every program, guest-perftest.sh
# --perf: where a condition's time goes; the profiles are in the guest logs,
# perf-*.txt, and the run's numbers are not for comparison), LINK (a rate,
# e.g. 40mbit: every plane a link of that rate with an ECN-marking queue,
# guest-perftest.sh --link; unset: as fast as the emulator goes, no marks),
# KERNEL (6.1: the guests' kernel, vmtest.sh --kernel).
#
# Three sides alternate within each round (benchmarks/guest-perftest.sh):
# MetaRoCE over both planes (mr2), MetaRoCE over plane 0 only (mr1) and
# rdma_rxe on plane 0 (rxe; it has one netdev).  SIDES (mr2,mr1,rxe) may
# add variants of the MetaRoCE sides (mr2w128: window 128; mr1g8: loss
# gate at 8 ms; see
# guest-perftest.sh), reported against their base side in a table of
# their own.  mr2 against rxe is the
# deployment comparison, mr1 against rxe the like-for-like one (same link,
# same netem).  netem is on every plane of both guests.  Prints the medians,
# the ratios to rxe and to each side's own lossless run, the targets of
# issue 7 and whether they were met, and the plane-failure numbers; writes
#   OUT/testbed-perftest.csv   every run: round,cond,side,prog,value,unit
#   OUT/testbed-planefail.csv  the per-plane tx timelines around the cuts
#   OUT/testbed-counters.csv   mr0's transport counters over each MetaRoCE run, both guests
#   OUT/testbed.json           medians, ratios, targets, plane failure, host load
#   OUT/testbed-loss.png       throughput (and latency) against the condition
#   OUT/testbed-planefail.png  per-plane packet rate around the cuts
# and the markdown tables to the log directory (tables.md).  The plane-failure
# transfers are also captured on the host's loopback (LOG/planefail.pcap, with
# tcpdump if installed) and timed in 10 ms bins (benchmarks/planefail_capture.py).
# A benchmark, not a test: it fails only if a program failed (the guests'
# exit status), never on a number.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -e "${1:-$root/build}")
rounds=${ROUNDS:-3}
conds=${CONDS:-0,0.1,1,5,burst,reorder}
progs=${PROGS:-ib_write_bw,ib_send_bw,ib_read_bw,ib_send_lat}
bw_iters=${BW_ITERS:-100}
iters=${ITERS:-300}
sides=${SIDES:-mr2,mr1,rxe}
out=$(realpath -m "${OUT:-$root/docs/results}")
mkdir -p "$out"
log=$(mktemp -d "${TMPDIR:-/tmp}/metaroce-loss-vs-rxe.XXXXXX")
pf=()
[ "${PLANEFAIL:-1}" = 1 ] && pf=(--planefail)

# The host's load average once a minute: the CPU is shared, and TCG guests
# slow down with it.
(while :; do echo "$(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 60; done) >"$log/load.txt" &
loadpid=$!
trap 'kill $loadpid ${cappid:-} 2>/dev/null || :' EXIT
start=$(date -u +%FT%TZ)
commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
# The plane-failure transfers, as the host's loopback carries the qemu
# links' datagrams (benchmarks/planefail_capture.py): from when guest 1
# starts the first of them to the end of the run.  Headers only (-s 160).
cappid=
if [ -n "${pf[*]}" ] && command -v tcpdump >/dev/null; then
	(
		while [ ! -e "$log/guest1/planefail-plane0-only.txt" ]; do sleep 0.2; done
		exec tcpdump -q -i lo -s 160 -B 16384 -w "$log/planefail.pcap" \
			'udp and dst host 127.0.0.1 and dst portrange 40000-59999' 2>"$log/tcpdump.txt"
	) &
	cappid=$!
fi
rc=0
"$root/tests/vm/vmtest.sh" --kernel "${KERNEL:-6.1}" --guests 2 --planes 2 --timeout 5400 --out "$log" -- \
	"$root/benchmarks/guest-perftest.sh" "$build" --rounds "$rounds" --sides "$sides" \
	--conds "$conds" --progs "$progs" --bw-iters "$bw_iters" --iters "$iters" "${pf[@]}" \
	${PERF:+--perf} ${LINK:+--link "$LINK"} || rc=$?
kill $loadpid 2>/dev/null || :
# SIGTERM: tcpdump writes out what it buffered (SIGINT is ignored by a
# background job of a script).
if [ -n "$cappid" ]; then
	kill "$cappid" 2>/dev/null || :
	wait "$cappid" 2>/dev/null || :
fi
echo "$(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log/load.txt"
[ -f "$log/guest1/bench.txt" ] || { echo "loss-vs-rxe: no results, logs in $log" >&2; exit 1; }

python3 "$root/benchmarks/testbed_report.py" --log "$log" --out "$out" --rounds "$rounds" \
	--conds "$conds" --progs "$progs" --bw-iters "$bw_iters" --iters "$iters" \
	--start "$start" --kernel "$(sed -n 's/.* on \([^,]*\), 2 guest.*/\1/p' "$log/summary.txt")" \
	--commit "$commit" |
	tee "$log/tables.md"
echo "outputs in $out; guest logs in $log"
[ "$rc" = 0 ] || echo "loss-vs-rxe: a program failed (see the fail cells and $log/summary.txt)" >&2
exit "$rc"
