// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of the work-request API (ibv_wr_*, ibv_wr_post(3)) on two
 * MetaRoCE devices, one process opening both (each device sends from its
 * own netdev's namespace):
 *
 *   metaroce_wr_test --a DEV --b DEV --gid IDX [--bench ROUNDS]
 *
 * QPs of DEV --a post through the API to QPs of DEV --b.  Checked:
 *   - create: IBV_QP_INIT_ATTR_SEND_OPS_FLAGS gives a qp_ex (none without
 *     it); opcodes the device lacks (LOCAL_INV, BIND_MW, SEND_WITH_INV,
 *     TSO, ATOMIC_WRITE, an undefined bit) and RDMA/atomics on UD fail
 *     with EOPNOTSUPP;
 *   - every opcode: SEND, SEND_WITH_IMM (immediate in the receive
 *     completion), RDMA_WRITE, RDMA_WRITE_WITH_IMM (data and immediate),
 *     RDMA_READ, ATOMIC_CMP_AND_SWP (hit and miss), ATOMIC_FETCH_AND_ADD
 *     (old value returned, memory updated); an SGE list, inline data
 *     (the buffer overwritten right after the setter) and an inline list;
 *     wr_id in the completions, unsignaled WRs without completions;
 *   - IBV_SEND_FENCE: a WRITE fenced behind a READ of the same local
 *     buffer, in one ibv_wr_complete(), writes what the READ brought;
 *   - one ibv_wr_complete() of max_send_wr (1024) WRITEs, more than one
 *     POST_SEND command of libibverbs can carry: all complete, in order;
 *   - ibv_wr_abort() posts nothing;
 *   - each latched error makes ibv_wr_complete() return it and post
 *     nothing, good WRs before or after the bad one included: an opcode
 *     the QP was not created for, an unsupported one, too many SGEs,
 *     inline data too long, a full batch, bad wr_flags, a setter before
 *     any builder, inline data on a READ, an atomic without an 8-byte
 *     buffer, set_ud_addr on RC, a UD WR without an address;
 *   - UD: SEND_WITH_IMM through wr_set_ud_addr() arrives with its GRH.
 * "Posts nothing" is seen as: a signaled marker WR posted afterwards is the
 * first completion, and memory the rejected WRs would write is unchanged.
 * Prints "FAIL: ..." lines and exits 1 on any failed check.  --bench
 * then measures 64 KiB WRITEs through ibv_post_send() and the API side by
 * side (printed, not checked).
 */
#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <infiniband/verbs.h>
#include "check.h"
#include "verbs_util.h"

namespace {

int failures;

constexpr uint32_t batch_wr = 1024; /* a power of two: granted as asked */
constexpr uint32_t max_sge = 4;
constexpr uint32_t max_inline = 64;
constexpr size_t region = 1 << 20;
constexpr uint32_t qkey = 0x22220000;
constexpr size_t grh_len = 40;
constexpr uint64_t all_ops =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

struct side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *scq = nullptr, *rcq = nullptr;
	ibv_mr *mr = nullptr;
	uint8_t *buf = nullptr; /* region bytes, 8-byte aligned */
	ibv_gid gid = {};
	ibv_mtu mtu = IBV_MTU_1024;
};

bool open_side(side &s, const std::string &dev, int gid_idx)
{
	ibv_port_attr port = {};

	s.ctx = vu::open_device(dev);
	CHECK(s.ctx, "open %s", dev.c_str());
	if (!s.ctx)
		return false;
	CHECK(ibv_query_port(s.ctx, 1, &port) == 0, "query_port");
	CHECK(ibv_query_gid(s.ctx, 1, gid_idx, &s.gid) == 0, "query_gid");
	s.mtu = port.active_mtu;
	s.pd = ibv_alloc_pd(s.ctx);
	s.scq = ibv_create_cq(s.ctx, 2 * batch_wr, nullptr, nullptr, 0);
	s.rcq = ibv_create_cq(s.ctx, 2 * batch_wr, nullptr, nullptr, 0);
	s.buf = static_cast<uint8_t *>(std::aligned_alloc(4096, region));
	CHECK(s.pd && s.scq && s.rcq && s.buf, "pd/cq/buf: %s",
	      std::strerror(errno));
	if (!s.pd || !s.scq || !s.rcq || !s.buf)
		return false;
	std::memset(s.buf, 0, region);
	s.mr = ibv_reg_mr(s.pd, s.buf, region,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(s.mr, "reg_mr: %s", std::strerror(errno));
	return s.mr != nullptr;
}

/* A QP of @type on @s; with @ops != 0 through SEND_OPS_FLAGS. */
ibv_qp *create(side &s, ibv_qp_type type, uint64_t ops, bool with_ops = true)
{
	ibv_qp_init_attr_ex a = {};

	a.send_cq = s.scq;
	a.recv_cq = s.rcq;
	a.qp_type = type;
	a.cap.max_send_wr = batch_wr;
	a.cap.max_recv_wr = 64;
	a.cap.max_send_sge = max_sge;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = max_inline;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = s.pd;
	if (with_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = ops;
	}
	ibv_qp *qp = ibv_create_qp_ex(s.ctx, &a);
	if (qp)
		CHECK(a.cap.max_send_wr == batch_wr && a.cap.max_send_sge == max_sge &&
			      a.cap.max_inline_data == max_inline,
		      "granted caps %u/%u/%u", a.cap.max_send_wr,
		      a.cap.max_send_sge, a.cap.max_inline_data);
	return qp;
}

bool connect_rc(ibv_qp *qa, side &a, ibv_qp *qb, side &b, int gid_idx)
{
	const unsigned int access = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
	bool ok = vu::to_init(qa, access) == 0 && vu::to_init(qb, access) == 0 &&
		  vu::to_rtr(qa, qb->qp_num, 0x100, b.gid, gid_idx, a.mtu) == 0 &&
		  vu::to_rtr(qb, qa->qp_num, 0x200, a.gid, gid_idx, b.mtu) == 0 &&
		  vu::to_rts(qa, 0x200) == 0 && vu::to_rts(qb, 0x100) == 0;

	CHECK(ok, "RC QPs to RTS: %s", std::strerror(errno));
	return ok;
}

bool connect_ud(ibv_qp *qp)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_QKEY))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return false;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x42;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
}

void post_recv(side &s, ibv_qp *qp, size_t off, uint32_t len, uint64_t id)
{
	ibv_sge sge = { uintptr_t(s.buf + off), len, s.mr->lkey };
	ibv_recv_wr wr = {}, *bad = nullptr;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

/* The next completion of @cq, which must be a success for @wr_id. */
ibv_wc expect(ibv_cq *cq, uint64_t wr_id, const char *what)
{
	ibv_wc wc = {};
	int n = vu::poll_one(cq, wc);

	CHECK(n == 1, "%s: no completion (%d)", what, n);
	if (n != 1)
		return wc;
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id,
	      "%s: completion of wr_id %#llx status %s, expected %#llx",
	      what, (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status), (unsigned long long)wr_id);
	return wc;
}

void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = uint8_t(seed + i * 13);
}

bool filled(const uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != uint8_t(seed + i * 13))
			return false;
	return true;
}

bool zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

struct rc_pair {
	side &a, &b;
	ibv_qp *qa, *qb;
	ibv_qp_ex *x;
	uint64_t raddr(size_t off) const { return uintptr_t(b.buf + off); }
	uint32_t rkey() const { return b.mr->rkey; }
	uint64_t laddr(size_t off) const { return uintptr_t(a.buf + off); }
	uint32_t lkey() const { return a.mr->lkey; }
};

/* Layout of the regions (offsets into each side's buffer). */
constexpr size_t off_src = 0;	      /* A: data sent and written */
constexpr size_t off_dst = 64 << 10;  /* B: written, received, read */
constexpr size_t off_atom = 128 << 10; /* B: atomic targets */
constexpr size_t off_res = 128 << 10;  /* A: atomic results, read data */
constexpr size_t off_batch = 256 << 10; /* B: the batch's writes */
constexpr size_t off_reject = 512 << 10; /* B: what rejected WRs aim at */

void check_opcodes(rc_pair &p)
{
	ibv_qp_ex *x = p.x;
	ibv_wc wc;

	/* SEND over one SGE. */
	fill(p.a.buf + off_src, 3000, 1);
	post_recv(p.b, p.qb, off_dst, 4096, 0xb1);
	ibv_wr_start(x);
	x->wr_id = 0xa1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_src), 3000);
	CHECK(ibv_wr_complete(x) == 0, "SEND: wr_complete");
	expect(p.a.scq, 0xa1, "SEND");
	wc = expect(p.b.rcq, 0xb1, "SEND receive");
	CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == 3000 &&
		      !(wc.wc_flags & IBV_WC_WITH_IMM),
	      "SEND receive: opcode %d len %u flags %#x", wc.opcode,
	      wc.byte_len, wc.wc_flags);
	CHECK(filled(p.b.buf + off_dst, 3000, 1), "SEND data");

	/* SEND_WITH_IMM over an SGE list of three pieces. */
	fill(p.a.buf + off_src, 900, 2);
	post_recv(p.b, p.qb, off_dst, 4096, 0xb2);
	ibv_sge list[3] = {
		{ p.laddr(off_src), 100, p.lkey() },
		{ p.laddr(off_src + 100), 300, p.lkey() },
		{ p.laddr(off_src + 400), 500, p.lkey() },
	};
	ibv_wr_start(x);
	x->wr_id = 0xa2;
	ibv_wr_send_imm(x, htonl(0x12345678));
	ibv_wr_set_sge_list(x, 3, list);
	CHECK(ibv_wr_complete(x) == 0, "SEND_WITH_IMM: wr_complete");
	expect(p.a.scq, 0xa2, "SEND_WITH_IMM");
	wc = expect(p.b.rcq, 0xb2, "SEND_WITH_IMM receive");
	CHECK(wc.byte_len == 900 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      ntohl(wc.imm_data) == 0x12345678,
	      "SEND_WITH_IMM receive: len %u flags %#x imm %#x", wc.byte_len,
	      wc.wc_flags, ntohl(wc.imm_data));
	CHECK(filled(p.b.buf + off_dst, 900, 2), "SEND_WITH_IMM data (SGE list)");

	/* RDMA_WRITE, then RDMA_WRITE_WITH_IMM: one batch, both signaled. */
	fill(p.a.buf + off_src, 8192, 3);
	post_recv(p.b, p.qb, off_dst + 16384, 64, 0xb3);
	std::memset(p.b.buf + off_dst, 0, 16384);
	ibv_wr_start(x);
	x->wr_id = 0xa3;
	ibv_wr_rdma_write(x, p.rkey(), p.raddr(off_dst));
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_src), 4096);
	x->wr_id = 0xa4;
	ibv_wr_rdma_write_imm(x, p.rkey(), p.raddr(off_dst + 4096),
			      htonl(0xfeedbeef));
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_src + 4096), 4096);
	CHECK(ibv_wr_complete(x) == 0, "RDMA_WRITE(_WITH_IMM): wr_complete");
	expect(p.a.scq, 0xa3, "RDMA_WRITE");
	expect(p.a.scq, 0xa4, "RDMA_WRITE_WITH_IMM");
	wc = expect(p.b.rcq, 0xb3, "RDMA_WRITE_WITH_IMM receive");
	CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      ntohl(wc.imm_data) == 0xfeedbeef && wc.byte_len == 4096,
	      "WRITE_WITH_IMM receive: opcode %d flags %#x imm %#x len %u",
	      wc.opcode, wc.wc_flags, ntohl(wc.imm_data), wc.byte_len);
	CHECK(filled(p.b.buf + off_dst, 8192, 3), "RDMA_WRITE data");

	/* RDMA_READ into two local SGEs. */
	fill(p.b.buf + off_dst, 6000, 4);
	std::memset(p.a.buf + off_res, 0, 8192);
	ibv_sge rd[2] = {
		{ p.laddr(off_res), 2000, p.lkey() },
		{ p.laddr(off_res + 2000), 4000, p.lkey() },
	};
	ibv_wr_start(x);
	x->wr_id = 0xa5;
	ibv_wr_rdma_read(x, p.rkey(), p.raddr(off_dst));
	ibv_wr_set_sge_list(x, 2, rd);
	CHECK(ibv_wr_complete(x) == 0, "RDMA_READ: wr_complete");
	wc = expect(p.a.scq, 0xa5, "RDMA_READ");
	CHECK(wc.opcode == IBV_WC_RDMA_READ, "RDMA_READ opcode %d", wc.opcode);
	CHECK(filled(p.a.buf + off_res, 6000, 4) &&
		      zero(p.a.buf + off_res + 6000, 100),
	      "RDMA_READ data");

	/* Atomics: CMP_AND_SWP hit, miss; FETCH_AND_ADD. */
	auto *target = reinterpret_cast<uint64_t *>(p.b.buf + off_atom);
	auto *result = reinterpret_cast<uint64_t *>(p.a.buf + off_res);
	*target = 0x1111222233334444ull;
	result[0] = result[1] = result[2] = 0;
	ibv_wr_start(x);
	x->wr_id = 0xa6;
	ibv_wr_atomic_cmp_swp(x, p.rkey(), p.raddr(off_atom),
			      0x1111222233334444ull, 0x5555666677778888ull);
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_res), 8);
	x->wr_id = 0xa7;
	ibv_wr_atomic_cmp_swp(x, p.rkey(), p.raddr(off_atom), 1, 2);
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_res + 8), 8);
	x->wr_id = 0xa8;
	ibv_wr_atomic_fetch_add(x, p.rkey(), p.raddr(off_atom), 0x10);
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_res + 16), 8);
	CHECK(ibv_wr_complete(x) == 0, "atomics: wr_complete");
	wc = expect(p.a.scq, 0xa6, "CMP_AND_SWP hit");
	CHECK(wc.opcode == IBV_WC_COMP_SWAP, "CMP_AND_SWP opcode %d", wc.opcode);
	expect(p.a.scq, 0xa7, "CMP_AND_SWP miss");
	wc = expect(p.a.scq, 0xa8, "FETCH_AND_ADD");
	CHECK(wc.opcode == IBV_WC_FETCH_ADD, "FETCH_AND_ADD opcode %d", wc.opcode);
	CHECK(result[0] == 0x1111222233334444ull, "CMP_AND_SWP hit returned %#llx",
	      (unsigned long long)result[0]);
	CHECK(result[1] == 0x5555666677778888ull, "CMP_AND_SWP miss returned %#llx",
	      (unsigned long long)result[1]);
	CHECK(result[2] == 0x5555666677778888ull, "FETCH_AND_ADD returned %#llx",
	      (unsigned long long)result[2]);
	CHECK(*target == 0x5555666677778898ull, "atomic target %#llx",
	      (unsigned long long)*target);

	/*
	 * Inline: copied by the setter, so the buffer may change before
	 * wr_complete; an inline list is concatenated.  Unsignaled WRs in
	 * front of a signaled one: only its completion appears.
	 */
	uint8_t stack[max_inline];
	fill(stack, sizeof(stack), 5);
	std::memset(p.b.buf + off_dst, 0, 4096);
	post_recv(p.b, p.qb, off_dst + 1024, 1024, 0xb4);
	ibv_wr_start(x);
	x->wr_id = 0xa9;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, p.rkey(), p.raddr(off_dst));
	ibv_wr_set_inline_data(x, stack, sizeof(stack));
	std::memset(stack, 0xee, sizeof(stack));
	uint8_t piece1[10], piece2[20];
	fill(piece1, sizeof(piece1), 6);
	fill(piece2, sizeof(piece2), 7);
	ibv_data_buf pieces[2] = { { piece1, sizeof(piece1) },
				   { piece2, sizeof(piece2) } };
	x->wr_id = 0xaa;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, pieces);
	std::memset(piece1, 0xee, sizeof(piece1));
	CHECK(ibv_wr_complete(x) == 0, "inline: wr_complete");
	expect(p.a.scq, 0xaa, "inline SEND after an unsignaled inline WRITE");
	wc = expect(p.b.rcq, 0xb4, "inline SEND receive");
	CHECK(wc.byte_len == 30, "inline list length %u", wc.byte_len);
	CHECK(filled(p.b.buf + off_dst, max_inline, 5), "inline WRITE data");
	fill(piece1, sizeof(piece1), 6);
	CHECK(!std::memcmp(p.b.buf + off_dst + 1024, piece1, 10) &&
		      !std::memcmp(p.b.buf + off_dst + 1034, piece2, 20),
	      "inline list data");
}

/*
 * IBV_SEND_FENCE (IBTA 10.8.3.3): a WR fenced behind a READ starts only
 * once the READ completed, so a WRITE from the buffer the READ fills
 * carries the data read, not what the buffer held when it was posted.
 */
void check_fence(rc_pair &p)
{
	constexpr size_t len = 8192;
	constexpr size_t off_fenced = off_dst + 16384; /* B: the WRITE's target */
	ibv_qp_ex *x = p.x;

	fill(p.b.buf + off_dst, len, 8);
	std::memset(p.a.buf + off_res, 0, len);
	std::memset(p.b.buf + off_fenced, 0, len);
	ibv_wr_start(x);
	x->wr_id = 0xc1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, p.rkey(), p.raddr(off_dst));
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_res), len);
	x->wr_id = 0xc2;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_write(x, p.rkey(), p.raddr(off_fenced));
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_res), len);
	CHECK(ibv_wr_complete(x) == 0, "fence: wr_complete");
	expect(p.a.scq, 0xc1, "READ before a fence");
	expect(p.a.scq, 0xc2, "fenced WRITE");
	CHECK(filled(p.a.buf + off_res, len, 8), "READ before a fence: data");
	CHECK(filled(p.b.buf + off_fenced, len, 8),
	      "fenced WRITE did not carry the data of the READ before it");
}

/* max_send_wr WRITEs in one wr_complete; all signaled, in order. */
void check_batch(rc_pair &p)
{
	ibv_qp_ex *x = p.x;
	constexpr uint32_t len = 64;

	fill(p.a.buf + off_src, batch_wr * len / 4, 8); /* reused 4x */
	std::memset(p.b.buf + off_batch, 0, batch_wr * len);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	for (uint32_t i = 0; i < batch_wr; i++) {
		x->wr_id = 0x10000 + i;
		ibv_wr_rdma_write(x, p.rkey(), p.raddr(off_batch + i * len));
		ibv_wr_set_sge(x, p.lkey(),
			       p.laddr(off_src + (i % (batch_wr / 4)) * len), len);
	}
	int ret = ibv_wr_complete(x);
	CHECK(ret == 0, "batch of %u: wr_complete %d (%s)", batch_wr, ret,
	      std::strerror(ret));
	uint32_t got = 0, in_order = 0;
	for (uint32_t i = 0; ret == 0 && i < batch_wr; i++) {
		ibv_wc wc = {};
		if (vu::poll_one(p.a.scq, wc) != 1)
			break;
		got++;
		in_order += wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x10000 + i;
	}
	CHECK(got == batch_wr && in_order == batch_wr,
	      "batch: %u completions, %u in order, of %u", got, in_order,
	      batch_wr);
	bool data = true;
	for (uint32_t i = 0; i < batch_wr; i++)
		data = data && !std::memcmp(p.b.buf + off_batch + i * len,
					    p.a.buf + off_src +
						    (i % (batch_wr / 4)) * len,
					    len);
	CHECK(data, "batch data");
}

/*
 * After a rejected or aborted batch: a signaled marker must be the next
 * completion, and the region rejected WRs aimed at still zero.
 */
void expect_nothing_posted(rc_pair &p, const char *what)
{
	ibv_qp_ex *x = p.x;
	char label[128];

	std::snprintf(label, sizeof(label), "marker after %s", what);
	ibv_wr_start(x);
	x->wr_id = 0x7777;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, p.rkey(), p.raddr(off_dst));
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_src), 8);
	CHECK(ibv_wr_complete(x) == 0, "%s: wr_complete", label);
	ibv_wc wc = expect(p.a.scq, 0x7777, label);
	CHECK(zero(p.b.buf + off_reject, 64 << 10), "%s: rejected WRs wrote",
	      what);
	/* After a failure, start the next case clean: one failure, one line. */
	for (int i = 0; wc.wr_id != 0x7777 && i < 2 * int(batch_wr) &&
			vu::poll_one(p.a.scq, wc, 5) == 1;
	     i++)
		;
	std::memset(p.b.buf + off_reject, 0, 64 << 10);
}

/* A good signaled WRITE into the reject region (must not happen). */
void good_write(rc_pair &p, uint64_t id)
{
	p.x->wr_id = id;
	p.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p.x, p.rkey(), p.raddr(off_reject + (id & 0xff) * 64));
	ibv_wr_set_sge(p.x, p.lkey(), p.laddr(off_src), 64);
}

void check_errors(rc_pair &p, ibv_qp_ex *limited)
{
	ibv_qp_ex *x = p.x;
	int ret;

	fill(p.a.buf + off_src, 4096, 9);
	std::memset(p.b.buf + off_reject, 0, 64 << 10);

	/* Abort: nothing of the batch is posted. */
	ibv_wr_start(x);
	for (uint64_t i = 1; i <= 5; i++)
		good_write(p, 0x100 + i);
	ibv_wr_abort(x);
	expect_nothing_posted(p, "wr_abort");

	struct bad_case {
		const char *what;
		int err;
		void (*build)(rc_pair &p);
	};
	static const bad_case cases[] = {
		{ "too many SGEs", EINVAL,
		  [](rc_pair &p) {
			  ibv_sge sges[max_sge + 1];
			  for (auto &s : sges)
				  s = { p.laddr(off_src), 8, p.lkey() };
			  ibv_wr_rdma_write(p.x, p.rkey(), p.raddr(off_reject));
			  ibv_wr_set_sge_list(p.x, max_sge + 1, sges);
		  } },
		{ "inline data too long", EINVAL,
		  [](rc_pair &p) {
			  static uint8_t big[max_inline + 1];
			  ibv_wr_rdma_write(p.x, p.rkey(), p.raddr(off_reject));
			  ibv_wr_set_inline_data(p.x, big, sizeof(big));
		  } },
		{ "inline list too long", EINVAL,
		  [](rc_pair &p) {
			  static uint8_t half[max_inline / 2 + 1];
			  ibv_data_buf l[2] = { { half, sizeof(half) },
						{ half, sizeof(half) } };
			  ibv_wr_send(p.x);
			  ibv_wr_set_inline_data_list(p.x, 2, l);
		  } },
		{ "bad wr_flags", EINVAL,
		  [](rc_pair &p) {
			  p.x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
			  ibv_wr_rdma_write(p.x, p.rkey(), p.raddr(off_reject));
			  ibv_wr_set_sge(p.x, p.lkey(), p.laddr(off_src), 8);
		  } },
		{ "inline data on a READ", EINVAL,
		  [](rc_pair &p) {
			  uint8_t d[8] = {};
			  ibv_wr_rdma_read(p.x, p.rkey(), p.raddr(off_reject));
			  ibv_wr_set_inline_data(p.x, d, sizeof(d));
		  } },
		{ "atomic with a 4-byte buffer", EINVAL,
		  [](rc_pair &p) {
			  ibv_wr_atomic_fetch_add(p.x, p.rkey(),
						  p.raddr(off_atom), 1);
			  ibv_wr_set_sge(p.x, p.lkey(), p.laddr(off_res), 4);
		  } },
		{ "set_ud_addr on an RC QP", EINVAL,
		  [](rc_pair &p) {
			  ibv_wr_send(p.x);
			  ibv_wr_set_ud_addr(p.x, nullptr, 1, qkey);
		  } },
		{ "LOCAL_INV (not implemented)", EOPNOTSUPP,
		  [](rc_pair &p) { ibv_wr_local_inv(p.x, 1); } },
		{ "SEND_WITH_INV (not implemented)", EOPNOTSUPP,
		  [](rc_pair &p) { ibv_wr_send_inv(p.x, 1); } },
	};
	for (const bad_case &c : cases) {
		/* Good WRs on both sides of the bad one. */
		ibv_wr_start(x);
		good_write(p, 0x201);
		c.build(p);
		good_write(p, 0x202);
		ret = ibv_wr_complete(x);
		CHECK(ret == c.err, "%s: wr_complete %d (%s), expected %d", c.what,
		      ret, std::strerror(ret), c.err);
		expect_nothing_posted(p, c.what);
	}

	/* A setter before any builder. */
	ibv_wr_start(x);
	ibv_wr_set_sge(x, p.lkey(), p.laddr(off_src), 8);
	good_write(p, 0x203);
	ret = ibv_wr_complete(x);
	CHECK(ret == EINVAL, "setter before builder: %d", ret);
	expect_nothing_posted(p, "setter before builder");

	/* One more WR than the batch holds: none is posted. */
	ibv_wr_start(x);
	for (uint32_t i = 0; i <= batch_wr; i++)
		good_write(p, 0x300 + (i & 0xff));
	ret = ibv_wr_complete(x);
	CHECK(ret == ENOMEM, "batch of max_send_wr + 1: %d (%s)", ret,
	      std::strerror(ret));
	expect_nothing_posted(p, "a full batch");

	/* An opcode the QP was not created with (it has SEND and WRITE). */
	ibv_wr_start(limited);
	limited->wr_id = 1;
	ibv_wr_rdma_read(limited, p.rkey(), p.raddr(off_reject));
	ret = ibv_wr_complete(limited);
	CHECK(ret == EOPNOTSUPP, "READ on a SEND|WRITE QP: %d (%s)", ret,
	      std::strerror(ret));
	ibv_wr_start(limited);
	ibv_wr_atomic_fetch_add(limited, p.rkey(), p.raddr(off_atom), 1);
	ret = ibv_wr_complete(limited);
	CHECK(ret == EOPNOTSUPP, "FETCH_AND_ADD on a SEND|WRITE QP: %d", ret);
	/* An empty batch is no error and posts nothing. */
	ibv_wr_start(x);
	CHECK(ibv_wr_complete(x) == 0, "empty batch");
	expect_nothing_posted(p, "errors");
}

void check_create(side &a)
{
	struct {
		ibv_qp_type type;
		uint64_t ops;
		const char *what;
	} const refused[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_LOCAL_INV, "RC LOCAL_INV" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_BIND_MW, "RC BIND_MW" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_SEND_WITH_INV, "RC SEND_WITH_INV" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO, "RC TSO" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE, "RC ATOMIC_WRITE" },
		{ IBV_QPT_RC, all_ops | (1ull << 11), "RC undefined bit 11" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
		  "UD RDMA_WRITE" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		  "UD FETCH_AND_ADD" },
	};
	for (const auto &r : refused) {
		errno = 0;
		ibv_qp *qp = create(a, r.type, r.ops);
		CHECK(!qp && errno == EOPNOTSUPP, "%s: %p errno %d", r.what,
		      static_cast<void *>(qp), errno);
		if (qp)
			ibv_destroy_qp(qp);
	}
	ibv_qp *plain = create(a, IBV_QPT_RC, 0, false);
	CHECK(plain && !ibv_qp_to_qp_ex(plain),
	      "a QP without SEND_OPS_FLAGS has a qp_ex");
	if (plain)
		ibv_destroy_qp(plain);
	ibv_qp *none = create(a, IBV_QPT_RC, 0);
	CHECK(none && ibv_qp_to_qp_ex(none), "SEND_OPS_FLAGS 0: %s",
	      std::strerror(errno));
	if (none)
		ibv_destroy_qp(none);
}

void check_ud(side &a, side &b, int gid_idx)
{
	ibv_qp *ua = create(a, IBV_QPT_UD,
			    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	ibv_qp *ub = create(b, IBV_QPT_UD, 0, false);
	CHECK(ua && ub, "UD QPs: %s", std::strerror(errno));
	if (!ua || !ub)
		return;
	CHECK(connect_ud(ua) && connect_ud(ub), "UD QPs to RTS");
	ibv_ah_attr aa = {};
	aa.is_global = 1;
	aa.grh.dgid = b.gid;
	aa.grh.sgid_index = uint8_t(gid_idx);
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	ibv_ah *ah = ibv_create_ah(a.pd, &aa);
	CHECK(ah, "create_ah: %s", std::strerror(errno));
	ibv_qp_ex *x = ibv_qp_to_qp_ex(ua);
	CHECK(x, "UD qp_ex");
	if (!ah || !x)
		return;

	/* Without an address the batch fails and the good SEND stays. */
	fill(a.buf + off_src, 512, 10);
	ibv_wr_start(x);
	x->wr_id = 0xd0;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, ub->qp_num, qkey);
	ibv_wr_set_sge(x, a.mr->lkey, uintptr_t(a.buf + off_src), 512);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a.mr->lkey, uintptr_t(a.buf + off_src), 512);
	int ret = ibv_wr_complete(x);
	CHECK(ret == EINVAL, "UD WR without set_ud_addr: %d", ret);

	post_recv(b, ub, off_dst, grh_len + 1024, 0xe1);
	ibv_wr_start(x);
	x->wr_id = 0xd1;
	ibv_wr_send_imm(x, htonl(0xabcdef01));
	ibv_wr_set_ud_addr(x, ah, ub->qp_num, qkey);
	ibv_wr_set_sge(x, a.mr->lkey, uintptr_t(a.buf + off_src), 512);
	CHECK(ibv_wr_complete(x) == 0, "UD SEND_WITH_IMM: wr_complete");
	/* The first completion is this one's: the rejected SEND went nowhere. */
	expect(a.scq, 0xd1, "UD SEND_WITH_IMM");
	ibv_wc wc = expect(b.rcq, 0xe1, "UD receive");
	CHECK(wc.byte_len == grh_len + 512 && (wc.wc_flags & IBV_WC_GRH) &&
		      (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      ntohl(wc.imm_data) == 0xabcdef01 && wc.src_qp == ua->qp_num,
	      "UD receive: len %u flags %#x imm %#x src_qp %u", wc.byte_len,
	      wc.wc_flags, ntohl(wc.imm_data), wc.src_qp);
	CHECK(filled(b.buf + off_dst + grh_len, 512, 10), "UD data");
	ibv_destroy_ah(ah);
	CHECK(ibv_destroy_qp(ua) == 0 && ibv_destroy_qp(ub) == 0, "destroy UD");
}

/*
 * --bench ROUNDS: 64 KiB RDMA WRITEs, 16 in flight, one WR per post,
 * through ibv_post_send() and through the wr API alternately; prints each
 * round's MB/s and the ratio (reported, not asserted).
 */
double write_rate(rc_pair &p, bool wr_api, uint32_t count)
{
	constexpr uint32_t len = 64 << 10, depth = 16;
	uint32_t posted = 0, done = 0;
	auto t0 = std::chrono::steady_clock::now();

	while (done < count) {
		while (posted < count && posted - done < depth) {
			uint64_t id = posted++;
			if (wr_api) {
				ibv_wr_start(p.x);
				p.x->wr_id = id;
				p.x->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_rdma_write(p.x, p.rkey(), p.raddr(off_batch));
				ibv_wr_set_sge(p.x, p.lkey(), p.laddr(off_batch), len);
				if (ibv_wr_complete(p.x))
					return -1;
			} else {
				ibv_sge sge = { p.laddr(off_batch), len, p.lkey() };
				ibv_send_wr wr = {}, *bad = nullptr;
				wr.wr_id = id;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.send_flags = IBV_SEND_SIGNALED;
				wr.wr.rdma.remote_addr = p.raddr(off_batch);
				wr.wr.rdma.rkey = p.rkey();
				if (ibv_post_send(p.qa, &wr, &bad))
					return -1;
			}
		}
		ibv_wc wc;
		if (vu::poll_one(p.a.scq, wc) != 1 || wc.status != IBV_WC_SUCCESS)
			return -1;
		done++;
	}
	std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
	return double(count) * len / dt.count() / 1e6;
}

void bench(rc_pair &p, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		double post = write_rate(p, false, 200);
		double wr = write_rate(p, true, 200);
		std::printf("bench round %d: 64 KiB WRITE ibv_post_send %.2f MB/s, "
			    "ibv_wr_* %.2f MB/s, ratio wr/post %.2f\n",
			    r, post, wr, post > 0 ? wr / post : 0);
	}
}

} // namespace

int main(int argc, char **argv)
{
	std::string dev_a, dev_b;
	int gid_idx = -1, bench_rounds = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		std::string k = argv[i];
		if (k == "--a")
			dev_a = argv[i + 1];
		else if (k == "--b")
			dev_b = argv[i + 1];
		else if (k == "--gid")
			gid_idx = std::atoi(argv[i + 1]);
		else if (k == "--bench")
			bench_rounds = std::atoi(argv[i + 1]);
	}
	if (dev_a.empty() || dev_b.empty() || gid_idx < 0) {
		std::fprintf(stderr, "usage: %s --a DEV --b DEV --gid IDX\n",
			     argv[0]);
		return 2;
	}
	side a, b;
	if (!open_side(a, dev_a, gid_idx) || !open_side(b, dev_b, gid_idx))
		return 1;

	check_create(a);

	ibv_qp *qa = create(a, IBV_QPT_RC, all_ops);
	ibv_qp *qb = create(b, IBV_QPT_RC, 0, false);
	ibv_qp *la = create(a, IBV_QPT_RC,
			    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	ibv_qp *lb = create(b, IBV_QPT_RC, 0, false);
	CHECK(qa && qb && la && lb, "RC QPs: %s", std::strerror(errno));
	if (!qa || !qb || !la || !lb)
		return 1;
	if (!connect_rc(qa, a, qb, b, gid_idx) || !connect_rc(la, a, lb, b, gid_idx))
		return 1;
	rc_pair p = { a, b, qa, qb, ibv_qp_to_qp_ex(qa) };
	ibv_qp_ex *limited = ibv_qp_to_qp_ex(la);
	CHECK(p.x && limited, "qp_ex of SEND_OPS_FLAGS QPs");
	if (!p.x || !limited)
		return 1;

	check_opcodes(p);
	check_fence(p);
	check_batch(p);
	check_errors(p, limited);
	check_ud(a, b, gid_idx);
	bench(p, bench_rounds);

	for (ibv_qp *qp : { qa, qb, la, lb })
		CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	for (side *s : { &a, &b }) {
		ibv_dereg_mr(s->mr);
		ibv_destroy_cq(s->scq);
		ibv_destroy_cq(s->rcq);
		ibv_dealloc_pd(s->pd);
		ibv_close_device(s->ctx);
		std::free(s->buf);
	}
	std::printf("%s: wr API, %d failure(s)\n", failures ? "FAIL" : "PASS",
		    failures);
	return failures ? 1 : 0;
}
