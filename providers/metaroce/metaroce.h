/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Private types of the MetaRoCE libibverbs provider.
 */
#ifndef METAROCE_PROVIDER_H
#define METAROCE_PROVIDER_H

#include <cstddef>
#include <cstdint>
#include <type_traits>

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
};

struct pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn; /* device-unique number, for diagnostics */
};

/*
 * libibverbs allocates and frees these as raw C memory and never runs
 * constructors, so they must stay plain C aggregates.
 */
static_assert(std::is_standard_layout_v<device> &&
	      std::is_standard_layout_v<context> &&
	      std::is_standard_layout_v<pd>);
static_assert(offsetof(device, vdev) == 0 && offsetof(pd, ibv_pd) == 0);

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

/* verbs.cpp */
extern const struct verbs_context_ops context_ops;

} // namespace metaroce

#endif /* METAROCE_PROVIDER_H */
