// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * metaroce_integrity: end-to-end data integrity of an RC connection, for
 * any verbs device (MetaRoCE, rdma_rxe).
 *
 * SYNOPSIS
 *   metaroce_integrity [OPTIONS]          server: wait for a client
 *   metaroce_integrity [OPTIONS] HOST     client: connect to HOST
 *
 * DESCRIPTION
 *   Two endpoints exchange QP numbers, PSNs, GIDs and one memory window
 *   over a TCP side channel (as ibv_rc_pingpong does), then the client
 *   runs rounds of up to 16 work requests drawn from a seeded generator
 *   both sides run: every opcode (SEND, SEND_WITH_IMM, RDMA_WRITE,
 *   RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_CMP_AND_SWP,
 *   ATOMIC_FETCH_AND_ADD), sizes 1 B .. --max-size, one to four SGEs,
 *   small SENDs and WRITEs inline.  Payloads are patterns derived from the
 *   seed, the round and the message, so each side knows what it must see:
 *   the server checks what SENDs delivered (and their immediate data),
 *   what WRITEs placed and what atomics left in its memory; the client
 *   checks what READs returned and the original values atomics reported.
 *   Every completion must succeed.  Rounds synchronise over TCP, so each
 *   round's memory is checked before it is reused.
 *
 * OPTIONS
 *   -d, --ib-dev DEV     verbs device (default: the first)
 *   -i, --ib-port N      port (default 1)
 *   -g, --gid-idx N      local GID index (default 0)
 *   -p, --port N         TCP port of the side channel (default 18516)
 *   -b, --bytes N[KMG]   client: payload bytes to run (default 256M)
 *   -m, --max-size N     client: largest message (default 3 x path MTU)
 *   -o, --ops LIST       client: comma-separated subset of send, send_imm,
 *                        write, write_imm, read, cas, faa (default: all)
 *   -S, --seed N         client: generator seed (default 1)
 *   -h, --help           this text
 *   The server takes bytes, sizes, ops and seed from the client.
 *
 * OUTPUT AND EXIT STATUS
 *   Both sides print "messages M bytes_verified B mismatches X
 *   bad_completions C" and per-opcode counts; the client also prints the
 *   elapsed time.  Exit status 0 only if X and C are 0 on both sides (the
 *   client learns the server's counts); 1 on a failed check, 2 on a
 *   usage or setup error.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

namespace {

constexpr int round_max = 16;
constexpr uint32_t max_sges = 4;
constexpr uint32_t inline_cap = 64;

enum op : uint8_t { SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FAA, NOPS };
const char *const op_names[NOPS] = {"send", "send_imm", "write", "write_imm",
				    "read", "cas", "faa"};

uint64_t splitmix(uint64_t &s)
{
	uint64_t z = (s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The payload of message @tag: 64-bit words of a generator seeded by it. */
void fill_pattern(uint8_t *p, uint32_t len, uint64_t tag)
{
	uint64_t s = tag;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t w = splitmix(s);

		std::memcpy(p + i, &w, std::min<uint32_t>(8, len - i));
	}
}

/* What both sides derive for message @j of round @r. */
struct msg {
	op opcode;
	uint32_t len;
	uint32_t nsge;
	uint32_t cut[max_sges];	/* SGE boundaries, cut[nsge-1] == len */
	bool inl;
	uint64_t tag;		/* pattern of the payload / READ source */
	uint64_t v0;		/* atomics: the target's initial value */
	uint64_t compare_add, swap;
	uint32_t imm;
};

struct params {
	uint64_t seed = 1;
	uint64_t bytes = 256ull << 20;
	uint32_t max_size = 0;
	uint32_t ops_mask = (1u << NOPS) - 1;
};

std::vector<msg> plan_round(const params &pr, uint64_t round)
{
	uint64_t s = pr.seed * 0x100000001b3ull ^ round;
	std::vector<msg> v(round_max);
	uint32_t nops = __builtin_popcount(pr.ops_mask);

	for (int j = 0; j < round_max; j++) {
		msg &m = v[j];
		uint32_t k = splitmix(s) % nops, o = 0;

		for (o = 0; o < NOPS; o++)
			if ((pr.ops_mask & (1u << o)) && k-- == 0)
				break;
		m.opcode = op(o);
		bool atomic = m.opcode == CAS || m.opcode == FAA;
		m.len = atomic ? 8 : 1 + splitmix(s) % pr.max_size;
		m.nsge = atomic ? 1 : 1 + splitmix(s) % std::min(max_sges, m.len);
		/* nsge - 1 distinct cut points in (0, len). */
		for (uint32_t c = 0; c + 1 < m.nsge; c++)
			m.cut[c] = 1 + splitmix(s) % (m.len - 1);
		m.cut[m.nsge - 1] = m.len;
		std::sort(m.cut, m.cut + m.nsge);
		m.nsge = uint32_t(std::unique(m.cut, m.cut + m.nsge) - m.cut);
		m.inl = (m.opcode <= WRITE_IMM) && m.len <= inline_cap &&
			(splitmix(s) & 1);
		m.tag = splitmix(s);
		m.v0 = splitmix(s);
		m.compare_add = (splitmix(s) & 1) ? m.v0 : splitmix(s);
		m.swap = splitmix(s);
		if (m.opcode == FAA)
			m.compare_add = splitmix(s);
		m.imm = uint32_t(round << 8 | uint32_t(j));
	}
	return v;
}

/* The side channel: fixed-size records in network-independent layout. */
struct hello {
	uint32_t qpn, psn, rkey, mtu;
	uint64_t addr, len;
	uint8_t gid[16];
	uint64_t seed, bytes;
	uint32_t max_size, ops_mask;
};

struct ctl {
	uint32_t kind;		/* ctl_* */
	uint32_t pad;
	uint64_t round, a, b;
};
enum : uint32_t { ctl_ready = 1, ctl_posted, ctl_checked, ctl_end };

bool write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);

		if (r <= 0)
			return false;
		p = (const uint8_t *)p + r;
		n -= size_t(r);
	}
	return true;
}

bool read_all(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r <= 0)
			return false;
		p = (uint8_t *)p + r;
		n -= size_t(r);
	}
	return true;
}

int tcp_server(uint16_t port)
{
	int ls = socket(AF_INET6, SOCK_STREAM, 0), one = 1, fd;
	sockaddr_in6 a = {};

	if (ls < 0)
		return -1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(port);
	a.sin6_addr = in6addr_any;
	if (bind(ls, (sockaddr *)&a, sizeof(a)) || listen(ls, 1)) {
		close(ls);
		return -1;
	}
	fd = accept(ls, nullptr, nullptr);
	close(ls);
	return fd;
}

int tcp_client(const char *host, uint16_t port)
{
	addrinfo hints = {}, *res, *ai;
	std::string ps = std::to_string(port);
	int fd = -1;

	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, ps.c_str(), &hints, &res))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

struct counts {
	uint64_t messages = 0, bytes = 0, mismatches = 0, bad = 0;
	uint64_t per_op[NOPS] = {};
};

struct endpoint {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;	/* [local | remote-visible | scratch] */
	size_t slot = 0;		/* per message, in each area */
	uint8_t *area(int a, int j) { return buf.data() + (size_t(a) * round_max + j) * slot; }
	counts c;
	int fd = -1;
	bool server = false;
};

/* Local areas: 0 source/dest of the client, 1 the server's target/receive. */
constexpr int area_local = 0, area_remote = 1, area_expect = 2;

ibv_context *open_dev(const char *name)
{
	int n = 0;
	ibv_device **l = ibv_get_device_list(&n);
	ibv_context *ctx = nullptr;

	for (int i = 0; l && i < n && !ctx; i++)
		if (!name || !std::strcmp(name, ibv_get_device_name(l[i])))
			ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return ctx;
}

void usage(FILE *f, const char *argv0)
{
	std::fprintf(f,
		"usage: %s [OPTIONS] [HOST]\n"
		"  without HOST: server; with HOST: client connecting to it\n"
		"  -d, --ib-dev DEV     verbs device (default: the first)\n"
		"  -i, --ib-port N      port (default 1)\n"
		"  -g, --gid-idx N      local GID index (default 0)\n"
		"  -p, --port N         TCP side-channel port (default 18516)\n"
		"  -b, --bytes N[KMG]   client: payload bytes (default 256M)\n"
		"  -m, --max-size N     client: largest message (default 3 x MTU)\n"
		"  -o, --ops LIST       client: send,send_imm,write,write_imm,read,cas,faa\n"
		"  -S, --seed N         client: generator seed (default 1)\n"
		"exit 0: no mismatch and no bad completion on either side\n",
		argv0);
}

bool parse_size(const char *s, uint64_t &out)
{
	char *end;
	uint64_t v = std::strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	out = v;
	return *end == 0 && end != s;
}

/* Wait for @n completions; each one must succeed.  Returns those seen. */
int poll_n(endpoint &e, int n, std::vector<ibv_wc> &out)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);

	out.clear();
	while (int(out.size()) < n && std::chrono::steady_clock::now() < end) {
		ibv_wc wc[16];
		int got = ibv_poll_cq(e.cq, 16, wc);

		if (got < 0) {
			std::printf("FAIL: poll_cq %d\n", got);
			e.c.bad++;
			break;
		}
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				std::printf("FAIL: completion wr_id %" PRIu64
					    " status %s\n", (uint64_t)wc[i].wr_id,
					    ibv_wc_status_str(wc[i].status));
				e.c.bad++;
			}
			out.push_back(wc[i]);
		}
	}
	if (int(out.size()) < n) {
		std::printf("FAIL: %zu of %d completions\n", out.size(), n);
		e.c.bad++;
	}
	return int(out.size());
}

void verify(endpoint &e, const uint8_t *got, const uint8_t *want, uint32_t len,
	    const char *what, uint64_t round, int j)
{
	if (std::memcmp(got, want, len)) {
		uint32_t i = 0;

		while (got[i] == want[i])
			i++;
		if (e.c.mismatches < 20)
			std::printf("FAIL: round %" PRIu64 " msg %d %s (%u B): "
				    "byte %u is %#x, want %#x\n", round, j,
				    what, len, i, got[i], want[i]);
		e.c.mismatches++;
	}
	e.c.bytes += len;
}

void verify64(endpoint &e, uint64_t got, uint64_t want, const char *what,
	      uint64_t round, int j)
{
	if (got != want) {
		if (e.c.mismatches < 20)
			std::printf("FAIL: round %" PRIu64 " msg %d %s: %#" PRIx64
				    ", want %#" PRIx64 "\n", round, j, what, got,
				    want);
		e.c.mismatches++;
	}
	e.c.bytes += 8;
}

void sges_of(endpoint &e, const msg &m, uint8_t *base, ibv_sge *sge)
{
	uint32_t from = 0;

	for (uint32_t k = 0; k < m.nsge; k++) {
		sge[k].addr = (uintptr_t)(base + from);
		sge[k].length = m.cut[k] - from;
		sge[k].lkey = e.mr->lkey;
		from = m.cut[k];
	}
}

bool receive_consuming(op o)
{
	return o == SEND || o == SEND_IMM || o == WRITE_IMM;
}

/* Server: one round.  Returns false when the client ended the run. */
bool server_round(endpoint &e, const params &pr, uint64_t round)
{
	std::vector<msg> plan = plan_round(pr, round);
	std::vector<ibv_wc> wcs;
	int nrecv = 0;

	for (int j = 0; j < round_max; j++) {
		const msg &m = plan[j];
		uint8_t *t = e.area(area_remote, j);

		std::memset(t, 0, e.slot);
		if (m.opcode == READ)
			fill_pattern(t, m.len, m.tag);
		else if (m.opcode == CAS || m.opcode == FAA)
			std::memcpy(t, &m.v0, 8);
		if (!receive_consuming(m.opcode))
			continue;
		/* Receive into area 2, over up to three SGEs. */
		uint8_t *r = e.area(area_expect, j);
		uint32_t third = pr.max_size / 3 + 1;
		uint32_t need = (m.len + third - 1) / third;
		ibv_sge sge[3] = {{(uintptr_t)r, third, e.mr->lkey},
				  {(uintptr_t)r + third, third, e.mr->lkey},
				  {(uintptr_t)r + 2 * third, third, e.mr->lkey}};
		ibv_recv_wr wr = {}, *bad;

		std::memset(r, 0, e.slot);
		wr.wr_id = uint64_t(j);
		wr.sg_list = sge;
		/* Enough SGEs for the message, sometimes more. */
		wr.num_sge = int(need + m.tag % (4 - need));
		if (ibv_post_recv(e.qp, &wr, &bad)) {
			std::printf("FAIL: post_recv: %s\n", std::strerror(errno));
			e.c.bad++;
		}
		nrecv++;
	}
	ctl c = {ctl_ready, 0, round, 0, 0};
	if (!write_all(e.fd, &c, sizeof(c)) || !read_all(e.fd, &c, sizeof(c)))
		return false;
	if (c.kind == ctl_end)
		return false;

	poll_n(e, nrecv, wcs);
	std::vector<uint8_t> want(e.slot);
	for (const ibv_wc &wc : wcs) {
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= round_max)
			continue;
		int j = int(wc.wr_id);
		const msg &m = plan[j];
		bool imm = m.opcode != SEND;

		if ((imm != !!(wc.wc_flags & IBV_WC_WITH_IMM)) ||
		    (imm && ntohl(wc.imm_data) != m.imm) ||
		    (m.opcode == WRITE_IMM) != (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) ||
		    (m.opcode != WRITE_IMM && wc.byte_len != m.len)) {
			std::printf("FAIL: round %" PRIu64 " msg %d %s: opcode %d "
				    "byte_len %u imm %#x flags %#x\n", round, j,
				    op_names[m.opcode], wc.opcode, wc.byte_len,
				    ntohl(wc.imm_data), wc.wc_flags);
			e.c.mismatches++;
		}
		if (m.opcode == WRITE_IMM)
			continue;	/* placed data checked below */
		fill_pattern(want.data(), m.len, m.tag);
		verify(e, e.area(area_expect, j), want.data(), m.len,
		       op_names[m.opcode], round, j);
		e.c.messages++;
		e.c.per_op[m.opcode]++;
	}
	for (int j = 0; j < round_max; j++) {
		const msg &m = plan[j];
		const uint8_t *t = e.area(area_remote, j);
		uint64_t v;

		switch (m.opcode) {
		case WRITE:
		case WRITE_IMM:
			fill_pattern(want.data(), m.len, m.tag);
			verify(e, t, want.data(), m.len, op_names[m.opcode],
			       round, j);
			break;
		case CAS:
			std::memcpy(&v, t, 8);
			verify64(e, v, m.compare_add == m.v0 ? m.swap : m.v0,
				 "cas target", round, j);
			break;
		case FAA:
			std::memcpy(&v, t, 8);
			verify64(e, v, m.v0 + m.compare_add, "faa target",
				 round, j);
			break;
		default:
			continue;
		}
		e.c.messages++;
		e.c.per_op[m.opcode]++;
	}
	c = {ctl_checked, 0, round, e.c.mismatches, e.c.bad};
	return write_all(e.fd, &c, sizeof(c));
}

/* Client: one round over @budget bytes at most; returns bytes posted. */
uint64_t client_round(endpoint &e, const params &pr, uint64_t round,
		      uint64_t raddr, uint32_t rkey, counts &srv)
{
	std::vector<msg> plan = plan_round(pr, round);
	std::vector<ibv_wc> wcs;
	std::vector<uint8_t> want(e.slot);
	uint64_t posted_bytes = 0;
	int n = 0;
	ctl c;

	if (!read_all(e.fd, &c, sizeof(c)) || c.kind != ctl_ready) {
		std::printf("FAIL: side channel (ready)\n");
		e.c.bad++;
		return 0;
	}
	for (int j = 0; j < round_max; j++) {
		const msg &m = plan[j];
		uint8_t *l = e.area(area_local, j);
		ibv_sge sge[max_sges];
		ibv_send_wr wr = {}, *bad;
		uint64_t ra = raddr + uint64_t(j) * e.slot;

		std::memset(l, 0, e.slot);
		if (m.opcode != READ && m.opcode != CAS && m.opcode != FAA)
			fill_pattern(l, m.len, m.tag);
		sges_of(e, m, l, sge);
		wr.wr_id = uint64_t(j);
		wr.sg_list = sge;
		wr.num_sge = int(m.nsge);
		wr.send_flags = IBV_SEND_SIGNALED | (m.inl ? IBV_SEND_INLINE : 0);
		switch (m.opcode) {
		case SEND: wr.opcode = IBV_WR_SEND; break;
		case SEND_IMM: wr.opcode = IBV_WR_SEND_WITH_IMM; break;
		case WRITE: wr.opcode = IBV_WR_RDMA_WRITE; break;
		case WRITE_IMM: wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; break;
		case READ: wr.opcode = IBV_WR_RDMA_READ; break;
		case CAS: wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; break;
		default: wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
		}
		wr.imm_data = htonl(m.imm);
		if (m.opcode == CAS || m.opcode == FAA) {
			wr.wr.atomic.remote_addr = ra;
			wr.wr.atomic.rkey = rkey;
			wr.wr.atomic.compare_add = m.compare_add;
			wr.wr.atomic.swap = m.swap;
		} else {
			wr.wr.rdma.remote_addr = ra;
			wr.wr.rdma.rkey = rkey;
		}
		if (ibv_post_send(e.qp, &wr, &bad)) {
			std::printf("FAIL: post_send %s: %s\n",
				    op_names[m.opcode], std::strerror(errno));
			e.c.bad++;
			break;
		}
		n++;
		posted_bytes += m.len;
	}
	poll_n(e, n, wcs);
	for (const ibv_wc &wc : wcs) {
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= round_max)
			continue;
		int j = int(wc.wr_id);
		const msg &m = plan[j];
		uint64_t v;

		if (m.opcode == READ) {
			fill_pattern(want.data(), m.len, m.tag);
			verify(e, e.area(area_local, j), want.data(), m.len,
			       "read", round, j);
		} else if (m.opcode == CAS || m.opcode == FAA) {
			std::memcpy(&v, e.area(area_local, j), 8);
			verify64(e, v, m.v0, "atomic original", round, j);
		}
		e.c.per_op[m.opcode]++;
		e.c.messages++;
	}
	c = {ctl_posted, 0, round, 0, 0};
	if (!write_all(e.fd, &c, sizeof(c)) || !read_all(e.fd, &c, sizeof(c)) ||
	    c.kind != ctl_checked) {
		std::printf("FAIL: side channel (checked)\n");
		e.c.bad++;
		return 0;
	}
	srv.mismatches = c.a;
	srv.bad = c.b;
	return posted_bytes;
}

bool setup(endpoint &e, const char *dev, int port, int gid_idx, hello &mine)
{
	ibv_port_attr pa = {};
	ibv_gid gid = {};

	e.ctx = open_dev(dev);
	if (!e.ctx) {
		std::fprintf(stderr, "no device %s\n", dev ? dev : "");
		return false;
	}
	if (ibv_query_port(e.ctx, uint8_t(port), &pa) ||
	    ibv_query_gid(e.ctx, uint8_t(port), gid_idx, &gid)) {
		std::fprintf(stderr, "query_port/gid: %s\n", std::strerror(errno));
		return false;
	}
	mine.mtu = pa.active_mtu;
	std::memcpy(mine.gid, gid.raw, 16);
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 4 * round_max, nullptr, nullptr, 0);
	ibv_qp_init_attr ia = {};
	ia.send_cq = ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 2 * round_max;
	ia.cap.max_recv_wr = 2 * round_max;
	ia.cap.max_send_sge = max_sges;
	ia.cap.max_recv_sge = 3;
	ia.cap.max_inline_data = inline_cap;
	e.qp = e.pd && e.cq ? ibv_create_qp(e.pd, &ia) : nullptr;
	if (!e.qp) {
		std::fprintf(stderr, "pd/cq/qp: %s\n", std::strerror(errno));
		return false;
	}
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = uint8_t(port);
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		std::fprintf(stderr, "INIT: %s\n", std::strerror(errno));
		return false;
	}
	mine.qpn = e.qp->qp_num;
	mine.psn = uint32_t(getpid() * 2654435761u) & 0xffffff;
	return true;
}

bool alloc_buffers(endpoint &e, uint32_t max_size, hello &mine)
{
	e.slot = (size_t(max_size) + 15) & ~size_t(7);
	e.buf.assign(3 * round_max * e.slot, 0);
	e.mr = ibv_reg_mr(e.pd, e.buf.data(), e.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
	if (!e.mr) {
		std::fprintf(stderr, "reg_mr: %s\n", std::strerror(errno));
		return false;
	}
	mine.rkey = e.mr->rkey;
	mine.addr = (uintptr_t)e.area(area_remote, 0);
	mine.len = round_max * e.slot;
	return true;
}

bool connect_qp(endpoint &e, int port, int gid_idx, const hello &mine,
		const hello &peer)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ibv_mtu(std::min(mine.mtu, peer.mtu));
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
	a.ah_attr.grh.sgid_index = uint8_t(gid_idx);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = uint8_t(port);
	if (ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER)) {
		std::fprintf(stderr, "RTR: %s\n", std::strerror(errno));
		return false;
	}
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = mine.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC)) {
		std::fprintf(stderr, "RTS: %s\n", std::strerror(errno));
		return false;
	}
	return true;
}

void print_counts(const char *who, const counts &c)
{
	std::printf("%s: messages %" PRIu64 " bytes_verified %" PRIu64
		    " mismatches %" PRIu64 " bad_completions %" PRIu64 "\n",
		    who, c.messages, c.bytes, c.mismatches, c.bad);
	std::printf("%s:", who);
	for (int o = 0; o < NOPS; o++)
		std::printf(" %s %" PRIu64, op_names[o], c.per_op[o]);
	std::printf("\n");
}

} // namespace

int main(int argc, char **argv)
{
	static const option opts[] = {
		{"ib-dev", required_argument, nullptr, 'd'},
		{"ib-port", required_argument, nullptr, 'i'},
		{"gid-idx", required_argument, nullptr, 'g'},
		{"port", required_argument, nullptr, 'p'},
		{"bytes", required_argument, nullptr, 'b'},
		{"max-size", required_argument, nullptr, 'm'},
		{"ops", required_argument, nullptr, 'o'},
		{"seed", required_argument, nullptr, 'S'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	const char *dev = nullptr;
	int ib_port = 1, gid_idx = 0, tcp_port = 18516, ch;
	params pr;
	uint64_t v;

	while ((ch = getopt_long(argc, argv, "d:i:g:p:b:m:o:S:h", opts,
				 nullptr)) != -1) {
		switch (ch) {
		case 'd': dev = optarg; break;
		case 'i': ib_port = std::atoi(optarg); break;
		case 'g': gid_idx = std::atoi(optarg); break;
		case 'p': tcp_port = std::atoi(optarg); break;
		case 'b':
			if (!parse_size(optarg, pr.bytes) || !pr.bytes) {
				usage(stderr, argv[0]);
				return 2;
			}
			break;
		case 'm':
			if (!parse_size(optarg, v) || v < 1 || v > (1u << 24)) {
				usage(stderr, argv[0]);
				return 2;
			}
			pr.max_size = uint32_t(v);
			break;
		case 'o': {
			std::string list = optarg;
			pr.ops_mask = 0;
			size_t at = 0;
			while (at <= list.size()) {
				size_t comma = list.find(',', at);
				std::string name = list.substr(at, comma - at);
				int o = 0;
				while (o < NOPS && name != op_names[o])
					o++;
				if (o == NOPS) {
					std::fprintf(stderr, "unknown op %s\n",
						     name.c_str());
					return 2;
				}
				pr.ops_mask |= 1u << o;
				if (comma == std::string::npos)
					break;
				at = comma + 1;
			}
			break;
		}
		case 'S': pr.seed = std::strtoull(optarg, nullptr, 0); break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	const char *host = optind < argc ? argv[optind] : nullptr;
	endpoint e;
	hello mine = {}, peer = {};

	e.server = !host;
	if (!setup(e, dev, ib_port, gid_idx, mine))
		return 2;
	e.fd = e.server ? tcp_server(uint16_t(tcp_port)) :
			  tcp_client(host, uint16_t(tcp_port));
	if (e.fd < 0) {
		std::fprintf(stderr, "side channel: %s\n", std::strerror(errno));
		return 2;
	}
	/* The client's run parameters travel in its hello, sent first. */
	if (!e.server) {
		if (!pr.max_size)
			pr.max_size = 3 * (128u << mine.mtu);
		mine.seed = pr.seed;
		mine.bytes = pr.bytes;
		mine.max_size = pr.max_size;
		mine.ops_mask = pr.ops_mask;
		if (!alloc_buffers(e, pr.max_size, mine) ||
		    !write_all(e.fd, &mine, sizeof(mine)) ||
		    !read_all(e.fd, &peer, sizeof(peer)))
			return 2;
	} else {
		if (!read_all(e.fd, &peer, sizeof(peer)))
			return 2;
		pr.seed = peer.seed;
		pr.bytes = peer.bytes;
		pr.max_size = peer.max_size;
		pr.ops_mask = peer.ops_mask;
		if (!pr.ops_mask || pr.ops_mask >= (1u << NOPS) ||
		    !pr.max_size || pr.max_size > (1u << 24)) {
			std::fprintf(stderr, "bad run parameters from the client\n");
			return 2;
		}
		if (!alloc_buffers(e, pr.max_size, mine) ||
		    !write_all(e.fd, &mine, sizeof(mine)))
			return 2;
	}
	if (!connect_qp(e, ib_port, gid_idx, mine, peer))
		return 2;

	auto t0 = std::chrono::steady_clock::now();
	counts srv;
	uint64_t round = 0;
	if (e.server) {
		while (server_round(e, pr, round))
			round++;
	} else {
		uint64_t done = 0;

		while (done < pr.bytes && !e.c.bad) {
			uint64_t n = client_round(e, pr, round, peer.addr,
						  peer.rkey, srv);
			if (!n)
				break;
			done += n;
			round++;
			if (srv.mismatches || srv.bad)
				break;
		}
		ctl c = {ctl_end, 0, round, 0, 0};
		ctl ready;
		read_all(e.fd, &ready, sizeof(ready));
		write_all(e.fd, &c, sizeof(c));
		double s = std::chrono::duration<double>(
				   std::chrono::steady_clock::now() - t0)
				   .count();
		std::printf("client: %" PRIu64 " rounds, %" PRIu64
			    " payload bytes in %.1f s (%.2f MB/s), max_size %u, "
			    "seed %" PRIu64 "\n", round, done, s, done / s / 1e6,
			    pr.max_size, pr.seed);
		std::printf("server: mismatches %" PRIu64 " bad_completions %"
			    PRIu64 "\n", srv.mismatches, srv.bad);
	}
	print_counts(e.server ? "server" : "client", e.c);
	ibv_destroy_qp(e.qp);
	ibv_dereg_mr(e.mr);
	ibv_destroy_cq(e.cq);
	ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);
	close(e.fd);
	bool ok = !e.c.mismatches && !e.c.bad && !srv.mismatches && !srv.bad;
	std::printf("%s\n", ok ? "PASS: integrity" : "FAIL: integrity");
	return ok ? 0 : 1;
}
