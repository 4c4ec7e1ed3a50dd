/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The private libibverbs provider ABI "IBVERBS_PRIVATE_34" (PABI 34), as
 * implemented by rdma-core v44.0.
 *
 * libibverbs-dev ships only the application-side headers; the provider side
 * (libibverbs/driver.h, libibverbs/kern-abi.h, ccan/list.h) is internal to
 * rdma-core and every in-tree provider is compiled against it.  An
 * out-of-tree provider has to restate what it uses.  Everything below is
 * written from rdma-core v44.0; the source of each declaration is named next
 * to it.  A layout mistake here is silent memory corruption at run time, so
 * every structure carries static_asserts of its size and of the member
 * offsets libibverbs or we access, derived from the v44.0 definitions for
 * the LP64 x86_64 ABI (see providers/metaroce/README.md for how they were
 * cross-checked against the upstream headers).
 *
 * The header is usable from C11 and C++20 so that tests may be written in
 * either.
 */
#ifndef METAROCE_VERBS_PROVIDER_ABI_H
#define METAROCE_VERBS_PROVIDER_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <time.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#ifdef __cplusplus
#include <atomic>
#define VERBS_ABI_STATIC_ASSERT(expr, msg) static_assert(expr, msg)
#else
#include <assert.h>
#include <stdatomic.h>
#define VERBS_ABI_STATIC_ASSERT(expr, msg) _Static_assert(expr, msg)
#endif

/*
 * The PABI is wired into the name of the registration function (driver.h,
 * verbs_register_driver), so a provider built for another PABI fails to load
 * instead of misinterpreting structures.
 */
#define VERBS_PROVIDER_PABI_VERSION 34

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "verbs_provider_abi.h: layouts are only checked for LP64 (x86_64, aarch64)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ccan/list.h: struct list_node, the links of libibverbs' intrusive lists. */
struct verbs_list_node {
	struct verbs_list_node *next;
	struct verbs_list_node *prev;
};

/* driver.h: enum { VERBS_MATCH_SENTINEL, ... } */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

/* driver.h: struct verbs_match_ent, one entry of a provider's match table. */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_match_ent) == 24,
			"verbs_match_ent layout");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_match_ent, kind) == 20,
			"verbs_match_ent.kind offset");

/*
 * driver.h: struct verbs_sysfs_dev, an rdma device found in sysfs, handed to
 * verbs_device_ops.match_device and .alloc_device.  Owned by libibverbs.
 */
struct verbs_sysfs_dev {
	struct verbs_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36,
			"verbs_sysfs_dev.sysfs_name offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, sysfs_cdev) == 104,
			"verbs_sysfs_dev.sysfs_cdev offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, ibdev_name) == 112,
			"verbs_sysfs_dev.ibdev_name offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176,
			"verbs_sysfs_dev.ibdev_path offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, node_guid) == 944,
			"verbs_sysfs_dev.node_guid offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, abi_ver) == 968,
			"verbs_sysfs_dev.abi_ver offset");
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_sysfs_dev) == 992,
			"verbs_sysfs_dev size");

struct verbs_device;
struct verbs_mr; /* driver.h; defined below */

/*
 * driver.h: struct verbs_device_ops, the provider's registration record.
 * libibverbs keeps the pointer, so it must have static storage duration.
 * match_table must not be NULL even for a provider that matches in
 * match_device only: init.c match_driver_id() walks it unchecked.
 */
struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, match_table) == 16,
			"verbs_device_ops.match_table offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, match_device) == 32,
			"verbs_device_ops.match_device offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, alloc_device) == 56,
			"verbs_device_ops.alloc_device offset");
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_device_ops) == 72,
			"verbs_device_ops size");

/*
 * driver.h: struct verbs_device.  The provider allocates it (embedded first in
 * its own device structure) in alloc_device; libibverbs fills in everything
 * after .device and owns the reference count.
 */
struct verbs_device {
	struct ibv_device device; /* must be first */
	const struct verbs_device_ops *ops;
#ifdef __cplusplus
	std::atomic<int> refcount;
#else
	atomic_int refcount;
#endif
	struct verbs_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};
#ifdef __cplusplus
VERBS_ABI_STATIC_ASSERT(sizeof(std::atomic<int>) == sizeof(int) &&
				alignof(std::atomic<int>) == alignof(int),
			"std::atomic<int> must be layout-compatible with atomic_int");
#endif
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_device, device) == 0,
			"verbs_device.device must be first");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_device, ops) ==
				sizeof(struct ibv_device),
			"verbs_device.ops offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_device, entry) ==
				sizeof(struct ibv_device) + 16,
			"verbs_device.entry offset");
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_device) ==
				sizeof(struct ibv_device) + 48,
			"verbs_device size");

/*
 * driver.h: the provider-allocated wrappers of verbs objects.  The provider
 * embeds them first in its own objects; libibverbs and the ibv_cmd_*
 * helpers fill in the public parts.
 */

/* driver.h: only passed by pointer here (verbs_qp.xrcd). */
struct verbs_xrcd;

/* driver.h: enum ibv_mr_type, set by ibv_cmd_reg_mr in verbs_mr.mr_type. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

/* driver.h: struct verbs_mr, handed back to verbs_context_ops.dereg_mr. */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_mr, ibv_mr) == 0,
			"verbs_mr.ibv_mr must be first");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_mr, mr_type) ==
				sizeof(struct ibv_mr),
			"verbs_mr.mr_type offset");
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_mr) == sizeof(struct ibv_mr) + 8,
			"verbs_mr size");

/* driver.h: enum verbs_qp_mask, the bits of verbs_qp.comp_mask. */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1, /* qp_ex is valid: ibv_qp_to_qp_ex() */
};

/*
 * driver.h: struct verbs_qp.  ibv_cmd_create_qp_ex() zeroes comp_mask (and
 * sets VERBS_QP_XRCD); a provider implementing the ibv_wr_* API sets
 * VERBS_QP_EX after filling in qp_ex.
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};
VERBS_ABI_STATIC_ASSERT(offsetof(struct ibv_qp_ex, qp_base) == 0,
			"ibv_qp_ex must start with its ibv_qp");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_qp, comp_mask) ==
				sizeof(struct ibv_qp_ex),
			"verbs_qp.comp_mask offset");
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_qp) == sizeof(struct ibv_qp_ex) + 16,
			"verbs_qp size");

/* driver.h: struct verbs_cq; ibv_cq_ex begins with the fields of ibv_cq. */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_cq) == sizeof(struct ibv_cq_ex),
			"verbs_cq size");

/*
 * driver.h: struct verbs_context_ops, "the union of every op the driver can
 * support", kept sorted by name upstream.  verbs_set_ops() reads every member,
 * so the size must be exact: 76 function pointers in v44.0.  A NULL member
 * keeps libibverbs' dummy op, which fails with EOPNOTSUPP.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_context_ops) == 76 * sizeof(void *),
			"verbs_context_ops must hold the 76 ops of v44.0");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, alloc_pd) ==
				5 * sizeof(void *),
			"verbs_context_ops.alloc_pd offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, dealloc_pd) ==
				26 * sizeof(void *),
			"verbs_context_ops.dealloc_pd offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, free_context) ==
				39 * sizeof(void *),
			"verbs_context_ops.free_context offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, query_device_ex) ==
				58 * sizeof(void *),
			"verbs_context_ops.query_device_ex offset");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, query_port) ==
				60 * sizeof(void *),
			"verbs_context_ops.query_port offset");

/*
 * struct verbs_context itself is public (infiniband/verbs.h), as are ibv_pd,
 * ibv_device_attr_ex and ibv_port_attr.
 */

/*
 * Legacy write() commands, kern-abi.h DECLARE_CMD(): the uverbs command header
 * followed by the core request.  The kernel uapi request and response
 * structures end in a flexible array member (driver_data[]) that C++ does not
 * allow inside another structure, so the fixed part is restated here and
 * checked against the uapi definition.  libibverbs passes sizeof(its own
 * struct) as the core size, driver data follows it.
 */

/* kern-abi.h: struct ibv_get_context */
struct verbs_cmd_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_cmd_get_context) ==
				sizeof(struct ib_uverbs_cmd_hdr) +
					sizeof(struct ib_uverbs_get_context),
			"ibv_get_context size");

/* kernel uapi: struct ib_uverbs_get_context_resp without driver_data[] */
struct verbs_resp_get_context {
	__u32 async_fd;
	__u32 num_comp_vectors;
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_resp_get_context) ==
				sizeof(struct ib_uverbs_get_context_resp),
			"ib_uverbs_get_context_resp size");

/* kern-abi.h: struct ibv_query_port */
struct verbs_cmd_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u8 port_num;
	__u8 reserved[7];
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_cmd_query_port) ==
				sizeof(struct ib_uverbs_cmd_hdr) +
					sizeof(struct ib_uverbs_query_port),
			"ibv_query_port size");
VERBS_ABI_STATIC_ASSERT(offsetof(struct verbs_cmd_query_port, port_num) ==
				sizeof(struct ib_uverbs_cmd_hdr) +
					offsetof(struct ib_uverbs_query_port,
						 port_num),
			"ibv_query_port.port_num offset");

/* kern-abi.h: struct ibv_alloc_pd */
struct verbs_cmd_alloc_pd {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_cmd_alloc_pd) ==
				sizeof(struct ib_uverbs_cmd_hdr) +
					sizeof(struct ib_uverbs_alloc_pd),
			"ibv_alloc_pd size");

/* kernel uapi: struct ib_uverbs_alloc_pd_resp without driver_data[] */
struct verbs_resp_alloc_pd {
	__u32 pd_handle;
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_resp_alloc_pd) ==
				sizeof(struct ib_uverbs_alloc_pd_resp),
			"ib_uverbs_alloc_pd_resp size");

/*
 * The commands whose only content is the core request: kern-abi.h
 * DECLARE_CMD() and DECLARE_CMD_EX() lay them out as the write() header
 * (plus the extended header for _EX) followed by the uapi request.  Here the
 * uapi request is embedded as the last member, flexible array member
 * included (a GCC/Clang extension in both C and C++, hence no
 * -Wpedantic); sizeof() is that of the core request, which is what
 * libibverbs expects as cmd_size when there is no driver data.  The
 * ibv_cmd_* helpers either fill these themselves (the write()-only ones:
 * reg_mr, modify_qp, query_qp, modify_srq, query_srq) or, without driver
 * data, ignore them and build the command on their own stack.
 */

/* kern-abi.h: struct ex_hdr */
struct verbs_ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};
VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_ex_hdr) == 24, "ex_hdr size");

#define VERBS_DECLARE_CMD(_name, _kabi)                                        \
	struct verbs_cmd_##_name {                                             \
		struct ib_uverbs_cmd_hdr hdr;                                  \
		struct _kabi core_payload;                                     \
	};                                                                     \
	VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_cmd_##_name) ==            \
					sizeof(struct ib_uverbs_cmd_hdr) +     \
						sizeof(struct _kabi),          \
				"ibv_" #_name " size")
#define VERBS_DECLARE_CMD_EX(_name, _kabi)                                     \
	struct verbs_cmd_##_name {                                             \
		struct verbs_ex_hdr hdr;                                       \
		struct _kabi core_payload;                                     \
	};                                                                     \
	VERBS_ABI_STATIC_ASSERT(sizeof(struct verbs_cmd_##_name) ==            \
					sizeof(struct verbs_ex_hdr) +          \
						sizeof(struct _kabi),          \
				"ibv_" #_name " size")

/* kern-abi.h: DECLARE_CMD(IB_USER_VERBS_CMD_..., ibv_<name>, ib_uverbs_...) */
VERBS_DECLARE_CMD(reg_mr, ib_uverbs_reg_mr);
VERBS_DECLARE_CMD_EX(create_cq_ex, ib_uverbs_ex_create_cq);
VERBS_DECLARE_CMD(create_qp, ib_uverbs_create_qp);
VERBS_DECLARE_CMD(modify_qp, ib_uverbs_modify_qp);
VERBS_DECLARE_CMD(query_qp, ib_uverbs_query_qp);
VERBS_DECLARE_CMD(create_srq, ib_uverbs_create_srq);
VERBS_DECLARE_CMD(modify_srq, ib_uverbs_modify_srq);
VERBS_DECLARE_CMD(query_srq, ib_uverbs_query_srq);

/*
 * Functions exported by libibverbs.so.1 at version IBVERBS_PRIVATE_34
 * (libibverbs/libibverbs.map.in), prototypes from driver.h.  Where upstream
 * takes a kern-abi.h command or a uapi response, the layout-identical
 * structure above is taken instead.
 */

/* driver.h: verbs_register_driver, named for the PABI. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/* driver.h; device.c allocates alloc_size bytes with calloc(). */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/* driver.h; cmd_device.c. */
int ibv_cmd_get_context(struct verbs_context *context,
			struct verbs_cmd_get_context *cmd, size_t cmd_size,
			struct verbs_resp_get_context *resp, size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct verbs_cmd_query_port *cmd, size_t cmd_size);

/* driver.h; cmd.c and cmd_pd.c. */
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct verbs_cmd_alloc_pd *cmd, size_t cmd_size,
		     struct verbs_resp_alloc_pd *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

/*
 * driver.h; cmd.c, cmd_mr.c, cmd_cq.c, cmd_qp.c, cmd_srq.c.  Responses are
 * the kernel uapi structures themselves (no driver data follows them).
 */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct verbs_cmd_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq,
			 struct verbs_cmd_create_cq_ex *cmd, size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);

int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct verbs_cmd_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct verbs_cmd_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct verbs_cmd_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct verbs_cmd_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct verbs_cmd_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct verbs_cmd_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

/* driver.h; cmd.c: the kernel resolves a RoCE destination's MAC itself. */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

/* driver.h; sysfs.c: reads <sysfs_dev->ibdev_path>/<fnfmt...>. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif

#endif /* METAROCE_VERBS_PROVIDER_ABI_H */
