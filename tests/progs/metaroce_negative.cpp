// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * metaroce_negative: isolation and the negative verbs cases of issues 5
 * and 10, between two devices of one host (RC QPs A on DEV_A, B on DEV_B).
 *
 *   metaroce_negative -a DEV_A -b DEV_B -g GID_IDX
 *
 * Each case uses a fresh connected pair (an errored QP stays errored) and
 * expects IBTA's outcome:
 *   - an lkey of another PD, or of an MR without LOCAL_WRITE for a READ's
 *     local buffer: post_send succeeds, the WR completes with
 *     IBV_WC_LOC_PROT_ERR, the QP is in ERR and a later WR is flushed
 *     (IBV_WC_WR_FLUSH_ERR); nothing reached the peer;
 *   - a WRITE/READ/atomic with an rkey of another PD, a wrong rkey, out of
 *     bounds, or at an MR (or a QP) without the remote access: the
 *     requester's WR completes with IBV_WC_REM_ACCESS_ERR and the
 *     responder's memory is untouched;
 *   - a receive into an MR without LOCAL_WRITE: through the receive ring
 *     (no doorbell) it completes with IBV_WC_LOC_PROT_ERR when the peer's
 *     SEND arrives and the QP is in ERR; by command, post_recv fails
 *     (EINVAL);
 *   - post_send on a QP in RESET, INIT or RTR: EINVAL; post_recv in
 *     RESET: EINVAL (INIT is allowed);
 *   - another process's lkey and rkey (a forked child that got them over
 *     a pipe) are refused like keys of another PD, and the parent's
 *     memory is untouched;
 *   - ibv_reg_mr of an unmapped range: EFAULT; of a read-only mapping
 *     with LOCAL_WRITE: EFAULT, without write access: allowed;
 *     REMOTE_WRITE without LOCAL_WRITE: EINVAL;
 *   - a pair connected at path MTU 256, reset and connected again at 1024
 *     moves a WRITE and a READ of full 1024-byte packets intact (a QP must
 *     not build them in buffers left from its first connection).
 * Prints "ok CASE" or "FAIL: ..." lines and "PASS: negative"; exit 0 only
 * without a failed check.
 */
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <memory>
#include <vector>

#include "check.h"
#include "verbs_util.h"

namespace {

int failures;

constexpr size_t buf_len = 8192;
constexpr unsigned remote_all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

const char *status_name(int s)
{
	return ibv_wc_status_str(ibv_wc_status(s));
}

/* A buffer with an MR over it, filled with a known pattern. */
struct buffer {
	std::vector<uint8_t> mem = std::vector<uint8_t>(buf_len);
	ibv_mr *mr = nullptr;
	uint8_t seed = 0;

	buffer() = default;
	buffer(const buffer &) = delete;
	buffer &operator=(const buffer &) = delete;
	bool reg(ibv_pd *pd, unsigned access, uint8_t s)
	{
		seed = s;
		fill();
		mr = ibv_reg_mr(pd, mem.data(), mem.size(), int(access));
		CHECK(mr, "reg_mr(access 0x%x): %s", access, std::strerror(errno));
		return mr;
	}
	void fill()
	{
		for (size_t i = 0; i < mem.size(); i++)
			mem[i] = uint8_t(seed + i * 31);
	}
	bool intact() const
	{
		for (size_t i = 0; i < mem.size(); i++)
			if (mem[i] != uint8_t(seed + i * 31))
				return false;
		return true;
	}
	uint64_t addr(size_t off = 0) const { return uintptr_t(mem.data() + off); }
	~buffer()
	{
		if (mr)
			ibv_dereg_mr(mr);
	}
};

struct side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr, *pd2 = nullptr;
	ibv_cq *cq = nullptr;
	ibv_gid gid = {};
};

/* A connected RC pair a (on A) -> b (on B), or not ok. */
struct pair {
	ibv_qp *a = nullptr, *b = nullptr;
	bool ok = false;
	~pair()
	{
		if (a)
			ibv_destroy_qp(a);
		if (b)
			ibv_destroy_qp(b);
	}
};

class negative {
public:
	bool open(const char *dev_a, const char *dev_b, int gid_idx);
	void close();
	void run_all();
	/* The child's part of the cross-process case. */
	void foreign_keys(uint32_t lkey, uint32_t rkey, uint64_t addr);

private:
	std::unique_ptr<pair> connect(ibv_pd *pd_a, unsigned access_b = remote_all,
				      ibv_pd *pd_b = nullptr);
	int post(ibv_qp *qp, ibv_wr_opcode op, const ibv_sge &sge,
		 uint64_t raddr = 0, uint32_t rkey = 0);
	bool expect_wc(ibv_qp *qp, ibv_wc_status want, const char *what);
	void expect_err_state(ibv_qp *qp, const char *what);
	void drain(ibv_cq *cq);

	void local_other_pd();
	void remote_cases();
	void recv_without_local_write();
	void wrong_state();
	void registration();
	void reconnect_larger_mtu();

	side a_, b_;
	int gid_idx_ = 0;
};

bool negative::open(const char *dev_a, const char *dev_b, int gid_idx)
{
	gid_idx_ = gid_idx;
	for (auto [s, name] : {std::pair{&a_, dev_a}, std::pair{&b_, dev_b}}) {
		s->ctx = vu::open_device(name);
		if (!s->ctx)
			return false;
		s->pd = ibv_alloc_pd(s->ctx);
		s->pd2 = ibv_alloc_pd(s->ctx);
		s->cq = ibv_create_cq(s->ctx, 64, nullptr, nullptr, 0);
		if (!s->pd || !s->pd2 || !s->cq ||
		    ibv_query_gid(s->ctx, 1, gid_idx, &s->gid))
			return false;
	}
	return true;
}

void negative::close()
{
	for (side *s : {&a_, &b_}) {
		if (s->cq)
			ibv_destroy_cq(s->cq);
		if (s->pd)
			ibv_dealloc_pd(s->pd);
		if (s->pd2)
			ibv_dealloc_pd(s->pd2);
		if (s->ctx)
			ibv_close_device(s->ctx);
	}
}

/* a in PD_A with full access, b in PD_B (default B's first) with ACCESS_B. */
std::unique_ptr<pair> negative::connect(ibv_pd *pd_a, unsigned access_b,
					ibv_pd *pd_b)
{
	auto p = std::make_unique<pair>();
	const uint32_t psn_a = 0x100, psn_b = 0x200;

	p->a = vu::create_rc(pd_a, a_.cq);
	p->b = vu::create_rc(pd_b ? pd_b : b_.pd, b_.cq);
	CHECK(p->a && p->b, "create_qp: %s", std::strerror(errno));
	if (!p->a || !p->b)
		return p;
	int err = vu::to_init(p->a, remote_all);
	err = err ?: vu::to_init(p->b, access_b);
	err = err ?: vu::to_rtr(p->a, p->b->qp_num, psn_b, b_.gid, gid_idx_);
	err = err ?: vu::to_rtr(p->b, p->a->qp_num, psn_a, a_.gid, gid_idx_);
	/* Few retries: a lost case ends in RETRY_EXC soon, not a hang. */
	err = err ?: vu::to_rts(p->a, psn_a, 3);
	err = err ?: vu::to_rts(p->b, psn_b, 3);
	CHECK(!err, "connect: %s", std::strerror(err));
	p->ok = !err;
	return p;
}

int negative::post(ibv_qp *qp, ibv_wr_opcode op, const ibv_sge &sge,
		   uint64_t raddr, uint32_t rkey)
{
	ibv_send_wr wr = {}, *bad;
	ibv_sge sg = sge;

	wr.wr_id = 7;
	wr.opcode = op;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

bool negative::expect_wc(ibv_qp *qp, ibv_wc_status want, const char *what)
{
	ibv_wc wc = {};
	int n;

	/* Earlier cases' QPs may still flush into the shared CQ. */
	do
		n = vu::poll_one(qp->send_cq, wc, 60);
	while (n == 1 && wc.qp_num != qp->qp_num);
	CHECK(n == 1, "%s: no completion", what);
	if (n != 1)
		return false;
	CHECK(wc.status == want, "%s: completion %s, expected %s", what,
	      status_name(wc.status), status_name(want));
	return wc.status == want;
}

void negative::expect_err_state(ibv_qp *qp, const char *what)
{
	ibv_qp_attr attr = {};
	ibv_qp_init_attr init = {};

	CHECK(!ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), "%s: query_qp", what);
	CHECK(attr.qp_state == IBV_QPS_ERR, "%s: QP in state %d, expected ERR",
	      what, attr.qp_state);
}

/* Completions left over by a case (the responder's flushes). */
void negative::drain(ibv_cq *cq)
{
	ibv_wc wc[16];

	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

void negative::local_other_pd()
{
	buffer mine, theirs, noloc, dst;

	if (!mine.reg(a_.pd, IBV_ACCESS_LOCAL_WRITE, 1) ||
	    !theirs.reg(a_.pd2, IBV_ACCESS_LOCAL_WRITE, 2) ||
	    !noloc.reg(a_.pd, IBV_ACCESS_REMOTE_READ, 3) ||
	    !dst.reg(b_.pd, remote_all, 4))
		return;

	struct lcase {
		const char *what;
		ibv_wr_opcode op;
		ibv_mr *local;
	};
	const lcase cases[] = {
		{"SEND from an MR of another PD", IBV_WR_SEND, theirs.mr},
		{"WRITE from an MR of another PD", IBV_WR_RDMA_WRITE, theirs.mr},
		{"READ into an MR without LOCAL_WRITE", IBV_WR_RDMA_READ, noloc.mr},
	};
	for (const lcase &c : cases) {
		auto p = connect(a_.pd);
		if (!p->ok)
			continue;
		ibv_recv_wr rwr = {}, *rbad;
		ibv_sge rsge = {dst.addr(), uint32_t(buf_len), dst.mr->lkey};

		rwr.sg_list = &rsge;
		rwr.num_sge = 1;
		CHECK(!ibv_post_recv(p->b, &rwr, &rbad), "%s: post_recv", c.what);
		ibv_sge sge = {uintptr_t(c.local->addr), 256, c.local->lkey};
		int err = post(p->a, c.op, sge, dst.addr(), dst.mr->rkey);
		CHECK(!err, "%s: post_send failed with %s, expected a completion",
		      c.what, std::strerror(err));
		if (err)
			continue;
		if (expect_wc(p->a, IBV_WC_LOC_PROT_ERR, c.what)) {
			expect_err_state(p->a, c.what);
			ibv_sge ok = {mine.addr(), 16, mine.mr->lkey};
			CHECK(!post(p->a, IBV_WR_SEND, ok), "%s: post in ERR", c.what);
			expect_wc(p->a, IBV_WC_WR_FLUSH_ERR, c.what);
		}
		ibv_wc wc;
		CHECK(ibv_poll_cq(b_.cq, 1, &wc) == 0, "%s: the peer completed a receive",
		      c.what);
		CHECK(dst.intact(), "%s: the peer's memory changed", c.what);
		CHECK(theirs.intact() && noloc.intact(), "%s: local MR changed", c.what);
		std::printf("ok %s -> %s\n", c.what, status_name(IBV_WC_LOC_PROT_ERR));
		p.reset();
		drain(a_.cq);
		drain(b_.cq);
	}
}

void negative::remote_cases()
{
	buffer src, good, other_pd, loc_only, no_read, no_atomic;

	if (!src.reg(a_.pd, IBV_ACCESS_LOCAL_WRITE, 9) ||
	    !good.reg(b_.pd, remote_all, 10) ||
	    !other_pd.reg(b_.pd2, remote_all, 11) ||
	    !loc_only.reg(b_.pd, IBV_ACCESS_LOCAL_WRITE, 12) ||
	    !no_read.reg(b_.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_ATOMIC, 13) ||
	    !no_atomic.reg(b_.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ, 14))
		return;
	const uint64_t g = good.addr(), gend = g + buf_len;

	struct rcase {
		const char *what;
		ibv_wr_opcode op;
		uint64_t raddr;
		uint32_t rkey;
		uint32_t len;
		unsigned qp_access;	/* of the responder QP */
	};
	const rcase cases[] = {
		{"WRITE with an rkey of another PD", IBV_WR_RDMA_WRITE,
		 other_pd.addr(), other_pd.mr->rkey, 256, remote_all},
		{"WRITE with a wrong rkey", IBV_WR_RDMA_WRITE, g,
		 good.mr->rkey ^ 0x80, 256, remote_all},
		{"WRITE past the end of the MR", IBV_WR_RDMA_WRITE, gend - 8,
		 good.mr->rkey, 64, remote_all},
		{"WRITE before the start of the MR", IBV_WR_RDMA_WRITE, g - 64,
		 good.mr->rkey, 128, remote_all},
		{"READ past the end of the MR", IBV_WR_RDMA_READ, gend - 8,
		 good.mr->rkey, 64, remote_all},
		{"WRITE to an MR without REMOTE_WRITE", IBV_WR_RDMA_WRITE,
		 loc_only.addr(), loc_only.mr->rkey, 256, remote_all},
		{"READ of an MR without REMOTE_READ", IBV_WR_RDMA_READ,
		 no_read.addr(), no_read.mr->rkey, 256, remote_all},
		{"FETCH_ADD on an MR without REMOTE_ATOMIC",
		 IBV_WR_ATOMIC_FETCH_AND_ADD, no_atomic.addr(),
		 no_atomic.mr->rkey, 8, remote_all},
		{"CMP_SWAP with a wrong rkey", IBV_WR_ATOMIC_CMP_AND_SWP, g,
		 good.mr->rkey + 0x100, 8, remote_all},
		{"WRITE at a QP without REMOTE_WRITE", IBV_WR_RDMA_WRITE, g,
		 good.mr->rkey, 256,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ},
		{"READ at a QP without REMOTE_READ", IBV_WR_RDMA_READ, g,
		 good.mr->rkey, 256,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE},
	};
	for (const rcase &c : cases) {
		auto p = connect(a_.pd, c.qp_access);
		if (!p->ok)
			continue;
		src.fill();
		ibv_sge sge = {src.addr(), c.len, src.mr->lkey};
		int err = post(p->a, c.op, sge, c.raddr, c.rkey);
		CHECK(!err, "%s: post_send: %s", c.what, std::strerror(err));
		if (!err && expect_wc(p->a, IBV_WC_REM_ACCESS_ERR, c.what))
			std::printf("ok %s -> %s\n", c.what,
				    status_name(IBV_WC_REM_ACCESS_ERR));
		for (const buffer *b : {&good, &other_pd, &loc_only, &no_read,
					&no_atomic})
			CHECK(b->intact(), "%s: responder memory changed", c.what);
		CHECK(src.intact(), "%s: a refused READ/atomic wrote the local buffer",
		      c.what);
		p.reset();
		drain(a_.cq);
		drain(b_.cq);
	}

	/* The control: the same pair of MRs works when the keys are right. */
	auto p = connect(a_.pd);
	if (p->ok) {
		ibv_sge sge = {src.addr(), 256, src.mr->lkey};

		CHECK(!post(p->a, IBV_WR_RDMA_WRITE, sge, g + 512, good.mr->rkey),
		      "control WRITE: post");
		if (expect_wc(p->a, IBV_WC_SUCCESS, "control WRITE"))
			CHECK(!std::memcmp(good.mem.data() + 512, src.mem.data(), 256),
			      "control WRITE: data not placed");
		std::printf("ok control WRITE with valid keys -> success\n");
	}
}

/*
 * A receive into an MR without LOCAL_WRITE.  By command (METAROCE_NO_RINGS
 * set) POST_RECV refuses it at once.  Through the receive ring, which the
 * kernel takes without a doorbell (metaroce-abi.h, "Work queue rings"),
 * nothing checks it before a packet arrives, as on a hardware queue: the
 * post succeeds, and when the peer's SEND arrives the receive completes
 * with IBV_WC_LOC_PROT_ERR, the QP is in ERR, a receive posted after it
 * is flushed, and the MR's memory is untouched.
 */
void negative::recv_without_local_write()
{
	const char *no_rings = std::getenv("METAROCE_NO_RINGS");
	bool by_command = no_rings && *no_rings && std::strcmp(no_rings, "0");
	buffer ro, src, later;
	auto p = connect(a_.pd);

	if (!p->ok || !ro.reg(b_.pd, IBV_ACCESS_REMOTE_READ, 5) ||
	    !src.reg(a_.pd, IBV_ACCESS_LOCAL_WRITE, 15) ||
	    !later.reg(b_.pd, IBV_ACCESS_LOCAL_WRITE, 16))
		return;
	ibv_recv_wr wr = {}, *bad;
	ibv_sge sge = {ro.addr(), 256, ro.mr->lkey};

	wr.sg_list = &sge;
	wr.num_sge = 1;
	int err = ibv_post_recv(p->b, &wr, &bad);
	if (by_command) {
		CHECK(err == EINVAL, "post_recv into an MR without LOCAL_WRITE: "
		      "%s, expected EINVAL", std::strerror(err));
		std::printf("ok receive into an MR without LOCAL_WRITE -> %s\n",
			    std::strerror(err));
		return;
	}
	CHECK(!err, "post_recv into an MR without LOCAL_WRITE (ring): %s",
	      std::strerror(err));
	CHECK(!post(p->a, IBV_WR_SEND, {src.addr(), 256, src.mr->lkey}),
	      "post_send");
	if (!expect_wc(p->b, IBV_WC_LOC_PROT_ERR,
		       "receive into an MR without LOCAL_WRITE"))
		return;
	expect_err_state(p->b, "receive into an MR without LOCAL_WRITE");
	ibv_sge sge2 = {later.addr(), 256, later.mr->lkey};

	wr.wr_id = 2;
	wr.sg_list = &sge2;
	CHECK(!ibv_post_recv(p->b, &wr, &bad), "post_recv in ERR");
	expect_wc(p->b, IBV_WC_WR_FLUSH_ERR, "receive posted in ERR");
	CHECK(ro.intact() && later.intact(),
	      "receive into an MR without LOCAL_WRITE: memory written");
	drain(a_.cq);
	std::printf("ok receive into an MR without LOCAL_WRITE -> "
		    "IBV_WC_LOC_PROT_ERR, QP in ERR\n");
}

void negative::wrong_state()
{
	buffer b;

	if (!b.reg(a_.pd, IBV_ACCESS_LOCAL_WRITE, 6))
		return;
	ibv_qp *qp = vu::create_rc(a_.pd, a_.cq);
	CHECK(qp, "create_qp");
	if (!qp)
		return;
	ibv_sge sge = {b.addr(), 64, b.mr->lkey};
	ibv_recv_wr rwr = {}, *rbad;

	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	int err = post(qp, IBV_WR_SEND, sge);
	CHECK(err == EINVAL, "post_send in RESET: %s", std::strerror(err));
	err = ibv_post_recv(qp, &rwr, &rbad);
	CHECK(err == EINVAL, "post_recv in RESET: %s", std::strerror(err));
	CHECK(!vu::to_init(qp, remote_all), "to INIT");
	err = post(qp, IBV_WR_SEND, sge);
	CHECK(err == EINVAL, "post_send in INIT: %s", std::strerror(err));
	err = ibv_post_recv(qp, &rwr, &rbad);
	CHECK(err == 0, "post_recv in INIT: %s", std::strerror(err));
	CHECK(!vu::to_rtr(qp, 0x123, 0, b_.gid, gid_idx_), "to RTR");
	err = post(qp, IBV_WR_SEND, sge);
	CHECK(err == EINVAL, "post_send in RTR: %s", std::strerror(err));
	ibv_destroy_qp(qp);
	drain(a_.cq);
	std::printf("ok post_send in RESET/INIT/RTR and post_recv in RESET -> EINVAL\n");
}

void negative::registration()
{
	const size_t len = 4 * 4096;
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ibv_mr *mr;

	CHECK(m != MAP_FAILED, "mmap");
	if (m == MAP_FAILED)
		return;
	munmap(m, len);
	mr = ibv_reg_mr(a_.pd, m, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "reg_mr of an unmapped range: %s",
	      mr ? "succeeded" : std::strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	m = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED, "mmap");
	if (m == MAP_FAILED)
		return;
	mr = ibv_reg_mr(a_.pd, m, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "reg_mr of a read-only mapping for writing: %s",
	      mr ? "succeeded" : std::strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(a_.pd, m, len, IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "reg_mr of a read-only mapping for remote reads: %s",
	      std::strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(m, len);

	std::vector<uint8_t> ok(4096);
	mr = ibv_reg_mr(a_.pd, ok.data(), ok.size(), IBV_ACCESS_REMOTE_WRITE);
	CHECK(!mr && errno == EINVAL, "reg_mr REMOTE_WRITE without LOCAL_WRITE: %s",
	      mr ? "succeeded" : std::strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	std::printf("ok registration: unmapped EFAULT, read-only for writing EFAULT, "
		    "read-only for reading allowed, REMOTE_WRITE alone EINVAL\n");
}

/*
 * In a child process: the parent's lkey and rkey (of an MR with every
 * access) used by the child's own QPs.  The parent checks its memory.
 */
void negative::foreign_keys(uint32_t lkey, uint32_t rkey, uint64_t addr)
{
	buffer mine, dst;

	if (!mine.reg(a_.pd, IBV_ACCESS_LOCAL_WRITE, 20) ||
	    !dst.reg(b_.pd, remote_all, 21))
		return;
	{
		auto p = connect(a_.pd);
		if (p->ok) {
			ibv_sge sge = {mine.addr(), 256, lkey};

			CHECK(!post(p->a, IBV_WR_RDMA_WRITE, sge, dst.addr(),
				    dst.mr->rkey),
			      "foreign lkey: post");
			if (expect_wc(p->a, IBV_WC_LOC_PROT_ERR,
				      "another process's lkey"))
				std::printf("ok another process's lkey -> %s\n",
					    status_name(IBV_WC_LOC_PROT_ERR));
		}
	}
	drain(a_.cq);
	drain(b_.cq);
	auto p = connect(a_.pd);
	if (p->ok) {
		ibv_sge sge = {mine.addr(), 256, mine.mr->lkey};

		CHECK(!post(p->a, IBV_WR_RDMA_WRITE, sge, addr, rkey),
		      "foreign rkey: post");
		if (expect_wc(p->a, IBV_WC_REM_ACCESS_ERR, "another process's rkey"))
			std::printf("ok another process's rkey -> %s\n",
				    status_name(IBV_WC_REM_ACCESS_ERR));
	}
	CHECK(dst.intact(), "foreign lkey: the peer's memory changed");
}

/*
 * One pair through two connections, at path MTU 256 and then, after
 * RESET, at 1024: the second connection's WRITE (packets a builds) and
 * READ (response packets b builds) are full 1024-byte packets.
 */
void negative::reconnect_larger_mtu()
{
	buffer src, dst;
	ibv_qp_attr reset = {};
	const uint32_t psn_a = 0x300, psn_b = 0x400;

	if (!src.reg(a_.pd, IBV_ACCESS_LOCAL_WRITE, 40) ||
	    !dst.reg(b_.pd, remote_all, 41))
		return;
	pair p;
	p.a = vu::create_rc(a_.pd, a_.cq);
	p.b = vu::create_rc(b_.pd, b_.cq);
	CHECK(p.a && p.b, "create_qp: %s", std::strerror(errno));
	if (!p.a || !p.b)
		return;
	reset.qp_state = IBV_QPS_RESET;
	for (ibv_mtu mtu : {IBV_MTU_256, IBV_MTU_1024}) {
		const int bytes = 128 << mtu;	/* ibv_mtu 1: 256 */
		int err = ibv_modify_qp(p.a, &reset, IBV_QP_STATE);

		err = err ?: ibv_modify_qp(p.b, &reset, IBV_QP_STATE);
		err = err ?: vu::to_init(p.a, remote_all);
		err = err ?: vu::to_init(p.b, remote_all);
		err = err ?: vu::to_rtr(p.a, p.b->qp_num, psn_b, b_.gid, gid_idx_, mtu);
		err = err ?: vu::to_rtr(p.b, p.a->qp_num, psn_a, a_.gid, gid_idx_, mtu);
		err = err ?: vu::to_rts(p.a, psn_a, 3);
		err = err ?: vu::to_rts(p.b, psn_b, 3);
		CHECK(!err, "connect at path MTU %d: %s", bytes, std::strerror(err));
		if (err)
			return;

		src.fill();
		dst.fill();
		ibv_sge sge = {src.addr(), uint32_t(buf_len), src.mr->lkey};
		CHECK(!post(p.a, IBV_WR_RDMA_WRITE, sge, dst.addr(), dst.mr->rkey),
		      "WRITE at path MTU %d: post", bytes);
		if (expect_wc(p.a, IBV_WC_SUCCESS, "WRITE after a reconnect"))
			CHECK(!std::memcmp(dst.mem.data(), src.mem.data(), buf_len),
			      "WRITE at path MTU %d: data not placed", bytes);
		dst.fill();
		CHECK(!post(p.a, IBV_WR_RDMA_READ, sge, dst.addr(), dst.mr->rkey),
		      "READ at path MTU %d: post", bytes);
		if (expect_wc(p.a, IBV_WC_SUCCESS, "READ after a reconnect"))
			CHECK(!std::memcmp(src.mem.data(), dst.mem.data(), buf_len),
			      "READ at path MTU %d: data not placed", bytes);
		drain(a_.cq);
		drain(b_.cq);
	}
	std::printf("ok reconnect after RESET at a larger path MTU -> WRITE and "
		    "READ intact\n");
}

void negative::run_all()
{
	local_other_pd();
	remote_cases();
	recv_without_local_write();
	wrong_state();
	registration();
	reconnect_larger_mtu();
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev_a = nullptr, *dev_b = nullptr;
	int gid_idx = -1, c, fds[2];

	while ((c = getopt(argc, argv, "a:b:g:")) != -1) {
		switch (c) {
		case 'a': dev_a = optarg; break;
		case 'b': dev_b = optarg; break;
		case 'g': gid_idx = std::atoi(optarg); break;
		default: return 2;
		}
	}
	if (!dev_a || !dev_b || gid_idx < 0) {
		std::fprintf(stderr, "usage: %s -a DEV_A -b DEV_B -g GID_IDX\n",
			     argv[0]);
		return 2;
	}
	/* The child of the cross-process case, forked before any verbs. */
	if (pipe(fds))
		return 2;
	pid_t child = fork();
	if (child == 0) {
		uint32_t keys[2];
		uint64_t addr;
		negative n;

		::close(fds[1]);
		if (read(fds[0], keys, sizeof(keys)) != sizeof(keys) ||
		    read(fds[0], &addr, sizeof(addr)) != sizeof(addr))
			_exit(3);
		if (!n.open(dev_a, dev_b, gid_idx)) {
			std::printf("FAIL: child setup\n");
			std::fflush(stdout);
			_exit(1);
		}
		n.foreign_keys(keys[0], keys[1], addr);
		n.close();
		std::fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	::close(fds[0]);

	negative n;
	if (!n.open(dev_a, dev_b, gid_idx)) {
		std::printf("FAIL: setup\n");
		kill(child, SIGKILL);
		return 1;
	}
	n.run_all();
	{
		/* An MR of ours on B, every access, for the child to try. */
		ibv_context *ctx = vu::open_device(dev_b);
		ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
		buffer theirs;
		int st = 0;

		if (pd && theirs.reg(pd, remote_all, 30)) {
			uint32_t keys[2] = {theirs.mr->lkey, theirs.mr->rkey};
			uint64_t addr = theirs.addr();

			CHECK(write(fds[1], keys, sizeof(keys)) == sizeof(keys) &&
			      write(fds[1], &addr, sizeof(addr)) == sizeof(addr),
			      "pipe");
		}
		::close(fds[1]);
		CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0,
		      "the cross-process child failed (status 0x%x)", st);
		CHECK(theirs.intact(), "another process wrote our MR");
		if (theirs.mr) {
			ibv_dereg_mr(theirs.mr);
			theirs.mr = nullptr;
		}
		if (pd)
			ibv_dealloc_pd(pd);
		if (ctx)
			ibv_close_device(ctx);
	}
	n.close();
	if (failures) {
		std::printf("FAIL: negative: %d failed checks\n", failures);
		return 1;
	}
	std::printf("PASS: negative\n");
	return 0;
}
