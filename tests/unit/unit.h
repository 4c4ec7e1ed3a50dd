/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers for hand-driven unit tests: a fixture pair with no simulated
 * network, where the test moves each packet itself.
 */
#ifndef MRC_TEST_UNIT_H
#define MRC_TEST_UNIT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "fixture.h"
#include "../../core/crc32c.h"

struct pkt {
	uint8_t b[FX_PKT_CAP];
	int len;
	unsigned int path;
};

static inline struct fx *pair_new(struct mrc_config *cfg)
{
	static const struct fx_net_cfg quiet;
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx_init(f, cfg, &quiet, 1, 0, 0);
	assert_int_equal(f->a.failures, 0);
	return f;
}

static inline void pair_free(struct fx *f)
{
	free(f->a.conn);
	free(f->b.conn);
	free(f);
}

/* Initial window of each path of a unit_cfg() connection, packets. */
#define FX_PATH_CWND 16

static inline struct mrc_config unit_cfg(enum mrc_mode mode,
					 unsigned int paths)
{
	struct mrc_config cfg;

	mrc_config_default(&cfg, mode);
	cfg.mtu = FX_MTU;
	cfg.num_paths = paths;
	/* each path starts with FX_PATH_CWND packets (MR-CC-001) */
	cfg.init_cwnd = FX_PATH_CWND * paths;
	return cfg;
}

/* Queue a message from e (call before post()). */
static inline void add_msg(struct fx_ep *e, uint32_t opcode, uint32_t len)
{
	e->msgs[e->nmsgs].opcode = opcode;
	e->msgs[e->nmsgs].len = len;
	e->nmsgs++;
}

/* Post queued messages on both sides and the matching receives. */
static inline void post(struct fx *f)
{
	fx_prepare(f);
	fx_post(f, &f->a);
	fx_post(f, &f->b);
}

/* Next packet e wants to send at now; len 0 if none. */
static inline struct pkt take(struct fx *f, struct fx_ep *e)
{
	struct pkt p;

	p.len = mrc_next_packet(e->conn, p.b, sizeof(p.b), &p.path, f->now);
	assert_true(p.len >= 0);
	return p;
}

static inline int give(struct fx *f, struct fx_ep *e, const struct pkt *p)
{
	return mrc_recv_packet(e->conn, p->b, p->len, p->path, f->now);
}

static inline void put_be32(uint8_t *b, uint32_t v)
{
	b[0] = v >> 24;
	b[1] = v >> 16;
	b[2] = v >> 8;
	b[3] = v;
}

/* Rewrite the CRC trailer after a test edited a packet. */
static inline void reseal(struct pkt *p)
{
	put_be32(p->b + p->len - 4, mrc_crc32c(p->b, p->len - 4));
}

static inline uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
}

/*
 * Deliver, without loss, every packet either side has to send now; 1 if
 * any moved.  Completions stay in the cores for the caller to poll.
 */
static inline int exchange(struct fx *f)
{
	struct pkt p;
	int moved = 0;

	while ((p = take(f, &f->a)).len) {
		assert_true(give(f, &f->b, &p) >= 0);
		moved = 1;
	}
	while ((p = take(f, &f->b)).len) {
		assert_true(give(f, &f->a, &p) >= 0);
		moved = 1;
	}
	return moved;
}

/* Exchange packets both ways without loss until both are quiet. */
static inline void flush_all(struct fx *f)
{
	int moved;

	do {
		moved = exchange(f);
		fx_poll(&f->a);
		fx_poll(&f->b);
		fx_post(f, &f->a);
		fx_post(f, &f->b);
	} while (moved);
}

/* Advance time to the next deadline of e and run its timers. */
static inline void fire(struct fx *f, struct fx_ep *e)
{
	uint64_t d = mrc_next_deadline(e->conn);

	assert_true(d != UINT64_MAX);
	if (d > f->now)
		f->now = d;
	mrc_handle_timeout(e->conn, f->now);
}

#endif
