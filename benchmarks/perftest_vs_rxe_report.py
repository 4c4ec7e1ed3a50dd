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

# Issue 5: bandwidth >= 1.0x rxe (aim 1.5x); latency <= 1.1x rxe.
BW_TARGET, BW_AIM, LAT_TARGET = 1.0, 1.5, 1.1


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
        print(f"| {p} | {unit} | {cell(m)} | {cell(x)} | "
              f"{'-' if ratio is None else f'{ratio:.2f}'} | {target} | {'yes' if met else '**no**'} |")
    print("\nmedians of the rounds (each round's value in brackets); latency is t_typical")
    if any(r["side"] == "mr1sys" for r in rows):
        print("\n## MetaRoCE: mapped rings (mr1) vs the syscall path (mr1sys, METAROCE_NO_RINGS=1)\n")
        print("| program | unit | rings | syscall path | rings / syscall path |")
        print("|---|---|---|---|---|")
        for p in progs:
            m, c = side_cells(rows, p, "mr1"), side_cells(rows, p, "mr1sys")
            ratio = m["median"] / c["median"] if m["median"] is not None and c["median"] else None
            print(f"| {p} | {m['unit'] or c['unit']} | {cell(m)} | {cell(c)} | "
                  f"{'-' if ratio is None else f'{ratio:.2f}'} |")


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


def cell(c):
    s = "-" if c["median"] is None else f"{c['median']:.2f}"
    s += f" ({', '.join(f'{x:.2f}' for x in c['vals'])})" if c["vals"] else ""
    s += f" ({c['failed']} failed)" if c["failed"] else ""
    return s + (f" ({c['void']} without a value)" if c["void"] else "")


if __name__ == "__main__":
    main()
