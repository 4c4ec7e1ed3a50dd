#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Check the IBTA ICRC of every RoCEv2 packet (UDP 4791) in a capture.

    icrc-check.py PCAP ADDR...

PCAP is a tcpdump capture (Ethernet, IPv4).  The ICRC (IBTA Annex A17,
MR-COMPAT-012) is recomputed here, independently of the kernel code that
wrote it: CRC-32 over eight 0xff bytes (the masked LRH), the IPv4 header
with TOS, TTL and checksum set to ones, the UDP header with its checksum
set to ones, the BTH with its reserved byte 4 set to ones, and the rest of
the packet; it is stored little-endian in the last 4 bytes.  Prints, per
source address, how many packets were RC (BTH opcode < 0x20) and UD, and
fails if one ICRC is wrong or if an ADDR sent no RC packet.
"""
import struct
import sys
import zlib

from pcap_frames import frames, ipv4_udp


def icrc(ip, udp_and_rest):
    hdr = bytearray(ip)
    hdr[1] = 0xff                    # TOS
    hdr[8] = 0xff                    # TTL
    hdr[10:12] = b"\xff\xff"         # header checksum
    rest = bytearray(udp_and_rest[:-4])
    rest[6:8] = b"\xff\xff"          # UDP checksum
    rest[8 + 4] = 0xff               # BTH reserved byte before the QPN
    return zlib.crc32(b"\xff" * 8 + bytes(hdr) + bytes(rest)) & 0xffffffff


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rc, ud, bad = {}, {}, 0
    for frame in frames(sys.argv[1]):
        ip_udp = ipv4_udp(frame)
        if not ip_udp:
            continue
        ip, udp = ip_udp
        if len(udp) < 8 + 12 + 4 or struct.unpack_from(">H", udp, 2)[0] != 4791:
            continue
        src = ".".join(str(b) for b in ip[12:16])
        want = struct.unpack_from("<I", udp, len(udp) - 4)[0]
        if len(ip) != 20 or icrc(ip, udp) != want:
            bad += 1
            print("bad ICRC: %s opcode 0x%02x, %d bytes" % (src, udp[8], len(udp)))
        kind = rc if udp[8] < 0x20 else ud
        kind[src] = kind.get(src, 0) + 1
    for src in sorted(set(rc) | set(ud)):
        print("%s: %d RC and %d UD packets" % (src, rc.get(src, 0), ud.get(src, 0)))
    missing = [a for a in sys.argv[2:] if not rc.get(a)]
    if missing:
        sys.exit("icrc-check: no RC packet from %s" % " ".join(missing))
    if bad:
        sys.exit("icrc-check: %d packet(s) with a wrong ICRC" % bad)
    print("all ICRCs correct")


if __name__ == "__main__":
    main()
