// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// metaroce-compliance: one set of protocol cases (cases.cpp), each playing
// the peer of an implementation under test (the DUT), and the harnesses
// that reach a DUT: in-process against the userspace core (dut_core.cpp)
// or over UDP against a live implementation driven by a DUT-side helper
// (dut_udp.cpp, protocol in README.md).
#ifndef METAROCE_COMPLIANCE_HPP
#define METAROCE_COMPLIANCE_HPP

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mrcomp {

using Bytes = std::vector<uint8_t>;

// ---- wire helpers (packet.cpp) -------------------------------------------

uint32_t crc32c(const uint8_t *p, size_t n);
void put_be16(uint8_t *p, uint16_t v);
void put_be32(uint8_t *p, uint32_t v);
void put_be64(uint8_t *p, uint64_t v);
uint16_t get_be16(const uint8_t *p);
uint32_t get_be32(const uint8_t *p);
uint64_t get_be64(const uint8_t *p);
// Append the CRC32C trailer (MR-WIRE-006); reseal() recomputes it in place.
void seal(Bytes &b);
void reseal(Bytes &b);
bool crc_ok(const Bytes &b);
// The IBTA ICRC (MR-COMPAT-013) of a RoCEv2 datagram: ip is its 20-byte
// IPv4 header, udp its UDP header and everything after it, the 4-byte
// ICRC slot included (the value goes there little-endian).
uint32_t icrc_ipv4(const uint8_t *ip, const uint8_t *udp, size_t len);

struct DataPkt {		// what the suite sends as a requester
	uint8_t version = 1, caps = 0x1, opcode = 0x01, flags = 0, path = 0;
	uint32_t qpn = 0, psn = 0, ts = 0;
	uint32_t msg_id = 0, offset = 0, msg_len = 0, rkey_ssn = 0;
	uint64_t raddr = 0;
	Bytes payload;
	Bytes build() const;	// sealed
};

struct AckPkt {			// ACK / PROBE / PROBE_REPLY
	uint8_t version = 1, caps = 0x1, opcode = 0x10, flags = 0, path = 0;
	uint32_t qpn = 0, psn = 0, ts = 0;
	uint32_t cum_psn = 0, ts_echo = 0, ack_delay = 0, nak_psn = 0;
	uint8_t echo_path = 0, syndrome = 0, ack_flags = 0;
	std::vector<std::pair<uint32_t, uint32_t>> ranges;
	Bytes build() const;	// sealed
};

// A MetaRoCE packet the DUT sent, decoded without trusting it.
struct Parsed {
	bool valid = false;	// long enough for its headers, CRC correct
	std::string why;	// when !valid
	uint8_t version = 0, caps = 0, opcode = 0, flags = 0, path = 0;
	uint32_t qpn_field = 0, psn = 0, ts = 0;
	// data
	uint32_t msg_id = 0, offset = 0, msg_len = 0, rkey_ssn = 0;
	uint64_t raddr = 0;
	size_t payload_off = 0, payload_len = 0;
	// ack
	uint32_t cum_psn = 0, ts_echo = 0, ack_delay = 0, nak_psn = 0;
	uint8_t echo_path = 0, syndrome = 0, nranges = 0, ack_flags = 0;
	std::vector<std::pair<uint32_t, uint32_t>> ranges;
	bool is_data() const { return opcode >= 0x01 && opcode <= 0x09; }
	bool is_ack() const { return opcode == 0x10; }
};
Parsed parse(const Bytes &b);

// IBTA RC over UDP (RoCEv2-compatible mode, MR-COMPAT-*).
struct BthPkt {
	uint8_t opcode = 0x04, se_m_pad_tver = 0;
	uint16_t pkey = 0xffff;
	uint32_t qpn = 0, psn = 0;
	bool ackreq = false;
	Bytes ext;		// RETH/ImmDt/... as raw bytes
	Bytes payload;
	Bytes build() const;	// pads payload to 4, sealed with CRC32C
};
struct ParsedBth {
	bool valid = false;
	uint8_t opcode = 0, pad = 0;
	uint16_t pkey = 0;
	uint32_t qpn_field = 0, psn = 0;
	bool ackreq = false;
	uint8_t aeth_syndrome = 0;
	uint32_t aeth_msn = 0;
	bool has_aeth = false;
};
ParsedBth parse_bth(const Bytes &b);

// 24-bit serial arithmetic (MR-CONN-003).
constexpr uint32_t psn_add(uint32_t a, int64_t d)
{
	return static_cast<uint32_t>((static_cast<int64_t>(a) + d) & 0xffffff);
}

// ---- the implementation under test -----------------------------------------

enum class Mode { metaroce = 0, rocev2 = 1 };

struct DutSetup {		// chosen by the case
	Mode mode = Mode::metaroce;
	unsigned num_paths = 1;	// wanted; the DUT reports what it has
	uint32_t peer_qpn = 0x00c0de;	// the suite's QPN
	uint32_t peer_psn = 0x000100;	// first PSN the suite sends
};

struct DutInfo {		// reported by the DUT after open()
	uint32_t qpn = 0;	// DUT's QPN
	uint32_t psn = 0;	// first PSN the DUT sends
	uint32_t rkey = 0;	// of the DUT's memory region
	uint64_t addr = 0;	// its address as WRITEs name it
	uint32_t mr_len = 0;
	uint32_t mtu = 0;
	unsigned num_paths = 1;
	uint32_t window = 0;
	uint32_t retry_cnt = 0;
	bool virtual_time = false;	// collect() advances a simulated clock
	uint64_t answer_ns = 0;	// wait that covers an immediate answer
	uint64_t timer_ns = 0;	// wait that covers delayed ACKs and one PTO
};

struct RxPkt {
	Bytes bytes;
	unsigned path = 0;	// path the DUT sent it on
	uint64_t t_ns = 0;	// when the suite saw it (DUT time base)
};

struct Completion {
	uint64_t wr_id = 0;
	uint32_t byte_len = 0;
	uint8_t opcode = 0, status = 0;	// enum mrc_opcode / ibv_wc_status
};

// What a case may do to a DUT.  Anything a DUT cannot do returns
// false / nullopt and the case reports n/a.
class Dut {
public:
	virtual ~Dut() = default;
	// A fresh QP for one case.  false + err: setup impossible.
	virtual bool open(const DutSetup &s, DutInfo *info, std::string *err) = 0;
	// Destroy the QP as its owner would (the core: mrc_conn_close(), then
	// free; verbs: ibv_destroy_qp()), the suite still listening: what the
	// DUT sends on the way is for the next collect().  false: the DUT
	// cannot (the case reports n/a).  close() still follows.
	virtual bool destroy_qp() = 0;
	// Free the QP (if not destroyed yet) and everything open() made.
	virtual void close() = 0;
	// Receive WR wr_id: len bytes at offset mr_off of the MR.
	virtual bool post_recv(uint64_t wr_id, uint32_t mr_off, uint32_t len) = 0;
	// Send WR (MRC_OP_SEND / MRC_OP_RDMA_WRITE) of len bytes from mr_off.
	virtual bool post_send(uint64_t wr_id, uint32_t opcode, uint32_t mr_off,
			       uint32_t len, uint32_t rkey, uint64_t raddr) = 0;
	// Hand one datagram payload to the DUT, as if it came on path.
	virtual void inject(const Bytes &pkt, unsigned path) = 0;
	// Packets the DUT sends within wait_ns (virtual time: the DUT's clock
	// advances by wait_ns, running its timers).
	virtual std::vector<RxPkt> collect(uint64_t wait_ns) = 0;
	virtual std::vector<Completion> poll() = 0;
	virtual std::optional<Bytes> read_mem(uint32_t mr_off, uint32_t len) = 0;
	// A transport counter of struct mrc_conn_stats by name.
	virtual std::optional<uint64_t> counter(const std::string &name) = 0;
	// The DUT's clock (ns), the base of RxPkt::t_ns.
	virtual uint64_t now() = 0;
};

std::unique_ptr<Dut> make_core_dut();
// addr: DUT IP; helper_cmd: shell command speaking the helper protocol.
std::unique_ptr<Dut> make_udp_dut(const std::string &addr,
				  const std::string &local,
				  const std::string &helper_cmd,
				  std::string *err);
// Wrap a DUT so it misbehaves in one named way (self-test of the suite).
std::unique_ptr<Dut> make_faulty_dut(std::unique_ptr<Dut> inner,
				     const std::string &fault);
extern const char *const fault_names[];

// ---- cases (cases.cpp) -------------------------------------------------------

enum class Status { pass, fail, na };

struct Result {
	Status status = Status::pass;
	std::string detail;
};

struct Peer;			// the suite's side of one case (cases.cpp)

struct Case {
	const char *name;	// unique, stable
	const char *req;	// the MR-* requirement it checks
	Mode mode;
	unsigned min_paths;
	const char *summary;
	uint32_t peer_psn;	// first PSN the suite sends; 0: default
	bool one_path;		// needs a one-path QP (per-path timers)
	Result (*run)(Peer &);
};

const std::vector<Case> &all_cases();
// Open a fresh QP on the DUT as the case needs, run the case, close it.
Result run_case(Dut &dut, const Case &c);

}  // namespace mrcomp

#endif
