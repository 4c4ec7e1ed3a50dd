// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of the completion queue paths of one MetaRoCE device:
 *
 *   metaroce_cq_test --dev DEV --rings yes|no
 *
 * --rings says which path the provider must have taken: the CQ ring mapped
 * from the kernel (yes), or the POLL_CQ command (no: METAROCE_NO_RINGS=1,
 * or a module without the capability).  Completions come from an RC QP
 * moved to ERR: every receive or send posted to it completes at once with
 * IBV_WC_WR_FLUSH_ERR, so no peer is needed.  Checked:
 *   - the path: a CQ maps the uverbs device into the process iff rings;
 *   - completions in order with wr_id and qp_num through ibv_poll_cq in
 *     batches of 1..3, ten times round a 16-entry ring (index wrap);
 *   - the same through the extended API (ibv_create_cq_ex, ibv_start_poll);
 *   - arming: 200 rounds of ibv_req_notify_cq, a completion, the event on
 *     the channel, and the completion found by the poll after it; no event
 *     without an arm; an arm after the completion gets no event but the
 *     poll that follows it finds the completion (no lost completion);
 *   - overflow: more completions than a one-entry CQ holds give
 *     IBV_EVENT_CQ_ERR on the async fd, once;
 *   - rings only: a consumer index the process corrupts in its own mapping
 *     puts the CQ in error (IBV_EVENT_CQ_ERR) and nothing else happens
 *     (the caller checks dmesg).
 * Waits on file descriptors are bounded (30 s) so that a lost event fails
 * the test instead of hanging it.  Prints "FAIL: ..." lines and exits 1 on
 * any failed check.
 */
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <infiniband/verbs.h>
#include "check.h"
#include "verbs_util.h"

namespace {

int failures;
constexpr int wait_ms = 30000; /* a hang guard, not a timing check */

/* An RC QP in ERR on @cq: every post completes at once, flushed. */
struct err_qp {
	ibv_qp *qp = nullptr;

	err_qp(ibv_pd *pd, ibv_cq *cq)
	{
		ibv_qp_init_attr init = {};
		ibv_qp_attr attr = {};

		init.send_cq = cq;
		init.recv_cq = cq;
		init.qp_type = IBV_QPT_RC;
		init.cap.max_send_wr = 16;
		init.cap.max_recv_wr = 16;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		qp = ibv_create_qp(pd, &init);
		if (!qp) {
			std::printf("FAIL: ibv_create_qp: %s\n", std::strerror(errno));
			std::exit(1);
		}
		attr.qp_state = IBV_QPS_INIT;
		attr.port_num = 1;
		if (ibv_modify_qp(qp, &attr,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
			std::printf("FAIL: QP to INIT: %s\n", std::strerror(errno));
			std::exit(1);
		}
		attr.qp_state = IBV_QPS_ERR;
		if (ibv_modify_qp(qp, &attr, IBV_QP_STATE)) {
			std::printf("FAIL: QP to ERR: %s\n", std::strerror(errno));
			std::exit(1);
		}
	}
	~err_qp() { ibv_destroy_qp(qp); }

	/* One flushed receive completion with @wr_id; 0 or an errno. */
	int recv(uint64_t wr_id)
	{
		ibv_recv_wr wr = {}, *bad = nullptr;

		wr.wr_id = wr_id;
		return ibv_post_recv(qp, &wr, &bad);
	}
};

/* Wait until @fd is readable; false after wait_ms. */
bool wait_fd(int fd, int ms = wait_ms)
{
	pollfd p = {fd, POLLIN, 0};

	return poll(&p, 1, ms) == 1;
}

void check_path(ibv_context *ctx, bool rings)
{
	ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	size_t n;

	CHECK(cq, "ibv_create_cq: %s", std::strerror(errno));
	if (!cq)
		return;
	n = vu::uverbs_maps().size();
	CHECK(n == (rings ? 1u : 0u), "%zu uverbs mappings with one CQ, rings %s",
	      n, rings ? "yes" : "no");
	if (n != (rings ? 1u : 0u))
		std::system(("cat /proc/" + std::to_string(getpid()) + "/maps")
				    .c_str());
	CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
	n = vu::uverbs_maps().size();
	CHECK(n == 0, "%zu uverbs mappings after destroying the CQ", n);
}

/* Ten times round a 16-entry CQ, polled in batches of 1..3. */
void check_order(ibv_context *ctx, ibv_pd *pd)
{
	ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	uint64_t next = 0;
	ibv_wc wc[3];

	CHECK(cq, "ibv_create_cq: %s", std::strerror(errno));
	if (!cq)
		return;
	{
		err_qp q(pd, cq);

		for (int round = 0; round < 10; round++) {
			for (uint64_t i = 0; i < 16; i++)
				CHECK(!q.recv(round * 16 + i), "post_recv in ERR");
			for (int batch = 1; next < (round + 1) * 16u;
			     batch = batch % 3 + 1) {
				int n = ibv_poll_cq(cq, batch, wc);

				CHECK(n > 0 && n <= batch, "poll_cq(%d) = %d, %lu expected",
				      batch, n, (unsigned long)next);
				if (n <= 0)
					break;
				for (int k = 0; k < n; k++, next++) {
					CHECK(wc[k].wr_id == next, "wr_id %lu, %lu expected",
					      (unsigned long)wc[k].wr_id,
					      (unsigned long)next);
					CHECK(wc[k].status == IBV_WC_WR_FLUSH_ERR,
					      "status %d", wc[k].status);
					CHECK(wc[k].qp_num == q.qp->qp_num, "qp_num %u, %u",
					      wc[k].qp_num, q.qp->qp_num);
				}
			}
			CHECK(ibv_poll_cq(cq, 3, wc) == 0, "CQ not empty after round %d",
			      round);
		}
	}
	CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
}

void check_extended(ibv_context *ctx, ibv_pd *pd)
{
	ibv_cq_init_attr_ex attr = {};
	ibv_poll_cq_attr pattr = {};
	ibv_cq_ex *cq;
	uint64_t next = 0;
	int ret;

	attr.cqe = 8;
	attr.wc_flags = IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_BYTE_LEN;
	cq = ibv_create_cq_ex(ctx, &attr);
	CHECK(cq, "ibv_create_cq_ex: %s", std::strerror(errno));
	if (!cq)
		return;
	{
		err_qp q(pd, ibv_cq_ex_to_cq(cq));

		for (uint64_t i = 0; i < 6; i++)
			CHECK(!q.recv(100 + i), "post_recv in ERR");
		for (ret = ibv_start_poll(cq, &pattr); !ret;
		     ret = ibv_next_poll(cq), next++) {
			CHECK(cq->wr_id == 100 + next, "wr_id %lu",
			      (unsigned long)cq->wr_id);
			CHECK(cq->status == IBV_WC_WR_FLUSH_ERR, "status %d",
			      cq->status);
			CHECK(ibv_wc_read_qp_num(cq) == q.qp->qp_num, "qp_num");
		}
		if (next)
			ibv_end_poll(cq);
		CHECK(ret == ENOENT, "extended poll ended with %d", ret);
		CHECK(next == 6, "%lu completions through the extended API",
		      (unsigned long)next);
	}
	CHECK(!ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), "ibv_destroy_cq");
}

void check_events(ibv_context *ctx, ibv_pd *pd)
{
	ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	unsigned int events = 0;
	ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	ibv_wc wc;

	CHECK(ch, "ibv_create_comp_channel");
	if (!ch)
		return;
	cq = ibv_create_cq(ctx, 4, nullptr, ch, 0);
	CHECK(cq, "ibv_create_cq: %s", std::strerror(errno));
	if (!cq)
		return;
	{
		err_qp q(pd, cq);

		for (uint64_t i = 0; i < 200 && !failures; i++) {
			CHECK(!ibv_req_notify_cq(cq, 0), "arm");
			CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "CQ not empty");
			CHECK(!q.recv(i), "post_recv");
			if (!wait_fd(ch->fd)) {
				CHECK(false, "no event %lu within %d ms of an armed "
				      "completion", (unsigned long)i, wait_ms);
				break;
			}
			CHECK(!ibv_get_cq_event(ch, &ev_cq, &ev_ctx) && ev_cq == cq,
			      "ibv_get_cq_event");
			events++;
			CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == i,
			      "the completion after its event %lu", (unsigned long)i);
		}
		/* Not armed: a completion raises no event. */
		CHECK(!q.recv(1000), "post_recv");
		CHECK(!wait_fd(ch->fd, 0), "an event without an arm");
		/* Armed after the completion: no event, the poll finds it. */
		CHECK(!ibv_req_notify_cq(cq, 0), "arm");
		CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 1000,
		      "the completion published before the arm");
		CHECK(!wait_fd(ch->fd, 0), "an event for a completion before the arm");
		/* Still armed: the next completion raises it. */
		CHECK(!q.recv(1001), "post_recv");
		CHECK(wait_fd(ch->fd), "no event for the armed completion");
		if (!ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			events++;
		CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 1001, "1001");
	}
	ibv_ack_cq_events(cq, events);
	CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
	CHECK(!ibv_destroy_comp_channel(ch), "ibv_destroy_comp_channel");
}

/* Wait for one async event of @type on @cq; true if it came. */
bool async_cq_event(ibv_context *ctx, ibv_cq *cq, ibv_event_type type)
{
	ibv_async_event ev;

	if (!wait_fd(ctx->async_fd))
		return false;
	if (ibv_get_async_event(ctx, &ev))
		return false;
	bool ok = ev.event_type == type && ev.element.cq == cq;

	if (!ok)
		std::printf("async event %d (%s)\n", ev.event_type,
			    ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	return ok;
}

void check_overflow(ibv_context *ctx, ibv_pd *pd)
{
	ibv_cq *cq = ibv_create_cq(ctx, 1, nullptr, nullptr, 0);
	ibv_wc wc[8];
	int n;

	CHECK(cq, "ibv_create_cq: %s", std::strerror(errno));
	if (!cq)
		return;
	{
		err_qp q(pd, cq);

		/* The CQ holds cq->cqe; one more overflows it. */
		for (int i = 0; i <= cq->cqe + 2; i++)
			CHECK(!q.recv(i), "post_recv");
		CHECK(async_cq_event(ctx, cq, IBV_EVENT_CQ_ERR),
		      "no IBV_EVENT_CQ_ERR after overflowing a %d-entry CQ",
		      cq->cqe);
		CHECK(!wait_fd(ctx->async_fd, 0), "a second async event");
		n = ibv_poll_cq(cq, 8, wc);
		CHECK(n == cq->cqe, "%d completions kept of %d", n, cq->cqe);
	}
	CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
}

/* Rings only: the process writes an impossible consumer index. */
void check_corrupt(ibv_context *ctx, ibv_pd *pd)
{
	ibv_cq *cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
	unsigned long start = 0;
	std::vector<std::string> maps;

	CHECK(cq, "ibv_create_cq: %s", std::strerror(errno));
	if (!cq)
		return;
	maps = vu::uverbs_maps();
	CHECK(maps.size() == 1, "%zu uverbs mappings", maps.size());
	if (maps.size() == 1 &&
	    std::sscanf(maps[0].c_str(), "%lx-", &start) == 1) {
		/* struct metaroce_ring_hdr: the consumer index at byte 64. */
		auto *consumer = reinterpret_cast<volatile uint32_t *>(start + 64);
		err_qp q(pd, cq);

		*consumer = 0x80000000u;
		CHECK(!q.recv(1), "post_recv");
		CHECK(async_cq_event(ctx, cq, IBV_EVENT_CQ_ERR),
		      "no IBV_EVENT_CQ_ERR after corrupting the consumer index");
	}
	CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev = nullptr, *rings = nullptr;
	ibv_context *ctx;
	ibv_pd *pd;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!std::strcmp(argv[i], "--dev"))
			dev = argv[i + 1];
		else if (!std::strcmp(argv[i], "--rings"))
			rings = argv[i + 1];
	}
	if (!dev || !rings || (std::strcmp(rings, "yes") && std::strcmp(rings, "no"))) {
		std::fprintf(stderr, "usage: %s --dev DEV --rings yes|no\n", argv[0]);
		return 2;
	}
	bool want_rings = !std::strcmp(rings, "yes");

	ctx = open_by_name(dev);
	if (!ctx) {
		std::printf("FAIL: cannot open %s\n", dev);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		std::printf("FAIL: ibv_alloc_pd: %s\n", std::strerror(errno));
		return 1;
	}
	check_path(ctx, want_rings);
	check_order(ctx, pd);
	check_extended(ctx, pd);
	check_events(ctx, pd);
	check_overflow(ctx, pd);
	if (want_rings)
		check_corrupt(ctx, pd);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	std::printf("%s: rings %s: %s\n", argv[0], rings,
		    failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
