/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Private state of one MetaRoCE core connection.  Only the core sources
 * include this; users see struct mrc_conn as opaque and size it with
 * mrc_conn_size().
 */
#ifndef MRC_INTERNAL_H
#define MRC_INTERNAL_H

#include "mrc_platform.h"
#include <metaroce/core.h>
#include <metaroce/wire.h>

#define MRC_PSN_MASK		0x00ffffffu
#define MRC_PSN_HALF		0x00800000u
#define MRC_TS_SHIFT		10	/* wire timestamps: 1024 ns units */
#define MRC_CWND_SHIFT		10	/* per-path windows are Q10 packets */
#define MRC_PKT_THRESHOLD	3	/* RFC 9002 kPacketThreshold */
#define MRC_REO_MULT_MAX	8	/* RACK reo_wnd cap: 1 + 8/8 RTT */
#define MRC_REO_PERSIST		16	/* losses before reo_wnd resets */
#define MRC_TLP_MULT_MAX	4	/* tail probe wait cap: 2 + 4/2 srtt */
#define MRC_ALPHA_ONE		1024	/* DCTCP alpha 1.0, Q10 */
#define MRC_ALPHA_SHIFT		4	/* DCTCP g = 1/16 */
#define MRC_MAX_TX		255	/* transmissions of one packet, ever */
#define MRC_MAX_PTO_SHIFT	16	/* cap of the exponential backoff */
#define MRC_RNR_INFINITE	7
#define MRC_CQ_DEPTH		(MRC_MAX_SQ + MRC_MAX_RQ)
/*
 * Send queue ring: the caller's WRs plus the responses a MetaRoCE
 * responder queues in its own send stream (MR-OPS-002); a power of two so
 * that the free-running u32 indexes wrap cleanly.
 */
#define MRC_SQ_RING		256
#if MRC_SQ_RING < MRC_MAX_SQ + MRC_MAX_RESP
#error "MRC_SQ_RING too small"
#endif

/* Internal send WR opcodes: MetaRoCE responses, never completed to users. */
#define MRC_OP_INT_READ_RESP	0x40
#define MRC_OP_INT_ATOMIC_RESP	0x41

/*
 * A path's share of the connection's initial window (MR-CC-001): the
 * first flight of a connection is init_cwnd packets (rounded up to a
 * multiple of its paths) however many paths it sprays over, or each path
 * added would add a whole initial window to the burst the receiver's
 * switch port must queue in an incast.  RoCEv2 mode has one path whatever
 * num_paths says (mrc_conn_init()), so validation and use agree.
 */
static inline u32 mrc_path_init_cwnd(const struct mrc_config *cfg)
{
	u32 paths = cfg->mode == MRC_MODE_ROCEV2 ? 1 : cfg->num_paths;

	return cfg->init_cwnd ? (cfg->init_cwnd - 1) / paths + 1 : 0;
}

static inline int mrc_op_internal(u32 op)
{
	return op >= MRC_OP_INT_READ_RESP;
}

/* The message consumes a receive WR at the responder (MR-OPS-005). */
static inline int mrc_op_consumes_recv(u32 op)
{
	return op == MRC_OP_SEND || op == MRC_OP_SEND_WITH_IMM ||
	       op == MRC_OP_RDMA_WRITE_WITH_IMM;
}

static inline int mrc_op_atomic(u32 op)
{
	return op == MRC_OP_ATOMIC_CMP_AND_SWP ||
	       op == MRC_OP_ATOMIC_FETCH_AND_ADD;
}

/* The WR completes only with a response (MR-OPS-001, MR-OPS-003). */
static inline int mrc_op_rd_atomic(u32 op)
{
	return op == MRC_OP_RDMA_READ || mrc_op_atomic(op);
}

static inline int mrc_op_write(u32 op)
{
	return op == MRC_OP_RDMA_WRITE || op == MRC_OP_RDMA_WRITE_WITH_IMM;
}

/* 24-bit PSN arithmetic (MR-CONN-003). */
static inline u32 mrc_psn_add(u32 psn, u32 n)
{
	return (psn + n) & MRC_PSN_MASK;
}

/* Distance from b forward to a. */
static inline u32 mrc_psn_diff(u32 a, u32 b)
{
	return (a - b) & MRC_PSN_MASK;
}

/* a precedes b in the half-space ordering. */
static inline int mrc_psn_before(u32 a, u32 b)
{
	u32 d = mrc_psn_diff(b, a);

	return d != 0 && d < MRC_PSN_HALF;
}

enum mrc_txp_state {
	MRC_TXP_FREE = 0,
	MRC_TXP_INFLIGHT,	/* sent, unacknowledged, counted on its path */
	MRC_TXP_LOST,		/* waiting for retransmission */
	MRC_TXP_ACKED,		/* cumulatively or selectively acknowledged */
};

/* Sender window slot, indexed by PSN % MRC_MAX_WINDOW. */
struct mrc_tx_pkt {
	u64 sent_ns;		/* time of the latest transmission */
	u64 hold_until_ns;	/* LOST: not before this time (RNR) */
	u32 offset;		/* byte offset in the message */
	u32 path_seq;		/* per-path transmission number */
	u16 len;		/* payload bytes */
	u16 sq_idx;		/* send queue slot of the message */
	u8 path;		/* path of the latest transmission */
	u8 state;		/* enum mrc_txp_state */
	u8 tx_count;		/* transmissions so far */
	u8 flags;		/* MR_FLAG_FIRST / MR_FLAG_LAST */
	u8 retries;		/* losses charged to retry_cnt (MR-LOSS-009) */
	u8 lost_path;		/* path of the latest transmission declared lost */
	u8 dsacked;		/* a duplicate of it was reported */
	u8 tlp;			/* latest loss was a tail loss probe */
};

struct mrc_swqe {
	u64 wr_id;
	u64 raddr;
	u64 compare_add;	/* atomics; INT_ATOMIC_RESP: original value */
	u64 swap;
	u32 opcode;		/* enum mrc_opcode or MRC_OP_INT_* */
	u32 length;
	u32 rkey;
	u32 msg_id;		/* INT_*: the requester's msg_id answered */
	u32 ssn;		/* receive-consuming messages only */
	u32 imm;
	u32 first_psn;
	u32 last_psn;
	u32 next_offset;	/* bytes already packetized */
	u32 resp_bytes;		/* READ/atomic: response bytes placed */
	u32 req_psn;		/* INT_*: PSN of the request (peer's space) */
	u8 packetized;		/* every packet has a PSN */
	u8 rnr_count;
	u8 resp_done;		/* READ/atomic: the whole response is placed */
};

struct mrc_rwqe {
	u64 wr_id;
	u32 length;
	u32 msg_len;		/* from the data header */
	u32 last_psn;		/* PSN of the LAST packet, once seen */
	u32 imm;
	u8 has_last;
	u8 opcode;		/* MRC_OP_RECV or MRC_OP_RECV_RDMA_WITH_IMM */
	u8 wc_flags;		/* MRC_WC_F_IMM */
};

/*
 * RoCEv2 responder resource of one READ or atomic (IBTA: the responder's
 * RDMA READ / atomic resources): what to (re)send for its PSN range.
 */
struct mrc_rsp {
	u64 va;			/* READ: address of first_psn's data */
	u64 orig;		/* atomic: the original value, sent again */
	u32 rkey;
	u32 length;		/* READ: bytes from first_psn on */
	u32 first_psn;
	u32 last_psn;
	u32 next_psn;		/* next response PSN to send */
	u32 issue_psn;		/* where the latest (re)issue started */
	u8 atomic;
	u8 pending;		/* next_psn..last_psn still to send */
};

struct mrc_path {
	u64 srtt_ns;
	u64 rttvar_ns;
	u64 latest_rtt_ns;
	u64 last_send_ns;	/* PTO is armed from the latest send */
	u64 recovery_start_ns;	/* latest loss reduction (MR-CC-002) */
	u64 loss_wnd_end_ns;	/* end of the current loss observation window */
	u64 next_probe_ns;	/* FAILED: next probe; pf: probe timeout */
	u64 probe_sent_ns;	/* latest PROBE sent on the path */
	u64 acked_sent_ns;	/* as mrc_conn's, of packets sent on the path */
	u64 ack_sample_sent_ns;	/* the ACK in hand: its RTT sample's send + 1 */
	u64 sampled_ns;		/* time of the latest RTT sample */
	u32 cwnd_q;		/* Q10 packets */
	u32 ssthresh;		/* packets */
	u32 in_flight;		/* packets INFLIGHT on this path */
	u32 next_seq;		/* path_seq of the next transmission */
	u32 largest_acked_seq;
	u32 pto_count;		/* consecutive PTOs without an ACK: backoff */
	u32 fail_ptos;		/* of which isolated ones (MR-FAIL-001) */
	u64 min_rtt_ns;		/* smallest RTT sample (MR-CC-006) */
	u64 delay_dec_ns;	/* no delay decrease before this time */
	u64 ecn_wnd_end_ns;	/* end of the current ECN observation window */
	u32 ecn_alpha_q;	/* DCTCP alpha, Q10 */
	u32 ecn_acks;		/* ACK echoes in the window */
	u32 ecn_ce;		/* of which CE echoes */
	u32 loss_acked;		/* packets acknowledged in the loss window */
	u32 loss_lost;		/* congestion losses declared in it */
	u32 reo_mult;		/* RACK reo_wnd in 1/8 RTT above 1/8 */
	u32 reo_persist;	/* losses since reo_mult last grew */
	u8 any_acked;		/* largest_acked_seq is valid */
	u8 has_rtt;
	u8 state;		/* enum mrc_path_state */
	u8 probe_due;
	u8 pf;			/* suspect (potentially failed): probed, no data */
	u8 probe_out;		/* pf: a PROBE is unanswered, due next_probe_ns */
	struct mrc_path_stats st;
};

struct mrc_conn {
	struct mrc_config cfg;
	struct mrc_callbacks cb;
	void *user;
	u8 in_error;

	/* ---- requester (sender) ---- */
	u32 snd_una;		/* oldest unacknowledged PSN */
	u32 snd_nxt;		/* next PSN to assign */
	u32 snd_tx;		/* ROCEV2: next PSN to (re)send */
	u32 lost_count;		/* packets in MRC_TXP_LOST */
	u32 next_msg_id;
	u32 next_ssn;
	u32 rr;			/* spraying cursor */
	u32 sq_head;		/* oldest incomplete WR */
	u32 sq_pkt;		/* first WR not fully packetized */
	u32 sq_tail;		/* next free slot */
	u32 sq_unpolled;	/* posted WRs whose completion is unpolled */
	u32 gbn_retries;	/* ROCEV2: timeouts without progress */
	u32 gbn_rnr_retries;
	u32 user_posted;	/* caller's send WRs ever posted */
	u32 rd_head;		/* READ/atomic WRs in progress: sq indexes */
	u32 rd_tail;
	u32 rd_sq[MRC_MAX_RD_ATOMIC];
	u32 resp_queued;	/* MetaRoCE responses in the send queue */
	u32 gbn_read_retry_psn;	/* ROCEV2: READ re-issued from this PSN */
	u8 gbn_read_retry;	/* gbn_read_retry_psn is valid */
	u64 loss_time_ns;	/* earliest time-threshold loss, or U64_MAX */
	/*
	 * sack_capped: the newest ACK with MR_MAX_SACK_RANGES ranges, all
	 * but the last two lowest first, then the one of the peer's newest
	 * arrival and the highest, ending at sack_top, may have left out
	 * what the peer holds from the end of the last lowest one
	 * (sack_gap_start) to the start of the highest (sack_gap_end), and
	 * no ACK has reported that span since (MR-LOSS-001).
	 */
	u32 sack_gap_start;
	u32 sack_gap_end;
	u32 sack_top;
	u8 sack_capped;
	u64 rnr_until_ns;	/* no data before this time */
	u64 gbn_timer_ns;	/* ROCEV2: retransmission deadline */
	u64 last_send_ns;	/* latest data transmission, any path */
	/*
	 * 1 + the latest transmission time of a packet the peer acknowledged
	 * (0: none): what was sent before it has been answered, on some
	 * path.  A path that times out on packets sent before it is alone in
	 * its silence (MR-LOSS-007).
	 */
	u64 acked_sent_ns;
	u8 last_send_path;
	u8 tlp_out;		/* a tail loss probe is unanswered */
	/*
	 * The tail probe's wait widened by tlp_mult / 2 srtt after probes
	 * that proved spurious (D-SACK), reset after MRC_REO_PERSIST probes
	 * without one (MR-LOSS-010).
	 */
	u8 tlp_mult;
	u8 tlp_persist;
	/*
	 * A timer (PTO, tail loss probe) asked for a retransmission: the
	 * next one may go where the window is full (RFC 9002 7.5, probes
	 * are not blocked by congestion control).  Losses declared after a
	 * flight was sent can leave it above the reduced cwnd: only an ACK
	 * makes room then, and only a packet sent can bring one.
	 */
	u8 probe_credit;
	/*
	 * MetaRoCE: waiting only for READ/atomic responses (MR-OPS-007):
	 * the current wait started here, after rsp_waits silent ones.
	 */
	u64 rsp_wait_start_ns;
	u32 rsp_waits;
	/*
	 * MR-FAIL-007: the give-up timer's current interval started here:
	 * at the latest progress (a newly acknowledged PSN, the end of an RNR
	 * wait, or the first send of own_unacked's packets after there was
	 * none), or at its last expiry; give_up_expiries counts the expiries
	 * since progress.  Only the packets of the caller's WRs run the timer:
	 * responses (MR-OPS-002) have no local ACK timeout.
	 */
	u64 progress_ns;
	u32 give_up_expiries;
	u32 own_unacked;	/* packets of caller WRs, unacknowledged */
	struct mrc_tx_pkt txw[MRC_MAX_WINDOW];
	struct mrc_swqe sq[MRC_SQ_RING];

	/* ---- responder (receiver) ---- */
	u32 rcv_nxt;		/* every PSN before this is received */
	u32 rcv_high;		/* one past the highest PSN received */
	u32 rq_head;
	u32 rq_tail;
	u32 rq_unpolled;
	u32 rq_base_ssn;	/* ssn matched by rq[rq_head] */
	u32 msn;		/* ROCEV2: completed inbound messages */
	u32 rx_offset;		/* ROCEV2: next byte of the current message */
	u32 rx_rkey;		/* ROCEV2: current WRITE */
	u64 rx_va;
	u32 rsp_head;		/* ROCEV2: responder resources, oldest */
	u32 rsp_tail;
	struct mrc_rsp rsp[MRC_MAX_RD_ATOMIC];
	u8 rx_in_msg;		/* ROCEV2: 0, or MRC_OP_SEND+1 / WRITE+1 */
	u8 nak_sent;		/* ROCEV2: sequence NAK outstanding */
	u8 rx_tail_ackreq;	/* PSN rcv_high - 1 asked for an ACK */
	u64 rxmap[MRC_MAX_WINDOW / 64];
	struct mrc_rwqe rq[MRC_MAX_RQ];

	/* pending acknowledgement */
	u8 ack_pending;
	u8 ack_now;
	u8 ack_path;		/* path the ACK leaves on */
	u8 ack_echo_path;
	u8 ack_syndrome;
	u8 ack_flags;		/* MR_ACK_F_* of the pending ACK */
	u8 ack_repeat;		/* send the pending ACK twice (MR-LOSS-012) */
	u8 last_ack_plain;	/* the last ACK sent was no NAK */
	u8 peer_ack_trailer;	/* the peer takes carried ACKs (MR-WIRE-010) */
	u8 ack_held;		/* the pending ACK waits for a reply (MR-LOSS-014) */
	u8 replying;		/* our data follows the peer's messages */
	u64 tail_rx_ns;		/* arrival + 1 of the latest complete tail */
	u32 ack_unacked;	/* packets since the last ACK */
	u32 ack_ts_echo;
	u32 ack_nak_psn;
	u32 ack_rx_psn;		/* the newest data packet placed */
	u64 ack_rx_ns;		/* arrival of the echoed packet */
	u64 ack_deadline_ns;
	/*
	 * PROBE_REPLYs owed, by the peer's path index the PROBE named (its
	 * echo): two of the peer's paths may arrive on one local path when
	 * the ends have different numbers of paths.
	 */
	u32 probe_reply_mask;
	u32 probe_reply_ts[MRC_MAX_PATHS];
	u8 probe_reply_path[MRC_MAX_PATHS];	/* local path it came on */

	/* completions, in RC order within each queue */
	u32 cq_head;
	u32 cq_tail;
	struct mrc_completion cq[MRC_MAX_SQ + MRC_MAX_RQ];

	struct mrc_path path[MRC_MAX_PATHS];
	struct mrc_conn_stats st;
};

static inline struct mrc_tx_pkt *mrc_txp(struct mrc_conn *c, u32 psn)
{
	return &c->txw[psn % MRC_MAX_WINDOW];
}

static inline u32 mrc_ts(u64 now)
{
	return (u32)(now >> MRC_TS_SHIFT);
}

static inline int mrc_rx_test(const struct mrc_conn *c, u32 psn)
{
	u32 i = psn % MRC_MAX_WINDOW;

	return (c->rxmap[i / 64] >> (i % 64)) & 1;
}

static inline void mrc_rx_set(struct mrc_conn *c, u32 psn, int on)
{
	u32 i = psn % MRC_MAX_WINDOW;

	if (on)
		c->rxmap[i / 64] |= 1ull << (i % 64);
	else
		c->rxmap[i / 64] &= ~(1ull << (i % 64));
}

/* conn.c: shared by both modes */
struct mrc_completion *mrc_push_cqe(struct mrc_conn *c, u64 wr_id, u32 len,
				    u8 opcode, u8 status);
struct mrc_swqe *mrc_rd_find_msg(struct mrc_conn *c, u32 msg_id);
struct mrc_swqe *mrc_rd_find_psn(struct mrc_conn *c, u32 psn);
struct mrc_swqe *mrc_rd_oldest(struct mrc_conn *c);
int mrc_place_response(struct mrc_conn *c, struct mrc_swqe *w, u32 off,
		       const u8 *src, u32 len);
int mrc_queue_response(struct mrc_conn *c, u32 opcode, u32 msg_id,
		       u32 rkey, u64 raddr, u32 len, u64 orig, u32 req_psn);
/* What a responder-side failure is answered with (MR-OPS-006). */
enum mrc_rerr {
	MRC_RERR_ACCESS,	/* bad rkey, range or access rights */
	MRC_RERR_INV_REQ,	/* unsupported or misaligned request */
	MRC_RERR_OP,		/* the operation failed otherwise */
};
int mrc_rerr_kind(int err);
void mrc_adopt_local_psn(struct mrc_conn *c, u32 psn);
int mrc_check_read(struct mrc_conn *c, u32 rkey, u64 raddr, u32 len);
int mrc_do_atomic(struct mrc_conn *c, u32 op, u32 rkey, u64 raddr,
		  u64 compare_add, u64 swap, u64 *orig);
void mrc_conn_fail(struct mrc_conn *c, u8 send_status, u8 recv_status);
void mrc_complete_sends(struct mrc_conn *c);
void mrc_complete_recvs(struct mrc_conn *c);
int mrc_packetize(struct mrc_conn *c, u32 *psn_out);
int mrc_finish_packet(u8 *buf, size_t len, size_t cap);
int mrc_check_crc(const u8 *pkt, size_t len);
int mrc_finish_conn_packet(const struct mrc_conn *c, u8 *buf, size_t len,
			   size_t cap);
void mrc_schedule_ack(struct mrc_conn *c, unsigned int path, int now_flag,
		      u64 now);
void mrc_schedule_final_ack(struct mrc_conn *c, unsigned int path, u64 now);
void mrc_ack_sent(struct mrc_conn *c, unsigned int path);
void mrc_ack_cleared(struct mrc_conn *c);

/* metaroce.c */
int mrc_mr_recv(struct mrc_conn *c, const u8 *p, size_t len,
		unsigned int path, unsigned int rx_flags, u64 now);
int mrc_mr_next(struct mrc_conn *c, u8 *buf, size_t cap, unsigned int *path,
		u64 now);
/* Deadlines of the mode's own timers; mrc_next_deadline() adds the shared ones. */
u64 mrc_mr_deadline(const struct mrc_conn *c);
void mrc_mr_timeout(struct mrc_conn *c, u64 now);
void mrc_mr_path_down(struct mrc_conn *c, struct mrc_path *p, u64 now);
void mrc_mr_path_init(struct mrc_conn *c, struct mrc_path *p);

/* rocev2.c */
int mrc_gbn_recv(struct mrc_conn *c, const u8 *p, size_t len, u64 now);
int mrc_gbn_next(struct mrc_conn *c, u8 *buf, size_t cap, unsigned int *path,
		 u64 now);
u64 mrc_gbn_deadline(const struct mrc_conn *c);
void mrc_gbn_timeout(struct mrc_conn *c, u64 now);

#endif /* MRC_INTERNAL_H */
