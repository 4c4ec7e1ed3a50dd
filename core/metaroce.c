// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE mode: multipath spraying, per-path RTT/PTO and window, SACK,
 * RACK-style loss detection and selective retransmission on another live
 * path, path failure detection by probes.  Normative text: docs/spec.
 */
#include "mrc_internal.h"

#define MR_HDR_LEN	16
#define MR_DATA_LEN	(MR_HDR_LEN + 24)
#define MR_ACK_LEN	(MR_HDR_LEN + 20)
#define MR_RANGE_LEN	8
#define MR_IMM_LEN	8
#define MR_ATOMIC_LEN	16

/* Wire opcode of a send WR's packets (MR-WIRE-009). */
static u8 mrc_wire_opcode(u32 op)
{
	switch (op) {
	case MRC_OP_SEND:			return MR_OPC_SEND;
	case MRC_OP_RDMA_WRITE:			return MR_OPC_WRITE;
	case MRC_OP_SEND_WITH_IMM:		return MR_OPC_SEND_IMM;
	case MRC_OP_RDMA_WRITE_WITH_IMM:	return MR_OPC_WRITE_IMM;
	case MRC_OP_RDMA_READ:			return MR_OPC_READ_REQ;
	case MRC_OP_ATOMIC_CMP_AND_SWP:		return MR_OPC_CMP_SWAP;
	case MRC_OP_ATOMIC_FETCH_AND_ADD:	return MR_OPC_FETCH_ADD;
	case MRC_OP_INT_READ_RESP:		return MR_OPC_READ_RESP;
	default:				return MR_OPC_ATOMIC_RESP;
	}
}

/* Header bytes before the payload of a data-class packet. */
static u32 mrc_data_hlen(u8 wire_op)
{
	if (wire_op == MR_OPC_SEND_IMM || wire_op == MR_OPC_WRITE_IMM)
		return MR_DATA_LEN + MR_IMM_LEN;
	if (wire_op == MR_OPC_CMP_SWAP || wire_op == MR_OPC_FETCH_ADD)
		return MR_DATA_LEN + MR_ATOMIC_LEN;
	return MR_DATA_LEN;
}

static u32 mrc_cwnd_pkts(const struct mrc_path *p)
{
	u32 w = p->cwnd_q >> MRC_CWND_SHIFT;

	return w ? w : 1;
}

static int mrc_seq_before(u32 a, u32 b)
{
	return (int)(a - b) < 0;
}

void mrc_mr_path_init(struct mrc_conn *c, struct mrc_path *p)
{
	struct mrc_path_stats st = p->st;
	/*
	 * A re-admitted path (MR-FAIL-005) may still carry the one packet
	 * MR-FAIL-004 sent on it: its accounting and the path's sequence
	 * space stay, or its ACK or loss would take in_flight below zero
	 * and block the path for good.
	 */
	u32 in_flight = p->in_flight, next_seq = p->next_seq;
	u32 largest_acked_seq = p->largest_acked_seq;
	u64 last_send_ns = p->last_send_ns, acked_sent_ns = p->acked_sent_ns;
	u8 any_acked = p->any_acked;

	memset(p, 0, sizeof(*p));
	p->st = st;
	p->in_flight = in_flight;
	p->next_seq = next_seq;
	p->largest_acked_seq = largest_acked_seq;
	p->any_acked = any_acked;
	p->last_send_ns = last_send_ns;
	p->acked_sent_ns = acked_sent_ns;
	p->srtt_ns = c->cfg.initial_rtt_ns;
	p->rttvar_ns = c->cfg.initial_rtt_ns / 2;
	p->cwnd_q = mrc_path_init_cwnd(&c->cfg) << MRC_CWND_SHIFT;
	p->ssthresh = c->cfg.max_cwnd;
	p->state = MRC_PATH_UP;
	p->ecn_alpha_q = MRC_ALPHA_ONE;
}

/* Progress (MR-FAIL-007): the give-up timer starts over from at. */
static void mrc_progress(struct mrc_conn *c, u64 at)
{
	c->progress_ns = at;
	c->give_up_expiries = 0;
}

/*
 * A failed path answered: re-admit it (MR-FAIL-005) and count it.  Its
 * window starts over, its RTT estimate stays: a failure says nothing about
 * the round trip, and initial_rtt may be far below it (a path re-admitted
 * with 100 us in a fabric of milliseconds timed out again at once).
 */
static void mrc_path_recover(struct mrc_conn *c, struct mrc_path *p)
{
	struct mrc_path rtt = *p;

	mrc_mr_path_init(c, p);
	if (rtt.has_rtt) {
		p->srtt_ns = rtt.srtt_ns;
		p->rttvar_ns = rtt.rttvar_ns;
		p->latest_rtt_ns = rtt.latest_rtt_ns;
		p->min_rtt_ns = rtt.min_rtt_ns;
		p->has_rtt = 1;
	}
	p->st.recoveries++;
	c->st.path_recoveries++;
}

/*
 * The peer answered on p (an ACK echoing it, an acknowledgement of data
 * last sent on it, a probe reply): it is not failing.
 */
static void mrc_path_alive(struct mrc_conn *c, struct mrc_path *p)
{
	p->pto_count = 0;
	p->fail_ptos = 0;
	p->pf = 0;
	p->probe_out = 0;
	if (p->state == MRC_PATH_FAILED)
		mrc_path_recover(c, p);
}

/* num/den in Q10 (at most 1.0) with a 32-bit division only. */
static u32 mrc_ratio_q10(u64 num, u64 den)
{
	if (!den)
		return 0;
	if (num >= den)
		return 1u << 10;
	while (den >= (1ull << 21)) {
		num >>= 1;
		den >>= 1;
	}
	return ((u32)num << 10) / (u32)den;
}

/*
 * The RTT estimate a path's timers use: its own or, before its first
 * sample, that of the connection's sampled path with the largest srtt
 * (MR-LOSS-006): the connection has measured the fabric, and initial_rtt
 * may be many times below it.  initial_rtt while no path has a sample.
 */
static const struct mrc_path *mrc_rtt_of(const struct mrc_conn *c,
					 const struct mrc_path *p)
{
	const struct mrc_path *r = p;
	u32 i;

	if (p->has_rtt)
		return p;
	for (i = 0; i < c->cfg.num_paths; i++)
		if (c->path[i].has_rtt &&
		    (!r->has_rtt || c->path[i].srtt_ns > r->srtt_ns))
			r = &c->path[i];
	return r;
}

/*
 * How long the peer may hold an ACK: its delayed-ACK bound, or the final
 * ACK's hold for a reply when that is longer (MR-LOSS-014).  Both ends are
 * configured alike; the timers that wait for ACKs allow for it.
 */
static u64 mrc_peer_ack_delay(const struct mrc_conn *c)
{
	return c->cfg.final_ack_hold_ns > c->cfg.max_ack_delay_ns ?
	       c->cfg.final_ack_hold_ns : c->cfg.max_ack_delay_ns;
}

/* RFC 9002 PTO without backoff (MR-LOSS-006). */
static u64 mrc_pto_base(const struct mrc_conn *c, const struct mrc_path *p)
{
	const struct mrc_path *r = mrc_rtt_of(c, p);
	u64 var = 4 * r->rttvar_ns;

	if (var < c->cfg.granularity_ns)
		var = c->cfg.granularity_ns;
	return r->srtt_ns + var + mrc_peer_ack_delay(c);
}

/* The PTO, doubled per consecutive expiry (MR-LOSS-006). */
static u64 mrc_pto(const struct mrc_conn *c, const struct mrc_path *p)
{
	u32 shift = p->pto_count;

	if (shift > MRC_MAX_PTO_SHIFT)
		shift = MRC_MAX_PTO_SHIFT;
	return mrc_pto_base(c, p) << shift;
}

/* RFC 6298 / 9002 smoothing in integer arithmetic (MR-PATH-004). */
static void mrc_rtt_sample(struct mrc_path *p, u64 rtt, u64 now)
{
	u64 dev;

	p->sampled_ns = now;
	p->latest_rtt_ns = rtt;
	if (!p->min_rtt_ns || rtt < p->min_rtt_ns)
		p->min_rtt_ns = rtt;
	if (!p->has_rtt) {
		p->srtt_ns = rtt;
		p->rttvar_ns = rtt / 2;
		p->has_rtt = 1;
		return;
	}
	dev = p->srtt_ns > rtt ? p->srtt_ns - rtt : rtt - p->srtt_ns;
	p->rttvar_ns = (3 * p->rttvar_ns + dev) / 4;
	p->srtt_ns = (7 * p->srtt_ns + rtt) / 8;
}

/* Shrink p's window by q/1024 of itself, not below 2 packets. */
static void mrc_cwnd_scale_down(struct mrc_path *p, u32 q)
{
	u32 w = p->cwnd_q - (u32)(((u64)p->cwnd_q * q) >> MRC_CWND_SHIFT);

	if (w < (2u << MRC_CWND_SHIFT))
		w = 2u << MRC_CWND_SHIFT;
	if (w < p->cwnd_q)
		p->cwnd_q = w;
	p->ssthresh = mrc_cwnd_pkts(p) < 2 ? 2 : mrc_cwnd_pkts(p);
}

/* A window reduction for loss (MR-CC-002) ends a loss episode. */
static void mrc_loss_episode(struct mrc_path *p, u64 now)
{
	p->st.loss_decreases++;
	p->recovery_start_ns = now;
	/* RFC 8985 reo_wnd_persist: forget a widened window after 16. */
	if (p->reo_mult && ++p->reo_persist >= MRC_REO_PERSIST) {
		p->reo_mult = 0;
		p->reo_persist = 0;
	}
}

/*
 * Loss-proportional decrease (MR-CC-002 with MRC_CC_LOSS_SHARE), DCTCP's
 * rule with a loss as the mark: per observation window of one srtt, F =
 * losses / (losses + packets acknowledged) on the path, and a window that
 * saw a loss shrinks the path window by F / 2 when it ends.  Called after
 * each loss and each acknowledged packet has been counted.
 */
static void mrc_cc_loss_window(struct mrc_path *p, u64 now)
{
	if (now < p->loss_wnd_end_ns)
		return;
	if (p->loss_lost) {
		u32 f = mrc_ratio_q10(p->loss_lost,
				      p->loss_lost + p->loss_acked);

		mrc_cwnd_scale_down(p, f / 2);
		mrc_loss_episode(p, now);
	}
	p->loss_lost = 0;
	p->loss_acked = 0;
	p->loss_wnd_end_ns = now + p->srtt_ns;
}

/*
 * p shows a queue (MR-CC-007): its smoothed RTT is above its smallest by
 * more than the delay target.  No sample yet: assume so.
 */
static int mrc_path_queued(const struct mrc_conn *c, const struct mrc_path *p)
{
	return !p->min_rtt_ns ||
	       p->srtt_ns > p->min_rtt_ns + c->cfg.target_delay_ns;
}

/*
 * A congestion loss on p (MR-CC-002): the window halves, or with
 * MRC_CC_LOSS_SHARE the loss counts towards the share lost in its window.
 * With MRC_CC_LOSS_GATE only a loss that meets a queue is one
 * (MR-CC-007): the delay says whether the path is congested, and a loss
 * without a queue is corruption or a failing link, which a smaller window
 * does not cure.
 * A loss of a packet sent before the latest reduction belongs to the
 * episode that reduction answered (the losses of one overflowing flight
 * are declared over about a round trip) and changes nothing.
 */
static void mrc_cc_loss(struct mrc_conn *c, struct mrc_path *p,
			const struct mrc_tx_pkt *t, u64 now)
{
	u32 half;

	if (t->sent_ns < p->recovery_start_ns)
		return;
	if ((c->cfg.cc_flags & MRC_CC_LOSS_GATE) && !mrc_path_queued(c, p)) {
		p->st.losses_unqueued++;
		return;
	}
	if (c->cfg.cc_flags & MRC_CC_LOSS_SHARE) {
		p->loss_lost++;
		mrc_cc_loss_window(p, now);
		return;
	}
	half = mrc_cwnd_pkts(p) / 2;
	p->ssthresh = half < 2 ? 2 : half;
	p->cwnd_q = p->ssthresh << MRC_CWND_SHIFT;
	mrc_loss_episode(p, now);
}

/*
 * DCTCP-like ECN reaction (MR-CC-005): per observation window of one
 * srtt, F = CE echoes / echoes, alpha += (F - alpha) / 16, and a window
 * that saw a CE echo shrinks the path window by alpha / 2.
 */
static void mrc_cc_ecn(struct mrc_conn *c, struct mrc_path *p, int ce,
		       u64 now)
{
	u32 f;

	if (!(c->cfg.cc_flags & MRC_CC_ECN))
		return;
	p->ecn_acks++;
	if (ce)
		p->ecn_ce++;
	if (now < p->ecn_wnd_end_ns)
		return;
	f = mrc_ratio_q10(p->ecn_ce, p->ecn_acks);
	p->ecn_alpha_q = p->ecn_alpha_q - (p->ecn_alpha_q >> MRC_ALPHA_SHIFT) +
			 (f >> MRC_ALPHA_SHIFT);
	if (p->ecn_ce) {
		mrc_cwnd_scale_down(p, p->ecn_alpha_q / 2);
		p->st.ecn_decreases++;
	}
	p->ecn_acks = 0;
	p->ecn_ce = 0;
	p->ecn_wnd_end_ns = now + p->srtt_ns;
}

/*
 * Swift-like delay reaction (MR-CC-006), off unless MRC_CC_DELAY: an RTT
 * sample above min_rtt + target_delay shrinks the window by
 * (rtt - target) / rtt, at most by half, once per srtt.
 */
static void mrc_cc_delay(struct mrc_conn *c, struct mrc_path *p, u64 rtt,
			 u64 now)
{
	u64 target;
	u32 q;

	if (!(c->cfg.cc_flags & MRC_CC_DELAY) || now < p->delay_dec_ns)
		return;
	target = p->min_rtt_ns + c->cfg.target_delay_ns;
	if (rtt <= target)
		return;
	q = mrc_ratio_q10(rtt - target, rtt);
	if (q > (1u << 9))
		q = 1u << 9;
	mrc_cwnd_scale_down(p, q);
	p->st.delay_decreases++;
	p->delay_dec_ns = now + p->srtt_ns;
}

/*
 * Slow start below ssthresh, then +1 packet per window (MR-CC-001); with
 * MRC_CC_LOSS_SHARE the packet counts towards its loss window (MR-CC-002).
 */
static void mrc_cc_ack(struct mrc_conn *c, struct mrc_path *p, u64 now)
{
	u32 max_q = c->cfg.max_cwnd << MRC_CWND_SHIFT;

	if (mrc_cwnd_pkts(p) < p->ssthresh)
		p->cwnd_q += 1u << MRC_CWND_SHIFT;
	else
		p->cwnd_q += (1u << (2 * MRC_CWND_SHIFT)) / p->cwnd_q;
	if (p->cwnd_q > max_q)
		p->cwnd_q = max_q;
	if (c->cfg.cc_flags & MRC_CC_LOSS_SHARE) {
		p->loss_acked++;
		mrc_cc_loss_window(p, now);
	}
}

/*
 * charge: the loss counts against the packet's retry_cnt (MR-LOSS-009);
 * otherwise it is the path's (MR-FAIL-006) or not a loss at all (RNR).
 */
static void mrc_mark_lost(struct mrc_conn *c, struct mrc_tx_pkt *t,
			  u64 hold_until, int congestion, int charge, u64 now)
{
	struct mrc_path *p = &c->path[t->path];

	if (t->state != MRC_TXP_INFLIGHT)
		return;
	t->state = MRC_TXP_LOST;
	t->hold_until_ns = hold_until;
	t->lost_path = t->path;
	t->tlp = 0;
	p->in_flight--;
	c->lost_count++;
	if (charge)
		t->retries++;
	else if (!hold_until)
		c->st.retrans_uncharged++;
	if (congestion) {
		p->st.lost++;
		mrc_cc_loss(c, p, t, now);
	}
}

/* Retransmit everything in flight on p elsewhere (MR-FAIL-003). */
void mrc_mr_path_down(struct mrc_conn *c, struct mrc_path *p, u64 now)
{
	u32 psn;

	for (psn = c->snd_una; psn != c->snd_nxt; psn = mrc_psn_add(psn, 1)) {
		struct mrc_tx_pkt *t = mrc_txp(c, psn);

		if (t->state == MRC_TXP_INFLIGHT && &c->path[t->path] == p)
			mrc_mark_lost(c, t, 0, 0, 0, now);
	}
}

/*
 * Weighted spraying (MR-PATH-005): round-robin over live paths that have
 * window room, so each path's share follows its cwnd/RTT.  A
 * retransmission (avoid >= 0, the path its packet was lost on, sent at
 * lost_sent) goes where a packet sent since has been delivered if it can,
 * else on any path but avoid, else on avoid (MR-LOSS-005): a path that
 * shares the dead path's fate (its plane) has delivered nothing since.  A
 * suspect path (MR-FAIL-001) carries data only when every path that is
 * up is one.  When no path is up, failed (not administratively down)
 * paths are used one packet at a time, which doubles as probing
 * (MR-FAIL-004).  A timer's probe (probe, see mrc_conn.probe_credit)
 * may go where the window is full.
 */
static int mrc_pick_path(struct mrc_conn *c, int avoid, u64 lost_sent,
			 int probe)
{
	u32 n = c->cfg.num_paths;
	u32 i, pass;
	int any_up = 0, any_clean = 0;

	for (i = 0; i < n; i++) {
		if (c->path[i].state != MRC_PATH_UP)
			continue;
		any_up = 1;
		any_clean |= !c->path[i].pf;
	}
	for (pass = avoid < 0 ? 2 : 0; pass < 3; pass++) {
		for (i = 0; i < n; i++) {
			u32 k = (c->rr + i) % n;
			struct mrc_path *p = &c->path[k];

			if (p->state != MRC_PATH_UP || (p->pf && any_clean))
				continue;
			if (p->in_flight >= mrc_cwnd_pkts(p) && !probe)
				continue;
			if (pass < 2 && (int)k == avoid && n > 1)
				continue;
			if (pass == 0 && p->acked_sent_ns <= lost_sent)
				continue;
			c->rr = k + 1;
			return k;
		}
	}
	if (any_up)
		return -1;
	for (i = 0; i < n; i++) {
		u32 k = (c->rr + i) % n;
		struct mrc_path *p = &c->path[k];

		if (p->state == MRC_PATH_FAILED && !p->in_flight) {
			c->rr = k + 1;
			return k;
		}
	}
	return -1;
}

static void mrc_put_hdr(struct mrc_conn *c, u8 *b, u8 opcode, u8 flags,
			u32 path, u32 psn, u64 now)
{
	b[0] = MR_VERSION << 4 | MR_CAP_SACK | MR_CAP_ACK_TRAILER;
	b[1] = opcode;
	b[2] = flags;
	b[3] = path;
	mrc_put_be32(b + 4, c->cfg.remote_qpn);
	mrc_put_be32(b + 8, psn);
	mrc_put_be32(b + 12, mrc_ts(now));
}

/* The pending ACK's extension (MR-WIRE-005) at e, without ranges. */
static void mrc_put_ack_ext(struct mrc_conn *c, u8 *e, u64 now)
{
	mrc_put_be32(e, c->rcv_nxt);
	mrc_put_be32(e + 4, c->ack_ts_echo);
	mrc_put_be32(e + 8, now > c->ack_rx_ns ?
		     (u32)((now - c->ack_rx_ns) >> MRC_TS_SHIFT) : 0);
	mrc_put_be32(e + 12, c->ack_nak_psn);
	e[16] = c->ack_echo_path;
	e[17] = c->ack_syndrome;
	e[18] = 0;
	/* nak_psn belongs to the syndrome then, not to a D-SACK. */
	if (c->ack_syndrome != MR_ACK_OK)
		c->ack_flags &= ~MR_ACK_F_DSACK;
	e[19] = c->ack_flags;
}

/* The ACK owed is neither a NAK nor a report of a duplicate (D-SACK). */
static int mrc_owed_ack_plain(const struct mrc_conn *c)
{
	return c->ack_syndrome == MR_ACK_OK &&
	       !(c->ack_flags & MR_ACK_F_DSACK);
}

/*
 * The pending ACK can ride on a data packet (MR-WIRE-010): the peer takes
 * carried ACKs, and it is a plain cumulative one, no NAK, no D-SACK and no
 * SACK range to report.  Whatever else it has to say leaves on its own.
 */
static int mrc_ack_carriable(const struct mrc_conn *c)
{
	return c->ack_pending && c->peer_ack_trailer && !c->in_error &&
	       mrc_owed_ack_plain(c) && c->rcv_nxt == c->rcv_high;
}

static int mrc_build_data(struct mrc_conn *c, u8 *b, size_t cap, u32 psn,
			  u32 path, u64 now)
{
	struct mrc_tx_pkt *t = mrc_txp(c, psn);
	struct mrc_swqe *w = &c->sq[t->sq_idx];
	struct mrc_path *p = &c->path[path];
	u32 was_lost = t->state == MRC_TXP_LOST;
	u8 flags = t->flags, op = mrc_wire_opcode(w->opcode);
	u32 hlen = mrc_data_hlen(op), rkey_ssn = w->rkey;
	u64 raddr = w->raddr;
	int ret, carry;

	if ((size_t)hlen + t->len + MR_CRC_LEN > cap)
		return -ENOBUFS;
	/* The ACK we owe rides along if it fits (MR-WIRE-010). */
	carry = mrc_ack_carriable(c) &&
		(size_t)hlen + t->len + MR_ACK_TRAILER_LEN + MR_CRC_LEN <= cap;
	/* Resends and the last packet we have ask for an ACK at once. */
	if (was_lost)
		flags |= MR_FLAG_RETX | MR_FLAG_ACK_REQ;
	if (c->sq_pkt == c->sq_tail && c->lost_count == was_lost)
		flags |= MR_FLAG_ACK_REQ;
	if (carry)
		flags |= MR_FLAG_ACK;
	mrc_put_hdr(c, b, op, flags, path, psn, now);
	if (op == MR_OPC_SEND || op == MR_OPC_SEND_IMM) {
		rkey_ssn = w->ssn;
		raddr = 0;
	} else if (mrc_op_internal(w->opcode)) {
		rkey_ssn = 0;	/* responses name the request by msg_id */
		raddr = 0;
	}
	mrc_put_be32(b + 16, w->msg_id);
	/* a request's offset field names where we expect the response */
	mrc_put_be32(b + 20, mrc_op_rd_atomic(w->opcode) ? c->rcv_nxt :
		     t->offset);
	mrc_put_be32(b + 24, w->length);
	mrc_put_be32(b + 28, rkey_ssn);
	mrc_put_be64(b + 32, raddr);
	if (hlen == MR_DATA_LEN + MR_IMM_LEN) {
		mrc_put_be32(b + MR_DATA_LEN, w->imm);
		mrc_put_be32(b + MR_DATA_LEN + 4, w->ssn);
	} else if (hlen == MR_DATA_LEN + MR_ATOMIC_LEN) {
		mrc_put_be64(b + MR_DATA_LEN, op == MR_OPC_CMP_SWAP ? w->swap :
			     w->compare_add);
		mrc_put_be64(b + MR_DATA_LEN + 8, op == MR_OPC_CMP_SWAP ?
			     w->compare_add : 0);
	}
	if (w->opcode == MRC_OP_INT_ATOMIC_RESP) {
		mrc_put_be64(b + hlen, w->compare_add);
	} else if (t->len) {
		if (w->opcode == MRC_OP_INT_READ_RESP)
			ret = c->cb.read_remote(c->user, w->rkey,
						w->raddr + t->offset, b + hlen,
						t->len);
		else
			ret = c->cb.read_payload(c->user, w->wr_id, t->offset,
						 b + hlen, t->len);
		if (ret && w->opcode == MRC_OP_INT_READ_RESP) {
			/* memory gone since the request was checked */
			c->ack_syndrome = mrc_rerr_kind(ret) == MRC_RERR_OP ?
					  MR_ACK_REM_OP : MR_ACK_REM_ACCESS;
			c->ack_nak_psn = w->req_psn;
			mrc_schedule_ack(c, path, 1, now);
			mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return 0;
		}
		if (ret) {
			/* Keep the packet owed: it is retried later. */
			if (t->state != MRC_TXP_LOST) {
				t->state = MRC_TXP_LOST;
				t->hold_until_ns = 0;
				c->lost_count++;
			}
			return ret;
		}
	}
	if (t->state == MRC_TXP_LOST)
		c->lost_count--;
	if (was_lost) {
		p->st.tx_retrans++;
		c->st.tx_retrans++;
	}
	t->state = MRC_TXP_INFLIGHT;
	t->path = path;
	t->path_seq = p->next_seq++;
	t->sent_ns = now;
	t->tx_count++;
	p->in_flight++;
	p->last_send_ns = now;
	c->last_send_ns = now;
	c->last_send_path = path;
	if (!was_lost)
		c->tlp_out = 0;		/* a new tail (MR-LOSS-010) */
	/*
	 * New data within the hold of the peer's latest complete message:
	 * we answer its messages, so the next one's final ACK may wait for
	 * our answer (MR-LOSS-014), as Linux TCP's delayed ACK enters its
	 * ping-pong mode.
	 */
	if (!was_lost && c->tail_rx_ns &&
	    now + 1 - c->tail_rx_ns <= c->cfg.final_ack_hold_ns)
		c->replying = 1;
	p->st.tx_data++;
	c->st.tx_data++;
	if (!carry)
		return mrc_finish_packet(b, hlen + t->len, cap);
	mrc_put_ack_ext(c, b + hlen + t->len, now);
	c->st.acks_carried++;
	mrc_ack_cleared(c);
	return mrc_finish_packet(b, hlen + t->len + MR_ACK_TRAILER_LEN, cap);
}

/*
 * Our packets on p go unanswered: it is failed, suspect or down, or it
 * has packets in flight and delivered none sent within a round trip of
 * the newest one the peer acknowledged (on any path).
 */
static int mrc_path_lags(const struct mrc_conn *c, const struct mrc_path *p)
{
	return p->state != MRC_PATH_UP || p->pf ||
	       (p->in_flight && p->acked_sent_ns + mrc_rtt_of(c, p)->srtt_ns <
				c->acked_sent_ns);
}

/*
 * The path an ACK leaves on: that of the packet that triggered it
 * (MR-PATH-003), unless our own packets on it go unanswered; then the
 * path that delivered the newest of ours among those that do not lag.
 * The peer's packets arriving on a path say nothing about our direction
 * of it: an endpoint whose egress died one link after the other
 * answered into the dead links while its data had moved to the live
 * ones, and the peer, never told that its last message arrived, could
 * not send the next one, which the endpoint, all its own messages
 * acknowledged, waited for without a timer.
 */
static u32 mrc_ack_route(const struct mrc_conn *c)
{
	int best = -1;
	u32 i;

	if (!mrc_path_lags(c, &c->path[c->ack_path]))
		return c->ack_path;
	for (i = 0; i < c->cfg.num_paths; i++) {
		const struct mrc_path *p = &c->path[i];

		if (!mrc_path_lags(c, p) &&
		    (best < 0 ||
		     p->acked_sent_ns > c->path[best].acked_sent_ns))
			best = i;
	}
	return best < 0 ? c->ack_path : (u32)best;
}

static int mrc_build_ack(struct mrc_conn *c, u8 *b, size_t cap,
			 unsigned int *path, u64 now)
{
	u32 psn = c->rcv_nxt, n = 0, route = mrc_ack_route(c);
	size_t len;

	if (MR_ACK_LEN + MR_MAX_SACK_RANGES * MR_RANGE_LEN + MR_CRC_LEN > cap)
		return -ENOBUFS;
	mrc_put_hdr(c, b, MR_OPC_ACK, 0, route, 0, now);
	mrc_put_ack_ext(c, b + MR_HDR_LEN, now);
	/*
	 * SACK ranges of what arrived above the cumulative point, lowest
	 * first; if they do not all fit, the last two are the one holding
	 * the newest arrival (or the next one up) and the highest
	 * (MR-LOSS-001).
	 */
	while (n < MR_MAX_SACK_RANGES - 2 && mrc_psn_before(psn, c->rcv_high)) {
		u32 start;

		while (mrc_psn_before(psn, c->rcv_high) && !mrc_rx_test(c, psn))
			psn = mrc_psn_add(psn, 1);
		if (!mrc_psn_before(psn, c->rcv_high))
			break;
		start = psn;
		while (mrc_psn_before(psn, c->rcv_high) && mrc_rx_test(c, psn))
			psn = mrc_psn_add(psn, 1);
		mrc_put_be32(b + MR_ACK_LEN + n * MR_RANGE_LEN, start);
		mrc_put_be32(b + MR_ACK_LEN + n * MR_RANGE_LEN + 4, psn);
		n++;
	}
	if (mrc_psn_before(psn, c->rcv_high)) {
		/* rcv_high - 1 arrived: it ends the highest range */
		u32 start = mrc_psn_add(c->rcv_high, MRC_PSN_MASK);
		u32 s = psn, e, t = c->ack_rx_psn;

		while (mrc_psn_before(psn, start) &&
		       mrc_rx_test(c, mrc_psn_add(start, MRC_PSN_MASK)))
			start = mrc_psn_add(start, MRC_PSN_MASK);
		/*
		 * Below it, the range holding the newest arrival, as RFC
		 * 2018's first block: each packet that arrives is reported
		 * at least by the ACK it triggers.  (With every other PSN
		 * lost on a dead plane, the packets the live one delivered
		 * above the lowest ranges were never reported: they held
		 * its window, it timed out, and retransmissions went into
		 * the dead plane's paths.)
		 */
		while (mrc_psn_before(s, start) && !mrc_rx_test(c, s))
			s = mrc_psn_add(s, 1);
		if (!mrc_psn_before(t, s) && mrc_psn_before(t, start) &&
		    mrc_rx_test(c, t)) {
			s = t;
			while (mrc_psn_before(psn, s) &&
			       mrc_rx_test(c, mrc_psn_add(s, MRC_PSN_MASK)))
				s = mrc_psn_add(s, MRC_PSN_MASK);
		}
		if (mrc_psn_before(s, start)) {
			e = s;
			while (mrc_psn_before(e, start) && mrc_rx_test(c, e))
				e = mrc_psn_add(e, 1);
			mrc_put_be32(b + MR_ACK_LEN + n * MR_RANGE_LEN, s);
			mrc_put_be32(b + MR_ACK_LEN + n * MR_RANGE_LEN + 4, e);
			n++;
		}
		mrc_put_be32(b + MR_ACK_LEN + n * MR_RANGE_LEN, start);
		mrc_put_be32(b + MR_ACK_LEN + n * MR_RANGE_LEN + 4, c->rcv_high);
		n++;
	}
	b[34] = n;
	if (n) {
		c->st.sacks_sent++;
		c->path[route].st.sacks_sent++;
	}
	len = MR_ACK_LEN + n * MR_RANGE_LEN;
	*path = route;
	mrc_ack_sent(c, route);
	return mrc_finish_packet(b, len, cap);
}

/* A PROBE on path, or the PROBE_REPLY owed to the peer's path echo. */
static int mrc_build_probe(struct mrc_conn *c, u8 *b, size_t cap, u8 opcode,
			   u32 path, u32 echo, u64 now)
{
	if (MR_ACK_LEN + MR_CRC_LEN > cap)
		return -ENOBUFS;
	mrc_put_hdr(c, b, opcode, 0, path, 0, now);
	memset(b + 16, 0, MR_ACK_LEN - 16);
	if (opcode == MR_OPC_PROBE_REPLY) {
		mrc_put_be32(b + 16, c->rcv_nxt);
		mrc_put_be32(b + 20, c->probe_reply_ts[echo]);
		b[32] = echo;
	}
	c->path[path].st.tx_ctrl++;
	c->st.tx_ctrl++;
	return mrc_finish_packet(b, MR_ACK_LEN, cap);
}

int mrc_mr_next(struct mrc_conn *c, u8 *b, size_t cap, unsigned int *path,
		u64 now)
{
	u32 i, psn;
	int k;

	/* Control first: it unblocks the peer. */
	if (c->probe_reply_mask) {
		for (i = 0; !(c->probe_reply_mask & (1u << i)); i++)
			;
		c->probe_reply_mask &= ~(1u << i);
		*path = c->probe_reply_path[i];
		return mrc_build_probe(c, b, cap, MR_OPC_PROBE_REPLY, *path, i,
				       now);
	}
	if (c->ack_pending && (c->ack_now || c->in_error))
		return mrc_build_ack(c, b, cap, path, now);
	if (c->in_error)
		return 0;
	for (i = 0; i < c->cfg.num_paths; i++) {
		if (c->path[i].probe_due) {
			c->path[i].probe_due = 0;
			*path = i;
			return mrc_build_probe(c, b, cap, MR_OPC_PROBE, i, 0, now);
		}
	}
	if (c->rnr_until_ns > now)
		return 0;

	/* Selective retransmission of lost packets, oldest first. */
	if (c->lost_count) {
		for (psn = c->snd_una; psn != c->snd_nxt;
		     psn = mrc_psn_add(psn, 1)) {
			struct mrc_tx_pkt *t = mrc_txp(c, psn);

			if (t->state != MRC_TXP_LOST || t->hold_until_ns > now)
				continue;
			if (t->retries > c->cfg.retry_cnt ||
			    t->tx_count >= MRC_MAX_TX) {
				c->st.retry_exhausted++;
				mrc_conn_fail(c, MRC_WC_RETRY_EXC_ERR,
					      MRC_WC_WR_FLUSH_ERR);
				return 0;
			}
			k = mrc_pick_path(c, t->path, t->sent_ns,
					  c->probe_credit);
			if (k < 0)
				return 0;
			c->probe_credit = 0;
			*path = k;
			return mrc_build_data(c, b, cap, psn, k, now);
		}
	}

	/* New data. */
	if (MR_DATA_LEN + c->cfg.mtu + MR_CRC_LEN > cap)
		return -ENOBUFS;
	if (c->sq_pkt == c->sq_tail ||
	    mrc_psn_diff(c->snd_nxt, c->snd_una) >= c->cfg.window)
		return 0;
	k = mrc_pick_path(c, -1, 0, 0);
	if (k < 0)
		return 0;
	if (mrc_packetize(c, &psn))
		return 0;
	/* none of ours was unacknowledged: the wait for progress starts */
	if (!mrc_op_internal(c->sq[mrc_txp(c, psn)->sq_idx].opcode) &&
	    !c->own_unacked++)
		mrc_progress(c, now);
	*path = k;
	return mrc_build_data(c, b, cap, psn, k, now);
}

/*
 * Acknowledge one PSN (cumulatively or selectively) with an ACK that
 * echoes the timestamp of the transmission that triggered it.
 */
static void mrc_ack_one(struct mrc_conn *c, u32 psn, u32 echo_path,
			u32 echo_ts, u64 now)
{
	struct mrc_tx_pkt *t = mrc_txp(c, psn);
	struct mrc_path *p = &c->path[t->path];

	if (t->state == MRC_TXP_INFLIGHT) {
		p->in_flight--;
	} else if (t->state == MRC_TXP_LOST) {
		c->lost_count--;
	} else {
		return;
	}
	t->state = MRC_TXP_ACKED;
	if (!mrc_op_internal(c->sq[t->sq_idx].opcode))
		c->own_unacked--;
	c->tlp_out = 0;
	c->probe_credit = 0;		/* the ACK clock runs again */
	mrc_progress(c, now);		/* MR-FAIL-007 */
	/*
	 * A packet sent more than once, acknowledged by an ACK that its
	 * latest copy did not trigger: any copy may be what got through, so
	 * it says nothing about the latest one's path (MR-LOSS-003).  An ACK
	 * of the original credited to the retransmission's path made that
	 * path's earlier packets look lost, and the path look alive: a plane
	 * that carried nothing of ours any more was kept out of failure, and
	 * its real losses were charged to retry_cnt.
	 */
	if (t->tx_count > 1 &&
	    (echo_path != t->path || echo_ts != mrc_ts(t->sent_ns)))
		return;
	if (t->sent_ns + 1 > c->acked_sent_ns)
		c->acked_sent_ns = t->sent_ns + 1;
	if (t->sent_ns + 1 > p->acked_sent_ns)
		p->acked_sent_ns = t->sent_ns + 1;
	if (!p->any_acked || mrc_seq_before(p->largest_acked_seq, t->path_seq))
		p->largest_acked_seq = t->path_seq;
	p->any_acked = 1;
	mrc_path_alive(c, p);		/* data got through: readmit */
	/* sent once: its round trip is unambiguous (Karn) */
	if (t->tx_count == 1 && t->sent_ns + 1 > p->ack_sample_sent_ns)
		p->ack_sample_sent_ns = t->sent_ns + 1;
	mrc_cc_ack(c, p, now);
}

/*
 * p timed out alone (an isolated PTO, a silence seen across paths, or the
 * PROBE of a suspect path went unanswered while the peer answered the
 * rest): one more towards its failure (MR-FAIL-001).  Until then it is
 * suspect (after RFC 7829, SCTP's potentially failed state): it carries
 * no data while a path that is not suspect is up, and a PROBE tests it
 * once per PTO, so a path that stopped answering costs the connection its
 * probes, not a window of data parked on it.  Any answer on it ends the
 * suspicion (mrc_path_alive).
 */
static void mrc_path_timed_out(struct mrc_conn *c, struct mrc_path *p,
			       u64 now)
{
	if (p->state != MRC_PATH_UP)
		return;
	if (++p->fail_ptos >= c->cfg.path_fail_ptos) {
		p->state = MRC_PATH_FAILED;
		p->pf = 0;
		p->probe_out = 0;
		p->next_probe_ns = now;
		p->st.failures++;
		c->st.path_failures++;
		return;
	}
	p->pf = 1;
	p->probe_due = 1;
	p->probe_out = 1;
	p->probe_sent_ns = now;
	p->next_probe_ns = now + mrc_pto(c, p);
}

/*
 * p is silent alone (MR-LOSS-007, MR-LOSS-013): everything in flight on it
 * is lost and goes elsewhere (MR-LOSS-005), a congestion signal
 * (MR-CC-002), and it is suspect.  After a timeout its window collapses
 * too (MR-CC-003, collapse); a silence the ACKs showed keeps the ACK clock
 * and only the loss response.  The losses are not charged to retry_cnt
 * (MR-LOSS-009): they are the path's, not the packets'.
 */
static void mrc_path_silent(struct mrc_conn *c, struct mrc_path *p,
			    int collapse, u64 now)
{
	u32 psn;

	for (psn = c->snd_una; psn != c->snd_nxt; psn = mrc_psn_add(psn, 1)) {
		struct mrc_tx_pkt *t = mrc_txp(c, psn);

		if (t->state == MRC_TXP_INFLIGHT && &c->path[t->path] == p)
			mrc_mark_lost(c, t, 0, 1, 0, now);
	}
	if (collapse)
		p->cwnd_q = 1u << MRC_CWND_SHIFT;
	mrc_path_timed_out(c, p, now);
}

/*
 * How long after its transmission a packet on p may still arrive behind
 * one sent later (MR-LOSS-004): 9/8 x max(srtt, latest_rtt) of r (p, or
 * the path whose RTT p borrows), widened on D-SACK (MR-LOSS-011), at
 * least the timer granularity.
 */
static u64 mrc_reo_thresh(const struct mrc_conn *c, const struct mrc_path *p,
			  const struct mrc_path *r)
{
	u64 rtt = r->srtt_ns > r->latest_rtt_ns ? r->srtt_ns :
						  r->latest_rtt_ns;
	u64 thresh = rtt + (rtt / 8) * (1 + p->reo_mult);

	return thresh < c->cfg.granularity_ns ? c->cfg.granularity_ns : thresh;
}

/* The peer may hold psn: its newest ACK had no room to say (MR-LOSS-001). */
static int mrc_sack_unreported(const struct mrc_conn *c, u32 psn)
{
	return c->sack_capped && !mrc_psn_before(psn, c->sack_gap_start) &&
	       mrc_psn_before(psn, c->sack_gap_end);
}

/*
 * The peer acknowledged a packet sent on p after t (t's path): p carried
 * it, so t is lost or unreported, not stuck on a silent path
 * (MR-LOSS-003/007/013).  By transmission number, not time: packets of
 * one burst may share a timestamp.
 */
static int mrc_acked_after(const struct mrc_path *p,
			   const struct mrc_tx_pkt *t)
{
	return p->any_acked && mrc_seq_before(t->path_seq, p->largest_acked_seq);
}

/*
 * MR-LOSS-003's packet count, on a path that has not shown reordering:
 * once a D-SACK has widened its window (MR-LOSS-011), a packet of it
 * declared lost had only been overtaken, and until the window narrows
 * again only time tells a loss (RFC 8985 6.2, RACK.reordering_seen).
 */
static int mrc_overtaken_enough(const struct mrc_path *p,
				const struct mrc_tx_pkt *t)
{
	return !p->reo_mult &&
	       p->largest_acked_seq - t->path_seq >= MRC_PKT_THRESHOLD;
}

/*
 * RACK-style detection per path (MR-LOSS-003/004): a packet is lost when a
 * packet sent MRC_PKT_THRESHOLD later on the same path was acknowledged
 * (unless the path reorders), or when a later one was acknowledged and
 * 9/8 max(srtt, latest_rtt) has passed since it was sent.  Reordering
 * across paths never counts.
 */
static void mrc_detect_lost(struct mrc_conn *c, u64 now)
{
	u32 psn;

	c->loss_time_ns = MRC_U64_MAX;
	for (psn = c->snd_una; psn != c->snd_nxt; psn = mrc_psn_add(psn, 1)) {
		struct mrc_tx_pkt *t = mrc_txp(c, psn);
		struct mrc_path *p = &c->path[t->path];
		u64 thresh;

		if (t->state != MRC_TXP_INFLIGHT || !mrc_acked_after(p, t) ||
		    mrc_sack_unreported(c, psn))
			continue;
		thresh = mrc_reo_thresh(c, p, p);
		if (mrc_overtaken_enough(p, t) || t->sent_ns + thresh <= now)
			mrc_mark_lost(c, t, 0, 1, 1, now);
		else if (t->sent_ns + thresh < c->loss_time_ns)
			c->loss_time_ns = t->sent_ns + thresh;
	}
}

/*
 * Silence seen across paths (MR-LOSS-013): the peer acknowledged a packet
 * sent on another path a reordering window (MR-LOSS-004, by p's RTT)
 * after p's oldest packet in flight, and nothing sent on p since then.
 * p itself has no later acknowledgement for RACK to measure against, and
 * its PTO, counted from its latest transmission with 4 rttvar of margin,
 * lets a dead plane hold the connection's window for many round trips.
 * Both facts come from one ACK, what the peer received and what it did
 * not, so a caller that ran late (a stalled guest) cannot fake them.
 * The necessary condition, p's newest acknowledged send a reordering
 * window older than the connection's, is checked first so that a live
 * path costs no walk over the window.
 */
static void mrc_detect_silent_paths(struct mrc_conn *c, u64 now)
{
	const struct mrc_tx_pkt *oldest[MRC_MAX_PATHS];
	u64 thresh[MRC_MAX_PATHS];
	u32 i, psn, candidates = 0;

	for (i = 0; i < c->cfg.num_paths; i++) {
		const struct mrc_path *p = &c->path[i];

		oldest[i] = NULL;
		if (p->state != MRC_PATH_UP || !p->in_flight)
			continue;
		thresh[i] = mrc_reo_thresh(c, p, mrc_rtt_of(c, p));
		if (p->acked_sent_ns + thresh[i] < c->acked_sent_ns)
			candidates |= 1u << i;
	}
	if (!candidates)
		return;
	for (psn = c->snd_una; psn != c->snd_nxt; psn = mrc_psn_add(psn, 1)) {
		const struct mrc_tx_pkt *t = mrc_txp(c, psn);

		if (t->state != MRC_TXP_INFLIGHT ||
		    !(candidates & (1u << t->path)))
			continue;
		/* a packet the peer may hold rules its path out this time */
		if (mrc_sack_unreported(c, psn))
			candidates &= ~(1u << t->path);
		else if (!oldest[t->path] ||
			 t->sent_ns < oldest[t->path]->sent_ns)
			oldest[t->path] = t;
	}
	for (i = 0; i < c->cfg.num_paths; i++) {
		struct mrc_path *p = &c->path[i];

		/* acked_sent_ns are send times + 1 */
		if (!(candidates & (1u << i)) || !oldest[i] ||
		    mrc_acked_after(p, oldest[i]) ||
		    c->acked_sent_ns <= oldest[i]->sent_ns + thresh[i] + 1)
			continue;
		p->st.silences++;
		mrc_path_silent(c, p, 0, now);
	}
}

/* The receiver has no buffer for a SEND: hold SENDs for rnr_timer. */
static void mrc_handle_rnr(struct mrc_conn *c, u32 nak_psn, u64 now)
{
	struct mrc_tx_pkt *t = mrc_txp(c, nak_psn);
	struct mrc_swqe *w = &c->sq[t->sq_idx];
	u32 psn, ssn = w->ssn;

	if (c->rnr_until_ns <= now) {
		w->rnr_count++;
		if (c->cfg.rnr_retry != MRC_RNR_INFINITE &&
		    w->rnr_count > c->cfg.rnr_retry) {
			mrc_conn_fail(c, MRC_WC_RNR_RETRY_EXC_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return;
		}
		c->rnr_until_ns = now + c->cfg.rnr_timer_ns;
	}
	/* the peer answered; its wait is not ours to count (MR-FAIL-007) */
	mrc_progress(c, c->rnr_until_ns);
	for (psn = nak_psn; psn != c->snd_nxt; psn = mrc_psn_add(psn, 1)) {
		struct mrc_tx_pkt *u = mrc_txp(c, psn);
		struct mrc_swqe *v = &c->sq[u->sq_idx];

		if (u->state != MRC_TXP_INFLIGHT ||
		    !mrc_op_consumes_recv(v->opcode) ||
		    (int)(v->ssn - ssn) < 0)
			continue;
		mrc_mark_lost(c, u, c->rnr_until_ns, 0, 0, now);
		/* Waiting for a receive buffer is not a transport retry. */
		u->tx_count--;
	}
}

static int mrc_in_flight_psn(const struct mrc_conn *c, u32 psn)
{
	return mrc_psn_diff(psn, c->snd_una) < mrc_psn_diff(c->snd_nxt,
							   c->snd_una);
}

/*
 * The peer received psn twice (MR-LOSS-011): if we had retransmitted it,
 * that retransmission was spurious; widen the RACK reordering window of
 * the path the original was declared lost on (RFC 8985 reo_wnd_mult).
 */
static void mrc_dsack(struct mrc_conn *c, u32 psn)
{
	u32 back = mrc_psn_diff(c->snd_nxt, psn);
	struct mrc_tx_pkt *t;
	struct mrc_path *p;

	/* The slot still describes psn until psn + MRC_MAX_WINDOW is sent. */
	if (!back || back > MRC_MAX_WINDOW)
		return;
	t = mrc_txp(c, psn);
	if (t->tx_count < 2 || t->dsacked)
		return;
	t->dsacked = 1;
	p = &c->path[t->lost_path];
	p->st.spurious_retrans++;
	c->st.spurious_retrans++;
	p->reo_persist = 0;
	if (t->tlp) {
		/* the ACK was late, the packet not lost: probe later */
		if (c->tlp_mult < MRC_TLP_MULT_MAX)
			c->tlp_mult++;
		c->tlp_persist = 0;
	} else if (p->reo_mult < MRC_REO_MULT_MAX) {
		p->reo_mult++;
	}
}

/*
 * Round trip samples from what an ACK newly acknowledged (MR-PATH-004):
 * for each path but the echoed one that had no sample for a round trip,
 * its newest newly acknowledged packet that was sent once, less the ACK's
 * delay, as Linux TCP samples SACKed segments.  That packet reached the
 * peer no later than the echoed one (the latest arrival, bar a CE echo
 * kept), so it waited at least as long for the ACK: the sample does not
 * understate its round trip.  (The echo alone
 * samples the path of the packet that triggered each ACK; with coalesced
 * ACKs a path whose packets rarely trigger one kept an RTT far below the
 * fabric's and timed out spuriously while its packets were acknowledged.)
 * The echo, exact, stays the source of a path it samples: these include
 * the peer's ACK coalescing, and taken from every ACK they cost the
 * simulator's one-flow 1% loss run (seed 2) a path timeout and 1.5% of
 * its goodput.
 */
static void mrc_ack_rtt_samples(struct mrc_conn *c, u32 echo_path, u64 delay,
				u64 now)
{
	u32 i;

	for (i = 0; i < c->cfg.num_paths; i++) {
		struct mrc_path *p = &c->path[i];
		u64 sent = p->ack_sample_sent_ns - 1;

		if (!p->ack_sample_sent_ns)
			continue;
		p->ack_sample_sent_ns = 0;
		if (i == echo_path || now <= sent ||
		    (p->has_rtt && now - p->sampled_ns < p->srtt_ns))
			continue;
		mrc_rtt_sample(p, now - sent > delay ? now - sent - delay :
			       now - sent, now);
	}
}

/*
 * An ACK with MR_MAX_SACK_RANGES ranges may leave out what the peer holds
 * between the last of its lowest ranges and its highest, around the one
 * of its newest arrival (MR-LOSS-001): RACK does not judge the packets
 * there (MR-LOSS-003/004) until an ACK reports that span in full, one
 * whose ranges were not capped and reach past it.  ACKs cross on the
 * paths: an older, uncapped one that arrives later does not.  (A plane
 * that lost every packet of one endpoint left a hole every 4 PSNs: 16
 * ranges covered 48 of a 128-packet window, and RACK declared the
 * packets above them lost, charged, each time a retransmission above
 * them on the same path was acknowledged.)
 */
static void mrc_sack_gap(struct mrc_conn *c, const u8 *b, u32 cum, u32 n)
{
	u32 top = n ? mrc_get_be32(b + MR_ACK_LEN + (n - 1) * MR_RANGE_LEN +
				   4) & MRC_PSN_MASK : cum;

	if (n == MR_MAX_SACK_RANGES) {
		if (c->sack_capped && mrc_psn_before(top, c->sack_top))
			return;		/* older than the gap we know */
		c->sack_capped = 1;
		c->sack_top = top;
		c->sack_gap_start = mrc_get_be32(b + MR_ACK_LEN +
						 (n - 3) * MR_RANGE_LEN + 4) &
				    MRC_PSN_MASK;
		c->sack_gap_end = mrc_get_be32(b + MR_ACK_LEN +
					       (n - 1) * MR_RANGE_LEN) &
				  MRC_PSN_MASK;
	} else if (c->sack_capped && !mrc_psn_before(top, c->sack_gap_end)) {
		c->sack_capped = 0;
	}
}

/*
 * Whether the acknowledgement extension at e (MR-WIRE-005), followed by
 * ranges_len bytes of SACK ranges, may be applied; -EPROTO / -ERANGE,
 * counted, if not.
 */
static int mrc_ack_ext_check(struct mrc_conn *c, const u8 *e,
			     size_t ranges_len)
{
	u32 cum = mrc_get_be32(e) & MRC_PSN_MASK, n = e[18];
	u32 outstanding = mrc_psn_diff(c->snd_nxt, c->snd_una);

	if (n > MR_MAX_SACK_RANGES || ranges_len != n * MR_RANGE_LEN ||
	    e[17] > MR_ACK_REM_OP) {
		c->st.rx_malformed++;
		return -EPROTO;
	}
	if (mrc_psn_diff(cum, c->snd_una) > outstanding &&
	    !mrc_psn_before(cum, c->snd_una)) {
		c->st.rx_out_of_window++;
		return -ERANGE;
	}
	return 0;
}

/*
 * Apply an ACK checked by mrc_ack_ext_check(): b is laid out as an ACK
 * packet (the extension at MR_HDR_LEN, its ranges after it) that arrived
 * on path.
 */
static void mrc_apply_ack(struct mrc_conn *c, const u8 *b, unsigned int path,
			  u64 now)
{
	u32 aflags = b[35];
	u32 cum = mrc_get_be32(b + 16) & MRC_PSN_MASK;
	u32 nak_psn = mrc_get_be32(b + 28) & MRC_PSN_MASK;
	u32 echo_path = b[32], syndrome = b[33], n = b[34], i;
	u32 echo_ts = mrc_get_be32(b + 20);
	u64 delay = (u64)mrc_get_be32(b + 24) << MRC_TS_SHIFT;

	if (delay > mrc_peer_ack_delay(c))
		delay = mrc_peer_ack_delay(c);
	if (n) {
		c->st.sacks_received++;
		c->path[path].st.sacks_received++;
	}
	if (echo_path < c->cfg.num_paths) {
		u64 rtt = (u64)(u32)(mrc_ts(now) - mrc_get_be32(b + 20))
			  << MRC_TS_SHIFT;
		struct mrc_path *ep = &c->path[echo_path];
		int ce = !!(aflags & MR_ACK_F_ECE);

		if (rtt > delay)
			rtt -= delay;
		mrc_rtt_sample(ep, rtt, now);
		/* the echoed packet crossed ep and this ACK came back on it */
		mrc_path_alive(c, ep);
		ep->st.rx_packets++;
		if (ce) {
			ep->st.ecn_marks++;
			c->st.ecn_echoes++;
		}
		mrc_cc_ecn(c, ep, ce, now);
		mrc_cc_delay(c, ep, rtt, now);
	}
	if (!mrc_psn_before(cum, c->snd_una)) {
		while (c->snd_una != cum) {
			mrc_ack_one(c, c->snd_una, echo_path, echo_ts, now);
			mrc_txp(c, c->snd_una)->state = MRC_TXP_FREE;
			c->snd_una = mrc_psn_add(c->snd_una, 1);
		}
	}
	mrc_sack_gap(c, b, cum, n);
	for (i = 0; i < n; i++) {
		u32 s = mrc_get_be32(b + MR_ACK_LEN + i * MR_RANGE_LEN);
		u32 e = mrc_get_be32(b + MR_ACK_LEN + i * MR_RANGE_LEN + 4);
		u32 psn;

		s &= MRC_PSN_MASK;
		e &= MRC_PSN_MASK;
		if (mrc_psn_diff(e, s) > MRC_MAX_WINDOW)
			continue;
		for (psn = s; psn != e; psn = mrc_psn_add(psn, 1))
			if (mrc_in_flight_psn(c, psn))
				mrc_ack_one(c, psn, echo_path, echo_ts, now);
	}
	mrc_ack_rtt_samples(c, echo_path, delay, now);
	mrc_complete_sends(c);
	if ((aflags & MR_ACK_F_DSACK) && syndrome == MR_ACK_OK)
		mrc_dsack(c, nak_psn);
	if (syndrome == MR_ACK_RNR && mrc_in_flight_psn(c, nak_psn)) {
		mrc_handle_rnr(c, nak_psn, now);
	} else if (syndrome != MR_ACK_OK &&
		   (mrc_in_flight_psn(c, nak_psn) ||
		    mrc_rd_find_psn(c, nak_psn))) {
		/* a READ/atomic may be refused after its request was acked */
		mrc_conn_fail(c, syndrome == MR_ACK_REM_ACCESS ?
			      MRC_WC_REM_ACCESS_ERR :
			      syndrome == MR_ACK_REM_OP ? MRC_WC_REM_OP_ERR :
			      MRC_WC_REM_INV_REQ_ERR, MRC_WC_WR_FLUSH_ERR);
	}
	mrc_detect_lost(c, now);
	mrc_detect_silent_paths(c, now);
}

static int mrc_recv_ack(struct mrc_conn *c, const u8 *b, size_t len,
			unsigned int path, u64 now)
{
	int ret = mrc_ack_ext_check(c, b + MR_HDR_LEN, len - MR_ACK_LEN);

	if (ret)
		return ret;
	c->st.rx_ctrl++;
	mrc_apply_ack(c, b, path, now);
	return 0;
}

/* Answer the packet at psn with a NAK of syndrome and fail the QP. */
static void mrc_nak_fail(struct mrc_conn *c, u8 syndrome, u32 psn,
			 unsigned int path, u64 now)
{
	c->ack_syndrome = syndrome;
	c->ack_nak_psn = psn;
	mrc_schedule_ack(c, path, 1, now);
	mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_WR_FLUSH_ERR);
}

static u8 mrc_rerr_syndrome(int err)
{
	switch (mrc_rerr_kind(err)) {
	case MRC_RERR_ACCESS:
		return MR_ACK_REM_ACCESS;
	case MRC_RERR_INV_REQ:
		return MR_ACK_INV_REQ;
	default:
		return MR_ACK_REM_OP;
	}
}

static int mrc_wire_request(u8 op)
{
	return op == MR_OPC_READ_REQ || op == MR_OPC_CMP_SWAP ||
	       op == MR_OPC_FETCH_ADD;
}

/*
 * Responder side of READ and atomics (MR-OPS-002/003): the request was
 * accepted once (PSN dedupe); the response becomes a reliable message of
 * our own send stream.  Returns 1 if the packet is accepted, 0 if it is
 * dropped unaccepted (no response slot: the requester resends it) or
 * refused with a NAK.
 */
static int mrc_recv_request(struct mrc_conn *c, const u8 *b, u32 psn,
			    unsigned int path, u64 now)
{
	u32 msg_id = mrc_get_be32(b + 16), msg_len = mrc_get_be32(b + 24);
	u32 rkey = mrc_get_be32(b + 28);
	u64 raddr = mrc_get_be64(b + 32), orig = 0;
	int ret;

	if (c->resp_queued >= MRC_MAX_RESP) {
		c->st.rx_no_resp_slot++;
		return 0;
	}
	mrc_adopt_local_psn(c, mrc_get_be32(b + 20));
	if (b[1] == MR_OPC_READ_REQ) {
		ret = mrc_check_read(c, rkey, raddr, msg_len);
		if (!ret) {
			mrc_queue_response(c, MRC_OP_INT_READ_RESP, msg_id,
					   rkey, raddr, msg_len, 0, psn);
			c->st.reads_answered++;
			return 1;
		}
	} else {
		u64 swap_add = mrc_get_be64(b + MR_DATA_LEN);
		u64 compare = mrc_get_be64(b + MR_DATA_LEN + 8);

		ret = b[1] == MR_OPC_CMP_SWAP ?
		      mrc_do_atomic(c, MRC_OP_ATOMIC_CMP_AND_SWP, rkey, raddr,
				    compare, swap_add, &orig) :
		      mrc_do_atomic(c, MRC_OP_ATOMIC_FETCH_AND_ADD, rkey, raddr,
				    swap_add, 0, &orig);
		if (!ret) {
			mrc_queue_response(c, MRC_OP_INT_ATOMIC_RESP, msg_id,
					   0, 0, 8, orig, psn);
			return 1;
		}
	}
	c->st.rx_place_err++;
	mrc_nak_fail(c, mrc_rerr_syndrome(ret), psn, path, now);
	return 0;
}

/*
 * A receive-consuming message (SEND, SEND/WRITE with immediate) names its
 * receive by SSN (MR-ORDER-004, MR-OPS-005).  Returns the receive, or NULL
 * after answering RNR / failing on a length error.
 */
static struct mrc_rwqe *mrc_match_recv(struct mrc_conn *c, u8 op, u32 ssn,
				       u32 msg_len, u32 psn,
				       unsigned int path, u64 now)
{
	u32 idx = ssn - c->rq_base_ssn;
	struct mrc_rwqe *r;

	if (idx >= c->rq_tail - c->rq_head) {
		c->st.rx_no_recv_wr++;
		c->ack_syndrome = MR_ACK_RNR;
		c->ack_nak_psn = psn;
		mrc_schedule_ack(c, path, 1, now);
		return NULL;
	}
	r = &c->rq[(c->rq_head + idx) % MRC_MAX_RQ];
	if (op != MR_OPC_WRITE_IMM && msg_len > r->length) {
		c->ack_syndrome = MR_ACK_INV_REQ;
		c->ack_nak_psn = psn;
		mrc_schedule_ack(c, path, 1, now);
		/* Earlier receives are flushed, this one failed. */
		for (; idx; idx--, c->rq_head++) {
			r = &c->rq[c->rq_head % MRC_MAX_RQ];
			mrc_push_cqe(c, r->wr_id, 0, MRC_OP_RECV,
				     MRC_WC_WR_FLUSH_ERR);
		}
		mrc_conn_fail(c, MRC_WC_WR_FLUSH_ERR, MRC_WC_LOC_LEN_ERR);
		return NULL;
	}
	return r;
}

/*
 * MR-LOSS-014: the ACK of a message's last packet may wait for a data
 * packet of ours to carry it, when the connection is configured to, the
 * peer takes carried ACKs and we have been answering its messages, unless
 * the ACK has more to say than "all arrived": the packet was a
 * retransmission (a loss is being repaired) or CE-marked, or the ACK owed
 * is a NAK or reports a duplicate.
 */
static int mrc_final_ack_may_wait(const struct mrc_conn *c, u8 flags, int ce)
{
	return c->cfg.final_ack_hold_ns && c->peer_ack_trailer &&
	       c->replying && !ce && !(flags & MR_FLAG_RETX) &&
	       mrc_owed_ack_plain(c);
}

/*
 * Owe the final ACK for at most final_ack_hold_ns: a reply carries it
 * (mrc_build_data()) or the ACK timer sends it alone.  ack_every does not
 * count here; it paces the ACKs of a stream, and this ACK ends one.
 */
static void mrc_hold_final_ack(struct mrc_conn *c, unsigned int path, u64 now)
{
	u64 until = now + c->cfg.final_ack_hold_ns;

	if (!c->ack_pending || c->ack_deadline_ns > until)
		c->ack_deadline_ns = until;
	c->ack_pending = 1;
	c->ack_held = 1;
	c->ack_path = path;
	c->ack_unacked++;
}

static int mrc_recv_data(struct mrc_conn *c, const u8 *b, size_t len,
			 unsigned int path, int ce, u64 now)
{
	u8 op = b[1], flags = b[2];
	u32 hlen = mrc_data_hlen(op);
	u32 psn = mrc_get_be32(b + 8);
	u32 off = mrc_get_be32(b + 20);
	u32 msg_len = mrc_get_be32(b + 24);
	u32 rkey_ssn = mrc_get_be32(b + 28);
	u32 plen = len - hlen, d;
	const u8 *payload = b + hlen;
	int request = mrc_wire_request(op);
	int first = request || off == 0;
	int last = request || (u64)off + plen == msg_len;
	struct mrc_swqe *w = NULL;
	struct mrc_rwqe *r = NULL;

	if (len < hlen || plen > c->cfg.mtu || psn & ~MRC_PSN_MASK ||
	    (!request && (u64)off + plen > msg_len) ||
	    (request && (plen || off & ~MRC_PSN_MASK)) ||
	    first != !!(flags & MR_FLAG_FIRST) ||
	    last != !!(flags & MR_FLAG_LAST) ||
	    ((op == MR_OPC_CMP_SWAP || op == MR_OPC_FETCH_ADD ||
	      op == MR_OPC_ATOMIC_RESP) && msg_len != 8)) {
		c->st.rx_malformed++;
		return -EPROTO;
	}
	/* A CE echo is kept until its ACK leaves (MR-CC-005). */
	if (ce || !(c->ack_flags & MR_ACK_F_ECE)) {
		c->ack_ts_echo = mrc_get_be32(b + 12);
		c->ack_echo_path = b[3];
		c->ack_rx_ns = now;
	}
	if (ce)
		c->ack_flags |= MR_ACK_F_ECE;
	d = mrc_psn_diff(psn, c->rcv_nxt);
	if (d >= MRC_PSN_HALF || (d < MRC_MAX_WINDOW && mrc_rx_test(c, psn))) {
		/*
		 * Already placed (MR-LOSS-008): re-ACK so the sender learns.
		 * A request is never executed twice (MR-OPS-003).
		 */
		c->st.rx_dup++;
		c->path[path].st.rx_dup++;
		if (c->ack_syndrome == MR_ACK_OK &&
		    !(c->ack_flags & MR_ACK_F_DSACK)) {
			c->ack_flags |= MR_ACK_F_DSACK;
			c->ack_nak_psn = psn;
		}
		mrc_schedule_ack(c, path, 1, now);
		return 0;
	}
	if (d >= MRC_MAX_WINDOW) {
		c->st.rx_out_of_window++;
		return -ERANGE;
	}
	if (op == MR_OPC_READ_RESP || op == MR_OPC_ATOMIC_RESP) {
		/* The answer to one of our READ/atomic WRs in progress. */
		w = mrc_rd_find_msg(c, mrc_get_be32(b + 16));
		if (!w || w->length != msg_len ||
		    (w->opcode == MRC_OP_RDMA_READ) != (op == MR_OPC_READ_RESP)) {
			c->st.rx_malformed++;
			return -EPROTO;
		}
	}
	switch (op) {
	case MR_OPC_SEND:
	case MR_OPC_SEND_IMM:
	case MR_OPC_WRITE_IMM:
		r = mrc_match_recv(c, op, op == MR_OPC_WRITE_IMM ?
				   mrc_get_be32(b + MR_DATA_LEN + 4) : rkey_ssn,
				   msg_len, psn, path, now);
		if (!r)
			return 0;
		if (op == MR_OPC_WRITE_IMM)
			goto write;
		if (plen && c->cb.place_send(c->user, r->wr_id, off, payload,
					     plen)) {
			c->st.rx_place_err++;
			return -EFAULT;
		}
		break;
	case MR_OPC_WRITE:
write:
		if (plen && c->cb.place_write(c->user, rkey_ssn,
					      mrc_get_be64(b + 32) + off,
					      payload, plen)) {
			c->st.rx_place_err++;
			mrc_nak_fail(c, MR_ACK_REM_ACCESS, psn, path, now);
			return 0;
		}
		break;
	case MR_OPC_READ_REQ:
	case MR_OPC_CMP_SWAP:
	case MR_OPC_FETCH_ADD:
		if (!mrc_recv_request(c, b, psn, path, now))
			return 0;
		break;
	case MR_OPC_READ_RESP:
		if (mrc_place_response(c, w, off, payload, plen))
			return 0;
		break;
	default: {	/* MR_OPC_ATOMIC_RESP */
		u64 orig = mrc_get_be64(payload);

		if (plen != 8 ||
		    mrc_place_response(c, w, 0, (const u8 *)&orig, 8))
			return 0;
	}
	}
	if (r && last) {
		r->last_psn = psn;
		r->msg_len = msg_len;
		r->has_last = 1;
		if (op != MR_OPC_SEND) {
			r->imm = mrc_get_be32(b + MR_DATA_LEN);
			r->wc_flags = MRC_WC_F_IMM;
		}
		if (op == MR_OPC_WRITE_IMM)
			r->opcode = MRC_OP_RECV_RDMA_WITH_IMM;
	}
	c->st.rx_data++;
	if (d) {
		c->st.rx_out_of_order++;	/* an earlier PSN is missing */
		c->path[path].st.rx_out_of_order++;
	}
	c->path[path].st.rx_packets++;
	mrc_rx_set(c, psn, 1);
	c->ack_rx_psn = psn;
	if (!mrc_psn_before(psn, c->rcv_high)) {
		c->rcv_high = mrc_psn_add(psn, 1);
		c->rx_tail_ackreq = !!(flags & MR_FLAG_ACK_REQ);
	}
	while (mrc_rx_test(c, c->rcv_nxt) && c->rcv_nxt != c->rcv_high) {
		mrc_rx_set(c, c->rcv_nxt, 0);
		c->rcv_nxt = mrc_psn_add(c->rcv_nxt, 1);
	}
	mrc_complete_recvs(c);
	if (w)
		mrc_complete_sends(c);
	/* The requester's tail is complete here: MR-LOSS-012, MR-LOSS-014. */
	if (c->rx_tail_ackreq && c->rcv_nxt == c->rcv_high) {
		c->tail_rx_ns = now + 1;
		if (mrc_final_ack_may_wait(c, flags, ce))
			mrc_hold_final_ack(c, path, now);
		else
			mrc_schedule_final_ack(c, path, now);
	} else {
		mrc_schedule_ack(c, path, d != 0 || c->rcv_nxt != c->rcv_high ||
				 (flags & MR_FLAG_ACK_REQ) || ce, now);
	}
	return 0;
}

/*
 * A data packet carrying an ACK (MR-WIRE-010): the data as if it came
 * alone, then the ACK as if it followed on the same path.  Neither is
 * applied unless both are well formed (MR-WIRE-007).
 */
static int mrc_recv_data_acked(struct mrc_conn *c, const u8 *b, size_t len,
			       unsigned int path, int ce, u64 now)
{
	u8 ack[MR_ACK_LEN];
	const u8 *e = b + len - MR_ACK_TRAILER_LEN;
	int ret;

	if (len < MR_DATA_LEN + MR_ACK_TRAILER_LEN || e[17] != MR_ACK_OK) {
		c->st.rx_malformed++;
		return -EPROTO;
	}
	ret = mrc_ack_ext_check(c, e, 0);
	if (ret)
		return ret;
	/* a copy: the data's checks may fail it, and the header is the ACK's */
	memcpy(ack, b, MR_HDR_LEN);
	memcpy(ack + MR_HDR_LEN, e, MR_ACK_TRAILER_LEN);
	ret = mrc_recv_data(c, b, len - MR_ACK_TRAILER_LEN, path, ce, now);
	if (ret || c->in_error)
		return ret;
	c->st.rx_acks_carried++;
	mrc_apply_ack(c, ack, path, now);
	return 0;
}

/*
 * What the peer takes, learnt from its packets that were accepted (ret 0):
 * a malformed one changes nothing (MR-WIRE-007).  Returns ret.
 */
static int mrc_heard_caps(struct mrc_conn *c, const u8 *b, int ret)
{
	if (!ret && (b[0] & MR_CAP_ACK_TRAILER))
		c->peer_ack_trailer = 1;
	return ret;
}

int mrc_mr_recv(struct mrc_conn *c, const u8 *b, size_t len,
		unsigned int path, unsigned int rx_flags, u64 now)
{
	u8 echo;
	int ret;

	if (len < MR_HDR_LEN || b[0] >> 4 != MR_VERSION) {
		c->st.rx_malformed++;
		return -EPROTO;
	}
	if (mrc_get_be32(b + 4) != c->cfg.local_qpn) {
		c->st.rx_wrong_qpn++;
		return -ENXIO;
	}
	if (c->in_error)
		return 0;
	/* the peer is alive: a response wait starts over (MR-OPS-007) */
	c->rsp_wait_start_ns = now;
	c->rsp_waits = 0;
	switch (b[1]) {
	case MR_OPC_SEND:
	case MR_OPC_WRITE:
	case MR_OPC_SEND_IMM:
	case MR_OPC_WRITE_IMM:
	case MR_OPC_READ_REQ:
	case MR_OPC_READ_RESP:
	case MR_OPC_CMP_SWAP:
	case MR_OPC_FETCH_ADD:
	case MR_OPC_ATOMIC_RESP:
		if (b[2] & MR_FLAG_ACK)
			ret = mrc_recv_data_acked(c, b, len, path,
						  rx_flags & MRC_RX_CE, now);
		else
			ret = mrc_recv_data(c, b, len, path,
					    rx_flags & MRC_RX_CE, now);
		return mrc_heard_caps(c, b, ret);
	case MR_OPC_ACK:
		if (len < MR_ACK_LEN)
			break;
		return mrc_heard_caps(c, b, mrc_recv_ack(c, b, len, path, now));
	case MR_OPC_PROBE:
		echo = b[3];
		if (len != MR_ACK_LEN || echo >= MRC_MAX_PATHS)
			break;
		c->st.rx_ctrl++;
		c->probe_reply_mask |= 1u << echo;
		c->probe_reply_ts[echo] = mrc_get_be32(b + 12);
		c->probe_reply_path[echo] = path;
		return 0;
	case MR_OPC_PROBE_REPLY:
		if (len != MR_ACK_LEN)
			break;
		echo = b[32];
		if (echo >= c->cfg.num_paths)
			break;
		c->st.rx_ctrl++;
		/* Re-admission (MR-FAIL-005), or the end of a suspicion. */
		mrc_path_alive(c, &c->path[echo]);
		mrc_rtt_sample(&c->path[echo],
			       (u64)(u32)(mrc_ts(now) - mrc_get_be32(b + 20))
			       << MRC_TS_SHIFT, now);
		return 0;
	}
	c->st.rx_malformed++;
	return -EPROTO;
}

/*
 * The srtt a tail loss probe waits on: that of the path of the latest
 * transmission or, while that path has no sample yet, the largest srtt the
 * connection has measured on any path.  A short message sprayed over many
 * paths puts a packet or two on each, so the last path used has usually
 * not been sampled when its tail is lost, and initial_rtt may be many
 * times the fabric's round trip.
 */
static u64 mrc_tlp_srtt(const struct mrc_conn *c)
{
	const struct mrc_path *p = &c->path[c->last_send_path];
	u64 srtt = 0;
	u32 i;

	if (p->has_rtt)
		return p->srtt_ns;
	for (i = 0; i < c->cfg.num_paths; i++)
		if (c->path[i].has_rtt && c->path[i].srtt_ns > srtt)
			srtt = c->path[i].srtt_ns;
	return srtt ? srtt : p->srtt_ns;
}

/*
 * Tail loss probe (MR-LOSS-010, RFC 8985 TLP / RFC 9002 PTO probe): when
 * everything posted has been sent and nothing is known lost, 2 srtt + the
 * peer's ACK delay (mrc_peer_ack_delay()) after the latest transmission
 * the newest packet in flight
 * is retransmitted on another path, without waiting for the path PTO and
 * without a window reduction.  One probe per tail until an ACK.  Each
 * probe the peer reports as a duplicate adds srtt / 2 to the wait, up to
 * 2 srtt more, as RACK widens its reordering window (MR-LOSS-011): on a
 * host whose ACKs now and then take more than 2 srtt (a virtual machine
 * descheduled), a ping-pong sent a spurious probe and its duplicate's
 * ACK for one message in ten.  Lost tails send no duplicates, so where
 * probes find losses the wait stays 2 srtt; MRC_REO_PERSIST probes
 * without a duplicate reset it.  No probe while a loss timer runs
 * (c->loss_time_ns): a later packet of a suspect's path was acknowledged,
 * so the peer is there and RACK decides; a probe would resend a real
 * loss uncharged and leave the path's window whole (Linux TCP's
 * reordering timer likewise replaces the loss probe).
 */
static u64 mrc_tlp_deadline(const struct mrc_conn *c)
{
	u64 srtt;

	if (c->tlp_out || c->lost_count || c->loss_time_ns != MRC_U64_MAX ||
	    c->sq_pkt != c->sq_tail || c->snd_una == c->snd_nxt)
		return MRC_U64_MAX;
	srtt = mrc_tlp_srtt(c);
	return c->last_send_ns + 2 * srtt + srtt / 2 * c->tlp_mult +
	       mrc_peer_ack_delay(c);
}

static void mrc_tlp_fire(struct mrc_conn *c, u64 now)
{
	u32 psn = c->snd_nxt;

	c->tlp_out = 1;		/* one probe per tail, even if none is sent */
	if (c->tlp_mult && ++c->tlp_persist >= MRC_REO_PERSIST) {
		c->tlp_mult = 0;
		c->tlp_persist = 0;
	}
	while (psn != c->snd_una) {
		struct mrc_tx_pkt *t;

		psn = mrc_psn_add(psn, MRC_PSN_MASK);	/* psn - 1 */
		t = mrc_txp(c, psn);
		if (t->state == MRC_TXP_INFLIGHT) {
			/* a probe, not a loss: not charged (MR-LOSS-009) */
			mrc_mark_lost(c, t, 0, 0, 0, now);
			t->tlp = 1;
			c->probe_credit = 1;
			c->st.tlp_probes++;
			return;
		}
	}
}

/*
 * Every packet of ours is acknowledged but a READ/atomic still waits for
 * its response, which only the peer's stream can bring: if the peer went
 * into the error state it never comes, and no other timer runs
 * (MR-OPS-007).
 */
static int mrc_rsp_waiting(const struct mrc_conn *c)
{
	return !c->in_error && c->rd_head != c->rd_tail &&
	       c->snd_una == c->snd_nxt;
}

/*
 * The larger of rto_ns and the largest path PTO (a slow path must not
 * pass for a dead peer) after the later of our latest send and the
 * latest wait start, doubled for each silent wait before.
 */
static u64 mrc_rsp_deadline(const struct mrc_conn *c)
{
	u32 shift = c->rsp_waits < MRC_MAX_PTO_SHIFT ? c->rsp_waits :
						      MRC_MAX_PTO_SHIFT;
	u64 from = c->rsp_wait_start_ns > c->last_send_ns ?
		   c->rsp_wait_start_ns : c->last_send_ns;
	u64 wait = c->cfg.rto_ns;
	u32 i;

	for (i = 0; i < c->cfg.num_paths; i++) {
		u64 pto = mrc_pto(c, &c->path[i]);

		if (pto > wait)
			wait = pto;
	}

	if (wait > (MRC_U64_MAX >> shift) ||
	    (wait << shift) > MRC_U64_MAX - from)
		return MRC_U64_MAX;
	return from + (wait << shift);
}

/*
 * Connection give-up bound (MR-FAIL-007): B = max((retry_cnt + 1) x
 * rto_ns, 2^path_fail_ptos PTOs of the slowest path) without progress,
 * counted as retry_cnt + 1 expiries of a timer of B / (retry_cnt + 1),
 * each restarted when it expires.  Counting expiries, as IBTA counts
 * local ACK timeouts, rather than comparing the clock with B: a caller
 * that could not run for a while (a stalled host or guest) loses one
 * expiry when it runs again, before it reads the acknowledgements that
 * arrived meanwhile, not the whole bound.  The time of the next expiry;
 * U64_MAX while no packet of the caller's WRs is unacknowledged.
 * Responses (MR-OPS-002) do not run it: IBTA gives a responder no local
 * ACK timeout, and one that stays in RTR never learns the QP's, so
 * rto_ns there is a default nobody chose; the requester's timers
 * (MR-OPS-007, its own give-up) decide whether the peer is gone, and
 * MR-LOSS-009 bounds a response stream to a dead requester.
 */
static u64 mrc_give_up_deadline(const struct mrc_conn *c)
{
	u64 bound = (u64)(c->cfg.retry_cnt + 1) * c->cfg.rto_ns;
	u64 interval;
	u32 i;

	if (!c->own_unacked)
		return MRC_U64_MAX;
	for (i = 0; i < c->cfg.num_paths; i++) {
		u32 shift = c->cfg.path_fail_ptos < MRC_MAX_PTO_SHIFT ?
			    c->cfg.path_fail_ptos : MRC_MAX_PTO_SHIFT;
		/* the PTO without backoff, times 2^path_fail_ptos (capped) */
		u64 floor = mrc_pto_base(c, &c->path[i]) << shift;

		if (floor > bound)
			bound = floor;
	}
	/* rounded up: the expiries together wait at least B */
	interval = mrc_div64(bound + c->cfg.retry_cnt, c->cfg.retry_cnt + 1);
	if (interval > MRC_U64_MAX - c->progress_ns)
		return MRC_U64_MAX;
	return c->progress_ns + interval;
}

/* The PROBE testing a suspect path is unanswered. */
static int mrc_pf_probing(const struct mrc_path *p)
{
	return p->state == MRC_PATH_UP && p->pf && p->probe_out &&
	       !p->in_flight;
}

u64 mrc_mr_deadline(const struct mrc_conn *c)
{
	u64 t = mrc_give_up_deadline(c);
	u64 tlp = mrc_tlp_deadline(c);
	u32 i;

	if (c->loss_time_ns < t)
		t = c->loss_time_ns;
	if (tlp < t)
		t = tlp;
	if (mrc_rsp_waiting(c) && mrc_rsp_deadline(c) < t)
		t = mrc_rsp_deadline(c);
	for (i = 0; i < c->cfg.num_paths; i++) {
		const struct mrc_path *p = &c->path[i];
		u64 d;

		if (p->in_flight) {
			d = p->last_send_ns + mrc_pto(c, p);
			if (d < t)
				t = d;
		}
		if ((p->state == MRC_PATH_FAILED || mrc_pf_probing(p)) &&
		    p->next_probe_ns < t)
			t = p->next_probe_ns;
	}
	return t;
}

/*
 * p's PTO expired (MR-LOSS-006/007).  Isolated, when the peer has since
 * acknowledged a packet sent at or after p's latest transmission (after a
 * first expiry: after p's oldest packet in flight) but nothing sent on p
 * at or after its oldest packet in flight: p alone is silent, everything
 * in flight on it is lost and goes elsewhere, p's window collapses
 * (MR-CC-003) and p is suspect.  Otherwise either the peer hears p, or
 * the whole connection is silent (a slow or stalled peer or host, or
 * every path down): which path to blame is unknown and resending a window
 * helps nothing, so only the oldest packet on p is resent, as a probe,
 * and no window or failure count is touched.  (A guest that runs its
 * late timers before the ACKs queued for it used to declare every path's
 * window lost, and every path failed, after each stall.)  Either way the
 * PTO backs off, and the losses are not charged to retry_cnt
 * (MR-LOSS-009): the give-up bound (MR-FAIL-007) ends a silence that
 * lasts.
 */
static void mrc_pto_expired(struct mrc_conn *c, struct mrc_path *p, u64 now)
{
	u64 since = p->last_send_ns;
	struct mrc_tx_pkt *oldest = NULL;
	int isolated;
	u32 psn;

	for (psn = c->snd_una; psn != c->snd_nxt; psn = mrc_psn_add(psn, 1)) {
		struct mrc_tx_pkt *t = mrc_txp(c, psn);

		if (t->state == MRC_TXP_INFLIGHT && &c->path[t->path] == p &&
		    (!oldest || t->sent_ns < oldest->sent_ns))
			oldest = t;
	}
	/*
	 * After an expiry that blamed nobody, p may have taken new data
	 * (the probe's ACK let the window move): its silent packets are the
	 * old ones.  A path the peer heard after its oldest packet is not
	 * silent: what it has in flight from before was lost (RACK judges
	 * that) or sits where capped ACKs leave out what the peer holds
	 * (MR-LOSS-001), for the live paths of a plane that lost every
	 * other PSN.  Blamed, they had their delivered windows resent and
	 * collapsed, every path suspect.
	 */
	if (p->pto_count && oldest)
		since = oldest->sent_ns;
	isolated = c->acked_sent_ns > since &&
		   !(oldest && mrc_acked_after(p, oldest));
	p->st.ptos++;
	p->pto_count++;
	if (!isolated) {
		if (oldest) {
			mrc_mark_lost(c, oldest, 0, 0, 0, now);
			c->probe_credit = 1;
		}
		return;
	}
	mrc_path_silent(c, p, 1, now);
}

void mrc_mr_timeout(struct mrc_conn *c, u64 now)
{
	u32 i;

	if (c->ack_pending && c->ack_deadline_ns <= now) {
		c->ack_now = 1;
		/* no answer came within the hold: stop waiting for one */
		if (c->ack_held)
			c->replying = 0;
	}
	if (c->in_error)
		return;
	if (mrc_give_up_deadline(c) <= now) {
		if (++c->give_up_expiries > c->cfg.retry_cnt) {
			c->st.give_ups++;
			mrc_conn_fail(c, MRC_WC_RETRY_EXC_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return;
		}
		c->progress_ns = now;	/* the next interval */
	}
	if (mrc_rsp_waiting(c) && mrc_rsp_deadline(c) <= now) {
		/* retry_cnt + 1 silent waits: the peer is gone (MR-OPS-007) */
		if (++c->rsp_waits > c->cfg.retry_cnt) {
			c->st.rsp_wait_give_ups++;
			mrc_conn_fail(c, MRC_WC_RETRY_EXC_ERR,
				      MRC_WC_WR_FLUSH_ERR);
			return;
		}
		c->rsp_wait_start_ns = now;
	}
	if (c->rnr_until_ns && c->rnr_until_ns <= now)
		c->rnr_until_ns = 0;
	if (c->loss_time_ns <= now)
		mrc_detect_lost(c, now);
	if (mrc_tlp_deadline(c) <= now)
		mrc_tlp_fire(c, now);
	for (i = 0; i < c->cfg.num_paths; i++) {
		struct mrc_path *p = &c->path[i];

		if (p->in_flight && p->last_send_ns + mrc_pto(c, p) <= now)
			mrc_pto_expired(c, p, now);
		else if (mrc_pf_probing(p) && p->next_probe_ns <= now) {
			/*
			 * The probe of a suspect path went unanswered.  While
			 * the peer acknowledged what was sent after it, or
			 * everything, the silence is the path's; otherwise
			 * the whole connection is silent: probe again, later.
			 */
			p->st.ptos++;
			p->pto_count++;
			if (c->acked_sent_ns > p->probe_sent_ns ||
			    c->snd_una == c->snd_nxt) {
				mrc_path_timed_out(c, p, now);
			} else {
				p->probe_due = 1;
				p->probe_sent_ns = now;
				p->next_probe_ns = now + mrc_pto(c, p);
			}
		}
		if (p->state == MRC_PATH_FAILED && p->next_probe_ns <= now) {
			u64 every = mrc_pto_base(c, p);

			/* no faster than it could answer (MR-FAIL-002) */
			if (every < c->cfg.probe_interval_ns)
				every = c->cfg.probe_interval_ns;
			p->probe_due = 1;
			p->next_probe_ns = now + every;
		}
	}
}
