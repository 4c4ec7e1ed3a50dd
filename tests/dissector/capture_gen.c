// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Writes a pcap of what the real core sends during lossy transfers, and a
 * CSV of what each datagram is (the test's expectation for the dissector):
 *
 *   capture_gen OUT.pcap OUT.csv
 *
 * Two runs of the two-endpoint fixture (tests/unit/fixture.c) with every
 * opcode and 5% loss, so SACKs, NAKs and retransmissions occur: one in
 * MetaRoCE mode over 4 paths (UDP 4793), one in RoCEv2 mode (UDP 4791).
 * Every datagram is captured as the core emitted it, framed in
 * Ethernet/IPv4/UDP with the path as UDP source port entropy.  Then
 * hand-made malformed packets follow, each tagged with the problem the
 * dissector must report.
 *
 * The CSV's qpn and path come from the fixture's configuration and the
 * core's mrc_next_packet() path (checked against the header); opcode, psn,
 * flags and SACK ranges are read with the C declarations of
 * include/metaroce/wire.h, independent of the Lua dissector under test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <metaroce/wire.h>
#include "fixture.h"
#include "../../core/crc32c.h"

#define ENTROPY_BASE 49152
#define FRAME_HDR (14 + 20 + 8)

static FILE *pcap, *csv;
static unsigned int frame;
static const char *mode_name;

static void put_frame(uint64_t now, int src_ep, uint16_t dport,
		      const uint8_t *p, unsigned int len, unsigned int path)
{
	uint8_t h[FRAME_HDR];
	uint32_t rec[4], sum = 0;
	unsigned int i, ulen = 8 + len, iplen = 20 + ulen;

	memset(h, 0, sizeof(h));
	/* Ethernet: locally administered MACs, one per endpoint */
	h[0] = 0x02; h[5] = (uint8_t)(2 - src_ep);
	h[6] = 0x02; h[11] = (uint8_t)(1 + src_ep);
	h[12] = 0x08;
	/* IPv4 */
	h[14] = 0x45;
	h[16] = (uint8_t)(iplen >> 8); h[17] = (uint8_t)iplen;
	h[22] = 64; h[23] = 17;
	h[26] = 10; h[29] = (uint8_t)(1 + src_ep);
	h[30] = 10; h[33] = (uint8_t)(2 - src_ep);
	for (i = 14; i < 34; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	h[24] = (uint8_t)(~sum >> 8); h[25] = (uint8_t)~sum;
	/* UDP: path entropy in the source port, checksum 0 (MR-WIRE-001) */
	h[34] = (uint8_t)((ENTROPY_BASE + path) >> 8);
	h[35] = (uint8_t)(ENTROPY_BASE + path);
	h[36] = (uint8_t)(dport >> 8); h[37] = (uint8_t)dport;
	h[38] = (uint8_t)(ulen >> 8); h[39] = (uint8_t)ulen;

	rec[0] = (uint32_t)(now / 1000000000u);
	rec[1] = (uint32_t)(now % 1000000000u / 1000u);
	rec[2] = rec[3] = FRAME_HDR + len;
	fwrite(rec, sizeof(rec), 1, pcap);
	fwrite(h, sizeof(h), 1, pcap);
	fwrite(p, len, 1, pcap);
	frame++;
}

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* One CSV row for a well-formed MetaRoCE packet, read through wire.h. */
static int describe_metaroce(const uint8_t *p, unsigned int len,
			     unsigned int path, uint32_t want_qpn)
{
	struct mr_hdr h;
	struct mr_ack_ext a;
	char sack[MR_MAX_SACK_RANGES * 20 + 1] = "";
	unsigned int i, n = 0;

	if (len < sizeof(h) + MR_CRC_LEN)
		return -1;
	memcpy(&h, p, sizeof(h));
	if (h.path != path || ntohl(h.dst_qpn) != want_qpn)
		return -1;
	if (h.opcode == MR_OPC_ACK || h.opcode == MR_OPC_PROBE_REPLY) {
		if (len < sizeof(h) + sizeof(a) + MR_CRC_LEN)
			return -1;
		memcpy(&a, p + sizeof(h), sizeof(a));
		for (i = 0; i < a.nranges; i++) {
			const uint8_t *r = p + sizeof(h) + sizeof(a) +
					   i * sizeof(struct mr_sack_range);

			n += (unsigned int)snprintf(sack + n, sizeof(sack) - n,
					"%s%u-%u", i ? ";" : "", be32_at(r),
					be32_at(r + 4));
		}
	}
	fprintf(csv, "%u,%s,%u,%u,%u,%u,%u,%s,ok\n", frame + 1, mode_name,
		path, want_qpn, h.opcode, ntohl(h.psn), h.flags, sack);
	return 0;
}

static int describe_rocev2(const uint8_t *p, unsigned int len,
			   unsigned int path, uint32_t want_qpn)
{
	struct mr_bth b;

	if (len < sizeof(b) + MR_CRC_LEN)
		return -1;
	memcpy(&b, p, sizeof(b));
	if ((ntohl(b.dqpn) & MR_PSN_MASK) != want_qpn)
		return -1;
	fprintf(csv, "%u,%s,%u,%u,%u,%u,%u,,ok\n", frame + 1, mode_name, path,
		want_qpn, b.opcode, ntohl(b.apsn) & MR_PSN_MASK, b.flags);
	return 0;
}

static int tap_failures;
/* The first data packet and the first ACK sent, templates for bad ones. */
static uint8_t data_tmpl[FX_PKT_CAP], ack_tmpl[FX_PKT_CAP];
static unsigned int data_len, ack_len;
/* Data packets that carried an ACK (MR-WIRE-010). */
static unsigned int carried;

static void tap(struct fx *f, const struct fx_ep *src, const uint8_t *p,
		unsigned int len, unsigned int path)
{
	int rocev2 = f->cfg.mode == MRC_MODE_ROCEV2;
	uint32_t qpn = src->id ? 0x11 : 0x22;	/* the peer's, fx_init() */
	int ret;

	ret = rocev2 ? describe_rocev2(p, len, path, qpn) :
		       describe_metaroce(p, len, path, qpn);
	if (ret) {
		fprintf(stderr, "capture_gen: packet %u does not match its "
			"sender (path %u, qpn %#x)\n", frame + 1, path, qpn);
		tap_failures++;
	}
	put_frame(f->now, src->id, rocev2 ? MR_ROCEV2_UDP_PORT : MR_UDP_PORT,
		  p, len, path);
	if (rocev2)
		return;
	if (p[1] != MR_OPC_ACK && (p[2] & MR_FLAG_ACK))
		carried++;
	if (!data_len && p[1] == MR_OPC_SEND && !(p[2] & MR_FLAG_ACK) &&
	    len <= sizeof(data_tmpl)) {
		memcpy(data_tmpl, p, len);
		data_len = len;
	}
	if (!ack_len && p[1] == MR_OPC_ACK && p[34] > 0 &&
	    len <= sizeof(ack_tmpl)) {
		memcpy(ack_tmpl, p, len);
		ack_len = len;
	}
}

/*
 * Run f, set up by the caller, to the end with every packet captured
 * (mode_name set); 0 if the transfer verified and every packet matched
 * its sender.
 */
static int capture_run(struct fx *f, const char *what)
{
	f->tap = tap;
	if (fx_run(f, 10000000000ull) || fx_verify(f)) {
		fprintf(stderr, "capture_gen: %s failed\n", what);
		return -1;
	}
	return tap_failures ? -1 : 0;
}

static int run(uint32_t mode, unsigned int paths, uint64_t seed)
{
	static struct fx f;
	struct mrc_config cfg;
	struct fx_net_cfg net = {
		.loss_ppm = 50000, .base_delay_ns = 10000,
		.jitter_ns = 30000, .all_opcodes = 1,
	};

	mrc_config_default(&cfg, mode);
	cfg.mtu = FX_MTU;
	cfg.num_paths = paths;
	fx_init(&f, &cfg, &net, seed, 40, 40);
	mode_name = mode == MRC_MODE_ROCEV2 ? "rocev2" : "metaroce";
	return capture_run(&f, mode == MRC_MODE_ROCEV2 ? "rocev2 transfer" :
			   "metaroce transfer");
}

/*
 * ibv_rc_pingpong's exchange of SENDs, whose replies carry the ACKs of the
 * messages they answer (MR-LOSS-014, MR-WIRE-010).
 */
static int run_pingpong(uint64_t seed)
{
	static struct fx f;
	struct mrc_config cfg;
	struct fx_net_cfg net = {
		.loss_ppm = 20000, .base_delay_ns = 10000,
	};
	unsigned int i;

	mrc_config_default(&cfg, MRC_MODE_METAROCE);
	cfg.mtu = FX_MTU;
	cfg.final_ack_hold_ns = 50000;
	fx_init(&f, &cfg, &net, seed, 0, 0);
	f.a.pingpong = FX_PING;
	f.b.pingpong = FX_PONG;
	for (i = 0; i < 20; i++) {
		f.a.msgs[f.a.nmsgs].opcode = MRC_OP_SEND;
		f.a.msgs[f.a.nmsgs++].len = 1 + i * 97 % FX_MTU;
		f.b.msgs[f.b.nmsgs].opcode = MRC_OP_SEND;
		f.b.msgs[f.b.nmsgs++].len = 1 + i * 61 % FX_MTU;
	}
	mode_name = "metaroce";
	return capture_run(&f, "ping-pong");
}

static void recrc(uint8_t *p, unsigned int len)
{
	uint32_t c = htonl(mrc_crc32c(p, len - MR_CRC_LEN));

	memcpy(p + len - MR_CRC_LEN, &c, 4);
}

/* A malformed packet and the problem the dissector must name. */
static void bad(const uint8_t *p, unsigned int len, const char *problem)
{
	fprintf(csv, "%u,metaroce,%u,,,,,,%s\n", frame + 1, len > 3 ? p[3] : 0,
		problem);
	put_frame(1000000000000ull + frame, 0, MR_UDP_PORT, p, len,
		  len > 3 ? p[3] : 0);
}

static void malformed(void)
{
	uint8_t p[FX_PKT_CAP];

	memcpy(p, data_tmpl, data_len);
	p[data_len - MR_CRC_LEN - 1] ^= 0x40;	/* payload bit flipped in flight */
	bad(p, data_len, "crc");

	memcpy(p, data_tmpl, data_len);
	p[0] = 0x21;			/* version 2 */
	recrc(p, data_len);
	bad(p, data_len, "version");

	memcpy(p, data_tmpl, data_len);
	p[1] = 0x7f;			/* no such opcode */
	recrc(p, data_len);
	bad(p, data_len, "opcode");

	bad(data_tmpl, 10, "short");	/* shorter than the common header */

	memcpy(p, data_tmpl, data_len);
	p[2] ^= MR_FLAG_FIRST;		/* FIRST disagrees with offset */
	recrc(p, data_len);
	bad(p, data_len, "flags");

	memcpy(p, ack_tmpl, ack_len);
	p[34] = MR_MAX_SACK_RANGES + 1;	/* too many ranges */
	recrc(p, ack_len);
	bad(p, ack_len, "nranges");

	memcpy(p, ack_tmpl, ack_len);	/* one range more or less */
	p[34] += p[34] == MR_MAX_SACK_RANGES ? -1 : 1;
	recrc(p, ack_len);
	bad(p, ack_len, "length");
}

int main(int argc, char **argv)
{
	/* pcap global header: microsecond timestamps, LINKTYPE_ETHERNET */
	const uint32_t ghdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };

	if (argc != 3) {
		fprintf(stderr, "usage: capture_gen OUT.pcap OUT.csv\n");
		return 2;
	}
	pcap = fopen(argv[1], "wb");
	csv = fopen(argv[2], "w");
	if (!pcap || !csv) {
		perror("capture_gen");
		return 1;
	}
	fwrite(ghdr, sizeof(ghdr), 1, pcap);
	fprintf(csv, "frame,mode,path,qpn,opcode,psn,flags,sack,expect\n");
	if (run(MRC_MODE_METAROCE, 4, 7) || run_pingpong(7) ||
	    run(MRC_MODE_ROCEV2, 1, 7))
		return 1;
	if (!data_len || !ack_len) {
		fprintf(stderr, "capture_gen: no SEND or SACK to corrupt\n");
		return 1;
	}
	if (!carried) {
		fprintf(stderr, "capture_gen: no data packet carried an ACK\n");
		return 1;
	}
	malformed();
	if (fclose(pcap) || fclose(csv)) {
		perror("capture_gen");
		return 1;
	}
	return 0;
}
