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

/*
 * Data path, first slice: MR and CQ creation carry no driver data in
 * either direction (the kernel accepts an all-zero request tail and
 * rejects a non-zero one with EINVAL), QP creation only the wire mode
 * (struct metaroce_create_qp_req below), and the provider reaches the data
 * path verbs through the generic uverbs commands POST_SEND, POST_RECV,
 * POLL_CQ and REQ_NOTIFY_CQ, which rdma_metaroce.ko enables.
 *
 * Next slice (mapped rings, kernel entry only for the doorbell): the
 * CREATE_CQ / CREATE_QP request and response tails will be new structures
 * here that start with a __aligned_u64 comp_mask; a provider that sends
 * none keeps the first-slice behaviour, so both generations interoperate.
 */

/*
 * CREATE_QP driver data (RC QPs; UD and GSI are RoCEv2 UD in every mode).
 * A request without driver data, or with comp_mask 0, gets the device's
 * default wire mode (sysfs attribute METAROCE_SYSFS_DEFAULT_TRANSPORT_ATTR).
 * The kernel accepts a request shorter than this structure (fields past
 * inlen are absent) and a longer one whose extra bytes are zero; it
 * refuses unknown comp_mask bits and an unknown transport with EINVAL.
 * Later extensions (mapped rings) append their own fields and comp_mask
 * bits after these.
 */
enum metaroce_transport {
	METAROCE_TRANSPORT_METAROCE = 0,	/* multipath, UDP 4793 */
	METAROCE_TRANSPORT_ROCEV2 = 1,		/* IBTA RoCEv2 RC, UDP 4791 */
};

enum metaroce_create_qp_req_mask {
	/* metaroce_create_qp_req.transport is valid */
	METAROCE_CREATE_QP_REQ_TRANSPORT = 1 << 0,
};

struct metaroce_create_qp_req {
	__aligned_u64 comp_mask;	/* enum metaroce_create_qp_req_mask */
	__u32 transport;		/* enum metaroce_transport */
	__u32 reserved;
};

enum metaroce_create_qp_resp_mask {
	/* metaroce_create_qp_resp.transport is valid */
	METAROCE_CREATE_QP_RESP_TRANSPORT = 1 << 0,
};

struct metaroce_create_qp_resp {
	__aligned_u64 comp_mask;	/* enum metaroce_create_qp_resp_mask */
	__u32 transport;		/* the QP's wire mode, as chosen */
	__u32 reserved;
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

/* Capability bits of metaroce_alloc_ucontext_resp.caps (none yet). */
enum metaroce_ucontext_cap {
	METAROCE_UCTX_CAP_NONE = 0,
};

/* Driver data of IB_USER_VERBS_CMD_GET_CONTEXT; no request data. */
struct metaroce_alloc_ucontext_resp {
	__u32 abi_version;	/* METAROCE_UVERBS_ABI_VERSION */
	__u32 caps;		/* enum metaroce_ucontext_cap bits */
};

/* Driver data of IB_USER_VERBS_CMD_ALLOC_PD; no request data. */
struct metaroce_alloc_pd_resp {
	__u32 pdn;		/* device-unique PD number */
	__u32 reserved;
};

#endif /* METAROCE_ABI_USER_H */
