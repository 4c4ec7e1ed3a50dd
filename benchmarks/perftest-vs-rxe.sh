#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Issue 5's benchmark: perftest over MetaRoCE (rdma_metaroce.ko + libmetaroce,
# one plane) against the kernel's rdma_rxe on the same link, lossless, in the
# two-guest qemu testbed:
#   benchmarks/perftest-vs-rxe.sh [BUILD_DIR]
# Environment (defaults): ROUNDS (3), PROGS (ib_write_bw,ib_send_bw,ib_read_bw,
# ib_send_lat,ib_write_lat), SIDES (mr1,rxe; also mr1sys, MetaRoCE on the
# provider's syscall path, and mr1v2, the module in RoCEv2 mode: see
# guest-perftest.sh), BW_ITERS (200 messages of 64 KiB), ITERS (500 latency
# iterations of 64 B), KERNEL (6.1), OUT (a new directory under
# ${TMPDIR:-/tmp}: where perftest-vs-rxe.csv and .md go), PERF (1: profile
# both guests during every program, guest-perftest.sh --perf; the profiles
# are in OUT/log/guest*/perf-*.txt).
#
# The sides (mr1: MetaRoCE, rxe) run back to back for every program, their
# order reversed every other round (benchmarks/guest-perftest.sh).  Prints the
# medians per side, the ratio MetaRoCE / rxe and issue 5's targets: bandwidth
# >= 1.0x rxe (aim 1.5x), latency (t_typical) <= 1.1x rxe.  A benchmark, not a
# test: it fails only if a program failed, never on a number.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -e "${1:-$root/build}")
rounds=${ROUNDS:-3}
progs=${PROGS:-ib_write_bw,ib_send_bw,ib_read_bw,ib_send_lat,ib_write_lat}
sides=${SIDES:-mr1,rxe}
bw_iters=${BW_ITERS:-200}
iters=${ITERS:-500}
kernel=${KERNEL:-6.1}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/metaroce-perftest-vs-rxe.XXXXXX")}
mkdir -p "$out"
log=$out/log
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
"$root/tests/vm/vmtest.sh" --kernel "$kernel" --guests 2 --planes 1 --timeout 3600 --out "$log" -- \
	"$root/benchmarks/guest-perftest.sh" "$build" --rounds "$rounds" --sides "$sides" \
	--conds 0 --progs "$progs" --bw-iters "$bw_iters" --iters "$iters" \
	${PERF:+--perf} || rc=$?
[ -f "$log/guest1/bench.txt" ] || { echo "perftest-vs-rxe: no results, logs in $log" >&2; exit 1; }
python3 "$root/benchmarks/perftest_vs_rxe_report.py" "$log/guest1/bench.txt" \
	--csv "$out/perftest-vs-rxe.csv" --title "$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), kernel $kernel, $rounds rounds, host load $load_start .. $(cut -d' ' -f1-3 /proc/loadavg)" |
	tee "$out/perftest-vs-rxe.md"
echo "outputs in $out"
[ "$rc" = 0 ] || echo "perftest-vs-rxe: a program failed (see $log/summary.txt)" >&2
exit "$rc"
