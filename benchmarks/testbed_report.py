#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Report of benchmarks/loss-vs-rxe.sh: reads the guests' results in a vmtest
log directory, writes CSV, JSON and (with gnuplot) PNG files and prints the
markdown tables.  Never fails on a number."""
import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys

from bench_sides import side_variant
import planefail_capture

SIDES = {"mr2": "MetaRoCE, 2 planes", "mr1": "MetaRoCE, 1 plane",
         "rxe": "rdma_rxe (RoCEv2), 1 netdev"}
COND_LABEL = {"0": "lossless", "burst": "burst ~1%", "reorder": "reorder"}
# Issue 7's targets: throughput at loss L kept >= F of the side's own lossless.
KEEP_TARGETS = (("1", 0.90), ("5", 0.70))
# Plane failure: back to >= this fraction of the surviving plane's capacity.
RECOVERY_FRACTION = 0.9
RECOVERY_TARGET_MS = 10


def cond_label(c):
    return COND_LABEL.get(c, f"{c}% loss")


def read_rows(path):
    rows = []
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            if len(f) == 6:
                rows.append(dict(zip(("round", "cond", "side", "prog", "value", "unit"), f)))
    return rows


def parse_timeline(path):
    """Samples (t, plane0, plane1) and marks {name: t} of a planefail file."""
    samples, marks = [], {}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "#":
            marks[f[1]] = float(f[2])
        elif len(f) == 3:
            samples.append((float(f[0]), int(f[1]), int(f[2])))
    return samples, marks


def rates(samples):
    """Per sampling interval: (t_start, t_end, plane0 pkt/s, plane1 pkt/s)."""
    out = []
    for (t0, a0, b0), (t1, a1, b1) in zip(samples, samples[1:]):
        dt = t1 - t0
        if dt > 0:
            out.append((t0, t1, (a1 - a0) / dt, (b1 - b0) / dt))
    return out


def read_rc(path):
    d = {}
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            if len(f) == 2:
                d[f[0]] = float(f[1]) if f[0] == "client_bw_MBps" else int(f[1])
    return d


# Transport counters shown per run (guest-perftest.sh's counters.txt): the
# sender's loss recovery, and the receiver's ACKs and duplicates.
COUNTERS = ("retransmits", "spurious_retrans", "lost", "timeouts", "path_silences", "tlp_probes",
            "path_failures", "rx_duplicates", "tx_packets", "give_ups", "retry_exhausted")


def read_counters(log):
    """{(round, cond, side, prog): {guest: {counter: after - before}}}."""
    out = {}
    for g in (0, 1):
        path = os.path.join(log, f"guest{g}", "counters.txt")
        if not os.path.exists(path):
            continue
        snap = {}
        for line in open(path):
            f = line.split()
            if len(f) == 7:
                snap.setdefault(tuple(f[:4]), {}).setdefault(f[4], {})[f[5]] = int(f[6])
        for run, ph in snap.items():
            if "before" in ph and "after" in ph:
                out.setdefault(run, {})[g] = {c: v - ph["before"].get(c, 0)
                                              for c, v in ph["after"].items()}
    return out


def planefail(log):
    g0, g1 = os.path.join(log, "guest0"), os.path.join(log, "guest1")
    cap_file = os.path.join(g1, "planefail-plane0-only.txt")
    if not os.path.exists(cap_file):
        return None, []
    s, m = parse_timeline(cap_file)
    r = [x for x in rates(s) if m["start"] + 0.5 <= x[0] and x[1] <= m["end"] - 0.5]
    capacity = statistics.median(x[2] + x[3] for x in r) if r else 0.0
    result = {"plane0_only_pps": capacity,
              "plane0_only": {**read_rc(os.path.join(g1, "planefail-plane0-only.rc")),
                              **read_rc(os.path.join(g0, "planefail-plane0-only.rc"))},
              "sample_interval_ms": 100, "variants": {}}
    timeline = []
    for variant in ("netem", "linkdown"):
        path = os.path.join(g1, f"planefail-{variant}.txt")
        if not os.path.exists(path):
            continue
        s, m = parse_timeline(path)
        r = rates(s)
        rc = {**read_rc(os.path.join(g1, f"planefail-{variant}.rc")),
              **read_rc(os.path.join(g0, f"planefail-{variant}.rc"))}
        cut, restore = m.get("cut"), m.get("restore")
        if cut is None or restore is None:
            continue        # the guest failed before the cut or the restore
        # Each interval's rate is drawn at its end; "during" the cut are
        # the intervals that start after it (the first may end up to one
        # sampling interval after the cut, so that is the resolution).
        for t0, t, a, b in r:
            timeline.append((variant, round(t - cut, 3), round(a), round(b), round(a + b)))
        pre = [a + b for t0, t, a, b in r if m["start"] + 0.5 <= t0 and t <= cut]
        during = [(t, a + b) for t0, t, a, b in r if t0 >= cut and t <= restore]
        threshold = RECOVERY_FRACTION * capacity
        back = next((t for t, tot in during if tot >= threshold), None)
        after = next((t for t0, t, a, b in r if t0 >= restore and b > 0), None)
        post = [a + b for t0, t, a, b in r if restore + 1.0 <= t0 and t <= m["end"] - 0.5]
        # Programs (of the client and the server) that failed.
        errors = (rc.get("client", 1) != 0) + (rc.get("server", 1) != 0)
        result["variants"][variant] = {
            "cut": {"netem": "netem loss 100% on eth1 of the sender (silent)",
                    "linkdown": "ip link set eth1 down in the sender (the device sees it)"}[variant],
            "client_exit": rc.get("client"), "server_exit": rc.get("server"),
            "application_errors": errors,
            "client_bw_MBps": rc.get("client_bw_MBps"),
            "pre_cut_pps": statistics.median(pre) if pre else None,
            "min_after_cut_pps": min((tot for t, tot in during if t <= cut + 1.0), default=None),
            "during_cut_median_pps": statistics.median(x for _, x in during) if during else None,
            "after_restore_pps": statistics.median(post) if post else None,
            "recovery_threshold_pps": threshold,
            "recovery_ms": round((back - cut) * 1000) if back else None,
            "plane1_back_ms": round((after - restore) * 1000) if after else None,
            "cut_s": round(restore - cut, 2),
            "cut_handover_ms": round((cut - m["cutting"]) * 1000, 1) if "cutting" in m else None,
        }
    # The host's capture of the same transfers, where loss-vs-rxe.sh took one.
    pcap = os.path.join(log, "planefail.pcap")
    if os.path.exists(pcap):
        cap = planefail_capture.analyze(pcap)
        alone = cap.get("variants", {}).get("plane0-only", {})
        result["capture"] = {"bin_ms": cap.get("bin_ms"), "error": cap.get("error"),
                             **{k: alone.get(k) for k in (
                                 "capacity_per_bin", "median_per_bin", "baseline_first_share",
                                 "baseline_sustained_share")}}
        for variant, v in result["variants"].items():
            v["capture"] = cap.get("variants", {}).get(variant)
    return result, timeline


def recovery_ms(v):
    """The recovery time a target is judged by: the capture's (10 ms bins,
    sustained for 100 ms) where there is one, else the guest's samples'."""
    cap = v.get("capture") or {}
    return cap["sustained_ms"] if "sustained_ms" in cap else v["recovery_ms"]


def gnuplot(script):
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plots", file=sys.stderr)
        return
    if subprocess.run(["gnuplot"], input=script, text=True).returncode:
        print("gnuplot failed: a plot is missing or incomplete", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    for a in ("log", "out", "rounds", "conds", "progs", "bw_iters", "iters", "start", "kernel", "commit"):
        ap.add_argument("--" + a.replace("_", "-"), required=True)
    args = ap.parse_args()
    conds, progs = args.conds.split(","), args.progs.split(",")
    rows = read_rows(os.path.join(args.log, "guest1", "bench.txt"))
    srvfail = read_rows(os.path.join(args.log, "guest0", "server-fail.txt"))

    with open(os.path.join(args.out, "testbed-perftest.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("round", "cond", "side", "prog", "value", "unit"))
        for r in rows:
            w.writerow([r[k] for k in ("round", "cond", "side", "prog", "value", "unit")])

    # A run that failed has no number.  A program that exited 0 but printed
    # no usable one (perftest's t_typical "inf", a bandwidth of 0.00) is not
    # a failure and not a measurement either: counted apart, left out of the
    # median.
    vals, fails, voids, units = {}, {}, {}, {}
    for r in rows:
        k = (r["cond"], r["side"], r["prog"])
        units[r["prog"]] = r["unit"]
        try:
            v = float(r["value"])
        except ValueError:
            fails[k] = fails.get(k, 0) + 1
            continue
        if math.isfinite(v) and v > 0:
            vals.setdefault(k, []).append(v)
        else:
            voids[k] = voids.get(k, 0) + 1
    # A server fails with its client; count it only where the client did not.
    client_failed = {(r["round"], r["cond"], r["side"], r["prog"]) for r in rows if r["value"] == "fail"}
    for r in srvfail:
        if (r["round"], r["cond"], r["side"], r["prog"]) not in client_failed:
            k = (r["cond"], r["side"], r["prog"])
            fails[k] = fails.get(k, 0) + 1
    med = {k: statistics.median(v) for k, v in vals.items()}

    def ratio(a, b):
        return med[a] / med[b] if a in med and b in med and med[b] else None

    def f2(x):
        return "-" if x is None else f"{x:.2f}"

    def cell(k):
        s = f"{med[k]:.2f}" if k in med else "-"
        s += f" ({fails[k]} failed)" if k in fails else ""
        return s + (f" ({voids[k]} without a value)" if k in voids else "")

    load = [l.split() for l in open(os.path.join(args.log, "load.txt")) if l.strip()]
    load1 = [float(l[1]) for l in load]
    # guest-perftest.sh --link: "RATE MARK"
    link_file = os.path.join(args.log, "guest1", "link.txt")
    link = open(link_file).read().split() if os.path.exists(link_file) else []
    planes = (f"planes of {link[0]} marking CE at {link[1]} of queue" if link else
              "planes as fast as the emulator, no marking")
    print(f"perftest between two qemu TCG guests (1 vCPU each, kernel {args.kernel}), {planes}, "
          f"{args.rounds} rounds, medians; bandwidth MB/s (64 KiB, -n {args.bw_iters}), "
          f"latency t_typical us (64 B, -n {args.iters}). Host load average (1 min) "
          f"{min(load1):.1f}..{max(load1):.1f} during the run ({args.start}, {args.commit}).\n")
    print("| condition | program | MetaRoCE 2 planes | MetaRoCE 1 plane | rxe | 2 planes / rxe "
          "| 1 plane / rxe | 2 planes vs own lossless | 1 plane vs own lossless | rxe vs own lossless |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    table = []
    for c in conds:
        for p in progs:
            k = {s: (c, s, p) for s in SIDES}
            own = {s: (ratio(k[s], ("0", s, p)) if p.endswith("bw") else None) for s in SIDES}
            entry = {"cond": c, "prog": p, "unit": units.get(p),
                     **{f"{s}_median": med.get(k[s]) for s in SIDES},
                     **{f"{s}_runs": vals.get(k[s], []) for s in SIDES},
                     **{f"{s}_failed": fails.get(k[s], 0) for s in SIDES},
                     **{f"{s}_without_value": voids.get(k[s], 0) for s in SIDES},
                     "mr2_over_rxe": ratio(k["mr2"], k["rxe"]),
                     "mr1_over_rxe": ratio(k["mr1"], k["rxe"]),
                     **{f"{s}_vs_own_lossless": own[s] for s in SIDES}}
            table.append(entry)
            print(f"| {cond_label(c)} | {p} | {cell(k['mr2'])} | {cell(k['mr1'])} | {cell(k['rxe'])} "
                  f"| {f2(entry['mr2_over_rxe'])} | {f2(entry['mr1_over_rxe'])} "
                  f"| {f2(own['mr2'])} | {f2(own['mr1'])} | {f2(own['rxe'])} |")
    print("\nlatency rows: the ratio is MetaRoCE/rxe of t_typical (lower is better)\n")

    # Variants of a MetaRoCE side (guest-perftest.sh: mr2w128 is mr2 with
    # window 128, mr1g8 mr1 with the loss gate at 8 ms), alternated with it
    # in the same rounds.
    variants = {sd: side_variant(sd)[0] for sd in dict.fromkeys(r["side"] for r in rows)
                if side_variant(sd)}
    variant_table = []
    if variants:
        print("Variants of the MetaRoCE sides (mr2w128: mr2 with window 128; mr1g8: mr1 with "
              "the loss gate at 8 ms), alternated with their base side in the same rounds:\n")
        print("| condition | program | variant | variant median | base median | variant / base "
              "| variant vs own lossless | base vs own lossless |")
        print("|---|---|---|---|---|---|---|---|")
        for c in conds:
            for p in progs:
                for v, b in variants.items():
                    kv, kb = (c, v, p), (c, b, p)
                    own_v = ratio(kv, ("0", v, p)) if p.endswith("bw") else None
                    own_b = ratio(kb, ("0", b, p)) if p.endswith("bw") else None
                    variant_table.append({"cond": c, "prog": p, "unit": units.get(p), "variant": v, "base": b,
                                  "variant_median": med.get(kv), "base_median": med.get(kb),
                                  "variant_runs": vals.get(kv, []), "variant_failed": fails.get(kv, 0),
                                  "variant_over_base": ratio(kv, kb),
                                  "variant_vs_own_lossless": own_v, "base_vs_own_lossless": own_b})
                    print(f"| {cond_label(c)} | {p} | {v} | {cell(kv)} | {cell(kb)} | {f2(ratio(kv, kb))} "
                          f"| {f2(own_v)} | {f2(own_b)} |")
        print()

    targets = []
    for p in (p for p in progs if p.endswith("bw")):
        for s in ("mr2", "mr1"):
            for c, frac in KEEP_TARGETS:
                if c in conds:
                    v = ratio((c, s, p), ("0", s, p))
                    targets.append({"target": f"{c}% loss >= {frac:.2f} x own lossless", "prog": p,
                                    "side": s, "value": v, "met": v is not None and v >= frac})
            if "0" in conds:
                v = ratio(("0", s, p), ("0", "rxe", p))
                targets.append({"target": "lossless >= 1.0 x rxe", "prog": p, "side": s,
                                "value": v, "met": v is not None and v >= 1.0})
    pf, timeline = planefail(args.log)
    if pf:
        for variant, v in pf["variants"].items():
            targets.append({"target": "plane failure: zero application errors", "prog": "ib_write_bw",
                            "side": f"mr2 ({variant})", "value": v["application_errors"],
                            "met": v["application_errors"] == 0})
            targets.append({"target": f"plane failure: >= {RECOVERY_FRACTION} x surviving plane "
                            f"within {RECOVERY_TARGET_MS} ms", "prog": "ib_write_bw",
                            "side": f"mr2 ({variant})", "value": recovery_ms(v),
                            "met": recovery_ms(v) is not None and recovery_ms(v) <= RECOVERY_TARGET_MS})
    print("| target (issue 7) | program | side | measured | met |")
    print("|---|---|---|---|---|")
    for t in targets:
        val = t["value"]
        shown = "-" if val is None else (f"{val:.2f}" if isinstance(val, float) else str(val))
        if "within" in t["target"] and val is not None:
            shown += " ms"
        print(f"| {t['target']} | {t['prog']} | {t['side']} | {shown} | {'yes' if t['met'] else '**no**'} |")

    if pf:
        print(f"\nplane failure (ib_write_bw, 64 KiB, MetaRoCE over 2 planes, plane 1 cut in the "
              f"sender for ~4 s): plane 0 alone carries {pf['plane0_only_pps']:.0f} pkt/s "
              f"(plane 1 administratively down, {pf['plane0_only'].get('client_bw_MBps', '-')} MB/s); "
              f"sampled about every {pf['sample_interval_ms']} ms\n")
        print("| cut | cut hand-over ms | app errors | pre-cut pkt/s | lowest in 1 s after cut | median while cut "
              "| back to >= 0.9 x plane 0 alone | plane 1 used again after restore | after restore pkt/s | ib_write_bw MB/s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for variant, v in pf["variants"].items():
            def n(x):
                return "-" if x is None else f"{x:.0f}"
            rec = "not reached" if v["recovery_ms"] is None else f"{v['recovery_ms']} ms"
            back = "-" if v["plane1_back_ms"] is None else f"{v['plane1_back_ms']} ms"
            print(f"| {v['cut']} | {n(v.get('cut_handover_ms'))} | {v['application_errors']} | {n(v['pre_cut_pps'])} "
                  f"| {n(v['min_after_cut_pps'])} | {n(v['during_cut_median_pps'])} | {rec} | {back} "
                  f"| {n(v['after_restore_pps'])} | {v['client_bw_MBps']} |")
        if "capture" in pf:
            capture = pf["capture"]
            print(f"\nthe same transfers in the host's capture of the links "
                  f"(benchmarks/planefail_capture.py, the sender's data frames in "
                  f"{capture['bin_ms']} ms bins): plane 0 alone carries "
                  f"{capture['capacity_per_bin']} per bin (median {capture['median_per_bin']}); "
                  f"with no failure at all, {capture['baseline_first_share']} of its bins and "
                  f"{capture['baseline_sustained_share']} of its 100 ms windows reach 0.9 x that"
                  f"{'; ' + capture['error'] if capture['error'] else ''}\n")
            print("| cut | cut lasted | first bin >= 0.9 x plane 0 alone | "
                  "sustained >= 0.9 x for 100 ms | first 100 ms / plane 0 alone | "
                  "median per bin while cut | first 10 bins |")
            print("|---|---|---|---|---|---|---|")
            for variant, v in pf["variants"].items():
                c = v.get("capture") or {}
                print(f"| {variant} | {c.get('cut_s', '-')} s | {c.get('first_ms', '-')} ms "
                      f"| {c.get('sustained_ms', '-')} ms | {c.get('first_100ms_share', '-')} "
                      f"| {c.get('during_cut_median_per_bin', '-')} "
                      f"| {' '.join(str(x) for x in c.get('first_100ms_per_bin', []))} |")
        with open(os.path.join(args.out, "testbed-planefail.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("variant", "t_from_cut_s", "plane0_pps", "plane1_pps", "total_pps"))
            w.writerows(timeline)

    counters = read_counters(args.log)
    if counters:
        with open(os.path.join(args.out, "testbed-counters.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("round", "cond", "side", "prog", "guest", "counter", "delta"))
            for run in sorted(counters):
                for g in sorted(counters[run]):
                    for c in sorted(counters[run][g]):
                        w.writerow((*run, g, c, counters[run][g][c]))
        print("\ntransport counters of mr0 over the MetaRoCE runs (testbed-counters.csv), summed "
              "over the rounds: guest 1, the client, sends the data of ib_write_bw, ib_send_bw and "
              "the plane-failure runs, guest 0, the server, the READ responses of ib_read_bw; "
              "tx_packets counts ACKs too\n")
        print("| run | guest | " + " | ".join(COUNTERS) + " |")
        print("|---|---|" + "---|" * len(COUNTERS))
        summed = {}
        for (r, c, sd, p), by_guest in counters.items():
            for g, d in by_guest.items():
                acc = summed.setdefault((c, sd, p, g), {})
                for k in COUNTERS:
                    acc[k] = acc.get(k, 0) + d.get(k, 0)
        for (c, sd, p, g), acc in sorted(summed.items()):
            print(f"| {cond_label(c) if c in conds else c} {sd} {p} | {g} | " +
                  " | ".join(str(acc[k]) for k in COUNTERS) + " |")

    json.dump({"date": args.start, "commit": args.commit, "kernel": args.kernel, "link": " ".join(link),
               "rounds": int(args.rounds), "bw_iters": int(args.bw_iters), "lat_iters": int(args.iters),
               "host_load_1min": load, "sides": SIDES, "results": table, "variants": variant_table,
               "targets": targets,
               "plane_failure": pf},
              open(os.path.join(args.out, "testbed.json"), "w"), indent=1)

    # Plots: one panel per program, x the conditions in run order; a line
    # for each base side the run had (one whose runs all failed has none).
    ran = set(r["side"] for r in rows)
    plotted = [s for s in SIDES if s in ran]
    dat = os.path.join(args.log, "loss.dat")
    with open(dat, "w") as f:
        for i, c in enumerate(conds):
            f.write(f'{i} "{cond_label(c)}"')
            for p in progs:
                for s in plotted:
                    f.write(f" {med.get((c, s, p), 'NaN')}")
            f.write("\n")
    # each side keeps its colour and mark whichever sides ran
    style = {s: f"lc {k + 1} pt {5 + 2 * k}" for k, s in enumerate(SIDES)}
    panels = []
    for j, p in enumerate(progs):
        unit = units.get(p, "")
        what = "latency t_typical" if p.endswith("lat") else "throughput"
        plots = ", ".join(
            f"'{dat}' using 1:{3 + j * len(plotted) + i}:xtic(2) with linespoints lw 2 {style[s]} "
            f"title '{SIDES[s]}'" for i, s in enumerate(plotted))
        panels.append(f"set title '{p}'\nset ylabel '{what} ({unit}, log scale)'\nplot {plots}")
    cols = 2
    rows_ = (len(progs) + cols - 1) // cols
    gnuplot(f"""set terminal pngcairo noenhanced size 1200,{430 * rows_} font ',10'
set output '{os.path.join(args.out, "testbed-loss.png")}'
set multiplot layout {rows_},{cols} title 'MetaRoCE vs rdma_rxe, two qemu TCG guests, {planes}, medians of {args.rounds} rounds (no point: every run failed)'
set logscale y
set grid
set key bottom left
set xrange [-0.3:{len(conds) - 0.7}]
""" + "\n".join(panels) + "\nunset multiplot\n")
    if pf and timeline:
        tl = os.path.join(args.log, "planefail.dat")
        with open(tl, "w") as f:
            for variant in pf["variants"]:
                for row in (r for r in timeline if r[0] == variant):
                    f.write(" ".join(map(str, row[1:])) + "\n")
                f.write("\n\n")
        panels = []
        for i, (variant, v) in enumerate(pf["variants"].items()):
            panels.append(
                f"set title '{v['cut']}: back to 0.9 x plane 0 alone "
                f"{'not reached' if v['recovery_ms'] is None else str(v['recovery_ms']) + ' ms'}, "
                f"{v['application_errors']} failed programs'\n"
                f"set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc 'red'\n"
                f"set arrow 2 from {v['cut_s']}, graph 0 to {v['cut_s']}, graph 1 nohead dt 2 lc 'dark-green'\n"
                f"plot '{tl}' index {i} using 1:4 with lines lw 2 lc 'black' title 'total', "
                f"'' index {i} using 1:2 with lines lw 2 title 'plane 0', "
                f"'' index {i} using 1:3 with lines lw 2 title 'plane 1', "
                f"{v['recovery_threshold_pps']} with lines dt 2 lw 2 lc 'orange' title '0.9 x plane 0 alone'")
        gnuplot(f"""set terminal pngcairo noenhanced size 1000,800 font ',10'
set output '{os.path.join(args.out, "testbed-planefail.png")}'
set multiplot layout 2,1 title 'MetaRoCE ib_write_bw over 2 planes, plane 1 cut at t = 0 (red) and restored (green); sender tx packets per 100 ms sample'
set grid
set key top right
set xlabel 'time from the cut (s)'
set ylabel 'sender tx packets/s'
set yrange [0:*]
""" + "\n".join(panels) + "\nunset multiplot\n")


if __name__ == "__main__":
    main()
