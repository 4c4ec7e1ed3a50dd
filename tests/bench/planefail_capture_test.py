#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""benchmarks/planefail_capture.py against captures written here: the three
plane-failure transfers with a known stall, and captures it must refuse."""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "benchmarks"))
import planefail_capture  # noqa: E402

SNAP = 160


def ipv4_udp(sport, dport, payload, total=None):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload
    length = total if total is not None else 20 + len(udp)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, length, 0, 0, 64, 17, 0,
                     bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
    return b"\0" * 12 + b"\x08\x00" + ip + udp


def frame(sport, data=True):
    """A qemu dgram datagram from host port sport carrying a guest frame:
    MetaRoCE data (1100 bytes on the wire) or an ACK."""
    inner = ipv4_udp(49152, 4793, b"\0" * 64, total=1100 if data else 80)
    return ipv4_udp(sport, 45000, inner)


def write_pcap(path, pkts):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for t, fr in sorted(pkts, key=lambda p: p[0]):
            sec = int(t)
            usec = int(round((t - sec) * 1e6))
            cut = fr[:SNAP]
            f.write(struct.pack("<IIII", sec, usec, len(cut), len(fr)) + cut)


P0, P1, RX = 45001, 45003, 45000


def steady(pkts, port, t0, t1, step=0.002, odd_bins_empty=False):
    """One data frame every step seconds on port: 5 per 10 ms bin (none in
    every other bin with odd_bins_empty)."""
    n = int(round((t1 - t0) / step))
    for i in range(n):
        if odd_bins_empty and (i // 5) % 2:
            continue
        pkts.append((t0 + 0.001 + i * step, frame(port)))
        pkts.append((t0 + 0.0015 + i * step, frame(RX, data=False)))


def three_transfers(stalling_alone=False):
    pkts = []
    base = 1000.0
    # plane 0 alone, 4 s (with stalling_alone, every other bin empty)
    steady(pkts, P0, base, base + 4, odd_bins_empty=stalling_alone)
    # silent cut at +8 s: everything stalls 100 ms, then plane 0 alone
    b = base + 6
    steady(pkts, P0, b, b + 2)
    steady(pkts, P1, b, b + 2)
    steady(pkts, P0, b + 2.1, b + 6)
    steady(pkts, P0, b + 6, b + 8)
    steady(pkts, P1, b + 6, b + 8)
    # visible cut at +18 s: plane 0 goes on at full rate at once
    b = base + 16
    steady(pkts, P0, b, b + 8)
    steady(pkts, P1, b, b + 2)
    steady(pkts, P1, b + 6, b + 8)
    return pkts


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.pcap")
        write_pcap(path, three_transfers())
        r = planefail_capture.analyze(path)
        check("error" not in r, "analysis failed: %s" % r)
        v = r["variants"]
        alone = v["plane0-only"]
        check(alone["capacity_per_bin"] == 5 and alone["median_per_bin"] == 5, "capacity %s" % alone)
        # (frames on bin edges fall either way: a few bins hold 4 and 6)
        check(alone["baseline_first_share"] >= 0.9 and alone["baseline_sustained_share"] == 1,
              "steady baseline %s" % alone)
        netem, down = v["netem"], v["linkdown"]
        check(abs(netem["cut_s"] - 4.0) < 0.01, "netem cut %s" % netem)
        check(100 <= netem["first_ms"] <= 120, "netem first_ms %s" % netem)
        check(100 <= netem["sustained_ms"] <= 120, "netem sustained_ms %s" % netem)
        check(netem["first_100ms_per_bin"][1:10] == [0] * 9, "netem stall %s" % netem)
        check(abs(down["cut_s"] - 4.0) < 0.01, "linkdown cut %s" % down)
        check(down["first_ms"] <= 20 and down["sustained_ms"] <= 20, "linkdown %s" % down)
        check(netem["first_100ms_share"] <= 0.1, "netem share %s" % netem)
        check(0.9 <= down["first_100ms_share"] <= 1.1, "linkdown share %s" % down)
        # plane 0 alone stalls every other bin: its capacity is the mean, 2.5
        # per bin, which half its bins and every 100 ms window reach
        write_pcap(path, three_transfers(stalling_alone=True))
        alone = planefail_capture.analyze(path)["variants"]["plane0-only"]
        check(alone["capacity_per_bin"] == 2.5 and alone["median_per_bin"] in (0, 2.5, 5),
              "stalling capacity %s" % alone)
        check(0.4 <= alone["baseline_first_share"] <= 0.6, "stalling bins %s" % alone)
        check(alone["baseline_sustained_share"] == 1, "stalling windows %s" % alone)
        # only one plane's port: not the capture of two planes
        write_pcap(path, [p for p in three_transfers() if p[1][34:36] != struct.pack(">H", P1)])
        check("error" in planefail_capture.analyze(path), "one port accepted")
        # two transfers instead of three
        write_pcap(path, [p for p in three_transfers() if p[0] < 1014.5])
        r = planefail_capture.analyze(path)
        check("found 2" in r.get("error", ""), "two transfers accepted: %s" % r)
    print("planefail_capture: ok")


if __name__ == "__main__":
    main()
