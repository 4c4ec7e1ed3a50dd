// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: shared receive queues.
 *
 * First slice: the SRQ lives in the kernel; posting is a POST_SRQ_RECV
 * command per call (ibv_cmd_post_srq_recv, set directly in the ops table).
 */
#include <cerrno>
#include <cstdlib>

#include "metaroce.h"

namespace metaroce {

struct ibv_srq *create_srq(struct ibv_pd *ibpd,
			   struct ibv_srq_init_attr *attr) noexcept
{
	struct verbs_cmd_create_srq cmd = {};
	struct ib_uverbs_create_srq_resp resp = {};
	struct ibv_srq *srq;
	int ret;

	srq = alloc_obj<struct ibv_srq>();
	if (!srq)
		return nullptr;
	/*
	 * Reports the granted max_wr/max_sge in attr->attr; libibverbs
	 * initialises the public fields afterwards.
	 */
	ret = ibv_cmd_create_srq(ibpd, srq, attr, &cmd, sizeof(cmd), &resp,
				 sizeof(resp));
	if (ret) {
		std::free(srq);
		errno = ret;
		return nullptr;
	}
	return srq;
}

int modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
	       int attr_mask) noexcept
{
	struct verbs_cmd_modify_srq cmd = {};

	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

int query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr) noexcept
{
	struct verbs_cmd_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int destroy_srq(struct ibv_srq *srq) noexcept
{
	int ret;

	/* On failure the kernel SRQ still exists: keep ours too. */
	ret = ibv_cmd_destroy_srq(srq);
	if (ret)
		return ret;
	std::free(srq);
	return 0;
}

} // namespace metaroce
