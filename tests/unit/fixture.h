/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * In-process two-endpoint fixture for the sans-IO core: two connections
 * joined by a simulated multipath network with seeded loss, reordering,
 * duplication, corruption and path death, and payload memory that lets
 * every placed byte be checked.
 */
#ifndef MRC_TEST_FIXTURE_H
#define MRC_TEST_FIXTURE_H

#include <stdint.h>
#include <stddef.h>
#include <metaroce/core.h>

#define FX_MAX_MSGS	256
#define FX_MAX_MSG_LEN	2048
#define FX_MTU		256
#define FX_PKT_CAP	MRC_MAX_PKT_LEN(FX_MTU)
#define FX_MAX_QUEUED	8192
#define FX_RKEY		0x1234
/* Atomic targets: the peer's message i works on the u64 at slot i. */
#define FX_ATOMIC_BASE	0x10000000ull

struct fx_net_cfg {
	uint32_t loss_ppm;	/* per packet, parts per million */
	uint32_t dup_ppm;
	uint32_t corrupt_ppm;	/* bit flip or truncation */
	uint64_t base_delay_ns;
	uint64_t jitter_ns;	/* uniform extra delay: reordering */
	int kill_paths;		/* kill some (never all) paths mid-run */
	int fifo_paths;		/* jitter never reorders within a path */
	int all_opcodes;	/* messages of every opcode, not SEND/WRITE */
	/*
	 * Host stalls (a descheduled guest): each endpoint is frozen for
	 * stall_ns once every stall_period_ns, B half a period after A.  A
	 * frozen endpoint runs nothing: its timers wait, the packets that
	 * reach it queue, its application neither posts nor polls.  When
	 * it resumes its overdue timers run before it reads those packets,
	 * the worst order (a guest's timer interrupt before its NIC's).
	 */
	uint64_t stall_ns;
	uint64_t stall_period_ns;
};

enum { FX_PING = 1, FX_PONG };

struct fx_msg {
	uint32_t opcode;
	uint32_t len;
	uint32_t placed;	/* bytes placed (READ/atomic: at the requester) */
	int done_tx, done_rx;
	uint64_t compare_add, swap;	/* atomics */
	uint64_t result;	/* atomics: original value returned */
};

struct fx_ep {
	struct mrc_conn *conn;
	struct fx_ep *peer;
	int id;
	uint64_t seed;
	/* messages this endpoint sends */
	struct fx_msg msgs[FX_MAX_MSGS];
	unsigned int nmsgs, posted, tx_done;
	unsigned int nsends;	/* SEND messages among msgs */
	/* receive side: the peer's SENDs land in rbuf[recv index] */
	uint8_t rbuf[FX_MAX_MSGS][FX_MAX_MSG_LEN];
	unsigned int recv_posted, recv_done;
	uint32_t send_of_recv[FX_MAX_MSGS];	/* peer msg index per recv */
	/* WRITE target memory: peer msg i lands at i * FX_MAX_MSG_LEN */
	uint8_t wmem[FX_MAX_MSGS * FX_MAX_MSG_LEN];
	/* READ results: own msg i lands in lbuf[i] */
	uint8_t lbuf[FX_MAX_MSGS][FX_MAX_MSG_LEN];
	/* atomic targets of the peer's messages, and how often each ran */
	uint64_t amem[FX_MAX_MSGS];
	unsigned int aexec[FX_MAX_MSGS];
	unsigned int recv_window;	/* receives kept posted ahead */
	/*
	 * ibv_rc_pingpong's loop: message i is posted only once i messages
	 * of ours completed and i (FX_PING, the client) or i + 1 (FX_PONG,
	 * the server) of the peer's arrived.  0: everything at once.
	 */
	int pingpong;
	uint64_t err_at_ns;	/* fx_run: time of the first error status */
	int failures;		/* assertion-style failures recorded */
	int nstatus_err;	/* completions with an error status */
	uint8_t first_err_status;
};

struct fx {
	struct fx_ep a, b;
	struct mrc_config cfg;
	struct fx_net_cfg net;
	uint64_t rng;
	uint64_t now;
	uint64_t trace_hash;
	uint64_t pkts_sent, corrupted_delivered, corrupt_rejected;
	uint64_t path_dead_mask;	/* bit per path: drops everything */
	/* per endpoint id, bit per path: drops what that endpoint sends */
	uint64_t egress_dead_mask[2];
	uint64_t kill_at_ns, revive_at_ns;
	uint64_t kill_mask;	/* nonzero: paths killed at kill_at_ns */
	uint64_t last_at[2][MRC_MAX_PATHS];
	/*
	 * Optional: sees every datagram an endpoint sends, as sent (before
	 * loss or corruption), like a capture at the sender.  Set it after
	 * fx_init(), which clears it.
	 */
	void (*tap)(struct fx *f, const struct fx_ep *src, const uint8_t *p,
		    unsigned int len, unsigned int path);
	void *tap_user;
	unsigned int nqueued;
	uint64_t seq;
	struct fx_pkt {
		uint64_t at, seq;
		struct fx_ep *dst;
		unsigned int path;
		unsigned int len;
		int corrupted;
		uint8_t data[FX_PKT_CAP];
	} q[FX_MAX_QUEUED];
};

uint64_t fx_rand(uint64_t *s);
uint8_t fx_byte(uint64_t seed, int ep, unsigned int msg, uint32_t off);
/* Bytes a READ of the peer's message msg finds at responder e. */
uint8_t fx_read_byte(const struct fx_ep *responder, unsigned int msg,
		     uint32_t off);
uint64_t fx_atomic_init(const struct fx_ep *responder, unsigned int slot);
uint32_t fx_imm(const struct fx_ep *sender, unsigned int msg);
/* A message that consumes a receive WR at the peer. */
int fx_consumes_recv(uint32_t opcode);

/* Set up both endpoints; cfg gives mode/paths/window (QPNs/PSNs filled in). */
void fx_init(struct fx *f, const struct mrc_config *cfg,
	     const struct fx_net_cfg *net, uint64_t seed,
	     unsigned int msgs_a, unsigned int msgs_b);

/* Run until every message completed or limit_ns passes; 0 on success. */
int fx_run(struct fx *f, uint64_t limit_ns);

/* Recompute SEND/receive matching after editing msgs[] by hand. */
void fx_prepare(struct fx *f);
/* Post pending sends and receives / drain and check completions. */
void fx_post(struct fx *f, struct fx_ep *e);
void fx_poll(struct fx_ep *e);

/* Check payloads and accounting after fx_run(); 0 on success. */
int fx_verify(struct fx *f);

extern const struct mrc_callbacks fx_callbacks;

#endif
