// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * metaroce_faults: the in-process parts of issue 10's fault campaigns
 * (tests/vm/t-kernel-faults.sh runs them and the faults around them).
 *
 * SYNOPSIS
 *   metaroce_faults traffic -a DEV_A -b DEV_B -g GID --ready FILE --gone none|a|b|both
 *                   [--until FILE2]
 *   metaroce_faults peer -d DEV -g GID [-p PORT] [HOST]
 *   metaroce_faults many-qps -a DEV_A -b DEV_B -g GID [-n PAIRS]
 *   metaroce_faults many-mrs -d DEV --kernel-mrs N
 *   metaroce_faults churn -d DEV -g GID --netns NS --ip A.B.C.D
 *                   [-t THREADS] [-n ITERATIONS] [-S SEED]
 *
 * traffic: an RC pair between DEV_A and DEV_B in this process moving
 *   verified SENDs both ways (each payload carries its sequence number and
 *   direction; the receiver checks every byte).  After 50 messages each
 *   way it writes "running" to FILE; the caller then removes the devices
 *   named by --gone ("rdma link delete", "modprobe -r"), or, with --gone
 *   none, cuts the path between them (netdev down, an MTU below the path
 *   MTU: each message is three 1024-byte packets).  Each removed device's
 *   context must get IBV_EVENT_DEVICE_FATAL and then refuse work
 *   (ibv_post_send fails), a surviving device's QP must fail with
 *   IBV_WC_RETRY_EXC_ERR (its peer vanished or cannot be reached), and
 *   destroying everything must succeed.  With --gone none --until FILE2
 *   the cut is temporary (a netdev down/up): once FILE2 exists, each QP
 *   must either deliver 20 more verified messages or have failed with
 *   IBV_WC_RETRY_EXC_ERR (a flap longer than the QP's retry budget,
 *   MR-LOSS-009 / MR-FAIL-007).  Every wait is bounded (30 s) so a lost
 *   event fails instead of hanging.
 * peer: the two-process form, for "kill -9" of either side.  The server
 *   (no HOST) and the client exchange QP numbers and GIDs over TCP PORT
 *   (default 18520) and send verified SENDs both ways without end,
 *   printing "running" once 50 arrived.  When the other process dies the
 *   side channel reaches EOF; the survivor must then see its QP fail with
 *   IBV_WC_RETRY_EXC_ERR (MR-FAIL-007) and prints how long after the EOF
 *   that came, with its retry_cnt and timeout.  Exit 0 only then.
 * many-qps: PAIRS (default 1000) RC pairs between DEV_A and DEV_B, all
 *   created and connected before any is used, then one SEND on each, every
 *   payload (its pair's index) checked at its receiver, then all destroyed.
 * many-mrs: register one-page MRs on DEV until the device's max_mr: the
 *   next registration must fail with ENOMEM, exactly max_mr - N MRs having
 *   succeeded (N: the DMA MRs of kernel consumers' PDs on DEV, given by the
 *   caller); after one deregistration one more succeeds; all are freed and
 *   a registration succeeds again.
 * churn: THREADS (default 4) threads each run ITERATIONS (default 200)
 *   rounds of: allocate a PD, create a CQ (sizes vary, so mapped rings
 *   vary), register an MR, create an RC QP brought to RTR towards a peer
 *   that does not exist and a UD QP brought to RTS, publish their numbers,
 *   then destroy the objects in a seeded random order.  Meanwhile a thread
 *   sends datagrams from netns NS to IP (DEV's address) at the numbers of
 *   each thread's latest QPs, alive or just destroyed: junk at UDP 4793, RoCEv2 RC and UD headers with junk at 4791.
 *   Checked: every create and destroy succeeds, DEV counted datagrams for
 *   live QPs (rx_bad_crc or rx_malformed grew: the race was exercised).
 *   The caller checks dmesg and that nothing is left.
 *
 * Prints "FAIL: ..." on a failed check, "PASS: MODE" and counts otherwise;
 * exit status 0 only without a failed check, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "check.h"
#include "verbs_util.h"

namespace {

int failures;
std::mutex print_lock;	/* CHECK() from several threads */

constexpr unsigned full_access = IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ;
/* Three packets at path MTU 1024: an MTU change below it stops them. */
constexpr uint32_t msg_len = 3000;
constexpr int window = 8;		/* sends in flight per QP */
constexpr int recv_depth = 32;
constexpr double bound_s = 30;		/* waits: only a hang bound */
constexpr uint64_t recv_tag = 1ull << 63;

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t)
{
	return std::chrono::duration<double>(clock_type::now() - t).count();
}

/* Payload byte I of message SEQ in direction DIR. */
uint8_t pattern(uint32_t dir, uint64_t seq, uint32_t i)
{
	return uint8_t((seq * 131 + i * 7 + dir * 59) ^ (seq >> 8));
}

/* One end of a verified SEND stream. */
struct endpoint {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;	/* window send slots, then recv slots */
	ibv_gid gid = {};
	uint32_t dir = 0;		/* which way this end sends */
	uint64_t sent = 0, completed = 0, received = 0, mismatches = 0;
	int inflight = 0;
	bool failed = false;		/* the QP reported an error */
	ibv_wc_status first_error = IBV_WC_SUCCESS;
	bool dead = false;		/* device removed: posting refused */
	int post_errno = 0;

	uint8_t *send_slot(uint64_t seq) { return &buf[(seq % window) * msg_len]; }
	uint8_t *recv_slot(uint32_t i)
	{
		return &buf[(window + i) * msg_len];
	}

	bool open(const char *name, int gid_idx)
	{
		ctx = vu::open_device(name);
		if (!ctx)
			return false;
		buf.assign((window + recv_depth) * msg_len, 0);
		pd = ibv_alloc_pd(ctx);
		cq = pd ? ibv_create_cq(ctx, 2 * (window + recv_depth), nullptr,
					nullptr, 0) :
			  nullptr;
		mr = pd ? ibv_reg_mr(pd, buf.data(), buf.size(), full_access) :
			  nullptr;
		qp = cq ? vu::create_rc(pd, cq, recv_depth) : nullptr;
		CHECK(pd && cq && mr && qp, "%s: setup: %s", name,
		      std::strerror(errno));
		CHECK(!ibv_query_gid(ctx, 1, gid_idx, &gid), "%s: query_gid", name);
		return pd && cq && mr && qp;
	}

	int post_recv(uint32_t i)
	{
		ibv_sge sge = {uint64_t(uintptr_t(recv_slot(i))), msg_len, mr->lkey};
		ibv_recv_wr wr = {}, *bad;

		wr.wr_id = recv_tag | i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		return ibv_post_recv(qp, &wr, &bad);
	}

	/* Post one SEND of the stream; 0 or an errno (kept in post_errno). */
	int post_one()
	{
		uint8_t *p = send_slot(sent);
		ibv_sge sge = {uint64_t(uintptr_t(p)), msg_len, mr->lkey};
		ibv_send_wr wr = {}, *bad;

		for (uint32_t i = 0; i < msg_len; i++)
			p[i] = pattern(dir, sent, i);
		wr.wr_id = sent;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		int err = ibv_post_send(qp, &wr, &bad);
		if (err) {
			post_errno = err;
			return err;
		}
		sent++;
		inflight++;
		return 0;
	}

	/* Post sends up to the window; false once posting is refused. */
	bool fill()
	{
		while (!failed && inflight < window)
			if (post_one())
				return false;
		return true;
	}

	/* Drain the CQ: check receives, count sends, note the first error. */
	void poll()
	{
		ibv_wc wc[16];
		int n = ibv_poll_cq(cq, 16, wc);

		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				if (!failed)
					first_error = wc[k].status;
				failed = true;
				if (!(wc[k].wr_id & recv_tag))
					inflight--;
				continue;
			}
			if (wc[k].wr_id & recv_tag) {
				uint32_t slot = uint32_t(wc[k].wr_id & 0xffff);
				const uint8_t *p = recv_slot(slot);
				bool ok = wc[k].byte_len == msg_len;

				for (uint32_t i = 0; ok && i < msg_len; i++)
					ok = p[i] == pattern(dir ^ 1, received, i);
				if (!ok)
					mismatches++;
				received++;
				if (post_recv(slot))
					failed = true;
			} else {
				completed++;
				inflight--;
			}
		}
	}

	void close()
	{
		/* After a removal the kernel objects are gone; destroy still succeeds. */
		if (qp)
			CHECK(!ibv_destroy_qp(qp), "destroy_qp: %s", std::strerror(errno));
		if (mr)
			CHECK(!ibv_dereg_mr(mr), "dereg_mr: %s", std::strerror(errno));
		if (cq)
			CHECK(!ibv_destroy_cq(cq), "destroy_cq: %s", std::strerror(errno));
		if (pd)
			CHECK(!ibv_dealloc_pd(pd), "dealloc_pd: %s", std::strerror(errno));
		if (ctx)
			CHECK(!ibv_close_device(ctx), "close_device");
		qp = nullptr;
		mr = nullptr;
		cq = nullptr;
		pd = nullptr;
		ctx = nullptr;
	}
};

/* Connect A to its peer, its receives posted in INIT. */
int connect_ends(endpoint &a, uint32_t a_psn, const ibv_gid &peer_gid,
		 uint32_t peer_qpn, uint32_t peer_psn, int gid_idx)
{
	int err = vu::to_init(a.qp, full_access);
	for (uint32_t i = 0; !err && i < recv_depth; i++)
		err = a.post_recv(i);
	err = err ?: vu::to_rtr(a.qp, peer_qpn, peer_psn, peer_gid, gid_idx);
	err = err ?: vu::to_rts(a.qp, a_psn);
	return err;
}

/* The next asynchronous event of CTX within SECONDS, or -1. */
int async_event(ibv_context *ctx, double seconds)
{
	pollfd pfd = {ctx->async_fd, POLLIN, 0};
	ibv_async_event ev;

	if (::poll(&pfd, 1, int(seconds * 1000)) != 1 ||
	    ibv_get_async_event(ctx, &ev))
		return -1;
	int type = ev.event_type;
	ibv_ack_async_event(&ev);
	return type;
}


void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* --------------------------------------------------------- traffic */

int run_traffic(const char *dev_a, const char *dev_b, int gid_idx,
		const char *ready, const std::string &gone, const char *until)
{
	constexpr uint64_t after_restore = 20;
	endpoint a, b;
	const bool gone_a = gone == "a" || gone == "both";
	const bool gone_b = gone == "b" || gone == "both";

	a.dir = 0;
	b.dir = 1;
	if (!a.open(dev_a, gid_idx) || !b.open(dev_b, gid_idx))
		return 2;
	int err = connect_ends(a, 0x10, b.gid, b.qp->qp_num, 0x20, gid_idx);
	err = err ?: connect_ends(b, 0x20, a.gid, a.qp->qp_num, 0x10, gid_idx);
	CHECK(!err, "connect: %s", std::strerror(err));
	if (err)
		return 1;
	set_nonblock(a.ctx->async_fd);
	set_nonblock(b.ctx->async_fd);

	bool announced = false;
	bool fatal_a = false, fatal_b = false;
	auto start = clock_type::now();
	auto removed = clock_type::time_point();
	auto restored = clock_type::time_point();
	uint64_t mark_a = 0, mark_b = 0;
	/* Until the removed devices said so and the survivor's QP failed. */
	for (;;) {
		for (endpoint *e : {&a, &b}) {
			if (!e->dead && !e->fill())
				e->dead = true;
			if (!e->dead)
				e->poll();
		}
		if (!announced && a.received >= 50 && b.received >= 50) {
			std::ofstream(ready) << "running\n";
			announced = true;
			std::printf("running: %llu/%llu messages verified\n",
				    (unsigned long long)a.received,
				    (unsigned long long)b.received);
			std::fflush(stdout);
		}
		pollfd pfd[2] = {{a.ctx->async_fd, POLLIN, 0},
				 {b.ctx->async_fd, POLLIN, 0}};
		if (::poll(pfd, 2, 0) > 0) {
			for (int k = 0; k < 2; k++) {
				if (!(pfd[k].revents & POLLIN))
					continue;
				ibv_context *ctx = k ? b.ctx : a.ctx;
				int type = async_event(ctx, 0);
				if (type < 0)
					continue;
				std::printf("%s: async event %s after %.2f s\n",
					    k ? dev_b : dev_a,
					    ibv_event_type_str(ibv_event_type(type)),
					    since(start));
				if (type == IBV_EVENT_DEVICE_FATAL) {
					(k ? fatal_b : fatal_a) = true;
					if (removed == clock_type::time_point())
						removed = clock_type::now();
				}
			}
		}
		if (until && announced && restored == clock_type::time_point() &&
		    !access(until, F_OK)) {
			restored = clock_type::now();
			mark_a = a.received;
			mark_b = b.received;
		}
		bool done = fatal_a == gone_a && fatal_b == gone_b &&
			    (gone_a || a.failed) && (gone_b || b.failed);
		if (until)
			done = restored != clock_type::time_point() &&
			       (a.failed || a.received >= mark_a + after_restore) &&
			       (b.failed || b.received >= mark_b + after_restore);
		if (announced && done)
			break;
		if (since(start) > 4 * bound_s ||
		    (removed != clock_type::time_point() && since(removed) > bound_s) ||
		    (restored != clock_type::time_point() && since(restored) > bound_s))
			break;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	CHECK(announced, "traffic never ran: %llu/%llu received, errors %s/%s",
	      (unsigned long long)a.received, (unsigned long long)b.received,
	      ibv_wc_status_str(a.first_error), ibv_wc_status_str(b.first_error));
	for (auto [e, name, g, fatal] :
	     {std::tuple{&a, dev_a, gone_a, fatal_a},
	      std::tuple{&b, dev_b, gone_b, fatal_b}}) {
		std::printf("%s: sent %llu completed %llu received %llu "
			    "mismatches %llu first_error %s post_errno %d\n",
			    name, (unsigned long long)e->sent,
			    (unsigned long long)e->completed,
			    (unsigned long long)e->received,
			    (unsigned long long)e->mismatches,
			    ibv_wc_status_str(e->first_error), e->post_errno);
		CHECK(!e->mismatches, "%s: %llu payloads differ", name,
		      (unsigned long long)e->mismatches);
		if (g) {
			CHECK(fatal, "%s: no IBV_EVENT_DEVICE_FATAL", name);
			/* The context no longer reaches the kernel. */
			ibv_pd *pd = ibv_alloc_pd(e->ctx);
			CHECK(!pd, "%s: ibv_alloc_pd succeeded after removal", name);
			if (pd)
				ibv_dealloc_pd(pd);
			CHECK(e->post_errno || e->post_one(),
			      "%s: ibv_post_send still succeeds", name);
		} else if (until) {
			uint64_t mark = e == &a ? mark_a : mark_b;

			/* Either outcome is clean; nothing else is. */
			CHECK(e->failed ? e->first_error == IBV_WC_RETRY_EXC_ERR :
					  e->received >= mark + after_restore,
			      "%s: after the path came back: %s, %llu more messages",
			      name, ibv_wc_status_str(e->first_error),
			      (unsigned long long)(e->received - mark));
			std::printf("%s: %s\n", name,
				    e->failed ? "failed cleanly (IBV_WC_RETRY_EXC_ERR)" :
						"survived the cut");
		} else {
			CHECK(!fatal, "%s: IBV_EVENT_DEVICE_FATAL, not removed", name);
			CHECK(e->first_error == IBV_WC_RETRY_EXC_ERR,
			      "%s: the survivor's QP ended with %s, not "
			      "IBV_WC_RETRY_EXC_ERR", name,
			      ibv_wc_status_str(e->first_error));
		}
	}
	a.close();
	b.close();
	if (!failures)
		std::printf("PASS: traffic (%s removed)\n", gone.c_str());
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ peer */

struct wire_info {
	uint32_t qpn, psn;
	ibv_gid gid;
};

int tcp_connect(const char *host, int port)
{
	addrinfo hints = {}, *res;
	int fd = -1;

	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, std::to_string(port).c_str(), &hints, &res))
		return -1;
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, res->ai_addr, res->ai_addrlen)) {
			::close(fd);
			fd = -1;
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
	}
	freeaddrinfo(res);
	return fd;
}

int tcp_accept(int port)
{
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;
	sockaddr_in sa = {};

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(uint16_t(port));
	if (bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) ||
	    listen(ls, 1))
		return -1;
	fd = accept(ls, nullptr, nullptr);
	::close(ls);
	return fd;
}

bool xfer(int fd, const wire_info &mine, wire_info &peer)
{
	return write(fd, &mine, sizeof(mine)) == ssize_t(sizeof(mine)) &&
	       read(fd, &peer, sizeof(peer)) == ssize_t(sizeof(peer));
}

int run_peer(const char *dev, int gid_idx, int port, const char *host)
{
	endpoint e;
	const uint8_t retry_cnt = 7, timeout = 14;	/* vu::to_rts() */

	e.dir = host ? 1 : 0;
	if (!e.open(dev, gid_idx))
		return 2;
	int fd = host ? tcp_connect(host, port) : tcp_accept(port);
	CHECK(fd >= 0, "side channel: %s", std::strerror(errno));
	if (fd < 0)
		return 2;
	wire_info mine = {e.qp->qp_num, host ? 0x200u : 0x100u, e.gid}, peer;
	if (!xfer(fd, mine, peer)) {
		CHECK(false, "exchange over the side channel failed");
		return 2;
	}
	int err = connect_ends(e, mine.psn, peer.gid, peer.qpn, peer.psn, gid_idx);
	/* Both sides' receives are posted before either sends. */
	char go = 'g';
	CHECK(!err, "connect: %s", std::strerror(err));
	if (err || write(fd, &go, 1) != 1 || read(fd, &go, 1) != 1)
		return 1;
	set_nonblock(fd);

	bool announced = false;
	auto start = clock_type::now(), eof = clock_type::time_point();
	while (!e.failed) {
		if (!e.fill())
			break;
		e.poll();
		if (!announced && e.received >= 50) {
			std::printf("running: %llu messages verified\n",
				    (unsigned long long)e.received);
			std::fflush(stdout);
			announced = true;
		}
		char c;
		if (eof == clock_type::time_point() && read(fd, &c, 1) == 0) {
			eof = clock_type::now();
			std::printf("peer gone (side channel EOF) after %llu "
				    "messages received\n",
				    (unsigned long long)e.received);
			std::fflush(stdout);
		}
		if (eof != clock_type::time_point() ? since(eof) > bound_s :
						      since(start) > 20 * bound_s)
			break;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	/* The error may be seen before the EOF is read. */
	for (auto t = clock_type::now();
	     eof == clock_type::time_point() && since(t) < bound_s;) {
		char c;
		if (read(fd, &c, 1) == 0)
			eof = clock_type::now();
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	double after = eof == clock_type::time_point() ? -1 : since(eof);
	std::printf("%s: sent %llu completed %llu received %llu mismatches %llu "
		    "first_error %s post_errno %d\n",
		    dev, (unsigned long long)e.sent,
		    (unsigned long long)e.completed, (unsigned long long)e.received,
		    (unsigned long long)e.mismatches,
		    ibv_wc_status_str(e.first_error), e.post_errno);
	CHECK(announced, "traffic never ran");
	CHECK(!e.mismatches, "%llu payloads differ",
	      (unsigned long long)e.mismatches);
	CHECK(eof != clock_type::time_point(), "the peer never went away");
	CHECK(e.first_error == IBV_WC_RETRY_EXC_ERR,
	      "the survivor's QP ended with %s, not IBV_WC_RETRY_EXC_ERR",
	      ibv_wc_status_str(e.first_error));
	/* (retry_cnt + 1) local ACK timeouts: the first term of MR-FAIL-007. */
	std::printf("survivor: %s %.3f s after the peer's exit "
		    "(retry_cnt %u timeout %u: (retry_cnt+1) x T = %.3f s)\n",
		    ibv_wc_status_str(e.first_error), after, retry_cnt, timeout,
		    (retry_cnt + 1) * 4.096e-6 * double(1u << timeout));
	e.close();
	::close(fd);
	if (!failures)
		std::printf("PASS: peer survivor\n");
	return failures ? 1 : 0;
}

/* -------------------------------------------------------- many-qps */

int run_many_qps(const char *dev_a, const char *dev_b, int gid_idx, int pairs)
{
	ibv_context *ca = vu::open_device(dev_a), *cb = vu::open_device(dev_b);
	if (!ca || !cb)
		return 2;
	ibv_pd *pa = ibv_alloc_pd(ca), *pb = ibv_alloc_pd(cb);
	ibv_cq *qa = ibv_create_cq(ca, pairs + 1, nullptr, nullptr, 0);
	ibv_cq *qb = ibv_create_cq(cb, pairs + 1, nullptr, nullptr, 0);
	std::vector<uint32_t> sbuf(pairs), rbuf(pairs, 0xffffffff);
	ibv_mr *ma = pa ? ibv_reg_mr(pa, sbuf.data(), sbuf.size() * 4, full_access) : nullptr;
	ibv_mr *mb = pb ? ibv_reg_mr(pb, rbuf.data(), rbuf.size() * 4, full_access) : nullptr;
	ibv_gid ga, gb;
	std::vector<ibv_qp *> va(pairs), vb(pairs);
	int created = 0, connected = 0, delivered = 0;
	auto start = clock_type::now();

	CHECK(pa && pb && qa && qb && ma && mb, "setup: %s", std::strerror(errno));
	if (!(pa && pb && qa && qb && ma && mb) || ibv_query_gid(ca, 1, gid_idx, &ga) ||
	    ibv_query_gid(cb, 1, gid_idx, &gb))
		return 2;
	for (int i = 0; i < pairs; i++) {
		va[i] = vu::create_rc(pa, qa, 2);
		vb[i] = vu::create_rc(pb, qb, 2);
		CHECK(va[i] && vb[i], "create_qp %d: %s", i, std::strerror(errno));
		if (!va[i] || !vb[i])
			break;
		created++;
	}
	for (int i = 0; i < created; i++) {
		uint32_t psn = uint32_t(i) * 16;
		int err = vu::to_init(va[i], full_access);
		err = err ?: vu::to_init(vb[i], full_access);
		err = err ?: vu::to_rtr(va[i], vb[i]->qp_num, psn + 1, gb, gid_idx);
		err = err ?: vu::to_rtr(vb[i], va[i]->qp_num, psn, ga, gid_idx);
		err = err ?: vu::to_rts(va[i], psn);
		err = err ?: vu::to_rts(vb[i], psn + 1);
		CHECK(!err, "connect pair %d: %s", i, std::strerror(err));
		if (err)
			break;
		connected++;
	}
	double t_setup = since(start);
	/* One receive and one SEND per pair, all posted before any is polled. */
	for (int i = 0; i < connected; i++) {
		ibv_sge rs = {uint64_t(uintptr_t(&rbuf[i])), 4, mb->lkey};
		ibv_recv_wr rw = {}, *rbad;
		rw.wr_id = uint64_t(i);
		rw.sg_list = &rs;
		rw.num_sge = 1;
		CHECK(!ibv_post_recv(vb[i], &rw, &rbad), "post_recv %d", i);
	}
	for (int i = 0; i < connected; i++) {
		sbuf[i] = 0x5a000000u | uint32_t(i);
		ibv_sge ss = {uint64_t(uintptr_t(&sbuf[i])), 4, ma->lkey};
		ibv_send_wr sw = {}, *sbad;
		sw.wr_id = uint64_t(i);
		sw.sg_list = &ss;
		sw.num_sge = 1;
		sw.opcode = IBV_WR_SEND;
		sw.send_flags = IBV_SEND_SIGNALED;
		CHECK(!ibv_post_send(va[i], &sw, &sbad), "post_send %d", i);
	}
	int sends = 0, recvs = 0, bad = 0;
	auto t0 = clock_type::now();
	while ((sends < connected || recvs < connected) && since(t0) < 4 * bound_s) {
		ibv_wc wc[32];
		for (ibv_cq *cq : {qa, qb}) {
			int n = ibv_poll_cq(cq, 32, wc);
			for (int k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS) {
					bad++;
					continue;
				}
				if (cq == qa) {
					sends++;
					continue;
				}
				recvs++;
				int i = int(wc[k].wr_id);
				uint32_t want = 0x5a000000u | uint32_t(i);
				CHECK(wc[k].qp_num == vb[i]->qp_num && rbuf[i] == want,
				      "pair %d: got %#x on QP %u", i, rbuf[i], wc[k].qp_num);
				if (wc[k].qp_num == vb[i]->qp_num && rbuf[i] == want)
					delivered++;
			}
		}
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	CHECK(!bad, "%d error completions", bad);
	CHECK(created == pairs && connected == pairs && delivered == pairs,
	      "pairs created %d connected %d delivered %d of %d", created,
	      connected, delivered, pairs);
	int destroyed = 0;
	for (int i = 0; i < created; i++) {
		destroyed += !ibv_destroy_qp(va[i]);
		destroyed += !ibv_destroy_qp(vb[i]);
	}
	CHECK(destroyed == 2 * created, "%d of %d QPs destroyed", destroyed,
	      2 * created);
	CHECK(!ibv_dereg_mr(ma) && !ibv_dereg_mr(mb), "dereg_mr");
	CHECK(!ibv_destroy_cq(qa) && !ibv_destroy_cq(qb), "destroy_cq");
	CHECK(!ibv_dealloc_pd(pa) && !ibv_dealloc_pd(pb), "dealloc_pd");
	ibv_close_device(ca);
	ibv_close_device(cb);
	std::printf("many-qps: %d QPs created (%d pairs), %d messages verified; "
		    "setup %.1f s, total %.1f s\n",
		    2 * created, created, delivered, t_setup, since(start));
	if (!failures)
		std::printf("PASS: many-qps\n");
	return failures ? 1 : 0;
}

/* -------------------------------------------------------- many-mrs */

int run_many_mrs(const char *dev, int kernel_mrs)
{
	ibv_context *ctx = vu::open_device(dev);
	if (!ctx)
		return 2;
	ibv_device_attr attr;
	ibv_pd *pd = ibv_alloc_pd(ctx);
	const size_t page = size_t(sysconf(_SC_PAGESIZE)), pages = 64;
	std::vector<ibv_mr *> mrs;
	auto start = clock_type::now();
	void *mem = nullptr;

	CHECK(pd && !ibv_query_device(ctx, &attr) &&
		      !posix_memalign(&mem, page, page * pages),
	      "setup: %s", std::strerror(errno));
	if (!pd || !mem)
		return 2;
	const int want = attr.max_mr - kernel_mrs;
	int err = 0;
	mrs.reserve(size_t(attr.max_mr) + 1);
	/* One page each, spread over PAGES pages (pins of one page add up). */
	for (;;) {
		char *p = static_cast<char *>(mem) + (mrs.size() % pages) * page;
		ibv_mr *mr = ibv_reg_mr(pd, p, page, IBV_ACCESS_LOCAL_WRITE |
						     IBV_ACCESS_REMOTE_WRITE);
		if (!mr) {
			err = errno;
			break;
		}
		mrs.push_back(mr);
		if (int(mrs.size()) > attr.max_mr)
			break;
	}
	double t_reg = since(start);
	std::printf("many-mrs: %zu MRs registered (max_mr %d, %d of kernel PDs), "
		    "then %s, in %.1f s\n",
		    mrs.size(), attr.max_mr, kernel_mrs, std::strerror(err), t_reg);
	CHECK(int(mrs.size()) == want, "%zu MRs registered, expected %d",
	      mrs.size(), want);
	CHECK(err == ENOMEM, "registration past max_mr: %s, expected ENOMEM",
	      std::strerror(err));
	/* The limit is a count: one freed, one more fits, and no more. */
	if (!mrs.empty()) {
		CHECK(!ibv_dereg_mr(mrs.back()), "dereg_mr");
		mrs.pop_back();
		ibv_mr *mr = ibv_reg_mr(pd, mem, page, IBV_ACCESS_LOCAL_WRITE);
		CHECK(mr, "reg_mr after one dereg_mr: %s", std::strerror(errno));
		if (mr)
			mrs.push_back(mr);
		mr = ibv_reg_mr(pd, mem, page, IBV_ACCESS_LOCAL_WRITE);
		CHECK(!mr && errno == ENOMEM, "reg_mr at max_mr again: %s",
		      mr ? "succeeded" : std::strerror(errno));
		if (mr)
			mrs.push_back(mr);
	}
	size_t freed = 0;
	for (ibv_mr *mr : mrs)
		freed += !ibv_dereg_mr(mr);
	CHECK(freed == mrs.size(), "%zu of %zu MRs deregistered", freed, mrs.size());
	ibv_mr *mr = ibv_reg_mr(pd, mem, page * pages, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr after freeing all: %s", std::strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	CHECK(!ibv_dealloc_pd(pd), "dealloc_pd");
	ibv_close_device(ctx);
	free(mem);
	std::printf("many-mrs: %zu freed, total %.1f s\n", freed, since(start));
	if (!failures)
		std::printf("PASS: many-mrs\n");
	return failures ? 1 : 0;
}

/* ----------------------------------------------------------- churn */

constexpr int slots = 64;		/* published QPNs: two per thread */

struct churn_state {
	std::array<std::atomic<uint32_t>, slots> qpns{};
	std::atomic<bool> stop{false};
	std::atomic<long> created{0}, destroyed{0}, datagrams{0};
};

void churn_thread(ibv_context *ctx, int gid_idx, const ibv_gid &peer_gid,
		  int iterations, uint64_t seed, churn_state &st, int id)
{
	std::mt19937_64 rng(seed);
	std::vector<uint8_t> mem(8192);
	auto fail = [&](const char *what, int it) {
		std::lock_guard<std::mutex> g(print_lock);
		CHECK(false, "thread %d iteration %d: %s: %s", id, it, what,
		      std::strerror(errno));
	};

	for (int it = 0; it < iterations; it++) {
		ibv_pd *pd = ibv_alloc_pd(ctx);
		if (!pd) {
			fail("alloc_pd", it);
			return;
		}
		ibv_cq *cq = ibv_create_cq(ctx, 1 + int(rng() % 300), nullptr,
					   nullptr, 0);
		ibv_mr *mr = ibv_reg_mr(pd, mem.data() + rng() % 4096, 1 + rng() % 4096,
					full_access);
		ibv_qp *rc = cq ? vu::create_rc(pd, cq, 1 + uint32_t(rng() % 64)) :
				  nullptr;
		ibv_qp_init_attr ia = {};
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_UD;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		ibv_qp *ud = cq ? ibv_create_qp(pd, &ia) : nullptr;
		if (!cq || !mr || !rc || !ud) {
			fail(!cq ? "create_cq" : !mr ? "reg_mr" : !rc ? "create_qp RC" :
			     "create_qp UD", it);
			break;
		}
		st.created += 5;
		/* RC to RTR towards a peer that does not exist: it takes packets. */
		int err = vu::to_init(rc, full_access);
		err = err ?: vu::to_rtr(rc, 0xfffffe, uint32_t(rng()) & 0xffffff,
					peer_gid, gid_idx);
		ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = 0x11111111;
		err = err ?: ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
							   IBV_QP_PORT | IBV_QP_QKEY);
		a.qp_state = IBV_QPS_RTR;
		err = err ?: ibv_modify_qp(ud, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		err = err ?: ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (err) {
			errno = err;
			fail("modify_qp", it);
		}
		/*
		 * The blaster aims at the QPs of this round (and, once they are
		 * destroyed, at their stale numbers); a short pause lets some
		 * of its datagrams find them alive.
		 */
		st.qpns[2 * id] = rc->qp_num;
		st.qpns[2 * id + 1] = ud->qp_num;
		std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
		/* Destroy in a random order the verbs allow. */
		std::array<int, 3> order = {0, 1, 2};	/* rc, ud, mr */
		std::shuffle(order.begin(), order.end(), rng);
		for (int o : order) {
			int r = o == 0 ? ibv_destroy_qp(rc) :
				o == 1 ? ibv_destroy_qp(ud) : ibv_dereg_mr(mr);
			if (r) {
				errno = r;
				fail(o == 2 ? "dereg_mr" : "destroy_qp", it);
			}
		}
		if (ibv_destroy_cq(cq))
			fail("destroy_cq", it);
		if (ibv_dealloc_pd(pd))
			fail("dealloc_pd", it);
		st.destroyed += 5;
	}
}

/* Datagrams at the published QPNs until told to stop. */
void blast_thread(int fd, uint32_t ip_be, uint64_t seed, churn_state &st)
{
	std::mt19937_64 rng(seed);
	sockaddr_in to = {};
	uint8_t p[256];
	long sent = 0;

	to.sin_family = AF_INET;
	to.sin_addr.s_addr = ip_be;
	while (!st.stop) {
		uint32_t qpn = st.qpns[rng() % slots];

		if (!qpn) {		/* a slot no thread uses */
			std::this_thread::yield();
			continue;
		}
		size_t len = 16 + rng() % 200;
		int kind = int(rng() % 3);

		for (size_t i = 0; i < len; i++)
			p[i] = uint8_t(rng());
		/* Both wire formats carry the destination QPN in bytes 4..7. */
		p[4] = 0;
		p[5] = uint8_t(qpn >> 16);
		p[6] = uint8_t(qpn >> 8);
		p[7] = uint8_t(qpn);
		if (kind == 1)
			p[0] = 0x04;		/* RC SEND_ONLY: RoCEv2 RC path */
		else if (kind == 2)
			p[0] = 0x64;		/* UD SEND_ONLY */
		to.sin_port = htons(kind == 0 ? 4793 : 4791);
		if (sendto(fd, p, len, 0, reinterpret_cast<sockaddr *>(&to),
			   sizeof(to)) == ssize_t(len))
			sent++;
		/* At most ~16k datagrams/s: the churn threads need the CPUs. */
		if (sent % 16 == 0)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	st.datagrams = sent;
}

int run_churn(const char *dev, int gid_idx, const char *netns, const char *ip,
	      int threads, int iterations, uint64_t seed)
{
	ibv_context *ctx = vu::open_device(dev);
	in_addr addr;
	if (!ctx || inet_pton(AF_INET, ip, &addr) != 1)
		return 2;
	int fd = vu::netns_socket(netns);
	if (fd < 0)
		return 2;
	/* The fake RC peer: an address on the other side that has no such QP. */
	ibv_gid peer_gid = vu::ipv4_gid(addr.s_addr ^ htonl(3));
	const char *counters[] = {"rx_bad_crc", "rx_malformed", "rx_no_qp"};
	long long before[3], after[3];
	for (int i = 0; i < 3; i++)
		before[i] = vu::counter(dev, counters[i]);

	churn_state st;
	auto start = clock_type::now();
	std::thread blaster(blast_thread, fd, addr.s_addr, seed ^ 0xb1a57, std::ref(st));
	std::vector<std::thread> workers;
	for (int t = 0; t < threads; t++)
		workers.emplace_back(churn_thread, ctx, gid_idx, std::cref(peer_gid),
				     iterations, seed * 1000 + uint64_t(t), std::ref(st), t);
	for (auto &w : workers)
		w.join();
	st.stop = true;
	blaster.join();
	double secs = since(start);
	::close(fd);
	for (int i = 0; i < 3; i++) {
		after[i] = vu::counter(dev, counters[i]);
		std::printf("counter %s %lld -> %lld\n", counters[i], before[i], after[i]);
	}
	std::printf("churn: %d threads x %d iterations: %ld objects created, "
		    "%ld destroyed, %ld datagrams at their QPNs, %.1f s\n",
		    threads, iterations, st.created.load(), st.destroyed.load(),
		    st.datagrams.load(), secs);
	CHECK(st.created == long(threads) * iterations * 5 &&
		      st.destroyed == st.created,
	      "created %ld destroyed %ld", st.created.load(), st.destroyed.load());
	/* Some datagrams met a live QP, so the lookup/destroy race ran. */
	CHECK(after[0] + after[1] > before[0] + before[1],
	      "no datagram reached a live QP (rx_bad_crc/rx_malformed unchanged)");
	CHECK(!ibv_close_device(ctx), "close_device");
	if (!failures)
		std::printf("PASS: churn\n");
	return failures ? 1 : 0;
}

int usage(const char *argv0)
{
	std::fprintf(stderr,
		     "usage: %s traffic|peer|many-qps|many-mrs|churn [OPTIONS] [HOST]\n"
		     "(see the top of metaroce_faults.cpp)\n",
		     argv0);
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	static const option opts[] = {
		{"dev-a", required_argument, nullptr, 'a'},
		{"dev-b", required_argument, nullptr, 'b'},
		{"ib-dev", required_argument, nullptr, 'd'},
		{"gid-idx", required_argument, nullptr, 'g'},
		{"port", required_argument, nullptr, 'p'},
		{"count", required_argument, nullptr, 'n'},
		{"threads", required_argument, nullptr, 't'},
		{"seed", required_argument, nullptr, 'S'},
		{"ready", required_argument, nullptr, 'r'},
		{"gone", required_argument, nullptr, 'G'},
		{"until", required_argument, nullptr, 'U'},
		{"netns", required_argument, nullptr, 'N'},
		{"ip", required_argument, nullptr, 'I'},
		{"kernel-mrs", required_argument, nullptr, 'K'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	const char *a = nullptr, *b = nullptr, *d = nullptr, *ready = nullptr,
		   *netns = "", *ip = nullptr, *until = nullptr;
	std::string gone;
	int gid = 0, port = 18520, count = -1, threads = 4, kernel_mrs = -1, c;
	uint64_t seed = 1;

	if (argc < 2)
		return usage(argv[0]);
	const std::string mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "a:b:d:g:p:n:t:S:h", opts, nullptr)) != -1) {
		switch (c) {
		case 'a': a = optarg; break;
		case 'b': b = optarg; break;
		case 'd': d = optarg; break;
		case 'g': gid = std::atoi(optarg); break;
		case 'p': port = std::atoi(optarg); break;
		case 'n': count = std::atoi(optarg); break;
		case 't': threads = std::atoi(optarg); break;
		case 'S': seed = std::strtoull(optarg, nullptr, 0); break;
		case 'r': ready = optarg; break;
		case 'G': gone = optarg; break;
		case 'U': until = optarg; break;
		case 'N': netns = optarg; break;
		case 'I': ip = optarg; break;
		case 'K': kernel_mrs = std::atoi(optarg); break;
		default: return usage(argv[0]);
		}
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (mode == "traffic" && a && b && ready &&
	    (gone == "none" || gone == "a" || gone == "b" || gone == "both"))
		return run_traffic(a, b, gid, ready, gone, gone == "none" ? until : nullptr);
	if (mode == "peer" && d)
		return run_peer(d, gid, port, optind < argc ? argv[optind] : nullptr);
	if (mode == "many-qps" && a && b)
		return run_many_qps(a, b, gid, count > 0 ? count : 1000);
	if (mode == "many-mrs" && d && kernel_mrs >= 0)
		return run_many_mrs(d, kernel_mrs);
	if (mode == "churn" && d && ip && threads > 0 && 2 * threads <= 64)
		return run_churn(d, gid, netns, ip, threads, count > 0 ? count : 200,
				 seed);
	return usage(argv[0]);
}
