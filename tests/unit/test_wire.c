// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Wire format, integrity check, malformed input and configuration. */
#include "unit.h"
#include <metaroce/wire.h>

/* covers: MR-WIRE-006 */
static void crc32c_check_value(void **state)
{
	static const char v[] = "123456789";
	uint8_t zeros[32] = { 0 };

	(void)state;
	assert_int_equal(mrc_crc32c(v, 9), 0xe3069283);
	/* RFC 3720 B.4 test vector: 32 bytes of zeros */
	assert_int_equal(mrc_crc32c(zeros, sizeof(zeros)), 0x8a9136aa);
	/* chaining partial updates equals one pass */
	assert_int_equal(~mrc_crc32c_update(mrc_crc32c_update(~0u, v, 4),
					    v + 4, 5), 0xe3069283);
}

/* covers: MR-WIRE-001 */
static void udp_ports(void **state)
{
	(void)state;
	assert_int_equal(MR_UDP_PORT, 4793);
	assert_int_equal(MR_ROCEV2_UDP_PORT, 4791);
	assert_int_not_equal(MR_UDP_PORT, MR_ROCEV2_UDP_PORT);
}

/* covers: MR-WIRE-002 MR-WIRE-004 MR-WIRE-006 MR-CONN-002 MR-CONN-004 MR-PATH-003 */
static void data_packet_layout(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_METAROCE, 4);
	struct fx *f;
	struct pkt p1, p2, p3;
	uint32_t psn, i;

	(void)state;
	cfg.local_psn = 0x123456;
	f = pair_new(&cfg);
	add_msg(&f->a, MRC_OP_SEND, 300);
	add_msg(&f->a, MRC_OP_RDMA_WRITE, 10);
	post(f);
	f->now = 5 << 10;
	p1 = take(f, &f->a);
	p2 = take(f, &f->a);
	p3 = take(f, &f->a);
	assert_int_equal(p1.len, 16 + 24 + FX_MTU + 4);
	assert_int_equal(p2.len, 16 + 24 + 300 - FX_MTU + 4);
	assert_int_equal(p1.b[0], 0x13);	/* version 1, SACK, ACK trailer */
	assert_int_equal(p1.b[1], MR_OPC_SEND);
	assert_int_equal(p1.b[2], MR_FLAG_FIRST);
	assert_int_equal(p1.b[3], p1.path);
	assert_int_equal(be32(p1.b + 4), 0x22);	/* peer QPN */
	psn = be32(p1.b + 8);
	assert_int_equal(psn, 0x123456);
	assert_int_equal(be32(p1.b + 12), 5);		/* ts, 1024 ns units */
	assert_int_equal(be32(p1.b + 16), 0);		/* msg_id */
	assert_int_equal(be32(p1.b + 20), 0);		/* offset */
	assert_int_equal(be32(p1.b + 24), 300);	/* msg_len */
	assert_int_equal(be32(p1.b + 28), 0);		/* ssn */
	for (i = 0; i < FX_MTU; i++)
		assert_int_equal(p1.b[40 + i], fx_byte(f->a.seed, 0, 0, i));
	assert_int_equal(be32(p1.b + p1.len - 4),
			 mrc_crc32c(p1.b, p1.len - 4));
	assert_int_equal(be32(p2.b + 8), psn + 1);
	assert_int_equal(be32(p2.b + 20), FX_MTU);
	assert_true(p2.b[2] & MR_FLAG_LAST);
	assert_false(p2.b[2] & MR_FLAG_FIRST);
	assert_int_not_equal(p1.path, p2.path);	/* sprayed */
	/* the WRITE: next msg_id, rkey and raddr */
	assert_int_equal(p3.b[1], MR_OPC_WRITE);
	assert_int_equal(p3.b[2] & 3, MR_FLAG_FIRST | MR_FLAG_LAST);
	assert_int_equal(be32(p3.b + 16), 1);
	assert_int_equal(be32(p3.b + 28), FX_RKEY);
	assert_int_equal(be32(p3.b + 36), FX_MAX_MSG_LEN);
	assert_int_equal(be32(p3.b + 8), psn + 2);
	pair_free(f);
}

/* covers: MR-WIRE-005 MR-LOSS-001 MR-LOSS-002 MR-PATH-001 */
static void ack_with_sack_ranges(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_METAROCE, 2);
	struct pkt d[5], ack;
	struct fx *f;
	uint32_t psn;

	(void)state;
	f = pair_new(&cfg);
	add_msg(&f->a, MRC_OP_RDMA_WRITE, 5 * FX_MTU);
	post(f);
	for (int i = 0; i < 5; i++)
		d[i] = take(f, &f->a);
	psn = be32(d[0].b + 8);
	/* deliver 1, 3, 4 only: out of order -> immediate ACK */
	f->now = 3 << 10;
	assert_int_equal(give(f, &f->b, &d[1]), 0);
	assert_int_equal(give(f, &f->b, &d[3]), 0);
	assert_int_equal(give(f, &f->b, &d[4]), 0);
	ack = take(f, &f->b);
	assert_int_equal(ack.len, 36 + 2 * 8 + 4);
	assert_int_equal(ack.b[1], MR_OPC_ACK);
	assert_int_equal(ack.path, d[4].path);		/* back the same way */
	assert_int_equal(be32(ack.b + 16), psn);	/* cum: nothing yet */
	assert_int_equal(be32(ack.b + 20), be32(d[4].b + 12));
	assert_int_equal(ack.b[32], d[4].b[3]);	/* echo path */
	assert_int_equal(ack.b[33], MR_ACK_OK);
	assert_int_equal(ack.b[34], 2);
	assert_int_equal(be32(ack.b + 36), (psn + 1) & 0xffffff);
	assert_int_equal(be32(ack.b + 40), (psn + 2) & 0xffffff);
	assert_int_equal(be32(ack.b + 44), (psn + 3) & 0xffffff);
	assert_int_equal(be32(ack.b + 48), (psn + 5) & 0xffffff);
	/* one ACK is enough: nothing more pending */
	assert_int_equal(take(f, &f->b).len, 0);
	pair_free(f);
}

/* covers: MR-WIRE-003 MR-WIRE-007 MR-WIRE-008 */
static void malformed_packets_are_counted_and_dropped(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_METAROCE, 2);
	struct mrc_conn_stats st;
	struct pkt d, bad;
	struct fx *f;

	(void)state;
	f = pair_new(&cfg);
	add_msg(&f->a, MRC_OP_SEND, 100);
	post(f);
	d = take(f, &f->a);

	bad = d;
	bad.b[50] ^= 0x10;				/* bit flip */
	assert_int_equal(give(f, &f->b, &bad), -EBADMSG);
	bad = d;
	bad.len = 10;					/* truncated */
	assert_int_equal(give(f, &f->b, &bad), -EPROTO);
	bad = d;
	bad.len = 20;					/* valid CRC, short */
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), -EPROTO);
	bad = d;
	bad.b[0] = 0x21;				/* version 2 */
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), -EPROTO);
	bad = d;
	bad.b[1] = 0x7f;				/* unknown opcode */
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), -EPROTO);
	bad = d;
	bad.b[24 + 3] = 50;				/* msg_len < payload */
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), -EPROTO);
	bad = d;
	bad.b[2] &= ~MR_FLAG_LAST;			/* flags lie */
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), -EPROTO);
	bad = d;
	bad.b[7] = 0x23;				/* other QP */
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), -ENXIO);
	assert_int_equal(mrc_recv_packet(f->b.conn, d.b, d.len, 99, 0),
			 -EINVAL);			/* bad path index */

	mrc_get_stats(f->b.conn, &st);
	assert_int_equal(st.rx_bad_crc, 1);
	assert_int_equal(st.rx_malformed, 7);
	assert_int_equal(st.rx_wrong_qpn, 1);
	assert_int_equal(st.rx_data, 0);
	assert_int_equal(take(f, &f->b).len, 0);	/* nothing acked */
	assert_int_equal(f->a.msgs[0].placed, 0);

	/* unknown capability bits are ignored; the intact packet works */
	bad = d;
	bad.b[0] = 0x1f;
	reseal(&bad);
	assert_int_equal(give(f, &f->b, &bad), 0);
	mrc_get_stats(f->b.conn, &st);
	assert_int_equal(st.rx_data, 1);
	assert_int_equal(f->a.msgs[0].placed, 100);
	pair_free(f);
}

/* covers: MR-CONN-001 MR-CONN-006 */
static void config_validation(void **state)
{
	struct mrc_config good = unit_cfg(MRC_MODE_METAROCE, 4), c;
	struct mrc_callbacks nocb = fx_callbacks;
	size_t sz = mrc_conn_size();
	struct mrc_conn *conn = malloc(sz);

	(void)state;
	assert_non_null(conn);
	memset(conn, 0xa5, sz);		/* caller memory need not be zeroed */
	assert_int_equal(mrc_conn_init(conn, &good, &fx_callbacks, NULL, 0), 0);
#define BAD(field, value) do {						\
		c = good;						\
		c.field = value;					\
		assert_int_equal(mrc_conn_init(conn, &c, &fx_callbacks,	\
					       NULL, 0), -EINVAL);	\
	} while (0)
	BAD(mode, 7);
	BAD(mtu, 255);
	BAD(mtu, 4097);
	BAD(num_paths, 0);
	BAD(num_paths, MRC_MAX_PATHS + 1);
	BAD(window, 0);
	BAD(window, MRC_MAX_WINDOW + 1);
	BAD(local_qpn, 1u << 24);
	BAD(remote_psn, 1u << 24);
	BAD(init_cwnd, 0);
	BAD(max_cwnd, good.init_cwnd / good.num_paths - 1); /* below a share */
	BAD(max_cwnd, MRC_MAX_WINDOW + 1);
	BAD(ack_every, 0);
	BAD(rnr_retry, 8);
	BAD(initial_rtt_ns, 0);
#undef BAD
	c = good;			/* a path's cap may be its share */
	c.max_cwnd = good.init_cwnd / good.num_paths;
	assert_int_equal(mrc_conn_init(conn, &c, &fx_callbacks, NULL, 0), 0);
	c.init_cwnd++;			/* the share is rounded up */
	assert_int_equal(mrc_conn_init(conn, &c, &fx_callbacks, NULL, 0),
			 -EINVAL);
	/* RoCEv2 mode has one path, whatever num_paths says: one share */
	c = unit_cfg(MRC_MODE_ROCEV2, 1);
	c.num_paths = 4;
	c.max_cwnd = c.init_cwnd / 4;
	assert_int_equal(mrc_conn_init(conn, &c, &fx_callbacks, NULL, 0),
			 -EINVAL);
	/* RoCEv2 mode has no ACK trailer to hold an ACK for */
	c = unit_cfg(MRC_MODE_ROCEV2, 1);
	c.final_ack_hold_ns = 1;
	assert_int_equal(mrc_conn_init(conn, &c, &fx_callbacks, NULL, 0),
			 -EINVAL);
	nocb.place_write = NULL;
	assert_int_equal(mrc_conn_init(conn, &good, &nocb, NULL, 0), -EINVAL);
	free(conn);
}

/* covers: MR-CONN-006 */
static void fixed_capacities_report_errors(void **state)
{
	struct mrc_config cfg = unit_cfg(MRC_MODE_METAROCE, 2);
	struct mrc_send_wr wr = { .opcode = MRC_OP_SEND, .length = 10 };
	struct fx *f = pair_new(&cfg);
	uint8_t small[64];
	unsigned int path, i;

	(void)state;
	for (i = 0; i < MRC_MAX_SQ; i++)
		assert_int_equal(mrc_post_send(f->a.conn, &wr, 0), 0);
	assert_int_equal(mrc_post_send(f->a.conn, &wr, 0), -ENOSPC);
	for (i = 0; i < MRC_MAX_RQ; i++)
		assert_int_equal(mrc_post_recv(f->b.conn, i, 10), 0);
	assert_int_equal(mrc_post_recv(f->b.conn, i, 10), -ENOSPC);
	wr.opcode = MRC_OP_RECV;
	assert_int_equal(mrc_post_send(f->b.conn, &wr, 0), -EINVAL);
	/* a buffer below MRC_MAX_PKT_LEN(mtu) is refused, nothing is lost */
	assert_int_equal(mrc_next_packet(f->a.conn, small, sizeof(small),
					 &path, 0), -ENOBUFS);
	assert_true(MRC_MAX_PKT_LEN(FX_MTU) >= 16 + 24 + FX_MTU + 4);
	pair_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32c_check_value),
		cmocka_unit_test(udp_ports),
		cmocka_unit_test(data_packet_layout),
		cmocka_unit_test(ack_with_sack_ranges),
		cmocka_unit_test(malformed_packets_are_counted_and_dropped),
		cmocka_unit_test(config_validation),
		cmocka_unit_test(fixed_capacities_report_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
