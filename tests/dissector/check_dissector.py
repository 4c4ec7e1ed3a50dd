#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Decode a capture with tshark and the MetaRoCE Lua dissector and check the
decoded fields against what was sent.  Two sources of what was sent:

  check_dissector.py TSHARK LUA PCAP CSV [--perturb]
      the CSV of tests/dissector/capture_gen.c: every frame as the core in
      the host test emitted it, compared field by field;

  check_dissector.py TSHARK LUA PCAP --truth TRUTH.json [--perturb]
      a capture of real traffic in a guest (tests/vm/t-kernel-dissector.sh)
      and the ground truth the programs and the kernel reported: per
      sending endpoint its address, the peer's QPN, its first PSN, how many
      data packets it sent, its retransmission and SACK counters and
      optionally its per-path counts (see check_truth()).

Every frame must decode without a malformed flag and with a good CRC32C
(RoCEv2 mode: with the InfiniBand dissector's ICRC) either way.  --perturb changes one expectation first (the QPN of the first
frame / of the first endpoint): the check must then fail, which proves it
compares what it claims to.  With --truth the check also runs once more
with that change on the same decoded frames and fails if that passes.
"""
import csv
import json
import subprocess
import sys

FIELDS = ["frame.number", "metaroce.mode", "metaroce.path", "metaroce.qpn",
          "metaroce.opcode", "metaroce.psn", "metaroce.flags",
          "metaroce.sack.range", "metaroce.malformed", "metaroce.crc.status",
          "metaroce.flags.retx", "_ws.malformed", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "_ws.expert.message",
          "infiniband.invariant.crc", "ip.src", "udp.dstport",
          "metaroce.ack.cum_psn", "metaroce.sack.start", "metaroce.sack.end"]
RC_PORTS = ("4791", "4793")

PSN_MOD = 1 << 24
DATA_OPCODES = set(range(1, 10))	# SEND .. ATOMIC_RESP
ACK, PROBE, PROBE_REPLY = 0x10, 0x20, 0x21


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


def decode(tshark, lua, pcap, heuristics=True):
    cmd = [tshark, "-n", "-r", pcap, "-X", "lua_script:" + lua, "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for h in known_heuristics(tshark) if heuristics else []:
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


def retx(g):
    return g["metaroce.flags.retx"] in ("1", "True")


def malformed(g):
    return set(g["metaroce.malformed"].split(",")) - {""}


def frame_problems(g):
    """What is wrong with a frame that was sent well-formed."""
    bad = []
    if malformed(g):
        bad.append("malformed %s" % sorted(malformed(g)))
    if g["_ws.malformed"]:
        bad.append("Wireshark flags it malformed")
    if g["metaroce.mode"] == "rocev2":
        # The trailer is the ICRC (MR-COMPAT-012): the InfiniBand
        # dissector's, no CRC32C check of ours.
        if g["metaroce.crc.status"] != "":
            bad.append("crc status %r" % g["metaroce.crc.status"])
        if not g["infiniband.invariant.crc"]:
            bad.append("no infiniband.invariant.crc")
    elif g["metaroce.crc.status"] != "1":
        bad.append("crc status %r" % g["metaroce.crc.status"])
    return bad


def check_csv(got, want, errors):
    """Source 1: the host test's CSV, one expectation per frame."""
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
        bad = malformed(g)
        if w["expect"] != "ok":
            stats["malformed"] += 1
            if w["expect"] not in bad:
                errors.append("frame %s: malformed %s not flagged (got %s)"
                              % (fr, w["expect"], sorted(bad)))
            if not g["_ws.expert.message"]:
                errors.append("frame %s: no expert info" % fr)
            continue
        for p in frame_problems(g):
            errors.append("frame %s: %s" % (fr, p))
        check("mode", w["mode"], g["metaroce.mode"])
        check("qpn", int(w["qpn"]), num(g["metaroce.qpn"]))
        check("psn", int(w["psn"]), num(g["metaroce.psn"]))
        if w["mode"] == "rocev2":
            stats["rocev2"] += 1
            check("infiniband opcode", int(w["opcode"]), num(g["infiniband.bth.opcode"]))
            check("infiniband qpn", int(w["qpn"]), num(g["infiniband.bth.destqp"]))
            check("infiniband psn", int(w["psn"]), num(g["infiniband.bth.psn"]))
            continue
        check("path", int(w["path"]), num(g["metaroce.path"]))
        check("opcode", int(w["opcode"]), num(g["metaroce.opcode"]))
        check("flags", int(w["flags"]), num(g["metaroce.flags"]))
        check("sack", w["sack"].replace(";", ","), g["metaroce.sack.range"])
        stats["opcodes"].add(int(w["opcode"]))
        stats["sack_ranges"] += len(w["sack"].split(";")) if w["sack"] else 0
        if retx(g):
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


def nums(s):
    return [int(x, 0) for x in s.split(",")] if s else []


def check_truth(got, truth, errors, quiet=False):
    """Source 2: real traffic and what its endpoints reported.

    truth = {"opcodes": [data opcodes the programs use], "lossy": bool,
             "endpoints": [{"addr", "dst_qpn", "psn", "packets",
                            "retransmits", "sacks_sent",
                            optional "tx_frames", "path_tx", "path_retx"}]}

    For the frames an endpoint sent (IPv4 source addr): all MetaRoCE mode,
    all to the peer's QPN; data frames only of the programs' opcodes, their
    PSNs exactly the range [psn, psn + packets) (each at least once: the
    capture sees every transmission), as many data frames as packets +
    retransmits and as many with RETX as retransmits; as many ACKs with
    SACK ranges as sacks_sent, each range and cumulative PSN within what
    the peer sent; tx_frames frames in all; per path (by the header's path
    field) path_tx data frames, path_retx of them RETX.
    """
    eps = {e["addr"]: e for e in truth["endpoints"]}
    frames = {a: [] for a in eps}
    for g in got:
        if g["udp.dstport"] not in RC_PORTS:
            continue	# not RC traffic (the capture's end marker)
        if g["ip.src"] not in eps:
            errors.append("frame %s from %s: no such endpoint"
                          % (g["frame.number"], g["ip.src"]))
            continue
        frames[g["ip.src"]].append(g)
    peer_of = {}
    for a in eps:
        others = [b for b in eps if b != a]
        peer_of[a] = eps[others[0]] if len(others) == 1 else None
    summary = []
    for a, e in eps.items():
        fs = frames[a]
        peer = peer_of[a]
        psns, data, retx_frames, sack_acks, ranges = set(), 0, 0, 0, 0
        path_tx, path_retx = {}, {}

        def err(fr, what):
            errors.append("frame %s (%s): %s" % (fr, a, what))

        for g in fs:
            fr = g["frame.number"]
            for p in frame_problems(g):
                err(fr, p)
            if g["metaroce.mode"] != "metaroce":
                err(fr, "mode %r" % g["metaroce.mode"])
                continue
            if num(g["metaroce.qpn"]) != e["dst_qpn"]:
                err(fr, "QPN %s, the peer's is %#x" % (g["metaroce.qpn"], e["dst_qpn"]))
            opc, path = num(g["metaroce.opcode"]), num(g["metaroce.path"])
            if opc in DATA_OPCODES:
                if opc not in truth["opcodes"]:
                    err(fr, "data opcode %#x, the programs use %s"
                        % (opc, truth["opcodes"]))
                off = (num(g["metaroce.psn"]) - e["psn"]) % PSN_MOD
                if off >= e["packets"]:
                    err(fr, "PSN %s outside [%d, +%d)"
                        % (g["metaroce.psn"], e["psn"], e["packets"]))
                psns.add(off)
                data += 1
                path_tx[path] = path_tx.get(path, 0) + 1
                if retx(g):
                    retx_frames += 1
                    path_retx[path] = path_retx.get(path, 0) + 1
            elif opc in (ACK, PROBE, PROBE_REPLY):
                if opc != ACK or not peer:
                    continue
                cum = (num(g["metaroce.ack.cum_psn"]) - peer["psn"]) % PSN_MOD
                if cum > peer["packets"]:
                    err(fr, "cumulative PSN %s past the peer's [%d, +%d)"
                        % (g["metaroce.ack.cum_psn"], peer["psn"], peer["packets"]))
                starts = nums(g["metaroce.sack.start"])
                ends = nums(g["metaroce.sack.end"])
                if len(starts) != len(ends):
                    err(fr, "SACK starts %s, ends %s" % (starts, ends))
                if starts:
                    sack_acks += 1
                for s, t in zip(starts, ends):
                    ranges += 1
                    so = (s - peer["psn"]) % PSN_MOD
                    eo = (t - peer["psn"]) % PSN_MOD
                    if not so < eo <= peer["packets"]:
                        err(fr, "SACK range [%d, %d) not within the peer's [%d, +%d)"
                            % (s, t, peer["psn"], peer["packets"]))
            else:
                err(fr, "opcode %r" % g["metaroce.opcode"])

        def want(what, expected, actual):
            if expected != actual:
                errors.append("%s: %s %r decoded, the sender reported %r"
                              % (a, what, actual, expected))

        want("distinct data PSNs", e["packets"], len(psns))
        want("data frames", e["packets"] + e["retransmits"], data)
        want("retransmissions", e["retransmits"], retx_frames)
        want("ACKs with SACK ranges", e["sacks_sent"], sack_acks)
        if e.get("tx_frames") is not None:
            want("frames", e["tx_frames"], len(fs))
        if e.get("path_tx") is not None:
            want("data frames per path", {p: n for p, n in enumerate(e["path_tx"]) if n},
                 path_tx)
            want("retransmissions per path",
                 {p: n for p, n in enumerate(e["path_retx"]) if n}, path_retx)
        summary.append("%s: %d frames, %d data (%d PSNs, %d retransmissions) on "
                       "paths %s, %d ACKs with %d SACK ranges"
                       % (a, len(fs), data, len(psns), retx_frames,
                          sorted(path_tx), sack_acks, ranges))
    if truth.get("lossy"):
        # The capture must hold what the test is about, or it proves nothing.
        if not any(e["retransmits"] for e in eps.values()):
            errors.append("lossy run without a retransmission")
        if not any(e["sacks_sent"] for e in eps.values()):
            errors.append("lossy run without a SACK")
    if not quiet:
        print("%d frames; %s" % (sum(len(f) for f in frames.values()),
                                 "; ".join(summary)))


def main():
    perturb = "--perturb" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--perturb"]
    if len(args) == 5 and args[3] == "--truth":
        tshark, lua, pcap, _, truthpath = args
        with open(truthpath) as f:
            truth = json.load(f)
        wrong = json.loads(json.dumps(truth))
        wrong["endpoints"][0]["dst_qpn"] += 1
        if perturb:
            truth = wrong
        errors = []
        # Real traffic of MetaRoCE mode: no RoCEv2 payloads for Wireshark's
        # InfiniBand heuristics to misread, and one tshark start (slow in a
        # TCG guest) less.
        got = decode(tshark, lua, pcap, heuristics=False)
        check_truth(got, truth, errors)
        # The same frames with one expectation wrong must fail, or this
        # check proves nothing (without a second decode).
        if not errors and not perturb:
            check_truth(got, wrong, errors_wrong := [], quiet=True)
            if not errors_wrong:
                errors.append("the check also passes with a wrong QPN for %s"
                              % wrong["endpoints"][0]["addr"])
            else:
                print("self-check: with a wrong QPN it fails (%s)" % errors_wrong[0])
    elif len(args) == 4:
        tshark, lua, pcap, csvpath = args
        with open(csvpath) as f:
            want = list(csv.DictReader(f))
        if perturb:
            want[0]["qpn"] = str(int(want[0]["qpn"]) + 1)
        errors = []
        check_csv(decode(tshark, lua, pcap), want, errors)
    else:
        sys.exit(__doc__)
    for e in errors[:40]:
        print("FAIL " + e)
    sys.exit(1 if errors else 0)


main()
