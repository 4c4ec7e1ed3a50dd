// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * metaroce_hostile: hostile packets against a live MetaRoCE device
 * (issue 10), from plain UDP sockets.
 *
 * SYNOPSIS
 *   metaroce_hostile -d DEV -g GID_IDX --victim-ip A.B.C.D --peer-ip A.B.C.D
 *                    [-n PACKETS] [-S SEED] [--forged-rkeys N]
 *                    [--live IP:QPN:RQ_PSN]... [--gsi] [--netns NAME]
 *
 * It sends from network namespace NAME (default: its own), from which
 * VICTIM-IP (the address of DEV's netdev) is reached over the wire; DEV's
 * counters are read from sysfs in the program's own namespace.  It creates "victim" RC QPs on DEV,
 * each brought to RTR towards a peer that does not exist (QPN 0xfffffe at
 * PEER-IP): nobody but this program sends to them, so it knows the PSN
 * they expect and forges packets they must take for genuine.  Forged
 * packets are built by the transport core itself (a userspace struct
 * mrc_conn acting as the fake requester), so they carry a valid CRC; the
 * flood's mutations re-seal the CRC where the kind needs it.
 *
 * 1. Access control, each on a fresh victim QP, one forged well-formed
 *    packet with a valid CRC and the expected PSN:
 *      control: a WRITE with the target MR's rkey lands (the forger works);
 *      WRITEs with a wrong tag, a neighbour key, an MR without
 *      REMOTE_WRITE, an MR of another PD, out of bounds above and below;
 *      FETCH_ADD on an MR without REMOTE_ATOMIC; CMP_SWAP with a wrong
 *      rkey; then --forged-rkeys WRITEs with random rkeys.
 *    Each refused one must raise DEV's rem_access_err by one and leave
 *    every target MR byte-identical.
 * 2. A flood of PACKETS (default 10000) random and mutated datagrams to
 *    UDP 4793 and 4791 of VICTIM-IP: random bytes, truncated packets, bad
 *    CRCs, bad lengths, unknown opcodes (valid CRC), PSNs outside the
 *    window (valid CRC), forged QPNs, RoCEv2 RC packets at a MetaRoCE QP,
 *    UD datagrams at an RC QP, junk UD datagrams for QP1 (--gsi: DEV has
 *    a GSI QP), and, per --live QP (another program's, in RTS, expecting
 *    RQ_PSN, at IP), bad-CRC and out-of-window packets.  Afterwards DEV's
 *    drop counters must have grown by exactly what was sent to DEV's QPs
 *    (bad_crc, malformed, out_of_window, no_qp, wrong_transport,
 *    rem_access_err: live QPs on DEV must not lose packets of their own to
 *    these), and the flood's victim must still take a genuine WRITE.
 *
 * Prints "sent KIND N" per kind, "counter NAME before after expected",
 * "expect udp_inerrors N" (datagrams the module gives back to VICTIM-IP's
 * netns UDP statistics: the caller checks /proc/net/snmp there), and
 * "PASS: hostile" or FAIL lines.  Exit 0 only without a failed check.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cinttypes>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

#include <metaroce/core.h>
#include <metaroce/wire.h>
extern "C" {
#include "crc32c.h"
}

#include "check.h"
#include "verbs_util.h"

namespace {

int failures;

constexpr uint32_t eve_qpn = 0xfffffe;	/* the fake requester */
constexpr uint32_t mtu = 1024;
constexpr size_t hdr_len = 16;		/* struct mr_hdr */
constexpr size_t data_hlen = 40;	/* + struct mr_data_ext */
constexpr size_t target_len = 64 * 1024;

using bytes = std::vector<uint8_t>;

uint64_t now_ns()
{
	return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
				std::chrono::steady_clock::now().time_since_epoch())
				.count());
}

void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 24);
	p[1] = uint8_t(v >> 16);
	p[2] = uint8_t(v >> 8);
	p[3] = uint8_t(v);
}

/* Re-seal the CRC32C trailer of a MetaRoCE packet. */
void seal(bytes &p)
{
	put_be32(p.data() + p.size() - MR_CRC_LEN,
		 mrc_crc32c(p.data(), p.size() - MR_CRC_LEN));
}

/* Forged payload bytes: the fill byte plus the offset. */
uint8_t forged_byte(uint8_t fill, uint32_t off)
{
	return uint8_t(fill + off * 7);
}

/*
 * The fake requester: a core connection of MetaRoCE mode whose peer is the
 * victim QP, sending from PSN; it never hears back.
 */
class forger {
public:
	forger(uint32_t dqpn, uint32_t psn, uint8_t fill)
		: mem_(mrc_conn_size() / 8 + 1), fill_(fill)
	{
		mrc_config cfg;
		static const mrc_callbacks cb = {
			.read_payload = read_payload,
			.place_send = [](void *, uint64_t, uint32_t, const void *,
					 uint32_t) { return -EACCES; },
			.place_write = [](void *, uint32_t, uint64_t, const void *,
					  uint32_t) { return -EACCES; },
			.read_remote = [](void *, uint32_t, uint64_t, void *,
					  uint32_t) { return -EACCES; },
			.place_read = [](void *, uint64_t, uint32_t, const void *,
					 uint32_t) { return -EACCES; },
			.atomic = [](void *, uint32_t, uint32_t, uint64_t, uint64_t,
				     uint64_t, uint64_t *) { return -EACCES; },
		};

		mrc_config_default(&cfg, MRC_MODE_METAROCE);
		cfg.local_qpn = eve_qpn;
		cfg.remote_qpn = dqpn;
		cfg.mtu = mtu;
		cfg.num_paths = 1;
		cfg.local_psn = psn;
		cfg.remote_psn = 0;
		ok_ = mrc_conn_init(conn(), &cfg, &cb, this, now_ns()) == 0;
	}

	/* The first packet of a WR, or an empty vector. */
	bytes packet(const mrc_send_wr &wr)
	{
		bytes b(MRC_MAX_PKT_LEN(mtu));
		unsigned int path;
		int n;

		if (!ok_ || mrc_post_send(conn(), &wr, now_ns()))
			return {};
		n = mrc_next_packet(conn(), b.data(), b.size(), &path, now_ns());
		if (n <= 0)
			return {};
		b.resize(size_t(n));
		return b;
	}

	bytes write(uint32_t rkey, uint64_t addr, uint32_t len)
	{
		mrc_send_wr wr = {};

		wr.opcode = MRC_OP_RDMA_WRITE;
		wr.length = len;
		wr.rkey = rkey;
		wr.remote_addr = addr;
		return packet(wr);
	}

	bytes atomic(uint32_t op, uint32_t rkey, uint64_t addr)
	{
		mrc_send_wr wr = {};

		wr.opcode = op;
		wr.length = 8;
		wr.rkey = rkey;
		wr.remote_addr = addr;
		wr.compare_add = 0x1111111111111111ull;
		wr.swap = 0x2222222222222222ull;
		return packet(wr);
	}

private:
	static int read_payload(void *user, uint64_t, uint32_t off, void *dst,
				uint32_t len)
	{
		auto *f = static_cast<forger *>(user);
		auto *d = static_cast<uint8_t *>(dst);

		for (uint32_t i = 0; i < len; i++)
			d[i] = forged_byte(f->fill_, off + i);
		return 0;
	}

	mrc_conn *conn() { return reinterpret_cast<mrc_conn *>(mem_.data()); }

	std::vector<uint64_t> mem_;
	uint8_t fill_;
	bool ok_ = false;
};

/* Memory a victim's peer may or may not write; content checked. */
struct region {
	const char *name;
	bytes buf;
	ibv_mr *mr = nullptr;
	uint8_t seed;

	void fill()
	{
		for (size_t i = 0; i < buf.size(); i++)
			buf[i] = uint8_t(seed ^ (i * 13) ^ (i >> 8));
	}
	bool intact() const
	{
		for (size_t i = 0; i < buf.size(); i++)
			if (buf[i] != uint8_t(seed ^ (i * 13) ^ (i >> 8)))
				return false;
		return true;
	}
	uint64_t addr() const { return uintptr_t(buf.data()); }
};

struct options {
	std::string dev;
	int gid_idx = -1;
	std::string victim_ip, peer_ip, netns;
	long packets = 10000;
	unsigned seed = 1;
	int forged_rkeys = 32;
	bool gsi = false;
	struct live {
		std::string ip;
		uint32_t qpn, psn;
	};
	std::vector<live> lives;
};

const char *const counter_names[] = {
	"rx_bad_crc", "rx_malformed", "rx_out_of_window", "rx_no_qp",
	"rx_wrong_transport", "rem_access_err",
};

class hostile {
public:
	explicit hostile(const options &o) : o_(o), rng_(o.seed) {}

	bool setup();
	void access_cases();
	void flood();
	void check_counters();
	void teardown();

private:
	ibv_qp *victim(uint32_t psn);
	void send(const std::string &ip, uint16_t port, const bytes &p);
	void refused(const char *what, ibv_qp *qp, const bytes &p);
	uint32_t rand32() { return uint32_t(rng_()); }
	uint32_t below(uint32_t n) { return n ? rand32() % n : 0; }
	void count(const char *kind) { sent_[kind]++; }

	const options &o_;
	std::mt19937_64 rng_;
	ibv_context *ctx_ = nullptr;
	ibv_pd *pd_ = nullptr, *pd2_ = nullptr;
	ibv_cq *cq_ = nullptr;
	ibv_gid peer_gid_ = {};
	std::vector<ibv_qp *> qps_;
	region tgt_{"target", bytes(target_len), nullptr, 0x5a};
	region ro_{"read-only", bytes(4096), nullptr, 0x3c};
	region other_{"other-pd", bytes(4096), nullptr, 0x99};
	int fd_ = -1;
	std::map<std::string, long long> before_, expect_;
	std::map<std::string, long> sent_;
	long inerr_ = 0, total_ = 0;
};

bool hostile::setup()
{
	in_addr a;

	if (inet_pton(AF_INET, o_.peer_ip.c_str(), &a) != 1)
		return false;
	peer_gid_ = vu::ipv4_gid(a.s_addr);
	ctx_ = vu::open_device(o_.dev);
	if (!ctx_)
		return false;
	pd_ = ibv_alloc_pd(ctx_);
	pd2_ = ibv_alloc_pd(ctx_);
	cq_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
	if (!pd_ || !pd2_ || !cq_)
		return false;
	for (region *r : {&tgt_, &ro_, &other_})
		r->fill();
	tgt_.mr = ibv_reg_mr(pd_, tgt_.buf.data(), tgt_.buf.size(),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC);
	ro_.mr = ibv_reg_mr(pd_, ro_.buf.data(), ro_.buf.size(),
			    IBV_ACCESS_REMOTE_READ);
	other_.mr = ibv_reg_mr(pd2_, other_.buf.data(), other_.buf.size(),
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_ATOMIC);
	if (!tgt_.mr || !ro_.mr || !other_.mr) {
		std::fprintf(stderr, "reg_mr: %s\n", std::strerror(errno));
		return false;
	}
	fd_ = vu::netns_socket(o_.netns);
	if (fd_ < 0)
		return false;
	for (const char *c : counter_names) {
		before_[c] = vu::counter(o_.dev, c);
		expect_[c] = 0;
		if (before_[c] < 0) {
			std::fprintf(stderr, "no counter %s on %s\n", c,
				     o_.dev.c_str());
			return false;
		}
	}
	return true;
}

/* A fresh RC QP on the device in RTR, expecting PSN from the fake peer. */
ibv_qp *hostile::victim(uint32_t psn)
{
	ibv_qp *qp = vu::create_rc(pd_, cq_, 4);

	CHECK(qp, "create victim QP: %s", std::strerror(errno));
	if (!qp)
		return nullptr;
	qps_.push_back(qp);
	int err = vu::to_init(qp, IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ |
					  IBV_ACCESS_REMOTE_ATOMIC);
	if (!err)
		err = vu::to_rtr(qp, eve_qpn, psn, peer_gid_, o_.gid_idx);
	CHECK(!err, "victim QP %u to RTR: %s", qp->qp_num, std::strerror(err));
	return err ? nullptr : qp;
}

void hostile::send(const std::string &ip, uint16_t port, const bytes &p)
{
	sockaddr_in sa = {};

	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	inet_pton(AF_INET, ip.c_str(), &sa.sin_addr);
	if (sendto(fd_, p.data(), p.size(), 0,
		   reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) !=
	    ssize_t(p.size())) {
		std::printf("FAIL: sendto %s:%u: %s\n", ip.c_str(), port,
			    std::strerror(errno));
		failures++;
	}
	total_++;
}

/* P must be refused by QP: one more rem_access_err, no MR touched. */
void hostile::refused(const char *what, ibv_qp *qp, const bytes &p)
{
	long long want = vu::counter(o_.dev, "rem_access_err") + 1;

	CHECK(!p.empty(), "%s: the core built no packet", what);
	if (p.empty() || !qp)
		return;
	send(o_.victim_ip, MR_UDP_PORT, p);
	count("forged_rkey");
	expect_["rem_access_err"]++;
	CHECK(vu::wait_for([&] {
		      return vu::counter(o_.dev, "rem_access_err") >= want;
	      }),
	      "%s: no remote access error counted", what);
	for (const region *r : {&tgt_, &ro_, &other_})
		CHECK(r->intact(), "%s: MR %s was written", what, r->name);
}

void hostile::access_cases()
{
	const uint32_t rk = tgt_.mr->rkey;
	const uint64_t t = tgt_.addr(), end = t + tgt_.buf.size();
	uint32_t psn = rand32() & MR_PSN_MASK;
	ibv_qp *qp;

	/* Control: the forger's genuine WRITE lands. */
	qp = victim(psn);
	if (qp) {
		bytes p = forger(qp->qp_num, psn, 0x77).write(rk, t + 4096, 512);

		CHECK(!p.empty(), "control: the core built no packet");
		send(o_.victim_ip, MR_UDP_PORT, p);
		count("genuine_write");
		CHECK(vu::wait_for([&] {
			      for (uint32_t i = 0; i < 512; i++)
				      if (tgt_.buf[4096 + i] != forged_byte(0x77, i))
					      return false;
			      return true;
		      }),
		      "control: a well-formed WRITE with the right rkey did not land");
		tgt_.fill();
	}

	struct wcase {
		const char *what;
		uint32_t rkey;
		uint64_t addr;
		uint32_t len;
	};
	const wcase wcases[] = {
		{"wrong key tag", rk ^ 0x5a, t + 4096, 512},
		{"neighbour key index", rk + 0x100, t + 4096, 512},
		{"MR without REMOTE_WRITE", ro_.mr->rkey, ro_.addr(), 512},
		{"MR of another PD", other_.mr->rkey, other_.addr(), 512},
		{"past the end", rk, end - 100, 512},
		{"before the start", rk, t - 256, 512},
		{"address wrap", rk, ~0ull - 100, 512},
	};
	for (const wcase &c : wcases) {
		psn = rand32() & MR_PSN_MASK;
		qp = victim(psn);
		if (qp)
			refused(c.what, qp,
				forger(qp->qp_num, psn, 0x11).write(c.rkey, c.addr,
								     c.len));
	}
	psn = rand32() & MR_PSN_MASK;
	qp = victim(psn);
	if (qp)
		refused("FETCH_ADD without REMOTE_ATOMIC", qp,
			forger(qp->qp_num, psn, 0).atomic(
				MRC_OP_ATOMIC_FETCH_AND_ADD, ro_.mr->rkey,
				ro_.addr()));
	psn = rand32() & MR_PSN_MASK;
	qp = victim(psn);
	if (qp)
		refused("CMP_SWAP with a wrong rkey", qp,
			forger(qp->qp_num, psn, 0).atomic(
				MRC_OP_ATOMIC_CMP_AND_SWP, rk ^ 1, t));
	for (int i = 0; i < o_.forged_rkeys; i++) {
		uint32_t key;

		do
			key = rand32();
		while (key == rk || key == ro_.mr->rkey ||
		       key == other_.mr->rkey);
		psn = rand32() & MR_PSN_MASK;
		qp = victim(psn);
		if (qp)
			refused("random rkey", qp,
				forger(qp->qp_num, psn, uint8_t(i))
					.write(key, t + below(target_len - 1024),
					       1 + below(mtu)));
	}
}

void hostile::flood()
{
	const uint32_t psn = rand32() & MR_PSN_MASK;
	ibv_qp *qp = victim(psn);

	if (!qp)
		return;
	const uint32_t qpn = qp->qp_num;
	/* A WRITE the victim would take: the template of the mutations. */
	const bytes tmpl = forger(qpn, psn, 0x42).write(
		tgt_.mr->rkey, tgt_.addr(), mtu);
	CHECK(tmpl.size() == data_hlen + mtu + MR_CRC_LEN,
	      "template WRITE has %zu bytes", tmpl.size());
	if (tmpl.size() != data_hlen + mtu + MR_CRC_LEN)
		return;
	const std::string &ip = o_.victim_ip;
	auto rand_bytes = [&](size_t n) {
		bytes b(n);
		for (auto &x : b)
			x = uint8_t(rand32());
		return b;
	};
	/* A shorter valid WRITE from the template, resealed. */
	auto write_of = [&](uint32_t len) {
		bytes p(tmpl.begin(), tmpl.begin() + long(data_hlen + len));
		p.resize(p.size() + MR_CRC_LEN);
		put_be32(p.data() + 24, len);	/* msg_len */
		seal(p);
		return p;
	};
	/* 0 or 1 on 24-bit QPNs: an unused number far above ours. */
	auto forged_qpn = [&] { return 0xf00000 + below(0xffff0); };

	for (long n = 0; n < o_.packets; n++) {
		uint32_t k = below(100), len;
		bytes p;

		if (k < 10) {			/* random bytes for the victim */
			p = rand_bytes(8 + below(1400));
			put_be32(p.data() + 4, qpn);
			count("random");
			expect_[p.size() < 16 ? "rx_malformed" : "rx_bad_crc"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 25) {		/* truncated */
			len = 1 + below(uint32_t(tmpl.size()) - 1);
			p.assign(tmpl.begin(), tmpl.begin() + len);
			count("truncated");
			if (len < 8)
				inerr_++;
			else
				expect_[len < 16 ? "rx_malformed" : "rx_bad_crc"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 40) {		/* bad CRC */
			p = write_of(1 + below(mtu));
			p[8 + below(uint32_t(p.size()) - 8)] ^=
				uint8_t(1u << below(8));
			count("bad_crc");
			expect_["rx_bad_crc"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 50) {		/* bad lengths, valid CRC */
			switch (below(5)) {
			case 0:	/* message shorter than this payload */
				p = write_of(2 + below(mtu - 1));
				put_be32(p.data() + 24,
					 below(uint32_t(p.size() - data_hlen - 4)));
				break;
			case 1:	/* payload above the path MTU */
				p = tmpl;
				p.insert(p.end() - 4, 1 + below(300), 0xee);
				put_be32(p.data() + 24,
					 uint32_t(p.size() - data_hlen - 4));
				break;
			case 2:	/* FIRST flag off at offset 0 */
				p = write_of(1 + below(mtu));
				p[2] &= uint8_t(~MR_FLAG_FIRST);
				break;
			case 3:	/* version 2 */
				p = write_of(1 + below(mtu));
				p[0] = uint8_t((MR_VERSION + 1) << 4 | (p[0] & 15));
				break;
			default: /* shorter than the WRITE headers */
				p = write_of(1);
				p.resize(hdr_len + below(data_hlen - hdr_len) +
					 MR_CRC_LEN);
				break;
			}
			seal(p);
			count("bad_length");
			expect_["rx_malformed"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 60) {		/* unknown opcode, valid CRC */
			static const uint8_t unknown[] = {
				0x00, 0x0a, 0x0b, 0x0f, 0x11, 0x1f,
				0x22, 0x40, 0x64, 0x80, 0xfe, 0xff};
			p = write_of(1 + below(mtu));
			p[1] = unknown[below(sizeof(unknown))];
			seal(p);
			count("unknown_opcode");
			expect_["rx_malformed"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 70) {		/* PSN outside the window */
			p = write_of(1 + below(mtu));
			put_be32(p.data() + 8,
				 (psn + MRC_MAX_WINDOW +
				  below((1u << 23) - MRC_MAX_WINDOW)) &
					 MR_PSN_MASK);
			seal(p);
			count("out_of_window");
			expect_["rx_out_of_window"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 75) {		/* forged QPN: nobody's */
			p = write_of(1 + below(mtu));
			put_be32(p.data() + 4, forged_qpn());
			seal(p);
			count("forged_qpn");
			inerr_++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 78) {		/* QPN with high bits set */
			p = write_of(1 + below(mtu));
			p[4] = uint8_t(1 + below(255));
			seal(p);
			count("forged_qpn_high");
			expect_["rx_no_qp"]++;
			send(ip, MR_UDP_PORT, p);
		} else if (k < 85) {		/* junk UD datagrams for QP1 */
			uint8_t op = below(2) ? 0x64 : 0x65;
			uint32_t need;

			p = rand_bytes(MR_BTH_LEN + below(200));
			p[0] = op;
			put_be32(p.data() + 4, 1);
			need = MR_BTH_LEN + 8 + (op == 0x65 ? 4 : 0) +
			       ((p[1] >> 4) & 3) + 4;
			count("ud_junk");
			if (!o_.gsi)
				inerr_++;
			else
				expect_[p.size() < need ? "rx_malformed" :
							  "rx_bad_crc"]++;
			send(ip, MR_ROCEV2_UDP_PORT, p);
		} else if (k < 90) {		/* RoCEv2 RC at a MetaRoCE QP */
			p = rand_bytes(8 + below(400));
			p[0] = uint8_t(below(0x15));
			put_be32(p.data() + 4, qpn);
			count("rocev2_rc");
			inerr_++;
			if (p.size() >= MR_BTH_LEN)
				expect_["rx_wrong_transport"]++;
			send(ip, MR_ROCEV2_UDP_PORT, p);
		} else if (k < 93) {		/* UD datagram at an RC QP */
			p = rand_bytes(MR_BTH_LEN + below(200));
			p[0] = 0x64;
			put_be32(p.data() + 4, qpn);
			count("ud_at_rc");
			inerr_++;
			expect_["rx_no_qp"]++;
			send(ip, MR_ROCEV2_UDP_PORT, p);
		} else if (!o_.lives.empty()) { /* at live QPs */
			const auto &l = o_.lives[below(uint32_t(o_.lives.size()))];

			p = write_of(1 + below(mtu));
			put_be32(p.data() + 4, l.qpn);
			put_be32(p.data() + 8, (l.psn + (1u << 22) +
						below(1u << 20)) & MR_PSN_MASK);
			seal(p);
			if (below(2)) {
				p[8 + below(uint32_t(p.size()) - 8)] ^= 0x10;
				count("live_bad_crc");
			} else {
				count("live_out_of_window");
			}
			send(l.ip, MR_UDP_PORT, p);
		} else {
			n--;
		}
		/* Let the receive softirq keep up; not a timing check. */
		if ((n & 63) == 63)
			std::this_thread::sleep_for(std::chrono::microseconds(500));
	}

	/* The victim is unharmed: a genuine WRITE at the next PSN lands. */
	bytes p = forger(qpn, psn, 0x24).write(tgt_.mr->rkey, tgt_.addr() + 8192,
					       256);
	send(ip, MR_UDP_PORT, p);
	count("genuine_write");
	CHECK(vu::wait_for([&] {
		      for (uint32_t i = 0; i < 256; i++)
			      if (tgt_.buf[8192 + i] != forged_byte(0x24, i))
				      return false;
		      return true;
	      }),
	      "after the flood the victim QP no longer takes a genuine WRITE");
	tgt_.fill();
}

void hostile::check_counters()
{
	for (const auto &[kind, n] : sent_)
		std::printf("sent %s %ld\n", kind.c_str(), n);
	std::printf("sent total %ld\n", total_);
	/* The counters are read through a cache of a few ms: wait it out. */
	for (const char *c : counter_names) {
		long long want = before_[c] + expect_[c], now = 0;

		vu::wait_for([&] {
			now = vu::counter(o_.dev, c);
			return now >= want;
		}, 5);
		std::printf("counter %s %lld %lld expected +%lld\n", c,
			    before_[c], now, expect_[c]);
		CHECK(now == want, "%s grew by %lld, expected %lld", c,
		      now - before_[c], expect_[c]);
	}
	std::printf("expect udp_inerrors %ld\n", inerr_);
}

void hostile::teardown()
{
	for (ibv_qp *qp : qps_)
		CHECK(!ibv_destroy_qp(qp), "destroy QP: %s", std::strerror(errno));
	for (region *r : {&tgt_, &ro_, &other_})
		if (r->mr)
			CHECK(!ibv_dereg_mr(r->mr), "dereg %s", r->name);
	if (cq_)
		ibv_destroy_cq(cq_);
	if (pd_)
		ibv_dealloc_pd(pd_);
	if (pd2_)
		ibv_dealloc_pd(pd2_);
	if (ctx_)
		ibv_close_device(ctx_);
	if (fd_ >= 0)
		close(fd_);
}

int usage(const char *argv0)
{
	std::fprintf(stderr,
		     "usage: %s -d DEV -g GID_IDX --victim-ip IP --peer-ip IP "
		     "[-n PACKETS] [-S SEED] [--forged-rkeys N] "
		     "[--live IP:QPN:RQ_PSN]... [--gsi] [--netns NAME]\n",
		     argv0);
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	static const option opts[] = {
		{"ib-dev", required_argument, nullptr, 'd'},
		{"gid-idx", required_argument, nullptr, 'g'},
		{"victim-ip", required_argument, nullptr, 'v'},
		{"peer-ip", required_argument, nullptr, 'P'},
		{"packets", required_argument, nullptr, 'n'},
		{"seed", required_argument, nullptr, 'S'},
		{"forged-rkeys", required_argument, nullptr, 'r'},
		{"live", required_argument, nullptr, 'l'},
		{"gsi", no_argument, nullptr, 'G'},
		{"netns", required_argument, nullptr, 'N'},
		{},
	};
	options o;
	int c;

	while ((c = getopt_long(argc, argv, "d:g:n:S:", opts, nullptr)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'g': o.gid_idx = std::atoi(optarg); break;
		case 'v': o.victim_ip = optarg; break;
		case 'P': o.peer_ip = optarg; break;
		case 'n': o.packets = std::atol(optarg); break;
		case 'S': o.seed = unsigned(std::strtoul(optarg, nullptr, 0)); break;
		case 'r': o.forged_rkeys = std::atoi(optarg); break;
		case 'G': o.gsi = true; break;
		case 'N': o.netns = optarg; break;
		case 'l': {
			char ip[64];
			options::live l;

			if (std::sscanf(optarg, "%63[^:]:%u:%u", ip, &l.qpn,
					&l.psn) != 3)
				return usage(argv[0]);
			l.ip = ip;
			o.lives.push_back(l);
			break;
		}
		default:
			return usage(argv[0]);
		}
	}
	if (o.dev.empty() || o.gid_idx < 0 || o.victim_ip.empty() ||
	    o.peer_ip.empty() || optind != argc)
		return usage(argv[0]);

	hostile h(o);
	if (!h.setup()) {
		std::printf("FAIL: setup\n");
		h.teardown();
		return 1;
	}
	/* The flood first, while the live transfer surely still runs. */
	h.flood();
	h.access_cases();
	h.check_counters();
	h.teardown();
	if (failures) {
		std::printf("FAIL: hostile: %d failed checks\n", failures);
		return 1;
	}
	std::printf("PASS: hostile\n");
	return 0;
}
