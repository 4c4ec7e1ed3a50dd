// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Two connected cores with checking callbacks: see fuzz_world.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "fuzz_world.h"
#include "crc32c.h"	/* core/: the trailer a forged packet needs */

static uint64_t fw_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint8_t fw_byte(int ep, unsigned int msg, uint32_t off)
{
	return (uint8_t)fw_mix(((uint64_t)ep << 40) ^ ((uint64_t)msg << 24) ^
			       off);
}

uint8_t fw_read_byte(int responder, uint64_t off)
{
	return (uint8_t)fw_mix(0x5eadull << 48 ^ (uint64_t)responder << 40 ^
			       off);
}

uint64_t fw_atomic_init(int responder, unsigned int slot)
{
	return fw_mix(0xa70ull << 48 ^ (uint64_t)responder << 40 ^ slot);
}

uint32_t fw_imm(int ep, unsigned int msg)
{
	return 0x1e000000u ^ (uint32_t)ep << 16 ^ msg;
}

void fw_fail(const char *what)
{
	fprintf(stderr, "fuzz invariant violated: %s\n", what);
	abort();
}

static int fw_is_atomic(uint32_t op)
{
	return op == MRC_OP_ATOMIC_CMP_AND_SWP ||
	       op == MRC_OP_ATOMIC_FETCH_AND_ADD;
}

static int fw_consumes_recv(uint32_t op)
{
	return op == MRC_OP_SEND || op == MRC_OP_SEND_WITH_IMM ||
	       op == MRC_OP_RDMA_WRITE_WITH_IMM;
}

static int fw_is_write(uint32_t op)
{
	return op == MRC_OP_RDMA_WRITE || op == MRC_OP_RDMA_WRITE_WITH_IMM;
}

static int fw_read_payload(void *user, uint64_t wr_id, uint32_t off,
			   void *dst, uint32_t len)
{
	struct fw_ep *e = user;
	uint8_t *d = dst;
	uint32_t i;

	/* the core asks only for bytes of WRs it was given */
	FW_CHECK(wr_id < e->nmsgs);
	FW_CHECK(!e->msgs[wr_id].done);
	FW_CHECK(off <= e->msgs[wr_id].len &&
		 len <= e->msgs[wr_id].len - off);
	for (i = 0; i < len; i++)
		d[i] = fw_byte(e->id, (unsigned int)wr_id, off + i);
	return 0;
}

/* Genuine payload of the peer's message m at off, len bytes. */
static void fw_check_payload(const struct fw_ep *e, unsigned int m,
			     uint32_t off, const uint8_t *src, uint32_t len)
{
	const struct fw_msg *msg = &e->peer->msgs[m];
	uint32_t i;

	FW_CHECK(off <= msg->len && len <= msg->len - off);
	for (i = 0; i < len; i++)
		FW_CHECK(src[i] == fw_byte(e->peer->id, m, off + i));
}

static int fw_place_send(void *user, uint64_t recv_id, uint32_t off,
			 const void *src, uint32_t len)
{
	struct fw_ep *e = user;

	/* bounds of the receive WR, checked by the core (core.h) */
	FW_CHECK(recv_id < e->recv_posted);
	FW_CHECK(recv_id >= e->recv_done);
	FW_CHECK(off <= FW_MSG_LEN && len <= FW_MSG_LEN - off);
	memcpy(e->rbuf[recv_id] + off, src, len);
	e->recv_placed[recv_id] += len;
	if (!e->w->forged) {
		unsigned int m = e->recv_msg[recv_id];

		FW_CHECK(recv_id < e->peer->nconsuming);
		fw_check_payload(e, m, off, src, len);
		e->peer->msgs[m].placed += len;
		FW_CHECK(e->peer->msgs[m].placed <= e->peer->msgs[m].len);
	}
	return 0;
}

static int fw_place_write(void *user, uint32_t rkey, uint64_t raddr,
			  const void *src, uint32_t len)
{
	struct fw_ep *e = user;
	uint64_t m = raddr / FW_MSG_LEN;

	/* the owner of the memory validates, as the kernel's MR lookup */
	if (rkey != FW_RKEY)
		return -EACCES;
	if (raddr > sizeof(e->wmem) || len > sizeof(e->wmem) - raddr)
		return -EFAULT;
	if (!e->w->forged) {
		/* inside the region the requester's WR named, its bytes */
		FW_CHECK(m < e->peer->nmsgs);
		FW_CHECK(fw_is_write(e->peer->msgs[m].opcode));
		fw_check_payload(e, (unsigned int)m,
				 (uint32_t)(raddr % FW_MSG_LEN), src, len);
		e->peer->msgs[m].placed += len;
		FW_CHECK(e->peer->msgs[m].placed <= e->peer->msgs[m].len);
	}
	memcpy(e->wmem + raddr, src, len);
	return 0;
}

static int fw_read_remote(void *user, uint32_t rkey, uint64_t raddr,
			  void *dst, uint32_t len)
{
	struct fw_ep *e = user;
	uint8_t *d = dst;
	uint32_t i;

	if (rkey != FW_RKEY)
		return -EACCES;
	if (raddr > sizeof(e->wmem) || len > sizeof(e->wmem) - raddr)
		return -EFAULT;
	if (d)
		for (i = 0; i < len; i++)
			d[i] = fw_read_byte(e->id, raddr + i);
	return 0;
}

static int fw_place_read(void *user, uint64_t wr_id, uint32_t off,
			 const void *src, uint32_t len)
{
	struct fw_ep *e = user;
	struct fw_msg *m;
	uint32_t i;

	FW_CHECK(wr_id < e->nmsgs);
	m = &e->msgs[wr_id];
	FW_CHECK(!m->done);
	FW_CHECK(m->opcode == MRC_OP_RDMA_READ || fw_is_atomic(m->opcode));
	if (fw_is_atomic(m->opcode)) {
		FW_CHECK(off == 0 && len == 8);
		memcpy(&m->result, src, 8);
	} else {
		FW_CHECK(off <= m->len && len <= m->len - off);
		memcpy(e->lbuf[wr_id] + off, src, len);
	}
	if (!e->w->forged && m->opcode == MRC_OP_RDMA_READ)
		for (i = 0; i < len; i++)
			FW_CHECK(((const uint8_t *)src)[i] ==
				 fw_read_byte(e->peer->id,
					      wr_id * FW_MSG_LEN + off + i));
	m->placed += len;
	return 0;
}

static int fw_atomic(void *user, uint32_t opcode, uint32_t rkey,
		     uint64_t raddr, uint64_t compare_add, uint64_t swap,
		     uint64_t *orig)
{
	struct fw_ep *e = user;
	uint64_t slot = (raddr - FW_ATOMIC_BASE) / 8, *v;

	FW_CHECK(fw_is_atomic(opcode));
	FW_CHECK(!(raddr & 7));		/* the core checks alignment */
	if (rkey != FW_RKEY)
		return -EACCES;
	if (raddr < FW_ATOMIC_BASE || slot >= FW_MSGS)
		return -EFAULT;
	if (!e->w->forged) {
		const struct fw_msg *m = &e->peer->msgs[slot];

		/* exactly once per request, the request that was posted */
		FW_CHECK(slot < e->peer->nmsgs);
		FW_CHECK(m->opcode == opcode);
		FW_CHECK(m->compare_add == compare_add);
		FW_CHECK(opcode != MRC_OP_ATOMIC_CMP_AND_SWP || m->swap == swap);
		FW_CHECK(e->aexec[slot] == 0);
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

static const struct mrc_callbacks fw_callbacks = {
	.read_payload = fw_read_payload,
	.place_send = fw_place_send,
	.place_write = fw_place_write,
	.read_remote = fw_read_remote,
	.place_read = fw_place_read,
	.atomic = fw_atomic,
};

static uint64_t fw_conn_mem[2][(96 * 1024) / 8];

static void fw_ep_init(struct fw_world *w, struct fw_ep *e, int id)
{
	struct mrc_config cfg = w->cfg;
	unsigned int i;

	memset(e, 0, sizeof(*e));
	e->id = id;
	e->w = w;
	e->peer = id ? &w->a : &w->b;
	e->conn = (struct mrc_conn *)fw_conn_mem[id];
	for (i = 0; i < FW_MSGS; i++)
		e->amem[i] = fw_atomic_init(id, i);
	cfg.local_qpn = id ? FW_QPN_B : FW_QPN_A;
	cfg.remote_qpn = id ? FW_QPN_A : FW_QPN_B;
	cfg.local_psn = id ? FW_PSN_B : FW_PSN_A;
	cfg.remote_psn = id ? FW_PSN_A : FW_PSN_B;
	FW_CHECK(mrc_conn_size() <= sizeof(fw_conn_mem[id]));
	FW_CHECK(mrc_conn_init(e->conn, &cfg, &fw_callbacks, e, w->now) == 0);
}

struct fw_pkt *fw_queued(struct fw_world *w, unsigned int i)
{
	FW_CHECK(i < w->nq);
	return &w->slot[w->order[i]];
}

struct fw_pkt *fw_queue_add(struct fw_world *w)
{
	if (w->nq == FW_QUEUE)
		return NULL;
	w->order[w->nq] = w->free_slot[FW_QUEUE - w->nq - 1];
	return &w->slot[w->order[w->nq++]];
}

/* Take the i-th packet out of the queue; the others keep their order. */
static void fw_queue_remove(struct fw_world *w, unsigned int i)
{
	uint8_t s = w->order[i];

	memmove(&w->order[i], &w->order[i + 1], w->nq - i - 1);
	w->nq--;
	w->free_slot[FW_QUEUE - w->nq - 1] = s;
}

void fw_init(struct fw_world *w, unsigned int mode)
{
	unsigned int i;

	memset(w, 0, offsetof(struct fw_world, tap));
	w->nq = 0;
	for (i = 0; i < FW_QUEUE; i++)
		w->free_slot[i] = (uint8_t)i;
	mrc_config_default(&w->cfg, mode ? MRC_MODE_ROCEV2 : MRC_MODE_METAROCE);
	w->cfg.mtu = FW_MTU;
	w->cfg.num_paths = mode ? 1 : FW_PATHS;
	w->cfg.window = 32;
	/* finite retries: a run without a peer ends in an error, not a hang */
	w->cfg.retry_cnt = 3;
	w->cfg.rnr_retry = 2;
	w->now = 1000000;
	fw_ep_init(w, &w->a, 0);
	fw_ep_init(w, &w->b, 1);
}

int fw_post_send(struct fw_ep *e, uint32_t opcode, uint32_t len)
{
	struct fw_msg *m;
	struct mrc_send_wr wr;
	unsigned int i = e->nmsgs;
	int ret;

	if (i == FW_MSGS)
		return -ENOSPC;
	if (len > FW_MSG_LEN)
		len = FW_MSG_LEN;
	if (fw_is_atomic(opcode))
		len = 8;
	m = &e->msgs[i];
	memset(m, 0, sizeof(*m));
	m->opcode = opcode;
	m->len = len;
	m->compare_add = fw_atomic_init(!e->id, i) ^ (i & 1);	/* half hit */
	m->swap = fw_mix(i + 77);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.opcode = opcode;
	wr.length = len;
	wr.rkey = FW_RKEY;
	wr.remote_addr = fw_is_atomic(opcode) ? FW_ATOMIC_BASE + 8ull * i :
					       (uint64_t)i * FW_MSG_LEN;
	if (opcode == MRC_OP_SEND_WITH_IMM ||
	    opcode == MRC_OP_RDMA_WRITE_WITH_IMM)
		wr.imm_data = fw_imm(e->id, i);
	wr.compare_add = m->compare_add;
	wr.swap = m->swap;
	/* counted before posting: the callbacks may run inside the post */
	e->nmsgs++;
	if (fw_consumes_recv(opcode)) {
		m->recv = e->nconsuming;
		e->peer->recv_msg[e->nconsuming++] = i;
	}
	ret = mrc_post_send(e->conn, &wr, e->w->now);
	if (ret) {
		e->nmsgs--;
		if (fw_consumes_recv(opcode))
			e->nconsuming--;
	}
	return ret;
}

int fw_post_recv(struct fw_ep *e)
{
	int ret;

	if (e->recv_posted == FW_MSGS)
		return -ENOSPC;
	ret = mrc_post_recv(e->conn, e->recv_posted, FW_MSG_LEN);
	if (!ret)
		e->recv_posted++;
	return ret;
}

void fw_post_every_opcode(struct fw_world *w)
{
	static const uint32_t ops[] = {
		MRC_OP_SEND, MRC_OP_RDMA_WRITE, MRC_OP_SEND_WITH_IMM,
		MRC_OP_RDMA_WRITE_WITH_IMM, MRC_OP_RDMA_READ,
		MRC_OP_ATOMIC_CMP_AND_SWP, MRC_OP_ATOMIC_FETCH_AND_ADD,
	};
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		fw_post_send(&w->a, ops[i], 600);	/* 3 packets */
		fw_post_send(&w->b, ops[i], 300);	/* 2 packets */
		fw_post_recv(&w->a);
		fw_post_recv(&w->b);
	}
	fw_pump(w);
}

static void fw_poll(struct fw_ep *e)
{
	struct mrc_completion wc;

	while (mrc_poll_completion(e->conn, &wc) == 1) {
		int ok = wc.status == MRC_WC_SUCCESS;

		if (!ok)
			e->errors++;
		if (wc.opcode == MRC_OP_RECV ||
		    wc.opcode == MRC_OP_RECV_RDMA_WITH_IMM) {
			/* receives complete once each, in posting order */
			FW_CHECK(wc.wr_id == e->recv_done);
			FW_CHECK(e->recv_done < e->recv_posted);
			if (ok && !e->w->forged) {
				unsigned int r = e->recv_done, m;
				const struct fw_msg *msg;

				FW_CHECK(r < e->peer->nconsuming);
				m = e->recv_msg[r];
				msg = &e->peer->msgs[m];
				FW_CHECK(wc.byte_len == msg->len);
				FW_CHECK((wc.opcode == MRC_OP_RECV_RDMA_WITH_IMM) ==
					 (msg->opcode ==
					  MRC_OP_RDMA_WRITE_WITH_IMM));
				FW_CHECK(!!(wc.wc_flags & MRC_WC_F_IMM) ==
					 (msg->opcode != MRC_OP_SEND));
				if (msg->opcode != MRC_OP_SEND)
					FW_CHECK(wc.imm_data ==
						 fw_imm(e->peer->id, m));
				if (msg->opcode != MRC_OP_RDMA_WRITE_WITH_IMM)
					FW_CHECK(e->recv_placed[r] == msg->len);
			}
			e->recv_done++;
			continue;
		}
		/* send WRs complete once each, in posting order (RC) */
		FW_CHECK(wc.wr_id == e->tx_done);
		FW_CHECK(e->tx_done < e->nmsgs);
		FW_CHECK(wc.opcode == e->msgs[wc.wr_id].opcode);
		e->msgs[e->tx_done].done = 1;
		e->msgs[e->tx_done].status = wc.status;
		if (ok && !e->w->forged) {
			struct fw_msg *m = &e->msgs[e->tx_done];

			FW_CHECK(wc.byte_len == m->len);
			/* acknowledged means placed, all of it, once */
			FW_CHECK(m->placed == (fw_is_atomic(m->opcode) ?
					       8 : m->len));
			if (fw_is_atomic(m->opcode))
				FW_CHECK(m->result ==
					 fw_atomic_init(e->peer->id,
							e->tx_done));
		}
		e->tx_done++;
	}
}

static void fw_pump_ep(struct fw_world *w, struct fw_ep *e)
{
	static struct fw_pkt spill;
	struct fw_pkt *p;
	unsigned int path;
	int len;

	for (;;) {
		p = fw_queue_add(w);
		if (!p)
			p = &spill;	/* a full network drops it */
		len = mrc_next_packet(e->conn, p->data, sizeof(p->data), &path,
				      w->now);
		FW_CHECK(len >= 0);
		if (!len) {
			if (p != &spill)
				fw_queue_remove(w, w->nq - 1);
			break;
		}
		FW_CHECK(path < w->cfg.num_paths);
		p->dst = e->peer;
		p->path = path;
		p->len = (unsigned int)len;
		p->forged = 0;
		if (w->tap)
			w->tap(w, p);
	}
}

void fw_pump(struct fw_world *w)
{
	fw_pump_ep(w, &w->a);
	fw_pump_ep(w, &w->b);
	fw_poll(&w->a);
	fw_poll(&w->b);
}

/* Drop counters of core.h's mrc_recv_packet() errors. */
static uint64_t fw_drops(const struct mrc_conn *c)
{
	struct mrc_conn_stats st;

	mrc_get_stats(c, &st);
	return st.rx_bad_crc + st.rx_malformed + st.rx_wrong_qpn +
	       st.rx_out_of_window;
}

static int fw_recv(struct fw_world *w, struct fw_ep *e, const uint8_t *pkt,
		   size_t len, unsigned int path)
{
	uint64_t before = fw_drops(e->conn);
	int ret = mrc_recv_packet(e->conn, pkt, len, path, w->now);

	/* the documented errors, each one a counted drop */
	FW_CHECK(ret == 0 || ret == -EBADMSG || ret == -EPROTO ||
		 ret == -ENXIO || ret == -ERANGE || ret == -EINVAL);
	if (ret)
		FW_CHECK(fw_drops(e->conn) == before + 1);
	else
		FW_CHECK(fw_drops(e->conn) == before);
	return ret;
}

int fw_deliver(struct fw_world *w, unsigned int i)
{
	struct fw_pkt *p = fw_queued(w, i);
	int ret;

	if (p->forged)
		w->forged = 1;
	ret = fw_recv(w, p->dst, p->data, p->len, p->path);
	/*
	 * A genuine packet is never refused as malformed or corrupt; once
	 * something forged got in, a genuine answer to it may be (a READ
	 * response longer than the READ the requester posted).
	 */
	if (!w->forged)
		FW_CHECK(ret != -EBADMSG && ret != -EPROTO && ret != -ENXIO);
	fw_queue_remove(w, i);
	return ret;
}

void fw_drop(struct fw_world *w, unsigned int i)
{
	FW_CHECK(i < w->nq);
	fw_queue_remove(w, i);
}

struct fw_pkt *fw_duplicate(struct fw_world *w, unsigned int i)
{
	struct fw_pkt *src = fw_queued(w, i), *dup = fw_queue_add(w);

	if (dup)
		*dup = *src;
	return dup;
}

int fw_inject(struct fw_world *w, struct fw_ep *e, const uint8_t *pkt,
	      size_t len, unsigned int path)
{
	w->forged = 1;
	return fw_recv(w, e, pkt, len, path);
}

void fw_advance(struct fw_world *w, uint64_t dt)
{
	w->now += dt;
	mrc_handle_timeout(w->a.conn, w->now);
	mrc_handle_timeout(w->b.conn, w->now);
}

static struct fw_world fw_saved;
static uint64_t fw_saved_conn[2][sizeof(fw_conn_mem[0]) / 8];

void fw_save(const struct fw_world *w)
{
	fw_saved = *w;
	memcpy(fw_saved_conn, fw_conn_mem, sizeof(fw_conn_mem));
}

void fw_restore(struct fw_world *w)
{
	*w = fw_saved;
	memcpy(fw_conn_mem, fw_saved_conn, sizeof(fw_conn_mem));
}

void fw_fix_crc(uint8_t *pkt, size_t len)
{
	uint32_t crc;

	if (len < 4)
		return;
	crc = mrc_crc32c(pkt, len - 4);
	pkt[len - 4] = (uint8_t)(crc >> 24);
	pkt[len - 3] = (uint8_t)(crc >> 16);
	pkt[len - 2] = (uint8_t)(crc >> 8);
	pkt[len - 1] = (uint8_t)crc;
}

static int fw_all_sent(const struct fw_world *w)
{
	return w->a.tx_done == w->a.nmsgs && w->b.tx_done == w->b.nmsgs;
}

static void fw_check_end(const struct fw_ep *e)
{
	struct mrc_conn_stats st;
	unsigned int i;

	mrc_get_stats(e->conn, &st);
	/* a path's packet count stays within the window (no wrap below 0) */
	for (i = 0; i < e->w->cfg.num_paths; i++) {
		struct mrc_path_stats ps;

		FW_CHECK(mrc_get_path_stats(e->conn, i, &ps) == 0);
		FW_CHECK(ps.in_flight <= e->w->cfg.window);
	}
	/* an error completion leaves the QP in the error state */
	if (e->errors)
		FW_CHECK(st.in_error);
	if (e->w->forged)
		return;
	/*
	 * Every posted WR completed exactly once.  Against a peer in the
	 * error state the retry limit ends the QP, but with all paths failed
	 * the PTO backoff (up to 2^16) can take simulated minutes: that case
	 * passes while the core still has a timer armed; a core without one
	 * has stalled for good.
	 */
	if (!(e->w->timers_left && e->peer->errors))
		FW_CHECK(e->tx_done == e->nmsgs);
	for (i = 0; i < e->nmsgs; i++) {
		const struct fw_msg *m = &e->msgs[i];
		uint32_t o;

		if (!m->done || m->status != MRC_WC_SUCCESS)
			continue;
		/* the peer saw a SEND the requester saw acknowledged */
		if (fw_consumes_recv(m->opcode))
			FW_CHECK(e->peer->recv_done > m->recv ||
				 e->peer->errors);
		if (m->opcode == MRC_OP_RDMA_READ)
			for (o = 0; o < m->len; o++)
				FW_CHECK(e->lbuf[i][o] ==
					 fw_read_byte(e->peer->id,
						      i * FW_MSG_LEN + o));
		if (fw_is_write(m->opcode))
			for (o = 0; o < m->len; o++)
				FW_CHECK(e->peer->wmem[i * FW_MSG_LEN + o] ==
					 fw_byte(e->id, i, o));
		if (fw_is_atomic(m->opcode))
			FW_CHECK(e->peer->aexec[i] == 1);
	}
}

void fw_finish(struct fw_world *w, unsigned int max_steps)
{
	unsigned int step, p;

	for (p = 0; p < w->cfg.num_paths; p++) {
		mrc_path_set_state(w->a.conn, p, 1, w->now);
		mrc_path_set_state(w->b.conn, p, 1, w->now);
	}
	for (step = 0; step < max_steps; step++) {
		uint64_t t, tb;

		fw_pump(w);
		if (w->nq) {
			while (w->nq)
				fw_deliver(w, 0);
			continue;
		}
		if (fw_all_sent(w))
			break;
		t = mrc_next_deadline(w->a.conn);
		tb = mrc_next_deadline(w->b.conn);
		t = tb < t ? tb : t;
		if (t == UINT64_MAX)
			break;
		fw_advance(w, t > w->now ? t - w->now : 0);
	}
	fw_pump(w);
	w->timers_left = mrc_next_deadline(w->a.conn) != UINT64_MAX ||
			 mrc_next_deadline(w->b.conn) != UINT64_MAX;
	fw_check_end(&w->a);
	fw_check_end(&w->b);
}
