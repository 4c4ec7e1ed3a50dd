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
 *   sends windows of 32 work requests drawn from a seeded generator both
 *   sides run: every opcode (SEND, SEND_WITH_IMM, RDMA_WRITE,
 *   RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_CMP_AND_SWP,
 *   ATOMIC_FETCH_AND_ADD), sizes 1 B .. --max-size, one to four SGEs,
 *   small SENDs and WRITEs inline.  Payloads are patterns derived from the
 *   seed and the message, so each side knows what it must see: the server
 *   checks what SENDs delivered (and their immediate data), what WRITEs
 *   placed and what atomics left in its memory; the client checks what
 *   READs returned and the original values atomics reported.  Every
 *   completion must succeed, with the opcode, length and immediate of its
 *   message, in the order the work requests were posted.
 *
 *   Up to --depth messages (depth/32 windows) are in flight; no request
 *   waits for a round trip of the side channel, which only carries the
 *   server's word that windows are ready, ahead of the client.  Message
 *   n uses slot n mod (2 x depth) of each side's memory; a slot is reused
 *   when the window that last used it has been checked:
 *   - the server "arms" a window ahead of time (READ sources, atomic
 *     initial values, cleared WRITE targets and receive buffers, posted
 *     receives) and says so over TCP; the client posts a window once it
 *     is armed;
 *   - window w + depth/32 starts with the marker of window w, a zero-byte
 *     SEND_WITH_IMM naming w, which the client posts once every work
 *     request of w has completed (so a READ whose response was lost has
 *     been retried before its source can change).  RC executes requests
 *     in order: when the marker's receive completes, every WRITE and
 *     atomic of w has reached the server's memory, and the server checks
 *     them there, then arms the window that reuses w's slots;
 *   - the client checks READs and atomic originals as they complete; the
 *     server checks SENDs and WRITE_WITH_IMMs as their receives complete.
 *   Both sides derive where the run ends from the plan (the first window
 *   that reaches --bytes); the markers of the last windows ride in
 *   windows of nothing else.  After the last marker the server reports
 *   its counts over TCP.
 *
 * OPTIONS
 *   -d, --ib-dev DEV     verbs device (default: the first)
 *   -i, --ib-port N      port (default 1)
 *   -g, --gid-idx N      local GID index (default 0)
 *   -p, --port N         TCP port of the side channel (default 18516)
 *   -b, --bytes N[KMG]   client: payload bytes to run (default 256M)
 *   -m, --max-size N     client: largest message (default 64K); a quarter
 *                        of the messages are up to 256 B, a quarter up to
 *                        4 KiB, the rest up to N
 *   -o, --ops LIST       client: comma-separated subset of send, send_imm,
 *                        write, write_imm, read, cas, faa (default: all)
 *   -S, --seed N         client: generator seed (default 1)
 *   -t, --depth N        client: messages in flight, a multiple of 32
 *                        from 32 to 2048 (default 128)
 *   -e, --events         wait for completions on a completion channel
 *                        instead of polling
 *   -u, --until FILE     client: run until FILE exists (instead of
 *                        --bytes), then end after the windows the server
 *                        has armed
 *   -h, --help           this text
 *   The server takes bytes, sizes, ops, seed and depth from the client.
 *
 * OUTPUT AND EXIT STATUS
 *   Both sides print "messages M bytes_verified B mismatches X
 *   bad_completions C" and per-opcode counts; the client also prints the
 *   elapsed time and rate and the server's counts.  Exit status 0 only if X and C are 0 on both
 *   sides (the client learns the server's counts) and the server checked
 *   as many messages of each opcode (except READ, which it does not see)
 *   as the client completed; 1 on a failed check, 2 on a usage or setup
 *   error.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <getopt.h>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

namespace {

constexpr uint32_t window_msgs = 32;
constexpr uint32_t max_sges = 4;
constexpr uint32_t inline_cap = 64;
/* A side that sees no completion and no side-channel record for this long
 * gives up: a bound on a hang, not a timing check. */
constexpr int idle_limit_s = 120;

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

/* What both sides derive for message @j of window @w. */
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
	uint32_t max_size = 64 << 10;
	uint32_t ops_mask = (1u << NOPS) - 1;
	uint32_t depth = 128;	/* messages in flight */
};

std::vector<msg> plan_window(const params &pr, uint64_t w)
{
	uint64_t s = pr.seed * 0x100000001b3ull ^ w;
	std::vector<msg> v(window_msgs);
	uint32_t nops = __builtin_popcount(pr.ops_mask);

	for (uint32_t j = 0; j < window_msgs; j++) {
		msg &m = v[j];
		uint32_t k = splitmix(s) % nops, o = 0;

		for (o = 0; o < NOPS; o++)
			if ((pr.ops_mask & (1u << o)) && k-- == 0)
				break;
		m.opcode = op(o);
		bool atomic = m.opcode == CAS || m.opcode == FAA;
		/* A quarter small (inline), a quarter up to a few packets,
		 * the rest up to max_size. */
		uint32_t size_class = uint32_t(splitmix(s) % 4);
		uint32_t upto = size_class == 0 ? 256 :
				size_class == 1 ? 4096 : pr.max_size;
		m.len = atomic ? 8 : 1 + splitmix(s) % std::min(upto, pr.max_size);
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
		m.imm = uint32_t(w * window_msgs + j);
	}
	return v;
}

/*
 * Work request ids: message n = w * window_msgs + j is n << 1, the marker
 * of window w is w << 1 | 1, its immediate w's low 32 bits.
 */
uint64_t msg_id(uint64_t n) { return n << 1; }
uint64_t marker_id(uint64_t w) { return w << 1 | 1; }

/*
 * The shape of a run, which both sides derive as they plan windows in
 * order: window v carries the marker of window v - lag (if v >= lag) and
 * its messages (if v <= last, the first window whose messages reach
 * --bytes); the run ends with window last + lag.  The memory holds
 * 2 x lag windows of slots.
 */
struct stream {
	uint32_t lag = 0;
	uint64_t last = UINT64_MAX;
	uint64_t planned_bytes = 0;
	std::vector<std::vector<msg>> plans;	/* per ring position */

	explicit stream(const params &pr)
		: lag(pr.depth / window_msgs), plans(2 * lag) {}
	uint64_t ring() const { return plans.size(); }
	bool has_marker(uint64_t v) const { return v >= lag; }
	bool has_msgs(uint64_t v) const { return v <= last; }
	bool beyond_end(uint64_t v) const
	{
		return last != UINT64_MAX && v > last + lag;
	}
	std::vector<msg> &plan_of(uint64_t w) { return plans[w % ring()]; }
	/* Plan window @v, the next in order, if it has messages. */
	void plan(const params &pr, uint64_t v)
	{
		if (!has_msgs(v))
			return;
		plan_of(v) = plan_window(pr, v);
		for (const msg &m : plan_of(v))
			planned_bytes += m.len;
		if (planned_bytes >= pr.bytes)
			last = v;
	}
};

/* The side channel: fixed-size records of one host's layout. */
struct hello {
	uint32_t qpn, psn, rkey, mtu;
	uint64_t addr, len;
	uint8_t gid[16];
	uint64_t seed, bytes;
	uint32_t max_size, ops_mask, depth, pad;
};

struct ctl {
	uint32_t kind;		/* ctl_* */
	uint32_t pad;
	uint64_t window;
	/* ctl_result: mismatches, bad completions, messages, bytes and the
	 * per-opcode counts of the server. */
	uint64_t mismatches, bad, messages, bytes;
	uint64_t per_op[NOPS];
};
enum : uint32_t {
	ctl_armed = 1,	/* server: window @window is armed */
	ctl_abort,	/* client: stop, report */
	ctl_result,	/* server: its counts; the last record */
	ctl_stop,	/* client (--until): end the run soon */
	ctl_last,	/* server: after ctl_stop, @window is the last window */
};

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

/* Areas of the registered buffer, each a ring of message slots. */
constexpr int area_local = 0;	/* client: sources and READ/atomic results */
constexpr int area_remote = 1;	/* server: WRITE/atomic targets, READ sources */
constexpr int area_recv = 2;	/* server: receive buffers */

struct endpoint {
	ibv_context *ctx = nullptr;
	ibv_comp_channel *chan = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;
	size_t slot = 0;	/* bytes per message slot */
	uint64_t slots = 0;	/* slots per area */
	uint8_t *area(int a, uint64_t n)
	{
		return buf.data() + (size_t(a) * slots + n % slots) * slot;
	}
	counts c;
	int fd = -1;
	bool events = false;
	/* Work request ids in the order their completions must come. */
	std::deque<uint64_t> expect;
};

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
		"  -m, --max-size N     client: largest message (default 64K)\n"
		"  -o, --ops LIST       client: send,send_imm,write,write_imm,read,cas,faa\n"
		"  -S, --seed N         client: generator seed (default 1)\n"
		"  -t, --depth N        client: messages in flight, a multiple of 32,\n"
		"                       32..2048 (default 128)\n"
		"  -e, --events         block on a completion channel, do not poll\n"
		"  -u, --until FILE     client: run until FILE exists, not --bytes\n"
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

bool valid_depth(uint64_t d)
{
	return d >= window_msgs && d <= 2048 && d % window_msgs == 0;
}

void verify(endpoint &e, const uint8_t *got, const uint8_t *want, uint32_t len,
	    const char *what, uint64_t n)
{
	if (std::memcmp(got, want, len)) {
		uint32_t i = 0;

		while (got[i] == want[i])
			i++;
		if (e.c.mismatches < 20)
			std::printf("FAIL: msg %" PRIu64 " %s (%u B): byte %u is "
				    "%#x, want %#x\n", n, what, len, i, got[i],
				    want[i]);
		e.c.mismatches++;
	}
	e.c.bytes += len;
}

void verify64(endpoint &e, uint64_t got, uint64_t want, const char *what,
	      uint64_t n)
{
	if (got != want) {
		if (e.c.mismatches < 20)
			std::printf("FAIL: msg %" PRIu64 " %s: %#" PRIx64
				    ", want %#" PRIx64 "\n", n, what, got, want);
		e.c.mismatches++;
	}
	e.c.bytes += 8;
}

void count(endpoint &e, op o)
{
	e.c.messages++;
	e.c.per_op[o]++;
}

/*
 * The next completions, after waiting for them if there are none (on the
 * completion channel with --events, else by polling) or for the side
 * channel to become readable: the number of completions, 0 if only the
 * side channel has something or nothing came for idle_limit_s (then
 * *@idle is set), -1 on a poll error.
 */
int next_completions(endpoint &e, ibv_wc *wc, int max, bool *tcp_readable,
		     bool *idle)
{
	auto limit = std::chrono::steady_clock::now() +
		     std::chrono::seconds(idle_limit_s);
	pollfd p[2] = {{e.fd, POLLIN, 0}, {-1, POLLIN, 0}};

	*tcp_readable = false;
	*idle = false;
	for (;;) {
		int got = ibv_poll_cq(e.cq, max, wc);

		if (got)
			return got;
		if (e.events) {
			if (ibv_req_notify_cq(e.cq, 0))
				return -1;
			/* A completion that came before the arming. */
			got = ibv_poll_cq(e.cq, max, wc);
			if (got)
				return got;
			p[1].fd = e.chan->fd;
		}
		int r = poll(p, e.events ? 2 : 1, e.events ? 1000 : 0);

		if (r < 0 && errno != EINTR)
			return -1;
		if (p[1].fd >= 0 && (p[1].revents & POLLIN)) {
			ibv_cq *cq;
			void *ctx;

			if (!ibv_get_cq_event(e.chan, &cq, &ctx))
				ibv_ack_cq_events(cq, 1);
		}
		if (p[0].revents) {
			*tcp_readable = true;
			return 0;
		}
		if (std::chrono::steady_clock::now() > limit) {
			*idle = true;
			return 0;
		}
	}
}

/* A completion must be the next one expected and succeed. */
bool in_order(endpoint &e, const ibv_wc &wc)
{
	if (e.expect.empty() || e.expect.front() != wc.wr_id) {
		std::printf("FAIL: completion wr_id %#" PRIx64 ", expected %#"
			    PRIx64 "\n", (uint64_t)wc.wr_id,
			    e.expect.empty() ? UINT64_MAX : e.expect.front());
		e.c.bad++;
		return false;
	}
	e.expect.pop_front();
	if (wc.status != IBV_WC_SUCCESS) {
		std::printf("FAIL: completion wr_id %#" PRIx64 " status %s "
			    "vendor_err %#x\n", (uint64_t)wc.wr_id,
			    ibv_wc_status_str(wc.status), wc.vendor_err);
		e.c.bad++;
		return false;
	}
	return true;
}

bool receive_consuming(op o)
{
	return o == SEND || o == SEND_IMM || o == WRITE_IMM;
}

/* --------------------------------------------------------------- server */

/*
 * Arm window @v: receives for its marker (of window v - lag) and for its
 * SENDs and WRITE_WITH_IMMs, in the order the client sends them; initial
 * values for its READ sources and atomic targets, cleared WRITE targets
 * and receive buffers.  Then tell the client.
 */
bool server_arm(endpoint &e, const params &pr, stream &st, uint64_t v)
{
	ibv_recv_wr wrs[window_msgs + 1], *bad;
	ibv_sge sges[window_msgs + 1][3];
	uint32_t nrecv = 0, third = pr.max_size / 3 + 1;

	if (st.has_marker(v)) {
		/* Zero bytes, so no buffer. */
		wrs[nrecv] = {};
		wrs[nrecv++].wr_id = marker_id(v - st.lag);
	}
	st.plan(pr, v);
	for (uint32_t j = 0; st.has_msgs(v) && j < window_msgs; j++) {
		const msg &m = st.plan_of(v)[j];
		uint64_t n = v * window_msgs + j;
		uint8_t *t = e.area(area_remote, n);

		std::memset(t, 0, e.slot);
		if (m.opcode == READ)
			fill_pattern(t, m.len, m.tag);
		else if (m.opcode == CAS || m.opcode == FAA)
			std::memcpy(t, &m.v0, 8);
		if (!receive_consuming(m.opcode))
			continue;
		/* Into up to three SGEs: enough for the message, sometimes more. */
		uint8_t *r = e.area(area_recv, n);
		uint32_t need = (m.len + third - 1) / third;
		ibv_sge *sge = sges[nrecv];
		ibv_recv_wr &wr = wrs[nrecv++];

		std::memset(r, 0, e.slot);
		for (uint32_t k = 0; k < 3; k++)
			sge[k] = {(uintptr_t)r + k * third, third, e.mr->lkey};
		wr = {};
		wr.wr_id = msg_id(n);
		wr.sg_list = sge;
		wr.num_sge = int(need + m.tag % (4 - need));
	}
	for (uint32_t i = 0; i < nrecv; i++) {
		wrs[i].next = i + 1 < nrecv ? &wrs[i + 1] : nullptr;
		e.expect.push_back(wrs[i].wr_id);
	}
	if (nrecv && ibv_post_recv(e.qp, wrs, &bad)) {
		std::printf("FAIL: post_recv (window %" PRIu64 "): %s\n", v,
			    std::strerror(errno));
		e.c.bad++;
		return false;
	}
	ctl c = {};
	c.kind = ctl_armed;
	c.window = v;
	return write_all(e.fd, &c, sizeof(c));
}

/* A receive of message @n completed: check what it says and delivered. */
void server_received(endpoint &e, stream &st, const ibv_wc &wc, uint64_t n)
{
	const msg &m = st.plan_of(n / window_msgs)[n % window_msgs];
	bool imm = m.opcode != SEND;
	std::vector<uint8_t> want(m.len);

	if ((imm != !!(wc.wc_flags & IBV_WC_WITH_IMM)) ||
	    (imm && ntohl(wc.imm_data) != m.imm) ||
	    wc.opcode != (m.opcode == WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM :
						    IBV_WC_RECV) ||
	    (m.opcode != WRITE_IMM && wc.byte_len != m.len)) {
		if (e.c.mismatches < 20)
			std::printf("FAIL: msg %" PRIu64 " %s: opcode %d byte_len "
				    "%u imm %#x flags %#x\n", n,
				    op_names[m.opcode], wc.opcode, wc.byte_len,
				    ntohl(wc.imm_data), wc.wc_flags);
		e.c.mismatches++;
	}
	/* WRITE_WITH_IMM placed its data before its receive completed. */
	fill_pattern(want.data(), m.len, m.tag);
	verify(e, e.area(m.opcode == WRITE_IMM ? area_remote : area_recv, n),
	       want.data(), m.len, op_names[m.opcode], n);
	count(e, m.opcode);
}

/* The marker of window @w arrived: check its WRITEs and atomics. */
void server_marker(endpoint &e, stream &st, const ibv_wc &wc, uint64_t w)
{
	std::vector<uint8_t> want(e.slot);

	if (wc.opcode != IBV_WC_RECV || wc.byte_len ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != uint32_t(w)) {
		if (e.c.mismatches < 20)
			std::printf("FAIL: marker %" PRIu64 ": opcode %d "
				    "byte_len %u imm %#x flags %#x\n", w,
				    wc.opcode, wc.byte_len, ntohl(wc.imm_data),
				    wc.wc_flags);
		e.c.mismatches++;
	}
	for (uint32_t j = 0; j < window_msgs; j++) {
		const msg &m = st.plan_of(w)[j];
		uint64_t n = w * window_msgs + j;
		const uint8_t *t = e.area(area_remote, n);
		uint64_t v;

		switch (m.opcode) {
		case WRITE:
			fill_pattern(want.data(), m.len, m.tag);
			verify(e, t, want.data(), m.len, "write", n);
			break;
		case CAS:
			std::memcpy(&v, t, 8);
			verify64(e, v, m.compare_add == m.v0 ? m.swap : m.v0,
				 "cas target", n);
			break;
		case FAA:
			std::memcpy(&v, t, 8);
			verify64(e, v, m.v0 + m.compare_add, "faa target", n);
			break;
		default:
			continue;
		}
		count(e, m.opcode);
	}
}

void server_run(endpoint &e, const params &pr)
{
	stream st(pr);
	uint64_t next_marker = 0;
	ibv_wc wc[32];
	bool done = false;

	uint64_t armed = 0;	/* windows [0, armed) are armed */

	for (; armed < st.ring() && !st.beyond_end(armed); armed++)
		if (!server_arm(e, pr, st, armed))
			return;
	while (!done && !e.c.bad) {
		bool tcp, idle;
		int got = next_completions(e, wc, 32, &tcp, &idle);

		if (got < 0) {
			std::printf("FAIL: polling the CQ: %s\n",
				    std::strerror(errno));
			e.c.bad++;
			break;
		}
		if (idle) {
			std::printf("FAIL: nothing received for %d s, waiting "
				    "for marker %" PRIu64 "\n", idle_limit_s,
				    next_marker);
			e.c.bad++;
			break;
		}
		if (tcp) {
			ctl c;

			if (!read_all(e.fd, &c, sizeof(c))) {
				std::printf("FAIL: side channel closed\n");
				e.c.bad++;
				break;
			}
			if (c.kind == ctl_stop && st.last == UINT64_MAX) {
				/* Windows armed from now on carry only markers. */
				st.last = armed - 1;
				c = {};
				c.kind = ctl_last;
				c.window = st.last;
				if (!write_all(e.fd, &c, sizeof(c)))
					break;
				continue;
			}
			std::printf("server: the client stopped the run at "
				    "window %" PRIu64 "\n", c.window);
			e.c.bad++;
			break;
		}
		for (int i = 0; i < got && !done; i++) {
			uint64_t w = wc[i].wr_id >> 1;

			if (!in_order(e, wc[i]))
				break;
			if (!(wc[i].wr_id & 1)) {
				server_received(e, st, wc[i], w);
				continue;
			}
			server_marker(e, st, wc[i], w);
			next_marker = w + 1;
			if (w == st.last) {
				done = true;
			} else if (!st.beyond_end(armed)) {
				/* The window that reuses w's slots. */
				if (!server_arm(e, pr, st, armed++))
					break;
			}
		}
	}
	ctl c = {};
	c.kind = ctl_result;
	c.mismatches = e.c.mismatches;
	c.bad = e.c.bad;
	c.messages = e.c.messages;
	c.bytes = e.c.bytes;
	std::memcpy(c.per_op, e.c.per_op, sizeof(c.per_op));
	if (!write_all(e.fd, &c, sizeof(c)))
		std::printf("server: could not send the result\n");
}

/* --------------------------------------------------------------- client */

/*
 * Post window @v: the marker of window v - lag (whose work requests have
 * all completed) and its messages.  False on a failed post.
 */
bool client_post(endpoint &e, const params &pr, stream &st, uint64_t v,
		 const hello &peer)
{
	ibv_send_wr wrs[window_msgs + 1], *bad;
	ibv_sge sges[window_msgs][max_sges];
	uint32_t nwr = 0;

	if (st.has_marker(v)) {
		ibv_send_wr &wr = wrs[nwr++];

		wr = {};
		wr.wr_id = marker_id(v - st.lag);
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htonl(uint32_t(v - st.lag));
	}
	st.plan(pr, v);
	for (uint32_t j = 0; st.has_msgs(v) && j < window_msgs; j++) {
		const msg &m = st.plan_of(v)[j];
		uint64_t n = v * window_msgs + j;
		uint8_t *l = e.area(area_local, n);
		ibv_sge *sge = sges[j];
		ibv_send_wr &wr = wrs[nwr++];
		uint64_t ra = peer.addr + (n % e.slots) * e.slot;
		uint32_t from = 0;

		std::memset(l, 0, e.slot);
		if (m.opcode != READ && m.opcode != CAS && m.opcode != FAA)
			fill_pattern(l, m.len, m.tag);
		for (uint32_t k = 0; k < m.nsge; k++) {
			sge[k] = {(uintptr_t)(l + from), m.cut[k] - from,
				  e.mr->lkey};
			from = m.cut[k];
		}
		wr = {};
		wr.wr_id = msg_id(n);
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
			wr.wr.atomic.rkey = peer.rkey;
			wr.wr.atomic.compare_add = m.compare_add;
			wr.wr.atomic.swap = m.swap;
		} else {
			wr.wr.rdma.remote_addr = ra;
			wr.wr.rdma.rkey = peer.rkey;
		}
	}
	for (uint32_t i = 0; i < nwr; i++) {
		wrs[i].next = i + 1 < nwr ? &wrs[i + 1] : nullptr;
		e.expect.push_back(wrs[i].wr_id);
	}
	if (nwr && ibv_post_send(e.qp, wrs, &bad)) {
		std::printf("FAIL: post_send (window %" PRIu64 ", wr_id %#"
			    PRIx64 "): %s\n", v, (uint64_t)bad->wr_id,
			    std::strerror(errno));
		e.c.bad++;
		return false;
	}
	return true;
}

/* Message @n completed: check its completion and what it brought back. */
void client_completed(endpoint &e, stream &st, const ibv_wc &wc, uint64_t n)
{
	static const ibv_wc_opcode wc_op[NOPS] = {
		IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
		IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD};
	const msg &m = st.plan_of(n / window_msgs)[n % window_msgs];
	std::vector<uint8_t> want;
	uint64_t v;

	if (wc.opcode != wc_op[m.opcode]) {
		if (e.c.mismatches < 20)
			std::printf("FAIL: msg %" PRIu64 " %s: completion "
				    "opcode %d\n", n, op_names[m.opcode],
				    wc.opcode);
		e.c.mismatches++;
	}
	if (m.opcode == READ) {
		want.resize(m.len);
		fill_pattern(want.data(), m.len, m.tag);
		verify(e, e.area(area_local, n), want.data(), m.len, "read", n);
	} else if (m.opcode == CAS || m.opcode == FAA) {
		std::memcpy(&v, e.area(area_local, n), 8);
		verify64(e, v, m.v0, "atomic original", n);
	}
	count(e, m.opcode);
}

/* The server's counts, its last record. */
struct server_result {
	bool received = false;
	counts c;
};

void take_result(server_result &r, const ctl &c)
{
	r.received = true;
	r.c.mismatches = c.mismatches;
	r.c.bad = c.bad;
	r.c.messages = c.messages;
	r.c.bytes = c.bytes;
	std::memcpy(r.c.per_op, c.per_op, sizeof(r.c.per_op));
}

/*
 * The server's records that have come, all of them (after waiting for the
 * first if @wait): windows armed, after a stop the last window, and the
 * result, which the server sends once it has the last marker, maybe
 * before the client polled the marker's completion.  False on a closed
 * side channel or an unexpected record.
 */
bool client_side_channel(endpoint &e, stream &st, uint64_t &armed,
			 uint64_t next, bool stop_sent, bool wait,
			 server_result &res)
{
	for (; !res.received; wait = false) {
		pollfd p = {e.fd, POLLIN, 0};
		ctl c;

		if (!wait && poll(&p, 1, 0) <= 0)
			return true;
		if (!read_all(e.fd, &c, sizeof(c))) {
			std::printf("FAIL: side channel closed\n");
			return false;
		}
		if (c.kind == ctl_armed && c.window == armed) {
			armed++;
		} else if (stop_sent && c.kind == ctl_last &&
			   c.window + 1 >= next && st.last == UINT64_MAX) {
			st.last = c.window;
		} else if (c.kind == ctl_result) {
			take_result(res, c);
		} else {
			std::printf("FAIL: side channel: record %u window %"
				    PRIu64 ", expected window %" PRIu64
				    " armed\n", c.kind, c.window, armed);
			return false;
		}
	}
	return true;
}

/*
 * Run until the last marker completed or something failed; the server's
 * counts in @srv.  Returns the payload bytes posted.  With @until, the
 * run ends once that file exists: the client asks the server to stop,
 * the server names the last window it armed with messages, which is at
 * least the last one the client posted.
 */
uint64_t client_run(endpoint &e, const params &pr, const hello &peer,
		    const char *until, counts &srv, uint64_t *windows)
{
	stream st(pr);
	uint64_t armed = 0;	/* windows [0, armed) are armed */
	uint64_t next = 0;	/* the next window to post */
	uint64_t complete = 0;	/* windows [0, complete) have completed */
	bool done = false, stop_sent = false;
	server_result res;
	ibv_wc wc[32];

	while (!done && !e.c.bad) {
		if (until && !stop_sent && !access(until, F_OK)) {
			ctl c = {};

			c.kind = ctl_stop;
			if (!write_all(e.fd, &c, sizeof(c))) {
				std::printf("FAIL: side channel (stop)\n");
				e.c.bad++;
				break;
			}
			stop_sent = true;
		}
		/* Out of armed windows: take what the server sent since. */
		if (next == armed &&
		    !client_side_channel(e, st, armed, next, stop_sent, false,
					 res)) {
			e.c.bad++;
			break;
		}
		/* Window v carries v - lag's marker: that one must be done. */
		while (next < armed && !st.beyond_end(next) &&
		       (!st.has_marker(next) || next - st.lag < complete)) {
			if (!client_post(e, pr, st, next, peer))
				break;
			next++;
		}
		bool tcp, idle;
		int got = next_completions(e, wc, 32, &tcp, &idle);

		if (got < 0) {
			std::printf("FAIL: polling the CQ: %s\n",
				    std::strerror(errno));
			e.c.bad++;
			break;
		}
		if (idle) {
			std::printf("FAIL: no completion for %d s, window %"
				    PRIu64 " next, %" PRIu64 " armed, %" PRIu64
				    " complete\n", idle_limit_s, next, armed,
				    complete);
			e.c.bad++;
			break;
		}
		if (tcp && !client_side_channel(e, st, armed, next, stop_sent,
						 true, res)) {
			e.c.bad++;
			break;
		}
		for (int i = 0; i < got; i++) {
			uint64_t id = wc[i].wr_id;

			if (!in_order(e, wc[i]))
				break;
			if (id & 1) {
				done = (id >> 1) == st.last;
				continue;
			}
			client_completed(e, st, wc[i], id >> 1);
			if ((id >> 1) % window_msgs == window_msgs - 1)
				complete = (id >> 1) / window_msgs + 1;
		}
	}
	*windows = next;
	if (!done) {
		ctl c = {};
		c.kind = ctl_abort;
		c.window = next;
		write_all(e.fd, &c, sizeof(c));
	}
	/* Records of windows armed meanwhile, then the server's result. */
	while (!res.received) {
		ctl c;

		if (!read_all(e.fd, &c, sizeof(c))) {
			std::printf("FAIL: side channel closed before the "
				    "server's result\n");
			res.c.bad++;
			break;
		}
		if (c.kind == ctl_result)
			take_result(res, c);
	}
	srv = res.c;
	return st.planned_bytes;
}

/* ---------------------------------------------------------------- setup */

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
	if (e.events)
		e.chan = ibv_create_comp_channel(e.ctx);
	if (!e.pd || (e.events && !e.chan)) {
		std::fprintf(stderr, "pd/channel: %s\n", std::strerror(errno));
		return false;
	}
	return true;
}

/*
 * The CQ, QP and memory for @depth messages in flight: the server arms
 * up to 2 x depth/32 windows ahead (each a marker and up to 32 messages),
 * the client has up to depth/32 windows outstanding.
 */
bool create_qp(endpoint &e, uint32_t depth, uint32_t max_size, int port,
	       hello &mine)
{
	uint32_t wrs = 2 * (depth + depth / window_msgs) + 1;

	e.slots = 2 * uint64_t(depth);
	e.cq = ibv_create_cq(e.ctx, int(2 * wrs), nullptr, e.chan, 0);
	ibv_qp_init_attr ia = {};
	ia.send_cq = ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = wrs;
	ia.cap.max_recv_wr = wrs;
	ia.cap.max_send_sge = max_sges;
	ia.cap.max_recv_sge = 3;
	ia.cap.max_inline_data = inline_cap;
	e.qp = e.cq ? ibv_create_qp(e.pd, &ia) : nullptr;
	if (!e.qp) {
		std::fprintf(stderr, "cq/qp: %s\n", std::strerror(errno));
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

	e.slot = (size_t(max_size) + 15) & ~size_t(7);
	e.buf.assign(3 * e.slots * e.slot, 0);
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
	mine.len = e.slots * e.slot;
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

bool parse_ops(const char *arg, uint32_t &mask)
{
	std::string list = arg;
	size_t at = 0;

	mask = 0;
	for (;;) {
		size_t comma = list.find(',', at);
		std::string name = list.substr(at, comma - at);
		int o = 0;

		while (o < NOPS && name != op_names[o])
			o++;
		if (o == NOPS) {
			std::fprintf(stderr, "unknown op '%s'\n", name.c_str());
			return false;
		}
		mask |= 1u << o;
		if (comma == std::string::npos)
			return true;
		at = comma + 1;
	}
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
		{"depth", required_argument, nullptr, 't'},
		{"events", no_argument, nullptr, 'e'},
		{"until", required_argument, nullptr, 'u'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	const char *dev = nullptr, *until = nullptr;
	int ib_port = 1, gid_idx = 0, tcp_port = 18516, ch;
	params pr;
	endpoint e;
	uint64_t v;

	while ((ch = getopt_long(argc, argv, "d:i:g:p:b:m:o:S:t:eu:h", opts,
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
		case 'o':
			if (!parse_ops(optarg, pr.ops_mask))
				return 2;
			break;
		case 'S': pr.seed = std::strtoull(optarg, nullptr, 0); break;
		case 't':
			if (!parse_size(optarg, v) || !valid_depth(v)) {
				usage(stderr, argv[0]);
				return 2;
			}
			pr.depth = uint32_t(v);
			break;
		case 'e': e.events = true; break;
		case 'u': until = optarg; pr.bytes = UINT64_MAX; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	const char *host = optind < argc ? argv[optind] : nullptr;
	bool server = !host;
	hello mine = {}, peer = {};

	if (!setup(e, dev, ib_port, gid_idx, mine))
		return 2;
	e.fd = server ? tcp_server(uint16_t(tcp_port)) :
			tcp_client(host, uint16_t(tcp_port));
	if (e.fd < 0) {
		std::fprintf(stderr, "side channel: %s\n", std::strerror(errno));
		return 2;
	}
	/* The client's run parameters travel in its hello, sent first. */
	if (!server) {
		mine.seed = pr.seed;
		mine.bytes = pr.bytes;
		mine.max_size = pr.max_size;
		mine.ops_mask = pr.ops_mask;
		mine.depth = pr.depth;
		if (!create_qp(e, pr.depth, pr.max_size, ib_port, mine) ||
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
		pr.depth = peer.depth;
		if (!pr.ops_mask || pr.ops_mask >= (1u << NOPS) ||
		    !pr.max_size || pr.max_size > (1u << 24) ||
		    !valid_depth(pr.depth)) {
			std::fprintf(stderr, "bad run parameters from the client\n");
			return 2;
		}
		if (!create_qp(e, pr.depth, pr.max_size, ib_port, mine) ||
		    !write_all(e.fd, &mine, sizeof(mine)))
			return 2;
	}
	if (!server && peer.len < e.slots * e.slot) {
		std::fprintf(stderr, "the server's memory is too small\n");
		return 2;
	}
	if (!connect_qp(e, ib_port, gid_idx, mine, peer))
		return 2;

	auto t0 = std::chrono::steady_clock::now();
	counts srv;
	bool ok = true;
	if (server) {
		server_run(e, pr);
	} else {
		uint64_t windows = 0;
		uint64_t done = client_run(e, pr, peer, until, srv, &windows);
		double s = std::chrono::duration<double>(
				   std::chrono::steady_clock::now() - t0)
				   .count();

		std::printf("client: %" PRIu64 " windows, %" PRIu64
			    " payload bytes in %.1f s (%.2f MB/s), max_size %u, "
			    "depth %u, seed %" PRIu64 "\n", windows, done, s,
			    done / s / 1e6, pr.max_size, pr.depth, pr.seed);
		print_counts("server", srv);
		/* Every message but READs reached the server's checks. */
		for (int o = 0; o < NOPS; o++)
			if (o != READ && srv.per_op[o] != e.c.per_op[o]) {
				std::printf("FAIL: the server checked %" PRIu64
					    " %s, the client completed %" PRIu64
					    "\n", srv.per_op[o], op_names[o],
					    e.c.per_op[o]);
				ok = false;
			}
	}
	print_counts(server ? "server" : "client", e.c);
	ibv_destroy_qp(e.qp);
	ibv_dereg_mr(e.mr);
	ibv_destroy_cq(e.cq);
	if (e.chan)
		ibv_destroy_comp_channel(e.chan);
	ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);
	close(e.fd);
	ok = ok && !e.c.mismatches && !e.c.bad && !srv.mismatches && !srv.bad;
	std::printf("%s\n", ok ? "PASS: integrity" : "FAIL: integrity");
	return ok ? 0 : 1;
}
