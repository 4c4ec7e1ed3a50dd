// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* RoCEv2-compatible mode: IBTA RC wire format and go-back-N. */
#include "unit.h"
#include <metaroce/wire.h>

static struct mrc_conn_stats cstats(struct fx_ep *e)
{
	struct mrc_conn_stats st;

	mrc_get_stats(e->conn, &st);
	return st;
}

static struct fx *gbn_pair(struct mrc_config *over)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 1);

	if (over)
		cfg = *over;
	return pair_new(&cfg);
}

/* covers: MR-COMPAT-001 MR-COMPAT-002 MR-COMPAT-007 */
static void bth_reth_layout(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 4);
	struct fx *f;
	struct pkt p1, p2, p3;
	uint32_t psn;

	(void)state;
	cfg.local_psn = 0x000100;
	f = gbn_pair(&cfg);
	add_msg(&f->a, MRC_OP_SEND, 300);
	add_msg(&f->a, MRC_OP_RDMA_WRITE, 10);
	post(f);
	p1 = take(f, &f->a);
	p2 = take(f, &f->a);
	p3 = take(f, &f->a);
	assert_int_equal(take(f, &f->a).len, 0);
	assert_int_equal(p1.path, 0);			/* one path */
	assert_int_equal(p3.path, 0);
	assert_int_equal(p1.len, 12 + FX_MTU + 4);
	assert_int_equal(p1.b[0], MR_IB_SEND_FIRST);
	assert_int_equal(p1.b[1], 0);			/* no pad, tver 0 */
	assert_int_equal(p1.b[2] << 8 | p1.b[3], 0xffff);
	assert_int_equal(be32(p1.b + 4), 0x22);
	psn = be32(p1.b + 8);
	assert_int_equal(psn, 0x000100);		/* no AckReq */
	assert_int_equal(p1.b[12], fx_byte(f->a.seed, 0, 0, 0));
	assert_int_equal(p2.b[0], MR_IB_SEND_LAST);
	assert_int_equal(be32(p2.b + 8), MR_BTH_ACKREQ | (psn + 1));
	assert_int_equal(p2.len, 12 + 300 - FX_MTU + 4);
	/* WRITE ONLY: RETH, 10 bytes padded to 12 */
	assert_int_equal(p3.b[0], MR_IB_WRITE_ONLY);
	assert_int_equal(p3.b[1], 2 << 4);
	assert_int_equal(be32(p3.b + 12), 0);		/* VA high */
	assert_int_equal(be32(p3.b + 16), FX_MAX_MSG_LEN);
	assert_int_equal(be32(p3.b + 20), FX_RKEY);
	assert_int_equal(be32(p3.b + 24), 10);		/* DMA length */
	assert_int_equal(p3.len, 12 + 16 + 12 + 4);
	/* integrity trailer in the ICRC position */
	assert_int_equal(be32(p3.b + p3.len - 4),
			 mrc_crc32c(p3.b, p3.len - 4));
	assert_int_equal(give(f, &f->b, &p1), 0);
	assert_int_equal(give(f, &f->b, &p2), 0);
	assert_int_equal(give(f, &f->b, &p3), 0);
	flush_all(f);
	assert_int_equal(f->a.tx_done, 2);
	assert_int_equal(f->b.recv_done, 1);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/* covers: MR-COMPAT-003 MR-COMPAT-004 */
static void sequence_nak_and_go_back_n(void **state)
{
	struct fx *f = gbn_pair(NULL);
	struct pkt d[4], nak, r;
	uint32_t psn;
	int i;

	(void)state;
	add_msg(&f->a, MRC_OP_RDMA_WRITE, 4 * FX_MTU);
	post(f);
	for (i = 0; i < 4; i++)
		d[i] = take(f, &f->a);
	psn = be32(d[0].b + 8) & MR_PSN_MASK;
	assert_int_equal(give(f, &f->b, &d[0]), 0);
	assert_int_equal(give(f, &f->b, &d[2]), 0);	/* d1 was lost */
	nak = take(f, &f->b);
	assert_int_equal(nak.b[0], MR_IB_ACK);
	assert_int_equal(nak.b[12], MR_AETH_NAK | MR_AETH_NAK_PSN_SEQ);
	assert_int_equal(be32(nak.b + 8), psn + 1);	/* expected PSN */
	assert_int_equal(give(f, &f->b, &d[3]), 0);
	assert_int_equal(take(f, &f->b).len, 0);	/* one NAK only */
	assert_int_equal(cstats(&f->b).seq_naks, 1);
	assert_int_equal(f->a.msgs[0].placed, FX_MTU);	/* in order only */
	assert_int_equal(give(f, &f->a, &nak), 0);
	for (i = 1; i < 4; i++) {			/* go back to d1 */
		r = take(f, &f->a);
		assert_int_equal(be32(r.b + 8) & MR_PSN_MASK, psn + i);
		assert_int_equal(give(f, &f->b, &r), 0);
	}
	flush_all(f);
	assert_int_equal(f->a.tx_done, 1);
	assert_int_equal(cstats(&f->a).tx_retrans, 3);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/* covers: MR-COMPAT-003 MR-COMPAT-006 */
static void duplicate_is_acked_with_msn(void **state)
{
	struct fx *f = gbn_pair(NULL);
	struct pkt d, ack;

	(void)state;
	add_msg(&f->a, MRC_OP_SEND, 10);
	post(f);
	d = take(f, &f->a);
	assert_int_equal(give(f, &f->b, &d), 0);
	ack = take(f, &f->b);		/* AckReq on the last packet */
	assert_int_equal(ack.len, 12 + 4 + 4);
	assert_int_equal(be32(ack.b + 8), be32(d.b + 8) & MR_PSN_MASK);
	assert_int_equal(be32(ack.b + 12), 0x1f000000u | 1);	/* MSN 1 */
	assert_int_equal(give(f, &f->b, &d), 0);
	assert_int_equal(cstats(&f->b).rx_dup, 1);
	assert_int_equal(f->a.msgs[0].placed, 10);
	ack = take(f, &f->b);
	assert_int_equal(be32(ack.b + 12), 0x1f000000u | 1);
	pair_free(f);
}

/*
 * The ACK of a burst's last packet leaves twice: losing one still
 * completes the send, with no retransmission.
 * covers: MR-LOSS-012
 */
static void final_ack_is_sent_twice(void **state)
{
	struct fx *f = gbn_pair(NULL);
	struct pkt d[2], a1, a2;

	(void)state;
	add_msg(&f->a, MRC_OP_SEND, FX_MTU + 10);
	post(f);
	d[0] = take(f, &f->a);
	d[1] = take(f, &f->a);
	assert_int_equal(give(f, &f->b, &d[0]), 0);
	assert_int_equal(give(f, &f->b, &d[1]), 0);
	a1 = take(f, &f->b);
	a2 = take(f, &f->b);
	assert_int_equal(take(f, &f->b).len, 0);	/* two, not more */
	assert_int_equal(a1.len, a2.len);
	assert_memory_equal(a1.b, a2.b, (size_t)a1.len);
	assert_int_equal(a2.b[0], MR_IB_ACK);
	assert_int_equal(be32(a2.b + 8), be32(d[1].b + 8) & MR_PSN_MASK);
	assert_int_equal(give(f, &f->a, &a2), 0);	/* a1 was lost */
	fx_poll(&f->a);
	assert_int_equal(f->a.tx_done, 1);
	assert_int_equal(cstats(&f->a).tx_retrans, 0);
	assert_int_equal(give(f, &f->a, &a1), 0);	/* late copy: harmless */
	assert_int_equal(take(f, &f->a).len, 0);
	fx_poll(&f->b);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/* covers: MR-COMPAT-005 */
static void timeouts_retry_then_fail(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 1);
	struct fx *f;
	struct pkt r;
	int sends = 0;

	(void)state;
	cfg.retry_cnt = 2;
	f = gbn_pair(&cfg);
	add_msg(&f->a, MRC_OP_SEND, 10);
	add_msg(&f->a, MRC_OP_RDMA_WRITE, 10);
	post(f);
	while (!f->a.nstatus_err) {
		uint64_t start = f->now;

		while ((r = take(f, &f->a)).len)
			sends++;
		assert_int_equal(mrc_next_deadline(f->a.conn),
				 start + cfg.rto_ns);
		fire(f, &f->a);
		fx_poll(&f->a);
	}
	assert_int_equal(sends, 2 * (cfg.retry_cnt + 1));
	assert_int_equal(f->a.first_err_status, MRC_WC_RETRY_EXC_ERR);
	assert_int_equal(f->a.nstatus_err, 2);		/* + one flushed */
	pair_free(f);
}

/* covers: MR-COMPAT-006 */
static void rnr_nak_then_resume(void **state)
{
	struct fx *f = gbn_pair(NULL);
	struct pkt d, nak;

	(void)state;
	f->b.recv_window = 0;
	add_msg(&f->a, MRC_OP_SEND, 10);
	post(f);
	d = take(f, &f->a);
	assert_int_equal(give(f, &f->b, &d), 0);
	nak = take(f, &f->b);
	assert_int_equal(nak.b[12] & 0xe0, MR_AETH_RNR_NAK);
	assert_int_equal(be32(nak.b + 8), be32(d.b + 8) & MR_PSN_MASK);
	assert_int_equal(give(f, &f->a, &nak), 0);
	assert_int_equal(take(f, &f->a).len, 0);	/* waits rnr_timer */
	f->b.recv_window = 4;
	fx_post(f, &f->b);
	fire(f, &f->a);
	flush_all(f);
	assert_int_equal(f->a.tx_done, 1);
	assert_int_equal(f->b.recv_done, 1);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * rnr_retry bounds the RNR NAKs in a row without progress (IBTA
 * 9.7.5.2.8), not over the connection's life: each SEND here meets one
 * RNR NAK, with rnr_retry 1, and all complete.
 */
/* covers: MR-COMPAT-006 */
static void rnr_retry_counts_from_last_progress(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 1);
	struct fx *f;
	unsigned int k;

	(void)state;
	cfg.rnr_retry = 1;
	f = gbn_pair(&cfg);
	f->b.recv_window = 0;
	for (k = 0; k < 3; k++)
		add_msg(&f->a, MRC_OP_SEND, 10);
	post(f);
	for (k = 1; k <= 3; k++) {
		flush_all(f);		/* RNR NAK: one receive too few */
		assert_int_equal(f->a.tx_done, k - 1);
		f->b.recv_window = 1;	/* post exactly one receive */
		fx_post(f, &f->b);
		f->b.recv_window = 0;
		fire(f, &f->a);
	}
	flush_all(f);
	assert_int_equal(f->a.nstatus_err, 0);
	assert_int_equal(f->a.tx_done, 3);
	assert_int_equal(f->b.recv_done, 3);
	assert_true(cstats(&f->b).rx_no_recv_wr >= 3);
	assert_int_equal(fx_verify(f), 0);
	pair_free(f);
}

/*
 * A verbs QP learns sq_psn, retry_cnt, rnr_retry and timeout at RTR->RTS,
 * after its connection already answers as a responder.
 */
static void requester_attributes_after_init(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 1);
	struct mrc_config rts;
	struct fx *f;
	struct pkt p;

	(void)state;
	cfg.local_psn = 0;
	f = gbn_pair(&cfg);
	rts = cfg;
	rts.local_psn = 1u << 24;
	assert_int_equal(mrc_conn_set_requester(f->a.conn, &rts), -EINVAL);
	rts.local_psn = 0x000100;
	rts.rnr_retry = 8;			/* 7 means infinite */
	assert_int_equal(mrc_conn_set_requester(f->a.conn, &rts), -EINVAL);
	rts.rnr_retry = 3;
	rts.mtu = 17;				/* not a requester field: ignored */
	assert_int_equal(mrc_conn_set_requester(f->a.conn, &rts), 0);
	add_msg(&f->a, MRC_OP_SEND, 10);
	post(f);
	p = take(f, &f->a);
	assert_int_equal(be32(p.b + 8) & 0xffffff, 0x000100);
	/* once something was posted the PSN space is fixed */
	rts.local_psn = 0x000200;
	assert_int_equal(mrc_conn_set_requester(f->a.conn, &rts), -EBUSY);
	pair_free(f);
}

/*
 * With MRC_CFG_CALLER_ICRC the trailer is an ICRC slot the core leaves
 * zero, and a packet counts only when the caller vouches for its ICRC.
 * covers: MR-COMPAT-012
 */
static void caller_icrc_slot_and_rx_flag(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_ROCEV2, 1);
	struct mrc_conn_stats st;
	struct fx *f;
	struct pkt p;

	(void)state;
	cfg.flags = MRC_CFG_CALLER_ICRC;
	f = gbn_pair(&cfg);
	add_msg(&f->a, MRC_OP_SEND, 100);
	post(f);
	p = take(f, &f->a);
	assert_int_equal(p.len, 12 + 100 + 4);
	assert_int_equal(be32(p.b + p.len - 4), 0);	/* the caller's slot */
	/* not vouched for: dropped as a bad CRC, nothing placed */
	assert_int_equal(give(f, &f->b, &p), -EBADMSG);
	st = cstats(&f->b);
	assert_int_equal(st.rx_bad_crc, 1);
	assert_int_equal(st.rx_data, 0);
	/* a CRC32C in the slot changes nothing: only the flag counts */
	reseal(&p);
	assert_int_equal(give(f, &f->b, &p), -EBADMSG);
	assert_int_equal(mrc_recv_packet_ex(f->b.conn, p.b, p.len, 0,
					    MRC_RX_ICRC_OK, f->now), 0);
	st = cstats(&f->b);
	assert_int_equal(st.rx_bad_crc, 2);
	assert_int_equal(st.rx_data, 1);
	pair_free(f);

	/* the flag belongs to connections whose caller does the ICRC */
	f = gbn_pair(NULL);
	add_msg(&f->a, MRC_OP_SEND, 100);
	post(f);
	p = take(f, &f->a);
	assert_int_equal(be32(p.b + p.len - 4), mrc_crc32c(p.b, p.len - 4));
	assert_int_equal(mrc_recv_packet_ex(f->b.conn, p.b, p.len, 0,
					    MRC_RX_ICRC_OK, f->now), -EINVAL);
	assert_int_equal(cstats(&f->b).rx_data, 0);
	pair_free(f);

	/* MetaRoCE mode has no ICRC: its CRC32C is the core's (MR-WIRE-006) */
	cfg = unit_cfg(MRC_MODE_METAROCE, 1);
	cfg.flags = MRC_CFG_CALLER_ICRC;
	{
		struct mrc_callbacks cb = { 0 };
		void *conn = calloc(1, mrc_conn_size());

		cb.read_payload = (void *)1;
		cb.place_send = (void *)1;
		cb.place_write = (void *)1;
		assert_int_equal(mrc_conn_init(conn, &cfg, &cb, NULL, 0),
				 -EINVAL);
		cfg.flags = 0x2;		/* unknown flag */
		cfg.mode = MRC_MODE_ROCEV2;
		assert_int_equal(mrc_conn_init(conn, &cfg, &cb, NULL, 0),
				 -EINVAL);
		cfg.flags = MRC_CFG_CALLER_ICRC;
		assert_int_equal(mrc_conn_init(conn, &cfg, &cb, NULL, 0), 0);
		free(conn);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bth_reth_layout),
		cmocka_unit_test(sequence_nak_and_go_back_n),
		cmocka_unit_test(duplicate_is_acked_with_msn),
		cmocka_unit_test(final_ack_is_sent_twice),
		cmocka_unit_test(timeouts_retry_then_fail),
		cmocka_unit_test(rnr_nak_then_resume),
		cmocka_unit_test(rnr_retry_counts_from_last_progress),
		cmocka_unit_test(requester_attributes_after_init),
		cmocka_unit_test(caller_icrc_slot_and_rx_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
