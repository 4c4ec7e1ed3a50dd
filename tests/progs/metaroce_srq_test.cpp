// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of shared receive queues on two MetaRoCE devices (one process
 * opens both; each device sends from its own netdev's namespace):
 *
 *   metaroce_srq_test --rx DEV --tx DEV --gid IDX
 *
 * DEV --rx has one SRQ and two RC QPs attached to it; DEV --tx has two RC
 * QPs with receive queues of their own, connected to them.  Checked:
 *   - bad attributes: create_srq with max_wr 0, max_wr > max_srq_wr,
 *     max_sge > max_srq_sge; modify_srq with srq_limit > max_wr or a resize
 *     (IBV_SRQ_MAX_WR); post_srq_recv with too many SGEs; ibv_post_recv on
 *     an SRQ-attached QP; more receives than the SRQ holds (ENOMEM);
 *     destroy_srq with QPs attached (EBUSY);
 *   - SENDs of 1 B .. 3 MTUs over two SGEs, on both QPs, land in the SRQ's
 *     buffers intact, completions name the receiving QP;
 *   - IBV_EVENT_SRQ_LIMIT_REACHED (ibv_get_async_event): none before any
 *     traffic; it has arrived at the latest when the SRQ can hold fewer
 *     WQEs than the limit (posted - received < limit); exactly once, after
 *     which query_srq reads srq_limit 0; re-armed, it comes again;
 *   - a QP moved to ERR gets IBV_EVENT_QP_LAST_WQE_REACHED, no flushed
 *     completion of an SRQ WQE appears, and the other QP still receives
 *     into every WQE posted to the SRQ (those the errored QP held too).
 * Prints "FAIL: ..." lines and exits 1 on any failed check.
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <vector>

#include <fcntl.h>
#include <infiniband/verbs.h>
#include "check.h"
#include "open_device.h"
#include "verbs_util.h"

namespace {

int failures;

constexpr uint32_t srq_wr = 64;
constexpr uint32_t slot_len = 3 * 4096;	/* > MTU: several packets */
constexpr int nqp = 2;

struct side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_srq *srq = nullptr;
	ibv_qp *qp[nqp] = {};
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;
	ibv_gid gid = {};
	ibv_mtu mtu = IBV_MTU_1024;
};

uint8_t *slot(side &s, uint32_t i)
{
	return s.buf.data() + size_t(i) * slot_len;
}

bool setup(side &s, const std::string &dev, int gid_idx, bool with_srq)
{
	ibv_port_attr port = {};

	s.ctx = open_by_name(dev);
	CHECK(s.ctx, "open %s: %s", dev.c_str(), std::strerror(errno));
	if (!s.ctx)
		return false;
	CHECK(ibv_query_port(s.ctx, 1, &port) == 0, "query_port");
	CHECK(ibv_query_gid(s.ctx, 1, gid_idx, &s.gid) == 0, "query_gid");
	s.mtu = port.active_mtu;
	s.buf.assign(size_t(2 * srq_wr) * slot_len, 0);
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 4 * srq_wr, nullptr, nullptr, 0);
	CHECK(s.pd && s.cq, "pd/cq: %s", std::strerror(errno));
	if (!s.pd || !s.cq)
		return false;
	s.mr = ibv_reg_mr(s.pd, s.buf.data(), s.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE);
	CHECK(s.mr, "reg_mr: %s", std::strerror(errno));
	if (with_srq) {
		ibv_srq_init_attr sa = {};

		sa.attr.max_wr = srq_wr;
		sa.attr.max_sge = 2;
		s.srq = ibv_create_srq(s.pd, &sa);
		CHECK(s.srq, "create_srq: %s", std::strerror(errno));
		if (!s.srq)
			return false;
	}
	for (auto &qp : s.qp) {
		ibv_qp_init_attr init = {};

		init.send_cq = s.cq;
		init.recv_cq = s.cq;
		init.srq = s.srq;
		init.cap.max_send_wr = srq_wr;
		init.cap.max_recv_wr = srq_wr;
		init.cap.max_send_sge = 2;
		init.cap.max_recv_sge = 1;
		init.qp_type = IBV_QPT_RC;
		init.sq_sig_all = 1;
		qp = ibv_create_qp(s.pd, &init);
		CHECK(qp, "create_qp: %s", std::strerror(errno));
		if (!qp)
			return false;
		ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						IBV_QP_PORT |
						IBV_QP_ACCESS_FLAGS) == 0,
		      "INIT");
	}
	return s.mr != nullptr;
}

void connect(side &s, ibv_qp *qp, const side &peer, ibv_qp *peer_qp,
	     int gid_idx)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = s.mtu < peer.mtu ? s.mtu : peer.mtu;
	a.dest_qp_num = peer_qp->qp_num;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.gid;
	a.ah_attr.grh.sgid_index = gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER) == 0,
	      "RTR: %s", std::strerror(errno));
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;	/* infinite: an empty SRQ only delays */
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC) == 0,
	      "RTS: %s", std::strerror(errno));
}

/* Post SRQ receive for slot @i over two SGEs; returns the errno. */
int post_srq(side &s, uint32_t i)
{
	uint32_t first = 1000;
	ibv_sge sge[2] = {
		{(uintptr_t)slot(s, i), first, s.mr->lkey},
		{(uintptr_t)slot(s, i) + first, slot_len - first, s.mr->lkey},
	};
	ibv_recv_wr wr = {}, *bad = nullptr;

	std::memset(slot(s, i), 0xee, slot_len);
	wr.wr_id = i;
	wr.sg_list = sge;
	wr.num_sge = 2;
	return ibv_post_srq_recv(s.srq, &wr, &bad);
}

uint8_t pattern(uint32_t seq, uint32_t i)
{
	return uint8_t(seq * 131 + i * 7 + (i >> 8));
}

uint32_t msg_len(uint32_t seq)
{
	static const uint32_t sizes[] = {1, 64, 1000, 1001, 4096, 5000,
					 slot_len};
	return sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
}

/*
 * SEND message @seq on tx QP @q (a two-SGE gather) and check its receive
 * on the rx side: byte_len, the receiving QP, the bytes.  Returns false
 * if a completion is missing or failed.
 */
bool send_one(side &tx, side &rx, int q, uint32_t seq)
{
	uint32_t len = msg_len(seq), half = len / 2;
	uint8_t *p = tx.buf.data() + (seq % srq_wr) * slot_len;
	ibv_sge sge[2] = {{(uintptr_t)p, half, tx.mr->lkey},
			  {(uintptr_t)p + half, len - half, tx.mr->lkey}};
	ibv_send_wr wr = {}, *bad = nullptr;
	ibv_wc wc = {};

	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern(seq, i);
	wr.wr_id = seq;
	wr.sg_list = sge;
	wr.num_sge = 2;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(tx.qp[q], &wr, &bad) == 0, "post_send %u", seq);
	if (vu::poll_one(tx.cq, wc) != 1) {
		CHECK(false, "no send completion of message %u", seq);
		return false;
	}
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == seq,
	      "send %u: status %s wr_id %lu", seq,
	      ibv_wc_status_str(wc.status), (unsigned long)wc.wr_id);
	if (vu::poll_one(rx.cq, wc) != 1) {
		CHECK(false, "no receive completion of message %u", seq);
		return false;
	}
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		      wc.byte_len == len && wc.qp_num == rx.qp[q]->qp_num &&
		      wc.wr_id < 2 * srq_wr,
	      "recv %u: status %s opcode %d byte_len %u (want %u) qp %u "
	      "(want %u) wr_id %lu",
	      seq, ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len, len,
	      wc.qp_num, rx.qp[q]->qp_num, (unsigned long)wc.wr_id);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= 2 * srq_wr)
		return false;
	const uint8_t *r = slot(rx, uint32_t(wc.wr_id));
	uint32_t bad_at = len;
	for (uint32_t i = 0; i < len && bad_at == len; i++)
		if (r[i] != pattern(seq, i))
			bad_at = i;
	CHECK(bad_at == len, "message %u (%u B): byte %u differs", seq, len,
	      bad_at);
	CHECK(len == slot_len || r[len] == 0xee,
	      "message %u wrote past its %u bytes", seq, len);
	return true;
}

/* The next async event of @ctx, if one comes within @ms (0: just look). */
bool async_event(ibv_context *ctx, int ms, ibv_async_event &ev)
{
	pollfd pfd = {ctx->async_fd, POLLIN, 0};

	if (poll(&pfd, 1, ms) != 1)
		return false;
	if (ibv_get_async_event(ctx, &ev))
		return false;
	ibv_ack_async_event(&ev);
	return true;
}

uint32_t srq_limit(ibv_srq *srq)
{
	ibv_srq_attr a = {};

	CHECK(ibv_query_srq(srq, &a) == 0, "query_srq");
	return a.srq_limit;
}

void check_bad_attrs(side &rx)
{
	ibv_device_attr dev = {};
	ibv_srq_init_attr sa = {};
	ibv_srq_attr a = {};

	CHECK(ibv_query_device(rx.ctx, &dev) == 0 && dev.max_srq > 0 &&
		      dev.max_srq_wr >= int(srq_wr) && dev.max_srq_sge >= 2,
	      "query_device: max_srq %d max_srq_wr %d max_srq_sge %d",
	      dev.max_srq, dev.max_srq_wr, dev.max_srq_sge);
	struct {
		uint32_t max_wr, max_sge;
	} bad[] = {{0, 1},
		   {uint32_t(dev.max_srq_wr) + 1, 1},
		   {16, uint32_t(dev.max_srq_sge) + 1}};
	for (auto &b : bad) {
		sa.attr.max_wr = b.max_wr;
		sa.attr.max_sge = b.max_sge;
		errno = 0;
		ibv_srq *srq = ibv_create_srq(rx.pd, &sa);
		CHECK(!srq && errno == EINVAL,
		      "create_srq max_wr %u max_sge %u: %s", b.max_wr,
		      b.max_sge, std::strerror(errno));
		if (srq)
			ibv_destroy_srq(srq);
	}

	CHECK(ibv_query_srq(rx.srq, &a) == 0 && a.max_wr >= srq_wr &&
		      a.max_sge >= 2 && a.srq_limit == 0,
	      "query_srq: max_wr %u max_sge %u limit %u", a.max_wr, a.max_sge,
	      a.srq_limit);
	ibv_srq_attr m = {};
	m.srq_limit = a.max_wr + 1;
	CHECK(ibv_modify_srq(rx.srq, &m, IBV_SRQ_LIMIT) == EINVAL,
	      "modify_srq limit > max_wr");
	m.max_wr = 2 * a.max_wr;
	CHECK(ibv_modify_srq(rx.srq, &m, IBV_SRQ_MAX_WR) == EINVAL,
	      "modify_srq resize");

	ibv_sge sge[3] = {};
	ibv_recv_wr wr = {}, *badwr = nullptr;
	for (auto &s : sge)
		s = {(uintptr_t)slot(rx, 0), 16, rx.mr->lkey};
	wr.sg_list = sge;
	wr.num_sge = int(a.max_sge) + 1 <= 3 ? int(a.max_sge) + 1 : 3;
	if (int(a.max_sge) + 1 <= 3)
		CHECK(ibv_post_srq_recv(rx.srq, &wr, &badwr) == EINVAL &&
			      badwr == &wr,
		      "post_srq_recv with %d SGEs", wr.num_sge);
	wr.num_sge = 1;
	badwr = nullptr;
	CHECK(ibv_post_recv(rx.qp[0], &wr, &badwr) != 0 && badwr == &wr,
	      "post_recv on an SRQ-attached QP succeeded");
}

} // namespace

int main(int argc, char **argv)
{
	std::string rx_dev, tx_dev;
	int gid_idx = -1;

	for (int i = 1; i + 1 < argc; i += 2) {
		std::string opt = argv[i];

		if (opt == "--rx")
			rx_dev = argv[i + 1];
		else if (opt == "--tx")
			tx_dev = argv[i + 1];
		else if (opt == "--gid")
			gid_idx = std::atoi(argv[i + 1]);
	}
	if (rx_dev.empty() || tx_dev.empty() || gid_idx < 0) {
		std::fprintf(stderr,
			     "usage: %s --rx DEV --tx DEV --gid IDX\n", argv[0]);
		return 2;
	}

	side rx, tx;
	if (!setup(rx, rx_dev, gid_idx, true) ||
	    !setup(tx, tx_dev, gid_idx, false)) {
		std::printf("FAIL: setup\n");
		return 1;
	}
	check_bad_attrs(rx);
	/* Non-blocking: async_event() polls the descriptor itself. */
	fcntl(rx.ctx->async_fd, F_SETFL,
	      fcntl(rx.ctx->async_fd, F_GETFL) | O_NONBLOCK);

	ibv_srq_attr sa = {};
	CHECK(ibv_query_srq(rx.srq, &sa) == 0, "query_srq");
	const uint32_t cap = sa.max_wr;
	uint32_t posted = 0, received = 0, seq = 0;
	while (posted < cap && posted < 2 * srq_wr) {
		CHECK(post_srq(rx, posted) == 0, "post_srq_recv %u", posted);
		posted++;
	}
	if (cap < 2 * srq_wr) {
		ibv_sge sge = {(uintptr_t)slot(rx, 0), 16, rx.mr->lkey};
		ibv_recv_wr wr = {}, *badwr = nullptr;

		wr.sg_list = &sge;
		wr.num_sge = 1;
		CHECK(ibv_post_srq_recv(rx.srq, &wr, &badwr) == ENOMEM,
		      "post_srq_recv beyond max_wr %u", cap);
	}

	/* Armed before any traffic: no event while nothing is taken. */
	const uint32_t limit = posted / 2;
	ibv_srq_attr m = {};
	m.srq_limit = limit;
	CHECK(ibv_modify_srq(rx.srq, &m, IBV_SRQ_LIMIT) == 0, "arm limit");
	CHECK(srq_limit(rx.srq) == limit, "srq_limit reads %u, armed %u",
	      srq_limit(rx.srq), limit);
	ibv_async_event ev = {};
	CHECK(!async_event(rx.ctx, 100, ev), "event %s before any traffic",
	      ibv_event_type_str(ev.event_type));

	for (int q = 0; q < nqp; q++) {
		connect(rx, rx.qp[q], tx, tx.qp[q], gid_idx);
		connect(tx, tx.qp[q], rx, rx.qp[q], gid_idx);
	}

	/* Phase 1: receive until the SRQ cannot hold `limit` any more. */
	int limit_events = 0;
	while (failures == 0 && posted - received >= limit) {
		if (async_event(rx.ctx, 0, ev)) {
			CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
				      ev.element.srq == rx.srq,
			      "unexpected event %s",
			      ibv_event_type_str(ev.event_type));
			limit_events++;
		}
		if (!send_one(tx, rx, int(seq % nqp), seq))
			break;
		seq++;
		received++;
	}
	/* posted - received < limit: the SRQ itself holds fewer. */
	while (async_event(rx.ctx, limit_events ? 0 : 2000, ev)) {
		CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
			      ev.element.srq == rx.srq,
		      "unexpected event %s", ibv_event_type_str(ev.event_type));
		limit_events++;
	}
	CHECK(limit_events == 1,
	      "%d SRQ limit events for limit %u after %u of %u receives",
	      limit_events, limit, received, posted);
	CHECK(srq_limit(rx.srq) == 0, "srq_limit not disarmed: %u",
	      srq_limit(rx.srq));
	std::printf("limit %u: event after at most %u of %u receives\n", limit,
		    received, posted);

	/* Phase 2: refill, re-arm, the event comes again. */
	uint32_t refill = received;
	for (uint32_t i = 0; i < refill; i++)
		CHECK(post_srq(rx, (posted + i) % (2 * srq_wr)) == 0,
		      "repost %u", i);
	posted += refill;
	CHECK(ibv_modify_srq(rx.srq, &m, IBV_SRQ_LIMIT) == 0, "re-arm");
	limit_events = 0;
	while (failures == 0 && posted - received >= limit) {
		if (!send_one(tx, rx, int(seq % nqp), seq))
			break;
		seq++;
		received++;
	}
	while (async_event(rx.ctx, limit_events ? 0 : 2000, ev)) {
		CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED,
		      "unexpected event %s", ibv_event_type_str(ev.event_type));
		limit_events++;
	}
	CHECK(limit_events == 1, "%d SRQ limit events after re-arming",
	      limit_events);

	/* Phase 3: QP 0 errs; the SRQ's WQEs stay for QP 1. */
	ibv_qp_attr e = {};
	e.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(rx.qp[0], &e, IBV_QP_STATE) == 0, "QP 0 to ERR");
	bool last_wqe = false;
	while (async_event(rx.ctx, last_wqe ? 0 : 2000, ev)) {
		CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
			      ev.element.qp == rx.qp[0],
		      "unexpected event %s", ibv_event_type_str(ev.event_type));
		last_wqe = last_wqe || ev.event_type ==
					       IBV_EVENT_QP_LAST_WQE_REACHED;
	}
	CHECK(last_wqe, "no IBV_EVENT_QP_LAST_WQE_REACHED for the QP in ERR");
	ibv_wc wc = {};
	CHECK(ibv_poll_cq(rx.cq, 1, &wc) == 0,
	      "completion %s of wr_id %lu after QP 0 went to ERR: SRQ WQEs "
	      "must not be flushed",
	      ibv_wc_status_str(wc.status), (unsigned long)wc.wr_id);
	while (failures == 0 && received < posted) {
		if (!send_one(tx, rx, 1, seq))
			break;
		seq++;
		received++;
	}
	CHECK(received == posted, "QP 1 received %u of the %u posted", received,
	      posted);
	std::printf("%u messages received through the SRQ\n", received);

	CHECK(ibv_destroy_srq(rx.srq) == EBUSY,
	      "destroy_srq with QPs attached");
	for (side *s : {&tx, &rx}) {
		for (auto qp : s->qp)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
		if (s->srq)
			CHECK(ibv_destroy_srq(s->srq) == 0, "destroy_srq");
		CHECK(ibv_dereg_mr(s->mr) == 0, "dereg_mr");
		CHECK(ibv_destroy_cq(s->cq) == 0, "destroy_cq");
		CHECK(ibv_dealloc_pd(s->pd) == 0, "dealloc_pd");
		ibv_close_device(s->ctx);
	}
	if (failures) {
		std::printf("FAIL: %d checks failed\n", failures);
		return 1;
	}
	std::printf("PASS: SRQ\n");
	return 0;
}
