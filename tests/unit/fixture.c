// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "fixture.h"

uint64_t fx_rand(uint64_t *s)
{
	/* splitmix64: tiny, seedable, good enough for fault injection */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t fx_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(fx_rand(s) % n) : 0;
}

uint8_t fx_byte(uint64_t seed, int ep, unsigned int msg, uint32_t off)
{
	uint64_t x = seed * 31 + (uint64_t)ep * 1000003 + msg * 7919ull + off;

	return (uint8_t)(fx_rand(&x) >> 56);
}

uint8_t fx_read_byte(const struct fx_ep *responder, unsigned int msg,
		     uint32_t off)
{
	return fx_byte(responder->seed, responder->id + 2, msg, off);
}

uint64_t fx_atomic_init(const struct fx_ep *responder, unsigned int slot)
{
	uint64_t x = responder->seed ^ (slot * 0x9e37ull + responder->id);

	return fx_rand(&x);
}

uint32_t fx_imm(const struct fx_ep *sender, unsigned int msg)
{
	return 0xa5000000u ^ (uint32_t)(sender->seed * 131 + msg * 17 +
					(uint64_t)sender->id);
}

int fx_consumes_recv(uint32_t opcode)
{
	return opcode == MRC_OP_SEND || opcode == MRC_OP_SEND_WITH_IMM ||
	       opcode == MRC_OP_RDMA_WRITE_WITH_IMM;
}

static int fx_is_atomic(uint32_t opcode)
{
	return opcode == MRC_OP_ATOMIC_CMP_AND_SWP ||
	       opcode == MRC_OP_ATOMIC_FETCH_AND_ADD;
}

static int fx_read_payload(void *user, uint64_t wr_id, uint32_t off,
			   void *dst, uint32_t len)
{
	struct fx_ep *e = user;
	uint8_t *d = dst;
	uint32_t i;

	if (wr_id >= e->nmsgs || off + len > e->msgs[wr_id].len) {
		e->failures++;
		return -22;
	}
	for (i = 0; i < len; i++)
		d[i] = fx_byte(e->seed, e->id, (unsigned int)wr_id, off + i);
	return 0;
}

static int fx_place_send(void *user, uint64_t recv_id, uint32_t off,
			 const void *src, uint32_t len)
{
	struct fx_ep *e = user;
	struct fx_msg *m;

	if (recv_id >= e->recv_posted || off + len > FX_MAX_MSG_LEN) {
		e->failures++;
		return -22;
	}
	memcpy(e->rbuf[recv_id] + off, src, len);
	m = &e->peer->msgs[e->send_of_recv[recv_id]];
	m->placed += len;
	return 0;
}

static int fx_place_write(void *user, uint32_t rkey, uint64_t raddr,
			  const void *src, uint32_t len)
{
	struct fx_ep *e = user;
	uint64_t idx = raddr / FX_MAX_MSG_LEN;

	if (rkey != FX_RKEY)
		return -13;
	if (raddr + len > sizeof(e->wmem) ||
	    (raddr + len - 1) / FX_MAX_MSG_LEN != idx) {
		e->failures++;
		return -14;
	}
	memcpy(e->wmem + raddr, src, len);
	e->peer->msgs[idx].placed += len;
	return 0;
}

/* Responder: READ source memory is a pattern, region i per peer msg i. */
static int fx_read_remote(void *user, uint32_t rkey, uint64_t raddr,
			  void *dst, uint32_t len)
{
	struct fx_ep *e = user;
	uint64_t idx = raddr / FX_MAX_MSG_LEN;
	uint8_t *d = dst;
	uint32_t i;

	if (rkey != FX_RKEY)
		return -13;
	if (!len || raddr + len > sizeof(e->wmem) ||
	    (raddr + len - 1) / FX_MAX_MSG_LEN != idx)
		return -14;
	if (!d)
		return 0;
	for (i = 0; i < len; i++)
		d[i] = fx_read_byte(e, (unsigned int)idx,
				    (uint32_t)(raddr % FX_MAX_MSG_LEN) + i);
	return 0;
}

static int fx_place_read(void *user, uint64_t wr_id, uint32_t off,
			 const void *src, uint32_t len)
{
	struct fx_ep *e = user;
	struct fx_msg *m;

	if (wr_id >= e->nmsgs) {
		e->failures++;
		return -22;
	}
	m = &e->msgs[wr_id];
	if (fx_is_atomic(m->opcode)) {
		if (off || len != 8) {
			e->failures++;
			return -22;
		}
		memcpy(&m->result, src, 8);
	} else {
		if (m->opcode != MRC_OP_RDMA_READ || off + len > m->len) {
			e->failures++;
			return -22;
		}
		memcpy(e->lbuf[wr_id] + off, src, len);
	}
	m->placed += len;
	return 0;
}

static int fx_atomic(void *user, uint32_t opcode, uint32_t rkey,
		     uint64_t raddr, uint64_t compare_add, uint64_t swap,
		     uint64_t *orig)
{
	struct fx_ep *e = user;
	uint64_t slot = (raddr - FX_ATOMIC_BASE) / 8, *v;

	if (rkey != FX_RKEY)
		return -13;
	if (raddr < FX_ATOMIC_BASE || slot >= FX_MAX_MSGS || raddr & 7) {
		e->failures++;	/* the core checks alignment itself */
		return -14;
	}
	v = &e->amem[slot];
	*orig = *v;
	if (opcode == MRC_OP_ATOMIC_FETCH_AND_ADD)
		*v += compare_add;
	else if (*v == compare_add)
		*v = swap;
	e->aexec[slot]++;
	return 0;
}

const struct mrc_callbacks fx_callbacks = {
	.read_payload = fx_read_payload,
	.place_send = fx_place_send,
	.place_write = fx_place_write,
	.read_remote = fx_read_remote,
	.place_read = fx_place_read,
	.atomic = fx_atomic,
};

static void fx_ep_init(struct fx *f, struct fx_ep *e, int id, unsigned int n)
{
	static const uint32_t all_ops[] = {
		MRC_OP_SEND, MRC_OP_RDMA_WRITE, MRC_OP_SEND_WITH_IMM,
		MRC_OP_RDMA_WRITE_WITH_IMM, MRC_OP_RDMA_READ, MRC_OP_RDMA_READ,
		MRC_OP_ATOMIC_CMP_AND_SWP, MRC_OP_ATOMIC_FETCH_AND_ADD,
	};
	unsigned int i;

	e->id = id;
	e->seed = f->rng;
	e->nmsgs = n;
	e->recv_window = 8 + fx_below(&f->rng, 64);
	for (i = 0; i < FX_MAX_MSGS; i++)
		e->amem[i] = fx_atomic_init(e, i);
	for (i = 0; i < n; i++) {
		struct fx_msg *m = &e->msgs[i];

		if (f->net.all_opcodes)
			m->opcode = all_ops[fx_below(&f->rng, 8)];
		else
			m->opcode = fx_below(&f->rng, 2) ? MRC_OP_SEND :
							    MRC_OP_RDMA_WRITE;
		if (fx_is_atomic(m->opcode)) {
			m->len = 8;
			m->compare_add = fx_rand(&f->rng);
			m->swap = fx_rand(&f->rng);
			continue;
		}
		/* lengths around packet boundaries are the interesting ones */
		switch (fx_below(&f->rng, 4)) {
		case 0:
			m->len = fx_below(&f->rng, 3);
			break;
		case 1:
			m->len = FX_MTU * (1 + fx_below(&f->rng, 6)) - 1 +
				 fx_below(&f->rng, 3);
			break;
		default:
			m->len = fx_below(&f->rng, FX_MAX_MSG_LEN + 1);
		}
	}
}

/* Half the compare-and-swaps are set up to succeed. */
static void fx_atomic_compares(struct fx_ep *e)
{
	unsigned int i;

	for (i = 0; i < e->nmsgs; i++) {
		struct fx_msg *m = &e->msgs[i];

		if (m->opcode == MRC_OP_ATOMIC_CMP_AND_SWP && (m->swap & 1))
			m->compare_add = fx_atomic_init(e->peer, i);
	}
}

void fx_init(struct fx *f, const struct mrc_config *cfg,
	     const struct fx_net_cfg *net, uint64_t seed,
	     unsigned int msgs_a, unsigned int msgs_b)
{
	struct mrc_config ca = *cfg, cb = *cfg;
	uint64_t r;

	memset(f, 0, offsetof(struct fx, q));
	f->cfg = *cfg;
	f->net = *net;	/* before fx_ep_init: all_opcodes */
	f->rng = seed * 0x2545f4914f6cdd1dull + 1;
	f->a.peer = &f->b;
	f->b.peer = &f->a;
	fx_ep_init(f, &f->a, 0, msgs_a);
	fx_ep_init(f, &f->b, 1, msgs_b);
	fx_atomic_compares(&f->a);
	fx_atomic_compares(&f->b);
	r = fx_rand(&f->rng);
	ca.local_qpn = 0x11;
	ca.remote_qpn = 0x22;
	cb.local_qpn = 0x22;
	cb.remote_qpn = 0x11;
	/* start near the 24-bit wrap often, to exercise it (MR-CONN-003) */
	ca.local_psn = (r & 1) ? 0xffffff - (uint32_t)((r >> 8) % 600) :
				 (uint32_t)(r >> 8) & 0xffffff;
	cb.local_psn = (uint32_t)(r >> 32) & 0xffffff;
	if (cfg->local_psn)	/* a test asked for a specific PSN */
		ca.local_psn = cfg->local_psn;
	ca.remote_psn = cb.local_psn;
	cb.remote_psn = ca.local_psn;
	f->a.conn = calloc(1, mrc_conn_size());
	f->b.conn = calloc(1, mrc_conn_size());
	if (mrc_conn_init(f->a.conn, &ca, &fx_callbacks, &f->a, 0) ||
	    mrc_conn_init(f->b.conn, &cb, &fx_callbacks, &f->b, 0))
		f->a.failures++;
	if (net->kill_paths && cfg->num_paths > 1) {
		f->kill_at_ns = 20000 + fx_below(&f->rng, 200000);
		f->revive_at_ns = fx_below(&f->rng, 2) ?
			f->kill_at_ns + 5000000 + fx_below(&f->rng, 5000000) :
			UINT64_MAX;
	} else {
		f->kill_at_ns = UINT64_MAX;
		f->revive_at_ns = UINT64_MAX;
	}
}

static void fx_hash(struct fx *f, const uint8_t *p, unsigned int len,
		    unsigned int path)
{
	uint64_t h = f->trace_hash ^ (f->now * 1099511628211ull) ^ path;
	unsigned int i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	f->trace_hash = h;
}

static void fx_enqueue(struct fx *f, struct fx_ep *dst, const uint8_t *p,
		       unsigned int len, unsigned int path)
{
	struct fx_pkt *q;

	if (f->nqueued == FX_MAX_QUEUED)
		return;		/* a full network drops */
	q = &f->q[f->nqueued++];
	q->at = f->now + f->net.base_delay_ns + path * 1000 +
		(f->net.jitter_ns ? fx_rand(&f->rng) % f->net.jitter_ns : 0);
	if (f->net.fifo_paths) {
		if (q->at < f->last_at[dst->id][path])
			q->at = f->last_at[dst->id][path];
		f->last_at[dst->id][path] = q->at;
	}
	q->seq = f->seq++;
	q->dst = dst;
	q->path = path;
	q->len = len;
	q->corrupted = 0;
	memcpy(q->data, p, len);
	if (fx_below(&f->rng, 1000000) < f->net.corrupt_ppm) {
		q->corrupted = 1;
		if (fx_below(&f->rng, 2) && len > 1)
			q->len = 1 + fx_below(&f->rng, len - 1);
		else
			q->data[fx_below(&f->rng, len)] ^=
				1u << fx_below(&f->rng, 8);
	}
}

static void fx_send(struct fx *f, struct fx_ep *src, const uint8_t *p,
		    unsigned int len, unsigned int path)
{
	f->pkts_sent++;
	fx_hash(f, p, len, path);
	if (f->tap)
		f->tap(f, src, p, len, path);
	if ((f->path_dead_mask | f->egress_dead_mask[src->id]) &
	    (1ull << path))
		return;
	if (fx_below(&f->rng, 1000000) < f->net.loss_ppm)
		return;
	fx_enqueue(f, src->peer, p, len, path);
	if (fx_below(&f->rng, 1000000) < f->net.dup_ppm)
		fx_enqueue(f, src->peer, p, len, path);
}

static void fx_pump(struct fx *f, struct fx_ep *e)
{
	uint8_t buf[FX_PKT_CAP];
	unsigned int path;
	int len;

	while ((len = mrc_next_packet(e->conn, buf, sizeof(buf), &path,
				      f->now)) > 0) {
		if (path >= f->cfg.num_paths)
			e->failures++;
		fx_send(f, e, buf, (unsigned int)len, path);
	}
	if (len < 0)
		e->failures++;
}

void fx_post(struct fx *f, struct fx_ep *e)
{
	struct fx_ep *p = e->peer;

	while (e->posted < e->nmsgs) {
		struct fx_msg *m = &e->msgs[e->posted];
		struct mrc_send_wr wr = {
			.wr_id = e->posted,
			.opcode = m->opcode,
			.length = m->len,
			.rkey = FX_RKEY,
			.remote_addr = fx_is_atomic(m->opcode) ?
				FX_ATOMIC_BASE + (uint64_t)e->posted * 8 :
				(uint64_t)e->posted * FX_MAX_MSG_LEN,
			.imm_data = fx_imm(e, e->posted),
			.compare_add = m->compare_add,
			.swap = m->swap,
		};

		if (e->pingpong && (e->tx_done < e->posted ||
				    e->recv_done + (e->pingpong == FX_PING) <=
				    e->posted))
			break;
		if (mrc_post_send(e->conn, &wr, f->now))
			break;
		e->posted++;
	}
	/* Post receives for the peer's SENDs, at most recv_window ahead. */
	while (e->recv_posted < p->nsends &&
	       e->recv_posted < e->recv_done + e->recv_window) {
		if (mrc_post_recv(e->conn, e->recv_posted, FX_MAX_MSG_LEN))
			break;
		e->recv_posted++;
	}
}

/* The n-th SEND of the peer lands in the n-th receive (MR-ORDER-004). */
static void fx_map_recvs(struct fx_ep *e)
{
	unsigned int i, n = 0;

	for (i = 0; i < e->peer->nmsgs; i++)
		if (fx_consumes_recv(e->peer->msgs[i].opcode))
			e->send_of_recv[n++] = i;
	e->peer->nsends = n;
}

void fx_prepare(struct fx *f)
{
	fx_map_recvs(&f->a);
	fx_map_recvs(&f->b);
}

void fx_poll(struct fx_ep *e)
{
	struct mrc_completion wc;

	while (mrc_poll_completion(e->conn, &wc)) {
		if (wc.status != MRC_WC_SUCCESS) {
			if (!e->nstatus_err++)
				e->first_err_status = wc.status;
			continue;
		}
		if (wc.opcode == MRC_OP_RECV ||
		    wc.opcode == MRC_OP_RECV_RDMA_WITH_IMM) {
			unsigned int pi;
			struct fx_msg *m;
			int imm;

			/* RC order: receives complete in posting order */
			if (wc.wr_id != e->recv_done) {
				e->failures++;
				continue;
			}
			pi = e->send_of_recv[e->recv_done];
			m = &e->peer->msgs[pi];
			imm = m->opcode != MRC_OP_SEND;
			/* immediate data and opcode as IBTA (MR-OPS-005) */
			if (wc.byte_len != m->len || m->done_rx ||
			    m->placed != m->len ||
			    (wc.opcode == MRC_OP_RECV_RDMA_WITH_IMM) !=
			    (m->opcode == MRC_OP_RDMA_WRITE_WITH_IMM) ||
			    !!(wc.wc_flags & MRC_WC_F_IMM) != imm ||
			    (imm && wc.imm_data != fx_imm(e->peer, pi)))
				e->failures++;
			m->done_rx = 1;
			e->recv_done++;
		} else {
			struct fx_msg *m;

			if (wc.wr_id != e->tx_done || wc.byte_len !=
			    e->msgs[wc.wr_id].len || wc.opcode !=
			    e->msgs[wc.wr_id].opcode) {
				e->failures++;
				continue;
			}
			m = &e->msgs[e->tx_done++];
			if (m->done_tx)
				e->failures++;
			m->done_tx = 1;
		}
	}
}

static int fx_done(const struct fx *f)
{
	const struct fx_ep *e[2] = { &f->a, &f->b };
	int i;

	for (i = 0; i < 2; i++) {
		if (e[i]->tx_done != e[i]->nmsgs ||
		    e[i]->recv_done != e[i]->peer->nsends)
			return 0;
		if (e[i]->nstatus_err)
			return 1;
	}
	return 1;
}

static void fx_paths_event(struct fx *f)
{
	if (f->now >= f->kill_at_ns) {
		uint32_t n = f->cfg.num_paths;
		uint32_t kill = 1 + fx_below(&f->rng, n - 1);
		uint32_t i, first = fx_below(&f->rng, n);

		for (i = 0; i < kill; i++)
			f->path_dead_mask |= 1ull << ((first + i) % n);
		if (f->kill_mask)
			f->path_dead_mask = f->kill_mask;
		f->kill_at_ns = UINT64_MAX;
	}
	if (f->now >= f->revive_at_ns) {
		f->path_dead_mask = 0;
		f->revive_at_ns = UINT64_MAX;
	}
}

/* Where e is in its stall cycle at t: 0 .. stall_period_ns - 1. */
static uint64_t fx_stall_phase(const struct fx *f, const struct fx_ep *e,
			       uint64_t t)
{
	uint64_t period = f->net.stall_period_ns;
	uint64_t off = e->id ? 3 * (period / 4) : period / 4;

	return (t + period - off % period) % period;
}

/* The earliest time at or after t at which e is not frozen. */
static uint64_t fx_awake_at(const struct fx *f, const struct fx_ep *e,
			    uint64_t t)
{
	uint64_t phase;

	if (!f->net.stall_ns || !f->net.stall_period_ns || t == UINT64_MAX)
		return t;
	phase = fx_stall_phase(f, e, t);
	return phase < f->net.stall_ns ? t + f->net.stall_ns - phase : t;
}

static int fx_awake(const struct fx *f, const struct fx_ep *e)
{
	return fx_awake_at(f, e, f->now) == f->now;
}

/* e resumes from a stall just now: its late timers run first. */
static int fx_resuming(const struct fx *f, const struct fx_ep *e)
{
	return f->net.stall_ns && f->net.stall_period_ns &&
	       fx_stall_phase(f, e, f->now) == f->net.stall_ns;
}

static void fx_timers(struct fx *f, struct fx_ep *e)
{
	if (mrc_next_deadline(e->conn) <= f->now)
		mrc_handle_timeout(e->conn, f->now);
}

int fx_run(struct fx *f, uint64_t limit_ns)
{
	fx_prepare(f);
	while (!fx_done(f)) {
		uint64_t t = UINT64_MAX, d;
		unsigned int i;

		if (f->a.failures || f->b.failures)
			return -1;
		if (fx_awake(f, &f->a)) {
			fx_post(f, &f->a);
			fx_pump(f, &f->a);
		}
		if (fx_awake(f, &f->b)) {
			fx_post(f, &f->b);
			fx_pump(f, &f->b);
		}
		for (i = 0; i < f->nqueued; i++) {
			d = fx_awake_at(f, f->q[i].dst, f->q[i].at);
			t = d < t ? d : t;
		}
		d = fx_awake_at(f, &f->a, mrc_next_deadline(f->a.conn));
		t = d < t ? d : t;
		d = fx_awake_at(f, &f->b, mrc_next_deadline(f->b.conn));
		t = d < t ? d : t;
		t = f->kill_at_ns < t ? f->kill_at_ns : t;
		t = f->revive_at_ns < t ? f->revive_at_ns : t;
		if (t == UINT64_MAX || t > limit_ns)
			return -2;	/* stalled or too slow */
		if (t > f->now)
			f->now = t;
		fx_paths_event(f);
		if (fx_resuming(f, &f->a))
			fx_timers(f, &f->a);
		if (fx_resuming(f, &f->b))
			fx_timers(f, &f->b);
		/* deliver due packets, oldest first */
		for (;;) {
			struct fx_pkt *best = NULL;
			int ret;

			for (i = 0; i < f->nqueued; i++)
				if (f->q[i].at <= f->now &&
				    fx_awake(f, f->q[i].dst) &&
				    (!best || f->q[i].seq < best->seq))
					best = &f->q[i];
			if (!best)
				break;
			ret = mrc_recv_packet(best->dst->conn, best->data,
					      best->len, best->path, f->now);
			if (best->corrupted) {
				f->corrupted_delivered++;
				if (ret < 0)
					f->corrupt_rejected++;
			} else if (ret < 0) {
				best->dst->failures++;
			}
			*best = f->q[--f->nqueued];
		}
		if (fx_awake(f, &f->a)) {
			fx_timers(f, &f->a);
			fx_poll(&f->a);
			if (f->a.nstatus_err && !f->a.err_at_ns)
				f->a.err_at_ns = f->now;
		}
		if (fx_awake(f, &f->b)) {
			fx_timers(f, &f->b);
			fx_poll(&f->b);
			if (f->b.nstatus_err && !f->b.err_at_ns)
				f->b.err_at_ns = f->now;
		}
	}
	return f->a.failures || f->b.failures ? -1 : 0;
}

int fx_verify(struct fx *f)
{
	struct fx_ep *e[2] = { &f->a, &f->b };
	uint64_t dropped = 0;
	int i, bad = 0;

	for (i = 0; i < 2; i++) {
		struct fx_ep *rx = e[i]->peer;
		struct mrc_conn_stats st;
		unsigned int m, r = 0;

		for (m = 0; m < e[i]->nmsgs; m++) {
			struct fx_msg *msg = &e[i]->msgs[m];
			const uint8_t *mem;
			uint32_t o;

			/* exactly once: each byte placed once */
			if (!msg->done_tx || msg->placed != msg->len)
				bad++;
			if (fx_consumes_recv(msg->opcode) && !msg->done_rx)
				bad++;
			if (fx_is_atomic(msg->opcode)) {
				/* executed once, on the value it found */
				uint64_t init = fx_atomic_init(rx, m), want;

				want = msg->opcode == MRC_OP_ATOMIC_FETCH_AND_ADD ?
				       init + msg->compare_add :
				       init == msg->compare_add ? msg->swap : init;
				if (rx->aexec[m] != 1 || msg->result != init ||
				    rx->amem[m] != want)
					bad++;
				continue;
			}
			if (msg->opcode == MRC_OP_RDMA_READ) {
				for (o = 0; o < msg->len; o++)
					if (e[i]->lbuf[m][o] !=
					    fx_read_byte(rx, m, o)) {
						bad++;
						break;
					}
				continue;
			}
			if (msg->opcode == MRC_OP_SEND ||
			    msg->opcode == MRC_OP_SEND_WITH_IMM)
				mem = rx->rbuf[r++];
			else
				mem = rx->wmem + (size_t)m * FX_MAX_MSG_LEN;
			if (msg->opcode == MRC_OP_RDMA_WRITE_WITH_IMM)
				r++;	/* it consumed a receive too */
			for (o = 0; o < msg->len; o++)
				if (mem[o] != fx_byte(e[i]->seed, e[i]->id, m,
						      o)) {
					bad++;
					break;
				}
		}
		mrc_get_stats(e[i]->conn, &st);
		if (st.in_error)
			bad++;
		dropped += st.rx_bad_crc + st.rx_malformed;
	}
	/* ... and counted as such */
	if (dropped != f->corrupt_rejected)
		bad++;
	/* every corrupted datagram was detected and dropped */
	if (f->corrupt_rejected != f->corrupted_delivered)
		bad++;
	return bad;
}
