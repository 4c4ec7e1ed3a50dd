// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* RDMA READ, atomics and immediate data, in both wire modes. */
#include "unit.h"
#include <metaroce/wire.h>

static const enum mrc_mode modes[] = { MRC_MODE_METAROCE, MRC_MODE_ROCEV2 };

static struct fx *ops_pair(enum mrc_mode mode)
{
	struct mrc_config cfg = unit_cfg(mode, mode == MRC_MODE_ROCEV2 ? 1 : 4);

	return pair_new(&cfg);
}

static void add_atomic(struct fx_ep *e, uint32_t op, uint64_t compare_add,
		       uint64_t swap)
{
	add_msg(e, op, 8);
	e->msgs[e->nmsgs - 1].compare_add = compare_add;
	e->msgs[e->nmsgs - 1].swap = swap;
}

/* Post message i of e by hand with rkey/address of the test's choice. */
static int post_raw(struct fx *f, struct fx_ep *e, unsigned int i,
		    uint32_t rkey, uint64_t raddr)
{
	struct fx_msg *m = &e->msgs[i];
	struct mrc_send_wr wr = {
		.wr_id = i, .opcode = m->opcode, .length = m->len,
		.rkey = rkey, .remote_addr = raddr,
		.compare_add = m->compare_add, .swap = m->swap,
	};

	e->posted = e->nmsgs;	/* fx_post leaves them alone */
	return mrc_post_send(e->conn, &wr, f->now);
}

/* Fire timers and move packets until nothing is left to do. */
static void settle(struct fx *f)
{
	int i;

	for (i = 0; i < 200; i++) {
		flush_all(f);
		if (mrc_next_deadline(f->a.conn) == UINT64_MAX &&
		    mrc_next_deadline(f->b.conn) == UINT64_MAX)
			return;
		if (mrc_next_deadline(f->a.conn) <= mrc_next_deadline(f->b.conn))
			fire(f, &f->a);
		else
			fire(f, &f->b);
	}
	fail_msg("connection does not settle");
}

/*
 * The requester keeps at most max_rd_atomic READs in progress (IBTA):
 * the peer's responder resources, taken at RTR->RTS.
 * covers: MR-COMPAT-013
 */
static void max_rd_atomic_bounds_reads_in_flight(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 1);
	struct mrc_config rts;
	struct fx *f;
	struct pkt p;
	int i, n = 0;

	(void)state;
	cfg.max_rd_atomic = 2;
	f = pair_new(&cfg);
	rts = cfg;
	rts.max_rd_atomic = MRC_MAX_RD_ATOMIC + 1;	/* a requester field */
	assert_int_equal(mrc_conn_set_requester(f->a.conn, &rts), -EINVAL);
	for (i = 0; i < 5; i++)
		add_msg(&f->a, MRC_OP_RDMA_READ, 10);
	post(f);
	while ((p = take(f, &f->a)).len) {
		assert_int_equal(p.b[0], MR_IB_READ_REQ);
		assert_int_equal(give(f, &f->b, &p), 0);
		n++;
	}
	assert_int_equal(n, 2);		/* then the responses free slots */
	settle(f);
	assert_int_equal(f->a.tx_done, 5);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * Byte-exact READs of sizes around MTU multiples, both modes.
 * covers: MR-OPS-001 MR-OPS-002 MR-COMPAT-008
 */
static void read_sizes_are_byte_exact(void **state)
{
	static const uint32_t sizes[] = {
		0, 1, 3, FX_MTU - 1, FX_MTU, FX_MTU + 1, 2 * FX_MTU - 1,
		2 * FX_MTU, 2 * FX_MTU + 1, 4 * FX_MTU + 7, FX_MAX_MSG_LEN,
	};
	unsigned int m, i;

	(void)state;
	for (m = 0; m < 2; m++) {
		struct fx *f = ops_pair(modes[m]);
		struct mrc_conn_stats st;

		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			add_msg(&f->a, MRC_OP_RDMA_READ, sizes[i]);
		post(f);
		settle(f);
		assert_int_equal(f->a.tx_done, f->a.nmsgs);
		assert_int_equal(f->a.failures + f->b.failures, 0);
		for (i = 0; i < f->a.nmsgs; i++)
			assert_int_equal(f->a.msgs[i].placed, sizes[i]);
		assert_int_equal(fx_verify(f), 0);	/* every byte */
		mrc_get_stats(f->b.conn, &st);
		assert_int_equal(st.reads_answered, f->a.nmsgs);
		pair_free(f);
	}
}

/*
 * READs, atomics and immediates mixed with SEND/WRITE under loss,
 * reordering and duplication: exact bytes, exactly-once atomics.
 * covers: MR-OPS-001 MR-OPS-002 MR-OPS-003 MR-COMPAT-009
 */
static void reads_survive_loss_reorder_and_duplication(void **state)
{
	struct fx_net_cfg net = {
		.loss_ppm = 50000, .dup_ppm = 50000, .base_delay_ns = 10000,
		.jitter_ns = 30000, .all_opcodes = 1,
	};
	unsigned int m, s;

	(void)state;
	for (m = 0; m < 2; m++) {
		for (s = 1; s <= 30; s++) {
			struct mrc_config cfg = unit_cfg(modes[m], m ? 1 : 4);
			struct fx *f = calloc(1, sizeof(*f));

			assert_non_null(f);
			cfg.retry_cnt = 30;
			fx_init(f, &cfg, &net, s, 30, 30);
			assert_int_equal(fx_run(f, 60ull * 1000000000), 0);
			assert_int_equal(fx_verify(f), 0);
			pair_free(f);
		}
	}
}

/* The next packet of e with wire opcode op, dropping nothing else. */
static int opcode_of(enum mrc_mode mode, const struct pkt *p)
{
	return mode == MRC_MODE_ROCEV2 ? p->b[0] : p->b[1];
}

/*
 * A duplicated request and a lost response: the atomic runs once and the
 * requester gets the original value, in both modes.
 * covers: MR-OPS-003 MR-COMPAT-009
 */
static void atomic_runs_exactly_once(void **state)
{
	unsigned int m;

	(void)state;
	for (m = 0; m < 2; m++) {
		struct fx *f = ops_pair(modes[m]);
		int resp_op = m ? MR_IB_ATOMIC_ACK : MR_OPC_ATOMIC_RESP;
		uint64_t init = f->b.amem[0];
		struct pkt req, p;
		int dropped = 0, i;

		add_atomic(&f->a, MRC_OP_ATOMIC_FETCH_AND_ADD, 5, 0);
		post(f);
		req = take(f, &f->a);
		assert_int_equal(give(f, &f->b, &req), 0);
		assert_int_equal(give(f, &f->b, &req), 0);	/* duplicate */
		assert_int_equal(f->b.aexec[0], 1);
		/* drop the first response; the original value is stored */
		for (i = 0; i < 100 && f->a.tx_done == 0; i++) {
			while ((p = take(f, &f->b)).len) {
				if (opcode_of(modes[m], &p) == resp_op &&
				    !dropped++)
					continue;
				assert_true(give(f, &f->a, &p) >= 0);
			}
			while ((p = take(f, &f->a)).len)
				assert_true(give(f, &f->b, &p) >= 0);
			fx_poll(&f->a);
			if (f->a.tx_done)
				break;
			/* the requester or the responder recovers */
			if (mrc_next_deadline(f->a.conn) <
			    mrc_next_deadline(f->b.conn))
				fire(f, &f->a);
			else
				fire(f, &f->b);
		}
		assert_int_equal(dropped >= 1, 1);
		assert_int_equal(f->a.tx_done, 1);
		assert_int_equal(f->b.aexec[0], 1);
		assert_true(f->a.msgs[0].result == init);
		assert_true(f->b.amem[0] == init + 5);
		pair_free(f);
	}
}

/* covers: MR-OPS-003 MR-COMPAT-008 */
static void compare_and_swap_semantics(void **state)
{
	unsigned int m;

	(void)state;
	for (m = 0; m < 2; m++) {
		struct fx *f = ops_pair(modes[m]);
		uint64_t v0 = f->b.amem[0], v1 = f->b.amem[1];

		add_atomic(&f->a, MRC_OP_ATOMIC_CMP_AND_SWP, v0, 0x1111);
		add_atomic(&f->a, MRC_OP_ATOMIC_CMP_AND_SWP, v1 + 1, 0x2222);
		post(f);
		settle(f);
		assert_int_equal(f->a.tx_done, 2);
		assert_true(f->a.msgs[0].result == v0);
		assert_true(f->b.amem[0] == 0x1111);	/* matched: swapped */
		assert_true(f->a.msgs[1].result == v1);
		assert_true(f->b.amem[1] == v1);	/* no match: unchanged */
		assert_int_equal(fx_verify(f), 0);
		pair_free(f);
	}
}

/*
 * Immediate data arrives with the receive it consumed; a WRITE with
 * immediate and no receive posted waits (RNR) like a SEND.
 * covers: MR-OPS-005 MR-COMPAT-008
 */
static void immediate_data_is_delivered(void **state)
{
	unsigned int m;

	(void)state;
	for (m = 0; m < 2; m++) {
		struct fx *f = ops_pair(modes[m]);
		struct mrc_completion wc;
		struct mrc_conn_stats st;
		int got = 0;

		f->b.recv_window = 0;		/* no receive yet: RNR */
		add_msg(&f->a, MRC_OP_RDMA_WRITE_WITH_IMM, 3 * FX_MTU + 5);
		add_msg(&f->a, MRC_OP_SEND_WITH_IMM, 17);
		add_msg(&f->a, MRC_OP_RDMA_WRITE_WITH_IMM, 0);
		post(f);
		flush_all(f);
		mrc_get_stats(f->b.conn, &st);
		assert_true(st.rx_no_recv_wr > 0);
		assert_int_equal(f->a.tx_done, 0);
		f->b.recv_window = 8;
		fx_post(f, &f->b);
		/* check the completions here rather than in fx_poll */
		while (!got) {
			fire(f, &f->a);
			flush_all(f);
			got = f->a.tx_done == 3;
		}
		assert_int_equal(f->b.recv_done, 3);
		assert_int_equal(f->a.failures + f->b.failures, 0);
		assert_int_equal(fx_verify(f), 0);
		/* and field by field on a fresh pair, no fixture checks */
		pair_free(f);
		f = ops_pair(modes[m]);
		add_msg(&f->a, MRC_OP_RDMA_WRITE_WITH_IMM, 300);
		add_msg(&f->a, MRC_OP_SEND_WITH_IMM, 20);
		fx_prepare(f);
		fx_post(f, &f->a);
		assert_int_equal(mrc_post_recv(f->b.conn, 0, FX_MAX_MSG_LEN), 0);
		assert_int_equal(mrc_post_recv(f->b.conn, 1, FX_MAX_MSG_LEN), 0);
		f->b.recv_posted = 2;
		while (exchange(f))
			;
		assert_int_equal(mrc_poll_completion(f->b.conn, &wc), 1);
		assert_int_equal(wc.opcode, MRC_OP_RECV_RDMA_WITH_IMM);
		assert_int_equal(wc.byte_len, 300);	/* IBTA: WRITE length */
		assert_int_equal(wc.wc_flags, MRC_WC_F_IMM);
		assert_int_equal(wc.imm_data, fx_imm(&f->a, 0));
		assert_int_equal(mrc_poll_completion(f->b.conn, &wc), 1);
		assert_int_equal(wc.opcode, MRC_OP_RECV);
		assert_int_equal(wc.byte_len, 20);
		assert_int_equal(wc.wc_flags, MRC_WC_F_IMM);
		assert_int_equal(wc.imm_data, fx_imm(&f->a, 1));
		assert_int_equal(mrc_poll_completion(f->b.conn, &wc), 0);
		pair_free(f);
	}
}

/*
 * Bad rkey, out of range, misaligned: the requester's WR fails with the
 * matching status and the responder's memory is untouched.
 * covers: MR-OPS-004
 */
static void refused_requests_touch_nothing(void **state)
{
	static const struct {
		uint32_t op, len, rkey;
		uint64_t raddr;
		uint8_t status;
	} cases[] = {
		{ MRC_OP_RDMA_READ, 100, FX_RKEY + 1, 0, MRC_WC_REM_ACCESS_ERR },
		{ MRC_OP_RDMA_READ, 600, FX_RKEY, FX_MAX_MSG_LEN - 100,
		  MRC_WC_REM_ACCESS_ERR },
		{ MRC_OP_ATOMIC_FETCH_AND_ADD, 8, FX_RKEY + 1, FX_ATOMIC_BASE,
		  MRC_WC_REM_ACCESS_ERR },
		{ MRC_OP_ATOMIC_CMP_AND_SWP, 8, FX_RKEY, FX_ATOMIC_BASE + 4,
		  MRC_WC_REM_INV_REQ_ERR },
	};
	unsigned int m, i;

	(void)state;
	for (m = 0; m < 2; m++) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct fx *f = ops_pair(modes[m]);
			uint64_t a0 = f->b.amem[0];

			add_msg(&f->a, cases[i].op, cases[i].len);
			add_msg(&f->a, MRC_OP_SEND, 10);	/* flushed */
			fx_prepare(f);
			assert_int_equal(post_raw(f, &f->a, 0, cases[i].rkey,
						  cases[i].raddr), 0);
			assert_int_equal(post_raw(f, &f->a, 1, FX_RKEY, 0), 0);
			settle(f);
			assert_int_equal(f->a.nstatus_err, 2);
			assert_int_equal(f->a.first_err_status,
					 cases[i].status);
			assert_int_equal(f->a.msgs[0].placed, 0);
			assert_int_equal(f->b.aexec[0], 0);
			assert_true(f->b.amem[0] == a0);
			pair_free(f);
		}
	}
}

/* covers: MR-OPS-006 MR-OPS-004 */
static void optional_callbacks_and_bad_wrs(void **state)
{
	unsigned int m;

	(void)state;
	for (m = 0; m < 2; m++) {
		struct mrc_config cfg = unit_cfg(modes[m], 1);
		struct mrc_callbacks cb = fx_callbacks;
		struct mrc_conn *c = calloc(1, mrc_conn_size());
		struct mrc_send_wr wr = { .opcode = MRC_OP_RDMA_READ,
					  .length = 8 };
		struct fx *f;

		assert_non_null(c);
		cb.read_remote = NULL;
		cb.place_read = NULL;
		cb.atomic = NULL;
		cfg.local_qpn = 1;
		assert_int_equal(mrc_conn_init(c, &cfg, &cb, NULL, 0), 0);
		assert_int_equal(mrc_post_send(c, &wr, 0), -EOPNOTSUPP);
		free(c);

		f = ops_pair(modes[m]);
		wr.opcode = MRC_OP_ATOMIC_FETCH_AND_ADD;
		wr.length = 4;
		assert_int_equal(mrc_post_send(f->a.conn, &wr, 0), -EINVAL);
		wr.length = 8;
		wr.reserved = 1;
		assert_int_equal(mrc_post_send(f->a.conn, &wr, 0), -EINVAL);
		wr.reserved = 0;
		wr.opcode = MRC_OP_RECV;
		assert_int_equal(mrc_post_send(f->a.conn, &wr, 0), -EINVAL);
		pair_free(f);

		/* a responder without read_remote/atomic: invalid request */
		cfg = unit_cfg(modes[m], m ? 1 : 4);
		cfg.local_psn = 0x100;
		f = pair_new(&cfg);
		cb = fx_callbacks;
		cb.read_remote = NULL;
		cb.atomic = NULL;
		cfg.local_qpn = 0x22;
		cfg.remote_qpn = 0x11;
		cfg.local_psn = 0x5000;
		cfg.remote_psn = 0x100;
		assert_int_equal(mrc_conn_init(f->b.conn, &cfg, &cb, &f->b, 0), 0);
		add_msg(&f->a, MRC_OP_RDMA_READ, 10);
		add_atomic(&f->a, MRC_OP_ATOMIC_FETCH_AND_ADD, 1, 0);
		post(f);
		settle(f);
		assert_int_equal(f->a.first_err_status, MRC_WC_REM_INV_REQ_ERR);
		assert_int_equal(f->a.nstatus_err, 2);
		assert_int_equal(f->b.aexec[0] + f->b.aexec[1], 0);
		pair_free(f);
	}
}

/*
 * Wire layout of READ and atomics in RoCEv2 mode: IBTA opcodes, RETH,
 * response PSNs in the request's range, AETH placement, AtomicETH.
 * covers: MR-COMPAT-008
 */
static void rocev2_read_and_atomic_layout(void **state)
{
	struct fx *f = ops_pair(MRC_MODE_ROCEV2);
	struct pkt req, r[3], at, ack;
	uint32_t psn;
	int i;

	(void)state;
	add_msg(&f->a, MRC_OP_RDMA_READ, 2 * FX_MTU + 10);
	add_atomic(&f->a, MRC_OP_ATOMIC_CMP_AND_SWP, 7, 9);
	post(f);
	req = take(f, &f->a);
	at = take(f, &f->a);
	assert_int_equal(take(f, &f->a).len, 0);
	assert_int_equal(req.b[0], MR_IB_READ_REQ);
	assert_int_equal(req.len, 12 + 16 + 4);
	psn = be32(req.b + 8) & MR_PSN_MASK;
	assert_int_equal(be32(req.b + 12 + 8), FX_RKEY);
	assert_int_equal(be32(req.b + 12 + 12), 2 * FX_MTU + 10);
	/* the READ took 3 PSNs: the atomic has the 4th */
	assert_int_equal(at.b[0], MR_IB_CMP_SWAP);
	assert_int_equal(at.len, 12 + 28 + 4);
	assert_int_equal(be32(at.b + 8) & MR_PSN_MASK, (psn + 3) & MR_PSN_MASK);
	assert_int_equal(be32(at.b + 12 + 8), FX_RKEY);
	assert_int_equal(be32(at.b + 12 + 12 + 4), 9);		/* swap */
	assert_int_equal(be32(at.b + 12 + 20 + 4), 7);		/* compare */
	assert_int_equal(give(f, &f->b, &req), 0);
	assert_int_equal(give(f, &f->b, &at), 0);
	for (i = 0; i < 3; i++)
		r[i] = take(f, &f->b);
	ack = take(f, &f->b);
	assert_int_equal(r[0].b[0], MR_IB_READ_RESP_FIRST);
	assert_int_equal(r[1].b[0], MR_IB_READ_RESP_MIDDLE);
	assert_int_equal(r[2].b[0], MR_IB_READ_RESP_LAST);
	for (i = 0; i < 3; i++)
		assert_int_equal(be32(r[i].b + 8) & MR_PSN_MASK,
				 (psn + i) & MR_PSN_MASK);
	assert_int_equal(r[0].len, 12 + 4 + FX_MTU + 4);	/* AETH */
	assert_int_equal(r[1].len, 12 + FX_MTU + 4);		/* none */
	assert_int_equal(r[2].len, 12 + 4 + 12 + 4);		/* 10 + pad 2 */
	assert_int_equal(r[2].b[1] >> 4, 2);
	assert_int_equal(ack.b[0], MR_IB_ATOMIC_ACK);
	assert_int_equal(be32(ack.b + 8) & MR_PSN_MASK, (psn + 3) & MR_PSN_MASK);
	assert_int_equal(ack.len, 12 + 4 + 8 + 4);
	for (i = 0; i < 3; i++)
		assert_int_equal(give(f, &f->a, &r[i]), 0);
	assert_int_equal(give(f, &f->a, &ack), 0);
	fx_poll(&f->a);
	assert_int_equal(f->a.tx_done, 2);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * A READ response lost in RoCEv2 mode: the requester re-issues the READ
 * for the remaining bytes from the first missing PSN.
 * covers: MR-COMPAT-009
 */
static void rocev2_read_is_reissued_from_the_gap(void **state)
{
	struct fx *f = ops_pair(MRC_MODE_ROCEV2);
	struct pkt req, r[3], re;
	uint32_t psn;
	int i;

	(void)state;
	add_msg(&f->a, MRC_OP_RDMA_READ, 3 * FX_MTU);
	post(f);
	req = take(f, &f->a);
	psn = be32(req.b + 8) & MR_PSN_MASK;
	assert_int_equal(give(f, &f->b, &req), 0);
	for (i = 0; i < 3; i++)
		r[i] = take(f, &f->b);
	assert_int_equal(give(f, &f->a, &r[0]), 0);
	assert_int_equal(give(f, &f->a, &r[2]), 0);	/* r1 lost */
	re = take(f, &f->a);
	assert_int_equal(re.b[0], MR_IB_READ_REQ);
	assert_int_equal(be32(re.b + 8) & MR_PSN_MASK, (psn + 1) & MR_PSN_MASK);
	assert_int_equal(be32(re.b + 12 + 4), FX_MAX_MSG_LEN * 0 + FX_MTU);
	assert_int_equal(be32(re.b + 12 + 12), 2 * FX_MTU);
	assert_int_equal(take(f, &f->a).len, 0);	/* once */
	assert_int_equal(give(f, &f->b, &re), 0);	/* a duplicate READ */
	r[1] = take(f, &f->b);
	assert_int_equal(r[1].b[0], MR_IB_READ_RESP_FIRST);
	assert_int_equal(give(f, &f->a, &r[1]), 0);
	settle(f);
	assert_int_equal(f->a.tx_done, 1);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * MetaRoCE mode: the response is a message of the responder's own PSN
 * space, and the requester acknowledges it like data.
 * covers: MR-WIRE-009 MR-OPS-002
 */
static void metaroce_response_uses_the_responders_psns(void **state)
{
	struct fx *f = ops_pair(MRC_MODE_METAROCE);
	struct pkt req, resp, mine;

	(void)state;
	add_msg(&f->a, MRC_OP_RDMA_READ, 100);
	add_msg(&f->b, MRC_OP_RDMA_WRITE, 10);	/* B's own, not yet sent */
	post(f);
	req = take(f, &f->a);
	assert_int_equal(req.b[1], MR_OPC_READ_REQ);
	assert_int_equal(req.b[2] & 3, MR_FLAG_FIRST | MR_FLAG_LAST);
	assert_int_equal(be32(req.b + 24), 100);	/* READ length */
	assert_int_equal(req.len, 40 + 4);		/* no payload */
	assert_int_equal(give(f, &f->b, &req), 0);
	do
		resp = take(f, &f->b);
	while (resp.len && resp.b[1] != MR_OPC_READ_RESP);
	assert_int_equal(resp.b[1], MR_OPC_READ_RESP);
	assert_int_equal(be32(resp.b + 16), be32(req.b + 16));	/* msg_id */
	assert_int_equal(be32(resp.b + 24), 100);
	assert_int_equal(resp.len, 40 + 100 + 4);
	/* in B's stream, ahead of B's own WRITE: it has the next PSN */
	mine = take(f, &f->b);
	assert_int_equal(mine.b[1], MR_OPC_WRITE);
	assert_int_equal(be32(mine.b + 8), (be32(resp.b + 8) + 1) & 0xffffff);
	assert_int_equal(give(f, &f->a, &mine), 0);
	assert_int_equal(give(f, &f->a, &resp), 0);
	settle(f);	/* B's ACK of the request was skipped above */
	assert_int_equal(f->a.tx_done, 1);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * A responder that never sent starts its stream where the requester
 * expects it (a verbs QP left in RTR knows no sq_psn of its own).
 * covers: MR-OPS-002
 */
static void rtr_responder_starts_where_the_requester_expects(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_METAROCE, 4);
	struct fx *f;

	(void)state;
	cfg.local_psn = 0x100;
	f = pair_new(&cfg);
	cfg.local_qpn = 0x22;
	cfg.remote_qpn = 0x11;
	cfg.remote_psn = 0x100;
	cfg.local_psn = 0x777;	/* not what A was told */
	assert_int_equal(mrc_conn_init(f->b.conn, &cfg, &fx_callbacks, &f->b,
				       0), 0);
	add_msg(&f->a, MRC_OP_RDMA_READ, 3 * FX_MTU);
	add_atomic(&f->a, MRC_OP_ATOMIC_FETCH_AND_ADD, 1, 0);
	post(f);
	settle(f);
	assert_int_equal(f->a.nstatus_err, 0);
	assert_int_equal(f->a.tx_done, 2);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * B takes A's READ request and acknowledges it; the response is held
 * back (returned in *resp) and B says nothing more, as a responder that
 * entered the error state.
 */
static void read_acked_response_held(struct fx *f, struct pkt *resp)
{
	struct pkt req, p;
	int acked = 0, tries;

	add_msg(&f->a, MRC_OP_RDMA_READ, 100);
	post(f);
	req = take(f, &f->a);
	assert_int_equal(req.b[1], MR_OPC_READ_REQ);
	assert_int_equal(give(f, &f->b, &req), 0);
	resp->len = 0;
	for (tries = 0; !acked && tries < 4; tries++) {
		while ((p = take(f, &f->b)).len) {
			if (p.b[1] == MR_OPC_READ_RESP && !resp->len)
				*resp = p;
			if (p.b[1] == MR_OPC_ACK) {
				assert_int_equal(give(f, &f->a, &p), 0);
				acked = 1;
			}
		}
		if (!acked)
			fire(f, &f->b);	/* the delayed ACK */
	}
	assert_true(acked);
	assert_int_equal(resp->b[1], MR_OPC_READ_RESP);
	assert_int_equal(take(f, &f->a).len, 0);	/* nothing in flight */
}

/*
 * A READ whose request was acknowledged but whose response never comes
 * (the responder went into the error state: fuzz_conn found the
 * requester then waited forever with no timer) completes with
 * RETRY_EXC after retry_cnt + 1 silent waits of rto_ns, doubling; a
 * response that arrives during a wait is placed as usual.
 * covers: MR-OPS-007 MR-OPS-001
 */
static void read_response_wait_times_out(void **state)
{
	struct fx *f = ops_pair(MRC_MODE_METAROCE);
	struct mrc_conn_stats st;
	struct pkt resp;
	uint64_t start, d;
	unsigned int k;

	(void)state;
	read_acked_response_held(f, &resp);
	start = f->now;
	for (k = 0; k <= f->cfg.retry_cnt; k++) {
		d = mrc_next_deadline(f->a.conn);
		assert_int_equal(d - start, f->cfg.rto_ns << k);
		mrc_get_stats(f->a.conn, &st);
		assert_int_equal(st.in_error, 0);
		fire(f, &f->a);
		start = f->now;
		assert_int_equal(take(f, &f->a).len, 0);
	}
	mrc_get_stats(f->a.conn, &st);
	assert_int_equal(st.in_error, 1);
	fx_poll(&f->a);
	assert_int_equal(f->a.tx_done, 0);	/* not a success */
	assert_int_equal(f->a.nstatus_err, 1);
	assert_int_equal(f->a.first_err_status, MRC_WC_RETRY_EXC_ERR);
	assert_int_equal(f->a.failures, 0);
	pair_free(f);

	/* the same, but the response turns up after one silent wait */
	f = ops_pair(MRC_MODE_METAROCE);
	read_acked_response_held(f, &resp);
	fire(f, &f->a);
	assert_int_equal(give(f, &f->a, &resp), 0);
	settle(f);
	assert_int_equal(f->a.nstatus_err, 0);
	assert_int_equal(f->a.tx_done, 1);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(max_rd_atomic_bounds_reads_in_flight),
		cmocka_unit_test(read_sizes_are_byte_exact),
		cmocka_unit_test(reads_survive_loss_reorder_and_duplication),
		cmocka_unit_test(atomic_runs_exactly_once),
		cmocka_unit_test(compare_and_swap_semantics),
		cmocka_unit_test(immediate_data_is_delivered),
		cmocka_unit_test(refused_requests_touch_nothing),
		cmocka_unit_test(optional_callbacks_and_bad_wrs),
		cmocka_unit_test(rocev2_read_and_atomic_layout),
		cmocka_unit_test(rocev2_read_is_reissued_from_the_gap),
		cmocka_unit_test(metaroce_response_uses_the_responders_psns),
		cmocka_unit_test(rtr_responder_starts_where_the_requester_expects),
		cmocka_unit_test(read_response_wait_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
