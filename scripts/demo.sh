#!/usr/bin/env bash
# The MetaRoCE demo on a fresh Debian 12 machine: install dependencies,
# build, then
#   1. boot a qemu guest on Debian's kernel, create the metaroce device mr0
#      and show it through unmodified verbs tools (ibv_devices, ibv_devinfo);
#   2. boot two guests joined by a UDP link and run ibv_rc_pingpong and
#      ib_write_bw over MetaRoCE (mr0) and over the kernel's rdma_rxe
#      (RoCEv2, go-back-N) on the same link, lossless and at 1% loss, and
#      print both throughputs and their ratio (benchmarks/guest-perftest.sh,
#      the driver of benchmarks/loss-vs-rxe.sh; docs/results/testbed.md has
#      the full comparison);
#   3. run the same sans-IO transport core in the ns-3 simulator, MetaRoCE
#      against RoCEv2 go-back-N, at 1% loss over 8 planes.
#
# BUILD_DIR (default: build) selects the build tree; DEMO_OUT (default: a
# new directory under /tmp) receives logs and results.csv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
out=${DEMO_OUT:-$(mktemp -d /tmp/metaroce-demo.XXXXXX)}
mkdir -p "$out"
say() { printf '\n=== %s\n' "$*"; }

say "installing dependencies and building"
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"

say "1. the metaroce device in a qemu guest (Linux $("$root/scripts/kernel-versions.sh" | head -n1))"
"$root/tests/vm/vmtest.sh" --out "$out/device" -- \
	"$root/scripts/demo/guest-device.sh" "$build"
cat "$out"/device/guest0/output.log 2>/dev/null || true

say "2. MetaRoCE vs rdma_rxe (RoCEv2, go-back-N) between two guests, lossless and at 1% loss"
"$root/tests/vm/vmtest.sh" --guests 2 --planes 1 --timeout 600 --out "$out/vs-rxe" -- \
	"$root/benchmarks/guest-perftest.sh" "$build" --rounds 1 --sides mr1,rxe --conds 0,1 \
	--progs ibv_rc_pingpong,ib_write_bw --iters 500 ||
	echo "(a program or a guest failed: the results below say which; logs in $out/vs-rxe)"
cat "$out/vs-rxe/guest1/bench.txt"

say "3. MetaRoCE vs RoCEv2 go-back-N in ns-3 (same core, 16 hosts x 8 planes, 1% loss)"
for t in metaroce rocev2; do
	"$build/sim/metaroce-sim" --transport "$t" --loss 0.01 --planes 8 --nodes 16 \
		--workload all-to-all --seed 1 --json >"$out/sim-$t.json"
done

say "results"
python3 - "$out" <<'PY'
import csv, json, sys, os
out = sys.argv[1]
val, unit = {}, {}
with open(os.path.join(out, "results.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(("transport", "loss_pct", "test", "value", "unit"))
    for line in open(os.path.join(out, "vs-rxe", "guest1", "bench.txt")):
        _, loss, side, test, v, u = line.split()
        side = {"mr1": "metaroce", "rxe": "rxe"}[side]
        w.writerow((side, loss, test, v, u))
        try:
            val[(loss, side, test)] = float(v)
        except ValueError:
            pass
        unit[test] = u
print("testbed, two qemu guests, one UDP link, MetaRoCE vs rdma_rxe (kernel RoCEv2, go-back-N):")
for test in ("ibv_rc_pingpong", "ib_write_bw"):
    for loss in ("0", "1"):
        m, r = val.get((loss, "metaroce", test)), val.get((loss, "rxe", test))
        fmt = lambda x: f"{x:9.2f} {unit[test]}" if x else f"{'failed':>9} {unit.get(test, '')}"
        ratio = f"{m / r:.2f}x" if m and r else "-"
        print(f"  {test:16} {'lossless' if loss == '0' else '1% loss':9} MetaRoCE {fmt(m)}"
              f"   rxe {fmt(r)}   MetaRoCE/rxe {ratio}")
print("ns-3, one sans-IO core in both modes, 1% loss, 8 planes:")
for t in ("metaroce", "rocev2"):
    j = json.load(open(os.path.join(out, f"sim-{t}.json")))
    print(f"  {t:9} goodput {j['goodput_gbps']:8.2f} Gb/s of {j['lossless_goodput_gbps']:8.2f}"
          f" lossless = {j['goodput_ratio']:.3f}   retransmitted {j['retransmitted_packets']}"
          f"   corrupted bytes {j['bytes_corrupted']}")
PY
echo
echo "logs and results: $out"
