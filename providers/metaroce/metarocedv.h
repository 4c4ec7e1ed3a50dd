/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * MetaRoCE direct verbs: the explicit MetaRoCE QP type and its per-path
 * statistics, beside the standard ibv_* API, in the manner of efadv.h and
 * mlx5dv.h.  Declared in C for C and C++ callers; link with -lmetaroce
 * (pkg-config libmetaroce).
 *
 * Extensibility: every structure starts with a comp_mask and every call
 * takes the caller's sizeof() as inlen.  The library fills or reads only
 * the first inlen bytes, so a program built against an older, shorter
 * structure keeps working; a caller's structure longer than the library's
 * must have its extra bytes zeroed (metarocedv_create_qp) or gets them
 * zeroed (the query calls).  Fields are only ever appended.
 *
 * Failures are reported as documented in each call's man page (an errno
 * value, or NULL with errno set); no call aborts or throws.
 */
#ifndef METAROCEDV_H
#define METAROCEDV_H

#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest number of paths (planes x entropy values) of one QP. */
#define METAROCEDV_MAX_PATHS 16

/* Wire mode of an RC QP (see metaroce(7)). */
enum metarocedv_transport {
	METAROCEDV_TRANSPORT_METAROCE = 0, /* multipath, SACK, UDP 4793 */
	METAROCEDV_TRANSPORT_ROCEV2 = 1,   /* IBTA RoCEv2 RC, UDP 4791 */
};

/* struct metarocedv_device_attr.caps */
enum metarocedv_device_caps {
	METAROCEDV_DEVICE_CAP_METAROCE = 1 << 0, /* MetaRoCE wire mode */
	METAROCEDV_DEVICE_CAP_ROCEV2 = 1 << 1,	 /* RoCEv2 wire mode */
	METAROCEDV_DEVICE_CAP_QP_STATS = 1 << 2, /* metarocedv_query_qp_stats */
};

struct metarocedv_device_attr {
	uint64_t comp_mask;	    /* none defined yet: 0 */
	uint32_t caps;		    /* enum metarocedv_device_caps */
	uint32_t default_transport; /* enum metarocedv_transport */
	uint32_t max_planes;	    /* netdevs one device can span */
	uint32_t num_planes;	    /* planes configured now */
	uint32_t max_paths;	    /* per QP, <= METAROCEDV_MAX_PATHS */
	uint32_t default_paths;	    /* a QP's paths when none are asked for */
	uint32_t max_window;	    /* packets in flight per QP */
	uint32_t reserved;
};

int metarocedv_query_device(struct ibv_context *context,
			    struct metarocedv_device_attr *attr,
			    uint32_t inlen);

/* Congestion control of a MetaRoCE QP's paths. */
enum metarocedv_cc_profile {
	METAROCEDV_CC_DEFAULT = 0, /* the device's choice (ECN) */
	METAROCEDV_CC_ECN = 1,	   /* DCTCP-style, reacts to CE marks */
	METAROCEDV_CC_DELAY = 2,   /* ECN and queueing delay */
	METAROCEDV_CC_NONE = 3,	   /* fixed window (tests, lossless labs) */
};

/* struct metarocedv_qp_init_attr.comp_mask: which fields are valid. */
enum metarocedv_qp_init_attr_mask {
	METAROCEDV_QP_INIT_ATTR_TRANSPORT = 1 << 0,
	METAROCEDV_QP_INIT_ATTR_NUM_PATHS = 1 << 1,
	METAROCEDV_QP_INIT_ATTR_CC_PROFILE = 1 << 2,
};

struct metarocedv_qp_init_attr {
	uint64_t comp_mask;  /* enum metarocedv_qp_init_attr_mask */
	uint32_t transport;  /* enum metarocedv_transport */
	uint32_t num_paths;  /* 1..max_paths; MetaRoCE mode only */
	uint32_t cc_profile; /* enum metarocedv_cc_profile */
	uint32_t reserved;   /* must be 0 */
};

/*
 * Create an RC QP with MetaRoCE attributes.  attr is as for
 * ibv_create_qp_ex(); attr->qp_type must be IBV_QPT_RC.  Returns NULL with
 * errno set (EINVAL, EOPNOTSUPP, ENOMEM, ...) on failure.
 */
struct ibv_qp *metarocedv_create_qp(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr,
				    struct metarocedv_qp_init_attr *dv_attr,
				    uint32_t inlen);

/* One path of a QP, as its requester side sees it. */
struct metarocedv_path_stats {
	uint64_t tx_packets;  /* data packets sent, retransmissions included */
	uint64_t retransmits; /* of which retransmissions */
	uint64_t rx_packets;  /* valid packets received on this path */
	uint64_t lost;	      /* packets declared lost */
	uint64_t timeouts;    /* probe timeouts */
	uint64_t ecn_marks;   /* acknowledged packets that were CE-marked */
	uint64_t srtt_ns;     /* smoothed RTT, 0 before the first sample */
	uint64_t rttvar_ns;
	uint64_t min_rtt_ns;
	uint32_t cwnd;	      /* packets */
	uint32_t in_flight;   /* packets */
	uint32_t state;	      /* enum metarocedv_path_state */
	uint32_t plane;	      /* index of the plane (netdev) it uses */
};

enum metarocedv_path_state {
	METAROCEDV_PATH_ACTIVE = 0,
	METAROCEDV_PATH_FAILED = 1,	/* timed out; probed until it answers */
	METAROCEDV_PATH_ADMIN_DOWN = 2, /* its plane is down */
};

struct metarocedv_qp_stats {
	uint64_t comp_mask; /* none defined yet: 0 */
	uint32_t transport; /* enum metarocedv_transport */
	uint32_t num_paths; /* entries of path[] that are valid */
	uint64_t tx_packets;
	uint64_t retransmits;
	uint64_t rx_packets;
	uint64_t rx_duplicates;	  /* duplicate data packets suppressed */
	uint64_t rx_out_of_order; /* data packets accepted past a hole */
	uint64_t sacks_sent;	  /* ACKs that carried SACK ranges */
	uint64_t sacks_received;
	uint64_t path_failures;	  /* paths declared failed */
	uint64_t path_recoveries; /* failed paths that came back */
	struct metarocedv_path_stats path[METAROCEDV_MAX_PATHS];
};

/*
 * Statistics of a QP created on a metaroce device (by metarocedv_create_qp()
 * or ibv_create_qp()).  Returns 0, or an errno: EOPNOTSUPP for a QP that is
 * not on a metaroce device or not RC, EINVAL for a bad inlen.
 */
int metarocedv_query_qp_stats(struct ibv_qp *qp,
			      struct metarocedv_qp_stats *stats,
			      uint32_t inlen);

/* Whether the device of this context is a MetaRoCE device. */
int metarocedv_is_supported(struct ibv_device *device);

#ifdef __cplusplus
}
#endif

#endif /* METAROCEDV_H */
