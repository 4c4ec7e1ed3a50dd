// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: the verbs of the first slice.  Everything
 * not listed in context_ops stays at libibverbs' default, which fails with
 * EOPNOTSUPP.
 *
 * ibv_cmd_* return 0 or a positive errno; verbs returning a pointer report
 * failure as NULL with errno set, verbs returning int return the errno.
 */
#include <cerrno>
#include <cstdlib>

#include "metaroce.h"

namespace metaroce {
namespace {

int query_device_ex(struct ibv_context *ibctx,
		    const struct ibv_query_device_ex_input *input,
		    struct ibv_device_attr_ex *attr, size_t attr_size) noexcept
{
	/* No driver data in the response: let libibverbs use its own buffer. */
	return ibv_cmd_query_device_any(ibctx, input, attr, attr_size, nullptr,
					nullptr);
}

int query_port(struct ibv_context *ibctx, uint8_t port_num,
	       struct ibv_port_attr *port_attr) noexcept
{
	struct verbs_cmd_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port_num, port_attr, &cmd, sizeof(cmd));
}

struct ibv_pd *alloc_pd(struct ibv_context *ibctx) noexcept
{
	alloc_pd_cmd cmd = {};
	alloc_pd_resp resp = {};
	pd *p;
	int ret;

	p = static_cast<pd *>(std::calloc(1, sizeof(*p)));
	if (!p) {
		errno = ENOMEM;
		return nullptr;
	}
	ret = ibv_cmd_alloc_pd(ibctx, &p->ibv_pd, &cmd.ibv_cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (ret) {
		std::free(p);
		errno = ret;
		return nullptr;
	}
	p->pdn = resp.drv.pdn;
	return &p->ibv_pd;
}

int dealloc_pd(struct ibv_pd *ibpd) noexcept
{
	int ret;

	/* On failure the kernel object still exists: keep ours too. */
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	std::free(to_pd(ibpd));
	return 0;
}

void free_context(struct ibv_context *ibctx) noexcept
{
	context *ctx = to_context(ibctx);

	verbs_uninit_context(&ctx->ibvctx);
	std::free(ctx);
}

} // namespace

/* Designated initializers must follow member order (C++20): sorted by name. */
const struct verbs_context_ops context_ops = {
	.alloc_pd = alloc_pd,
	.dealloc_pd = dealloc_pd,
	.free_context = free_context,
	.query_device_ex = query_device_ex,
	.query_port = query_port,
};

} // namespace metaroce
