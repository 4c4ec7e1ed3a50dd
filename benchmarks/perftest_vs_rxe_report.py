#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Report of benchmarks/perftest-vs-rxe.sh: the medians of MetaRoCE (side mr1)
and rdma_rxe per program from guest-perftest.sh's bench.txt ("round cond side
prog value unit" lines), their ratio and issue 5's targets, as a markdown
table; every run to a CSV file.  Never fails on a number."""
import argparse
import csv
import math
import statistics

from bench_sides import side_variant

# Issue 5: bandwidth >= 1.0x rxe (aim 1.5x); latency <= 1.1x rxe.
BW_TARGET, BW_AIM, LAT_TARGET = 1.0, 1.5, 1.1
# Sides that vary MetaRoCE's mr1 (benchmarks/guest-perftest.sh): what each
# is, and its column name.
VARIANTS = {
    "mr1sys": ("the provider's syscall path, METAROCE_NO_RINGS=1", "syscall path"),
    "mr1v2": ("RoCEv2 mode of the same module, METAROCE_TRANSPORT=rocev2", "RoCEv2 mode"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("bench")
    ap.add_argument("--csv")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    rows = []
    for line in open(a.bench):
        f = line.split()
        if len(f) == 6:
            rows.append(dict(zip(("round", "cond", "side", "prog", "value", "unit"), f)))
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=("round", "cond", "side", "prog", "value", "unit"))
            w.writeheader()
            w.writerows(rows)
    progs = list(dict.fromkeys(r["prog"] for r in rows))
    print(f"# perftest: MetaRoCE (1 plane) vs rdma_rxe, lossless ({a.title})\n")
    print("| program | unit | MetaRoCE | rxe | MetaRoCE / rxe | target | met |")
    print("|---|---|---|---|---|---|---|")
    for p in progs:
        m, x = side_cells(rows, p, "mr1"), side_cells(rows, p, "rxe")
        unit = m["unit"] or x["unit"]
        ratio = m["median"] / x["median"] if m["median"] is not None and x["median"] else None
        if unit == "us":
            target, met = f"<= {LAT_TARGET}", ratio is not None and ratio <= LAT_TARGET
        else:
            target = f">= {BW_TARGET} (aim {BW_AIM})"
            met = ratio is not None and ratio >= BW_TARGET
        verdict = "-" if ratio is None else ("yes" if met else "**no**")
        print(f"| {p} | {unit} | {cell(m)} | {cell(x)} | "
              f"{'-' if ratio is None else f'{ratio:.2f}'} | {target} | {verdict} |")
    print("\nmedians of the rounds (each round's value in brackets); latency is t_typical")
    variants = dict(VARIANTS)
    for side in dict.fromkeys(r["side"] for r in rows):
        sv = side_variant(side)
        if sv and sv[0] == "mr1":
            variants[side] = (sv[1], sv[1])
    for side, (title, name) in variants.items():
        if not any(r["side"] == side for r in rows):
            continue
        print(f"\n## MetaRoCE (mr1) vs {title} ({side})\n")
        print(f"| program | unit | mr1 | {name} | mr1 / {name} | {name} / rxe |")
        print("|---|---|---|---|---|---|")
        for p in progs:
            m, v, x = (side_cells(rows, p, s) for s in ("mr1", side, "rxe"))
            print(f"| {p} | {m['unit'] or v['unit']} | {cell(m)} | {cell(v)} | "
                  f"{ratio_cell(m, v)} | {ratio_cell(v, x)} |")


def side_cells(rows, prog, side):
    """The median of one side's runs of PROG and how many gave no value."""
    runs = [r for r in rows if r["prog"] == prog and r["side"] == side]
    done = [float(r["value"]) for r in runs if r["value"] != "fail"]
    # perftest may print nan, inf or 0.00 for a run that exited 0 but
    # measured nothing: no value, not a failure, not a median
    vals = [v for v in done if math.isfinite(v) and v > 0]
    return dict(unit=runs[0]["unit"] if runs else "",
                median=statistics.median(vals) if vals else None,
                failed=len(runs) - len(done), void=len(done) - len(vals), vals=vals)


def ratio_cell(a, b):
    """a's median over b's, or - if either has none."""
    if a["median"] is None or not b["median"]:
        return "-"
    return f"{a['median'] / b['median']:.2f}"


def cell(c):
    s = "-" if c["median"] is None else f"{c['median']:.2f}"
    s += f" ({', '.join(f'{x:.2f}' for x in c['vals'])})" if c["vals"] else ""
    s += f" ({c['failed']} failed)" if c["failed"] else ""
    return s + (f" ({c['void']} without a value)" if c["void"] else "")


if __name__ == "__main__":
    main()
