/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Private types of the MetaRoCE libibverbs provider.
 */
#ifndef METAROCE_PROVIDER_H
#define METAROCE_PROVIDER_H

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <type_traits>

#include <pthread.h>

#include <rdma/metaroce-abi.h>

#include "verbs_provider_abi.h"

namespace metaroce {

/* One per MetaRoCE ib_device found in sysfs; freed by uninit_device. */
struct device {
	struct verbs_device vdev; /* must be first: libibverbs hands it back */
};

/* One per ibv_open_device(); allocated by libibverbs with calloc(). */
struct context {
	struct verbs_context ibvctx;
	uint32_t kernel_abi_version; /* from metaroce_alloc_ucontext_resp */
	uint32_t caps;		     /* enum metaroce_ucontext_cap */
	/*
	 * The caps this context uses: the kernel's, less the mapped rings
	 * when METAROCE_NO_RINGS is set (the syscall path, see README.md).
	 */
	uint32_t use_caps;
};

struct pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn; /* device-unique number, for diagnostics */
};

/*
 * A CQ of either API: legacy ibv_poll_cq() and the extended one
 * (ibv_start_poll() and the ibv_wc_read_*() accessors) read the same
 * queue: the ring mapped from the kernel if the CQ has one (hdr set),
 * else the kernel's through ibv_cmd_poll_cq().
 */
struct cq {
	struct verbs_cq vcq;
	/* The completion the extended API is positioned on (cq.cpp). */
	struct ibv_wc cur;
	/* Mapped ring (metaroce-abi.h): consumers serialise on lock. */
	pthread_spinlock_t lock;
	struct metaroce_ring_hdr *hdr; /* nullptr: syscall path */
	const struct ib_uverbs_wc *ring;
	void *map;
	size_t map_len;
	uint32_t entries;  /* a power of two */
	uint32_t consumer; /* ours; published to hdr->consumer */
};

/* kern-abi.h DECLARE_DRV_CMD() of CREATE_CQ (the extended command). */
struct create_cq_cmd {
	struct verbs_cmd_create_cq_ex ibv_cmd;
	struct metaroce_create_cq_req drv;
};
static_assert(offsetof(create_cq_cmd, drv) == sizeof(verbs_cmd_create_cq_ex));

struct create_cq_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct metaroce_create_cq_resp drv;
};
static_assert(offsetof(create_cq_resp, drv) ==
	      sizeof(ib_uverbs_ex_create_cq_resp));

/*
 * The ibv_wr_* batch of a QP created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * (wr.cpp); all zero otherwise.  One allocation at create holds wrs,
 * sges and inline_buf for max_wr WRs.
 */
struct wr_batch {
	/* Held from ibv_wr_start() to ibv_wr_complete()/ibv_wr_abort(). */
	pthread_mutex_t lock;
	struct ibv_send_wr *wrs;     /* max_wr; nullptr: no wr API */
	struct ibv_sge *sges;	     /* sge_stride per WR */
	uint8_t *inline_buf;	     /* max_inline bytes per WR */
	uint64_t ops;		     /* IBV_QP_EX_WITH_* asked for at create */
	uint32_t max_wr;	     /* the granted max_send_wr */
	uint32_t max_sge;	     /* the granted max_send_sge */
	uint32_t sge_stride;	     /* max(max_sge, 1) */
	uint32_t max_inline;	     /* the granted max_inline_data */
	unsigned int send_flags;     /* the IBV_SEND_* the QP type takes */
	bool ud;
	/* Since ibv_wr_start(): */
	uint32_t count; /* WRs built */
	int err;	/* the first error, latched for ibv_wr_complete() */
};

/*
 * A work queue mapped from the kernel (ring.cpp; metaroce-abi.h, "Work
 * queue rings"); all zero when the queue is posted to by command.
 */
struct wq_ring {
	/* Posters of the queue, across the doorbell: a mutex, not a spin. */
	pthread_mutex_t lock;
	struct metaroce_ring_hdr *hdr; /* nullptr: the command path */
	uint8_t *entries;
	void *map;
	size_t map_len;
	uint32_t num_entries; /* a power of two */
	uint32_t entry_size;
	uint32_t max_sge;    /* granted, what an entry has room for */
	uint32_t max_inline; /* granted, send queue only */
	uint32_t producer;   /* ours; published to hdr->producer */
};

struct qp {
	struct verbs_qp vqp;
	uint32_t transport; /* enum metaroce_transport the kernel chose */
	struct wr_batch wr;
	struct wq_ring sq, rq;
};

/*
 * Provider objects are allocated with calloc() and freed with free(), here
 * and by libibverbs (the context), and never see a constructor, so they
 * must stay plain C aggregates with the libibverbs object first.
 */
static_assert(std::is_standard_layout_v<device> &&
	      std::is_standard_layout_v<context> &&
	      std::is_standard_layout_v<pd> && std::is_standard_layout_v<cq> &&
	      std::is_standard_layout_v<qp>);
static_assert(offsetof(device, vdev) == 0 && offsetof(pd, ibv_pd) == 0 &&
	      offsetof(cq, vcq) == 0 && offsetof(qp, vqp) == 0);

inline context *to_context(struct ibv_context *ibctx) noexcept
{
	return reinterpret_cast<context *>(
		reinterpret_cast<char *>(ibctx) - offsetof(context, ibvctx) -
		offsetof(struct verbs_context, context));
}

inline pd *to_pd(struct ibv_pd *ibpd) noexcept
{
	return reinterpret_cast<pd *>(ibpd);
}

/* kern-abi.h DECLARE_DRV_CMD(): core request/response, then driver data. */
struct get_context_cmd {
	struct verbs_cmd_get_context ibv_cmd;
};

struct get_context_resp {
	struct verbs_resp_get_context ibv_resp;
	struct metaroce_alloc_ucontext_resp drv;
};
static_assert(offsetof(get_context_resp, drv) == sizeof(verbs_resp_get_context));

struct alloc_pd_cmd {
	struct verbs_cmd_alloc_pd ibv_cmd;
};

struct alloc_pd_resp {
	struct verbs_resp_alloc_pd ibv_resp;
	struct metaroce_alloc_pd_resp drv;
};
static_assert(offsetof(alloc_pd_resp, drv) == sizeof(verbs_resp_alloc_pd));

/*
 * ib_uverbs_create_qp ends in a flexible array, which C++ does not allow
 * inside another structure: keep the core command as bytes, which
 * libibverbs fills in through cmd().
 */
struct create_qp_cmd {
	alignas(struct verbs_cmd_create_qp) unsigned char
		ibv_cmd[sizeof(struct verbs_cmd_create_qp)];
	struct metaroce_create_qp_req drv;

	struct verbs_cmd_create_qp *cmd() noexcept
	{
		return reinterpret_cast<struct verbs_cmd_create_qp *>(ibv_cmd);
	}
};
static_assert(offsetof(create_qp_cmd, drv) == sizeof(verbs_cmd_create_qp));

struct create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct metaroce_create_qp_resp drv;
};
static_assert(offsetof(create_qp_resp, drv) ==
	      sizeof(ib_uverbs_create_qp_resp));

/* IB_USER_VERBS_EX_CMD_QUERY_DEVICE with our driver data (dv.cpp). */
struct query_device_resp {
	struct ib_uverbs_ex_query_device_resp ibv_resp;
	struct metaroce_query_device_resp drv;
};
static_assert(offsetof(query_device_resp, drv) ==
	      sizeof(ib_uverbs_ex_query_device_resp));

inline cq *to_cq(struct ibv_cq *ibcq) noexcept
{
	return reinterpret_cast<cq *>(ibcq);
}

inline cq *to_cq(struct ibv_cq_ex *ibcq) noexcept
{
	return reinterpret_cast<cq *>(ibcq);
}

inline qp *to_qp(struct ibv_qp *ibqp) noexcept
{
	return reinterpret_cast<qp *>(ibqp);
}

/* Allocate a zeroed provider object; NULL with errno ENOMEM on failure. */
template <typename T> T *alloc_obj() noexcept
{
	static_assert(std::is_standard_layout_v<T> &&
		      std::is_trivially_destructible_v<T>);
	void *p = std::calloc(1, sizeof(T));

	if (!p)
		errno = ENOMEM;
	return static_cast<T *>(p);
}

/*
 * The ops beyond device and PD.  Each returns what libibverbs' API promises
 * the application: NULL with errno set from a create, an errno from
 * modify/query/destroy/post, and never leaves a half-made object behind.
 */
/* cq.cpp */
struct ibv_cq *create_cq(struct ibv_context *ibctx, int cqe,
			 struct ibv_comp_channel *channel,
			 int comp_vector) noexcept;
struct ibv_cq_ex *create_cq_ex(struct ibv_context *ibctx,
			       struct ibv_cq_init_attr_ex *attr) noexcept;
int destroy_cq(struct ibv_cq *ibcq) noexcept;
int poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc) noexcept;

/* metaroce.cpp */
/*
 * Whether @ibdev is driven by this provider.  By name, not by the address
 * of our ops: a program linked with libmetaroce.so.1 and a libibverbs
 * that dlopen()ed another copy of it (a provider copied into libibverbs'
 * directory) see two instances of the library, which agree on the layout.
 */
bool is_metaroce_device(struct ibv_device *ibdev) noexcept;

/* qp.cpp */
struct ibv_qp *create_qp_req(struct ibv_context *ibctx,
			     struct ibv_qp_init_attr_ex *attr,
			     const struct metaroce_create_qp_req *req) noexcept;
struct ibv_qp *create_qp(struct ibv_pd *ibpd,
			 struct ibv_qp_init_attr *attr) noexcept;
struct ibv_qp *create_qp_ex(struct ibv_context *ibctx,
			    struct ibv_qp_init_attr_ex *attr) noexcept;
int modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
	      int attr_mask) noexcept;
int query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr) noexcept;
int destroy_qp(struct ibv_qp *ibqp) noexcept;

/* ring.cpp */
/*
 * mmap() @length bytes at @offset of the command fd, after checking that
 * they hold the @need bytes the ring's layout takes; nullptr and *@err set
 * on failure.
 */
void *map_ring_memory(struct ibv_context *ibctx, uint64_t offset,
		      uint64_t length, uint64_t need, int *err) noexcept;
/* 0, or why the ring @resp describes is not one for these limits. */
int wq_ring_map(wq_ring *r, struct ibv_context *ibctx,
		const struct metaroce_wq_ring_resp &resp, size_t header,
		uint32_t max_sge, uint32_t max_inline) noexcept;
void wq_ring_unmap(wq_ring *r) noexcept;
int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	      struct ibv_send_wr **bad) noexcept;
int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad) noexcept;

/* wr.cpp: the ibv_wr_* API. */
/* 0, or why @attr's send_ops_flags cannot be had (before any command). */
int wr_check_create(const struct ibv_qp_init_attr_ex *attr) noexcept;
/* After the kernel created @q with the caps in @attr: 0 or ENOMEM. */
int wr_init(qp *q, const struct ibv_qp_init_attr_ex *attr) noexcept;
void wr_fini(qp *q) noexcept;

/* srq.cpp */
struct ibv_srq *create_srq(struct ibv_pd *ibpd,
			   struct ibv_srq_init_attr *attr) noexcept;
int modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
	       int attr_mask) noexcept;
int query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr) noexcept;
int destroy_srq(struct ibv_srq *srq) noexcept;

/* verbs.cpp */
extern const struct verbs_context_ops context_ops;

} // namespace metaroce

#endif /* METAROCE_PROVIDER_H */
