#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Plane failure timing from the host's capture of the testbed's links.

usage: planefail_capture.py CAPTURE   (prints JSON)

loss-vs-rxe.sh captures, on the host's loopback, the qemu dgram datagrams
that carry the guests' frames while guest-perftest.sh runs its three
plane-failure transfers (plane 0 alone, the silent cut, the visible cut; in
that order, each an ib_write_bw from guest 1 to guest 0 with gaps of
seconds between them).  The guests' own sampler reads counters every
~100 ms; the capture has the host's microsecond timestamps and costs the
guests nothing, so it can tell whether the transfer recovered within 10 ms.

Only the sender's MetaRoCE data frames count (inner UDP port 4793, more than
512 bytes on the wire: ACKs and probes are smaller).  Each qemu link has
one UDP port per guest; the sender's are the two that carry data, the
lower one plane 0.  Per transfer, in 10 ms bins:
  capacity     mean data frames per bin of the plane 0 alone transfer, its
               first and last 0.5 s left out (its throughput; the median
               is reported beside it);
  baseline_first_share, baseline_sustained_share
               how often plane 0 alone, with no failure at all, meets the
               two criteria below: the share of its bins with >= 0.9 x
               capacity and of its 100 ms windows that average that (TCG
               guests stall, so even an undisturbed transfer misses them
               now and then: the calibration of the two times below);
  cut          the last plane 1 frame before the longest silence of plane 1
               (netem drops in the guest, a link down sends nothing, so the
               host sees plane 1 stop at the cut), restore the first after;
  first_ms     end of the first bin after the cut with >= 0.9 x capacity;
  sustained_ms end of the first bin after the cut from which the next ten
               bins (100 ms) average >= 0.9 x capacity;
  first_100ms_share  the data frames of the first 100 ms after the cut
               over 100 ms of capacity.
"""
import json
import math
import os
import statistics
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "vm"))
from pcap_frames import MR_UDP_PORT, ipv4_udp, records  # noqa: E402

MIN_DATA_BYTES = 512
BIN_S = 0.010
GAP_S = 0.5
RECOVERY_FRACTION = 0.9
VARIANTS = ("plane0-only", "netem", "linkdown")


def data_frames(path):
    """(time, outer UDP source port) of every MetaRoCE frame above
    MIN_DATA_BYTES carried over the host's loopback."""
    out = []
    for t, frame in records(path, whole=False):
        outer = ipv4_udp(frame)
        if not outer:
            continue
        inner = ipv4_udp(outer[1][8:])
        if not inner:
            continue
        ip, udp = inner
        if struct.unpack_from(">H", udp, 2)[0] != MR_UDP_PORT:
            continue
        if struct.unpack_from(">H", ip, 2)[0] <= MIN_DATA_BYTES:
            continue
        out.append((t, struct.unpack_from(">H", outer[1], 0)[0]))
    return out


def segments(times):
    """Split sorted times at silences longer than GAP_S."""
    segs, cur = [], []
    for t in times:
        if cur and t - cur[-1] > GAP_S:
            segs.append(cur)
            cur = []
        cur.append(t)
    if cur:
        segs.append(cur)
    return segs


def bins(times, start, end):
    """Frames per BIN_S bin from start to end."""
    n = max(0, int((end - start) / BIN_S))
    counts = [0] * n
    for t in times:
        i = math.floor((t - start) / BIN_S)
        if 0 <= i < n:
            counts[i] += 1
    return counts


def analyze(path):
    frames = data_frames(path)
    ports = sorted({p for _, p in frames})
    if len(ports) != 2:
        return {"error": "expected the sender's 2 plane ports, found %d" % len(ports)}
    plane = {ports[0]: 0, ports[1]: 1}
    segs = segments(sorted(t for t, _ in frames))
    if len(segs) != len(VARIANTS):
        return {"error": "expected %d transfers, found %d" % (len(VARIANTS), len(segs))}
    result = {"bin_ms": BIN_S * 1000, "variants": {}}
    capacity = None
    for name, seg in zip(VARIANTS, segs):
        start, end = seg[0], seg[-1]
        mine = [(t, plane[p]) for t, p in frames if start <= t <= end]
        v = {"frames": len(mine), "seconds": round(end - start, 3)}
        if name == "plane0-only":
            steady = bins([t for t, _ in mine], start + GAP_S, end - GAP_S)
            capacity = round(statistics.mean(steady), 1) if steady else 0
            v["capacity_per_bin"] = capacity
            v["median_per_bin"] = statistics.median(steady) if steady else 0
            if steady:
                threshold = RECOVERY_FRACTION * capacity
                windows = [sum(steady[i:i + 10]) / 10 for i in range(len(steady) - 9)]
                v["baseline_first_share"] = round(
                    sum(c >= threshold for c in steady) / len(steady), 2)
                v["baseline_sustained_share"] = round(
                    sum(w >= threshold for w in windows) / len(windows), 2) if windows else None
            result["variants"][name] = v
            continue
        p1 = [t for t, pl in mine if pl == 1]
        gaps = [(b - a, a, b) for a, b in zip(p1, p1[1:])]
        if not gaps or not capacity:
            v["error"] = "no cut of plane 1 found"
            result["variants"][name] = v
            continue
        _, cut, restore = max(gaps)
        after = bins([t for t, _ in mine], cut, restore)
        threshold = RECOVERY_FRACTION * capacity
        first = next((i for i, c in enumerate(after) if c >= threshold), None)
        sustained = next((i for i in range(len(after) - 9)
                          if sum(after[i:i + 10]) / 10 >= threshold), None)
        v.update({
            "cut_s": round(restore - cut, 3),
            "threshold_per_bin": threshold,
            "first_ms": round((first + 1) * BIN_S * 1000) if first is not None else None,
            "sustained_ms": (round((sustained + 1) * BIN_S * 1000)
                             if sustained is not None else None),
            "during_cut_median_per_bin": statistics.median(after) if after else None,
            "first_100ms_per_bin": after[:10],
            "first_100ms_share": round(sum(after[:10]) / (10 * capacity), 2),
        })
        result["variants"][name] = v
    return result


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    print(json.dumps(analyze(sys.argv[1]), indent=1))


if __name__ == "__main__":
    main()
