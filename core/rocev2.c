// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RoCEv2-compatible mode (MR-COMPAT-*): IBTA RC on the wire (BTH, RETH,
 * AETH, ImmDt, AtomicETH, AtomicAckETH), a single path, in-order
 * acceptance and go-back-N on a PSN sequence error or timeout.  READ
 * responses and atomic acknowledges use the request's PSNs (IBTA), so
 * the responder keeps a small table of responder resources (struct
 * mrc_rsp) to answer duplicates: a READ is re-read, an atomic's stored
 * original value is sent again and never re-executed (MR-COMPAT-009).
 * It shares the work queues, completion logic and window bookkeeping of
 * conn.c with MetaRoCE mode.
 */
#include "mrc_internal.h"

#define MRC_IN_SEND	1
#define MRC_IN_WRITE	2

static int mrc_ib_has_reth(u8 op)
{
	return op == MR_IB_WRITE_FIRST || op == MR_IB_WRITE_ONLY ||
	       op == MR_IB_WRITE_ONLY_IMM || op == MR_IB_READ_REQ;
}

static int mrc_ib_has_imm(u8 op)
{
	return op == MR_IB_SEND_LAST_IMM || op == MR_IB_SEND_ONLY_IMM ||
	       op == MR_IB_WRITE_LAST_IMM || op == MR_IB_WRITE_ONLY_IMM;
}

static int mrc_ib_is_send(u8 op)
{
	return op <= MR_IB_SEND_ONLY_IMM;
}

static int mrc_ib_is_write(u8 op)
{
	return op >= MR_IB_WRITE_FIRST && op <= MR_IB_WRITE_ONLY_IMM;
}

static int mrc_ib_first(u8 op)
{
	return op == MR_IB_SEND_FIRST || op == MR_IB_SEND_ONLY ||
	       op == MR_IB_SEND_ONLY_IMM || op == MR_IB_WRITE_FIRST ||
	       op == MR_IB_WRITE_ONLY || op == MR_IB_WRITE_ONLY_IMM;
}

static int mrc_ib_last(u8 op)
{
	return op == MR_IB_SEND_LAST || op == MR_IB_SEND_ONLY ||
	       op == MR_IB_SEND_LAST_IMM || op == MR_IB_SEND_ONLY_IMM ||
	       op == MR_IB_WRITE_LAST || op == MR_IB_WRITE_ONLY ||
	       op == MR_IB_WRITE_LAST_IMM || op == MR_IB_WRITE_ONLY_IMM;
}

/* IBTA opcode of a SEND/WRITE packet (MR-COMPAT-002, MR-COMPAT-008). */
static u8 mrc_ib_opcode(const struct mrc_swqe *w, u8 flags)
{
	int first = flags & MR_FLAG_FIRST, last = flags & MR_FLAG_LAST;
	int imm = w->opcode == MRC_OP_SEND_WITH_IMM ||
		  w->opcode == MRC_OP_RDMA_WRITE_WITH_IMM;

	if (!mrc_op_write(w->opcode))
		return first && last ? (imm ? MR_IB_SEND_ONLY_IMM :
					MR_IB_SEND_ONLY) :
		       first ? MR_IB_SEND_FIRST :
		       last ? (imm ? MR_IB_SEND_LAST_IMM : MR_IB_SEND_LAST) :
		       MR_IB_SEND_MIDDLE;
	return first && last ? (imm ? MR_IB_WRITE_ONLY_IMM : MR_IB_WRITE_ONLY) :
	       first ? MR_IB_WRITE_FIRST :
	       last ? (imm ? MR_IB_WRITE_LAST_IMM : MR_IB_WRITE_LAST) :
	       MR_IB_WRITE_MIDDLE;
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

static void mrc_gbn_count_tx(struct mrc_conn *c, int retrans, u64 now,
			     struct mrc_tx_pkt *t)
{
	if (retrans) {
		c->st.tx_retrans++;
		c->path[0].st.tx_retrans++;
	}
	if (t) {
		t->tx_count++;
		t->sent_ns = now;
	}
	c->st.tx_data++;
	c->path[0].st.tx_data++;
}

/*
 * A READ request from psn on (the whole READ, or after a partial
 * response the rest of it, IBTA re-issue), or an atomic request.
 */
static int mrc_gbn_build_request(struct mrc_conn *c, u8 *b, size_t cap,
				 struct mrc_swqe *w, u32 psn, u64 now)
{
	struct mrc_tx_pkt *t = mrc_txp(c, w->first_psn);
	int retrans = psn != w->first_psn || t->tx_count;
	u32 hlen;

	if (w->opcode == MRC_OP_RDMA_READ) {
		u32 off = mrc_psn_diff(psn, w->first_psn) * c->cfg.mtu;

		hlen = MR_BTH_LEN + MR_RETH_LEN;
		mrc_put_bth(c, b, MR_IB_READ_REQ, 0, 0, psn);
		mrc_put_be64(b + MR_BTH_LEN, w->raddr + off);
		mrc_put_be32(b + MR_BTH_LEN + 8, w->rkey);
		mrc_put_be32(b + MR_BTH_LEN + 12, w->length - off);
	} else {
		int cas = w->opcode == MRC_OP_ATOMIC_CMP_AND_SWP;

		hlen = MR_BTH_LEN + MR_ATOMIC_ETH_LEN;
		mrc_put_bth(c, b, cas ? MR_IB_CMP_SWAP : MR_IB_FETCH_ADD, 0, 0,
			    psn);
		mrc_put_be64(b + MR_BTH_LEN, w->raddr);
		mrc_put_be32(b + MR_BTH_LEN + 8, w->rkey);
		mrc_put_be64(b + MR_BTH_LEN + 12, cas ? w->swap :
			     w->compare_add);
		mrc_put_be64(b + MR_BTH_LEN + 20, cas ? w->compare_add : 0);
	}
	mrc_gbn_count_tx(c, retrans, now, t);
	/* the request stands for its whole PSN range */
	c->snd_tx = mrc_psn_add(w->last_psn, 1);
	return mrc_finish_conn_packet(c, b, hlen, cap);
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
	if (mrc_ib_has_imm(op)) {
		mrc_put_be32(b + hlen, w->imm);
		hlen += MR_IMMDT_LEN;
	}
	if (t->len) {
		ret = c->cb.read_payload(c->user, w->wr_id, t->offset,
					 b + hlen, t->len);
		if (ret)
			return ret;
	}
	memset(b + hlen + t->len, 0, pad);
	mrc_gbn_count_tx(c, t->tx_count != 0, now, t);
	c->snd_tx = mrc_psn_add(psn, 1);
	return mrc_finish_conn_packet(c, b, hlen + t->len + pad, cap);
}

static void mrc_gbn_nak(struct mrc_conn *c, u8 syn, u32 psn, u64 now)
{
	c->ack_syndrome = syn;
	c->ack_nak_psn = psn;
	mrc_schedule_ack(c, 0, 1, now);
}

static u8 mrc_gbn_rerr_syndrome(int err)
{
	switch (mrc_rerr_kind(err)) {
	case MRC_RERR_ACCESS:
		return MR_AETH_NAK | MR_AETH_NAK_REM_ACCESS;
	case MRC_RERR_INV_REQ:
		return MR_AETH_NAK | MR_AETH_NAK_INV_REQ;
	default:
		return MR_AETH_NAK | MR_AETH_NAK_REM_OP;
	}
}

/* The oldest responder resource with response packets still to send. */
static struct mrc_rsp *mrc_gbn_rsp_pending(struct mrc_conn *c)
{
	u32 i;

	for (i = c->rsp_head; i != c->rsp_tail; i++)
		if (c->rsp[i % MRC_MAX_RD_ATOMIC].pending)
			return &c->rsp[i % MRC_MAX_RD_ATOMIC];
	return NULL;
}

static void mrc_put_aeth(struct mrc_conn *c, u8 *b)
{
	mrc_put_be32(b, (u32)(MR_AETH_ACK | 0x1f) << 24 |
		     (c->msn & MRC_PSN_MASK));
}

/* The next READ response or atomic acknowledge packet of r. */
static int mrc_gbn_build_response(struct mrc_conn *c, u8 *b, size_t cap,
				  struct mrc_rsp *r, u64 now)
{
	u32 psn = r->next_psn, hlen = MR_BTH_LEN + MR_AETH_LEN, off, plen, pad;
	int first, last, ret;
	u8 op;

	if (r->atomic) {
		mrc_put_bth(c, b, MR_IB_ATOMIC_ACK, 0, 0, psn);
		mrc_put_aeth(c, b + MR_BTH_LEN);
		mrc_put_be64(b + hlen, r->orig);
		r->pending = 0;
		mrc_gbn_count_tx(c, 0, now, NULL);
		return mrc_finish_conn_packet(c, b,
					      hlen + MR_ATOMIC_ACK_ETH_LEN, cap);
	}
	off = mrc_psn_diff(psn, r->first_psn) * c->cfg.mtu;
	plen = r->length - off;
	if (plen > c->cfg.mtu)
		plen = c->cfg.mtu;
	first = psn == r->issue_psn;
	last = psn == r->last_psn;
	op = first && last ? MR_IB_READ_RESP_ONLY : first ?
	     MR_IB_READ_RESP_FIRST : last ? MR_IB_READ_RESP_LAST :
	     MR_IB_READ_RESP_MIDDLE;
	if (op == MR_IB_READ_RESP_MIDDLE)
		hlen = MR_BTH_LEN;	/* IBTA: no AETH in the middle */
	pad = (4 - (plen & 3)) & 3;
	mrc_put_bth(c, b, op, pad, 0, psn);
	if (hlen != MR_BTH_LEN)
		mrc_put_aeth(c, b + MR_BTH_LEN);
	if (plen) {
		ret = c->cb.read_remote(c->user, r->rkey, r->va + off, b + hlen,
					plen);
		if (ret) {
			/* memory gone since the request was checked */
			r->pending = 0;
			mrc_gbn_nak(c, mrc_gbn_rerr_syndrome(ret), psn, now);
			mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return 0;
		}
	}
	memset(b + hlen + plen, 0, pad);
	r->next_psn = mrc_psn_add(psn, 1);
	if (last)
		r->pending = 0;
	mrc_gbn_count_tx(c, 0, now, NULL);
	return mrc_finish_conn_packet(c, b, hlen + plen + pad, cap);
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
	return mrc_finish_conn_packet(c, b, MR_BTH_LEN + MR_AETH_LEN, cap);
}

int mrc_gbn_next(struct mrc_conn *c, u8 *b, size_t cap, unsigned int *path,
		 u64 now)
{
	struct mrc_swqe *w;
	struct mrc_rsp *r;
	u32 psn;

	*path = 0;
	if (c->ack_pending && (c->in_error || (c->ack_now &&
					      c->ack_syndrome != MR_AETH_ACK)))
		return mrc_gbn_build_ack(c, b, cap);
	if (c->in_error)
		return 0;
	if (MR_BTH_LEN + MR_RETH_LEN + MR_IMMDT_LEN + c->cfg.mtu + 3 +
	    MR_CRC_LEN > cap)
		return -ENOBUFS;
	/*
	 * Responses before a plain ACK: IBTA orders them as the requests
	 * were, and an ACK naming a PSN past an unanswered READ would send
	 * the requester back to re-issue it.
	 */
	r = mrc_gbn_rsp_pending(c);
	if (r)
		return mrc_gbn_build_response(c, b, cap, r, now);
	if (c->ack_pending && c->ack_now)
		return mrc_gbn_build_ack(c, b, cap);
	if (c->rnr_until_ns > now)
		return 0;
	if (c->snd_tx == c->snd_nxt) {
		if (mrc_packetize(c, &psn))
			return 0;
	} else {
		psn = c->snd_tx;
	}
	if (c->gbn_timer_ns == MRC_U64_MAX)
		c->gbn_timer_ns = now + c->cfg.rto_ns;
	w = mrc_rd_find_psn(c, psn);
	if (w)
		return mrc_gbn_build_request(c, b, cap, w, psn, now);
	return mrc_gbn_build_data(c, b, cap, psn, now);
}

/* Everything before psn is acknowledged. */
static void mrc_gbn_advance(struct mrc_conn *c, u32 psn, u64 now)
{
	/* Progress: the retry budgets count from here (IBTA 9.7.5.2.8). */
	if (c->snd_una != psn) {
		c->gbn_retries = 0;
		c->gbn_rnr_retries = 0;
		c->gbn_read_retry = 0;
	}
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

/*
 * Go back to snd_una to re-issue the READ/atomic there, once per snd_una:
 * every further sign of the same loss (more responses ahead of it, ACKs
 * of duplicates behind it) would otherwise restart the whole window again.
 */
static void mrc_gbn_reissue(struct mrc_conn *c)
{
	if (c->gbn_read_retry && c->gbn_read_retry_psn == c->snd_una)
		return;
	c->gbn_read_retry = 1;
	c->gbn_read_retry_psn = c->snd_una;
	c->snd_tx = c->snd_una;
}

/*
 * An ACK or NAK cannot acknowledge a READ or atomic: only its response
 * can (IBTA).  One naming a PSN past an unanswered one acknowledges up
 * to it and sends the requester back to re-issue it (MR-COMPAT-009).
 */
static void mrc_gbn_advance_acked(struct mrc_conn *c, u32 psn, u64 now)
{
	struct mrc_swqe *w = mrc_rd_oldest(c);
	u32 limit;

	if (w && !w->resp_done) {
		limit = mrc_psn_before(c->snd_una, w->first_psn) ?
			w->first_psn : c->snd_una;
		if (mrc_psn_before(limit, psn)) {
			mrc_gbn_advance(c, limit, now);
			mrc_gbn_reissue(c);
			return;
		}
	}
	mrc_gbn_advance(c, psn, now);
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
		mrc_gbn_advance_acked(c, mrc_psn_add(psn, 1), now);
		return 0;
	}
	/* NAKs name a PSN in [snd_una, snd_nxt]. */
	if (mrc_psn_diff(psn, c->snd_una) > outstanding)
		return 0;
	if ((syn & 0xe0) == MR_AETH_RNR_NAK) {
		mrc_gbn_advance_acked(c, psn, now);
		c->snd_tx = c->snd_una;
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
		mrc_gbn_advance_acked(c, psn, now);
		c->snd_tx = c->snd_una;
		return 0;
	}
	if (syn == (MR_AETH_NAK | MR_AETH_NAK_REM_ACCESS) ||
	    syn == (MR_AETH_NAK | MR_AETH_NAK_INV_REQ) ||
	    syn == (MR_AETH_NAK | MR_AETH_NAK_REM_OP)) {
		mrc_gbn_advance_acked(c, psn, now);
		mrc_conn_fail(c, syn == (MR_AETH_NAK | MR_AETH_NAK_INV_REQ) ?
			      MRC_WC_REM_INV_REQ_ERR :
			      syn == (MR_AETH_NAK | MR_AETH_NAK_REM_OP) ?
			      MRC_WC_REM_OP_ERR : MRC_WC_REM_ACCESS_ERR,
			      MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	c->st.rx_malformed++;
	return -EPROTO;
}

/*
 * Requester: a READ response or atomic acknowledge.  Only the response
 * for snd_una is accepted (in order); one ahead of it means a loss and
 * the READ is re-issued from snd_una, once per snd_una.
 */
static int mrc_gbn_recv_response(struct mrc_conn *c, const u8 *b, size_t len,
				 u64 now)
{
	u8 op = b[0], pad = (b[1] >> 4) & 3;
	u32 psn = mrc_get_be32(b + 8) & MRC_PSN_MASK;
	u32 hlen = MR_BTH_LEN + MR_AETH_LEN, plen, off;
	struct mrc_swqe *w = mrc_rd_find_psn(c, psn);
	int last;

	if (op == MR_IB_READ_RESP_MIDDLE)
		hlen = MR_BTH_LEN;
	if (op == MR_IB_ATOMIC_ACK)
		hlen += MR_ATOMIC_ACK_ETH_LEN;
	if (len < hlen + pad || (op == MR_IB_ATOMIC_ACK && len != hlen) ||
	    (hlen > MR_BTH_LEN &&
	     (b[MR_BTH_LEN] & 0xe0) != MR_AETH_ACK))
		goto malformed;
	plen = len - hlen - pad;
	if (mrc_psn_diff(psn, c->snd_una) >= MRC_PSN_HALF) {
		c->st.rx_dup++;
		c->path[0].st.rx_dup++;
		return 0;
	}
	if (!w || (op == MR_IB_ATOMIC_ACK) != mrc_op_atomic(w->opcode))
		goto malformed;
	if (psn != c->snd_una) {
		mrc_gbn_reissue(c);
		return 0;
	}
	if (op == MR_IB_ATOMIC_ACK) {
		u64 orig = mrc_get_be64(b + MR_BTH_LEN + MR_AETH_LEN);

		if (mrc_place_response(c, w, 0, (const u8 *)&orig, 8))
			return 0;
	} else {
		off = mrc_psn_diff(psn, w->first_psn) * c->cfg.mtu;
		last = psn == w->last_psn;
		if (last != (op == MR_IB_READ_RESP_LAST ||
			     op == MR_IB_READ_RESP_ONLY) ||
		    plen != (last ? w->length - off : c->cfg.mtu))
			goto malformed;
		if (mrc_place_response(c, w, off, b + hlen, plen))
			return 0;
	}
	c->st.rx_ctrl++;
	c->path[0].st.rx_packets++;
	mrc_gbn_advance(c, mrc_psn_add(psn, 1), now);
	return 0;

malformed:
	c->st.rx_malformed++;
	return -EPROTO;
}

/* A responder resource for a new request; NULL if every one is busy. */
static struct mrc_rsp *mrc_gbn_rsp_new(struct mrc_conn *c)
{
	struct mrc_rsp *r;

	if (c->rsp_tail - c->rsp_head == MRC_MAX_RD_ATOMIC) {
		if (c->rsp[c->rsp_head % MRC_MAX_RD_ATOMIC].pending)
			return NULL;
		c->rsp_head++;	/* the oldest is answered: reuse it */
	}
	r = &c->rsp[c->rsp_tail++ % MRC_MAX_RD_ATOMIC];
	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * A duplicate READ or atomic request (behind rcv_nxt): answer it again
 * from the resource that holds its PSN; an atomic is not re-executed.
 */
static void mrc_gbn_dup_request(struct mrc_conn *c, u32 psn)
{
	u32 i;

	for (i = c->rsp_head; i != c->rsp_tail; i++) {
		struct mrc_rsp *r = &c->rsp[i % MRC_MAX_RD_ATOMIC];

		if (mrc_psn_diff(psn, r->first_psn) <=
		    mrc_psn_diff(r->last_psn, r->first_psn)) {
			r->next_psn = psn;
			r->issue_psn = psn;
			r->pending = 1;
			return;
		}
	}
}

/* Responder: an in-sequence READ or atomic request at rcv_nxt. */
static int mrc_gbn_recv_request(struct mrc_conn *c, const u8 *b, size_t len,
				u64 now)
{
	u8 op = b[0];
	u32 psn = c->rcv_nxt, span = 1;
	struct mrc_rsp *r;
	int ret;

	if (len != MR_BTH_LEN + (op == MR_IB_READ_REQ ? MR_RETH_LEN :
				 MR_ATOMIC_ETH_LEN)) {
		c->st.rx_malformed++;
		return -EPROTO;
	}
	r = mrc_gbn_rsp_new(c);
	if (!r) {
		/* more than max_rd_atomic outstanding: the requester retries */
		c->st.rx_no_resp_slot++;
		return 0;
	}
	r->va = mrc_get_be64(b + MR_BTH_LEN);
	r->rkey = mrc_get_be32(b + MR_BTH_LEN + 8);
	if (op == MR_IB_READ_REQ) {
		r->length = mrc_get_be32(b + MR_BTH_LEN + 12);
		if (r->length > 0x7fffffffu) {
			ret = -EDOM;
		} else {
			span = r->length ? (r->length + c->cfg.mtu - 1) /
					   c->cfg.mtu : 1;
			ret = mrc_check_read(c, r->rkey, r->va, r->length);
		}
		if (!ret)
			c->st.reads_answered++;
	} else {
		u64 swap_add = mrc_get_be64(b + MR_BTH_LEN + 12);
		u64 compare = mrc_get_be64(b + MR_BTH_LEN + 20);

		r->atomic = 1;
		ret = op == MR_IB_CMP_SWAP ?
		      mrc_do_atomic(c, MRC_OP_ATOMIC_CMP_AND_SWP, r->rkey,
				    r->va, compare, swap_add, &r->orig) :
		      mrc_do_atomic(c, MRC_OP_ATOMIC_FETCH_AND_ADD, r->rkey,
				    r->va, swap_add, 0, &r->orig);
	}
	if (ret) {
		c->rsp_tail--;
		c->st.rx_place_err++;
		mrc_gbn_nak(c, mrc_gbn_rerr_syndrome(ret), psn, now);
		mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	r->first_psn = psn;
	r->issue_psn = psn;
	r->next_psn = psn;
	r->last_psn = mrc_psn_add(psn, span - 1);
	r->pending = 1;
	c->msn++;
	c->st.rx_data++;
	c->path[0].st.rx_packets++;
	c->nak_sent = 0;
	c->rcv_nxt = mrc_psn_add(psn, span);
	c->rcv_high = c->rcv_nxt;
	return 0;
}

int mrc_gbn_recv(struct mrc_conn *c, const u8 *b, size_t len, u64 now)
{
	u8 op = b[0], pad = (b[1] >> 4) & 3;
	u32 psn = mrc_get_be32(b + 8) & MRC_PSN_MASK;
	u32 hlen = MR_BTH_LEN, plen, d, imm = 0;
	const u8 *payload;
	int first, last, send, request;
	struct mrc_rwqe *r = NULL;

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
	if ((op >= MR_IB_READ_RESP_FIRST && op <= MR_IB_READ_RESP_ONLY) ||
	    op == MR_IB_ATOMIC_ACK)
		return mrc_gbn_recv_response(c, b, len, now);
	request = op == MR_IB_READ_REQ || op == MR_IB_CMP_SWAP ||
		  op == MR_IB_FETCH_ADD;
	if (!request && !mrc_ib_is_send(op) && !mrc_ib_is_write(op))
		goto malformed;

	d = mrc_psn_diff(psn, c->rcv_nxt);
	if (d >= MRC_PSN_HALF) {
		c->st.rx_dup++;
		c->path[0].st.rx_dup++;
		if (request)
			mrc_gbn_dup_request(c, psn);
		else
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
	if (request) {
		if (c->rx_in_msg) {
			mrc_gbn_nak(c, MR_AETH_NAK | MR_AETH_NAK_INV_REQ, psn,
				    now);
			mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return 0;
		}
		return mrc_gbn_recv_request(c, b, len, now);
	}
	send = mrc_ib_is_send(op);
	first = mrc_ib_first(op);
	last = mrc_ib_last(op);
	if (mrc_ib_has_reth(op))
		hlen += MR_RETH_LEN;
	if (mrc_ib_has_imm(op)) {
		if (len < hlen + MR_IMMDT_LEN)
			goto malformed;
		imm = mrc_get_be32(b + hlen);
		hlen += MR_IMMDT_LEN;
	}
	if (len < hlen + pad)
		goto malformed;
	plen = len - hlen - pad;
	if (plen > c->cfg.mtu || (!last && plen != c->cfg.mtu))
		goto malformed;
	payload = b + hlen;

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
	/* A SEND needs its receive at once, a WRITE with imm at the end. */
	if (send || mrc_ib_has_imm(op)) {
		if (c->rq_head == c->rq_tail) {
			c->st.rx_no_recv_wr++;
			mrc_gbn_nak(c, MR_AETH_RNR_NAK | 0x0e, psn, now);
			return 0;
		}
		r = &c->rq[c->rq_head % MRC_MAX_RQ];
	}
	if (send) {
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
	} else if (plen && c->cb.place_write(c->user, c->rx_rkey,
					     c->rx_va + c->rx_offset,
					     payload, plen)) {
		c->st.rx_place_err++;
		mrc_gbn_nak(c, MR_AETH_NAK | MR_AETH_NAK_REM_ACCESS, psn, now);
		mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (r && last) {
		r->msg_len = c->rx_offset + plen;
		r->last_psn = psn;
		r->has_last = 1;
		if (mrc_ib_has_imm(op)) {
			r->imm = imm;
			r->wc_flags = MRC_WC_F_IMM;
			if (!send)
				r->opcode = MRC_OP_RECV_RDMA_WITH_IMM;
		}
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
	u32 i;

	/* Responses owed are due at once (MR-CONN-007). */
	for (i = c->rsp_head; i != c->rsp_tail; i++)
		if (c->rsp[i % MRC_MAX_RD_ATOMIC].pending)
			return 0;
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
