// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RoCEv2-compatible mode (MR-COMPAT-*): IBTA RC on the wire (BTH, RETH,
 * AETH), a single path, in-order acceptance and go-back-N on a PSN
 * sequence error or timeout.  It shares the work queues, completion logic
 * and window bookkeeping of conn.c with MetaRoCE mode.
 */
#include "mrc_internal.h"

#define MRC_IN_SEND	1
#define MRC_IN_WRITE	2

static int mrc_ib_has_reth(u8 op)
{
	return op == MR_IB_WRITE_FIRST || op == MR_IB_WRITE_ONLY;
}

static u8 mrc_ib_opcode(const struct mrc_swqe *w, u8 flags)
{
	int first = flags & MR_FLAG_FIRST, last = flags & MR_FLAG_LAST;

	if (w->opcode == MRC_OP_SEND)
		return first && last ? MR_IB_SEND_ONLY :
		       first ? MR_IB_SEND_FIRST :
		       last ? MR_IB_SEND_LAST : MR_IB_SEND_MIDDLE;
	return first && last ? MR_IB_WRITE_ONLY :
	       first ? MR_IB_WRITE_FIRST :
	       last ? MR_IB_WRITE_LAST : MR_IB_WRITE_MIDDLE;
}

static void mrc_put_bth(struct mrc_conn *c, u8 *b, u8 opcode, u32 pad,
			int ack_req, u32 psn)
{
	b[0] = opcode;
	b[1] = pad << 4;
	mrc_put_be16(b + 2, MR_DEFAULT_PKEY);
	mrc_put_be32(b + 4, c->cfg.remote_qpn);
	mrc_put_be32(b + 8, (ack_req ? MR_BTH_ACKREQ : 0) | psn);
}

static int mrc_gbn_build_data(struct mrc_conn *c, u8 *b, size_t cap, u32 psn,
			      u64 now)
{
	struct mrc_tx_pkt *t = mrc_txp(c, psn);
	struct mrc_swqe *w = &c->sq[t->sq_idx];
	u8 op = mrc_ib_opcode(w, t->flags);
	u32 hlen = MR_BTH_LEN + (mrc_ib_has_reth(op) ? MR_RETH_LEN : 0);
	u32 pad = (4 - (t->len & 3)) & 3;
	int last_now = mrc_psn_add(psn, 1) == c->snd_nxt &&
		       c->sq_pkt == c->sq_tail;
	int ret;

	mrc_put_bth(c, b, op, pad, (t->flags & MR_FLAG_LAST) || last_now, psn);
	if (mrc_ib_has_reth(op)) {
		mrc_put_be64(b + MR_BTH_LEN, w->raddr);
		mrc_put_be32(b + MR_BTH_LEN + 8, w->rkey);
		mrc_put_be32(b + MR_BTH_LEN + 12, w->length);
	}
	if (t->len) {
		ret = c->cb.read_payload(c->user, w->wr_id, t->offset,
					 b + hlen, t->len);
		if (ret)
			return ret;
	}
	memset(b + hlen + t->len, 0, pad);
	if (t->tx_count) {
		c->st.tx_retrans++;
		c->path[0].st.tx_retrans++;
	}
	t->tx_count++;
	t->sent_ns = now;
	c->st.tx_data++;
	c->path[0].st.tx_data++;
	return mrc_finish_packet(b, hlen + t->len + pad, cap);
}

static int mrc_gbn_build_ack(struct mrc_conn *c, u8 *b, size_t cap)
{
	u8 syn = c->ack_syndrome;
	u32 psn;

	if (MR_BTH_LEN + MR_AETH_LEN + MR_CRC_LEN > cap)
		return -ENOBUFS;
	/* An ACK names the last PSN received; a NAK the PSN it refers to. */
	if (syn == MR_AETH_ACK) {
		psn = mrc_psn_add(c->rcv_nxt, MRC_PSN_MASK);
		syn = MR_AETH_ACK | 0x1f;	/* no end-to-end credits */
	} else {
		psn = c->ack_nak_psn;
	}
	mrc_put_bth(c, b, MR_IB_ACK, 0, 0, psn);
	mrc_put_be32(b + MR_BTH_LEN, (u32)syn << 24 | (c->msn & MRC_PSN_MASK));
	mrc_ack_sent(c, 0);
	return mrc_finish_packet(b, MR_BTH_LEN + MR_AETH_LEN, cap);
}

int mrc_gbn_next(struct mrc_conn *c, u8 *b, size_t cap, unsigned int *path,
		 u64 now)
{
	u32 psn;

	*path = 0;
	if (c->ack_pending && (c->ack_now || c->in_error))
		return mrc_gbn_build_ack(c, b, cap);
	if (c->in_error || c->rnr_until_ns > now)
		return 0;
	if (MR_BTH_LEN + MR_RETH_LEN + c->cfg.mtu + 3 + MR_CRC_LEN > cap)
		return -ENOBUFS;
	if (c->snd_tx == c->snd_nxt) {
		if (mrc_packetize(c, &psn))
			return 0;
	} else {
		psn = c->snd_tx;
	}
	c->snd_tx = mrc_psn_add(psn, 1);
	if (c->gbn_timer_ns == MRC_U64_MAX)
		c->gbn_timer_ns = now + c->cfg.rto_ns;
	return mrc_gbn_build_data(c, b, cap, psn, now);
}

/* Everything before psn is acknowledged. */
static void mrc_gbn_advance(struct mrc_conn *c, u32 psn, u64 now)
{
	if (c->snd_una != psn)
		c->gbn_retries = 0;
	while (c->snd_una != psn) {
		mrc_txp(c, c->snd_una)->state = MRC_TXP_FREE;
		c->snd_una = mrc_psn_add(c->snd_una, 1);
	}
	if (mrc_psn_before(c->snd_tx, c->snd_una))
		c->snd_tx = c->snd_una;
	c->gbn_timer_ns = c->snd_una == c->snd_nxt ? MRC_U64_MAX :
			  now + c->cfg.rto_ns;
	mrc_complete_sends(c);
}

static int mrc_gbn_recv_ack(struct mrc_conn *c, u32 psn, u32 aeth, u64 now)
{
	u8 syn = aeth >> 24;
	u32 outstanding = mrc_psn_diff(c->snd_nxt, c->snd_una);

	c->st.rx_ctrl++;
	c->path[0].st.rx_packets++;
	if ((syn & 0xe0) == MR_AETH_ACK) {
		/* ACK of psn: must lie in [snd_una, snd_nxt). */
		if (mrc_psn_diff(psn, c->snd_una) >= outstanding)
			return 0;	/* stale duplicate */
		mrc_gbn_advance(c, mrc_psn_add(psn, 1), now);
		return 0;
	}
	/* NAKs name a PSN in [snd_una, snd_nxt]. */
	if (mrc_psn_diff(psn, c->snd_una) > outstanding)
		return 0;
	if ((syn & 0xe0) == MR_AETH_RNR_NAK) {
		mrc_gbn_advance(c, psn, now);
		c->snd_tx = psn;
		if (c->cfg.rnr_retry != MRC_RNR_INFINITE &&
		    ++c->gbn_rnr_retries > c->cfg.rnr_retry) {
			mrc_conn_fail(c, MRC_WC_RNR_RETRY_EXC_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return 0;
		}
		c->rnr_until_ns = now + c->cfg.rnr_timer_ns;
		return 0;
	}
	if (syn == (MR_AETH_NAK | MR_AETH_NAK_PSN_SEQ)) {
		/* Go back N (MR-COMPAT-004). */
		mrc_gbn_advance(c, psn, now);
		c->snd_tx = psn;
		return 0;
	}
	if (syn == (MR_AETH_NAK | MR_AETH_NAK_REM_ACCESS) ||
	    syn == (MR_AETH_NAK | MR_AETH_NAK_INV_REQ)) {
		mrc_gbn_advance(c, psn, now);
		mrc_conn_fail(c, syn & 1 ? MRC_WC_REM_INV_REQ_ERR :
			      MRC_WC_REM_ACCESS_ERR, MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	c->st.rx_malformed++;
	return -EPROTO;
}

static void mrc_gbn_nak(struct mrc_conn *c, u8 syn, u32 psn, u64 now)
{
	c->ack_syndrome = syn;
	c->ack_nak_psn = psn;
	mrc_schedule_ack(c, 0, 1, now);
}

int mrc_gbn_recv(struct mrc_conn *c, const u8 *b, size_t len, u64 now)
{
	u8 op = b[0], pad = (b[1] >> 4) & 3;
	u32 psn = mrc_get_be32(b + 8) & MRC_PSN_MASK;
	u32 hlen = MR_BTH_LEN, plen, d;
	const u8 *payload;
	int first, last, send;

	if ((b[1] & 0x0f) != 0) {	/* transport header version 0 */
		c->st.rx_malformed++;
		return -EPROTO;
	}
	if ((mrc_get_be32(b + 4) & MRC_PSN_MASK) != c->cfg.local_qpn) {
		c->st.rx_wrong_qpn++;
		return -ENXIO;
	}
	if (c->in_error)
		return 0;
	if (op == MR_IB_ACK) {
		if (len != MR_BTH_LEN + MR_AETH_LEN)
			goto malformed;
		return mrc_gbn_recv_ack(c, psn, mrc_get_be32(b + MR_BTH_LEN),
					now);
	}
	switch (op) {
	case MR_IB_SEND_FIRST: case MR_IB_SEND_MIDDLE:
	case MR_IB_SEND_LAST: case MR_IB_SEND_ONLY:
	case MR_IB_WRITE_FIRST: case MR_IB_WRITE_MIDDLE:
	case MR_IB_WRITE_LAST: case MR_IB_WRITE_ONLY:
		break;
	default:
		goto malformed;
	}
	send = op <= MR_IB_SEND_ONLY;
	first = op == MR_IB_SEND_FIRST || op == MR_IB_SEND_ONLY ||
		op == MR_IB_WRITE_FIRST || op == MR_IB_WRITE_ONLY;
	last = op == MR_IB_SEND_LAST || op == MR_IB_SEND_ONLY ||
	       op == MR_IB_WRITE_LAST || op == MR_IB_WRITE_ONLY;
	if (mrc_ib_has_reth(op))
		hlen += MR_RETH_LEN;
	if (len < hlen + pad)
		goto malformed;
	plen = len - hlen - pad;
	if (plen > c->cfg.mtu || (!last && plen != c->cfg.mtu))
		goto malformed;
	payload = b + hlen;

	d = mrc_psn_diff(psn, c->rcv_nxt);
	if (d >= MRC_PSN_HALF) {
		c->st.rx_dup++;
		mrc_schedule_ack(c, 0, 1, now);
		return 0;
	}
	if (d) {
		/* PSN sequence error: one NAK until the gap fills. */
		if (!c->nak_sent) {
			c->nak_sent = 1;
			c->st.seq_naks++;
			mrc_gbn_nak(c, MR_AETH_NAK | MR_AETH_NAK_PSN_SEQ,
				    c->rcv_nxt, now);
		}
		return 0;
	}
	if (first == !!c->rx_in_msg ||
	    (!first && c->rx_in_msg != (send ? MRC_IN_SEND : MRC_IN_WRITE))) {
		mrc_gbn_nak(c, MR_AETH_NAK | MR_AETH_NAK_INV_REQ, psn, now);
		mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (first) {
		c->rx_offset = 0;
		if (!send) {
			c->rx_va = mrc_get_be64(b + MR_BTH_LEN);
			c->rx_rkey = mrc_get_be32(b + MR_BTH_LEN + 8);
		}
	}
	if (send) {
		struct mrc_rwqe *r = &c->rq[c->rq_head % MRC_MAX_RQ];

		if (c->rq_head == c->rq_tail) {
			c->st.rx_no_recv_wr++;
			mrc_gbn_nak(c, MR_AETH_RNR_NAK | 0x0e, psn, now);
			return 0;
		}
		if ((u64)c->rx_offset + plen > r->length) {
			mrc_gbn_nak(c, MR_AETH_NAK | MR_AETH_NAK_INV_REQ, psn,
				    now);
			mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR,
				      MRC_WC_LOC_LEN_ERR);
			return 0;
		}
		if (plen && c->cb.place_send(c->user, r->wr_id, c->rx_offset,
					     payload, plen)) {
			c->st.rx_place_err++;
			return -EFAULT;
		}
		if (last) {
			r->msg_len = c->rx_offset + plen;
			r->last_psn = psn;
			r->has_last = 1;
		}
	} else if (plen && c->cb.place_write(c->user, c->rx_rkey,
					     c->rx_va + c->rx_offset,
					     payload, plen)) {
		c->st.rx_place_err++;
		mrc_gbn_nak(c, MR_AETH_NAK | MR_AETH_NAK_REM_ACCESS, psn, now);
		mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	c->rx_offset += plen;
	c->rx_in_msg = last ? 0 : send ? MRC_IN_SEND : MRC_IN_WRITE;
	if (last)
		c->msn++;
	c->st.rx_data++;
	c->path[0].st.rx_packets++;
	c->nak_sent = 0;
	c->rcv_nxt = mrc_psn_add(c->rcv_nxt, 1);
	c->rcv_high = c->rcv_nxt;
	mrc_complete_recvs(c);
	if (!(mrc_get_be32(b + 8) & MR_BTH_ACKREQ))
		mrc_schedule_ack(c, 0, 0, now);
	else if (last)
		mrc_schedule_final_ack(c, 0, now);
	else
		mrc_schedule_ack(c, 0, 1, now);
	return 0;

malformed:
	c->st.rx_malformed++;
	return -EPROTO;
}

u64 mrc_gbn_deadline(const struct mrc_conn *c)
{
	return c->gbn_timer_ns;
}

void mrc_gbn_timeout(struct mrc_conn *c, u64 now)
{
	if (c->ack_pending && c->ack_deadline_ns <= now)
		c->ack_now = 1;
	if (c->in_error)
		return;
	if (c->rnr_until_ns && c->rnr_until_ns <= now)
		c->rnr_until_ns = 0;
	if (c->gbn_timer_ns > now)
		return;
	if (c->snd_una == c->snd_nxt) {
		c->gbn_timer_ns = MRC_U64_MAX;
		return;
	}
	/* Local ACK timeout: retry from the oldest unacked PSN. */
	if (++c->gbn_retries > c->cfg.retry_cnt) {
		mrc_conn_fail(c, MRC_WC_RETRY_EXC_ERR, MRC_WC_WR_FLUSH_ERR);
		return;
	}
	c->path[0].st.ptos++;
	c->snd_tx = c->snd_una;
	c->gbn_timer_ns = now + c->cfg.rto_ns;
}
