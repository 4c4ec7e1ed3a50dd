#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""RC data path of rdma_metaroce.ko through the kernel's generic uverbs
write() commands only (no libibverbs, no provider): the exact commands the
provider's ibv_cmd_* wrappers issue in the first ABI slice.

  uverbs-rc-test.py DEV_A DEV_B [--iters N] [--sizes 64,4096,65536]

One process opens both devices (typically on two netdevs in two network
namespaces), connects an RC QP on each to the other and checks:
  - SEND/RECV of every size, payload verified byte for byte, with more
    receives posted than the transport core holds (software queue);
  - unsignaled sends produce no completion, signaled ones do;
  - inline SEND;
  - completion channel events after req_notify_cq (next / solicited);
  - RDMA WRITE into the peer's MR, verified;
  - RDMA WRITE with a wrong rkey: IB_WC_REM_ACCESS_ERR at the requester
    (with --lossy also IB_WC_RETRY_EXC_ERR, when the NAK was lost), the
    responder's memory untouched, later WRs flushed (IB_WC_WR_FLUSH_ERR);
  - moving a QP to ERR flushes its posted receives;
  - a CQ ring (metaroce-abi.h) asked for without room in the response for
    where it is: EINVAL; with room: granted.
Prints one "result:" line per measurement.  Exit status 0 only if all pass.
"""
import argparse
import ctypes
import errno
import mmap
import os
import select
import struct
import sys
import time

# enum ib_uverbs_write_cmds
GET_CONTEXT, ALLOC_PD, REG_MR = 0, 3, 9
CREATE_COMP_CHANNEL, CREATE_CQ, POLL_CQ, REQ_NOTIFY_CQ = 17, 18, 21, 23
CREATE_QP, QUERY_QP, MODIFY_QP, DESTROY_QP = 24, 25, 26, 27
POST_SEND, POST_RECV = 28, 29

RESET, INIT, RTR, RTS, ERR = 0, 1, 2, 3, 6
QPT_RC = 2
MTU_1024 = 3
LOCAL_WRITE, REMOTE_WRITE = 1, 2
WR_RDMA_WRITE, WR_SEND = 0, 2
SEND_SIGNALED, SEND_INLINE = 2, 8
WC_SUCCESS, WC_WR_FLUSH_ERR, WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR = 0, 5, 10, 12
WC_SEND, WC_RDMA_WRITE, WC_RECV = 0, 1, 128

M_STATE, M_ACCESS, M_PKEY, M_PORT, M_AV, M_MTU = 1, 8, 16, 32, 128, 256
M_TIMEOUT, M_RETRY, M_RNR_RETRY, M_RQ_PSN = 512, 1024, 2048, 4096
M_MAX_RD, M_MIN_RNR, M_SQ_PSN, M_MAX_DEST_RD, M_DEST_QPN = (
    8192, 32768, 65536, 131072, 1048576)

BUF_SIZE = 1 << 20
# metaroce-abi.h: struct metaroce_create_cq_req/_resp, comp_mask bits
CQ_REQ_RING, CQ_RESP_RING, CQ_RESP_LEN = 1, 1, 32
CQ_USER_HANDLE = 0x6d72637100000001


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def uverbs_dev(ibdev):
    base = "/sys/class/infiniband_verbs"
    for n in os.listdir(base):
        try:
            with open(f"{base}/{n}/ibdev") as f:
                if f.read().strip() == ibdev:
                    return "/dev/infiniband/" + n
        except OSError:
            pass
    raise Failure(f"no uverbs device for {ibdev}")


def ipv4_gid_index(ibdev):
    base = f"/sys/class/infiniband/{ibdev}/ports/1"
    for n in sorted(os.listdir(base + "/gids"), key=int):
        with open(f"{base}/gids/{n}") as f:
            gid = f.read().strip()
        try:
            with open(f"{base}/gid_attrs/types/{n}") as f:
                kind = f.read().strip()
        except OSError:
            continue
        if gid.startswith("0000:0000:0000:0000:0000:ffff:") and kind == "RoCE v2":
            return int(n), bytes.fromhex(gid.replace(":", ""))
    raise Failure(f"{ibdev} has no IPv4 RoCE v2 GID")


class Buf:
    """Memory whose address we hand to the kernel."""

    def __init__(self, size):
        self.mem = mmap.mmap(-1, size)
        self.cbuf = ctypes.c_char.from_buffer(self.mem)
        self.addr = ctypes.addressof(self.cbuf)


class Dev:
    def __init__(self, ibdev):
        self.name = ibdev
        self.fd = os.open(uverbs_dev(ibdev), os.O_RDWR)
        self.resp = ctypes.create_string_buffer(4096)
        self.raddr = ctypes.addressof(self.resp)
        self.cmd(GET_CONTEXT, b"", 8)
        self.pd = struct.unpack_from("I", self.cmd(ALLOC_PD, b"", 4))[0]
        self.gid_index, self.gid = ipv4_gid_index(ibdev)

    def cmd(self, op, body, out_len, with_response=True):
        """Write command op; body follows the 'response' field if any."""
        payload = (struct.pack("Q", self.raddr) if with_response else b"") + body
        hdr = struct.pack("IHH", op, (8 + len(payload)) // 4, (out_len + 3) // 4)
        try:
            os.write(self.fd, hdr + payload)
        except OSError as e:
            raise OSError(e.errno, f"{self.name}: uverbs command {op}: "
                          f"{os.strerror(e.errno)}") from None
        return self.resp.raw[:out_len]

    def try_cmd(self, *args, **kw):
        try:
            self.cmd(*args, **kw)
            return 0
        except OSError as e:
            return e.errno

    def reg_mr(self, buf, length, access):
        r = self.cmd(REG_MR, struct.pack("QQQII", buf.addr, length, buf.addr,
                                         self.pd, access), 12)
        return struct.unpack("III", r)  # handle, lkey, rkey

    def create_cq(self, cqe, channel=-1, user_handle=0):
        r = self.cmd(CREATE_CQ, struct.pack("QIIiI", user_handle, cqe, 0,
                                            channel, 0), 8)
        return struct.unpack("II", r)[0]

    def create_comp_channel(self):
        return struct.unpack_from("I", self.cmd(CREATE_COMP_CHANNEL, b"", 4))[0]

    def req_notify_cq(self, cq, solicited_only):
        self.cmd(REQ_NOTIFY_CQ, struct.pack("II", cq, solicited_only), 0,
                 with_response=False)

    def create_qp(self, cq, send_wr, recv_wr, inline):
        body = struct.pack("QIIIIIIIIIBBBB", 0, self.pd, cq, cq, 0, send_wr,
                           recv_wr, 2, 2, inline, 0, QPT_RC, 0, 0)
        r = struct.unpack("IIIIIIII", self.cmd(CREATE_QP, body, 32))
        return r[0], r[1], r  # handle, qpn, all

    def modify_qp(self, qp, mask, state, dest=None, **a):
        if dest:
            gid, sgid_index = dest
            av = struct.pack("16sIHHBBBBBBBB", gid, 0, 0, 0, sgid_index, 64,
                             0, 0, 0, 0, 1, 1)
        else:
            av = bytes(32)
        body = av + bytes(32) + struct.pack(
            "IIIIIIIHHBBBBBBBBBBBBBB2x", qp, mask, 0, a.get("rq_psn", 0),
            a.get("sq_psn", 0), a.get("dest_qpn", 0), a.get("access", 0), 0,
            0, state, 0, a.get("mtu", 0), 0, 0, a.get("max_rd", 0),
            a.get("max_dest_rd", 0), a.get("min_rnr", 0), a.get("port", 0),
            a.get("timeout", 0), a.get("retry", 0), a.get("rnr_retry", 0),
            0, 0)
        self.cmd(MODIFY_QP, body, 0, with_response=False)

    def post_send(self, qp, wrs):
        """wrs: (wr_id, opcode, flags, [(addr, len, lkey)], raddr, rkey)."""
        sges = sum(len(w[3]) for w in wrs)
        body = struct.pack("IIII", qp, len(wrs), sges, 56)
        for wr_id, op, flags, sg, raddr, rkey in wrs:
            body += struct.pack("QIIII", wr_id, len(sg), op, flags, 0)
            body += struct.pack("QII", raddr, rkey, 0) + bytes(16)
        for wr in wrs:
            for addr, length, lkey in wr[3]:
                body += struct.pack("QII", addr, length, lkey)
        self.cmd(POST_SEND, body, 4)

    def post_recv(self, qp, wrs):
        """wrs: (wr_id, [(addr, len, lkey)])."""
        sges = sum(len(w[1]) for w in wrs)
        body = struct.pack("IIII", qp, len(wrs), sges, 16)
        for wr_id, sg in wrs:
            body += struct.pack("QII", wr_id, len(sg), 0)
        for wr in wrs:
            for addr, length, lkey in wr[1]:
                body += struct.pack("QII", addr, length, lkey)
        self.cmd(POST_RECV, body, 4)

    def poll(self, cq, ne=16):
        r = self.cmd(POLL_CQ, struct.pack("II", cq, ne), 8 + 48 * ne)
        n = struct.unpack_from("I", r)[0]
        return [struct.unpack_from("QIIIIIIIIHHBBBB", r, 8 + 48 * i)[:5]
                for i in range(n)]  # wr_id, status, opcode, vendor, byte_len

    def query_qp_state(self, qp):
        r = self.cmd(QUERY_QP, struct.pack("II", qp, M_STATE), 128)
        # ib_uverbs_query_qp_resp: dest, alt_dest (64), then 10 u32, 2 u16,
        # then qp_state.
        return r[64 + 40 + 4]


def wait_wc(dev, cq, count, timeout=30.0):
    got = []
    end = time.monotonic() + timeout
    while len(got) < count:
        got += dev.poll(cq)
        if time.monotonic() > end:
            raise Failure(f"{dev.name}: {len(got)} of {count} completions "
                          f"after {timeout:.0f} s: {got}")
    return got


def connect(a, b):
    for dev, peer in ((a, b), (b, a)):
        dev.modify_qp(dev.qp, M_STATE | M_PKEY | M_PORT | M_ACCESS, INIT,
                      port=1, access=LOCAL_WRITE | REMOTE_WRITE)
    for dev, peer in ((a, b), (b, a)):
        dev.modify_qp(dev.qp, M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN |
                      M_MAX_DEST_RD | M_MIN_RNR, RTR,
                      dest=(peer.gid, dev.gid_index), mtu=MTU_1024,
                      dest_qpn=peer.qpn, rq_psn=peer.psn, max_dest_rd=1,
                      min_rnr=12)
        check(dev.query_qp_state(dev.qp) == RTR, f"{dev.name} not RTR")
    for dev in (a, b):
        dev.modify_qp(dev.qp, M_STATE | M_TIMEOUT | M_RETRY | M_RNR_RETRY |
                      M_SQ_PSN | M_MAX_RD, RTS, timeout=14, retry=7,
                      rnr_retry=7, sq_psn=dev.psn, max_rd=1)
        check(dev.query_qp_state(dev.qp) == RTS, f"{dev.name} not RTS")


def setup(name, psn):
    d = Dev(name)
    d.buf = Buf(BUF_SIZE)
    d.mr, d.lkey, d.rkey = d.reg_mr(d.buf, BUF_SIZE, LOCAL_WRITE | REMOTE_WRITE)
    d.channel = d.create_comp_channel()
    d.cq = d.create_cq(1024, d.channel, CQ_USER_HANDLE)
    d.qp, d.qpn, caps = d.create_qp(d.cq, 64, 512, 64)
    check(caps[2] >= 64 and caps[3] >= 512, f"caps {caps}")
    d.psn = psn
    return d


def fill(buf, off, size, seed):
    pat = bytes((seed + i * 7) & 0xff for i in range(256))
    data = (pat * (size // 256 + 1))[:size]
    buf.mem[off:off + size] = data
    return data


def sendrecv(a, b, sizes, iters):
    half = BUF_SIZE // 2
    for size in sizes:
        # More receives than the core's queue: the rest wait in ours.
        depth = min(iters, 300)
        b.post_recv(b.qp, [(i, [(b.buf.addr + half, size, b.lkey)])
                           for i in range(depth)])
        posted = depth
        t0 = time.monotonic()
        for i in range(iters):
            data = fill(a.buf, 0, size, i)
            b.buf.mem[half:half + size] = bytes(size)
            a.post_send(a.qp, [(i, WR_SEND, SEND_SIGNALED,
                                [(a.buf.addr, size, a.lkey)], 0, 0)])
            wc = wait_wc(a, a.cq, 1)[0]
            check(wc[:3] == (i, WC_SUCCESS, WC_SEND), f"send wc {wc}")
            wc = wait_wc(b, b.cq, 1)[0]
            check(wc[1] == WC_SUCCESS and wc[2] == WC_RECV and
                  wc[4] == size and wc[0] == i, f"recv wc {wc}")
            check(bytes(b.buf.mem[half:half + size]) == data,
                  f"payload mismatch, size {size}, iteration {i}")
            if posted < iters:
                b.post_recv(b.qp, [(posted, [(b.buf.addr + half, size,
                                              b.lkey)])])
                posted += 1
        dt = time.monotonic() - t0
        print(f"result: send size={size} iters={iters} "
              f"usec/iter={dt / iters * 1e6:.1f} "
              f"MB/s={size * iters / dt / 1e6:.2f}", flush=True)


def unsignaled_and_inline(a, b):
    half = BUF_SIZE // 2
    b.post_recv(b.qp, [(100 + i, [(b.buf.addr + half + 256 * i, 256, b.lkey)])
                       for i in range(3)])
    data = fill(a.buf, 0, 64, 42)
    a.post_send(a.qp, [(1, WR_SEND, 0, [(a.buf.addr, 64, a.lkey)], 0, 0),
                       (2, WR_SEND, SEND_INLINE | SEND_SIGNALED,
                        [(a.buf.addr, 32, 0), (a.buf.addr + 32, 32, 0)], 0, 0),
                       (3, WR_SEND, SEND_SIGNALED, [], 0, 0)])
    got = wait_wc(a, a.cq, 2)
    check([w[0] for w in got] == [2, 3], f"unsignaled WR completed: {got}")
    got = wait_wc(b, b.cq, 3)
    check([(w[0], w[4]) for w in got] == [(100, 64), (101, 64), (102, 0)],
          f"recv wcs {got}")
    check(bytes(b.buf.mem[half:half + 64]) == data, "unsignaled payload")
    check(bytes(b.buf.mem[half + 256:half + 320]) == data, "inline payload")
    print("result: unsignaled, inline and zero-length SEND ok", flush=True)


def comp_event(a, b):
    """req_notify_cq + a completion -> one event on the channel."""
    half = BUF_SIZE // 2
    for solicited_only in (0, 1):
        b.req_notify_cq(b.cq, solicited_only)
        b.post_recv(b.qp, [(300, [(b.buf.addr + half, 64, b.lkey)])])
        a.post_send(a.qp, [(301, WR_SEND, SEND_SIGNALED,
                            [(a.buf.addr, 64, a.lkey)], 0, 0)])
        r, _, _ = select.select([b.channel], [], [], 30)
        check(r, f"no completion event (solicited_only={solicited_only})")
        ev = os.read(b.channel, 8)
        check(struct.unpack("Q", ev)[0] == CQ_USER_HANDLE, f"event {ev!r}")
        wait_wc(a, a.cq, 1)
        wc = wait_wc(b, b.cq, 1)[0]
        check(wc[:2] == (300, WC_SUCCESS), f"recv wc {wc}")
    print("result: completion channel events (next and solicited) ok",
          flush=True)


def rdma_write(a, b, size):
    off = 4096 * 3 + 100  # unaligned, crossing pages
    data = fill(a.buf, 0, size, 9)
    b.buf.mem[off:off + size] = bytes(size)
    t0 = time.monotonic()
    a.post_send(a.qp, [(7, WR_RDMA_WRITE, SEND_SIGNALED,
                        [(a.buf.addr, size, a.lkey)], b.buf.addr + off,
                        b.rkey)])
    wc = wait_wc(a, a.cq, 1)[0]
    dt = time.monotonic() - t0
    check(wc[:3] == (7, WC_SUCCESS, WC_RDMA_WRITE), f"write wc {wc}")
    check(bytes(b.buf.mem[off:off + size]) == data, "RDMA WRITE payload")
    check(not b.poll(b.cq), "RDMA WRITE made a responder completion")
    print(f"result: rdma_write size={size} usec={dt * 1e6:.0f}", flush=True)


def bad_rkey(a, b, lossy):
    """A WRITE with a wrong rkey fails, the responder's memory untouched.

    The responder NAKs it and enters Error (an IBTA Class C error); the
    NAK is not repeated (MR-LOSS-012) and a QP in Error answers nothing,
    so over a lossy link a lost NAK leaves the requester retrying until
    IB_WC_RETRY_EXC_ERR, as with rdma_rxe.  Lossless, it must be
    IB_WC_REM_ACCESS_ERR.
    """
    off = BUF_SIZE - 8192
    b.buf.mem[off:off + 4096] = b"\xa5" * 4096
    fill(a.buf, 0, 4096, 3)
    # A posted receive on a must be flushed once a is in error.
    a.post_recv(a.qp, [(55, [(a.buf.addr + 8192, 64, a.lkey)])])
    a.post_send(a.qp, [(8, WR_RDMA_WRITE, SEND_SIGNALED,
                        [(a.buf.addr, 4096, a.lkey)], b.buf.addr + off,
                        b.rkey ^ 0x5a)])
    got = wait_wc(a, a.cq, 2)
    by_id = {w[0]: w for w in got}
    allowed = (WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR) if lossy else \
        (WC_REM_ACCESS_ERR,)
    check(by_id[8][1] in allowed, f"bad rkey wc {by_id[8]}")
    check(by_id[55][1] == WC_WR_FLUSH_ERR, f"flushed recv wc {by_id[55]}")
    check(bytes(b.buf.mem[off:off + 4096]) == b"\xa5" * 4096,
          "responder memory touched by a refused write")
    check(a.query_qp_state(a.qp) == ERR, "requester QP not in ERR")
    # Posting in ERR completes at once with a flush.
    a.post_send(a.qp, [(9, WR_SEND, 0, [(a.buf.addr, 8, a.lkey)], 0, 0)])
    wc = wait_wc(a, a.cq, 1)[0]
    check(wc[:2] == (9, WC_WR_FLUSH_ERR), f"post in ERR wc {wc}")
    status = "IB_WC_REM_ACCESS_ERR" if by_id[8][1] == WC_REM_ACCESS_ERR \
        else "IB_WC_RETRY_EXC_ERR (NAK lost)"
    print(f"result: wrong rkey -> {status}, responder untouched, "
          "QP flushed", flush=True)


def flush_on_err(b):
    b.post_recv(b.qp, [(200 + i, [(b.buf.addr, 64, b.lkey)]) for i in range(5)])
    b.modify_qp(b.qp, M_STATE, ERR)
    got = wait_wc(b, b.cq, 5)
    check([(w[0], w[1]) for w in got] ==
          [(200 + i, WC_WR_FLUSH_ERR) for i in range(5)], f"flush {got}")
    # A post_send on a QP in RESET is refused with EINVAL.
    b.modify_qp(b.qp, M_STATE, RESET)
    try:
        b.post_send(b.qp, [(1, WR_SEND, 0, [], 0, 0)])
        raise Failure("post_send in RESET accepted")
    except OSError as e:
        check(e.errno == errno.EINVAL, f"post_send in RESET: {e}")
    print("result: modify to ERR flushed 5 receives; RESET refuses posts",
          flush=True)


def cq_ring_response(a):
    """The CREATE_CQ driver response of a ring says where to map it."""
    body = struct.pack("QIIiIQ", 0, 16, 0, -1, 0, CQ_REQ_RING)
    err = a.try_cmd(CREATE_CQ, body, 8)
    check(err == errno.EINVAL,
          f"ring asked for without a driver response: {os.strerror(err)}")
    r = a.cmd(CREATE_CQ, body, 8 + CQ_RESP_LEN)
    comp_mask, _, length, entries = struct.unpack_from("QQQI", r, 8)
    check(comp_mask & CQ_RESP_RING and length and entries >= 16,
          f"ring response {comp_mask:#x} {length} {entries}")
    print("result: CQ ring without room for its response EINVAL, with room "
          "granted", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dev_a")
    ap.add_argument("dev_b")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--sizes", default="64,4096,65536")
    ap.add_argument("--lossy", action="store_true",
                    help="the link drops packets (see bad_rkey)")
    ap.add_argument("--hold", action="store_true",
                    help="print 'holding' and wait for a line on stdin")
    args = ap.parse_args()
    try:
        a = setup(args.dev_a, 0x1234)
        b = setup(args.dev_b, 0xfffff0)  # wraps the 24-bit PSN space
        connect(a, b)
        sendrecv(a, b, [int(s) for s in args.sizes.split(",")], args.iters)
        unsignaled_and_inline(a, b)
        comp_event(a, b)
        rdma_write(a, b, 65536)
        bad_rkey(a, b, args.lossy)
        flush_on_err(b)
        cq_ring_response(a)
        if args.hold:
            print("holding", flush=True)
            sys.stdin.readline()
    except (Failure, OSError) as e:
        print(f"FAIL: {e}", flush=True)
        return 1
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
