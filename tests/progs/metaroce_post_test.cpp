// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * metaroce_post_test: what ibv_post_send / ibv_post_recv promise, on the
 * path the provider took, between RC QPs on two devices.
 *
 *   metaroce_post_test --a DEV_A --b DEV_B --gid GID_IDX --rings yes|no
 *
 * --rings says which path that must be: the work queues mapped from the
 * kernel (include/uapi/rdma/metaroce-abi.h, "Work queue rings"), or the
 * POST_SEND / POST_RECV commands (METAROCE_NO_RINGS=1).  Both must behave
 * the same:
 *   - the path: an RC QP with its own receive queue maps two rings of the
 *     uverbs device into the process, one with an SRQ one, a UD QP none
 *     (rings yes); nothing is mapped for a QP with rings no;
 *   - a list whose second WR the kernel refuses (SEND_WITH_INV, which it
 *     does not have): EINVAL, bad_wr is that WR, the first is sent and the
 *     third is not, ever: the next post is received as the second
 *     message, with its own payload;
 *   - the same with LOCAL_INV, which uverbs refuses before the driver: on
 *     the command path the whole list is refused (bad_wr the first WR),
 *     through the ring only that WR (as above);
 *   - a list with more SGEs than granted in its second WR: the same;
 *   - a receive list whose second WR has too many SGEs: EINVAL, bad_wr is
 *     it, only the first is posted (the peer's second SEND lands in it
 *     and the third waits in RNR until a receive is posted);
 *   - a list longer than the send queue, towards a QP that never answers:
 *     ENOMEM and bad_wr is the first WR past the queue's depth;
 *   - the same for the receive queue; a receive that completed frees its
 *     place by the time its completion is seen;
 *   - receives not used when the QP enters ERR are flushed in order, and
 *     one posted in ERR at once; with rings, the receive ring is taken by
 *     the kernel without a doorbell in RTS (kernel_takes set, nothing
 *     taken before a packet) and rung again from ERR on;
 *   - an inline SEND whose buffer is overwritten as soon as the post
 *     returned: the peer receives the bytes posted;
 *   - rings only, the process corrupting its own rings and ringing the
 *     doorbell itself (POST_SEND / POST_RECV without WRs written to the
 *     command fd): a producer index past the ring or behind its consumer,
 *     send entries with more SGEs than the QP has, inline with SGEs or
 *     with more inline bytes than the QP has, receive entries with the
 *     reserved word set or too many SGEs, are refused with EINVAL and
 *     post nothing; the provider's next post works.
 * Prints "ok CASE" or "FAIL: ..." lines, and "PASS: post" at the end;
 * exit 0 only without a failed check.
 */
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <cinttypes>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <rdma/metaroce-abi.h>

#include "check.h"
#include "verbs_util.h"

namespace {

int failures;

constexpr uint32_t depth = 8;	/* a power of two: the depth granted */
constexpr size_t msg_len = 256;
constexpr size_t slots = 64;

struct side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf = std::vector<uint8_t>(slots * msg_len);
	ibv_gid gid = {};

	uint8_t *slot(size_t i) { return buf.data() + i * msg_len; }
	ibv_sge sge(size_t i, uint32_t len = msg_len)
	{
		return {uintptr_t(slot(i)), len, mr->lkey};
	}
};

side a, b;
int gid_idx;
bool rings;

/*
 * A connected RC pair a -> b, both in RTS, or not ok() after a FAIL.  A's
 * QP goes to @dqpn_of_a instead of b's if set (a peer that never
 * answers), with room for @max_inline bytes of inline data.
 */
struct pair {
	ibv_qp *qa = nullptr, *qb = nullptr;
	bool connected = false;

	explicit pair(uint32_t dqpn_of_a = 0, uint32_t max_inline = 0)
	{
		ibv_qp_init_attr ia = {};

		ia.send_cq = ia.recv_cq = a.cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = depth;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = max_inline;
		qa = ibv_create_qp(a.pd, &ia);
		qb = vu::create_rc(b.pd, b.cq, depth);
		CHECK(qa && qb, "create_qp: %s", std::strerror(errno));
		if (!qa || !qb)
			return;
		int err = vu::to_init(qa, 0);
		err = err ?: vu::to_init(qb, 0);
		err = err ?: vu::to_rtr(qa, dqpn_of_a ?: qb->qp_num, 0x200,
					b.gid, gid_idx);
		err = err ?: vu::to_rtr(qb, qa->qp_num, 0x100, a.gid, gid_idx);
		err = err ?: vu::to_rts(qa, 0x100);
		err = err ?: vu::to_rts(qb, 0x200);
		CHECK(!err, "connect: %s", std::strerror(err));
		connected = !err;
	}
	~pair()
	{
		if (qa)
			ibv_destroy_qp(qa);
		if (qb)
			ibv_destroy_qp(qb);
	}
	bool ok() const { return connected; }
};

void fill(uint8_t *p, uint8_t seed)
{
	for (size_t i = 0; i < msg_len; i++)
		p[i] = uint8_t(seed + i * 7);
}

bool filled(const uint8_t *p, uint8_t seed)
{
	for (size_t i = 0; i < msg_len; i++)
		if (p[i] != uint8_t(seed + i * 7))
			return false;
	return true;
}

int post_recv(ibv_qp *qp, size_t slot, uint64_t wr_id)
{
	ibv_sge sg = b.sge(slot);
	ibv_recv_wr wr = {}, *bad = nullptr;

	wr.wr_id = wr_id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

/* The next completion on @cq (a hang guard, not a timing bound). */
bool next_wc(ibv_cq *cq, ibv_wc &wc, const char *what)
{
	int n = vu::poll_one(cq, wc, 30);

	CHECK(n == 1, "%s: no completion (%d)", what, n);
	return n == 1;
}

/* Nothing more on @cq for a while: what was not posted did not happen. */
bool cq_quiet(ibv_cq *cq, const char *what)
{
	ibv_wc wc;
	int n = vu::poll_one(cq, wc, 0.5);

	CHECK(n == 0, "%s: unexpected completion wr_id %" PRIu64 " status %s",
	      what, wc.wr_id, ibv_wc_status_str(wc.status));
	return n == 0;
}

size_t uverbs_maps()
{
	return vu::uverbs_maps().size();
}

void check_path()
{
	size_t before = uverbs_maps();
	ibv_qp *rc = vu::create_rc(a.pd, a.cq, depth);
	size_t with_rc = uverbs_maps();
	ibv_srq_init_attr sa = {};
	sa.attr.max_wr = depth;
	sa.attr.max_sge = 1;
	ibv_srq *srq = ibv_create_srq(a.pd, &sa);
	size_t with_srq_only = uverbs_maps();
	ibv_qp_init_attr ia = {};
	ia.send_cq = ia.recv_cq = a.cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = depth;
	ia.cap.max_send_sge = 1;
	ibv_qp *rc_srq = srq ? ibv_create_qp(a.pd, &ia) : nullptr;
	size_t with_rc_srq = uverbs_maps();
	ia.srq = nullptr;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_recv_sge = 1;
	ibv_qp *ud = ibv_create_qp(a.pd, &ia);
	size_t with_ud = uverbs_maps();

	CHECK(rc && srq && rc_srq && ud, "creating the QPs: %s",
	      std::strerror(errno));
	CHECK(with_rc - before == (rings ? 2u : 0u),
	      "an RC QP mapped %zu rings", with_rc - before);
	CHECK(with_rc_srq - with_srq_only == (rings ? 1u : 0u),
	      "an RC QP with an SRQ mapped %zu rings",
	      with_rc_srq - with_srq_only);
	CHECK(with_ud == with_rc_srq, "a UD QP mapped %zu rings",
	      with_ud - with_rc_srq);
	for (ibv_qp *qp : {rc, rc_srq, ud})
		if (qp)
			ibv_destroy_qp(qp);
	if (srq)
		ibv_destroy_srq(srq);
	CHECK(uverbs_maps() == before, "%zu mappings left after destroying",
	      uverbs_maps() - before);
	std::printf("ok path: rings %s\n", rings ? "yes" : "no");
}

/*
 * A send list of three whose second WR is refused (@spoil breaks it):
 * only the first arrives, then a fresh post arrives second.  With
 * @whole_list the refusal is the whole list's (nothing arrives before
 * the fresh post, and bad_wr is the first WR).
 */
void check_send_list(const char *what, void (*spoil)(ibv_send_wr &),
		     bool whole_list = false)
{
	pair p;
	ibv_sge sg[3], extra[2];
	ibv_send_wr wr[3] = {}, *bad = nullptr;
	ibv_wc wc;

	if (!p.ok())
		return;
	for (int i = 0; i < 4; i++)
		CHECK(!post_recv(p.qb, size_t(i), 100 + i), "post_recv");
	for (int i = 0; i < 3; i++) {
		fill(a.slot(size_t(i)), uint8_t(10 + i));
		sg[i] = a.sge(size_t(i));
		wr[i].wr_id = 1 + i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
	}
	extra[0] = sg[1];
	extra[1] = sg[1];
	wr[1].sg_list = extra;
	spoil(wr[1]);
	int err = ibv_post_send(p.qa, wr, &bad);
	CHECK(err == EINVAL, "%s: post_send returned %s", what,
	      std::strerror(err));
	CHECK(bad == &wr[whole_list ? 0 : 1], "%s: bad_wr is WR %td", what,
	      bad ? bad - wr : -1);
	if (!whole_list) {
		if (next_wc(a.cq, wc, what))
			CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS,
			      "%s: send completion wr_id %" PRIu64 " %s", what,
			      wc.wr_id, ibv_wc_status_str(wc.status));
		if (next_wc(b.cq, wc, what))
			CHECK(wc.wr_id == 100 && wc.byte_len == msg_len &&
				      filled(b.slot(0), 10),
			      "%s: first receive wr_id %" PRIu64 " len %u",
			      what, wc.wr_id, wc.byte_len);
	}
	/* What was not posted never is: a fresh post is the next message. */
	size_t next = whole_list ? 0 : 1;
	fill(a.slot(3), 40);
	sg[0] = a.sge(3);
	wr[0].wr_id = 4;
	wr[0].next = nullptr;
	CHECK(!ibv_post_send(p.qa, &wr[0], &bad), "%s: post after", what);
	if (next_wc(a.cq, wc, what))
		CHECK(wc.wr_id == 4 && wc.status == IBV_WC_SUCCESS,
		      "%s: send completion wr_id %" PRIu64 " %s", what,
		      wc.wr_id, ibv_wc_status_str(wc.status));
	if (next_wc(b.cq, wc, what))
		CHECK(wc.wr_id == 100 + next && filled(b.slot(next), 40),
		      "%s: receive wr_id %" PRIu64 " holds %s", what,
		      wc.wr_id,
		      filled(b.slot(next), 12) ? "the third WR's payload" :
		      filled(b.slot(next), 10) ? "the first WR's payload" :
						 "other bytes");
	cq_quiet(a.cq, what);
	cq_quiet(b.cq, what);
	std::printf("ok %s\n", what);
}

/* A receive list whose second WR has too many SGEs. */
void check_recv_list()
{
	const char *what = "receive list, second WR with too many SGEs";
	pair p;
	ibv_sge sg[3] = {b.sge(0), b.sge(1), b.sge(2)}, two[2] = {sg[1], sg[1]};
	ibv_recv_wr wr[3] = {}, *bad = nullptr;
	ibv_send_wr swr = {}, *sbad;
	ibv_sge ssg;
	ibv_wc wc;

	if (!p.ok())
		return;
	for (int i = 0; i < 3; i++) {
		wr[i].wr_id = 200 + i;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
	}
	wr[1].sg_list = two;
	wr[1].num_sge = 2;
	int err = ibv_post_recv(p.qb, wr, &bad);
	CHECK(err == EINVAL, "%s: post_recv returned %s", what,
	      std::strerror(err));
	CHECK(bad == &wr[1], "%s: bad_wr is WR %td", what, bad ? bad - wr : -1);
	/* Two SENDs: the first lands in receive 200, the second waits. */
	for (int i = 0; i < 2; i++) {
		fill(a.slot(size_t(i)), uint8_t(50 + i));
		ssg = a.sge(size_t(i));
		swr.wr_id = 10 + i;
		swr.opcode = IBV_WR_SEND;
		swr.send_flags = IBV_SEND_SIGNALED;
		swr.sg_list = &ssg;
		swr.num_sge = 1;
		CHECK(!ibv_post_send(p.qa, &swr, &sbad), "%s: post_send", what);
	}
	if (next_wc(b.cq, wc, what))
		CHECK(wc.wr_id == 200 && filled(b.slot(0), 50),
		      "%s: receive wr_id %" PRIu64, what, wc.wr_id);
	/* Receive 202 was never posted: nothing takes the second SEND. */
	cq_quiet(b.cq, what);
	CHECK(!post_recv(p.qb, 5, 205), "%s: post_recv after", what);
	if (next_wc(b.cq, wc, what))
		CHECK(wc.wr_id == 205 && filled(b.slot(5), 51),
		      "%s: receive wr_id %" PRIu64, what, wc.wr_id);
	for (int i = 0; i < 2; i++)
		if (next_wc(a.cq, wc, what))
			CHECK(wc.status == IBV_WC_SUCCESS, "%s: send %s", what,
			      ibv_wc_status_str(wc.status));
	std::printf("ok %s\n", what);
}

/* More WRs than the send queue holds, to a QP that never answers. */
void check_full_queue()
{
	const char *what = "a list longer than the send queue";
	pair p(0xfffffe);
	std::vector<ibv_send_wr> wr(2 * depth);
	std::vector<ibv_sge> sg(2 * depth);
	ibv_send_wr *bad = nullptr;
	ibv_qp_attr attr;
	ibv_qp_init_attr init;

	if (!p.ok())
		return;
	CHECK(!ibv_query_qp(p.qa, &attr, IBV_QP_CAP, &init) &&
		      init.cap.max_send_wr == depth,
	      "%s: max_send_wr %u, expected %u", what, init.cap.max_send_wr,
	      depth);
	for (size_t i = 0; i < wr.size(); i++) {
		sg[i] = a.sge(i, 8);
		wr[i].wr_id = 300 + i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < wr.size() ? &wr[i + 1] : nullptr;
	}
	int err = ibv_post_send(p.qa, wr.data(), &bad);
	CHECK(err == ENOMEM, "%s: post_send returned %s", what,
	      std::strerror(err));
	CHECK(bad == &wr[depth], "%s: bad_wr is WR %td, expected %u", what,
	      bad ? bad - wr.data() : -1, depth);
	std::printf("ok %s\n", what);
}

/* An inline SEND's buffer is the caller's again when post_send returns. */
void check_inline_reuse()
{
	const char *what = "inline send, buffer reused at once";
	pair p(0, 64);
	uint8_t src[64];
	ibv_sge sg = {uintptr_t(src), sizeof(src), 0};
	ibv_send_wr wr = {}, *bad;
	ibv_wc wc;

	if (!p.ok())
		return;
	CHECK(!post_recv(p.qb, 0, 400), "%s: post_recv", what);
	fill(a.slot(9), 77);
	std::memcpy(src, a.slot(9), sizeof(src));
	wr.wr_id = 401;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	CHECK(!ibv_post_send(p.qa, &wr, &bad), "%s: post_send", what);
	std::memset(src, 0xee, sizeof(src));
	if (next_wc(b.cq, wc, what))
		CHECK(wc.wr_id == 400 && wc.byte_len == sizeof(src) &&
			      !std::memcmp(b.slot(0), a.slot(9), sizeof(src)),
		      "%s: received %u bytes, not those posted", what,
		      wc.byte_len);
	if (next_wc(a.cq, wc, what))
		CHECK(wc.wr_id == 401 && wc.status == IBV_WC_SUCCESS,
		      "%s: send wr_id %" PRIu64 " %s", what, wc.wr_id,
		      ibv_wc_status_str(wc.status));
	std::printf("ok %s\n", what);
}

/*
 * The doorbell as the provider rings it, but ours: POST_SEND (or, with
 * @recv, POST_RECV) with no WR, written to the command fd.  0 or the errno.
 */
int raw_doorbell(ibv_qp *qp, bool recv = false)
{
	static_assert(sizeof(ib_uverbs_post_send) == sizeof(ib_uverbs_post_recv));
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_post_send cmd; /* POST_RECV's has the same layout */
	} c = {};
	ib_uverbs_post_send_resp resp = {};

	c.hdr.command = recv ? IB_USER_VERBS_CMD_POST_RECV :
			       IB_USER_VERBS_CMD_POST_SEND;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = uintptr_t(&resp);
	c.cmd.qp_handle = qp->handle;
	c.cmd.wqe_size = recv ? sizeof(ib_uverbs_recv_wr) :
				sizeof(ib_uverbs_send_wr);
	return write(qp->context->cmd_fd, &c, sizeof(c)) == ssize_t(sizeof(c)) ?
		       0 : errno;
}

/* The mappings of the uverbs device, as "start" addresses. */
std::set<unsigned long> map_starts()
{
	std::set<unsigned long> out;

	for (const std::string &line : vu::uverbs_maps()) {
		unsigned long start;

		if (std::sscanf(line.c_str(), "%lx-", &start) == 1)
			out.insert(start);
	}
	return out;
}

/*
 * A ring of ours mapped since @before, told by the wr_ids the provider
 * wrote into its first two entries; nullptr if none.  *@stride is the
 * distance between them.
 */
uint8_t *find_ring(const std::set<unsigned long> &before, uint64_t first_id,
		   uint64_t second_id, size_t *stride)
{
	constexpr size_t hdr = sizeof(metaroce_ring_hdr);

	for (unsigned long s : map_starts()) {
		auto *m = reinterpret_cast<uint8_t *>(s);

		if (before.count(s) ||
		    *reinterpret_cast<uint64_t *>(m + hdr) != first_id)
			continue;
		for (size_t off = hdr + 8; off + 8 <= 4096; off += 8)
			if (*reinterpret_cast<uint64_t *>(m + off) == second_id) {
				*stride = off - hdr;
				return m;
			}
	}
	return nullptr;
}

/*
 * With @producer published in the ring @h of @qp (its receive ring with
 * @recv), the doorbell must fail with EINVAL and take nothing: consumer
 * stays at 2.
 */
void expect_refused(volatile metaroce_ring_hdr *h, ibv_qp *qp, bool recv,
		    uint32_t producer, const char *what, const char *how)
{
	h->producer = producer;
	int err = raw_doorbell(qp, recv);
	CHECK(err == EINVAL, "%s: doorbell with %s: %s", what, how,
	      std::strerror(err));
	CHECK(h->consumer == 2, "%s: %s: consumer moved to %u", what, how,
	      h->consumer);
}

/* Post one signaled SEND of A's slot @slot, payload seeded @seed. */
int send_one(ibv_qp *qp, size_t slot, uint8_t seed, uint64_t wr_id)
{
	ibv_sge sg = a.sge(slot);
	ibv_send_wr wr = {}, *bad;

	fill(a.slot(slot), seed);
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	return ibv_post_send(qp, &wr, &bad);
}

/* The send and the receive of one message, both successful. */
void expect_message(uint64_t send_id, uint64_t recv_id, size_t slot,
		    uint8_t seed, const char *what)
{
	ibv_wc wc;

	if (next_wc(a.cq, wc, what))
		CHECK(wc.wr_id == send_id && wc.status == IBV_WC_SUCCESS,
		      "%s: send wr_id %" PRIu64 " %s", what, wc.wr_id,
		      ibv_wc_status_str(wc.status));
	if (next_wc(b.cq, wc, what))
		CHECK(wc.wr_id == recv_id && filled(b.slot(slot), seed),
		      "%s: receive wr_id %" PRIu64, what, wc.wr_id);
}

/*
 * A receive queue holds its depth and no more, with or without doorbells:
 * past it, ENOMEM and bad_wr the first WR that did not fit; a completed
 * receive frees its place by the time the process sees its completion.
 */
void check_full_recv_queue()
{
	const char *what = "receive list past the queue's depth";
	pair p;
	ibv_sge sg[depth + 1];
	ibv_recv_wr wr[depth + 1] = {}, extra, *bad = nullptr;

	if (!p.ok())
		return;
	for (uint32_t i = 0; i <= depth; i++) {
		sg[i] = b.sge(i);
		wr[i].wr_id = 300 + i;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].next = i < depth ? &wr[i + 1] : nullptr;
	}
	int err = ibv_post_recv(p.qb, wr, &bad);
	CHECK(err == ENOMEM, "%s: post_recv returned %s", what,
	      std::strerror(err));
	CHECK(bad == &wr[depth], "%s: bad_wr is WR %td", what,
	      bad ? bad - wr : -1);
	CHECK(!send_one(p.qa, 0, 90, 0x900), "%s: post_send", what);
	expect_message(0x900, 300, 0, 90, what);
	/* The completed receive's place, and no other. */
	CHECK(!ibv_post_recv(p.qb, &wr[depth], &bad),
	      "%s: post_recv after a completion", what);
	extra = wr[depth];
	extra.wr_id = 400;
	err = ibv_post_recv(p.qb, &extra, &bad);
	CHECK(err == ENOMEM && bad == &extra,
	      "%s: post_recv into the full queue again returned %s", what,
	      std::strerror(err));
	std::printf("ok %s\n", what);
}

/*
 * Receives posted and not used when the QP enters ERR are flushed, in
 * order, whether the kernel took them at their doorbell or finds them in
 * its ring then.  With rings, the receive ring says that the kernel takes
 * it (no doorbell, and nothing taken before a packet arrives) until ERR,
 * and a receive posted in ERR is flushed at once.
 */
void check_recv_flush()
{
	const char *what = "receives flushed on entering ERR";
	std::set<unsigned long> before = map_starts();
	volatile metaroce_ring_hdr *h = nullptr;
	ibv_qp_attr attr = {};
	ibv_wc wc;
	pair p;

	if (!p.ok())
		return;
	for (int i = 0; i < 3; i++)
		CHECK(!post_recv(p.qb, size_t(i), 0x5e0 + i), "%s: post_recv",
		      what);
	if (rings) {
		size_t stride = 0;
		uint8_t *ring = find_ring(before, 0x5e0, 0x5e1, &stride);

		CHECK(ring, "%s: B's receive ring not found", what);
		if (!ring)
			return;
		h = reinterpret_cast<volatile metaroce_ring_hdr *>(ring);
		CHECK(h->kernel_takes && h->consumer == 0,
		      "%s: in RTS kernel_takes %u, consumer %u (expected 1, 0)",
		      what, h->kernel_takes, h->consumer);
	}
	attr.qp_state = IBV_QPS_ERR;
	CHECK(!ibv_modify_qp(p.qb, &attr, IBV_QP_STATE), "%s: modify to ERR",
	      what);
	for (uint64_t i = 0; i < 3; i++)
		if (next_wc(b.cq, wc, what))
			CHECK(wc.wr_id == 0x5e0 + i &&
				      wc.status == IBV_WC_WR_FLUSH_ERR,
			      "%s: wr_id %" PRIx64 " %s, expected %" PRIx64
			      " flushed", what, wc.wr_id,
			      ibv_wc_status_str(wc.status), 0x5e0 + i);
	if (h)
		CHECK(!h->kernel_takes && h->consumer == 3,
		      "%s: in ERR kernel_takes %u, consumer %u (expected 0, 3)",
		      what, h->kernel_takes, h->consumer);
	CHECK(!post_recv(p.qb, 3, 0x5e3), "%s: post_recv in ERR", what);
	if (next_wc(b.cq, wc, what))
		CHECK(wc.wr_id == 0x5e3 && wc.status == IBV_WC_WR_FLUSH_ERR,
		      "%s: receive posted in ERR: wr_id %" PRIx64 " %s", what,
		      wc.wr_id, ibv_wc_status_str(wc.status));
	cq_quiet(b.cq, what);
	std::printf("ok %s\n", what);
}

/*
 * Rings only: the process corrupts its send queue ring and rings the
 * doorbell itself.  The ring is found among the new mappings by the
 * wr_id the provider wrote into it.
 */
void check_corrupt_ring()
{
	const char *what = "corrupted send ring";
	constexpr size_t hdr = sizeof(metaroce_ring_hdr);
	std::set<unsigned long> before = map_starts();
	pair p;
	uint8_t *ring = nullptr;
	size_t stride = 0;

	if (!p.ok())
		return;
	for (int i = 0; i < 4; i++)
		CHECK(!post_recv(p.qb, size_t(i), 600 + i), "%s: post_recv",
		      what);
	CHECK(!send_one(p.qa, 0, 90, 0x5eed0001), "%s: post_send", what);
	expect_message(0x5eed0001, 600, 0, 90, what);
	CHECK(!send_one(p.qa, 1, 91, 0x5eed0002), "%s: post_send", what);
	expect_message(0x5eed0002, 601, 1, 91, what);
	ring = find_ring(before, 0x5eed0001, 0x5eed0002, &stride);
	CHECK(ring, "%s: A's send ring not found", what);
	if (!ring)
		return;
	auto *h = reinterpret_cast<volatile metaroce_ring_hdr *>(ring);
	CHECK(h->producer == 2 && h->consumer == 2,
	      "%s: producer %u consumer %u after two sends", what, h->producer,
	      h->consumer);

	/* Impossible producers, past the ring or behind its consumer. */
	expect_refused(h, p.qa, false, 2 + 0x10000, what, "producer past the ring");
	expect_refused(h, p.qa, false, 1, what, "producer behind the consumer");

	/*
	 * Entry 2: entry 1 again, spoiled three ways the kernel must catch
	 * before it reads past the entry or posts it: more SGEs than the
	 * QP has, inline with SGEs, more inline bytes than the QP has.
	 */
	auto *e = reinterpret_cast<metaroce_sq_wqe *>(ring + hdr + 2 * stride);
	const char *const send_ways[] = {"1000 SGEs", "inline with SGEs",
					 "64 KiB inline"};
	for (int way = 0; way < 3; way++) {
		std::memcpy(e, ring + hdr + stride, stride);
		if (way == 0) {
			e->num_sge = 1000;
		} else {
			e->send_flags |= IBV_SEND_INLINE;
			if (way == 2) {
				e->num_sge = 0;
				e->inline_len = 0x10000;
			}
		}
		expect_refused(h, p.qa, false, 3, what, send_ways[way]);
	}
	cq_quiet(b.cq, what);

	/* The provider republishes its own index: its next post is taken. */
	CHECK(!send_one(p.qa, 2, 92, 0x5eed0003), "%s: post_send after", what);
	expect_message(0x5eed0003, 602, 2, 92, what);
	std::printf("ok %s\n", what);
}

/*
 * Rings only: the receive ring, found by the wr_id the provider wrote
 * into it; an entry with its reserved word set or too many SGEs is
 * refused by the doorbell and posts nothing.
 */
void check_corrupt_recv_ring()
{
	const char *what = "corrupted receive ring";
	constexpr size_t hdr = sizeof(metaroce_ring_hdr);
	std::set<unsigned long> before = map_starts();
	pair p;
	uint8_t *ring = nullptr;
	size_t stride = 0;

	if (!p.ok())
		return;
	CHECK(!post_recv(p.qb, 0, 0x7ec0001), "%s: post_recv", what);
	CHECK(!post_recv(p.qb, 1, 0x7ec0002), "%s: post_recv", what);
	ring = find_ring(before, 0x7ec0001, 0x7ec0002, &stride);
	CHECK(ring, "%s: B's receive ring not found", what);
	if (!ring)
		return;
	auto *h = reinterpret_cast<volatile metaroce_ring_hdr *>(ring);
	auto *e = reinterpret_cast<metaroce_rq_wqe *>(ring + hdr + 2 * stride);
	const char *const recv_ways[] = {"the reserved word set", "1000 SGEs"};
	for (int way = 0; way < 2; way++) {
		std::memcpy(e, ring + hdr + stride, stride);
		if (way == 0)
			e->reserved = 1;
		else
			e->num_sge = 1000;
		expect_refused(h, p.qb, true, 3, what, recv_ways[way]);
	}
	h->producer = 2;
	/* Two SENDs fill the two receives; a third finds none (RNR). */
	for (int i = 0; i < 3; i++)
		CHECK(!send_one(p.qa, size_t(i), uint8_t(70 + i), 0x7e0 + i),
		      "%s: post_send", what);
	expect_message(0x7e0, 0x7ec0001, 0, 70, what);
	expect_message(0x7e1, 0x7ec0002, 1, 71, what);
	cq_quiet(b.cq, what);
	CHECK(!post_recv(p.qb, 2, 0x7ec0003), "%s: post_recv after", what);
	expect_message(0x7e2, 0x7ec0003, 2, 72, what);
	std::printf("ok %s\n", what);
}

void too_many_sges(ibv_send_wr &wr)
{
	wr.num_sge = 2; /* one granted */
}

void opcode_not_had(ibv_send_wr &wr)
{
	/* uverbs passes it on; the device has no SEND with invalidate. */
	wr.opcode = IBV_WR_SEND_WITH_INV;
}

void opcode_uverbs_refuses(ibv_send_wr &wr)
{
	wr.opcode = IBV_WR_LOCAL_INV;
}

bool open_side(side &s, const char *name)
{
	s.ctx = vu::open_device(name);
	if (!s.ctx)
		return false;
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 64, nullptr, nullptr, 0);
	s.mr = s.pd ? ibv_reg_mr(s.pd, s.buf.data(), s.buf.size(),
				 IBV_ACCESS_LOCAL_WRITE) :
		      nullptr;
	return s.pd && s.cq && s.mr && !ibv_query_gid(s.ctx, 1, gid_idx, &s.gid);
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev_a = nullptr, *dev_b = nullptr, *r = nullptr;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!std::strcmp(argv[i], "--a"))
			dev_a = argv[i + 1];
		else if (!std::strcmp(argv[i], "--b"))
			dev_b = argv[i + 1];
		else if (!std::strcmp(argv[i], "--gid"))
			gid_idx = std::atoi(argv[i + 1]);
		else if (!std::strcmp(argv[i], "--rings"))
			r = argv[i + 1];
	}
	if (!dev_a || !dev_b || !r ||
	    (std::strcmp(r, "yes") && std::strcmp(r, "no"))) {
		std::fprintf(stderr,
			     "usage: %s --a DEV --b DEV --gid IDX --rings yes|no\n",
			     argv[0]);
		return 2;
	}
	rings = !std::strcmp(r, "yes");
	if (!open_side(a, dev_a) || !open_side(b, dev_b)) {
		std::printf("FAIL: opening %s and %s\n", dev_a, dev_b);
		return 1;
	}
	check_path();
	check_send_list("send list, second WR with an opcode the device has not",
			opcode_not_had);
	/* uverbs refuses the command before the driver sees a WR. */
	check_send_list("send list, second WR with an opcode uverbs refuses",
			opcode_uverbs_refuses, !rings);
	check_send_list("send list, second WR with too many SGEs",
			too_many_sges);
	check_recv_list();
	check_full_queue();
	check_full_recv_queue();
	check_recv_flush();
	check_inline_reuse();
	if (rings) {
		check_corrupt_ring();
		check_corrupt_recv_ring();
	}
	for (side *s : {&a, &b}) {
		ibv_dereg_mr(s->mr);
		ibv_destroy_cq(s->cq);
		ibv_dealloc_pd(s->pd);
		ibv_close_device(s->ctx);
	}
	if (!failures)
		std::printf("PASS: post (rings %s)\n", r);
	return failures ? 1 : 0;
}
