// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: device and port queries, PDs, MRs, AHs and
 * the ops table.  CQs, QPs and SRQs are in cq.cpp, qp.cpp and srq.cpp.
 * Everything not listed in context_ops stays at libibverbs' default, which
 * fails with EOPNOTSUPP.
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

struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
		      uint64_t hca_va, int access) noexcept
{
	struct verbs_cmd_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = alloc_obj<struct verbs_mr>();
	if (!vmr)
		return nullptr;
	/* The kernel pins the pages and checks the access flags. */
	ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		std::free(vmr);
		errno = ret;
		return nullptr;
	}
	return &vmr->ibv_mr;
}

int dereg_mr(struct verbs_mr *vmr) noexcept
{
	int ret;

	/* On failure the kernel MR still exists: keep ours too. */
	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	std::free(vmr);
	return 0;
}

/*
 * The kernel resolves a RoCE destination (GID to MAC, source GID type)
 * while creating the AH, so no neighbour lookup happens here.
 */
struct ibv_ah *create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr) noexcept
{
	struct ib_uverbs_create_ah_resp resp = {};
	struct ibv_ah *ah;
	int ret;

	ah = alloc_obj<struct ibv_ah>();
	if (!ah)
		return nullptr;
	ret = ibv_cmd_create_ah(ibpd, ah, attr, &resp, sizeof(resp));
	if (ret) {
		std::free(ah);
		errno = ret;
		return nullptr;
	}
	return ah;
}

int destroy_ah(struct ibv_ah *ah) noexcept
{
	int ret;

	/* On failure the kernel AH still exists: keep ours too. */
	ret = ibv_cmd_destroy_ah(ah);
	if (ret)
		return ret;
	std::free(ah);
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
	/* cq_event stays libibverbs' no-op: the kernel re-arms nothing. */
	.create_ah = create_ah,
	.create_cq = create_cq,
	.create_cq_ex = create_cq_ex,
	.create_qp = create_qp,
	.create_qp_ex = create_qp_ex,
	.create_srq = create_srq,
	.dealloc_pd = dealloc_pd,
	.dereg_mr = dereg_mr,
	.destroy_ah = destroy_ah,
	.destroy_cq = destroy_cq,
	.destroy_qp = destroy_qp,
	.destroy_srq = destroy_srq,
	.free_context = free_context,
	.modify_qp = modify_qp,
	.modify_srq = modify_srq,
	.poll_cq = poll_cq,
	.post_recv = post_recv,
	.post_send = post_send,
	.post_srq_recv = ibv_cmd_post_srq_recv,
	.query_device_ex = query_device_ex,
	.query_port = query_port,
	.query_qp = query_qp,
	.query_srq = query_srq,
	.reg_mr = reg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
};

} // namespace metaroce
