/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * MetaRoCE on-the-wire formats, shared by the kernel module, the userspace
 * core and tools.  Normative text: docs/spec/wire.md (MR-WIRE-*).
 *
 * Every multi-byte field is big-endian (network order).  A MetaRoCE packet
 * is the payload of one UDP datagram to MR_UDP_PORT:
 *
 *   struct mr_hdr | extension (by opcode) | payload | CRC32C (4 bytes, BE)
 *
 * The CRC32C (Castagnoli, reflected, init/xorout 0xffffffff) covers every
 * byte before it.  In RoCEv2-compatible mode the datagram goes to
 * MR_ROCEV2_UDP_PORT and carries IBTA BTH [+RETH] [+AETH] | payload | ICRC.
 */
#ifndef METAROCE_WIRE_H
#define METAROCE_WIRE_H

#include <linux/types.h>

#define MR_UDP_PORT		4793	/* MetaRoCE default destination port */
#define MR_ROCEV2_UDP_PORT	4791	/* IANA RoCEv2 */

#define MR_VERSION		1
#define MR_CRC_LEN		4

/* MetaRoCE opcodes (struct mr_hdr.opcode). */
enum mr_opcode {
	MR_OPC_SEND = 0x01,		/* data of a SEND message */
	MR_OPC_WRITE = 0x02,		/* data of an RDMA WRITE message */
	MR_OPC_SEND_IMM = 0x03,		/* SEND with immediate: + mr_imm_ext */
	MR_OPC_WRITE_IMM = 0x04,	/* WRITE with immediate: + mr_imm_ext */
	MR_OPC_READ_REQ = 0x05,		/* RDMA READ request, no payload */
	MR_OPC_READ_RESP = 0x06,	/* READ response data (responder's PSNs) */
	MR_OPC_CMP_SWAP = 0x07,		/* atomic request: + mr_atomic_ext */
	MR_OPC_FETCH_ADD = 0x08,	/* atomic request: + mr_atomic_ext */
	MR_OPC_ATOMIC_RESP = 0x09,	/* original value, 8 bytes payload */
	MR_OPC_ACK = 0x10,		/* cumulative ACK + SACK ranges */
	MR_OPC_PROBE = 0x20,		/* path liveness probe */
	MR_OPC_PROBE_REPLY = 0x21,
};

/* struct mr_hdr.flags */
#define MR_FLAG_FIRST		0x01	/* first packet of its message */
#define MR_FLAG_LAST		0x02	/* last packet of its message */
#define MR_FLAG_RETX		0x04	/* retransmission */
#define MR_FLAG_ACK_REQ		0x08	/* ask the receiver to ACK at once */
#define MR_FLAG_ACK		0x10	/* data: an ACK trailer precedes the CRC */

/* Capability bits advertised in the low nibble of ver_caps. */
#define MR_CAP_SACK		0x01
#define MR_CAP_ACK_TRAILER	0x02	/* takes data packets with MR_FLAG_ACK */

/* Common header, 16 bytes, starts every MetaRoCE packet. */
struct mr_hdr {
	__u8 ver_caps;		/* version << 4 | capability bits */
	__u8 opcode;		/* enum mr_opcode */
	__u8 flags;		/* MR_FLAG_* */
	__u8 path;		/* sender's path index the packet left on */
	__be32 dst_qpn;		/* low 24 bits; high 8 bits zero */
	__be32 psn;		/* low 24 bits data PSN (0 for control) */
	__be32 ts;		/* sender time, units of 1024 ns, wraps */
};

/* Extension of MR_OPC_SEND / MR_OPC_WRITE, 24 bytes. */
struct mr_data_ext {
	__be32 msg_id;		/* per-connection message number */
	__be32 offset;		/* byte offset of this payload in the message */
	__be32 msg_len;		/* total message length in bytes */
	__be32 rkey_ssn;	/* WRITE: rkey; SEND: send sequence number */
	__be64 raddr;		/* WRITE: remote address of offset 0 */
};

/* After mr_data_ext of MR_OPC_SEND_IMM / MR_OPC_WRITE_IMM, 8 bytes. */
struct mr_imm_ext {
	__be32 imm;		/* immediate data */
	__be32 ssn;		/* send sequence number (receive matching) */
};

/* After mr_data_ext of MR_OPC_CMP_SWAP / MR_OPC_FETCH_ADD, 16 bytes. */
struct mr_atomic_ext {
	__be64 swap_add;	/* CMP_SWAP: swap; FETCH_ADD: add */
	__be64 compare;		/* CMP_SWAP only */
};

/* ACK syndromes (struct mr_ack_ext.syndrome). */
enum mr_ack_syndrome {
	MR_ACK_OK = 0,
	MR_ACK_RNR = 1,			/* no receive posted for nak_psn */
	MR_ACK_REM_ACCESS = 2,		/* place_write refused nak_psn */
	MR_ACK_INV_REQ = 3,		/* message longer than receive WR */
	MR_ACK_REM_OP = 4,		/* responder failed nak_psn's operation */
};

#define MR_MAX_SACK_RANGES	16

/* Extension of MR_OPC_ACK / MR_OPC_PROBE_REPLY, 20 bytes + ranges. */
struct mr_ack_ext {
	__be32 cum_psn;		/* every PSN before this was received */
	__be32 ts_echo;		/* ts of the packet that triggered the ACK */
	__be32 ack_delay;	/* time the ACK was held, 1024 ns units */
	__be32 nak_psn;		/* PSN the syndrome refers to */
	__u8 echo_path;		/* path of the packet whose ts is echoed */
	__u8 syndrome;		/* enum mr_ack_syndrome */
	__u8 nranges;		/* SACK ranges that follow, <= MAX */
	__u8 flags;		/* MR_ACK_F_* (was reserved, 0) */
};

/*
 * A data packet with MR_FLAG_ACK ends, before its CRC, with a struct
 * mr_ack_ext of nranges 0 and syndrome MR_ACK_OK: the ACK its sender owed,
 * carried instead of sent on its own (MR-WIRE-010).
 */
#define MR_ACK_TRAILER_LEN	20

/* struct mr_ack_ext.flags (ACK only; PROBE_REPLY sends 0). */
#define MR_ACK_F_ECE		0x01	/* the echoed packet arrived CE-marked */
#define MR_ACK_F_DSACK		0x02	/* nak_psn arrived again: a duplicate */

/* One SACK range: PSNs [start, end) were received, 24-bit modular. */
struct mr_sack_range {
	__be32 start;
	__be32 end;
};

/* IBTA headers used by RoCEv2-compatible mode. */
#define MR_BTH_LEN		12
#define MR_RETH_LEN		16
#define MR_AETH_LEN		4
#define MR_IMMDT_LEN		4
#define MR_ATOMIC_ETH_LEN	28
#define MR_ATOMIC_ACK_ETH_LEN	8

enum mr_ib_opcode {
	MR_IB_SEND_FIRST = 0x00,
	MR_IB_SEND_MIDDLE = 0x01,
	MR_IB_SEND_LAST = 0x02,
	MR_IB_SEND_ONLY = 0x04,
	MR_IB_WRITE_FIRST = 0x06,
	MR_IB_WRITE_MIDDLE = 0x07,
	MR_IB_WRITE_LAST = 0x08,
	MR_IB_SEND_LAST_IMM = 0x03,
	MR_IB_SEND_ONLY_IMM = 0x05,
	MR_IB_WRITE_LAST_IMM = 0x09,
	MR_IB_WRITE_ONLY = 0x0a,
	MR_IB_WRITE_ONLY_IMM = 0x0b,
	MR_IB_READ_REQ = 0x0c,
	MR_IB_READ_RESP_FIRST = 0x0d,
	MR_IB_READ_RESP_MIDDLE = 0x0e,
	MR_IB_READ_RESP_LAST = 0x0f,
	MR_IB_READ_RESP_ONLY = 0x10,
	MR_IB_ACK = 0x11,
	MR_IB_ATOMIC_ACK = 0x12,
	MR_IB_CMP_SWAP = 0x13,
	MR_IB_FETCH_ADD = 0x14,
};

/* AETH syndrome byte: top 3 bits select the kind. */
#define MR_AETH_ACK		0x00	/* | credit count (0x1f = invalid) */
#define MR_AETH_RNR_NAK		0x20	/* | RNR timer code */
#define MR_AETH_NAK		0x60	/* | NAK code below */
#define MR_AETH_NAK_PSN_SEQ	0x00
#define MR_AETH_NAK_INV_REQ	0x01
#define MR_AETH_NAK_REM_ACCESS	0x02
#define MR_AETH_NAK_REM_OP	0x03

struct mr_bth {
	__u8 opcode;
	__u8 flags;		/* SE:1 M:1 pad:2 tver:4 */
	__be16 pkey;
	__be32 dqpn;		/* reserved 8 | dest QP 24 */
	__be32 apsn;		/* AckReq:1 reserved:7 | PSN 24 */
};

struct mr_reth {
	__be64 va;
	__be32 rkey;
	__be32 dma_len;
};

struct mr_aeth {
	__be32 syn_msn;		/* syndrome 8 | MSN 24 */
};

#define MR_BTH_ACKREQ		0x80000000u
#define MR_PSN_MASK		0x00ffffffu
#define MR_DEFAULT_PKEY		0xffff

#endif /* METAROCE_WIRE_H */
