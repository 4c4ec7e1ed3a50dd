// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Mode-independent part of the core: configuration, work queues,
 * completions, statistics and dispatch to the MetaRoCE (metaroce.c) or
 * RoCEv2 go-back-N (rocev2.c) wire engines.
 */
#include "mrc_internal.h"
#include "crc32c.h"

void mrc_config_default(struct mrc_config *cfg, enum mrc_mode mode)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = mode;
	cfg->mtu = 1024;
	/*
	 * A random loss halves one path's window (MR-CC-002): 1/16 of a
	 * flow's flight with 8 paths, 1/8 with 4.  With the initial window
	 * shared (MR-CC-001), 8 paths cost an ECN-marked incast no more drops
	 * than 4, an unmarked one a third more (docs/results/simulator.md
	 * sections 11 and 12).
	 */
	cfg->num_paths = mode == MRC_MODE_ROCEV2 ? 1 : 8;
	cfg->window = 128;
	cfg->retry_cnt = 7;
	cfg->rnr_retry = MRC_RNR_INFINITE;
	cfg->path_fail_ptos = 3;
	cfg->init_cwnd = 64;
	cfg->max_cwnd = 128;
	cfg->ack_every = 2;
	cfg->initial_rtt_ns = 100000;		/* 100 us */
	cfg->granularity_ns = 10000;		/* 10 us */
	cfg->max_ack_delay_ns = 10000;		/* 10 us */
	cfg->probe_interval_ns = 1000000;	/* 1 ms */
	cfg->rnr_timer_ns = 100000;		/* 100 us */
	cfg->rto_ns = 1000000;			/* 1 ms, cf. IB timeout 8 */
	cfg->cc_flags = MRC_CC_ECN;
	cfg->target_delay_ns = 0;	/* MRC_CC_DELAY, _LOSS_GATE need one */
}

size_t mrc_conn_size(void)
{
	return sizeof(struct mrc_conn);
}

static int mrc_config_valid(const struct mrc_config *cfg)
{
	if (cfg->mode != MRC_MODE_METAROCE && cfg->mode != MRC_MODE_ROCEV2)
		return 0;
	if (cfg->mtu < MRC_MIN_MTU || cfg->mtu > MRC_MAX_MTU)
		return 0;
	if (cfg->num_paths < 1 || cfg->num_paths > MRC_MAX_PATHS)
		return 0;
	if (cfg->window < 1 || cfg->window > MRC_MAX_WINDOW)
		return 0;
	if ((cfg->local_qpn | cfg->remote_qpn | cfg->local_psn |
	     cfg->remote_psn) & ~MRC_PSN_MASK)
		return 0;
	/* no path can use more than the window; Q10 windows stay in u32 */
	if (cfg->init_cwnd < 1 || cfg->max_cwnd < mrc_path_init_cwnd(cfg) ||
	    cfg->max_cwnd > MRC_MAX_WINDOW)
		return 0;
	if (cfg->ack_every < 1 || cfg->path_fail_ptos < 1)
		return 0;
	if (cfg->retry_cnt > 250 || cfg->rnr_retry > MRC_RNR_INFINITE)
		return 0;
	if (!cfg->initial_rtt_ns || !cfg->probe_interval_ns || !cfg->rto_ns)
		return 0;
	if (cfg->cc_flags & ~(MRC_CC_ECN | MRC_CC_DELAY | MRC_CC_LOSS_SHARE |
			      MRC_CC_LOSS_GATE) ||
	    cfg->reserved1)
		return 0;
	if (cfg->flags & ~MRC_CFG_CALLER_ICRC ||
	    ((cfg->flags & MRC_CFG_CALLER_ICRC) &&
	     cfg->mode != MRC_MODE_ROCEV2))
		return 0;
	if (cfg->max_rd_atomic > MRC_MAX_RD_ATOMIC)
		return 0;
	/* RoCEv2 has no ACK for a reply to carry */
	if (cfg->final_ack_hold_ns && cfg->mode != MRC_MODE_METAROCE)
		return 0;
	if ((cfg->cc_flags & (MRC_CC_DELAY | MRC_CC_LOSS_GATE)) &&
	    !cfg->target_delay_ns)
		return 0;
	return 1;
}

int mrc_conn_init(struct mrc_conn *c, const struct mrc_config *cfg,
		  const struct mrc_callbacks *cb, void *user, u64 now)
{
	unsigned int i;

	if (!c || !cfg || !cb || !cb->read_payload || !cb->place_send ||
	    !cb->place_write || !mrc_config_valid(cfg))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	if (cfg->mode == MRC_MODE_ROCEV2)
		c->cfg.num_paths = 1;
	c->cb = *cb;
	c->user = user;
	c->snd_una = cfg->local_psn;
	c->snd_nxt = cfg->local_psn;
	c->snd_tx = cfg->local_psn;
	c->rcv_nxt = cfg->remote_psn;
	c->rcv_high = cfg->remote_psn;
	c->loss_time_ns = MRC_U64_MAX;
	c->gbn_timer_ns = MRC_U64_MAX;
	for (i = 0; i < c->cfg.num_paths; i++)
		mrc_mr_path_init(c, &c->path[i]);
	(void)now;
	return 0;
}

int mrc_conn_set_requester(struct mrc_conn *c, const struct mrc_config *cfg)
{
	struct mrc_config n = c->cfg;

	/* The fields a verbs QP learns at RTR->RTS; the rest must not move. */
	n.local_psn = cfg->local_psn;
	n.retry_cnt = cfg->retry_cnt;
	n.rnr_retry = cfg->rnr_retry;
	n.rto_ns = cfg->rto_ns;
	n.max_rd_atomic = cfg->max_rd_atomic;
	if (!mrc_config_valid(&n))
		return -EINVAL;
	/*
	 * Only a connection that has sent nothing may move its PSN space; a
	 * responder that already answered READs from the PSN the peer expects
	 * (MR-OPS-002) keeps it.
	 */
	if (c->user_posted)
		return -EBUSY;
	if (n.local_psn != c->cfg.local_psn &&
	    (c->sq_pkt || c->snd_nxt != c->cfg.local_psn ||
	     c->snd_una != c->cfg.local_psn || c->snd_tx != c->cfg.local_psn))
		return -EBUSY;
	c->cfg = n;
	c->snd_una = n.local_psn;
	c->snd_nxt = n.local_psn;
	c->snd_tx = n.local_psn;
	return 0;
}

int mrc_post_send(struct mrc_conn *c, const struct mrc_send_wr *wr, u64 now)
{
	struct mrc_swqe *w;

	(void)now;
	if (c->in_error)
		return -EIO;
	switch (wr->opcode) {
	case MRC_OP_SEND:
	case MRC_OP_RDMA_WRITE:
	case MRC_OP_SEND_WITH_IMM:
	case MRC_OP_RDMA_WRITE_WITH_IMM:
	case MRC_OP_RDMA_READ:
		break;
	case MRC_OP_ATOMIC_CMP_AND_SWP:
	case MRC_OP_ATOMIC_FETCH_AND_ADD:
		if (wr->length != 8)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (wr->length > 0x7fffffffu || wr->reserved)
		return -EINVAL;
	if (mrc_op_rd_atomic(wr->opcode) && !c->cb.place_read)
		return -EOPNOTSUPP;
	/* A RoCEv2 READ's PSN range must stay far below half the space. */
	if (wr->opcode == MRC_OP_RDMA_READ && c->cfg.mode == MRC_MODE_ROCEV2 &&
	    wr->length / c->cfg.mtu >= MRC_PSN_HALF / 2)
		return -EINVAL;
	if (c->sq_unpolled >= MRC_MAX_SQ)
		return -ENOSPC;
	w = &c->sq[c->sq_tail % MRC_SQ_RING];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->length = wr->length;
	w->rkey = wr->rkey;
	w->raddr = wr->remote_addr;
	w->imm = wr->imm_data;
	w->compare_add = wr->compare_add;
	w->swap = wr->swap;
	w->msg_id = c->next_msg_id++;
	if (mrc_op_consumes_recv(wr->opcode))
		w->ssn = c->next_ssn++;
	c->sq_tail++;
	c->sq_unpolled++;
	c->user_posted++;
	return 0;
}

int mrc_post_recv(struct mrc_conn *c, u64 wr_id, u32 length)
{
	struct mrc_rwqe *r;

	if (c->in_error)
		return -EIO;
	if (c->rq_unpolled >= MRC_MAX_RQ)
		return -ENOSPC;
	r = &c->rq[c->rq_tail % MRC_MAX_RQ];
	memset(r, 0, sizeof(*r));
	r->wr_id = wr_id;
	r->length = length;
	r->opcode = MRC_OP_RECV;
	c->rq_tail++;
	c->rq_unpolled++;
	return 0;
}

/*
 * Room is guaranteed: every entry corresponds to a WR counted in
 * sq_unpolled/rq_unpolled, which are bounded by the queue depths.
 */
struct mrc_completion *mrc_push_cqe(struct mrc_conn *c, u64 wr_id, u32 len,
				    u8 opcode, u8 status)
{
	struct mrc_completion *e = &c->cq[c->cq_tail % MRC_CQ_DEPTH];

	memset(e, 0, sizeof(*e));
	e->wr_id = wr_id;
	e->byte_len = len;
	e->opcode = opcode;
	e->status = status;
	c->cq_tail++;
	return e;
}

int mrc_poll_completion(struct mrc_conn *c, struct mrc_completion *out)
{
	if (c->cq_head == c->cq_tail)
		return 0;
	*out = c->cq[c->cq_head % MRC_CQ_DEPTH];
	c->cq_head++;
	if (out->opcode == MRC_OP_RECV ||
	    out->opcode == MRC_OP_RECV_RDMA_WITH_IMM)
		c->rq_unpolled--;
	else
		c->sq_unpolled--;
	return 1;
}

/*
 * Complete, in posting order, every send WR whose last PSN is acked and,
 * for a READ or atomic, whose response is placed (MR-OPS-001).  Responses
 * a responder queued (MRC_OP_INT_*) leave without a completion.
 */
void mrc_complete_sends(struct mrc_conn *c)
{
	while (c->sq_head != c->sq_pkt) {
		struct mrc_swqe *w = &c->sq[c->sq_head % MRC_SQ_RING];

		if (!mrc_psn_before(w->last_psn, c->snd_una))
			break;
		if (mrc_op_internal(w->opcode)) {
			c->resp_queued--;
			c->sq_head++;
			continue;
		}
		if (mrc_op_rd_atomic(w->opcode)) {
			if (!w->resp_done)
				break;
			c->rd_head++;	/* w is the oldest in progress */
		}
		mrc_push_cqe(c, w->wr_id, w->length, w->opcode,
			     MRC_WC_SUCCESS);
		c->st.msgs_sent++;
		c->st.bytes_sent += w->length;
		c->sq_head++;
	}
}

/* READ/atomic WRs in progress (packetized, not completed), oldest first. */
static struct mrc_swqe *mrc_rd_at(struct mrc_conn *c, u32 i)
{
	return &c->sq[c->rd_sq[i % MRC_MAX_RD_ATOMIC] % MRC_SQ_RING];
}

struct mrc_swqe *mrc_rd_oldest(struct mrc_conn *c)
{
	return c->rd_head == c->rd_tail ? NULL : mrc_rd_at(c, c->rd_head);
}

struct mrc_swqe *mrc_rd_find_msg(struct mrc_conn *c, u32 msg_id)
{
	u32 i;

	for (i = c->rd_head; i != c->rd_tail; i++)
		if (mrc_rd_at(c, i)->msg_id == msg_id)
			return mrc_rd_at(c, i);
	return NULL;
}

/* The READ/atomic in progress whose PSN range holds psn. */
struct mrc_swqe *mrc_rd_find_psn(struct mrc_conn *c, u32 psn)
{
	u32 i;

	for (i = c->rd_head; i != c->rd_tail; i++) {
		struct mrc_swqe *w = mrc_rd_at(c, i);

		if (mrc_psn_diff(psn, w->first_psn) <=
		    mrc_psn_diff(w->last_psn, w->first_psn))
			return w;
	}
	return NULL;
}

/*
 * Requester: response bytes for READ/atomic w at off (MR-OPS-001/003);
 * the caller has already suppressed duplicates.  A refused placement
 * fails the QP (LOC_PROT_ERR).
 */
int mrc_place_response(struct mrc_conn *c, struct mrc_swqe *w, u32 off,
		       const u8 *src, u32 len)
{
	if (len && c->cb.place_read(c->user, w->wr_id, off, src, len)) {
		c->st.rx_place_err++;
		mrc_conn_fail(c, MRC_WC_LOC_PROT_ERR, MRC_WC_WR_FLUSH_ERR);
		return -EFAULT;
	}
	/* each response PSN arrives once: the byte count is exact */
	w->resp_bytes += len;
	if (w->resp_bytes == w->length)
		w->resp_done = 1;
	return 0;
}

/*
 * MetaRoCE responder: queue a READ or atomic response as a reliable
 * message of its own send stream (MR-OPS-002), ahead of the caller's
 * WRs that have no PSN yet.  -ENOSPC when
 * MRC_MAX_RESP responses are queued.
 */
int mrc_queue_response(struct mrc_conn *c, u32 opcode, u32 msg_id,
		       u32 rkey, u64 raddr, u32 len, u64 orig, u32 req_psn)
{
	struct mrc_swqe *w;

	u32 at = c->sq_pkt, i;

	if (c->resp_queued >= MRC_MAX_RESP)
		return -ENOSPC;
	/*
	 * Ahead of the caller's WRs not yet packetized (after a partly
	 * packetized one and earlier responses): a response must not wait
	 * for our own requests, which may wait for the peer's responses.
	 */
	if (at != c->sq_tail && c->sq[at % MRC_SQ_RING].next_offset)
		at++;
	while (at != c->sq_tail && mrc_op_internal(c->sq[at % MRC_SQ_RING].opcode))
		at++;
	for (i = c->sq_tail; i != at; i--)
		c->sq[i % MRC_SQ_RING] = c->sq[(i - 1) % MRC_SQ_RING];
	w = &c->sq[at % MRC_SQ_RING];
	memset(w, 0, sizeof(*w));
	w->opcode = opcode;
	w->msg_id = msg_id;
	w->rkey = rkey;
	w->raddr = raddr;
	w->length = len;
	w->compare_add = orig;
	w->req_psn = req_psn;
	c->sq_tail++;
	c->resp_queued++;
	return 0;
}

/*
 * MetaRoCE responder (MR-OPS-002): a READ/atomic request names the PSN the
 * requester expects our stream to start at.  A verbs responder that stays
 * in RTR never learns its sq_psn, so a connection that has not yet given
 * any packet a PSN starts its stream there.
 */
void mrc_adopt_local_psn(struct mrc_conn *c, u32 psn)
{
	if (c->sq_pkt || c->snd_nxt != c->cfg.local_psn ||
	    psn == c->cfg.local_psn)
		return;
	c->cfg.local_psn = psn & MRC_PSN_MASK;
	c->snd_una = c->cfg.local_psn;
	c->snd_nxt = c->cfg.local_psn;
	c->snd_tx = c->cfg.local_psn;
}

int mrc_rerr_kind(int err)
{
	if (err == -EOPNOTSUPP || err == -EDOM)
		return MRC_RERR_INV_REQ;
	if (err == -EACCES || err == -EFAULT || err == -EINVAL ||
	    err == -EPERM)
		return MRC_RERR_ACCESS;
	return MRC_RERR_OP;
}

/* Responder: may a READ of len bytes at raddr under rkey proceed? */
int mrc_check_read(struct mrc_conn *c, u32 rkey, u64 raddr, u32 len)
{
	if (!c->cb.read_remote)
		return -EOPNOTSUPP;
	if (!len)
		return 0;	/* IBTA: a zero-length READ checks no key */
	return c->cb.read_remote(c->user, rkey, raddr, NULL, len);
}

/* Responder: run an accepted atomic once (MR-OPS-003). */
int mrc_do_atomic(struct mrc_conn *c, u32 op, u32 rkey, u64 raddr,
		  u64 compare_add, u64 swap, u64 *orig)
{
	int ret;

	if (!c->cb.atomic)
		return -EOPNOTSUPP;
	if (raddr & 7)
		return -EDOM;
	ret = c->cb.atomic(c->user, op, rkey, raddr, compare_add, swap, orig);
	if (!ret)
		c->st.atomics_executed++;
	return ret;
}

/*
 * Complete, in posting order, receive WRs whose message is entirely below
 * rcv_nxt: then it and everything sent before it has been placed.
 */
void mrc_complete_recvs(struct mrc_conn *c)
{
	while (c->rq_head != c->rq_tail) {
		struct mrc_rwqe *r = &c->rq[c->rq_head % MRC_MAX_RQ];

		struct mrc_completion *e;

		if (!r->has_last || !mrc_psn_before(r->last_psn, c->rcv_nxt))
			break;
		e = mrc_push_cqe(c, r->wr_id, r->msg_len, r->opcode,
				 MRC_WC_SUCCESS);
		e->wc_flags = r->wc_flags;
		e->imm_data = r->imm;
		c->st.msgs_received++;
		c->st.bytes_received += r->msg_len;
		c->rq_head++;
		c->rq_base_ssn++;
	}
}

/*
 * Enter the error state (MR-LOSS-009, MR-FC-003): the oldest send WR
 * completes with send_status, the oldest receive WR with recv_status and
 * every other WR is flushed.
 */
void mrc_conn_fail(struct mrc_conn *c, u8 send_status, u8 recv_status)
{
	if (c->in_error)
		return;
	c->in_error = 1;
	c->st.in_error = 1;
	while (c->sq_head != c->sq_tail) {
		struct mrc_swqe *w = &c->sq[c->sq_head % MRC_SQ_RING];

		c->sq_head++;
		if (mrc_op_internal(w->opcode))
			continue;
		mrc_push_cqe(c, w->wr_id, w->length, w->opcode, send_status);
		send_status = MRC_WC_WR_FLUSH_ERR;
	}
	c->sq_pkt = c->sq_tail;
	c->rd_head = c->rd_tail;
	c->resp_queued = 0;
	while (c->rq_head != c->rq_tail) {
		struct mrc_rwqe *r = &c->rq[c->rq_head % MRC_MAX_RQ];

		mrc_push_cqe(c, r->wr_id, 0, MRC_OP_RECV, recv_status);
		recv_status = MRC_WC_WR_FLUSH_ERR;
		c->rq_head++;
	}
	c->lost_count = 0;
}

/*
 * Give the next chunk of the first not fully packetized WR a PSN.
 * Returns 0 with *psn_out set, or -EAGAIN when there is nothing to send
 * or the window (MR-FC-001) is full.
 */
int mrc_packetize(struct mrc_conn *c, u32 *psn_out)
{
	u32 outstanding = mrc_psn_diff(c->snd_nxt, c->snd_una);
	u32 len, adv, span = 1;
	struct mrc_swqe *w;
	struct mrc_tx_pkt *t;

	if (c->sq_pkt == c->sq_tail)
		return -EAGAIN;
	if (outstanding >= c->cfg.window)
		return -EAGAIN;
	w = &c->sq[c->sq_pkt % MRC_SQ_RING];
	if (mrc_op_rd_atomic(w->opcode)) {
		/* At most max_rd_atomic in progress (IBTA). */
		if (c->rd_tail - c->rd_head >= (c->cfg.max_rd_atomic ?
						c->cfg.max_rd_atomic :
						MRC_MAX_RD_ATOMIC))
			return -EAGAIN;
		/*
		 * A RoCEv2 READ takes one PSN per response packet (IBTA);
		 * one longer than the window goes alone (MR-COMPAT-009).
		 */
		if (w->opcode == MRC_OP_RDMA_READ &&
		    c->cfg.mode == MRC_MODE_ROCEV2) {
			span = w->length ? (w->length + c->cfg.mtu - 1) /
					   c->cfg.mtu : 1;
			if (outstanding && outstanding + span > c->cfg.window)
				return -EAGAIN;
		}
		c->rd_sq[c->rd_tail++ % MRC_MAX_RD_ATOMIC] = c->sq_pkt;
		/* One request packet: no payload, only the length. */
		len = 0;
		adv = w->length;
	} else {
		len = w->length - w->next_offset;
		if (len > c->cfg.mtu)
			len = c->cfg.mtu;
		adv = len;
	}
	t = mrc_txp(c, c->snd_nxt);
	memset(t, 0, sizeof(*t));
	t->offset = w->next_offset;
	t->len = len;
	t->sq_idx = c->sq_pkt % MRC_SQ_RING;
	if (w->next_offset == 0) {
		t->flags |= MR_FLAG_FIRST;
		w->first_psn = c->snd_nxt;
	}
	w->next_offset += adv;
	if (w->next_offset == w->length) {
		t->flags |= MR_FLAG_LAST;
		w->last_psn = mrc_psn_add(c->snd_nxt, span - 1);
		w->packetized = 1;
		c->sq_pkt++;
	}
	*psn_out = c->snd_nxt;
	c->snd_nxt = mrc_psn_add(c->snd_nxt, span);
	return 0;
}

/* Append the CRC32C trailer (MR-WIRE-006); returns the packet length. */
int mrc_finish_packet(u8 *buf, size_t len, size_t cap)
{
	if (len + MR_CRC_LEN > cap)
		return -ENOBUFS;
	mrc_put_be32(buf + len, mrc_crc32c(buf, len));
	return (int)(len + MR_CRC_LEN);
}

int mrc_check_crc(const u8 *pkt, size_t len)
{
	return mrc_crc32c(pkt, len - MR_CRC_LEN) ==
	       mrc_get_be32(pkt + len - MR_CRC_LEN);
}

/*
 * The trailer of a packet of c (MR-COMPAT-012): the CRC32C, or with
 * MRC_CFG_CALLER_ICRC an ICRC slot left zeroed for the caller.
 */
int mrc_finish_conn_packet(const struct mrc_conn *c, u8 *buf, size_t len,
			   size_t cap)
{
	if (!(c->cfg.flags & MRC_CFG_CALLER_ICRC))
		return mrc_finish_packet(buf, len, cap);
	if (len + MR_CRC_LEN > cap)
		return -ENOBUFS;
	memset(buf + len, 0, MR_CRC_LEN);
	return (int)(len + MR_CRC_LEN);
}

/*
 * Note that an ACK is owed for a packet that arrived on path (MR-LOSS-002):
 * immediately if now_flag (reordering, duplicate, request), else after
 * ack_every packets or max_ack_delay.
 */
void mrc_schedule_ack(struct mrc_conn *c, unsigned int path, int now_flag,
		      u64 now)
{
	if (!c->ack_pending) {
		c->ack_pending = 1;
		c->ack_deadline_ns = now + c->cfg.max_ack_delay_ns;
	}
	c->ack_path = path;
	c->ack_unacked++;
	if (now_flag || c->ack_unacked >= c->cfg.ack_every)
		c->ack_now = 1;
}

/*
 * The packet that ends a requester's burst (LAST with AckReq) was accepted
 * and nothing is missing: its ACK may be the last one the peer's requester
 * ever gets (MR-LOSS-012).  MetaRoCE mode sends it once and again when
 * the QP is closed (mrc_conn_close()): while the QP lives, a lost final
 * ACK is recovered by the requester's tail loss probe.  RoCEv2 mode has
 * no such probe (a lost ACK costs the requester its local ACK timeout),
 * so it sends the final ACK twice, back to back.
 */
void mrc_schedule_final_ack(struct mrc_conn *c, unsigned int path, u64 now)
{
	mrc_schedule_ack(c, path, 1, now);
	c->ack_repeat = c->cfg.mode == MRC_MODE_ROCEV2;
}

/* Bookkeeping after an ACK/NAK left on path, shared by both modes. */
void mrc_ack_sent(struct mrc_conn *c, unsigned int path)
{
	c->st.tx_ctrl++;
	c->path[path].st.tx_ctrl++;
	mrc_ack_cleared(c);
}

/* The owed ACK left, on its own or carried by a data packet (MR-WIRE-010). */
void mrc_ack_cleared(struct mrc_conn *c)
{
	/* MR_ACK_OK and MR_AETH_ACK are both 0: a plain ACK, not a NAK. */
	int plain = !c->in_error && c->ack_syndrome == MR_ACK_OK;

	c->ack_unacked = 0;
	c->ack_held = 0;
	c->last_ack_plain = plain;
	if (c->ack_repeat && plain) {
		/* the same cumulative ACK once more, without one-shot flags */
		c->ack_repeat = 0;
		c->ack_flags = 0;
		return;
	}
	c->ack_repeat = 0;
	c->ack_pending = 0;
	c->ack_now = 0;
	c->ack_syndrome = MR_ACK_OK;
	c->ack_flags = 0;
}

/*
 * MR-LOSS-012: the last plain ACK once more, then silence.  A pending ACK
 * leaves anyway: a connection in error still sends what it owes.
 */
void mrc_conn_close(struct mrc_conn *c)
{
	int repeat = c->last_ack_plain && !c->ack_pending && !c->in_error;

	mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_WR_FLUSH_ERR);
	if (repeat) {
		/* the same cumulative ACK once more (MR-LOSS-012) */
		c->ack_pending = 1;
		c->ack_now = 1;
		c->ack_syndrome = MR_ACK_OK;
		c->ack_flags = 0;
	}
}

int mrc_recv_packet(struct mrc_conn *c, const void *pkt, size_t len,
		    unsigned int path, u64 now)
{
	return mrc_recv_packet_ex(c, pkt, len, path, 0, now);
}

int mrc_recv_packet_ex(struct mrc_conn *c, const void *pkt, size_t len,
		       unsigned int path, unsigned int flags, u64 now)
{
	int caller_icrc = c->cfg.flags & MRC_CFG_CALLER_ICRC;

	if (flags & ~(MRC_RX_CE | MRC_RX_ICRC_OK) ||
	    ((flags & MRC_RX_ICRC_OK) && !caller_icrc))
		return -EINVAL;
	if (path >= c->cfg.num_paths) {
		c->st.rx_malformed++;
		return -EINVAL;
	}
	if (!pkt || len < MR_BTH_LEN + MR_CRC_LEN) {
		c->st.rx_malformed++;
		return -EPROTO;
	}
	if (caller_icrc ? !(flags & MRC_RX_ICRC_OK) : !mrc_check_crc(pkt, len)) {
		c->st.rx_bad_crc++;
		return -EBADMSG;
	}
	if (flags & MRC_RX_CE)
		c->st.rx_ce++;
	/* RoCEv2 mode answers CE with nothing: DCQCN CNPs are not modelled. */
	if (c->cfg.mode == MRC_MODE_ROCEV2)
		return mrc_gbn_recv(c, pkt, len - MR_CRC_LEN, now);
	return mrc_mr_recv(c, pkt, len - MR_CRC_LEN, path, flags, now);
}

int mrc_next_packet(struct mrc_conn *c, void *buf, size_t cap,
		    unsigned int *path, u64 now)
{
	if (c->cfg.mode == MRC_MODE_ROCEV2)
		return mrc_gbn_next(c, buf, cap, path, now);
	return mrc_mr_next(c, buf, cap, path, now);
}

uint64_t mrc_next_deadline(const struct mrc_conn *c)
{
	u64 t;

	/* In error only a pending ACK/NAK is left to send, at once. */
	if (c->in_error)
		return c->ack_pending ? 0 : MRC_U64_MAX;
	/* The mode's own timers, then the ones both modes share. */
	if (c->cfg.mode == MRC_MODE_ROCEV2)
		t = mrc_gbn_deadline(c);
	else
		t = mrc_mr_deadline(c);
	if (c->ack_pending && c->ack_deadline_ns < t)
		t = c->ack_deadline_ns;
	if (c->rnr_until_ns && c->rnr_until_ns < t)
		t = c->rnr_until_ns;
	return t;
}

void mrc_handle_timeout(struct mrc_conn *c, u64 now)
{
	if (c->cfg.mode == MRC_MODE_ROCEV2)
		mrc_gbn_timeout(c, now);
	else
		mrc_mr_timeout(c, now);
}

int mrc_path_set_state(struct mrc_conn *c, unsigned int path, int up,
		       u64 now)
{
	struct mrc_path *p;

	if (path >= c->cfg.num_paths)
		return -EINVAL;
	p = &c->path[path];
	if (!up) {
		if (p->state != MRC_PATH_ADMIN_DOWN)
			mrc_mr_path_down(c, p, now);
		p->state = MRC_PATH_ADMIN_DOWN;
	} else if (p->state == MRC_PATH_ADMIN_DOWN) {
		mrc_mr_path_init(c, p);
	}
	return 0;
}

void mrc_get_stats(const struct mrc_conn *c, struct mrc_conn_stats *out)
{
	*out = c->st;
}

int mrc_get_path_stats(const struct mrc_conn *c, unsigned int path,
		       struct mrc_path_stats *out)
{
	const struct mrc_path *p;

	if (path >= c->cfg.num_paths)
		return -EINVAL;
	p = &c->path[path];
	*out = p->st;
	out->srtt_ns = p->srtt_ns;
	out->rttvar_ns = p->rttvar_ns;
	out->cwnd = p->cwnd_q >> MRC_CWND_SHIFT;
	out->in_flight = p->in_flight;
	out->state = p->state;
	out->ecn_alpha = p->ecn_alpha_q;
	out->min_rtt_ns = p->min_rtt_ns;
	out->reo_wnd_mult = p->reo_mult + 1;
	return 0;
}
