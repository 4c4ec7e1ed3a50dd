# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""What the capture readers (icrc-check.py, window-check.py and
benchmarks/planefail_capture.py) share: the frames of a tcpdump capture
(Ethernet) with their times, and the IPv4/UDP datagram inside one."""
import os
import struct
import sys

# UDP port of MetaRoCE-mode RC (include/metaroce/wire.h, MR_UDP_PORT).
MR_UDP_PORT = 4793


def records(path, whole=True):
    """(time in seconds, frame) for every frame of the capture at path;
    exits if it is not an Ethernet capture or, with whole, a frame was cut
    short (capture with -s 0)."""
    prog = os.path.basename(sys.argv[0])
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    # Microsecond or (magic ...3c4d) nanosecond timestamps.
    frac = 1e-9 if magic in (0xa1b23c4d, 0x4d3cb2a1) else 1e-6
    if struct.unpack_from(end + "I", data, 20)[0] != 1:
        sys.exit("%s: %s: not an Ethernet capture" % (prog, path))
    off = 24
    while off + 16 <= len(data):
        sec, sub, incl, orig = struct.unpack_from(end + "IIII", data, off)
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if whole and incl != orig:
            sys.exit("%s: truncated frame (capture with -s 0)" % prog)
        yield sec + sub * frac, frame


def frames(path):
    """Every frame of the capture at path, whole (see records())."""
    for _, frame in records(path):
        yield frame


def ipv4_udp(frame):
    """(IPv4 header, UDP datagram from its header on, cut at the IP total
    length) of an Ethernet frame carrying IPv4/UDP, else None."""
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0xf) * 4
    if ip[0] >> 4 != 4 or ip[9] != 17:
        return None
    udp = ip[ihl:struct.unpack_from(">H", ip, 2)[0]]
    return (ip[:ihl], udp) if len(udp) >= 8 else None
