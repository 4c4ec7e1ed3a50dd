/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Two connected sans-IO cores for the fuzz harnesses and their seed
 * generator: small payload memories whose every byte is predictable, a
 * packet queue the harness delivers, drops, duplicates, reorders or forges,
 * and callbacks that check the core's side of the contract of
 * include/metaroce/core.h on every call (fw_fail() aborts, which libFuzzer
 * reports as a crash).
 *
 * A world is "forged" once a packet the cores did not produce but that
 * passes the CRC check was delivered: from then on only the checks that
 * hold for any input stay on (memory bounds, each WR completed at most
 * once and in order, nothing placed into a completed receive, an atomic
 * slot never run twice for one request); payload contents and liveness
 * are checked only for worlds of genuine packets.
 */
#ifndef METAROCE_FUZZ_WORLD_H
#define METAROCE_FUZZ_WORLD_H

#include <stddef.h>
#include <stdint.h>
#include <metaroce/core.h>

#define FW_MSGS		16	/* send WRs per side, receives per side */
#define FW_MSG_LEN	1024	/* largest message; a receive's length */
#define FW_MTU		256
#define FW_PKT_CAP	MRC_MAX_PKT_LEN(FW_MTU)
#define FW_QUEUE	64	/* packets in the network; more are dropped */
#define FW_RKEY		0x5a5a5au
#define FW_PATHS	4	/* MetaRoCE mode */
/* Atomic targets: the peer's message i works on the u64 at slot i. */
#define FW_ATOMIC_BASE	0x100000ull
#define FW_QPN_A	0x000011u
#define FW_QPN_B	0x000022u
#define FW_PSN_A	0xfffff0u	/* A's PSNs wrap at once (MR-CONN-003) */
#define FW_PSN_B	0x012345u

struct fw_msg {
	uint32_t opcode;	/* enum mrc_opcode */
	uint32_t len;
	uint32_t recv;		/* consumes the peer's receive number recv */
	uint32_t placed;	/* bytes placed (at the peer, or READ here) */
	uint64_t compare_add, swap;
	uint64_t result;	/* atomics: value returned */
	uint8_t status;		/* completion status, once done */
	uint8_t done;
};

struct fw_ep {
	struct mrc_conn *conn;
	struct fw_ep *peer;
	struct fw_world *w;
	int id;			/* 0 = A, 1 = B */
	struct fw_msg msgs[FW_MSGS];
	unsigned int nmsgs, tx_done, nconsuming;
	/* receives: the peer's consuming message recv_msg[r] lands in r */
	unsigned int recv_posted, recv_done;
	unsigned int recv_msg[FW_MSGS];
	uint32_t recv_placed[FW_MSGS];
	uint8_t rbuf[FW_MSGS][FW_MSG_LEN];
	/* the one MR (rkey FW_RKEY): the peer's WRITE i lands at i * LEN */
	uint8_t wmem[FW_MSGS * FW_MSG_LEN];
	uint8_t lbuf[FW_MSGS][FW_MSG_LEN];	/* READ results of own msgs */
	uint64_t amem[FW_MSGS];
	unsigned int aexec[FW_MSGS];
	unsigned int errors;	/* completions with an error status */
};

struct fw_world;

struct fw_pkt {
	struct fw_ep *dst;
	unsigned int path;
	unsigned int len;
	int forged;
	uint8_t data[FW_PKT_CAP];
};

/* Called with every packet a core produced (seed generator). */
typedef void (*fw_tap_fn)(struct fw_world *w, const struct fw_pkt *p);

struct fw_world {
	struct fw_ep a, b;
	struct mrc_config cfg;
	uint64_t now;
	int forged;		/* a forged packet was delivered */
	int timers_left;	/* fw_finish() stopped with timers armed */
	fw_tap_fn tap;
	/* the network: fw_queued(w, 0..nq-1), oldest first */
	unsigned int nq;
	uint8_t order[FW_QUEUE];	/* slot of the i-th queued packet */
	uint8_t free_slot[FW_QUEUE];	/* FW_QUEUE - nq unused slots */
	struct fw_pkt slot[FW_QUEUE];
};

/* Bytes of message msg of endpoint ep at off (SEND/WRITE payload). */
uint8_t fw_byte(int ep, unsigned int msg, uint32_t off);
/* Bytes a READ finds at off of the responder's MR. */
uint8_t fw_read_byte(int responder, uint64_t off);
uint64_t fw_atomic_init(int responder, unsigned int slot);
uint32_t fw_imm(int ep, unsigned int msg);

void fw_fail(const char *what);
#define FW_CHECK(cond) do { if (!(cond)) fw_fail(#cond); } while (0)

/* mode: enum mrc_mode.  The cores are kept in static storage. */
void fw_init(struct fw_world *w, unsigned int mode);
/*
 * Post a send WR on e: opcode (enum mrc_opcode, not RECV*), len (SEND/
 * WRITE/READ; atomics always 8).  Returns what mrc_post_send() returned;
 * a WR the core refused is forgotten.
 */
int fw_post_send(struct fw_ep *e, uint32_t opcode, uint32_t len);
int fw_post_recv(struct fw_ep *e);
/* A WR of every opcode from both sides and a receive per WR, pumped. */
void fw_post_every_opcode(struct fw_world *w);
/* The i-th queued packet (i < nq), and a new one at the end (NULL: full). */
struct fw_pkt *fw_queued(struct fw_world *w, unsigned int i);
struct fw_pkt *fw_queue_add(struct fw_world *w);
/* Pull every packet both cores have into the queue, drain completions. */
void fw_pump(struct fw_world *w);
/* Deliver queued packet i (removed from the queue); returns the errno. */
int fw_deliver(struct fw_world *w, unsigned int i);
void fw_drop(struct fw_world *w, unsigned int i);
/* A copy of queued packet i at the end of the queue (NULL: full). */
struct fw_pkt *fw_duplicate(struct fw_world *w, unsigned int i);
/* Feed len raw bytes to e as a forged datagram; returns the errno. */
int fw_inject(struct fw_world *w, struct fw_ep *e, const uint8_t *pkt,
	      size_t len, unsigned int path);
/* Move time forward by dt and run due timers of both cores. */
void fw_advance(struct fw_world *w, uint64_t dt);
/*
 * Lossless network from now on: deliver everything, follow the timers,
 * until all posted send WRs completed or max_steps passed.  Then check
 * the end-of-run invariants (for worlds of genuine packets: every send WR
 * completed exactly once, successful ones byte-exact, every receive a
 * successful SEND consumed completed, an error completion only on a QP
 * in error).
 */
void fw_finish(struct fw_world *w, unsigned int max_steps);

/*
 * Remember the whole state of w and both cores / put it back (w must be
 * the same object: the state holds pointers into it).  One snapshot.
 */
void fw_save(const struct fw_world *w);
void fw_restore(struct fw_world *w);

/* Recompute and store the CRC32C trailer of a MetaRoCE/RoCEv2 packet. */
void fw_fix_crc(uint8_t *pkt, size_t len);

#endif
