#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""How many PSNs a MetaRoCE requester had outstanding, from a capture.

    window-check.py PCAP ADDR

PCAP is a tcpdump capture (Ethernet, IPv4) taken at ADDR's own interface,
so it shows ADDR's packets as they leave and its peer's as they arrive: the
requester's view.  For ADDR's SEND and WRITE data packets (UDP 4793; other requests, such
as a READ's, are not counted: the test sends SENDs)
and its peer's ACKs to it (cum_psn, MR-WIRE-005; also those its data packets
carry, MR-WIRE-010), prints

    ADDR: N data packets, max outstanding M

where M is the largest (highest PSN sent + 1) - cum_psn of the latest ACK,
taken as each data packet leaves (MR-FC-001 caps it at the window).  The
PSNs are 24-bit and are unwrapped from the first one seen.  Exits 1 if
ADDR sent no data packet.
"""
import ipaddress
import struct
import sys

from pcap_frames import MR_UDP_PORT, frames, ipv4_udp

OPC_SEND, OPC_WRITE, OPC_ACK = 0x01, 0x02, 0x10
FLAG_ACK = 0x10			# a data packet carries an ACK before its CRC
ACK_TRAILER_LEN, CRC_LEN = 20, 4
PSN_MASK = (1 << 24) - 1


def acked_cum(mr):
    """cum_psn of the ACK a packet is or carries, or None."""
    if mr[1] == OPC_ACK and len(mr) >= 20:
        return struct.unpack_from(">I", mr, 16)[0] & PSN_MASK
    if mr[1] < OPC_ACK and mr[2] & FLAG_ACK and len(mr) >= 16 + ACK_TRAILER_LEN + CRC_LEN:
        return struct.unpack_from(">I", mr, len(mr) - CRC_LEN - ACK_TRAILER_LEN)[0] & PSN_MASK
    return None


def metaroce_packets(path):
    """(source address, destination address, MetaRoCE bytes) of each packet."""
    for frame in frames(path):
        ip_udp = ipv4_udp(frame)
        if not ip_udp:
            continue
        ip, udp = ip_udp
        if len(udp) < 8 + 16 or struct.unpack_from(">H", udp, 2)[0] != MR_UDP_PORT:
            continue
        yield (str(ipaddress.IPv4Address(ip[12:16])), str(ipaddress.IPv4Address(ip[16:20])),
               udp[8:])


class Unwrap:
    """24-bit PSNs as integers, relative to the first one seen."""

    def __init__(self):
        self.last = None

    def __call__(self, psn):
        if self.last is None:
            self.last = psn
            return psn
        delta = (psn - self.last) & PSN_MASK
        if delta >= 1 << 23:
            delta -= 1 << 24
        self.last += delta
        return self.last


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    pcap, addr = sys.argv[1], sys.argv[2]
    unwrap = Unwrap()
    first = highest = cum = None
    sent = max_out = 0
    for src, dst, mr in metaroce_packets(pcap):
        opcode = mr[1]
        if src == addr and opcode in (OPC_SEND, OPC_WRITE):
            psn = unwrap(struct.unpack_from(">I", mr, 8)[0] & PSN_MASK)
            sent += 1
            if first is None:
                first = highest = psn
            highest = max(highest, psn)
            max_out = max(max_out, highest + 1 - (cum if cum is not None else first))
        elif dst == addr and highest is not None and acked_cum(mr) is not None:
            ack = unwrap(acked_cum(mr))
            cum = ack if cum is None else max(cum, ack)
    print("%s: %d data packets, max outstanding %d" % (addr, sent, max_out))
    if not sent:
        sys.exit(1)


if __name__ == "__main__":
    main()
