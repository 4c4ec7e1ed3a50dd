// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// Building and decoding MetaRoCE and RoCEv2-mode packets (docs/spec/wire.md,
// compat.md).  The suite decodes what a DUT sends independently of the core;
// only the CRC32C table is the core's (core/crc32c.c, MR-WIRE-006).
#include "compliance.hpp"

#include <cstring>

extern "C" {
#include "crc32c.h"
}

namespace mrcomp {

uint32_t crc32c(const uint8_t *p, size_t n) { return mrc_crc32c(p, n); }

void put_be16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}
void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}
uint16_t get_be16(const uint8_t *p) { return (p[0] << 8) | p[1]; }
uint32_t get_be32(const uint8_t *p)
{
	return (static_cast<uint32_t>(get_be16(p)) << 16) | get_be16(p + 2);
}
uint64_t get_be64(const uint8_t *p)
{
	return (static_cast<uint64_t>(get_be32(p)) << 32) | get_be32(p + 4);
}

void seal(Bytes &b)
{
	uint32_t c = crc32c(b.data(), b.size());
	b.resize(b.size() + 4);
	put_be32(b.data() + b.size() - 4, c);
}

void reseal(Bytes &b)
{
	if (b.size() < 4)
		return;
	b.resize(b.size() - 4);
	seal(b);
}

bool crc_ok(const Bytes &b)
{
	return b.size() >= 4 &&
	       crc32c(b.data(), b.size() - 4) == get_be32(b.data() + b.size() - 4);
}

// CRC-32 (IEEE 802.3, reflected 0xEDB88320), not the core's: the ICRC is
// outside the core (it covers IP and UDP headers).
static uint32_t crc32_ieee(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return c;
}

uint32_t icrc_ipv4(const uint8_t *ip, const uint8_t *udp, size_t len)
{
	// Masked to ones (IBTA A17.8.2): the 8 bytes of a RoCEv2 packet's
	// absent LRH, IPv4 TOS, TTL and checksum, the UDP checksum and the
	// BTH's reserved byte before the QPN.
	static const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff};
	uint8_t h[20 + 8 + 12];
	if (len < 8 + 12 + 4)
		return 0;
	std::memcpy(h, ip, 20);
	h[1] = 0xff;
	h[8] = 0xff;
	h[10] = h[11] = 0xff;
	std::memcpy(h + 20, udp, 20);
	h[26] = h[27] = 0xff;
	h[28 + 4] = 0xff;
	uint32_t c = crc32_ieee(0xffffffffu, lrh, sizeof(lrh));
	c = crc32_ieee(c, h, sizeof(h));
	c = crc32_ieee(c, udp + 20, len - 20 - 4);
	return ~c;
}

static void put_common(Bytes &b, uint8_t version, uint8_t caps, uint8_t opcode,
		       uint8_t flags, uint8_t path, uint32_t qpn, uint32_t psn,
		       uint32_t ts)
{
	b.resize(16);
	b[0] = static_cast<uint8_t>(version << 4 | (caps & 0xf));
	b[1] = opcode;
	b[2] = flags;
	b[3] = path;
	put_be32(&b[4], qpn);
	put_be32(&b[8], psn);
	put_be32(&b[12], ts);
}

Bytes DataPkt::build() const
{
	Bytes b;
	put_common(b, version, caps, opcode, flags, path, qpn, psn, ts);
	b.resize(40);
	put_be32(&b[16], msg_id);
	put_be32(&b[20], offset);
	put_be32(&b[24], msg_len);
	put_be32(&b[28], rkey_ssn);
	put_be64(&b[32], raddr);
	b.insert(b.end(), payload.begin(), payload.end());
	seal(b);
	return b;
}

Bytes AckPkt::build() const
{
	Bytes b;
	put_common(b, version, caps, opcode, flags, path, qpn, psn, ts);
	b.resize(36 + 8 * ranges.size());
	put_be32(&b[16], cum_psn);
	put_be32(&b[20], ts_echo);
	put_be32(&b[24], ack_delay);
	put_be32(&b[28], nak_psn);
	b[32] = echo_path;
	b[33] = syndrome;
	b[34] = static_cast<uint8_t>(ranges.size());
	b[35] = ack_flags;
	for (size_t i = 0; i < ranges.size(); i++) {
		put_be32(&b[36 + 8 * i], ranges[i].first);
		put_be32(&b[40 + 8 * i], ranges[i].second);
	}
	seal(b);
	return b;
}

// Length of the extensions after the data extension (MR-WIRE-009).
static size_t opcode_ext_len(uint8_t opcode)
{
	switch (opcode) {
	case 0x03: case 0x04: return 8;
	case 0x07: case 0x08: return 16;
	default: return 0;
	}
}

Parsed parse(const Bytes &b)
{
	Parsed p;
	if (b.size() < 20) {
		p.why = "shorter than the common header and CRC";
		return p;
	}
	p.version = b[0] >> 4;
	p.caps = b[0] & 0xf;
	p.opcode = b[1];
	p.flags = b[2];
	p.path = b[3];
	p.qpn_field = get_be32(&b[4]);
	p.psn = get_be32(&b[8]);
	p.ts = get_be32(&b[12]);
	if (!crc_ok(b)) {
		p.why = "CRC32C trailer wrong";
		return p;
	}
	size_t body = b.size() - 4;
	if (p.is_data()) {
		size_t hdr = 40 + opcode_ext_len(p.opcode);
		if (body < hdr) {
			p.why = "data packet shorter than its extensions";
			return p;
		}
		p.msg_id = get_be32(&b[16]);
		p.offset = get_be32(&b[20]);
		p.msg_len = get_be32(&b[24]);
		p.rkey_ssn = get_be32(&b[28]);
		p.raddr = get_be64(&b[32]);
		p.payload_off = hdr;
		p.payload_len = body - hdr;
	} else if (p.opcode == 0x10 || p.opcode == 0x20 || p.opcode == 0x21) {
		if (body < 36) {
			p.why = "ACK/probe shorter than the acknowledgement extension";
			return p;
		}
		p.cum_psn = get_be32(&b[16]);
		p.ts_echo = get_be32(&b[20]);
		p.ack_delay = get_be32(&b[24]);
		p.nak_psn = get_be32(&b[28]);
		p.echo_path = b[32];
		p.syndrome = b[33];
		p.nranges = b[34];
		p.ack_flags = b[35];
		if (body < 36 + 8u * p.nranges) {
			p.why = "ACK shorter than its SACK ranges";
			return p;
		}
		for (unsigned i = 0; i < p.nranges; i++)
			p.ranges.emplace_back(get_be32(&b[36 + 8 * i]),
					      get_be32(&b[40 + 8 * i]));
	}
	p.valid = true;
	return p;
}

Bytes BthPkt::build() const
{
	Bytes b(12);
	unsigned pad = (4 - payload.size() % 4) % 4;
	b[0] = opcode;
	b[1] = static_cast<uint8_t>((se_m_pad_tver & 0xcf) | pad << 4);
	put_be16(&b[2], pkey);
	put_be32(&b[4], qpn & 0xffffff);
	put_be32(&b[8], (psn & 0xffffff) | (ackreq ? 0x80000000u : 0));
	b.insert(b.end(), ext.begin(), ext.end());
	b.insert(b.end(), payload.begin(), payload.end());
	b.resize(b.size() + pad);
	seal(b);
	return b;
}

ParsedBth parse_bth(const Bytes &b)
{
	ParsedBth p;
	if (b.size() < 16 || !crc_ok(b))
		return p;
	p.opcode = b[0];
	p.pad = (b[1] >> 4) & 3;
	p.pkey = get_be16(&b[2]);
	p.qpn_field = get_be32(&b[4]);
	uint32_t apsn = get_be32(&b[8]);
	p.ackreq = apsn & 0x80000000u;
	p.psn = apsn & 0xffffff;
	if (p.opcode == 0x11 || p.opcode == 0x12 || p.opcode == 0x0d ||
	    p.opcode == 0x0f || p.opcode == 0x10) {
		if (b.size() < 20)
			return p;
		uint32_t a = get_be32(&b[12]);
		p.has_aeth = true;
		p.aeth_syndrome = a >> 24;
		p.aeth_msn = a & 0xffffff;
	}
	p.valid = true;
	return p;
}

}  // namespace mrcomp
