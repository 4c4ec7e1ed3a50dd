/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * MetaRoCE sans-IO transport core: public API.
 *
 * The core is a pure, deterministic state machine for one reliable
 * connection (one RC QP pair).  It owns no sockets, clocks, threads, locks
 * or heap.  The caller:
 *
 *   - allocates mrc_conn_size() bytes (8-byte aligned, contents arbitrary)
 *     and calls mrc_conn_init() on them;
 *   - feeds every received UDP payload to mrc_recv_packet() (or, to pass
 *     the IP header's ECN codepoint, mrc_recv_packet_ex()) together with
 *     the path it arrived on and the current time;
 *   - posts work with mrc_post_send() / mrc_post_recv();
 *   - pulls packets with mrc_next_packet() until it returns 0, and sends
 *     each as the payload of a UDP datagram on the path it names;
 *   - arms a timer for mrc_next_deadline() and calls mrc_handle_timeout()
 *     when it fires (calling it early, or late, or with a time older than
 *     a previous call's, is harmless);
 *   - drains completions with mrc_poll_completion() after any of these
 *     calls: each can complete work, mrc_next_packet() included (a
 *     retransmission past retry_cnt fails the connection while it builds
 *     packets, and a connection in error names no deadline to come back
 *     for its completions).
 *
 * Time is a monotonic u64 in nanoseconds supplied by the caller; the same
 * sequence of calls with the same arguments produces the same packets.
 *
 * A "path" is an index 0..num_paths-1 that the caller maps to a (plane,
 * UDP source port / entropy) pair; see docs/spec (MR-PATH-*).  The path
 * passed to mrc_recv_packet() is where the datagram arrived; the core only
 * uses it to return ACKs and probe replies the same way.
 *
 * Payload bytes never pass through core-owned memory for long: when building
 * a data packet the core asks cb->read_payload() for the bytes, and when a
 * data packet is accepted it hands the bytes to cb->place_send() or
 * cb->place_write() at their final offset, in any order (MR-ORDER-*).
 *
 * All functions return 0 or a positive length on success and a negative
 * errno on failure.  Nothing here sleeps; none of the functions is
 * re-entrant for the same conn (callbacks must not call back into it).
 *
 * The same code serves two wire modes selected per connection:
 * MRC_MODE_METAROCE (multipath, SACK, selective retransmission) and
 * MRC_MODE_ROCEV2 (IBTA RC: BTH/RETH/AETH, one path, go-back-N).
 */
#ifndef METAROCE_CORE_H
#define METAROCE_CORE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Compile-time capacities: they size struct mrc_conn. */
#define MRC_MAX_PATHS		16	/* paths (planes x entropies) */
#define MRC_MAX_WINDOW		512	/* packets in flight / receive window */
#define MRC_MAX_SQ		128	/* outstanding send WRs */
#define MRC_MAX_RQ		128	/* posted receive WRs */
#define MRC_MAX_RD_ATOMIC	16	/* requester: READ/atomic WRs in progress */
#define MRC_MAX_RESP		32	/* responder: READ/atomic responses queued */
#define MRC_MIN_MTU		256
#define MRC_MAX_MTU		4096

/*
 * Largest datagram payload mrc_next_packet() can produce for a given MTU
 * (payload bytes per packet): headers + payload + 4-byte trailer (CRC32C,
 * or in RoCEv2 mode with MRC_CFG_CALLER_ICRC the ICRC slot).
 * A buffer of MRC_MAX_PKT_LEN(cfg.mtu) bytes is always large enough.
 */
#define MRC_MAX_HDR_LEN		176
#define MRC_MAX_PKT_LEN(mtu)	((mtu) + MRC_MAX_HDR_LEN)

enum mrc_mode {
	MRC_MODE_METAROCE = 0,	/* multipath, SACK, selective retransmit */
	MRC_MODE_ROCEV2 = 1,	/* IBTA RC on the wire, go-back-N */
};

/* Work request / completion opcodes. */
enum mrc_opcode {
	MRC_OP_SEND = 0,
	MRC_OP_RDMA_WRITE = 1,
	MRC_OP_RECV = 2,	/* completions only */
	MRC_OP_SEND_WITH_IMM = 3,	/* consumes a receive WR */
	MRC_OP_RDMA_WRITE_WITH_IMM = 4,	/* consumes a receive WR */
	MRC_OP_RDMA_READ = 5,
	MRC_OP_ATOMIC_CMP_AND_SWP = 6,
	MRC_OP_ATOMIC_FETCH_AND_ADD = 7,
	MRC_OP_RECV_RDMA_WITH_IMM = 8,	/* completions only */
};

/* Completion status; values equal enum ibv_wc_status. */
enum mrc_wc_status {
	MRC_WC_SUCCESS = 0,
	MRC_WC_LOC_LEN_ERR = 1,
	MRC_WC_LOC_PROT_ERR = 4,	/* place_read refused READ/atomic data */
	MRC_WC_WR_FLUSH_ERR = 5,
	MRC_WC_REM_INV_REQ_ERR = 9,
	MRC_WC_REM_ACCESS_ERR = 10,
	MRC_WC_REM_OP_ERR = 11,	/* responder failed an operation it accepted */
	MRC_WC_RETRY_EXC_ERR = 12,
	MRC_WC_RNR_RETRY_EXC_ERR = 13,
};

enum mrc_path_state {
	MRC_PATH_UP = 0,	/* usable, carries data */
	MRC_PATH_FAILED = 1,	/* declared dead by timeouts; probed */
	MRC_PATH_ADMIN_DOWN = 2,	/* disabled by mrc_path_set_state() */
};

/* struct mrc_config.cc_flags: congestion signals a path window reacts to. */
#define MRC_CC_ECN		0x1	/* ECN echoes, DCTCP-like (MR-CC-005) */
#define MRC_CC_DELAY		0x2	/* RTT above target (MR-CC-006) */
#define MRC_CC_LOSS_SHARE	0x4	/* loss shrinks by its share (MR-CC-002) */
#define MRC_CC_LOSS_GATE	0x8	/* only a loss with a queue (MR-CC-007) */

/*
 * struct mrc_config.flags.  MRC_CFG_CALLER_ICRC (MRC_MODE_ROCEV2 only,
 * MR-COMPAT-012): the packet's 4-byte trailer is the IBTA ICRC, which
 * covers the IP and UDP headers the core never sees, so the caller owns
 * it: mrc_next_packet() leaves the slot zeroed for the caller to fill
 * once the packet is encapsulated, and mrc_recv_packet_ex() takes a
 * packet only with MRC_RX_ICRC_OK (the caller checked it).  Without the
 * flag the core writes and checks a CRC32C in that slot, a stand-in for
 * callers that have no IP header (simulator, unit tests).
 */
#define MRC_CFG_CALLER_ICRC	0x1

/* mrc_recv_packet_ex() flags: what the IP layer knew about the datagram. */
#define MRC_RX_CE		0x1	/* IP ECN field was CE (0b11) */
#define MRC_RX_ICRC_OK		0x2	/* caller verified the ICRC trailer */

struct mrc_config {
	uint32_t mode;		/* enum mrc_mode */
	uint32_t local_qpn;	/* 24 bit */
	uint32_t remote_qpn;	/* 24 bit */
	uint32_t mtu;		/* payload bytes per packet */
	uint32_t num_paths;	/* 1..MRC_MAX_PATHS; ROCEV2 uses path 0 */
	uint32_t window;	/* max packets in flight (BDP cap) */
	uint32_t local_psn;	/* first PSN we send (24 bit) */
	uint32_t remote_psn;	/* first PSN the peer sends (24 bit) */
	uint32_t retry_cnt;	/* resends per packet before RETRY_EXC */
	uint32_t rnr_retry;	/* RNR retries per message, 7 = infinite */
	uint32_t path_fail_ptos; /* consecutive PTOs that fail a path */
	uint32_t init_cwnd;	/* initial window, packets, shared by the paths */
	uint32_t max_cwnd;	/* per-path window cap, packets, <= MRC_MAX_WINDOW */
	uint32_t ack_every;	/* ACK after this many in-order packets */
	uint64_t initial_rtt_ns; /* RTT assumed before the first sample */
	uint64_t granularity_ns; /* timer granularity (PTO floor term) */
	uint64_t max_ack_delay_ns; /* receiver's delayed-ACK bound */
	uint64_t probe_interval_ns; /* probe period of a failed path */
	uint64_t rnr_timer_ns;	/* wait after an RNR NAK */
	uint64_t rto_ns;	/* IBTA local ACK timeout: ROCEV2 mode's fixed
				 * retransmission timeout; METAROCE mode gives
				 * up after retry_cnt + 1 of it without
				 * progress (MR-FAIL-007) */
	/* Added after the first release: zero means "off". */
	uint32_t cc_flags;	/* MRC_CC_*; default MRC_CC_ECN */
	uint32_t flags;		/* MRC_CFG_* */
	uint64_t target_delay_ns; /* MRC_CC_DELAY, MRC_CC_LOSS_GATE: queueing
				   * delay target */
	/*
	 * IBTA max_rd_atomic: READ/atomic WRs the requester has in progress
	 * at once, at most MRC_MAX_RD_ATOMIC (0: MRC_MAX_RD_ATOMIC).  The
	 * peer's responder resources: more would be dropped there.
	 */
	uint32_t max_rd_atomic;
	uint32_t reserved1;	/* must be 0 */
	/*
	 * MR-LOSS-014: how long the ACK of a message's last packet may wait
	 * for a data packet of ours to carry it (MR-WIRE-010), while we answer
	 * the peer's messages and it takes carried ACKs; 0 sends it at once.
	 * The timers that wait for the peer's ACKs allow the larger of it and
	 * max_ack_delay_ns (which still bounds every other delayed ACK): set
	 * both ends alike.  MetaRoCE mode only.
	 */
	uint64_t final_ack_hold_ns;
};

/* Callbacks into the owner of the payload memory.  Return 0 or -errno. */
struct mrc_callbacks {
	/* Copy len bytes of send WR wr_id, starting at offset, into dst. */
	int (*read_payload)(void *user, uint64_t wr_id, uint32_t offset,
			    void *dst, uint32_t len);
	/*
	 * Place len received bytes of an incoming SEND at offset of the
	 * receive WR recv_wr_id (bounds already checked against its length).
	 */
	int (*place_send)(void *user, uint64_t recv_wr_id, uint32_t offset,
			  const void *src, uint32_t len);
	/*
	 * Place len bytes of an incoming RDMA WRITE at remote address raddr
	 * under rkey.  The caller validates rkey/range; an error makes the
	 * core answer with a remote access NAK.
	 */
	int (*place_write)(void *user, uint32_t rkey, uint64_t raddr,
			   const void *src, uint32_t len);

	/*
	 * Optional (MR-OPS-*): a connection without them answers READ and
	 * atomic requests with an invalid-request NAK, and refuses to post
	 * READ/atomic WRs (-EOPNOTSUPP).
	 *
	 * Responder: copy len bytes at raddr under rkey into dst for a READ
	 * response.  Called once with dst NULL when the request is accepted,
	 * to check rkey, range and remote-read access of the whole request
	 * (nothing copied), then per response packet.  -EACCES/-EFAULT/
	 * -EINVAL mean a remote access error, anything else a remote
	 * operational error.
	 */
	int (*read_remote)(void *user, uint32_t rkey, uint64_t raddr,
			   void *dst, uint32_t len);
	/*
	 * Requester: place len bytes of READ response data at offset of the
	 * local buffer of send WR wr_id; for an atomic, the 8-byte original
	 * value (host byte order) at offset 0.  An error completes the WR with
	 * MRC_WC_LOC_PROT_ERR.
	 */
	int (*place_read)(void *user, uint64_t wr_id, uint32_t offset,
			  const void *src, uint32_t len);
	/*
	 * Responder: perform atomic opcode (MRC_OP_ATOMIC_*) on the 8 bytes
	 * at raddr (8-byte aligned, checked by the core) under rkey, as one
	 * indivisible step, and store the original value in *orig.  Called
	 * exactly once per accepted request.  Errors as read_remote; on an
	 * error memory must be left untouched.
	 */
	int (*atomic)(void *user, uint32_t opcode, uint32_t rkey,
		      uint64_t raddr, uint64_t compare_add, uint64_t swap,
		      uint64_t *orig);
};

struct mrc_send_wr {
	uint64_t wr_id;
	uint32_t opcode;	/* enum mrc_opcode, not RECV* */
	uint32_t length;	/* bytes (SEND/WRITE payload from read_payload(),
				 * READ length); atomics: 8 */
	uint32_t rkey;		/* WRITE, READ, atomics */
	uint64_t remote_addr;	/* WRITE, READ, atomics (8-byte aligned) */
	/* Added with MR-OPS-*: zero for SEND/RDMA_WRITE. */
	uint32_t imm_data;	/* *_WITH_IMM: delivered in the peer's CQE */
	uint32_t reserved;	/* must be 0 */
	uint64_t compare_add;	/* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
	uint64_t swap;		/* CMP_AND_SWP only */
};

/* struct mrc_completion.wc_flags, values equal enum ibv_wc_flags. */
#define MRC_WC_F_IMM		0x2	/* imm_data is valid */

struct mrc_completion {
	uint64_t wr_id;
	uint32_t byte_len;	/* RECV*: bytes received; others: WR length */
	uint8_t opcode;		/* enum mrc_opcode */
	uint8_t status;		/* enum mrc_wc_status */
	uint8_t wc_flags;	/* MRC_WC_F_* */
	uint8_t reserved;
	uint32_t imm_data;	/* with MRC_WC_F_IMM */
};

struct mrc_path_stats {
	uint64_t tx_data;	/* data packets sent (incl. retransmissions) */
	uint64_t tx_retrans;	/* of which retransmissions */
	uint64_t tx_ctrl;	/* ACK/NAK/probe packets sent */
	uint64_t rx_packets;	/* valid packets received */
	uint64_t lost;		/* packets declared lost on this path */
	uint64_t ptos;		/* probe timeouts */
	uint64_t ecn_marks;	/* acked packets that were CE-marked */
	uint64_t srtt_ns;
	uint64_t rttvar_ns;
	uint32_t cwnd;		/* packets */
	uint32_t in_flight;	/* packets */
	uint32_t state;		/* enum mrc_path_state */
	uint32_t ecn_alpha;	/* DCTCP alpha, 1/1024 units */
	uint64_t spurious_retrans; /* lost here, later reported duplicate */
	uint64_t ecn_decreases;	/* window reductions for ECN */
	uint64_t delay_decreases; /* window reductions for delay */
	uint64_t min_rtt_ns;	/* smallest RTT sample, 0 before one */
	uint32_t reo_wnd_mult;	/* RACK reordering window, 1/8 RTT units */
	uint32_t reserved;
	uint64_t failures;	/* declared failed (MR-FAIL-001) */
	uint64_t recoveries;	/* re-admitted after a failure (MR-FAIL-005) */
	/*
	 * The path's shares of the connection's counters of the same names
	 * (they add up to them): ACKs with SACK ranges sent / accepted on
	 * it, data accepted on it past a hole, duplicates that arrived on it.
	 */
	uint64_t sacks_sent;
	uint64_t sacks_received;
	uint64_t rx_out_of_order;
	uint64_t rx_dup;
	uint64_t loss_decreases;	/* window reductions for loss (MR-CC-002) */
	/* found silent by acknowledgements on other paths (MR-LOSS-013) */
	uint64_t silences;
	/* losses that met no queue and changed no window (MR-CC-007) */
	uint64_t losses_unqueued;
};

struct mrc_conn_stats {
	uint64_t tx_data;	/* data packets sent, all paths */
	uint64_t tx_retrans;
	uint64_t tx_ctrl;
	uint64_t rx_data;	/* data packets accepted (first copy) */
	uint64_t rx_dup;	/* duplicate data packets suppressed */
	uint64_t rx_ctrl;	/* ACK/NAK/probe packets accepted */
	uint64_t rx_bad_crc;	/* dropped: integrity check failed */
	uint64_t rx_malformed;	/* dropped: bad length/version/opcode */
	uint64_t rx_wrong_qpn;	/* dropped: not for this QP */
	uint64_t rx_out_of_window; /* dropped: PSN beyond receive window */
	uint64_t rx_no_recv_wr;	/* SEND dropped: no receive posted (RNR) */
	uint64_t rx_place_err;	/* callback refused placement */
	uint64_t seq_naks;	/* ROCEV2: sequence-error NAKs sent */
	uint64_t msgs_sent;	/* send WRs completed successfully */
	uint64_t msgs_received;	/* receive WRs completed successfully */
	uint64_t bytes_sent;	/* bytes of completed send WRs */
	uint64_t bytes_received; /* bytes of completed receive WRs */
	uint32_t in_error;	/* 1 once the QP entered the error state */
	uint64_t rx_ce;		/* data packets received CE-marked */
	uint64_t ecn_echoes;	/* ACKs echoing a CE mark (all paths) */
	uint64_t spurious_retrans; /* retransmissions the peer reported dup */
	uint64_t tlp_probes;	/* tail loss probes sent (MR-LOSS-010) */
	uint64_t retrans_uncharged; /* lost on a failing path: not retry_cnt */
	uint64_t rx_no_resp_slot; /* READ/atomic dropped: responses queue full */
	uint64_t atomics_executed; /* responder: atomic callbacks run */
	uint64_t reads_answered; /* responder: READ requests accepted */
	uint64_t rx_out_of_order; /* data packets accepted past a hole */
	uint64_t sacks_sent;	/* ACKs sent carrying SACK ranges */
	uint64_t sacks_received; /* ACKs accepted carrying SACK ranges */
	uint64_t path_failures;	/* paths declared failed, all paths */
	uint64_t path_recoveries; /* failed paths re-admitted, all paths */
	uint64_t give_ups;	/* RETRY_EXC by the give-up bound (MR-FAIL-007) */
	uint64_t retry_exhausted; /* RETRY_EXC by a packet's retry_cnt (MR-LOSS-009) */
	uint64_t rsp_wait_give_ups; /* RETRY_EXC waiting for a response (MR-OPS-007) */
	uint64_t acks_carried;	/* ACKs sent as a data packet's trailer */
	uint64_t rx_acks_carried; /* ACK trailers accepted (MR-WIRE-010) */
};

struct mrc_conn;

/* Fill cfg with defaults for mode (QPNs/PSNs zero: set them). */
void mrc_config_default(struct mrc_config *cfg, enum mrc_mode mode);

/* Bytes the caller must allocate for one connection. */
size_t mrc_conn_size(void);

/* -EINVAL if cfg is out of range or a callback is missing. */
int mrc_conn_init(struct mrc_conn *conn, const struct mrc_config *cfg,
		  const struct mrc_callbacks *cb, void *user, uint64_t now);

/*
 * -ENOSPC: send queue full; -EINVAL: bad WR (unknown opcode, reserved
 * set, atomic length not 8); -EOPNOTSUPP: READ/atomic without the
 * optional callbacks; -EIO: QP in error.
 */
int mrc_post_send(struct mrc_conn *conn, const struct mrc_send_wr *wr,
		  uint64_t now);

/* -ENOSPC: receive queue full; -EIO: QP in error. */
/*
 * Take the requester's attributes of cfg (local_psn, retry_cnt, rnr_retry,
 * rto_ns, max_rd_atomic) after mrc_conn_init() but before any send WR is posted: a verbs
 * QP is a responder from RTR on and learns these only at RTR->RTS.  The
 * other fields of cfg are ignored.  -EBUSY once a send WR was posted,
 * -EINVAL if the result is not a valid configuration.
 */
int mrc_conn_set_requester(struct mrc_conn *conn, const struct mrc_config *cfg);

int mrc_post_recv(struct mrc_conn *conn, uint64_t wr_id, uint32_t length);

/*
 * Process one received datagram payload.  Invalid packets are counted in
 * struct mrc_conn_stats and dropped: -EBADMSG (CRC), -EPROTO (malformed),
 * -ENXIO (wrong QPN), -ERANGE (outside the window).  Duplicates return 0.
 */
int mrc_recv_packet(struct mrc_conn *conn, const void *pkt, size_t len,
		    unsigned int path, uint64_t now);

/*
 * mrc_recv_packet() with what the IP layer knows: flags has MRC_RX_CE when
 * the datagram's IP header (or the simulator's queue disc) carried ECN CE,
 * MRC_RX_ICRC_OK when the caller checked its ICRC (see MRC_CFG_CALLER_ICRC;
 * a connection with that flag drops a packet without it as a bad CRC).
 * -EINVAL for unknown flag bits and for MRC_RX_ICRC_OK on a connection
 * without MRC_CFG_CALLER_ICRC.  mrc_recv_packet() is flags = 0.
 */
int mrc_recv_packet_ex(struct mrc_conn *conn, const void *pkt, size_t len,
		       unsigned int path, unsigned int flags, uint64_t now);

/*
 * Build the next packet to send into buf.  Returns its length and sets
 * *path, 0 if nothing may be sent now, -ENOBUFS if cap is too small
 * (use MRC_MAX_PKT_LEN(mtu)), or an error from read_payload().
 */
int mrc_next_packet(struct mrc_conn *conn, void *buf, size_t cap,
		    unsigned int *path, uint64_t now);

/*
 * Earliest time mrc_handle_timeout() has work; UINT64_MAX if none.  The
 * result may be at or before the current time (a timer already overdue,
 * or a packet owed at once, such as an ACK while in error): the caller
 * then calls mrc_handle_timeout() and mrc_next_packet() immediately.
 * A deadline still at or before the time of the mrc_handle_timeout() call
 * just made means only mrc_next_packet() has work (MR-CONN-007).
 */
uint64_t mrc_next_deadline(const struct mrc_conn *conn);

/*
 * Run timers that expired at or before now.  A now older than earlier
 * calls (a stale timer event) runs nothing that is not yet due at now.
 */
void mrc_handle_timeout(struct mrc_conn *conn, uint64_t now);

/*
 * The owner destroys the QP, resets it or moves it to the error state:
 * the connection enters the error state (its WRs complete with
 * MRC_WC_WR_FLUSH_ERR) and owes the peer its last word, the latest ACK
 * once more (MR-LOSS-012).  The caller sends what mrc_next_packet()
 * returns, then may free the connection.
 */
void mrc_conn_close(struct mrc_conn *conn);

/* Returns 1 and fills out, or 0 if no completion is pending. */
int mrc_poll_completion(struct mrc_conn *conn, struct mrc_completion *out);

/*
 * Administrative path control (e.g. a plane known to be down).  up=0 stops
 * all use of the path and retransmits its in-flight packets elsewhere;
 * up=1 readmits it.  -EINVAL for a bad path index.
 */
int mrc_path_set_state(struct mrc_conn *conn, unsigned int path, int up,
		       uint64_t now);

void mrc_get_stats(const struct mrc_conn *conn, struct mrc_conn_stats *out);
int mrc_get_path_stats(const struct mrc_conn *conn, unsigned int path,
		       struct mrc_path_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* METAROCE_CORE_H */
