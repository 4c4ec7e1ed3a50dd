#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# perftest on MetaRoCE (rdma_metaroce.ko + libmetaroce) and on the kernel's
# rdma_rxe, side by side in one run of the two-guest qemu testbed:
#   benchmarks/perftest-vs-rxe.sh [BUILD_DIR] [ROUNDS] [LOSS%...]
# (defaults: build, 3 rounds, losses 0 and 1).  Same guests, same link, same
# MTU and netem for both; the two transports alternate within each round.
# Prints per loss the median of each transport, the ratio MetaRoCE/rxe
# (bandwidth: higher is better; latency: lower is better) and MetaRoCE's
# throughput relative to its own lossless run, and writes the raw rows and
# the table to benchmarks/results/perftest-vs-rxe.{txt,md}.
# A benchmark, not a test: nothing here passes or fails on a number.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -e "${1:-$root/build}")
rounds=${2:-3}
shift $(($# > 2 ? 2 : $#))
losses=("$@")
[ ${#losses[@]} -gt 0 ] || losses=(0 1)
outdir=$root/benchmarks/results
mkdir -p "$outdir"
log=$(mktemp -d)

"$root/tests/vm/vmtest.sh" --guests 2 --timeout $((600 * rounds)) --out "$log" -- \
	"$root/benchmarks/guest-perftest-vs-rxe.sh" "$build" "$rounds" "${losses[@]}" ||
	{ echo "perftest-vs-rxe: the guests failed, logs in $log" >&2; exit 1; }
raw=$log/guest1/bench.txt
cp "$raw" "$outdir/perftest-vs-rxe.txt"

python3 - "$outdir/perftest-vs-rxe.txt" "$rounds" <<'PY' | tee "$outdir/perftest-vs-rxe.md"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
fails = {}
for r, loss, tr, prog, v in rows:
    try:
        med.setdefault((loss, tr, prog), []).append(float(v))
    except ValueError:
        fails[(loss, tr, prog)] = fails.get((loss, tr, prog), 0) + 1
m = {k: statistics.median(v) for k, v in med.items()}
progs = ["ib_write_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat"]
losses = sorted({k[0] for k in m} | {k[0] for k in fails}, key=float)
print(f"perftest, two TCG guests, {sys.argv[2]} rounds, medians "
      "(bw: MB/s, 64 KiB; lat: t_typical us, 64 B)\n")
print("| loss % | program | metaroce | rxe | metaroce/rxe | metaroce vs own lossless | rxe vs own lossless |")
print("|---|---|---|---|---|---|---|")
def cell(k):
    if k in m:
        s = f"{m[k]:.2f}"
    else:
        s = "-"
    if k in fails:
        s += f" ({fails[k]} failed)"
    return s
for loss in losses:
    for p in progs:
        a, b = (loss, "mr", p), (loss, "rxe", p)
        ratio = f"{m[a] / m[b]:.2f}" if a in m and b in m and m[b] else "-"
        own = lambda t: (f"{m[(loss, t, p)] / m[('0', t, p)]:.2f}"
                         if p.endswith("bw") and (loss, t, p) in m and ('0', t, p) in m and m[('0', t, p)] else "-")
        print(f"| {loss} | {p} | {cell(a)} | {cell(b)} | {ratio} | {own('mr')} | {own('rxe')} |")
PY
echo "raw rows: $outdir/perftest-vs-rxe.txt; guest logs: $log"
