// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Writes the seed corpus of the fuzz harnesses from real traffic:
 *
 *   fuzz_seed_gen DIR    creates DIR/packet/ and DIR/conn/
 *
 * packet/: for each mode, the world of fuzz_world.h runs a WR of every
 * opcode from both sides to completion; the first packet of each
 * (mode, opcode, receiving side) is kept as a fuzz_packet input (the
 * control byte of fuzz_packet.c, then the datagram).  In MetaRoCE mode
 * path 1 drops everything for a while first, so it fails and is probed:
 * PROBE and PROBE_REPLY are real packets too.
 *
 * conn/: fuzz_conn programs for both modes: the same traffic delivered
 * in order; delivered out of order with drops and duplicates; and with a
 * forged copy of a packet.
 *
 * The output depends on nothing but the core, so ctest fuzz_seed_corpus
 * regenerates it and compares it with tests/fuzz/corpus.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <metaroce/wire.h>
#include "fuzz_world.h"

static const char *out_dir;
static unsigned char seen[2][256][2];

static void write_file(const char *sub, const char *name,
		       const uint8_t *a, size_t alen,
		       const uint8_t *b, size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(a, 1, alen, f) != alen ||
	    (blen && fwrite(b, 1, blen, f) != blen) || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void tap(struct fw_world *w, const struct fw_pkt *p)
{
	unsigned int mode = w->cfg.mode == MRC_MODE_ROCEV2;
	/* MetaRoCE: opcode byte 1; RoCEv2: the BTH opcode, byte 0 */
	uint8_t opc = mode ? p->data[0] : p->data[1];
	int side = p->dst == &w->b;
	uint8_t ctl = (uint8_t)(mode | 2 | side << 2 | p->path << 4);
	char name[64];

	if (seen[mode][opc][side])
		return;
	seen[mode][opc][side] = 1;
	snprintf(name, sizeof(name), "%s-op%02x-to-%c",
		 mode ? "rocev2" : "metaroce", opc, side ? 'B' : 'A');
	write_file("packet", name, &ctl, 1, p->data, p->len);
}

static struct fw_world world;

/*
 * Follow the timers until t, losing everything on path dark and delivering
 * the rest: the path times out, is suspected, fails and is probed.  Then it
 * heals, and runs on until a probe of it was answered.
 */
static void path_dark(struct fw_world *w, unsigned int dark, uint64_t t)
{
	unsigned int i, steps;

	for (steps = 0; steps < 100000; steps++) {
		uint64_t d = mrc_next_deadline(w->a.conn);
		uint64_t db = mrc_next_deadline(w->b.conn);

		if (w->now >= t && seen[0][MR_OPC_PROBE_REPLY][0])
			break;
		d = db < d ? db : d;
		if (d == UINT64_MAX || (w->now < t && d > t))
			d = w->now < t ? t : w->now + 1000;
		fw_advance(w, d > w->now ? d - w->now : 1000);
		fw_pump(w);
		for (i = 0; w->nq; ) {
			if (w->now < t && fw_queued(w, i)->path == dark)
				fw_drop(w, i);
			else
				fw_deliver(w, i);
			fw_pump(w);
		}
	}
}

static void packet_seeds(unsigned int mode)
{
	static const uint32_t ops[] = {
		MRC_OP_SEND, MRC_OP_RDMA_WRITE, MRC_OP_SEND_WITH_IMM,
		MRC_OP_RDMA_WRITE_WITH_IMM, MRC_OP_RDMA_READ,
	};
	struct fw_world *w = &world;
	struct mrc_config patient;
	unsigned int i;

	fw_init(w, mode);
	w->tap = tap;
	/* enough retries to outlive the blackout below */
	patient = w->cfg;
	patient.retry_cnt = 7;
	patient.local_psn = FW_PSN_A;
	mrc_conn_set_requester(w->a.conn, &patient);
	patient.local_psn = FW_PSN_B;
	mrc_conn_set_requester(w->b.conn, &patient);
	fw_post_every_opcode(w);
	fw_finish(w, 20000);
	/* single-packet messages (the RoCEv2 *_ONLY opcodes) */
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		fw_post_send(&w->a, ops[i], 100);
		fw_post_recv(&w->b);
	}
	fw_pump(w);
	/* MetaRoCE: a path times out, fails and is probed (PROBE, REPLY) */
	if (!mode)
		path_dark(w, 1, w->now + 5 * w->cfg.probe_interval_ns);
	fw_finish(w, 20000);
}

/* fuzz_conn.c's op bytes */
#define C_SEND(side)	(uint8_t)(0 | (side) << 3)
#define C_RECV(side)	(uint8_t)(1 | (side) << 3)
#define C_DELIVER	2
#define C_DROP		3
#define C_DUP		4
#define C_ADVANCE(sh)	(uint8_t)(5 | (sh) << 4)
#define C_FORGE		6

struct prog {
	uint8_t b[1024];
	size_t n;
};

static void put(struct prog *p, uint8_t b)
{
	if (p->n < sizeof(p->b))
		p->b[p->n++] = b;
}

/* Every opcode from both sides with receives, as fw_post_every_opcode. */
static void put_traffic(struct prog *p)
{
	/* opcode index x & 7, length class x >> 3 & 3 (2: 4 * y bytes) */
	static const uint8_t ops[] = { 0, 1, 2, 3, 4, 5, 6 };
	unsigned int i, s;

	for (i = 0; i < sizeof(ops); i++)
		for (s = 0; s < 2; s++) {
			put(p, C_SEND(s));
			put(p, (uint8_t)(ops[i] | 2 << 3));
			put(p, s ? 75 : 150);
			put(p, C_RECV(s));
		}
}

static void conn_seeds(unsigned int mode)
{
	const char *m = mode ? "rocev2" : "metaroce";
	struct prog p;
	char name[64];
	unsigned int i;

	/* in order: deliver the oldest packet, let a little time pass */
	memset(&p, 0, sizeof(p));
	put(&p, (uint8_t)mode);
	put_traffic(&p);
	for (i = 0; i < 120; i++) {
		put(&p, C_DELIVER);
		put(&p, 0);
		if (i % 8 == 7) {
			put(&p, C_ADVANCE(4));
			put(&p, 1);
		}
	}
	snprintf(name, sizeof(name), "%s-in-order", m);
	write_file("conn", name, p.b, p.n, NULL, 0);

	/* out of order, with losses, duplicates and timeouts */
	memset(&p, 0, sizeof(p));
	put(&p, (uint8_t)mode);
	put_traffic(&p);
	for (i = 0; i < 100; i++) {
		switch (i % 7) {
		case 2:
			put(&p, C_DROP);
			put(&p, (uint8_t)(i * 5));
			break;
		case 4:
			put(&p, C_DUP);
			put(&p, (uint8_t)i);
			break;
		case 6:
			put(&p, C_ADVANCE(10));
			put(&p, (uint8_t)(i * 3));
			break;
		default:
			put(&p, C_DELIVER);
			put(&p, (uint8_t)(i * 13 + 1));
		}
	}
	snprintf(name, sizeof(name), "%s-lossy", m);
	write_file("conn", name, p.b, p.n, NULL, 0);

	/* a forged copy of the first queued packet, then in order */
	memset(&p, 0, sizeof(p));
	put(&p, (uint8_t)mode);
	put_traffic(&p);
	put(&p, C_FORGE);
	put(&p, 0);
	put(&p, 6);
	put(&p, 0x01);
	for (i = 0; i < 100; i++) {
		put(&p, C_DELIVER);
		put(&p, 0);
	}
	snprintf(name, sizeof(name), "%s-forged", m);
	write_file("conn", name, p.b, p.n, NULL, 0);
}

int main(int argc, char **argv)
{
	char path[4096];
	unsigned int mode;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	mkdir(out_dir, 0755);
	snprintf(path, sizeof(path), "%s/packet", out_dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/conn", out_dir);
	mkdir(path, 0755);
	for (mode = 0; mode < 2; mode++) {
		packet_seeds(mode);
		conn_seeds(mode);
	}
	return 0;
}
