// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libFuzzer harness of the core's packet parser, both modes: one datagram
 * delivered to a core that has WRs of every opcode in flight and
 * receives posted (so ACKs, NAKs and responses find state to act on),
 * then both cores build what they owe and run their timers once.  Checks: the
 * return is one of core.h's errnos and each error is one counted drop
 * (fuzz_world.c), the callbacks' bounds, no crash or sanitizer report.
 *
 * Input: byte 0: bit 0 mode (0 MetaRoCE, 1 RoCEv2), bit 1 "store a valid
 * CRC32C trailer" (so mutations reach the parser behind the integrity
 * check), bit 2 the receiving side (0 A, 1 B), bits 4-7 the arrival path;
 * the rest is the UDP payload.
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "fuzz_world.h"

static struct fw_world world;
static uint8_t pkt[4096 + 64];
static int saved[2];	/* which mode fw_save() holds */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_world *w = &world;
	size_t len;
	uint8_t ctl;

	if (!size)
		return 0;
	ctl = data[0];
	len = size - 1 < sizeof(pkt) ? size - 1 : sizeof(pkt);
	memcpy(pkt, data + 1, len);
	if (ctl & 2)
		fw_fix_crc(pkt, len);
	/* both modes' starting state is built once, then copied back */
	if (!saved[ctl & 1]) {
		fw_init(w, ctl & 1);
		fw_post_every_opcode(w);
		fw_save(w);
		saved[ctl & 1] = 1;
		saved[!(ctl & 1)] = 0;
	} else {
		fw_restore(w);
	}
	fw_inject(w, ctl & 4 ? &w->b : &w->a, pkt, len, ctl >> 4);
	fw_pump(w);
	fw_advance(w, 5000000);
	fw_pump(w);
	return 0;
}
