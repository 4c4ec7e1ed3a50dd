/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Limits and fixed attributes of a MetaRoCE device: the one place that
 * defines what query_device / query_port / get_port_immutable report.
 */
#ifndef METAROCE_PARAM_H
#define METAROCE_PARAM_H

#include <linux/ipv6.h>
#include <linux/udp.h>
#include <rdma/ib_verbs.h>
#include <metaroce/core.h>
#include <metaroce/wire.h>

/* Device attributes (struct ib_device_attr). */
#define METAROCE_VENDOR_ID		0xffffff	/* no IEEE OUI: software */
#define METAROCE_VENDOR_PART_ID		0
#define METAROCE_HW_VER			0
#define METAROCE_MAX_MR_SIZE		(1ull << 32)
#define METAROCE_PAGE_SIZE_CAP		0xfffff000u	/* 4 KiB .. 2 GiB */
#define METAROCE_MAX_QP			0x10000
#define METAROCE_MAX_QP_WR		0x4000
#define METAROCE_MAX_SGE		32
#define METAROCE_MAX_SGE_RD		32
#define METAROCE_MAX_CQ			0x4000
#define METAROCE_MAX_CQE		0x8000
#define METAROCE_MAX_MR			0x8000
#define METAROCE_MAX_PD			0x8000
/* READ/atomic in progress and responder resources: the core's MRC_MAX_RD_ATOMIC */
#define METAROCE_MAX_QP_RD_ATOM		16
#define METAROCE_MAX_QP_INIT_RD_ATOM	16
#define METAROCE_MAX_SRQ		0x4000
#define METAROCE_MAX_SRQ_WR		METAROCE_MAX_QP_WR
#define METAROCE_MAX_SRQ_SGE		METAROCE_MAX_SGE
/* Receive WQEs an SRQ-attached QP holds at most (metaroce_srq.c). */
#define METAROCE_SRQ_QP_DEPTH		16
#define METAROCE_MAX_AH			0x8000
#define METAROCE_MAX_PKEYS		1
#define METAROCE_LOCAL_CA_ACK_DELAY	15
#define METAROCE_MAX_INLINE		256	/* bytes of inline send data */

/*
 * Queueing delay above the smallest RTT at which a path of a QP created
 * with METAROCE_CC_DELAY shrinks its window, and below which a loss does
 * not with the loss gate (the core's target_delay_ns, MR-CC-006/007):
 * the default of sysfs cc_delay_target_ns.
 */
#define METAROCE_CC_DELAY_TARGET_NS	(100 * NSEC_PER_USEC)
/* Bounds of the sysfs attribute cc_delay_target_ns: 1 us .. 1 s. */
#define METAROCE_CC_DELAY_TARGET_MIN_NS	1000ull
#define METAROCE_CC_DELAY_TARGET_MAX_NS	1000000000ull

/*
 * How long the ACK of a message's last packet waits for a reply to carry
 * it (the core's final_ack_hold_ns, MR-LOSS-014): the default of sysfs
 * ack_hold_ns, and its bound.  The peer's timers allow for the hold as
 * max_ack_delay, so it is also what a lost tail waits longer.  500 us
 * covers an application's answer in the emulated testbed (150-300 us
 * typically) and costs a lost tail's probe a fraction of a loaded round
 * trip there; on a fabric whose round trips are microseconds a smaller
 * hold loses nothing (docs/results/perftest-vs-rxe.md).
 */
#define METAROCE_ACK_HOLD_NS		(500 * NSEC_PER_USEC)
#define METAROCE_ACK_HOLD_MAX_NS	(10 * NSEC_PER_MSEC)

/* Bounds of the sysfs attribute initial_rtt_ns: 1 us .. 10 s. */
#define METAROCE_INITIAL_RTT_MIN_NS	1000ull
#define METAROCE_INITIAL_RTT_MAX_NS	10000000000ull

/*
 * The MetaRoCE-mode requester window (MR-FC-001, the core's cfg.window):
 * the most a responder accepts, MRC_MAX_WINDOW (512), rather than the
 * core's 128.  The two-guest testbed carries 1 KiB packets at 10-15 MB/s
 * over round trips of 5-17 ms: 50-250 packets in flight, about 128, so a
 * loss that holds the oldest PSN can fill a window of 128.  Where the link
 * is the bottleneck (the simulator: 2 planes, 0.1 Gbit/s, 4 ms, 1 KiB) 512
 * took one flow over 16 paths from 0.60 to 0.91-0.95 of its lossless
 * goodput at 1% loss; over 4 paths (the module's default then) it raised
 * the lossless goodput from 0.125 to 0.175 Gbit/s and that at 1% loss by
 * about 15%.
 * In the testbed, where the guests' CPU limits first, ib_write_bw gained
 * less: 512 beat 128 in 25 of 42 paired runs, by 7% in the median, and its
 * windows grow until the emulator's sockets drop (1.7% instead of 0.4%
 * of the packets retransmitted lossless over one plane): the path windows
 * (MR-CC) decide, the flow control window only caps them
 * (docs/results/testbed.md, 2026-12-06).  RoCEv2 mode keeps the core's
 * 128, rdma_rxe's limit of unacknowledged PSNs (go-back-N resends all).
 */
#define METAROCE_WINDOW_DEFAULT		MRC_MAX_WINDOW

/* Port attributes (struct ib_port_attr, struct ib_port_immutable). */
#define METAROCE_PORT			1		/* the only port */
#define METAROCE_PORT_GID_TBL_LEN	1024
#define METAROCE_PORT_PKEY_TBL_LEN	METAROCE_MAX_PKEYS
#define METAROCE_PORT_MAX_MSG_SZ	0x80000000u
#define METAROCE_PORT_MAX_VL_NUM	1
#define METAROCE_PORT_MAX_MTU		IB_MTU_4096

/*
 * Bytes a data packet adds around its payload on the netdev: the worst-case
 * IP header (IPv6), UDP, the MetaRoCE header with the data and immediate
 * extensions (the largest header a packet with payload has) and the
 * trailing CRC.  The active IB MTU is the largest one whose payload still
 * fits in the netdev MTU after this overhead.
 */
#define METAROCE_DATA_PKT_OVERHEAD					\
	(sizeof(struct ipv6hdr) + sizeof(struct udphdr) +		\
	 sizeof(struct mr_hdr) + sizeof(struct mr_data_ext) +		\
	 sizeof(struct mr_imm_ext) + MR_CRC_LEN)

#endif /* METAROCE_PARAM_H */
