// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: queue pairs.
 *
 * The queues live in the kernel.  Creation, state changes and queries are
 * the generic uverbs commands.  An RC QP asks for its work queues mapped
 * (METAROCE_UCTX_CAP_QP_RING) and posts through them with one doorbell
 * per call (ring.cpp); other QPs, and every QP where the kernel has no
 * rings or METAROCE_NO_RINGS is set, post by a POST_SEND / POST_RECV
 * command per call.  The kernel validates the work requests either way.
 * The ibv_wr_* API of IBV_QP_INIT_ATTR_SEND_OPS_FLAGS QPs batches into the
 * same path (wr.cpp).
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "metaroce.h"

namespace metaroce {

/*
 * METAROCE_TRANSPORT=metaroce|rocev2: the wire mode of the RC QPs this
 * process creates, over the device's default (sysfs default_transport),
 * which starts as the module's default_transport.  Returns false, unset,
 * and EINVAL in *err for a value that names no mode: a typo must not
 * quietly pick the other wire mode.
 */
static bool env_transport(uint32_t *transport, int *err) noexcept
{
	const char *v = std::getenv("METAROCE_TRANSPORT");

	*err = 0;
	if (!v)
		return false;
	if (!std::strcmp(v, "metaroce")) {
		*transport = METAROCE_TRANSPORT_METAROCE;
		return true;
	}
	if (!std::strcmp(v, "rocev2")) {
		*transport = METAROCE_TRANSPORT_ROCEV2;
		return true;
	}
	std::fprintf(stderr,
		     "metaroce: METAROCE_TRANSPORT=%s: not metaroce or rocev2\n",
		     v);
	*err = EINVAL;
	return false;
}

static void unmap_rings(qp *q) noexcept
{
	wq_ring_unmap(&q->sq);
	wq_ring_unmap(&q->rq);
}

/* Map the work queues the kernel made for @q, sized by the granted caps. */
static int map_rings(qp *q, struct ibv_context *ibctx,
		     const struct ibv_qp_init_attr_ex *attr,
		     const struct metaroce_create_qp_resp &resp) noexcept
{
	int ret = 0;

	if (resp.comp_mask & METAROCE_CREATE_QP_RESP_SQ_RING)
		ret = wq_ring_map(&q->sq, ibctx, resp.sq,
				  sizeof(struct metaroce_sq_wqe),
				  attr->cap.max_send_sge,
				  attr->cap.max_inline_data);
	if (!ret && (resp.comp_mask & METAROCE_CREATE_QP_RESP_RQ_RING))
		ret = wq_ring_map(&q->rq, ibctx, resp.rq,
				  sizeof(struct metaroce_rq_wqe),
				  attr->cap.max_recv_sge, 0);
	if (ret)
		unmap_rings(q);
	return ret;
}

/*
 * The one constructor of the three APIs: ibv_create_qp() arrives here
 * through create_qp() with a PD-only attribute and no driver request,
 * metarocedv_create_qp() with the request its attributes make (dv.cpp).
 * The wire mode of an RC QP is, in this order: the one @req names (an
 * explicit direct-verbs transport), METAROCE_TRANSPORT, the device's
 * default (the kernel's choice when none is sent).
 */
struct ibv_qp *create_qp_req(struct ibv_context *ibctx,
			     struct ibv_qp_init_attr_ex *attr,
			     const struct metaroce_create_qp_req *req) noexcept
{
	create_qp_cmd cmd = {};
	create_qp_resp resp = {};
	qp *q;
	int ret;

	/*
	 * No XRC, no creation flags: refuse them instead of creating a QP
	 * without what was asked for; likewise send_ops_flags of opcodes
	 * the QP type cannot have (wr.cpp).
	 */
	if (attr->comp_mask & ~uint32_t(IBV_QP_INIT_ATTR_PD |
					IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	ret = wr_check_create(attr);
	if (ret) {
		errno = ret;
		return nullptr;
	}
	if (req)
		cmd.drv = *req;
	/* UD QPs are RoCEv2 UD in every mode: only RC has a choice. */
	if (attr->qp_type == IBV_QPT_RC &&
	    !(cmd.drv.comp_mask & METAROCE_CREATE_QP_REQ_TRANSPORT)) {
		if (env_transport(&cmd.drv.transport, &ret))
			cmd.drv.comp_mask |= METAROCE_CREATE_QP_REQ_TRANSPORT;
		else if (ret) {
			errno = ret;
			return nullptr;
		}
	}
	/* Only ask a kernel that offers it: an older one refuses the bit. */
	if (attr->qp_type == IBV_QPT_RC &&
	    (to_context(ibctx)->use_caps & METAROCE_UCTX_CAP_QP_RING))
		cmd.drv.comp_mask |= METAROCE_CREATE_QP_REQ_RINGS;
	q = alloc_obj<qp>();
	if (!q)
		return nullptr;
	/*
	 * Fills in qp_num, handle, state and attr->cap as granted.  A module
	 * older than the fields past transport accepts them while zero.
	 */
	ret = ibv_cmd_create_qp_ex(ibctx, &q->vqp, attr, cmd.cmd(),
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		std::free(q);
		errno = ret;
		return nullptr;
	}
	q->transport = resp.drv.transport;
	ret = map_rings(q, ibctx, attr, resp.drv);
	if (!ret)
		ret = wr_init(q, attr);
	if (ret) {
		ibv_cmd_destroy_qp(&q->vqp.qp);
		unmap_rings(q);
		std::free(q);
		errno = ret;
		return nullptr;
	}
	return &q->vqp.qp;
}

struct ibv_qp *create_qp_ex(struct ibv_context *ibctx,
			    struct ibv_qp_init_attr_ex *attr) noexcept
{
	return create_qp_req(ibctx, attr, nullptr);
}

struct ibv_qp *create_qp(struct ibv_pd *ibpd,
			 struct ibv_qp_init_attr *attr) noexcept
{
	struct ibv_qp_init_attr_ex ex = {};
	struct ibv_qp *ibqp;

	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = ibpd;
	ibqp = create_qp_ex(ibpd->context, &ex);
	/* ibv_create_qp() reports the capabilities granted. */
	if (ibqp)
		attr->cap = ex.cap;
	return ibqp;
}

int modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
	      int attr_mask) noexcept
{
	struct verbs_cmd_modify_qp cmd = {};

	/* libibverbs updates ibqp->state on success. */
	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

int query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr) noexcept
{
	struct verbs_cmd_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int destroy_qp(struct ibv_qp *ibqp) noexcept
{
	int ret;

	/* On failure the kernel QP still exists: keep ours too. */
	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	wr_fini(to_qp(ibqp));
	unmap_rings(to_qp(ibqp));
	std::free(to_qp(ibqp));
	return 0;
}

} // namespace metaroce
