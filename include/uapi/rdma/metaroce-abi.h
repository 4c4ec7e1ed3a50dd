/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * User <-> kernel ABI of the MetaRoCE RDMA device (rdma_metaroce.ko and the
 * libibverbs provider libmetaroce).
 *
 * The structures here are the driver-private tails of the uverbs command
 * responses: the kernel copies min(sizeof(resp), udata->outlen) bytes, so a
 * provider built against an older, shorter version of a response keeps
 * working.  Fields are only ever appended, never reordered, and every
 * structure is a multiple of 8 bytes with explicit padding so that i386 and
 * x86_64 userspace see the same layout.
 *
 * Provider matching: the driver id is RDMA_DRIVER_UNKNOWN (an out-of-tree
 * module cannot allocate one), so the provider recognises a MetaRoCE device
 * by the read-only sysfs attribute
 *	/sys/class/infiniband/<ibdev>/metaroce_abi_version
 * which holds METAROCE_UVERBS_ABI_VERSION as a decimal number followed by a
 * newline.  The same number is the device's uverbs ABI version, i.e. the
 * content of /sys/class/infiniband_verbs/uverbs<N>/abi_version, which
 * libibverbs compares against verbs_device_ops.match_{min,max}_abi_version.
 */
#ifndef METAROCE_ABI_USER_H
#define METAROCE_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/*
 * Data path.  MR creation carries no driver data in either direction (the
 * kernel accepts an all-zero request tail and rejects a non-zero one with
 * EINVAL), QP creation the wire mode (struct metaroce_create_qp_req
 * below).  The generic uverbs commands POST_SEND, POST_RECV, POLL_CQ and
 * REQ_NOTIFY_CQ are enabled, and are the whole data path of a provider
 * that asks for no mapped ring ("the syscall path").
 *
 * Mapped rings (the fast path).  A module that has them says so in
 * metaroce_alloc_ucontext_resp.caps (METAROCE_UCTX_CAP_*_RING); a
 * provider that wants one asks per object in the creation request, and
 * the response says whether it got it and where to mmap() it (offset on
 * the uverbs command fd, length).  A provider that asks for nothing, or a
 * module without the capability, keeps the syscall path, so every
 * combination of old and new interoperates.
 *
 * A ring is one mapping: struct metaroce_ring_hdr, then the entries, each
 * of a fixed size, their number a power of two.  The indices in the
 * header run freely (entry i is at i & (entries - 1)); each is written by
 * one side only, as a store-release after the entries it publishes or
 * frees, and read by the other side as a load-acquire.  The kernel keeps
 * its own copy of the index it writes and never reads it back from the
 * mapping; an index it reads that is impossible (more entries used than
 * exist) is the process corrupting its own ring, and never harms anything
 * but the process's object: a CQ goes into error, a work queue's doorbell
 * fails (see "Work queue rings").
 */
struct metaroce_ring_hdr {
	__u32 producer;		/* entries [consumer, producer) are valid */
	__u32 reserved0[15];	/* its own cache line */
	__u32 consumer;
	/* Receive queue rings only, written by the kernel (see below). */
	__u32 kernel_takes;	/* nonzero: no POST_RECV doorbell needed */
	__u32 retired;		/* entries completed or discarded */
	__u32 reserved1[13];
};

/*
 * CQ ring: entries are struct ib_uverbs_wc (the POLL_CQ response layout,
 * <rdma/ib_user_verbs.h>), the kernel produces and the provider consumes.
 * A completion that finds the ring full is dropped and the CQ's owner gets
 * IB_EVENT_CQ_ERR (the CQ is then in error, as IBTA specifies).  Arming
 * stays the REQ_NOTIFY_CQ command: the kernel decides whether an event is
 * due under the lock it publishes completions with, so a completion
 * published before the arm is found by the poll that follows it and one
 * published after raises the event.  POLL_CQ on a CQ with a ring fails
 * with EINVAL, and so does CREATE_CQ asking for a ring without room for
 * struct metaroce_create_cq_resp up to entry_size in its response.
 */
enum metaroce_create_cq_req_mask {
	METAROCE_CREATE_CQ_REQ_RING = 1 << 0,	/* map the CQ as a ring */
};

struct metaroce_create_cq_req {
	__aligned_u64 comp_mask;	/* enum metaroce_create_cq_req_mask */
};

enum metaroce_create_cq_resp_mask {
	/* mmap_offset, mmap_length and ring_entries are valid */
	METAROCE_CREATE_CQ_RESP_RING = 1 << 0,
};

struct metaroce_create_cq_resp {
	__aligned_u64 comp_mask;	/* enum metaroce_create_cq_resp_mask */
	__aligned_u64 mmap_offset;	/* mmap() offset on the command fd */
	__aligned_u64 mmap_length;	/* bytes to map */
	__u32 ring_entries;		/* power of two, >= the CQ's cqe */
	__u32 entry_size;		/* sizeof(struct ib_uverbs_wc) */
};

/*
 * Work queue rings (RC QPs): the provider produces work requests, the
 * kernel consumes them.  A ring carries work requests into the kernel; it
 * is not the queue: the kernel copies each entry into its own send or
 * receive queue, checks it there as it checks a POST_SEND / POST_RECV
 * work request, and completes it through the CQ as usual.  The kernel
 * reads the ring only when the owner rings the doorbell, POST_SEND (send
 * queue) or POST_RECV (receive queue) with no work request in the command
 * (wr_count 0): it takes the entries [consumer, producer) in order,
 * advancing consumer past each one it accepted, and stops at the first it
 * refuses, whose errno the doorbell returns (EINVAL for a malformed work
 * request, ENOMEM for a full queue, as the driver does for a WR of the
 * command; the command itself also refuses, before the driver sees any
 * WR, a list longer than it carries or with an opcode uverbs does not
 * know, where a ring posts the WRs before the bad one).  The entries
 * from consumer on were not posted; the provider reports the first of them
 * as bad_wr and takes them back by setting producer to consumer before
 * it posts again.  Between doorbells [consumer, producer) is empty, so
 * ring_entries (the queue's depth) never runs out.  A producer more than
 * ring_entries past consumer fails the doorbell with EINVAL and takes
 * nothing.  Doorbells of one QP's queue are serialised by the kernel.
 *
 * A receive ring needs no doorbell while its kernel_takes is nonzero, as
 * a hardware receive queue needs none: the kernel takes the new entries
 * itself whenever a packet arrives for the QP, before the packet, and
 * when the QP leaves for ERR (those are flushed).  A module that does
 * this sets kernel_takes while the QP is in INIT, RTR, RTS, SQD or SQE
 * and clears it on entering ERR or RESET; an older module never sets it,
 * and every POST_RECV then rings.  The provider publishes producer, then
 * (a full barrier between the two) reads kernel_takes, and rings the
 * doorbell only if it reads 0; the kernel clears kernel_takes, then (a
 * full barrier) reads producer and takes or discards what is there, so
 * an entry is never left behind.  Without a doorbell nothing returns an
 * errno for an entry, so the kernel queues one it would have refused
 * (an lkey of no MR of the QP's PD or without LOCAL_WRITE: the entry's
 * SGEs are only checked once taken) in error: it completes with
 * IBV_WC_LOC_PROT_ERR (IBV_WC_LOC_QP_OP_ERR for a malformed entry)
 * when the receives before it have completed, and the QP enters ERR, as
 * a send WR with a bad lkey does.  The number of SGEs, which the
 * provider checks itself, is still refused at once.  retired counts the
 * entries, since the QP was created, whose receive completed (it was
 * published in the CQ after retired) or that RESET discarded; the
 * provider refuses a post that would have more than ring_entries
 * receives outstanding (producer - retired) with ENOMEM, so the queue
 * keeps its depth.
 *
 * An entry is a header, then num_sge struct ib_uverbs_sge (addr, length,
 * lkey), or, for a send with IBV_SEND_INLINE, inline_len bytes of data.
 * entry_size has room for the QP's granted max_*_sge SGEs and, in the send
 * queue, its max_inline_data bytes.  Opcodes are enum ib_uverbs_wr_opcode,
 * send flags enum ibv_send_flags (both as in the POST_SEND command).
 */
struct metaroce_sq_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;			/* enum ib_uverbs_wr_opcode */
	__u32 send_flags;		/* IBV_SEND_* */
	__u32 num_sge;			/* 0 with IBV_SEND_INLINE */
	__u32 inline_len;		/* bytes, with IBV_SEND_INLINE */
	__be32 imm_data;		/* *_WITH_IMM, as posted */
	__u32 rkey;			/* RDMA and atomics */
	__aligned_u64 remote_addr;	/* RDMA and atomics */
	__aligned_u64 compare_add;	/* atomics */
	__aligned_u64 swap;		/* ATOMIC_CMP_AND_SWP */
};

struct metaroce_rq_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;			/* 0 */
};

/*
 * CREATE_QP driver data (RC QPs; UD and GSI are RoCEv2 UD in every mode).
 * A request without driver data, or with comp_mask 0, gets the device's
 * default wire mode (sysfs attribute METAROCE_SYSFS_DEFAULT_TRANSPORT_ATTR).
 * The kernel accepts a request shorter than this structure (fields past
 * inlen are absent) and a longer one whose extra bytes are zero; it
 * refuses unknown comp_mask bits and an unknown transport with EINVAL.
 * Later extensions (mapped rings) append their own fields and comp_mask
 * bits after these.
 *
 * Direct verbs (metarocedv_create_qp, providers/metaroce/metarocedv.h)
 * appended num_paths and cc_profile.  Both, like transport, are RC-only
 * (EINVAL on UD) and MetaRoCE-mode only: a RoCEv2 QP has one path
 * (num_paths 1 is accepted) and go-back-N without a congestion window
 * (only METAROCE_CC_DEFAULT is accepted).  Out-of-range values, unknown
 * comp_mask bits and a non-zero reserved field are EINVAL.
 */
enum metaroce_transport {
	METAROCE_TRANSPORT_METAROCE = 0,	/* multipath, UDP 4793 */
	METAROCE_TRANSPORT_ROCEV2 = 1,		/* IBTA RoCEv2 RC, UDP 4791 */
};

enum metaroce_create_qp_req_mask {
	/* metaroce_create_qp_req.transport is valid */
	METAROCE_CREATE_QP_REQ_TRANSPORT = 1 << 0,
	/* metaroce_create_qp_req.num_paths is valid */
	METAROCE_CREATE_QP_REQ_NUM_PATHS = 1 << 1,
	/* metaroce_create_qp_req.cc_profile is valid */
	METAROCE_CREATE_QP_REQ_CC_PROFILE = 1 << 2,
	/* map the send queue, and the receive queue if the QP has no SRQ */
	METAROCE_CREATE_QP_REQ_RINGS = 1 << 3,
};

/* Congestion control of a MetaRoCE QP's paths (metaroce_create_qp_req). */
enum metaroce_cc_profile {
	METAROCE_CC_DEFAULT = 0,	/* the device's choice: ECN */
	METAROCE_CC_ECN = 1,		/* DCTCP-style, CE marks (MR-CC-005) */
	METAROCE_CC_DELAY = 2,		/* ECN and queueing delay (MR-CC-006) */
	METAROCE_CC_NONE = 3,		/* fixed window */
};

/* The largest number of paths of one QP (the core's MRC_MAX_PATHS). */
#define METAROCE_MAX_QP_PATHS	16

struct metaroce_create_qp_req {
	__aligned_u64 comp_mask;	/* enum metaroce_create_qp_req_mask */
	__u32 transport;		/* enum metaroce_transport */
	__u32 reserved;
	__u32 num_paths;		/* 1..METAROCE_MAX_QP_PATHS */
	__u32 cc_profile;		/* enum metaroce_cc_profile */
};

enum metaroce_create_qp_resp_mask {
	/* metaroce_create_qp_resp.transport is valid */
	METAROCE_CREATE_QP_RESP_TRANSPORT = 1 << 0,
	/* metaroce_create_qp_resp.sq is valid */
	METAROCE_CREATE_QP_RESP_SQ_RING = 1 << 1,
	/* metaroce_create_qp_resp.rq is valid */
	METAROCE_CREATE_QP_RESP_RQ_RING = 1 << 2,
};

/* Where a mapped work queue is (metaroce_create_qp_resp). */
struct metaroce_wq_ring_resp {
	__aligned_u64 mmap_offset;	/* mmap() offset on the command fd */
	__aligned_u64 mmap_length;	/* bytes to map */
	__u32 ring_entries;		/* power of two */
	__u32 entry_size;		/* bytes, a multiple of 8 */
};

struct metaroce_create_qp_resp {
	__aligned_u64 comp_mask;	/* enum metaroce_create_qp_resp_mask */
	__u32 transport;		/* the QP's wire mode, as chosen */
	__u32 reserved;
	/* Past here: only with METAROCE_CREATE_QP_REQ_RINGS. */
	struct metaroce_wq_ring_resp sq;
	struct metaroce_wq_ring_resp rq;
};

/*
 * Read-write sysfs attribute of the ib_device: the wire mode ("metaroce"
 * or "rocev2", followed by a newline) of RC QPs created without a
 * requested one.  Starts as the module parameter default_transport.
 */
#define METAROCE_SYSFS_DEFAULT_TRANSPORT_ATTR "default_transport"

/* Bumped on any incompatible change of the structures below. */
#define METAROCE_UVERBS_ABI_VERSION 1

/* Name of the sysfs attribute of the ib_device described above. */
#define METAROCE_SYSFS_ABI_VERSION_ATTR "metaroce_abi_version"

/* Capability bits of metaroce_alloc_ucontext_resp.caps. */
enum metaroce_ucontext_cap {
	METAROCE_UCTX_CAP_NONE = 0,
	/* CREATE_CQ honours METAROCE_CREATE_CQ_REQ_RING */
	METAROCE_UCTX_CAP_CQ_RING = 1 << 0,
	/* CREATE_QP of an RC QP honours METAROCE_CREATE_QP_REQ_RINGS */
	METAROCE_UCTX_CAP_QP_RING = 1 << 1,
};

/* Driver data of IB_USER_VERBS_CMD_GET_CONTEXT; no request data. */
struct metaroce_alloc_ucontext_resp {
	__u32 abi_version;	/* METAROCE_UVERBS_ABI_VERSION */
	__u32 caps;		/* enum metaroce_ucontext_cap bits */
};

/*
 * Driver data of IB_USER_VERBS_EX_CMD_QUERY_DEVICE (metarocedv_query_device);
 * no request data.  The kernel copies min(outlen, sizeof) bytes: a
 * provider that asks for none (ibv_query_device_ex) gets none.
 */
enum metaroce_device_cap {
	METAROCE_DEVICE_CAP_METAROCE = 1 << 0,	/* MetaRoCE RC QPs */
	METAROCE_DEVICE_CAP_ROCEV2 = 1 << 1,	/* RoCEv2 RC QPs (UDP 4791 ours) */
	METAROCE_DEVICE_CAP_QP_STATS = 1 << 2,	/* METAROCE_METHOD_QP_QUERY_STATS */
};

struct metaroce_query_device_resp {
	__aligned_u64 comp_mask;	/* none defined yet: 0 */
	__u32 caps;			/* enum metaroce_device_cap */
	__u32 default_transport;	/* enum metaroce_transport */
	__u32 max_planes;		/* netdevs one device can span */
	__u32 num_planes;		/* planes configured now */
	__u32 max_paths;		/* per RC QP */
	__u32 default_paths;		/* a MetaRoCE QP's paths if none asked */
	__u32 max_window;		/* packets in flight per QP */
	__u32 reserved;
};

/*
 * Per-QP statistics (metarocedv_query_qp_stats): a driver-specific uverbs
 * ioctl method on the QP object, in the driver namespace of method and
 * attribute ids (UVERBS_ID_NS_SHIFT):
 *
 *	object UVERBS_OBJECT_QP, method METAROCE_METHOD_QP_QUERY_STATS
 *	  METAROCE_ATTR_QP_QUERY_STATS_HANDLE  the QP (IDR, read access)
 *	  METAROCE_ATTR_QP_QUERY_STATS_RESP    struct metaroce_qp_stats (out)
 *
 * Why a method and not a mapped stats page: the kernel takes one snapshot
 * of the core's mrc_conn_stats / mrc_path_stats under qp->lock only when
 * asked, so the transport's hot path pays nothing (a page would have to be
 * rewritten after every run of the QP, i.e. per packet), a QP costs no
 * page of memory, and ib_uverbs handles the QP's lifetime and
 * disassociation (a handle of another process or of a destroyed QP is
 * refused).  The method needs only the headers ib_core installs
 * (rdma/uverbs_named_ioctl.h), the same in 6.1 and 6.12.
 *
 * The kernel copies min(len, sizeof) bytes and zeroes the rest of a
 * longer buffer; the buffer must reach at least num_paths.  Available
 * when the device reports METAROCE_DEVICE_CAP_QP_STATS; an older module
 * answers EPROTONOSUPPORT (no such method).  Only RC QPs have statistics
 * (EOPNOTSUPP otherwise).  A QP without a connection (RESET, INIT) reports
 * its transport and number of paths and zero counters; path[] entries at
 * and past num_paths are zero.
 */
enum metaroce_qp_methods {
	METAROCE_METHOD_QP_QUERY_STATS = (1U << UVERBS_ID_NS_SHIFT),
};

enum metaroce_qp_query_stats_attrs {
	METAROCE_ATTR_QP_QUERY_STATS_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	METAROCE_ATTR_QP_QUERY_STATS_RESP,
};

/* Path states: the core's enum mrc_path_state. */
enum metaroce_path_state {
	METAROCE_PATH_ACTIVE = 0,
	METAROCE_PATH_FAILED = 1,
	METAROCE_PATH_ADMIN_DOWN = 2,
};

/* One path of a QP, as its requester side sees it. */
struct metaroce_path_stats {
	__aligned_u64 tx_packets;	/* data packets, retransmissions too */
	__aligned_u64 retransmits;
	__aligned_u64 rx_packets;	/* valid packets received on it */
	__aligned_u64 lost;		/* declared lost */
	__aligned_u64 timeouts;		/* probe timeouts */
	__aligned_u64 ecn_marks;	/* acknowledged packets CE-marked */
	__aligned_u64 srtt_ns;
	__aligned_u64 rttvar_ns;
	__aligned_u64 min_rtt_ns;
	__u32 cwnd;			/* packets */
	__u32 in_flight;		/* packets */
	__u32 state;			/* enum metaroce_path_state */
	__u32 plane;			/* index of the plane it uses now */
};

struct metaroce_qp_stats {
	__aligned_u64 comp_mask;	/* none defined yet: 0 */
	__u32 transport;		/* enum metaroce_transport */
	__u32 num_paths;
	__aligned_u64 tx_packets;	/* data packets sent, all paths */
	__aligned_u64 retransmits;
	__aligned_u64 rx_packets;	/* data packets accepted */
	__aligned_u64 rx_duplicates;
	__aligned_u64 rx_out_of_order;	/* data accepted past a hole */
	__aligned_u64 sacks_sent;	/* ACKs carrying SACK ranges */
	__aligned_u64 sacks_received;
	__aligned_u64 path_failures;
	__aligned_u64 path_recoveries;
	struct metaroce_path_stats path[METAROCE_MAX_QP_PATHS];
};

/* Driver data of IB_USER_VERBS_CMD_ALLOC_PD; no request data. */
struct metaroce_alloc_pd_resp {
	__u32 pdn;		/* device-unique PD number */
	__u32 reserved;
};

#endif /* METAROCE_ABI_USER_H */
