// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// The compliance cases.  Each plays the peer of the DUT through the Dut
// interface only, so the same definitions run against the in-process core
// and against a live implementation over UDP.  Each case checks one
// requirement of docs/spec (its `req`) and can fail: tests/compliance runs
// them against deliberately broken DUTs (dut_fault.cpp).
//
// covers: MR-WIRE-001 MR-WIRE-002 MR-WIRE-003 MR-WIRE-004 MR-WIRE-005
// covers: MR-WIRE-006 MR-WIRE-007 MR-WIRE-008 MR-CONN-002 MR-CONN-003
// covers: MR-CONN-004 MR-ORDER-001 MR-ORDER-002 MR-ORDER-003 MR-ORDER-004
// covers: MR-PATH-001 MR-PATH-003 MR-PATH-005 MR-LOSS-001 MR-LOSS-002
// covers: MR-LOSS-005 MR-LOSS-006 MR-LOSS-008 MR-LOSS-011 MR-FAIL-007
// covers: MR-LOSS-012 MR-FAIL-002 MR-FAIL-003 MR-FC-001 MR-FC-002
// covers: MR-FC-003 MR-FC-004 MR-COMPAT-001 MR-COMPAT-002 MR-COMPAT-003
// covers: MR-COMPAT-004 MR-COMPAT-006 MR-COMPAT-007
#include "compliance.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace mrcomp {
namespace {

// enum mrc_opcode / enum ibv_wc_status values the cases use.
constexpr uint32_t op_send = 0, op_write = 1, op_recv = 2;
constexpr uint8_t wc_success = 0, wc_rem_inv_req = 9, wc_rem_access = 10,
		  wc_retry_exc = 12;

constexpr uint8_t f_first = 0x01, f_last = 0x02, f_retx = 0x04,
		  f_ack_req = 0x08;
constexpr uint8_t opc_send = 0x01, opc_write = 0x02, opc_ack = 0x10,
		  opc_probe = 0x20, opc_probe_reply = 0x21;

// MR layout every DUT offers: receive buffers, WRITE target, send source.
constexpr uint32_t recv_base = 0x10000, recv_stride = 0x1000;
constexpr uint32_t write_base = 0x20000;
constexpr uint32_t send_base = 0x30000;

template <typename... T> std::string str(const T &...v)
{
	std::ostringstream o;
	o << std::hex;
	(o << ... << v);
	return o.str();
}

Result pass(std::string d = {}) { return {Status::pass, std::move(d)}; }
Result fail(std::string d) { return {Status::fail, std::move(d)}; }
Result na(std::string d) { return {Status::na, std::move(d)}; }

Bytes pattern(uint32_t seed, uint32_t len)
{
	Bytes b(len);
	for (uint32_t i = 0; i < len; i++)
		b[i] = static_cast<uint8_t>(seed * 131 + i * 7 + (i >> 8));
	return b;
}

// The suite as the DUT's peer.
}  // namespace

struct Peer {
	Dut &dut;
	const DutInfo &info;
	const DutSetup &set;
	uint32_t next_psn_idx = 0, next_msg_id = 0, next_ssn = 0;
	uint32_t ts = 0x1000;
	unsigned next_recv = 0;

	uint32_t psn(uint32_t idx) const { return psn_add(set.peer_psn, idx); }
	uint32_t dut_psn(uint32_t idx) const { return psn_add(info.psn, idx); }

	// A message of the suite's send stream, split by MTU, not yet sent.
	struct Msg {
		std::vector<DataPkt> pkts;
		Bytes data;
	};
	Msg message(uint8_t opcode, uint32_t len, uint32_t seed,
		    uint32_t write_off = write_base, bool ack_req_last = true)
	{
		Msg m;
		m.data = pattern(seed, len);
		uint32_t ssn = opcode == opc_send ? next_ssn++ : 0;
		uint32_t id = next_msg_id++;
		uint32_t off = 0;
		do {
			uint32_t n = std::min(len - off, info.mtu);
			DataPkt p;
			p.opcode = opcode;
			p.qpn = info.qpn;
			p.psn = psn(next_psn_idx++);
			p.ts = ts++;
			p.msg_id = id;
			p.offset = off;
			p.msg_len = len;
			if (opcode == opc_send) {
				p.rkey_ssn = ssn;
			} else {
				p.rkey_ssn = info.rkey;
				p.raddr = info.addr + write_off;
			}
			p.payload.assign(m.data.begin() + off,
					 m.data.begin() + off + n);
			p.flags = (off == 0 ? f_first : 0) |
				  (off + n == len ? f_last : 0);
			if (off + n == len && ack_req_last)
				p.flags |= f_ack_req;
			m.pkts.push_back(p);
			off += n;
		} while (off < len);
		return m;
	}

	bool post_recv(uint32_t len = recv_stride)
	{
		unsigned i = next_recv++;
		return dut.post_recv(100 + i, recv_base + i * recv_stride, len);
	}
	void send(const DataPkt &p, unsigned path = 0)
	{
		DataPkt q = p;
		q.path = static_cast<uint8_t>(path);
		dut.inject(q.build(), path);
	}
	std::vector<RxPkt> answer() { return dut.collect(info.answer_ns); }
	std::vector<RxPkt> wait(unsigned n = 1)
	{
		return dut.collect(info.timer_ns * n);
	}
	// The DUT's first burst of data packets, as soon as it arrives: in
	// steps of answer_ns / 25 until one brought data, and one step more.
	// A requester's timers may be much shorter than the suite's reaction
	// over a socket; the suite answers as early as it can.
	std::vector<RxPkt> first_data()
	{
		uint64_t step = info.answer_ns / 25;
		std::vector<RxPkt> all;
		for (unsigned i = 0; i < 25; i++) {
			auto rx = dut.collect(step);
			all.insert(all.end(), rx.begin(), rx.end());
			for (const auto &r : rx) {
				Parsed p = parse(r.bytes);
				if (p.valid && p.is_data()) {
					auto more = dut.collect(step);
					all.insert(all.end(), more.begin(), more.end());
					return all;
				}
			}
		}
		return all;
	}
	// Collect in steps of timer_ns / 50 for up to timer_ns, stopping after
	// the first step that brought a data packet, so the suite reacts to
	// a retransmission as a peer would instead of letting timers run on.
	std::vector<RxPkt> until_data()
	{
		for (unsigned i = 0; i < 50; i++) {
			auto rx = dut.collect(info.timer_ns / 50);
			for (const auto &r : rx) {
				Parsed p = parse(r.bytes);
				if (p.valid && p.is_data())
					return rx;
			}
		}
		return {};
	}

	AckPkt ack(uint32_t cum_idx, const Parsed &trigger, unsigned path)
	{
		AckPkt a;
		a.qpn = info.qpn;
		a.ts = ts++;
		a.path = static_cast<uint8_t>(path);
		a.cum_psn = dut_psn(cum_idx);
		a.ts_echo = trigger.ts;
		a.echo_path = trigger.path;
		return a;
	}
};

namespace {

std::vector<Parsed> of_opcode(const std::vector<RxPkt> &rx, uint8_t opcode,
			      std::vector<unsigned> *paths = nullptr)
{
	std::vector<Parsed> out;
	for (const auto &r : rx) {
		Parsed p = parse(r.bytes);
		if (p.valid && p.version == 1 && p.opcode == opcode) {
			out.push_back(p);
			if (paths)
				paths->push_back(r.path);
		}
	}
	return out;
}

std::vector<Parsed> acks(const std::vector<RxPkt> &rx,
			 std::vector<unsigned> *paths = nullptr)
{
	return of_opcode(rx, opc_ack, paths);
}

// Everything the DUT sent that the suite could not decode as MetaRoCE v1.
std::string undecodable(const std::vector<RxPkt> &rx)
{
	for (const auto &r : rx) {
		Parsed p = parse(r.bytes);
		if (!p.valid)
			return p.why;
		if (p.version != 1)
			return str("version ", unsigned(p.version));
	}
	return {};
}

// A fresh in-order SEND with ACK_REQ is acknowledged: the QP still works.
Result still_works(Peer &pr, const char *after)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 64, 77);
	for (auto &p : m.pkts)
		pr.send(p);
	auto a = acks(pr.answer());
	uint32_t want = pr.psn(pr.next_psn_idx);
	for (const auto &x : a)
		if (x.cum_psn == want && x.syndrome == 0)
			return pass(str("dropped; a following SEND was acknowledged (cum ", want, ") after ", after));
	return fail(str("after ", after, " a valid SEND was not acknowledged with cum_psn ", want));
}

// A bad packet is dropped (not acknowledged, no effect) and counted.
Result dropped_and_counted(Peer &pr, const Bytes &bad, const char *counter,
			   const char *what)
{
	auto before = pr.dut.counter(counter);
	pr.dut.inject(bad, 0);
	auto rx = pr.wait();
	if (!rx.empty())
		return fail(str(what, ": the DUT answered with ", rx.size(), " packet(s)"));
	auto after = pr.dut.counter(counter);
	std::string note;
	if (before && after) {
		if (*after != *before + 1)
			return fail(str(what, ": ", counter, " went ", *before, " -> ", *after));
		note = str(" ", counter, " +1;");
	} else {
		note = str(" (", counter, " not reported);");
	}
	Result r = still_works(pr, what);
	if (r.status == Status::pass)
		r.detail = str(what, ":", note, " ", r.detail);
	return r;
}

DataPkt valid_send(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 64, 5);
	pr.next_psn_idx--;	// the packet under test is not the QP's
	pr.next_msg_id--;
	pr.next_ssn--;
	return m.pkts[0];
}

// ---- responder: acknowledgements ------------------------------------------

Result ack_header(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 1);
	pr.send(m.pkts[0]);
	auto rx = pr.answer();
	if (auto why = undecodable(rx); !why.empty())
		return fail("DUT packet undecodable: " + why);
	auto a = acks(rx);
	if (a.empty())
		return fail("no ACK for a SEND with ACK_REQ");
	const Parsed &x = a[0];
	if (x.qpn_field != pr.set.peer_qpn)
		return fail(str("ACK dst_qpn ", x.qpn_field, " != ", pr.set.peer_qpn));
	if (x.psn != 0)
		return fail(str("ACK psn field ", x.psn, ", control packets carry 0"));
	if (x.cum_psn != pr.psn(1))
		return fail(str("ACK cum_psn ", x.cum_psn, " != ", pr.psn(1)));
	if (!(x.caps & 0x1))
		return fail("ACK does not announce SACK capability");
	return pass(str("ver 1, opcode 0x10, dst_qpn ", x.qpn_field, ", cum ", x.cum_psn));
}

Result ack_crc(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 1);
	pr.send(m.pkts[0]);
	auto rx = pr.answer();
	if (rx.empty())
		return fail("no answer to a SEND with ACK_REQ");
	for (const auto &r : rx)
		if (!crc_ok(r.bytes))
			return fail(str("packet of ", r.bytes.size(), " bytes with a wrong CRC32C trailer"));
	return pass(str(rx.size(), " packet(s), CRC32C trailers correct"));
}

Result ack_length(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 3000, 2);
	pr.send(m.pkts[0]);
	pr.send(m.pkts[2]);	// a gap: the ACK carries a range
	auto rx = pr.answer();
	bool seen = false;
	for (const auto &r : rx) {
		Parsed p = parse(r.bytes);
		if (!p.valid || p.opcode != opc_ack)
			continue;
		seen = true;
		if (r.bytes.size() != 40u + 8u * p.nranges)
			return fail(str("ACK of ", r.bytes.size(), " bytes with nranges ", unsigned(p.nranges)));
		if (p.nranges > 16)
			return fail(str("nranges ", unsigned(p.nranges), " > 16"));
	}
	return seen ? pass("length = 16 + 20 + 8 nranges + 4") : fail("no ACK");
}

Result ack_echo(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 3);
	unsigned path = pr.info.num_paths > 1 ? 1 : 0;
	m.pkts[0].ts = 0x00abcdef;
	pr.send(m.pkts[0], path);
	auto a = acks(pr.answer());
	if (a.empty())
		return fail("no ACK");
	if (a[0].ts_echo != 0x00abcdef)
		return fail(str("ts_echo ", a[0].ts_echo, " != ts 0xabcdef"));
	if (a[0].echo_path != path)
		return fail(str("echo_path ", unsigned(a[0].echo_path), " != ", path));
	return pass("ts and path echoed");
}

Result ack_same_path(Peer &pr)
{
	unsigned path = pr.info.num_paths - 1;
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 3);
	pr.send(m.pkts[0], path);
	std::vector<unsigned> paths;
	auto a = acks(pr.answer(), &paths);
	if (a.empty())
		return fail("no ACK");
	for (unsigned p : paths)
		if (p != path)
			return fail(str("trigger on path ", path, ", ACK on path ", p));
	return pass(str("ACK left on path ", path));
}

Result ack_req_immediate(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 4);
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	if (a.empty() || a[0].cum_psn != pr.psn(1))
		return fail("an in-order packet with ACK_REQ was not acknowledged at once");
	return pass("acknowledged at once");
}

Result delayed_ack(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 4, write_base, false);
	pr.send(m.pkts[0]);
	auto a = acks(pr.wait());
	if (a.empty() || a.back().cum_psn != pr.psn(1))
		return fail("a single packet without ACK_REQ was never acknowledged (max_ack_delay)");
	return pass(str("acknowledged within ", std::dec, pr.info.timer_ns, " ns"));
}

// MetaRoCE mode sends the final ACK once (a lost one is recovered by the
// requester's tail loss probe while the QP lives) and once more when the
// QP is destroyed, the last word of a responder that goes away.
Result final_ack_on_close(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 100, 4);
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	if (a.size() != 1)
		return fail(str(std::dec, "final ACK sent ", a.size(), " time(s), want 1"));
	if (a[0].cum_psn != pr.psn(1) || a[0].syndrome != 0)
		return fail(str("final ACK: cum_psn ", a[0].cum_psn, " syndrome ",
				unsigned(a[0].syndrome), ", want ", pr.psn(1), " and 0"));
	if (!pr.dut.destroy_qp())
		return na("DUT cannot destroy its QP alone");
	auto rx = pr.answer();
	auto b = acks(rx);
	if (b.size() != rx.size())
		return fail(str(std::dec, "destroying the QP sent ", rx.size() - b.size(),
				" packet(s) other than an ACK"));
	if (b.size() != 1)
		return fail(str(std::dec, "destroying the QP sent the ACK ", b.size(),
				" time(s), want 1"));
	if (b[0].cum_psn != a[0].cum_psn || b[0].syndrome != a[0].syndrome ||
	    b[0].ranges != a[0].ranges)
		return fail(str("the ACK at close (cum_psn ", b[0].cum_psn, " syndrome ",
				unsigned(b[0].syndrome), ") differs from the final ACK"));
	return pass("final ACK sent once, and once more when the QP was destroyed");
}

// ---- responder: placement, SACK, duplicates --------------------------------

Result send_ooo_placement(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 3 * pr.info.mtu - 100, 9);
	for (int i : {2, 0, 1})
		pr.send(m.pkts[i]);
	pr.answer();
	auto mem = pr.dut.read_mem(recv_base, m.data.size());
	if (!mem)
		return na("DUT memory not readable");
	if (*mem != m.data)
		return fail("SEND payload not placed at its offsets");
	for (const auto &c : pr.dut.poll())
		if (c.opcode == op_recv && c.wr_id == 100 && c.status == wc_success &&
		    c.byte_len == m.data.size())
			return pass("3 packets in order 2,0,1 placed; receive completed");
	return fail("no successful receive completion with the message length");
}

Result write_ooo_placement(Peer &pr)
{
	auto m = pr.message(opc_write, 3 * pr.info.mtu, 10);
	for (int i : {2, 1, 0})
		pr.send(m.pkts[i]);
	pr.answer();
	auto mem = pr.dut.read_mem(write_base, m.data.size());
	if (!mem)
		return na("DUT memory not readable");
	return *mem == m.data ? pass("WRITE placed in reverse arrival order")
			      : fail("WRITE payload not at raddr + offset");
}

Result sack_single_gap(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 3 * pr.info.mtu, 11, write_base, false);
	pr.send(m.pkts[0]);
	pr.send(m.pkts[2]);
	auto a = acks(pr.answer());
	if (a.empty())
		return fail("no ACK for an out-of-order packet");
	const Parsed &x = a.back();
	if (x.cum_psn != pr.psn(1))
		return fail(str("cum_psn ", x.cum_psn, " != ", pr.psn(1)));
	if (x.ranges.size() != 1 || x.ranges[0].first != pr.psn(2) ||
	    x.ranges[0].second != pr.psn(3))
		return fail(str("SACK ranges (", x.ranges.size(), ") do not say [", pr.psn(2), ",", pr.psn(3), ")"));
	return pass("cum + one range [psn+2, psn+3)");
}

Result sack_multi_gap(Peer &pr)
{
	for (int i = 0; i < 7; i++)
		pr.post_recv();
	std::vector<DataPkt> pk;
	for (int i = 0; i < 7; i++)
		pk.push_back(pr.message(opc_send, 64, 20 + i, write_base, false).pkts[0]);
	for (int i : {0, 2, 4, 6})
		pr.send(pk[i]);
	auto a = acks(pr.answer());
	if (a.empty())
		return fail("no ACK");
	const Parsed &x = a.back();
	std::vector<std::pair<uint32_t, uint32_t>> want = {
		{pr.psn(2), pr.psn(3)}, {pr.psn(4), pr.psn(5)}, {pr.psn(6), pr.psn(7)}};
	if (x.cum_psn != pr.psn(1) || x.ranges != want)
		return fail(str("cum ", x.cum_psn, ", ", x.ranges.size(), " ranges; want cum ", pr.psn(1), " and 3 ranges lowest first"));
	return pass("3 ranges, lowest first");
}

Result ooo_immediate_ack(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 2 * pr.info.mtu, 12, write_base, false);
	pr.send(m.pkts[1]);
	auto a = acks(pr.answer());
	if (a.empty())
		return fail("out-of-order packet not acknowledged at once");
	return pass("immediate ACK for an out-of-order packet");
}

Result dup_suppressed(Peer &pr)
{
	auto m = pr.message(opc_write, 200, 13);
	pr.send(m.pkts[0]);
	pr.answer();
	auto before = pr.dut.counter("rx_dup");
	DataPkt dup = m.pkts[0];
	for (auto &b : dup.payload)
		b ^= 0xff;
	dup.flags &= ~f_ack_req;
	pr.send(dup);
	auto a = acks(pr.answer());
	auto mem = pr.dut.read_mem(write_base, 200);
	if (!mem)
		return na("DUT memory not readable");
	if (*mem != m.data)
		return fail("a duplicate PSN was placed again");
	if (a.empty())
		return fail("duplicate not answered with an immediate ACK");
	auto after = pr.dut.counter("rx_dup");
	if (before && after && *after != *before + 1)
		return fail(str("rx_dup ", *before, " -> ", *after));
	return pass("not placed again, ACKed at once, counted");
}

Result dsack(Peer &pr)
{
	auto m = pr.message(opc_write, 200, 14);
	pr.send(m.pkts[0]);
	pr.answer();
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	for (const auto &x : a)
		if ((x.ack_flags & 0x02) && x.nak_psn == m.pkts[0].psn)
			return pass("DSACK flag with nak_psn of the duplicate");
	return fail("no ACK with the DSACK flag naming the duplicate PSN");
}

Result dup_below_cum(Peer &pr)
{
	auto m1 = pr.message(opc_write, 100, 15);
	auto m2 = pr.message(opc_write, 100, 16, write_base + 0x1000);
	pr.send(m1.pkts[0]);
	pr.send(m2.pkts[0]);
	pr.answer();
	pr.send(m1.pkts[0]);
	auto a = acks(pr.answer());
	if (a.empty())
		return fail("old duplicate not acknowledged");
	if (a.back().cum_psn != pr.psn(2))
		return fail(str("cum_psn ", a.back().cum_psn, " after an old duplicate, want ", pr.psn(2)));
	return pass("cum_psn unchanged, ACKed");
}

Result ssn_matching(Peer &pr)
{
	pr.post_recv();
	pr.post_recv();
	auto m0 = pr.message(opc_send, 300, 30);
	auto m1 = pr.message(opc_send, 400, 31);
	pr.send(m1.pkts[0]);
	pr.send(m0.pkts[0]);
	pr.answer();
	auto r0 = pr.dut.read_mem(recv_base, 300);
	auto r1 = pr.dut.read_mem(recv_base + recv_stride, 400);
	if (!r0 || !r1)
		return na("DUT memory not readable");
	if (*r0 != m0.data || *r1 != m1.data)
		return fail("SSN 1 arriving first did not land in the second receive");
	return pass("receives matched by SSN, not arrival");
}

Result completion_order(Peer &pr)
{
	pr.post_recv();
	auto w = pr.message(opc_write, 100, 32, write_base, false);
	auto s = pr.message(opc_send, 100, 33);
	pr.send(s.pkts[0]);
	pr.answer();
	for (const auto &c : pr.dut.poll())
		if (c.opcode == op_recv)
			return fail("receive completed while an earlier WRITE was missing");
	pr.send(w.pkts[0]);
	pr.answer();
	for (const auto &c : pr.dut.poll())
		if (c.opcode == op_recv && c.status == wc_success)
			return pass("receive completed only after the earlier WRITE");
	return fail("receive never completed");
}

Result psn_wrap(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 3 * pr.info.mtu, 40);
	for (auto &p : m.pkts)
		pr.send(p);
	auto a = acks(pr.answer());
	auto mem = pr.dut.read_mem(recv_base, m.data.size());
	if (a.empty() || a.back().cum_psn != pr.psn(3))
		return fail(str("after PSNs ", pr.psn(0), "..", pr.psn(2), " cum_psn is not ", pr.psn(3)));
	if (mem && *mem != m.data)
		return fail("payload across the wrap misplaced");
	return pass(str("cum_psn wrapped to ", pr.psn(3)));
}

Result psn_wrap_sack(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 3 * pr.info.mtu, 41, write_base, false);
	pr.send(m.pkts[0]);
	pr.send(m.pkts[2]);
	auto a = acks(pr.answer());
	if (a.empty())
		return fail("no ACK");
	const Parsed &x = a.back();
	if (x.cum_psn != pr.psn(1) || x.ranges.size() != 1 ||
	    x.ranges[0].first != pr.psn(2) || x.ranges[0].second != pr.psn(3))
		return fail(str("cum ", x.cum_psn, " / ranges across the wrap wrong"));
	return pass(str("range [", x.ranges[0].first, ",", x.ranges[0].second, ") across 2^24"));
}

// ---- responder: errors -----------------------------------------------------

Result rnr(Peer &pr)
{
	auto m = pr.message(opc_send, 100, 50);
	auto before = pr.dut.counter("rx_no_recv_wr");
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	for (const auto &x : a)
		if (x.syndrome == 1 && x.nak_psn == m.pkts[0].psn) {
			auto after = pr.dut.counter("rx_no_recv_wr");
			if (before && after && *after != *before + 1)
				return fail("rx_no_recv_wr not counted");
			return pass("syndrome RNR naming the PSN");
		}
	return fail("SEND without a receive not answered with syndrome 1 (RNR)");
}

Result write_bad_rkey(Peer &pr)
{
	auto m = pr.message(opc_write, 100, 51);
	m.pkts[0].rkey_ssn ^= 0x00ff0000;
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	for (const auto &x : a)
		if (x.syndrome == 2 && x.nak_psn == m.pkts[0].psn)
			return pass("syndrome remote access error naming the PSN");
	return fail("WRITE with a bad rkey not answered with syndrome 2");
}

Result send_too_long(Peer &pr)
{
	pr.post_recv(64);
	auto m = pr.message(opc_send, 200, 52);
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	for (const auto &x : a)
		if (x.syndrome == 3 && x.nak_psn == m.pkts[0].psn)
			return pass("syndrome invalid request");
	return fail("SEND longer than its receive not answered with syndrome 3");
}

// ---- responder: malformed packets ------------------------------------------

Result bad_version(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.version = 2;
	return dropped_and_counted(pr, p.build(), "rx_malformed", "version 2");
}

Result unknown_opcode(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.opcode = 0x7e;
	return dropped_and_counted(pr, p.build(), "rx_malformed", "opcode 0x7e");
}

Result bad_crc(Peer &pr)
{
	DataPkt p = valid_send(pr);
	Bytes b = p.build();
	b[b.size() - 2] ^= 0x40;
	return dropped_and_counted(pr, b, "rx_bad_crc", "wrong CRC32C");
}

Result payload_bit_flip(Peer &pr)
{
	DataPkt p = valid_send(pr);
	Bytes b = p.build();
	b[45] ^= 0x01;
	return dropped_and_counted(pr, b, "rx_bad_crc", "payload bit flip");
}

Result truncated(Peer &pr)
{
	DataPkt p = valid_send(pr);
	Bytes b = p.build();
	b.resize(12);
	seal(b);
	return dropped_and_counted(pr, b, "rx_malformed", "16-byte packet");
}

Result first_flag_mismatch(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.flags &= ~f_first;
	return dropped_and_counted(pr, p.build(), "rx_malformed", "offset 0 without FIRST");
}

Result beyond_msg_len(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.msg_len = 32;		// payload 64
	p.flags |= f_last;
	return dropped_and_counted(pr, p.build(), "rx_malformed", "offset + length > msg_len");
}

Result above_mtu(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.payload = pattern(1, pr.info.mtu + 4);
	p.msg_len = pr.info.mtu + 4;
	return dropped_and_counted(pr, p.build(), "rx_malformed", "payload > MTU");
}

Result ack_bad_length(Peer &pr)
{
	AckPkt a;
	a.qpn = pr.info.qpn;
	a.cum_psn = pr.info.psn;
	a.ranges = {{pr.info.psn, pr.info.psn}};
	Bytes b = a.build();
	b[34] = 3;	// claims 3 ranges, carries 1
	reseal(b);
	return dropped_and_counted(pr, b, "rx_malformed", "ACK nranges 3 with one range");
}

Result wrong_qpn(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.qpn = (pr.info.qpn + 0x1000) & 0xffffff;
	return dropped_and_counted(pr, p.build(), "rx_wrong_qpn", "other dst_qpn");
}

Result qpn_high_byte(Peer &pr)
{
	DataPkt p = valid_send(pr);
	p.qpn = pr.info.qpn | 0x01000000;
	auto before = pr.dut.counter("rx_data");
	pr.dut.inject(p.build(), 0);
	if (!pr.wait().empty())
		return fail("a dst_qpn with a non-zero high byte was answered");
	auto after = pr.dut.counter("rx_data");
	if (before && after && *after != *before)
		return fail("a dst_qpn with a non-zero high byte was accepted");
	return still_works(pr, "dst_qpn high byte 1");
}

Result out_of_window(Peer &pr)
{
	DataPkt p = valid_send(pr);
	// Beyond the largest window a connection may have (512, MR-CONN-001)
	// and not behind (< 2^23): no conforming responder can hold it.
	p.psn = pr.psn(1000);
	return dropped_and_counted(pr, p.build(), "rx_out_of_window", "PSN 1000 ahead");
}

Result unknown_caps(Peer &pr)
{
	pr.post_recv();
	auto m = pr.message(opc_send, 64, 60);
	m.pkts[0].caps = 0xf;
	pr.send(m.pkts[0]);
	auto a = acks(pr.answer());
	if (a.empty() || a.back().cum_psn != pr.psn(1))
		return fail("a packet with unknown capability bits was not accepted");
	return pass("unknown capability bits ignored");
}

Result probe_reply(Peer &pr)
{
	unsigned path = pr.info.num_paths - 1;
	AckPkt p;
	p.opcode = opc_probe;
	p.qpn = pr.info.qpn;
	p.ts = 0x00777777;
	p.path = static_cast<uint8_t>(path);
	pr.dut.inject(p.build(), path);
	std::vector<unsigned> paths;
	auto r = of_opcode(pr.answer(), opc_probe_reply, &paths);
	if (r.empty())
		return fail("PROBE not answered with PROBE_REPLY");
	if (paths[0] != path || r[0].ts_echo != 0x00777777 || r[0].echo_path != path)
		return fail(str("PROBE_REPLY on path ", paths[0], " echo ts ", r[0].ts_echo, " path ", unsigned(r[0].echo_path)));
	return pass("PROBE_REPLY on the probe's path, ts and path echoed");
}

// ---- requester: what the DUT sends ------------------------------------------

// The DUT's data packets; with first_only, the first copy of each PSN
// (over a real wire a slow peer can see retransmissions it did not cause).
std::vector<Parsed> data_of(const std::vector<RxPkt> &rx,
			    std::vector<unsigned> *paths = nullptr,
			    bool first_only = false)
{
	std::vector<Parsed> out;
	std::set<uint32_t> seen;
	for (const auto &r : rx) {
		Parsed p = parse(r.bytes);
		if (p.valid && p.version == 1 && p.is_data()) {
			if (first_only && !seen.insert(p.psn).second)
				continue;
			out.push_back(p);
			if (paths)
				paths->push_back(r.path);
		}
	}
	return out;
}

Result data_header(Peer &pr)
{
	uint32_t len = 2 * pr.info.mtu + 100;
	if (!pr.dut.post_send(1, op_send, send_base, len, 0, 0))
		return na("DUT cannot post a SEND");
	auto rx = pr.answer();
	if (auto why = undecodable(rx); !why.empty())
		return fail("DUT packet undecodable: " + why);
	auto d = data_of(rx, nullptr, true);
	if (d.size() != 3)
		return fail(str("SEND of ", std::dec, len, " bytes sent as ", d.size(), " packets, want 3"));
	std::set<uint32_t> offs;
	for (const auto &p : d) {
		if (p.opcode != opc_send || p.qpn_field != pr.set.peer_qpn)
			return fail(str("opcode ", unsigned(p.opcode), " dst_qpn ", p.qpn_field));
		if (p.msg_len != len || p.payload_len > pr.info.mtu ||
		    p.offset + p.payload_len > p.msg_len)
			return fail(str("offset ", p.offset, " len ", p.payload_len, " msg_len ", p.msg_len));
		if (bool(p.flags & f_first) != (p.offset == 0) ||
		    bool(p.flags & f_last) != (p.offset + p.payload_len == p.msg_len))
			return fail(str("FIRST/LAST flags 0x", unsigned(p.flags), " at offset ", p.offset));
		if (p.raddr != 0 || p.rkey_ssn != 0 || p.msg_id != 0)
			return fail("first SEND: msg_id, SSN and raddr must be 0");
		offs.insert(p.offset);
	}
	if (offs.size() != 3)
		return fail("offsets not distinct");
	return pass("3 packets, flags, offsets, msg_len, SSN correct");
}

Result psn_consecutive(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 4 * pr.info.mtu, 0, 0))
		return na("DUT cannot post a SEND");
	auto d = data_of(pr.answer(), nullptr, true);
	std::set<uint32_t> psns;
	for (const auto &p : d)
		psns.insert(p.psn);
	for (uint32_t i = 0; i < 4; i++)
		if (!psns.count(pr.dut_psn(i)))
			return fail(str("PSN ", pr.dut_psn(i), " missing: PSNs start at the initial PSN, +1 per packet"));
	if (psns.size() != 4)
		return fail(str(psns.size(), " distinct PSNs for 4 packets"));
	return pass(str("PSNs ", pr.dut_psn(0), "..", pr.dut_psn(3)));
}

Result msg_id_ssn(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 64, 0, 0) ||
	    !pr.dut.post_send(2, op_write, send_base, 64, 0x55, 0x1000) ||
	    !pr.dut.post_send(3, op_send, send_base, 64, 0, 0))
		return na("DUT cannot post sends");
	auto d = data_of(pr.answer(), nullptr, true);
	if (d.size() != 3)
		return fail(str(d.size(), " packets for 3 one-packet WRs"));
	std::sort(d.begin(), d.end(), [&](const Parsed &a, const Parsed &b) {
		return psn_add(a.psn, -int64_t(pr.info.psn)) <
		       psn_add(b.psn, -int64_t(pr.info.psn));
	});
	if (d[0].msg_id != 0 || d[1].msg_id != 1 || d[2].msg_id != 2)
		return fail(str("msg_ids ", d[0].msg_id, ",", d[1].msg_id, ",", d[2].msg_id));
	if (d[0].rkey_ssn != 0 || d[2].rkey_ssn != 1)
		return fail("SSN does not count SENDs only");
	if (d[1].opcode != opc_write || d[1].rkey_ssn != 0x55 || d[1].raddr != 0x1000)
		return fail("WRITE does not carry rkey/raddr");
	return pass("msg_id 0,1,2; SSN 0,1; WRITE rkey/raddr");
}

Result ack_req_last(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 3 * pr.info.mtu, 0, 0))
		return na("DUT cannot post a SEND");
	auto d = data_of(pr.answer(), nullptr, true);
	if (d.empty())
		return fail("nothing sent");
	auto last = std::max_element(d.begin(), d.end(), [&](const Parsed &a, const Parsed &b) {
		return psn_add(a.psn, -int64_t(pr.info.psn)) <
		       psn_add(b.psn, -int64_t(pr.info.psn));
	});
	return (last->flags & f_ack_req) ? pass("ACK_REQ on the last packet")
					 : fail("the last packet to send lacks ACK_REQ");
}

Result spraying(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 8 * pr.info.mtu, 0, 0))
		return na("DUT cannot post a SEND");
	std::vector<unsigned> paths;
	auto d = data_of(pr.answer(), &paths);
	std::set<unsigned> used(paths.begin(), paths.end());
	std::set<uint8_t> named;
	for (size_t i = 0; i < d.size(); i++) {
		named.insert(d[i].path);
		if (d[i].path != paths[i])
			return fail(str("packet names path ", unsigned(d[i].path), ", left on ", paths[i]));
	}
	if (used.size() < 2)
		return fail(str("8 packets on ", used.size(), " path(s) of ", pr.info.num_paths));
	return pass(str("8 packets over ", used.size(), " paths"));
}

// The suite as a receiver of the DUT's stream: SACK bookkeeping.
struct Receiver {
	Peer &pr;
	std::set<uint32_t> got;		// PSN indexes above 0
	uint32_t cum() const
	{
		uint32_t c = 0;
		while (got.count(c))
			c++;
		return c;
	}
	void take(const Parsed &p)
	{
		got.insert(psn_add(p.psn, -int64_t(pr.info.psn)));
	}
	AckPkt ack(const Parsed &trigger, unsigned path)
	{
		uint32_t c = cum();
		AckPkt a = pr.ack(c, trigger, path);
		uint32_t start = 0;
		bool in = false;
		for (uint32_t i = c; i <= (got.empty() ? 0 : *got.rbegin()) + 1; i++) {
			bool h = got.count(i);
			if (h && !in) { start = i; in = true; }
			if (!h && in) {
				if (a.ranges.size() < 16)
					a.ranges.emplace_back(pr.dut_psn(start), pr.dut_psn(i));
				in = false;
			}
		}
		return a;
	}
};

Result selective_retx(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 8 * pr.info.mtu, 0, 0))
		return na("DUT cannot post a SEND");
	Receiver rv{pr, {}};
	std::vector<unsigned> paths;
	auto d = data_of(pr.first_data(), &paths, true);
	unsigned lost_path = 0;
	for (size_t i = 0; i < d.size(); i++) {
		if (d[i].psn == pr.dut_psn(1)) {
			lost_path = paths[i];
			continue;	// "lost"
		}
		rv.take(d[i]);
	}
	for (size_t i = 0; i < d.size(); i++)
		if (d[i].psn != pr.dut_psn(1))
			pr.dut.inject(rv.ack(d[i], paths[i]).build(), paths[i]);
	paths.clear();
	auto r = data_of(pr.until_data(), &paths);
	unsigned n = 0;
	for (size_t i = 0; i < r.size(); i++) {
		if (r[i].psn != pr.dut_psn(1))
			return fail(str("PSN ", r[i].psn, " retransmitted though SACKed"));
		if (!(r[i].flags & f_retx) || !(r[i].flags & f_ack_req))
			return fail("retransmission without RETX and ACK_REQ flags");
		if (pr.info.num_paths > 1 && n == 0 && paths[i] == lost_path)
			return fail(str("retransmitted on the path it was lost on (", lost_path, ")"));
		n++;
		rv.take(r[i]);
		pr.dut.inject(rv.ack(r[i], paths[i]).build(), paths[i]);
	}
	if (n == 0)
		return fail("the missing PSN was never retransmitted");
	pr.wait();
	for (const auto &c : pr.dut.poll())
		if (c.wr_id == 1 && c.status == wc_success)
			return pass(str("only the missing PSN resent (", n, "x), send completed"));
	return fail("send did not complete after the retransmission was ACKed");
}

// Transmission times of the DUT's single packet while nothing is ACKed.
std::vector<uint64_t> unacked_transmissions(Peer &pr, std::vector<Completion> *wc)
{
	std::vector<uint64_t> t;
	pr.dut.post_send(1, op_send, send_base, 64, 0, 0);
	for (unsigned round = 0; round < 60 && wc->empty(); round++) {
		for (const auto &r : pr.dut.collect(pr.info.timer_ns)) {
			Parsed p = parse(r.bytes);
			if (p.valid && p.is_data() && p.psn == pr.dut_psn(0))
				t.push_back(r.t_ns);
		}
		for (const auto &c : pr.dut.poll())
			wc->push_back(c);
	}
	return t;
}

Result pto_backoff(Peer &pr)
{
	if (pr.info.num_paths != 1)
		return na("needs a one-path DUT");
	std::vector<Completion> wc;
	auto t = unacked_transmissions(pr, &wc);
	if (t.size() < 4)
		return fail(str(std::dec, t.size(), " transmission(s) of an unacknowledged packet"));
	// The first resend may be a tail loss probe; the PTOs after it double.
	for (size_t i = 2; i + 1 < t.size(); i++) {
		uint64_t g0 = t[i] - t[i - 1], g1 = t[i + 1] - t[i];
		if (g1 * 2 < g0 * 3)
			return fail(str(std::dec, "resend gaps ", g0, " ns then ", g1, " ns: no exponential backoff"));
	}
	return pass(str(std::dec, t.size(), " transmissions, gaps doubling"));
}

// A peer that answers nothing: the DUT resends (its timers' losses are not
// charged to retry_cnt, MR-LOSS-009, so how often is its PTO's business)
// and gives up with RETRY_EXC_ERR after its give-up bound (MR-FAIL-007).
Result retry_exhausted(Peer &pr)
{
	if (pr.info.num_paths != 1)
		return na("needs a one-path DUT");
	std::vector<Completion> wc;
	auto t = unacked_transmissions(pr, &wc);
	if (t.size() < 2)
		return fail(str(std::dec, t.size(), " transmission(s) of an unacknowledged packet, want a resend"));
	for (const auto &c : wc)
		if (c.wr_id == 1)
			return c.status == wc_retry_exc
				       ? pass(str(std::dec, t.size(), " transmissions, then RETRY_EXC_ERR"))
				       : fail(str("completion status ", unsigned(c.status), ", want 12"));
	return fail("no completion after the retries");
}

Result send_completes_on_ack(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 64, 0, 0) ||
	    !pr.dut.post_send(2, op_send, send_base, 64, 0, 0))
		return na("DUT cannot post sends");
	std::vector<unsigned> paths;
	auto d = data_of(pr.first_data(), &paths, true);
	if (d.size() != 2)
		return fail(str(d.size(), " packets for 2 sends"));
	pr.dut.inject(pr.ack(1, d[0], paths[0]).build(), paths[0]);
	pr.answer();
	auto c = pr.dut.poll();
	if (c.size() != 1 || c[0].wr_id != 1 || c[0].status != wc_success)
		return fail(str(c.size(), " completions after ACK of the first send only"));
	pr.dut.inject(pr.ack(2, d[1], paths[1]).build(), paths[1]);
	pr.answer();
	c = pr.dut.poll();
	if (c.size() != 1 || c[0].wr_id != 2 || c[0].status != wc_success)
		return fail("second send did not complete on its ACK");
	return pass("each send completed when the cumulative ACK passed it");
}

Result nak_completion(Peer &pr, uint32_t opcode, uint8_t syndrome,
		      uint8_t want_status)
{
	if (!pr.dut.post_send(1, opcode, send_base, 64, 0x99, 0x2000))
		return na("DUT cannot post");
	std::vector<unsigned> paths;
	auto d = data_of(pr.first_data(), &paths, true);
	if (d.empty())
		return fail("nothing sent");
	AckPkt a = pr.ack(0, d[0], paths[0]);
	a.syndrome = syndrome;
	a.nak_psn = d[0].psn;
	pr.dut.inject(a.build(), paths[0]);
	pr.answer();
	for (const auto &c : pr.dut.poll())
		if (c.wr_id == 1)
			return c.status == want_status
				       ? pass(str("completed with status ", std::dec, unsigned(c.status)))
				       : fail(str("status ", std::dec, unsigned(c.status), ", want ", unsigned(want_status)));
	return fail("no completion after a NAK");
}

Result nak_rem_access(Peer &pr) { return nak_completion(pr, op_write, 2, wc_rem_access); }
Result nak_inv_req(Peer &pr) { return nak_completion(pr, op_send, 3, wc_rem_inv_req); }

Result requester_rnr(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 64, 0, 0))
		return na("DUT cannot post a SEND");
	std::vector<unsigned> paths;
	auto d = data_of(pr.first_data(), &paths, true);
	if (d.empty())
		return fail("nothing sent");
	AckPkt a = pr.ack(0, d[0], paths[0]);
	a.syndrome = 1;
	a.nak_psn = d[0].psn;
	pr.dut.inject(a.build(), paths[0]);
	paths.clear();
	auto r = data_of(pr.until_data(), &paths);
	if (r.empty() || r[0].psn != d[0].psn)
		return fail("SEND not resent after an RNR NAK and rnr_timer");
	pr.dut.inject(pr.ack(1, r[0], paths[0]).build(), paths[0]);
	pr.answer();
	for (const auto &c : pr.dut.poll())
		if (c.wr_id == 1)
			return c.status == wc_success ? pass("resent after rnr_timer, completed")
						      : fail(str("status ", unsigned(c.status)));
	return fail("no completion after the resend was ACKed");
}

Result window_cap(Peer &pr)
{
	uint32_t n = pr.info.window + 32;
	if (uint64_t(n) * pr.info.mtu > pr.info.mr_len - send_base)
		n = (pr.info.mr_len - send_base) / pr.info.mtu;
	if (n <= pr.info.window)
		return na("DUT memory too small to exceed its window");
	if (!pr.dut.post_send(1, op_send, send_base, n * pr.info.mtu, 0, 0))
		return na("DUT cannot post the SEND");
	Receiver rv{pr, {}};
	uint32_t highest = 0;
	for (unsigned round = 0; round < 30; round++) {
		std::vector<unsigned> paths;
		auto d = data_of(pr.dut.collect(pr.info.timer_ns / 20), &paths);
		for (size_t i = 0; i < d.size(); i++) {
			uint32_t idx = psn_add(d[i].psn, -int64_t(pr.info.psn));
			highest = std::max(highest, idx);
			if (idx == 0)
				continue;	// the oldest never arrives
			rv.take(d[i]);
			pr.dut.inject(rv.ack(d[i], paths[i]).build(), paths[i]);
		}
	}
	if (highest >= pr.info.window)
		return fail(str(std::dec, "PSN index ", highest, " sent with PSN 0 outstanding, window ", pr.info.window));
	return pass(str(std::dec, "at most ", highest + 1, " PSNs outstanding, window ", pr.info.window));
}

Result failover_run(Peer &pr, bool want_probe)
{
	if (!pr.dut.post_send(1, op_send, send_base, 16 * pr.info.mtu, 0, 0))
		return na("DUT cannot post a SEND");
	Receiver rv{pr, {}};
	bool done = false, probed = false;
	// After the first message, long ones, more PSNs than the window at a
	// time: the DUT always has data the window does not let it send yet,
	// so it has no tail to probe (a tail loss probe, MR-LOSS-010, would
	// rescue path 0's packets before its PTO when the DUT's initial RTT is
	// long) and only path 0's own PTOs recover what it sends there, until
	// they declare the path failed (MR-FAIL-001).
	uint32_t per = std::min(std::max(32u, pr.info.window / 2 + 1),
				(pr.info.mr_len - send_base) / pr.info.mtu);
	// Up to 64 of them: with 16 the module in a TCG guest showed no PROBE
	// in 1 of 5 runs; more data keeps path 0's PTOs running until they
	// declare it failed.
	unsigned more = 0, more_done = 0;
	for (unsigned round = 0; round < 400 && !(done && (probed || !want_probe)); round++) {
		while (done && want_probe && more < 64 &&
		       (more - more_done) * per <= pr.info.window)
			pr.dut.post_send(2 + more++, op_send, send_base, per * pr.info.mtu, 0, 0);
		std::vector<RxPkt> rx = pr.dut.collect(pr.info.timer_ns / 10);
		for (const auto &r : rx) {
			Parsed p = parse(r.bytes);
			if (!p.valid)
				continue;
			if (r.path == 0) {	// path 0 is a black hole
				probed |= p.opcode == opc_probe;
				continue;
			}
			if (p.is_data()) {
				rv.take(p);
				pr.dut.inject(rv.ack(p, r.path).build(), r.path);
			}
		}
		for (const auto &c : pr.dut.poll()) {
			if (c.status != wc_success)
				return fail(str("send failed with status ", std::dec, unsigned(c.status), " though paths 1.. work"));
			done |= c.wr_id == 1;
			more_done += c.wr_id != 1;
		}
	}
	if (!done)
		return fail(str(std::dec, "with path 0 dead, ", rv.cum(), " of 16 packets delivered"));
	if (want_probe && !probed)
		return fail("no PROBE on the failed path 0");
	return pass(want_probe ? "failed path 0 probed" : "all 16 packets delivered on the other paths");
}

Result failover(Peer &pr) { return failover_run(pr, false); }
Result failed_path_probed(Peer &pr) { return failover_run(pr, true); }

// ---- RoCEv2-compatible mode (MR-COMPAT) --------------------------------------

std::vector<ParsedBth> bths(const std::vector<RxPkt> &rx)
{
	std::vector<ParsedBth> out;
	for (const auto &r : rx)
		out.push_back(parse_bth(r.bytes));
	return out;
}

BthPkt send_only(Peer &pr, uint32_t idx, bool ackreq)
{
	BthPkt b;
	b.opcode = 0x04;
	b.qpn = pr.info.qpn;
	b.psn = pr.psn(idx);
	b.ackreq = ackreq;
	b.payload = pattern(idx, 60);
	return b;
}

Result rocev2_ack(Peer &pr)
{
	pr.post_recv();
	pr.dut.inject(send_only(pr, 0, true).build(), 0);
	auto b = bths(pr.answer());
	for (const auto &x : b) {
		if (!x.valid)
			return fail("undecodable answer (BTH or CRC32C trailer)");
		if (x.opcode == 0x11) {
			if (x.pkey != 0xffff || (x.qpn_field & 0xffffff) != pr.set.peer_qpn ||
			    x.psn != pr.psn(0))
				return fail(str("ACK BTH pkey ", x.pkey, " qpn ", x.qpn_field, " psn ", x.psn));
			if (!x.has_aeth || x.aeth_syndrome != 0x1f || x.aeth_msn != 1)
				return fail(str("AETH syndrome ", unsigned(x.aeth_syndrome), " msn ", x.aeth_msn));
			return pass("ACK: BTH 0x11, P_Key 0xffff, AETH 0x1f, MSN 1");
		}
	}
	return fail("SEND ONLY with AckReq not acknowledged");
}

Result rocev2_seq_nak(Peer &pr)
{
	pr.post_recv();
	pr.post_recv();
	pr.dut.inject(send_only(pr, 1, true).build(), 0);
	pr.dut.inject(send_only(pr, 2, true).build(), 0);
	auto b = bths(pr.answer());
	unsigned naks = 0;
	for (const auto &x : b)
		if (x.valid && x.opcode == 0x11 && x.aeth_syndrome == 0x60) {
			if (x.psn != pr.psn(0))
				return fail(str("NAK names PSN ", x.psn, ", expected ", pr.psn(0)));
			naks++;
		}
	if (naks != 1)
		return fail(str(naks, " sequence NAKs for two packets ahead, want 1"));
	return pass("one PSN sequence error NAK with the expected PSN");
}

Result rocev2_dup(Peer &pr)
{
	pr.post_recv();
	pr.dut.inject(send_only(pr, 0, true).build(), 0);
	pr.answer();
	pr.dut.inject(send_only(pr, 0, true).build(), 0);
	for (const auto &x : bths(pr.answer()))
		if (x.valid && x.opcode == 0x11 && x.aeth_syndrome == 0x1f)
			return pass("duplicate answered with an ACK");
	return fail("duplicate not answered with an ACK");
}

Result rocev2_rnr(Peer &pr)
{
	pr.dut.inject(send_only(pr, 0, true).build(), 0);
	for (const auto &x : bths(pr.answer()))
		if (x.valid && x.opcode == 0x11 && (x.aeth_syndrome & 0xe0) == 0x20)
			return pass("RNR NAK");
	return fail("SEND without a receive not answered with an RNR NAK");
}

Result rocev2_requester(Peer &pr)
{
	uint32_t len = 2 * pr.info.mtu + 10;
	if (!pr.dut.post_send(1, op_send, send_base, len, 0, 0))
		return na("DUT cannot post a SEND");
	auto rx = pr.answer();
	auto b = bths(rx);
	if (b.size() != 3)
		return fail(str(b.size(), " packets for a 3-MTU SEND"));
	const uint8_t want[3] = {0x00, 0x01, 0x02};
	for (size_t i = 0; i < 3; i++) {
		if (!b[i].valid)
			return fail("undecodable packet (CRC32C trailer)");
		if (b[i].opcode != want[i] || b[i].psn != pr.dut_psn(i) || b[i].pkey != 0xffff)
			return fail(str("packet ", i, ": opcode ", unsigned(b[i].opcode), " psn ", b[i].psn));
		if (b[i].ackreq != (i == 2))
			return fail("AckReq not exactly on the last packet");
		size_t payload = rx[i].bytes.size() - 16 - b[i].pad;
		if (i < 2 && payload != pr.info.mtu)
			return fail(str(std::dec, "FIRST/MIDDLE carry ", payload, " bytes, not one MTU"));
	}
	if (b[2].pad != 2)
		return fail(str("pad count ", unsigned(b[2].pad), " for 10 trailing bytes, want 2"));
	return pass("SEND FIRST/MIDDLE/LAST, one MTU each, pad, AckReq last");
}

Result rocev2_go_back_n(Peer &pr)
{
	if (!pr.dut.post_send(1, op_send, send_base, 3 * pr.info.mtu, 0, 0))
		return na("DUT cannot post a SEND");
	pr.answer();
	BthPkt nak;
	nak.opcode = 0x11;
	nak.qpn = pr.info.qpn;
	nak.psn = pr.dut_psn(1);
	nak.ext = {0x60, 0, 0, 0};
	pr.dut.inject(nak.build(), 0);
	auto b = bths(pr.answer());
	if (b.size() < 2 || b[0].psn != pr.dut_psn(1) || b[1].psn != pr.dut_psn(2))
		return fail("a sequence NAK at PSN+1 did not resend PSN+1, PSN+2");
	return pass("go-back-N from the NAK's PSN");
}

}  // namespace

const std::vector<Case> &all_cases()
{
	static const std::vector<Case> cases = {
	// responder side, MetaRoCE mode
	{"ack-header", "MR-WIRE-002", Mode::metaroce, 1, "ACK common header fields and version", 0, false, ack_header},
	{"ack-crc", "MR-WIRE-006", Mode::metaroce, 1, "DUT packets end with a correct CRC32C", 0, false, ack_crc},
	{"ack-length", "MR-WIRE-005", Mode::metaroce, 1, "ACK length matches nranges", 0, false, ack_length},
	{"ack-echo", "MR-PATH-003", Mode::metaroce, 1, "ACK echoes ts and path", 0, false, ack_echo},
	{"ack-same-path", "MR-PATH-001", Mode::metaroce, 2, "ACK leaves on its trigger's path", 0, false, ack_same_path},
	{"ack-req-immediate", "MR-LOSS-002", Mode::metaroce, 1, "ACK_REQ is answered at once", 0, false, ack_req_immediate},
	{"ooo-immediate-ack", "MR-LOSS-002", Mode::metaroce, 1, "out-of-order packet is answered at once", 0, false, ooo_immediate_ack},
	{"delayed-ack", "MR-LOSS-002", Mode::metaroce, 1, "a lone packet is acknowledged by max_ack_delay", 0, false, delayed_ack},
	{"final-ack-on-close", "MR-LOSS-012", Mode::metaroce, 1, "final ACK once, and again when the QP is destroyed", 0, false, final_ack_on_close},
	{"send-ooo-placement", "MR-ORDER-001", Mode::metaroce, 1, "SEND packets placed in any arrival order", 0, false, send_ooo_placement},
	{"write-ooo-placement", "MR-ORDER-001", Mode::metaroce, 1, "WRITE packets placed at raddr + offset", 0, false, write_ooo_placement},
	{"sack-single-gap", "MR-LOSS-001", Mode::metaroce, 1, "one gap: cum_psn and one SACK range", 0, false, sack_single_gap},
	{"sack-multi-gap", "MR-LOSS-001", Mode::metaroce, 1, "three gaps: three ranges, lowest first", 0, false, sack_multi_gap},
	{"dup-suppressed", "MR-LOSS-008", Mode::metaroce, 1, "duplicate not placed, ACKed, counted", 0, false, dup_suppressed},
	{"dup-below-cum", "MR-LOSS-008", Mode::metaroce, 1, "old duplicate leaves cum_psn", 0, false, dup_below_cum},
	{"dsack", "MR-LOSS-011", Mode::metaroce, 1, "duplicate reported with DSACK", 0, false, dsack},
	{"ssn-matching", "MR-ORDER-004", Mode::metaroce, 1, "SEND n consumes receive n", 0, false, ssn_matching},
	{"completion-order", "MR-ORDER-002", Mode::metaroce, 1, "receive completes after earlier messages", 0, false, completion_order},
	{"psn-wrap", "MR-CONN-003", Mode::metaroce, 1, "cum_psn wraps modulo 2^24", 0xfffffe, false, psn_wrap},
	{"psn-wrap-sack", "MR-CONN-003", Mode::metaroce, 1, "SACK range across the wrap", 0xffffff, false, psn_wrap_sack},
	{"rnr", "MR-FC-002", Mode::metaroce, 1, "SEND without receive: RNR syndrome", 0, false, rnr},
	{"write-bad-rkey", "MR-FC-004", Mode::metaroce, 1, "bad rkey: remote access syndrome", 0, false, write_bad_rkey},
	{"send-too-long", "MR-FC-003", Mode::metaroce, 1, "SEND longer than receive: invalid request", 0, false, send_too_long},
	{"probe-reply", "MR-FAIL-002", Mode::metaroce, 2, "PROBE answered on its path", 0, false, probe_reply},
	{"unknown-caps", "MR-WIRE-003", Mode::metaroce, 1, "unknown capability bits ignored", 0, false, unknown_caps},
	// malformed packets: dropped, counted, QP unaffected
	{"bad-version", "MR-WIRE-003", Mode::metaroce, 1, "version 2 dropped", 0, false, bad_version},
	{"unknown-opcode", "MR-WIRE-003", Mode::metaroce, 1, "unknown opcode dropped", 0, false, unknown_opcode},
	{"bad-crc", "MR-WIRE-006", Mode::metaroce, 1, "wrong CRC32C dropped", 0, false, bad_crc},
	{"payload-bit-flip", "MR-WIRE-007", Mode::metaroce, 1, "corrupted payload dropped", 0, false, payload_bit_flip},
	{"truncated", "MR-WIRE-007", Mode::metaroce, 1, "packet shorter than its headers dropped", 0, false, truncated},
	{"first-flag-mismatch", "MR-WIRE-004", Mode::metaroce, 1, "FIRST flag inconsistent with offset", 0, false, first_flag_mismatch},
	{"beyond-msg-len", "MR-WIRE-004", Mode::metaroce, 1, "payload past msg_len dropped", 0, false, beyond_msg_len},
	{"above-mtu", "MR-WIRE-004", Mode::metaroce, 1, "payload above the MTU dropped", 0, false, above_mtu},
	{"ack-bad-length", "MR-WIRE-005", Mode::metaroce, 1, "ACK shorter than nranges dropped", 0, false, ack_bad_length},
	{"wrong-qpn", "MR-WIRE-008", Mode::metaroce, 1, "other dst_qpn dropped", 0, false, wrong_qpn},
	{"qpn-high-byte", "MR-WIRE-008", Mode::metaroce, 1, "dst_qpn with high byte set dropped", 0, false, qpn_high_byte},
	{"out-of-window", "MR-FC-001", Mode::metaroce, 1, "PSN beyond the window dropped", 0, false, out_of_window},
	// requester side, MetaRoCE mode
	{"data-header", "MR-WIRE-004", Mode::metaroce, 1, "data packets: flags, offsets, msg_len", 0, false, data_header},
	{"psn-consecutive", "MR-CONN-002", Mode::metaroce, 1, "PSNs from the initial PSN, +1 per packet", 0, false, psn_consecutive},
	{"msg-id-ssn", "MR-CONN-004", Mode::metaroce, 1, "msg_id per WR, SSN per SEND", 0, false, msg_id_ssn},
	{"ack-req-last", "MR-LOSS-002", Mode::metaroce, 1, "ACK_REQ on the last packet", 0, false, ack_req_last},
	{"spraying", "MR-PATH-005", Mode::metaroce, 2, "packets sprayed over paths", 0, false, spraying},
	{"selective-retx", "MR-LOSS-005", Mode::metaroce, 1, "only the SACK hole is retransmitted", 0, false, selective_retx},
	{"pto-backoff", "MR-LOSS-006", Mode::metaroce, 1, "probe timeout doubles", 0, true, pto_backoff},
	{"retry-exhausted", "MR-FAIL-007", Mode::metaroce, 1, "a silent peer: resends, then RETRY_EXC_ERR", 0, true, retry_exhausted},
	{"send-completes-on-ack", "MR-ORDER-003", Mode::metaroce, 1, "sends complete as the ACK passes them", 0, false, send_completes_on_ack},
	{"nak-rem-access", "MR-FC-004", Mode::metaroce, 1, "remote access NAK fails the WRITE", 0, false, nak_rem_access},
	{"nak-inv-req", "MR-FC-003", Mode::metaroce, 1, "invalid request NAK fails the SEND", 0, false, nak_inv_req},
	{"requester-rnr", "MR-FC-002", Mode::metaroce, 1, "RNR NAK: resend after rnr_timer", 0, false, requester_rnr},
	{"window-cap", "MR-FC-001", Mode::metaroce, 1, "no more than window PSNs outstanding", 0, false, window_cap},
	{"failover", "MR-FAIL-003", Mode::metaroce, 2, "delivery continues with path 0 dead", 0, false, failover},
	{"failed-path-probed", "MR-FAIL-002", Mode::metaroce, 2, "a failed path is probed", 0, false, failed_path_probed},
	// RoCEv2-compatible mode
	{"rocev2-ack", "MR-COMPAT-006", Mode::rocev2, 1, "BTH ACK with AETH and MSN", 0, false, rocev2_ack},
	{"rocev2-seq-nak", "MR-COMPAT-003", Mode::rocev2, 1, "one sequence NAK for packets ahead", 0, false, rocev2_seq_nak},
	{"rocev2-dup", "MR-COMPAT-003", Mode::rocev2, 1, "duplicate answered with an ACK", 0, false, rocev2_dup},
	{"rocev2-rnr", "MR-COMPAT-006", Mode::rocev2, 1, "RNR NAK", 0, false, rocev2_rnr},
	{"rocev2-requester", "MR-COMPAT-002", Mode::rocev2, 1, "SEND FIRST/MIDDLE/LAST framing", 0, false, rocev2_requester},
	{"rocev2-go-back-n", "MR-COMPAT-004", Mode::rocev2, 1, "resend from a sequence NAK's PSN", 0, false, rocev2_go_back_n},
	};
	return cases;
}

Result run_case(Dut &dut, const Case &c)
{
	DutSetup s;
	s.mode = c.mode;
	s.num_paths = c.one_path ? 1 : std::max(c.min_paths, 4u);
	if (c.peer_psn)
		s.peer_psn = c.peer_psn;
	DutInfo info;
	std::string err;
	if (!dut.open(s, &info, &err))
		return na("DUT cannot set up this QP" + (err.empty() ? "" : ": " + err));
	Result r;
	if (info.num_paths < c.min_paths)
		r = na(str(std::dec, "needs ", c.min_paths, " paths, DUT has ", info.num_paths));
	else if (c.one_path && info.num_paths != 1)
		r = na("needs a one-path DUT");
	else {
		Peer p{dut, info, s};
		r = c.run(p);
	}
	dut.close();
	return r;
}

}  // namespace mrcomp
