// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: driver-specific uverbs ioctl methods (ib_device.driver_def),
 * merged by ib_uverbs into the device's uapi tree next to the core's.
 *
 * METAROCE_METHOD_QP_QUERY_STATS on UVERBS_OBJECT_QP: one snapshot of an
 * RC QP's connection and per-path statistics for
 * metarocedv_query_qp_stats(); why a method rather than a mapped page is
 * said in include/uapi/rdma/metaroce-abi.h.  ib_uverbs looks the QP up by
 * handle in the caller's context with read access, so the QP cannot be
 * destroyed while the handler runs.
 */

#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"

#define UVERBS_MODULE_NAME metaroce_ib
#include <rdma/uverbs_named_ioctl.h>

static int UVERBS_HANDLER(METAROCE_METHOD_QP_QUERY_STATS)(
	struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *ib_qp = uverbs_attr_get_obj(attrs,
					METAROCE_ATTR_QP_QUERY_STATS_HANDLE);
	struct metaroce_qp_stats *st;
	int err;

	if (IS_ERR(ib_qp))
		return PTR_ERR(ib_qp);
	if (ib_qp->qp_type != IB_QPT_RC)
		return -EOPNOTSUPP;
	st = kzalloc(sizeof(*st), GFP_KERNEL);	/* 1.5 KiB: not on the stack */
	if (!st)
		return -ENOMEM;
	metaroce_qp_get_stats(to_mqp(ib_qp), st);
	err = uverbs_copy_to_struct_or_zero(attrs,
					    METAROCE_ATTR_QP_QUERY_STATS_RESP,
					    st, sizeof(*st));
	kfree(st);
	return err;
}

DECLARE_UVERBS_NAMED_METHOD(
	METAROCE_METHOD_QP_QUERY_STATS,
	UVERBS_ATTR_IDR(METAROCE_ATTR_QP_QUERY_STATS_HANDLE, UVERBS_OBJECT_QP,
			UVERBS_ACCESS_READ, UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(METAROCE_ATTR_QP_QUERY_STATS_RESP,
			    UVERBS_ATTR_MIN_SIZE(offsetofend(struct metaroce_qp_stats,
							     num_paths)),
			    UA_MANDATORY));

ADD_UVERBS_METHODS(metaroce_qp_methods, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(METAROCE_METHOD_QP_QUERY_STATS));

const struct uapi_definition metaroce_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &metaroce_qp_methods),
	{},
};
