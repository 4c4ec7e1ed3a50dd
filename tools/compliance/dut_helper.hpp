// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The DUT-side helper protocol of README.md ("Pointing it at your
// implementation"), in one place: the "open" command and its reply as the
// suite (dut_udp.cpp) writes and reads them, and HelperServer, the command
// parser of a helper, which serves any implementation behind the
// HelperBackend interface:
//   tests/compliance/core-udp-dut.cpp       the core behind a UDP socket
//   tests/progs/metaroce_compliance_dut.cpp a verbs device (the module)
#ifndef METAROCE_COMPLIANCE_DUT_HELPER_HPP
#define METAROCE_COMPLIANCE_DUT_HELPER_HPP

#include "compliance.hpp"

#include <cstdio>
#include <map>

namespace mrcomp {

// The arguments of "open".
struct HelperOpen {
	Mode mode = Mode::metaroce;
	unsigned paths = 1;
	uint32_t peer_qpn = 0, peer_psn = 0;
	std::string peer_addr;
	// The suite may take this long to answer a DUT packet (0: not said).
	// A DUT whose initial RTT (before its first sample) is configurable
	// assumes at least this, so that its PTO and tail loss probe do not
	// fire before the suite's first answer can arrive.
	uint64_t rtt_ns = 0;
};

// The "ok" reply of "open".
struct HelperQp {
	DutInfo info;	// answer_ns, timer_ns: 0 = not reported (defaults)
	uint32_t sport_base = 0;	// 0 = not reported
	// RoCEv2 mode: the DUT's trailer is the IBTA ICRC (MR-COMPAT-013),
	// not the CRC32C stand-in of the userspace core (0 = not reported).
	bool icrc = false;
};

std::string format_open(const HelperOpen &o);	// "open mode=..."
bool parse_open(const std::string &args, HelperOpen *o, std::string *err);
std::string format_qp(const HelperQp &q);	// "qpn=... psn=..."
bool parse_qp(const std::string &args, HelperQp *q);
// "wc WR_ID STATUS OPCODE BYTE_LEN" of a poll reply.
std::string format_wc(const Completion &c);
bool parse_wc(const std::string &line, Completion *c);

// The implementation under test, as a helper drives it.  Every call but
// open() and close() comes only while a QP is open; offsets and lengths are already
// checked against the MR.  The std::string results are "" on success,
// else the text of the "err" reply.
class HelperBackend {
public:
	virtual ~HelperBackend() = default;
	// A fresh QP and MR as README.md says; on failure nothing stays open.
	virtual std::string open(const HelperOpen &o, HelperQp *q) = 0;
	// "destroy": the QP is destroyed as its owner would and sends what
	// it owes the peer on the way (MR-LOSS-012) before this returns; the
	// MR and the rest stay until close().
	virtual std::string destroy_qp() = 0;
	// destroy_qp() if the QP still exists, then free the rest; also
	// when nothing is open.
	virtual void close() = 0;
	virtual std::string post_recv(uint64_t wr_id, uint32_t off,
				      uint32_t len) = 0;
	// op 0 SEND, 1 RDMA WRITE
	virtual std::string post_send(uint64_t wr_id, uint32_t op, uint32_t off,
				      uint32_t len, uint32_t rkey,
				      uint64_t raddr) = 0;
	// Completions since the last poll, opcode 0 SEND, 1 WRITE, 2 RECV.
	virtual std::vector<Completion> poll() = 0;
	virtual std::optional<Bytes> read_mem(uint32_t off, uint32_t len) = 0;
	virtual std::optional<uint64_t> counter(const std::string &name) = 0;
};

// The command parser of a helper: one command line in, its reply lines
// out (each ending in '\n').
class HelperServer {
public:
	explicit HelperServer(HelperBackend &b) : b_(b) {}
	~HelperServer() { b_.close(); }
	std::string command(const std::string &line);
	// Serve the lines of in until its end, replying on out.
	void run(FILE *in, FILE *out);

private:
	HelperBackend &b_;
	bool open_ = false;
	uint64_t mr_len_ = 0;
};

}  // namespace mrcomp

#endif
