#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Goodput ratio vs packet loss for MetaRoCE and RoCEv2 (go-back-N).

Runs metaroce-sim for every (transport, loss, seed), writes one CSV row per
run and a PNG (gnuplot) of the mean goodput ratio against loss.

  metaroce-sim-sweep --out sweep-out [sim options]      (installed)
  sim/sweep.py --sim build/sim/metaroce-sim --out sweep-out [sim options]

Options after the known ones are passed to metaroce-sim unchanged (e.g.
--nodes 8 --planes 4 --workload all-to-all --message-size 1048576).
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

FIELDS = ["transport", "loss", "seed", "goodput_gbps", "lossless_goodput_gbps",
          "goodput_ratio", "retransmitted_packets", "fct_p50_us", "fct_p99_us",
          "bytes_delivered", "bytes_offered", "bytes_corrupted", "wall_time_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sim", default="metaroce-sim",
                    help="metaroce-sim binary (default: the one on PATH)")
    ap.add_argument("--out", default="sweep-out", help="output directory")
    ap.add_argument("--losses", default="0,0.001,0.005,0.01,0.02,0.03,0.05",
                    help="comma-separated loss probabilities")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per point")
    ap.add_argument("--transports", default="metaroce,rocev2")
    args, sim_args = ap.parse_known_args()

    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "goodput_vs_loss.csv")
    losses = [float(x) for x in args.losses.split(",")]
    transports = args.transports.split(",")
    means = {}
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for t in transports:
            for loss in losses:
                ratios = []
                for seed in range(1, args.seeds + 1):
                    cmd = [args.sim, "--transport", t, "--loss", str(loss),
                           "--seed", str(seed), *sim_args, "--json"]
                    out = subprocess.run(cmd, check=True, capture_output=True,
                                         text=True).stdout
                    r = json.loads(out)
                    if r["bytes_corrupted"]:
                        sys.exit(f"corrupted payload: {' '.join(cmd)}")
                    w.writerow({k: r[k] for k in FIELDS})
                    f.flush()
                    ratios.append(r["goodput_ratio"])
                    print(f"{t} loss={loss} seed={seed} "
                          f"ratio={r['goodput_ratio']:.4f} "
                          f"goodput={r['goodput_gbps']:.1f} Gbps", flush=True)
                means[(t, loss)] = sum(ratios) / len(ratios)

    dat_path = os.path.join(args.out, "goodput_vs_loss.dat")
    with open(dat_path, "w") as f:
        f.write("# loss_percent " + " ".join(transports) + "\n")
        for loss in losses:
            f.write(f"{loss * 100:g} " +
                    " ".join(f"{means[(t, loss)]:.4f}" for t in transports) +
                    "\n")
    print(f"wrote {csv_path}")

    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot", file=sys.stderr)
        return
    png_path = os.path.join(args.out, "goodput_vs_loss.png")
    title = " ".join(sim_args) or "defaults"
    plots = ", ".join(
        f"'{dat_path}' using 1:{i + 2} with linespoints title '{t}'"
        for i, t in enumerate(transports))
    script = f"""
set terminal png size 800,500
set output '{png_path}'
set title 'goodput / lossless goodput ({title})' noenhanced
set xlabel 'packet loss (%)'
set ylabel 'goodput ratio'
set yrange [0:1.05]
set grid
set key bottom left
plot {plots}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(f"wrote {png_path}")


if __name__ == "__main__":
    main()
