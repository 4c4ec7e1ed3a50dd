#!/usr/bin/env bash
# The MetaRoCE demo on a fresh Debian 12 machine: install dependencies,
# build, then
#   1. boot a qemu guest on Debian's kernel, create the metaroce device mr0
#      and show it through unmodified verbs tools (ibv_devices, ibv_devinfo);
#   2. boot two guests joined by a UDP link and measure the kernel's
#      rdma_rxe (RoCEv2, go-back-N) with ibv_rc_pingpong and ib_write_bw
#      lossless and at 1% loss: the collapse MetaRoCE exists to avoid;
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

say "2. rdma_rxe (RoCEv2, go-back-N) between two guests, lossless and at 1% loss"
"$root/tests/vm/vmtest.sh" --guests 2 --planes 1 --timeout 600 --out "$out/rxe" -- \
	"$root/scripts/demo/guest-rxe-loss.sh" 0 1
csv=$(find "$out/rxe" -name results.csv | head -n1)
cp "$csv" "$out/results.csv"

say "3. MetaRoCE vs RoCEv2 go-back-N in ns-3 (same core, 16 hosts x 8 planes, 1% loss)"
for t in metaroce rocev2; do
	"$build/sim/metaroce-sim" --transport "$t" --loss 0.01 --planes 8 --nodes 16 \
		--workload all-to-all --seed 1 --json >"$out/sim-$t.json"
done

say "results"
python3 - "$out" <<'PY'
import csv, json, sys, os
out = sys.argv[1]
rows = list(csv.reader(open(os.path.join(out, "results.csv"))))
val = {(r[1], r[2]): float(r[3]) for r in rows if r[3]}
print("testbed, rdma_rxe (kernel RoCEv2) between two qemu guests:")
for test, unit in (("ibv_rc_pingpong", "us/iter"), ("ib_write_bw", "MB/s")):
    a, b = val.get(("0", test)), val.get(("1", test))
    if a and b:
        ratio = b / a if test == "ib_write_bw" else a / b
        print(f"  {test:16} lossless {a:9.2f} {unit}   1% loss {b:9.2f} {unit}"
              f"   kept {ratio:.2f}x")
print("ns-3, one sans-IO core in both modes, 1% loss, 8 planes:")
for t in ("metaroce", "rocev2"):
    j = json.load(open(os.path.join(out, f"sim-{t}.json")))
    print(f"  {t:9} goodput {j['goodput_gbps']:8.2f} Gb/s of {j['lossless_goodput_gbps']:8.2f}"
          f" lossless = {j['goodput_ratio']:.3f}   retransmitted {j['retransmitted_packets']}"
          f"   corrupted bytes {j['bytes_corrupted']}")
PY
echo
echo "logs and results: $out"
