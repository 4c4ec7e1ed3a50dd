// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libFuzzer harness of the core's state machine: two connected cores
 * (fuzz_world.h) driven by a fuzzed program of posts, deliveries, drops,
 * duplicates, reorders (deliveries pick any queued packet), forged
 * packets, path changes and time steps, then a lossless drain; the world's
 * callbacks and fw_finish() check the invariants.
 *
 * Input: byte 0 bit 0 selects the mode (0 MetaRoCE, 1 RoCEv2); then ops,
 * one byte each (low 3 bits the op, bit 3 the side, bits 4-7 an argument)
 * followed by the op's argument bytes.
 */
#include <stdint.h>
#include <stddef.h>
#include "fuzz_world.h"

enum {
	OP_POST_SEND,	/* + opcode byte, length byte */
	OP_POST_RECV,
	OP_DELIVER,	/* + queue index byte */
	OP_DROP,	/* + queue index byte */
	OP_DUPLICATE,	/* + queue index byte */
	OP_ADVANCE,	/* + byte: (b + 1) << arg microseconds */
	OP_FORGE,	/* + index, offset, xor byte: a mutated copy, CRC fixed */
	OP_PATH,	/* arg: path and up/down (MetaRoCE) */
};

static const uint32_t fuzz_opcodes[8] = {
	MRC_OP_SEND, MRC_OP_RDMA_WRITE, MRC_OP_SEND_WITH_IMM,
	MRC_OP_RDMA_WRITE_WITH_IMM, MRC_OP_RDMA_READ,
	MRC_OP_ATOMIC_CMP_AND_SWP, MRC_OP_ATOMIC_FETCH_AND_ADD, MRC_OP_SEND,
};

static struct fw_world world;

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static int fuzz_byte(struct fuzz_in *in, uint8_t *b)
{
	if (!in->n)
		return 0;
	*b = *in->p++;
	in->n--;
	return 1;
}

/* A length around the MTU boundaries, where packetisation changes. */
static uint32_t fuzz_len(uint8_t sel, uint8_t b)
{
	switch (sel & 3) {
	case 0:
		return b % 4;
	case 1:
		return FW_MTU * (1 + b % 4) - 1 + (b >> 6);
	default:
		return (uint32_t)b * 4;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct fw_world *w = &world;
	uint8_t b, x, y, z;
	unsigned int steps = 0;

	if (!fuzz_byte(&in, &b))
		return 0;
	fw_init(w, b & 1);
	while (fuzz_byte(&in, &b) && steps++ < 256) {
		struct fw_ep *e = b & 8 ? &w->b : &w->a;
		unsigned int arg = b >> 4;

		switch (b & 7) {
		case OP_POST_SEND:
			if (fuzz_byte(&in, &x) && fuzz_byte(&in, &y))
				fw_post_send(e, fuzz_opcodes[x & 7],
					     fuzz_len(x >> 3, y));
			break;
		case OP_POST_RECV:
			fw_post_recv(e);
			break;
		case OP_DELIVER:
			if (fuzz_byte(&in, &x) && w->nq)
				fw_deliver(w, x % w->nq);
			break;
		case OP_DROP:
			if (fuzz_byte(&in, &x) && w->nq)
				fw_drop(w, x % w->nq);
			break;
		case OP_DUPLICATE:
			if (fuzz_byte(&in, &x) && w->nq)
				fw_duplicate(w, x % w->nq);
			break;
		case OP_ADVANCE:
			if (fuzz_byte(&in, &x))
				fw_advance(w, ((uint64_t)x + 1) << arg);
			break;
		case OP_FORGE:
			if (fuzz_byte(&in, &x) && fuzz_byte(&in, &y) &&
			    fuzz_byte(&in, &z) && w->nq) {
				struct fw_pkt *p = fw_duplicate(w, x % w->nq);

				if (p && p->len > 4) {
					p->data[y % (p->len - 4)] ^= z;
					fw_fix_crc(p->data, p->len);
				}
				if (p)
					p->forged = 1;
			}
			break;
		case OP_PATH:
			mrc_path_set_state(e->conn, arg % w->cfg.num_paths,
					   arg >> 3, w->now);
			break;
		}
		fw_pump(w);
	}
	fw_finish(w, 20000);
	return 0;
}
