#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Decode a capture with tshark and the MetaRoCE Lua dissector and compare
every frame with the CSV of what was sent (tests/dissector/capture_gen.c).

  check_dissector.py TSHARK LUA PCAP CSV [--perturb]

--perturb changes one expectation (the QPN of the first frame) first: the
check must then fail, which proves it compares what it claims to.
"""
import csv
import subprocess
import sys

FIELDS = ["frame.number", "metaroce.mode", "metaroce.path", "metaroce.qpn",
          "metaroce.opcode", "metaroce.psn", "metaroce.flags",
          "metaroce.sack.range", "metaroce.malformed", "metaroce.crc.status",
          "metaroce.flags.retx", "_ws.malformed", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "_ws.expert.message",
          "infiniband.invariant.crc"]


# Heuristic sub-dissectors of Wireshark's table "infiniband.payload"
# (RPCoRDMA, EoIB, iSER, ...; -G heuristic-decodes lists the protocols,
# not these short names).  The payloads here are arbitrary test bytes that
# they would misread as their protocols.  Names this tshark lacks are left
# out.
IB_PAYLOAD_HEURISTICS = [
    "eth_over_ib", "mellanox_eoib", "fc_infiniband", "sdp_infiniband",
    "iser_infiniband", "lnet_ib", "rpcrdma_infiniband", "smb_direct_infiniband",
    "smcr_infiniband", "nvme_rdma"]


def known_heuristics(tshark):
    cmd = [tshark, "-G", "protocols"]
    for h in IB_PAYLOAD_HEURISTICS:
        cmd += ["--disable-heuristic", h]
    err = subprocess.run(cmd, capture_output=True, text=True).stderr
    return [h for h in IB_PAYLOAD_HEURISTICS
            if "No such protocol %s," % h not in err]


def decode(tshark, lua, pcap):
    cmd = [tshark, "-n", "-r", pcap, "-X", "lua_script:" + lua, "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for h in known_heuristics(tshark):
        cmd += ["--disable-heuristic", h]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True)
    err = "\n".join(l for l in out.stderr.splitlines()
                    if not l.startswith("Running as user"))
    if out.returncode or err:
        sys.exit("tshark failed (%d): %s" % (out.returncode, err))
    rows = []
    for line in out.stdout.splitlines():
        rows.append(dict(zip(FIELDS, line.split("\t"))))
    return rows


def num(s):
    return int(s, 0) if s else None


def main():
    args = [a for a in sys.argv[1:] if a != "--perturb"]
    if len(args) != 4:
        sys.exit(__doc__)
    tshark, lua, pcap, csvpath = args
    with open(csvpath) as f:
        want = list(csv.DictReader(f))
    if "--perturb" in sys.argv:
        want[0]["qpn"] = str(int(want[0]["qpn"]) + 1)
    got = decode(tshark, lua, pcap)
    errors = []
    if len(got) != len(want):
        errors.append("%d frames decoded, %d sent" % (len(got), len(want)))
    stats = {"retx": 0, "sack_ranges": 0, "malformed": 0, "rocev2": 0,
             "opcodes": set()}
    for w, g in zip(want, got):
        fr = w["frame"]

        def check(what, expected, actual):
            if expected != actual:
                errors.append("frame %s: %s %r, sent %r" % (fr, what, actual, expected))

        check("frame", fr, g["frame.number"])
        bad = set(g["metaroce.malformed"].split(",")) - {""}
        if w["expect"] != "ok":
            stats["malformed"] += 1
            if w["expect"] not in bad:
                errors.append("frame %s: malformed %s not flagged (got %s)"
                              % (fr, w["expect"], sorted(bad)))
            if not g["_ws.expert.message"]:
                errors.append("frame %s: no expert info" % fr)
            continue
        check("malformed", set(), bad)
        check("_ws.malformed", "", g["_ws.malformed"])
        check("mode", w["mode"], g["metaroce.mode"])
        check("qpn", int(w["qpn"]), num(g["metaroce.qpn"]))
        check("psn", int(w["psn"]), num(g["metaroce.psn"]))
        if w["mode"] == "rocev2":
            stats["rocev2"] += 1
            check("infiniband opcode", int(w["opcode"]), num(g["infiniband.bth.opcode"]))
            check("infiniband qpn", int(w["qpn"]), num(g["infiniband.bth.destqp"]))
            check("infiniband psn", int(w["psn"]), num(g["infiniband.bth.psn"]))
            # The trailer is the ICRC (MR-COMPAT-012): the InfiniBand
            # dissector's, no CRC32C check of ours.
            check("crc status", "", g["metaroce.crc.status"])
            if not g["infiniband.invariant.crc"]:
                errors.append("frame %s: no infiniband.invariant.crc" % fr)
            continue
        check("crc status", "1", g["metaroce.crc.status"])
        check("path", int(w["path"]), num(g["metaroce.path"]))
        check("opcode", int(w["opcode"]), num(g["metaroce.opcode"]))
        check("flags", int(w["flags"]), num(g["metaroce.flags"]))
        check("sack", w["sack"].replace(";", ","), g["metaroce.sack.range"])
        stats["opcodes"].add(int(w["opcode"]))
        stats["sack_ranges"] += len(w["sack"].split(";")) if w["sack"] else 0
        if g["metaroce.flags.retx"] in ("1", "True"):
            stats["retx"] += 1
    # The capture must hold what the test is about, or it proves nothing.
    for what in ("retx", "sack_ranges", "malformed", "rocev2"):
        if not stats[what]:
            errors.append("capture has no %s" % what)
    if not set(range(1, 10)) | {0x10} <= stats["opcodes"]:
        errors.append("opcodes missing: %s" % sorted(set(range(1, 10)) | {0x10}
                                                     - stats["opcodes"]))
    print("%d frames: %d MetaRoCE retransmissions, %d SACK ranges, %d RoCEv2, "
          "%d malformed, opcodes %s" % (len(got), stats["retx"], stats["sack_ranges"],
                                        stats["rocev2"], stats["malformed"],
                                        sorted(stats["opcodes"])))
    for e in errors[:40]:
        print("FAIL " + e)
    sys.exit(1 if errors else 0)


main()
