#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Run metaroce-compliance --json and check its verdicts.

  check-results.py --all-pass -- PROGRAM ARGS...
      exit status 0 and every case "pass" (no fail, no n/a)
  check-results.py --expect-fail CASE[,CASE...] -- PROGRAM ARGS...
      exit status 1 and each named case "fail": the suite detects the
      broken DUT (--dut-fault) in the cases that check that behaviour
"""
import json
import subprocess
import sys


def main():
    args = sys.argv[1:]
    if "--" not in args:
        sys.exit(__doc__)
    sep = args.index("--")
    opts, cmd = args[:sep], args[sep + 1:] + ["--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        sys.exit(f"not JSON ({e}): {proc.stdout[:400]!r} {proc.stderr[:400]!r}")
    results = {r["case"]: r for r in doc["results"]}
    for r in doc["results"]:
        if set(r) != {"id", "case", "status", "detail"} or \
                r["status"] not in ("pass", "fail", "n/a") or \
                not r["id"].startswith("MR-"):
            sys.exit(f"bad result object {r}")
    errors = []
    if opts == ["--all-pass"]:
        if proc.returncode != 0:
            errors.append(f"exit status {proc.returncode}, want 0")
        errors += [f"{c}: {r['status']}: {r['detail']}"
                   for c, r in results.items() if r["status"] != "pass"]
    elif len(opts) == 2 and opts[0] == "--expect-fail":
        if proc.returncode != 1:
            errors.append(f"exit status {proc.returncode}, want 1")
        for c in opts[1].split(","):
            if c not in results:
                errors.append(f"{c}: not run")
            elif results[c]["status"] != "fail":
                errors.append(f"{c}: {results[c]['status']} against a broken DUT")
    else:
        sys.exit(__doc__)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(results)} cases, {doc['failed']} failed, "
          f"{'OK' if not errors else 'FAILED'}")
    sys.exit(1 if errors else 0)


main()
