// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: queue pairs: create/modify/query/destroy and the posting
 * verbs.  RC QPs are carried by the transport core (metaroce_transport.c);
 * UD and GSI QPs send and receive datagrams (metaroce_ud.c) and share the
 * state machine, the receive queue and the flush logic of this file.
 *
 * A QP keeps its work requests in software queues of the depth the
 * consumer asked for (up to METAROCE_MAX_QP_WR); the transport core, whose
 * own queues hold MRC_MAX_SQ / MRC_MAX_RQ entries, is fed from them as it
 * completes work (metaroce_transport.c).  The connection (struct mrc_conn)
 * exists from the INIT->RTR transition until the QP is reset or destroyed,
 * because an RTR QP is already a responder (perftest's bandwidth servers
 * never leave RTR).  sq_psn, retry_cnt, rnr_retry and timeout are RTS
 * attributes: RTR->RTS hands them to the core, which accepts them because
 * an RTR QP cannot have posted a send.
 *
 * State machine: every transition is checked with ib_modify_qp_is_ok();
 * SQD and alternate paths are not supported (-EOPNOTSUPP).  Entering ERR
 * completes every posted WR with IB_WC_WR_FLUSH_ERR; WRs posted in ERR
 * are flushed at once.  RESET discards posted WRs without completions.
 * When its owner moves an RTR/RTS QP to ERR or RESET, or destroys it, the
 * connection first sends its latest ACK once more (MR-LOSS-012).
 *
 * Locking: qp->state_mutex serialises modify/query against each other;
 * qp->lock protects the queues, the state and the connection (see
 * metaroce.h).  post_recv and the UD post_send take it with
 * spin_lock_irqsave(): kernel consumers may post with interrupts off.
 */

#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* QPNs 0 and 1 are the special QPs of IBTA; start above them. */
#define METAROCE_FIRST_QPN	16
#define METAROCE_LAST_QPN	0xffffff

/*
 * QPs by number.  Lookups take the xarray's lock (BH: the receive path
 * and the QP timers run in softirq), not just RCU: ib_core frees the QP
 * as soon as destroy_qp returns, without a grace period, so a reader must
 * not hold a pointer it has no reference for once xa_erase_bh() returned.
 * Under the lock an entry still in the array holds its "numbered"
 * reference, so taking one cannot race with the last put.
 */
static DEFINE_XARRAY_FLAGS(metaroce_qps, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
static u32 metaroce_next_qpn;

struct metaroce_qp *metaroce_qp_get(u32 qpn)
{
	struct metaroce_qp *qp;

	xa_lock_bh(&metaroce_qps);
	qp = xa_load(&metaroce_qps, qpn);
	if (qp && !refcount_inc_not_zero(&qp->refs))
		qp = NULL;
	xa_unlock_bh(&metaroce_qps);
	return qp;
}

/*
 * The numbered QP at or above *@qpn, with a reference, *@qpn set to its
 * number; NULL when there is none.  For walks over every QP: continue
 * from *@qpn + 1.
 */
struct metaroce_qp *metaroce_qp_get_next(unsigned long *qpn)
{
	struct metaroce_qp *qp;

	xa_lock_bh(&metaroce_qps);
	xa_for_each_start(&metaroce_qps, *qpn, qp, *qpn)
		if (refcount_inc_not_zero(&qp->refs))
			break;
	xa_unlock_bh(&metaroce_qps);
	return qp;
}

void metaroce_qp_put(struct metaroce_qp *qp)
{
	if (refcount_dec_and_test(&qp->refs))
		complete(&qp->released);
}

int metaroce_wq_init(struct metaroce_wq *wq, u32 max_wr, u32 max_sge,
			    size_t entry, size_t sge)
{
	wq->size = roundup_pow_of_two(max_wr);
	wq->max_sge = max_sge;
	wq->stride = ALIGN(entry + max_sge * sge, 8);
	wq->head = wq->fed = wq->tail = 0;
	wq->buf = kvcalloc(wq->size, wq->stride, GFP_KERNEL);
	return wq->buf ? 0 : -ENOMEM;
}

static int metaroce_check_cap(const struct ib_qp_cap *cap)
{
	if (!cap->max_send_wr || cap->max_send_wr > METAROCE_MAX_QP_WR ||
	    !cap->max_recv_wr || cap->max_recv_wr > METAROCE_MAX_QP_WR ||
	    cap->max_send_sge > METAROCE_MAX_SGE ||
	    cap->max_recv_sge > METAROCE_MAX_SGE ||
	    cap->max_inline_data > METAROCE_MAX_INLINE)
		return -EINVAL;
	return 0;
}

/* The ABI numbers the wire modes as the core does. */
static_assert((int)METAROCE_TRANSPORT_METAROCE == (int)MRC_MODE_METAROCE &&
	      (int)METAROCE_TRANSPORT_ROCEV2 == (int)MRC_MODE_ROCEV2);

/* What a CREATE_QP request fixes for the QP's connection. */
struct metaroce_qp_choice {
	enum mrc_mode mode;
	u32 num_paths;		/* 0: the device's (sysfs paths) at connect */
	u32 cc_flags;		/* MRC_CC_* */
	bool rings;		/* map the work queues (metaroce_ring.c) */
};

/* The core's congestion signals of a profile (enum metaroce_cc_profile). */
static int metaroce_cc_flags(u32 profile, u32 *cc_flags)
{
	struct mrc_config cfg;

	switch (profile) {
	case METAROCE_CC_DEFAULT:
		mrc_config_default(&cfg, MRC_MODE_METAROCE);
		*cc_flags = cfg.cc_flags;
		return 0;
	case METAROCE_CC_ECN:
		*cc_flags = MRC_CC_ECN;
		return 0;
	case METAROCE_CC_DELAY:
		*cc_flags = MRC_CC_ECN | MRC_CC_DELAY;
		return 0;
	case METAROCE_CC_NONE:
		*cc_flags = 0;
		return 0;
	}
	return -EINVAL;
}

#define METAROCE_CREATE_QP_REQ_ALL					\
	(METAROCE_CREATE_QP_REQ_TRANSPORT | METAROCE_CREATE_QP_REQ_NUM_PATHS | \
	 METAROCE_CREATE_QP_REQ_CC_PROFILE | METAROCE_CREATE_QP_REQ_RINGS)

/*
 * The wire mode, paths and congestion control of a new QP
 * (MR-COMPAT-011): those the request names, else the device's default
 * mode, its paths when the QP connects (sysfs paths) and the core's
 * congestion control.  A request shorter than struct
 * metaroce_create_qp_req lacks the fields past its end; a longer one must
 * be zero beyond it.  Only RC QPs have a choice: UD and GSI are RoCEv2 UD;
 * paths and a congestion profile are MetaRoCE-mode attributes.
 */
static int metaroce_create_qp_choice(struct metaroce_dev *mdev,
				     const struct ib_qp_init_attr *init,
				     struct ib_udata *udata,
				     struct metaroce_qp_choice *choice)
{
	struct metaroce_create_qp_req req = {};
	int err;

	choice->mode = READ_ONCE(mdev->default_mode);
	choice->num_paths = 0;
	choice->rings = false;
	err = metaroce_cc_flags(METAROCE_CC_DEFAULT, &choice->cc_flags);
	if (err)
		return err;
	err = metaroce_udata_req(udata, &req, sizeof(req));
	if (err)
		return err;
	if ((req.comp_mask & ~(u64)METAROCE_CREATE_QP_REQ_ALL) || req.reserved)
		return -EINVAL;
	if (req.comp_mask && init->qp_type != IB_QPT_RC)
		return -EINVAL;
	if (req.comp_mask & METAROCE_CREATE_QP_REQ_TRANSPORT) {
		if (req.transport != METAROCE_TRANSPORT_METAROCE &&
		    req.transport != METAROCE_TRANSPORT_ROCEV2)
			return -EINVAL;
		choice->mode = req.transport;
	}
	if (req.comp_mask & METAROCE_CREATE_QP_REQ_NUM_PATHS) {
		if (!req.num_paths || req.num_paths > MRC_MAX_PATHS ||
		    (choice->mode == MRC_MODE_ROCEV2 && req.num_paths != 1))
			return -EINVAL;
		choice->num_paths = req.num_paths;
	}
	if (req.comp_mask & METAROCE_CREATE_QP_REQ_CC_PROFILE) {
		if (choice->mode == MRC_MODE_ROCEV2 &&
		    req.cc_profile != METAROCE_CC_DEFAULT)
			return -EINVAL;
		err = metaroce_cc_flags(req.cc_profile, &choice->cc_flags);
		if (err)
			return err;
	}
	choice->rings = req.comp_mask & METAROCE_CREATE_QP_REQ_RINGS;
	/* RoCEv2-mode RC is carried by the namespace's UDP 4791 socket. */
	if (init->qp_type == IB_QPT_RC && choice->mode == MRC_MODE_ROCEV2 &&
	    !metaroce_can_rocev2(mdev))
		return -EADDRINUSE;
	return 0;
}

/*
 * Tell user space which wire mode the QP got and, if it asked for them,
 * where its mapped work queues are.
 */
static int metaroce_create_qp_resp(struct metaroce_qp *qp,
				   const struct metaroce_qp_choice *choice,
				   struct ib_udata *udata)
{
	struct metaroce_create_qp_resp resp = {
		.comp_mask = METAROCE_CREATE_QP_RESP_TRANSPORT,
		.transport = qp->mode,
	};
	int err;

	if (choice->rings) {
		/* A ring whose place the process cannot learn is no use. */
		if (!udata || udata->outlen < offsetofend(typeof(resp), rq))
			return -EINVAL;
		err = metaroce_qp_map_rings(qp, udata, &resp);
		if (err)
			return err;
	}
	if (!udata || !udata->outlen)
		return 0;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		metaroce_qp_unmap_rings(qp);
	return err;
}

static int metaroce_create_qp(struct ib_qp *ib_qp,
			      struct ib_qp_init_attr *init,
			      struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ib_qp->device);
	struct metaroce_qp *qp = to_mqp(ib_qp);
	struct ib_qp_cap *cap = &init->cap;
	struct metaroce_qp_choice choice;
	u32 qpn;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		/* QP1 belongs to ib_mad; user space reaches it through umad. */
		if (udata || init->port_num != METAROCE_PORT)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	if (init->srq) {
		if (init->qp_type == IB_QPT_GSI)
			return -EINVAL;
		/* IBTA: the receive queue attributes are ignored. */
		cap->max_recv_wr = 1;
		cap->max_recv_sge = 0;
	}
	err = metaroce_check_cap(cap);
	if (err)
		return err;
	err = metaroce_create_qp_choice(mdev, init, udata, &choice);
	if (err)
		return err;
	if (atomic_inc_return(&mdev->num_qp) > METAROCE_MAX_QP) {
		err = -ENOMEM;
		goto err_count;
	}

	qp->mdev = mdev;
	mutex_init(&qp->state_mutex);
	spin_lock_init(&qp->lock);
	refcount_set(&qp->refs, 1);
	init_completion(&qp->released);
	hrtimer_init(&qp->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	qp->timer.function = metaroce_qp_timer;
	__skb_queue_head_init(&qp->txq);
	INIT_LIST_HEAD(&qp->rx_batch_node);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->mode = choice.mode;
	qp->cfg_paths = choice.num_paths;
	qp->cc_flags = choice.cc_flags;
	metaroce_ud_init(qp);

	cap->max_send_sge = max_t(u32, cap->max_send_sge, 1);
	cap->max_recv_sge = max_t(u32, cap->max_recv_sge, 1);
	err = metaroce_wq_init(&qp->sq, cap->max_send_wr, cap->max_send_sge,
			       sizeof(struct metaroce_swqe),
			       sizeof(struct metaroce_sge));
	if (err)
		goto err_count;
	if (init->srq) {
		/* The WQEs it holds of the SRQ's, in the SRQ's layout. */
		qp->srq = to_msrq(init->srq);
		err = metaroce_wq_init(&qp->rq, METAROCE_SRQ_QP_DEPTH,
				       qp->srq->rq.max_sge,
				       sizeof(struct metaroce_rwqe),
				       sizeof(struct metaroce_sge));
	} else {
		err = metaroce_wq_init(&qp->rq, cap->max_recv_wr,
				       cap->max_recv_sge,
				       sizeof(struct metaroce_rwqe),
				       sizeof(struct metaroce_sge));
	}
	if (err)
		goto err_sq;
	qp->max_inline = cap->max_inline_data;
	if (qp->max_inline) {
		qp->inline_bufs = kvcalloc(qp->sq.size, qp->max_inline,
					   GFP_KERNEL);
		if (!qp->inline_bufs) {
			err = -ENOMEM;
			goto err_rq;
		}
	}

	err = metaroce_create_qp_resp(qp, &choice, udata);
	if (err)
		goto err_inline;

	if (init->qp_type == IB_QPT_GSI) {
		/* QP1 is found by the receiving netdev, not by number. */
		err = metaroce_gsi_add(qp);
		if (err)
			goto err_inline;
		ib_qp->qp_num = 1;
		qpn = 1;
	} else {
		err = xa_alloc_cyclic_bh(&metaroce_qps, &qpn, qp,
					 XA_LIMIT(METAROCE_FIRST_QPN,
						  METAROCE_LAST_QPN),
					 &metaroce_next_qpn, GFP_KERNEL);
		if (err < 0)
			goto err_inline;
		ib_qp->qp_num = qpn;
	}
	/* The spread of UDP source ports over this QP's paths. */
	qp->src_port_base = 0xc000 + ((qpn * MRC_MAX_PATHS) & 0x3fff);

	/* Report what was allocated. */
	cap->max_send_wr = qp->sq.size;
	cap->max_recv_wr = qp->srq ? 0 : qp->rq.size;
	qp->attr.cap = *cap;
	if (qp->srq)
		atomic_inc(&qp->srq->num_qps);
	qp->attr.qp_state = IB_QPS_RESET;
	/* GSI QPs never get IB_QP_PORT: ib_mad names the port at creation. */
	qp->attr.port_num = init->port_num ?: METAROCE_PORT;
	return 0;

err_inline:
	metaroce_qp_unmap_rings(qp);
	kvfree(qp->inline_bufs);
err_rq:
	kvfree(qp->rq.buf);
err_sq:
	kvfree(qp->sq.buf);
err_count:
	atomic_dec(&mdev->num_qp);
	return err;
}

static int metaroce_destroy_qp(struct ib_qp *ib_qp, struct ib_udata *udata)
{
	struct metaroce_qp *qp = to_mqp(ib_qp);
	bool rc = !metaroce_qp_is_ud(qp);

	/*
	 * From leaving the statistics walk (the QP array) until its
	 * connection's counts are retired (metaroce_stats.c).
	 */
	if (rc)
		mutex_lock(&qp->mdev->stats_mutex);
	/* No new lookups from the receive path, then wait for running ones. */
	if (ib_qp->qp_type == IB_QPT_GSI)
		metaroce_gsi_del(qp);
	else
		xa_erase_bh(&metaroce_qps, ib_qp->qp_num);
	metaroce_qp_put(qp);
	wait_for_completion(&qp->released);

	spin_lock_bh(&qp->lock);
	metaroce_conn_close(qp);	/* sent below */
	qp->dead = true;	/* the timer does not re-arm itself */
	/* Nothing drives the connection once the QP is dead. */
	if (rc)
		metaroce_stats_retire(qp);
	spin_unlock_bh(&qp->lock);
	if (rc)
		mutex_unlock(&qp->mdev->stats_mutex);
	hrtimer_cancel(&qp->timer);
	/*
	 * A UD send completes when its datagram is queued for ud_tx_work:
	 * send what is queued (the process may destroy the QP as soon as it
	 * saw the completion), then nothing can queue more.
	 */
	flush_work(&qp->ud_tx_work);
	skb_queue_purge(&qp->ud_txq);
	/*
	 * The closing packets (MR-LOSS-012); every other context that
	 * queued on txq also sent it.  Empty then, but be sure.
	 */
	metaroce_qp_xmit(qp);
	__skb_queue_purge(&qp->txq);

	metaroce_conn_stop(qp);
	if (qp->srq) {
		/* Nothing else reaches the QP now: no lock is contended. */
		spin_lock_bh(&qp->lock);
		metaroce_srq_give_back(qp, true);
		spin_unlock_bh(&qp->lock);
		atomic_dec(&qp->srq->num_qps);
	}
	kfree_skb(qp->spare_skb);
	metaroce_qp_unmap_rings(qp);
	kvfree(qp->inline_bufs);
	kvfree(qp->rq.buf);
	kvfree(qp->sq.buf);
	atomic_dec(&qp->mdev->num_qp);
	return 0;
}

/* IPv4 address of an IPv4-mapped GID, or 0 (not IPv4). */
static __be32 metaroce_gid_to_ipv4(const union ib_gid *gid)
{
	const struct in6_addr *a = (const struct in6_addr *)gid->raw;

	return ipv6_addr_v4mapped(a) ? a->s6_addr32[3] : 0;
}

/* Validate the attributes of @mask against the device limits. */
static int metaroce_check_attr(struct metaroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask,
			       __be32 *saddr, __be32 *daddr)
{
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE |
		    IB_QP_EN_SQD_ASYNC_NOTIFY))
		return -EOPNOTSUPP;
	if ((mask & IB_QP_STATE) && (attr->qp_state == IB_QPS_SQD ||
				     attr->qp_state == IB_QPS_SQE))
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PORT) && attr->port_num != METAROCE_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= METAROCE_PORT_PKEY_TBL_LEN)
		return -EINVAL;
	/*
	 * REMOTE_ATOMIC only permits what the device's atomic_cap allows;
	 * ib_cm grants it to every connection with responder resources.
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 ||
	     attr->path_mtu > METAROCE_PORT_MAX_MTU))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > METAROCE_LAST_QPN)
		return -EINVAL;
	if (mask & IB_QP_CAP) {
		/* Resizing the queues is not supported. */
		if (attr->cap.max_send_wr > qp->sq.size ||
		    attr->cap.max_recv_wr > qp->rq.size)
			return -EINVAL;
	}
	if (mask & IB_QP_AV) {
		const struct ib_global_route *grh;

		if (!(rdma_ah_get_ah_flags(&attr->ah_attr) & IB_AH_GRH))
			return -EINVAL;
		grh = rdma_ah_read_grh(&attr->ah_attr);
		if (!grh->sgid_attr ||
		    grh->sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
			return -EINVAL;
		/* IPv6 addressing is a later step: IPv4-mapped GIDs only. */
		*daddr = metaroce_gid_to_ipv4(&grh->dgid);
		*saddr = metaroce_gid_to_ipv4(&grh->sgid_attr->gid);
		if (!*daddr || !*saddr)
			return -EOPNOTSUPP;
	}
	return 0;
}

/* Copy the attributes of @mask into qp->attr.  qp->lock held. */
static void metaroce_save_attr(struct metaroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_AV) {
		a->ah_attr = attr->ah_attr;
		/* Not kept: ib_core owns that reference. */
		a->ah_attr.grh.sgid_attr = NULL;
	}
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & MR_PSN_MASK;
	/*
	 * More READ/atomic depth than the device has is clamped, not
	 * refused (MR-COMPAT-013): perftest passes the peer's 128, and IBTA
	 * lets a device report its maximum; query_qp reports the clamp.
	 */
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = min_t(u8, attr->max_rd_atomic,
					 METAROCE_MAX_QP_INIT_RD_ATOM);
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & MR_PSN_MASK;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = min_t(u8, attr->max_dest_rd_atomic,
					      METAROCE_MAX_QP_RD_ATOM);
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
}

static int metaroce_modify_qp(struct ib_qp *ib_qp, struct ib_qp_attr *attr,
			      int mask, struct ib_udata *udata)
{
	struct metaroce_qp *qp = to_mqp(ib_qp);
	struct mrc_conn *conn = NULL, *old_conn = NULL;
	enum ib_qp_state cur, new;
	bool reset_rc;
	__be32 saddr = 0, daddr = 0;
	int err;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	mutex_lock(&qp->state_mutex);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	err = -EINVAL;
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, new, ib_qp->qp_type, mask))
		goto out;
	err = metaroce_check_attr(qp, attr, mask, &saddr, &daddr);
	if (err)
		goto out;
	if (!metaroce_qp_is_ud(qp) && cur == IB_QPS_INIT &&
	    new == IB_QPS_RTR) {
		conn = kvzalloc(mrc_conn_size(), GFP_KERNEL);
		err = -ENOMEM;
		if (!conn)
			goto out;
	}

	/* RESET frees the connection: its counts are retired first. */
	reset_rc = new == IB_QPS_RESET && !metaroce_qp_is_ud(qp);
	if (reset_rc)
		mutex_lock(&qp->mdev->stats_mutex);
	spin_lock_bh(&qp->lock);
	metaroce_save_attr(qp, attr, mask);
	if (mask & IB_QP_AV) {
		qp->saddr = saddr;
		qp->daddr = daddr;
	}
	err = 0;
	if (conn) {
		qp->conn = conn;
		err = metaroce_conn_start(qp);
		if (err) {
			qp->conn = NULL;
			old_conn = conn;
		}
	} else if (cur == IB_QPS_RTR && new == IB_QPS_RTS && qp->conn) {
		err = metaroce_conn_start_requester(qp);
	} else if (cur == IB_QPS_RTR && new == IB_QPS_RTS) {
		qp->ud_psn = qp->attr.sq_psn;	/* UD, GSI */
	}
	/* The connection's last word before the owner silences it. */
	if (!err && (new == IB_QPS_ERR || new == IB_QPS_RESET))
		metaroce_conn_close(qp);
	if (!err && new == IB_QPS_ERR) {
		/* Sets the state; events if the QP was not in ERR before. */
		metaroce_qp_flush(qp);
	} else if (!err) {
		qp->state = new;
		qp->attr.qp_state = new;
		if (new == IB_QPS_RESET) {
			if (reset_rc)
				metaroce_stats_retire(qp);
			old_conn = qp->conn;
			qp->conn = NULL;
			if (qp->srq)
				metaroce_srq_give_back(qp, true);
			qp->sq.head = qp->sq.fed = qp->sq.tail = 0;
			qp->rq.head = qp->rq.fed = qp->rq.tail = 0;
			metaroce_rq_ring_discard(qp);
		} else {
			metaroce_rq_ring_start(qp);
			metaroce_qp_run(qp);
		}
	}
	spin_unlock_bh(&qp->lock);
	if (reset_rc)
		mutex_unlock(&qp->mdev->stats_mutex);

	if (new == IB_QPS_RESET)
		hrtimer_cancel(&qp->timer);
	kvfree(old_conn);
	metaroce_qp_xmit(qp);
out:
	mutex_unlock(&qp->state_mutex);
	return err;
}

static int metaroce_query_qp(struct ib_qp *ib_qp, struct ib_qp_attr *attr,
			     int mask, struct ib_qp_init_attr *init)
{
	struct metaroce_qp *qp = to_mqp(ib_qp);

	mutex_lock(&qp->state_mutex);
	spin_lock_bh(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	spin_unlock_bh(&qp->lock);
	mutex_unlock(&qp->state_mutex);

	memset(init, 0, sizeof(*init));
	init->qp_type = ib_qp->qp_type;
	init->send_cq = ib_qp->send_cq;
	init->recv_cq = ib_qp->recv_cq;
	init->cap = attr->cap;
	init->srq = ib_qp->srq;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	return 0;
}

/*
 * Validate the SGEs of a WR against the MRs of @pd (the QP's or SRQ's):
 * -EINVAL if the message is too long, -EACCES (with *@length set) if an
 * SGE's lkey does not name an MR of @pd with @access over its range.
 */
int metaroce_check_sges(struct ib_pd *pd, const struct ib_sge *sg,
			int num_sge, int access, u32 *length)
{
	bool bad_key = false;
	u64 total = 0;
	int i;

	for (i = 0; i < num_sge; i++) {
		struct metaroce_mr *mr;

		total += sg[i].length;
		if (!sg[i].length || bad_key)
			continue;
		mr = metaroce_mr_get(pd, sg[i].lkey, false, access,
				     sg[i].addr, sg[i].length);
		if (mr)
			metaroce_mr_put(mr);
		else
			bad_key = true;
	}
	if (total > METAROCE_PORT_MAX_MSG_SZ)
		return -EINVAL;
	*length = total;
	return bad_key ? -EACCES : 0;
}

static void metaroce_copy_sges(struct metaroce_sge *dst,
			       const struct ib_sge *sg, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = sg[i].addr;
		dst[i].length = sg[i].length;
		dst[i].lkey = sg[i].lkey;
	}
}

/* Gather the inline payload of @wr into @buf (user or kernel memory). */
int metaroce_gather_inline(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			   u8 *buf, u32 *length)
{
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sg = &wr->sg_list[i];

		if (sg->length > qp->max_inline - total)
			return -EINVAL;
		if (qp->ib_qp.uobject) {
			if (copy_from_user(buf + total,
					   u64_to_user_ptr(sg->addr),
					   sg->length))
				return -EFAULT;
		} else {
			memcpy(buf + total, (void *)(uintptr_t)sg->addr,
			       sg->length);
		}
		total += sg->length;
	}
	*length = total;
	return 0;
}

/*
 * Post one RC send WR.  @given is the inline payload when it is already in
 * kernel memory (a mapped ring's entry, metaroce_ring.c); NULL gathers it
 * from the WR's SGEs.
 */
int metaroce_post_one_send(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			   const struct metaroce_inline *given)
{
	u8 inline_data[METAROCE_MAX_INLINE];
	bool is_inline = wr->send_flags & IB_SEND_INLINE;
	struct metaroce_swqe *wqe;
	bool prot_err;
	u32 length;
	int err;

	/* READ and atomics write their local buffers: no inline data. */
	bool to_local = wr->opcode == IB_WR_RDMA_READ ||
			wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
			wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		break;
	default:
		return -EINVAL;
	}
	if (wr->send_flags & ~(IB_SEND_SIGNALED | IB_SEND_SOLICITED |
			       IB_SEND_INLINE | IB_SEND_FENCE))
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->sq.max_sge ||
	    (to_local && is_inline))
		return -EINVAL;
	if (is_inline && given) {
		if (given->len > qp->max_inline)
			return -EINVAL;
		memcpy(inline_data, given->data, given->len);
		length = given->len;
		err = 0;
	} else if (is_inline) {
		err = metaroce_gather_inline(qp, wr, inline_data, &length);
	} else {
		err = metaroce_check_sges(qp->ib_qp.pd, wr->sg_list,
					  wr->num_sge, to_local ? IB_ACCESS_LOCAL_WRITE : 0,
					  &length);
	}
	/*
	 * IBTA: an lkey that does not cover an SGE is a local protection
	 * error of the WR, reported in its completion when the QP reaches it
	 * (metaroce_feed(); the QP then enters ERR), not by post_send.
	 */
	prot_err = err == -EACCES;
	if (err && !prot_err)
		return err;
	err = 0;
	if (to_local && wr->opcode != IB_WR_RDMA_READ && length != 8)
		return -EINVAL;	/* an atomic's result is 8 bytes */

	spin_lock_bh(&qp->lock);
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_ERR) {
		err = -EINVAL;
		goto unlock;
	}
	if (qp->sq.head - qp->sq.tail == qp->sq.size) {
		err = -ENOMEM;
		goto unlock;
	}
	wqe = metaroce_wq_entry(&qp->sq, qp->sq.head);
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->length = length;
	wqe->signaled = qp->sq_sig_all || (wr->send_flags & IB_SEND_SIGNALED);
	wqe->done = false;
	wqe->status = prot_err ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS;
	wqe->inline_data = is_inline;
	wqe->fence = wr->send_flags & IB_SEND_FENCE;
	wqe->remote_addr = 0;
	wqe->rkey = 0;
	wqe->compare_add = 0;
	wqe->swap = 0;
	wqe->imm_data = 0;
	if (wr->opcode == IB_WR_SEND_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
		wqe->imm_data = be32_to_cpu(wr->ex.imm_data);
	if (wr->opcode == IB_WR_RDMA_WRITE ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_READ) {
		wqe->remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rkey = rdma_wr(wr)->rkey;
	} else if (wr->opcode != IB_WR_SEND &&
		   wr->opcode != IB_WR_SEND_WITH_IMM) {
		wqe->remote_addr = atomic_wr(wr)->remote_addr;
		wqe->rkey = atomic_wr(wr)->rkey;
		wqe->compare_add = atomic_wr(wr)->compare_add;
		wqe->swap = atomic_wr(wr)->swap;
	}
	if (is_inline) {
		wqe->num_sge = 0;
		wqe->inline_buf = qp->inline_bufs +
			(qp->sq.head & (qp->sq.size - 1)) * qp->max_inline;
		memcpy(wqe->inline_buf, inline_data, length);
	} else {
		wqe->num_sge = wr->num_sge;
		wqe->inline_buf = NULL;
		metaroce_copy_sges(wqe->sge, wr->sg_list, wr->num_sge);
	}
	qp->sq.head++;
	if (qp->state == IB_QPS_ERR)
		metaroce_qp_flush(qp);
	else
		metaroce_qp_run(qp);
unlock:
	spin_unlock_bh(&qp->lock);
	return err;
}

static int metaroce_post_send(struct ib_qp *ib_qp,
			      const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr)
{
	struct metaroce_qp *qp = to_mqp(ib_qp);
	int err = 0;

	/* POST_SEND without a WR: the doorbell of a mapped send queue. */
	if (!wr && qp->sq_ring.hdr)
		err = metaroce_sq_ring_doorbell(qp);
	for (; wr; wr = wr->next) {
		if (metaroce_qp_is_ud(qp))
			err = metaroce_ud_post_send(qp, wr);
		else
			err = metaroce_post_one_send(qp, wr, NULL);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	metaroce_qp_xmit(qp);
	return err;
}

/* A receive WQE as posted (to a QP's receive queue or an SRQ). */
void metaroce_rwqe_init(struct metaroce_rwqe *wqe, const struct ib_recv_wr *wr,
			u32 length)
{
	wqe->wr_id = wr->wr_id;
	wqe->length = length;
	wqe->byte_len = 0;
	wqe->status = IB_WC_SUCCESS;
	wqe->done = false;
	wqe->opcode = MRC_OP_RECV;
	wqe->wc_flags = 0;
	wqe->imm_data = 0;
	wqe->num_sge = wr->num_sge;
	metaroce_copy_sges(wqe->sge, wr->sg_list, wr->num_sge);
}

/*
 * Queue one receive WR; qp->lock held.  @strict (POST_RECV, or its ring's
 * doorbell): a WR that fails the checks is refused with the errno the
 * command returns.  Otherwise (an entry the kernel took from the receive
 * ring by itself, metaroce_rq_ring_take()) the post returned long ago:
 * such a WR is queued in error instead and completes with its status when
 * the receives before it have (metaroce_feed_recvs()), and the QP fails,
 * as a send WR with a bad lkey does.  -ENOMEM: the queue is full.
 */
int metaroce_post_one_recv_locked(struct metaroce_qp *qp,
				  const struct ib_recv_wr *wr, bool strict)
{
	struct ib_recv_wr none = { .wr_id = wr->wr_id };
	struct metaroce_rwqe *wqe;
	u8 status = IB_WC_SUCCESS;
	u32 length = 0;
	int err;

	lockdep_assert_held(&qp->lock);
	/* A QP with an SRQ has no receive queue of the consumer's. */
	if (qp->srq)
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->rq.max_sge)
		err = -EINVAL;
	else
		err = metaroce_check_sges(qp->ib_qp.pd, wr->sg_list,
					  wr->num_sge, IB_ACCESS_LOCAL_WRITE,
					  &length);
	if (err && strict)
		return -EINVAL;
	if (qp->state == IB_QPS_RESET)
		return -EINVAL;
	if (qp->rq.head - qp->rq.tail == qp->rq.size)
		return -ENOMEM;
	if (err) {
		status = err == -EACCES ? IB_WC_LOC_PROT_ERR :
					  IB_WC_LOC_QP_OP_ERR;
		wr = &none;	/* its SGEs are never used */
		length = 0;
	}
	wqe = metaroce_wq_entry(&qp->rq, qp->rq.head);
	metaroce_rwqe_init(wqe, wr, length);
	wqe->status = status;
	qp->rq.head++;
	return 0;
}

/* Receives were queued by a post: flushed in ERR, else handed on. */
void metaroce_rq_posted(struct metaroce_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state == IB_QPS_ERR)
		metaroce_qp_flush(qp);
	else
		metaroce_qp_run(qp);
}

int metaroce_post_one_recv(struct metaroce_qp *qp, const struct ib_recv_wr *wr)
{
	unsigned long flags;
	int err;

	spin_lock_irqsave(&qp->lock, flags);
	err = metaroce_post_one_recv_locked(qp, wr, true);
	if (!err)
		metaroce_rq_posted(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	return err;
}

static int metaroce_post_recv(struct ib_qp *ib_qp,
			      const struct ib_recv_wr *wr,
			      const struct ib_recv_wr **bad_wr)
{
	struct metaroce_qp *qp = to_mqp(ib_qp);
	int err = 0;

	/* POST_RECV without a WR: the doorbell of a mapped receive queue. */
	if (!wr && qp->rq_ring.hdr)
		err = metaroce_rq_ring_doorbell(qp);
	for (; wr; wr = wr->next) {
		err = metaroce_post_one_recv(qp, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	metaroce_qp_xmit(qp);
	return err;
}

const struct ib_device_ops metaroce_qp_ops = {
	.create_qp = metaroce_create_qp,
	.destroy_qp = metaroce_destroy_qp,
	.modify_qp = metaroce_modify_qp,
	.query_qp = metaroce_query_qp,
	.post_send = metaroce_post_send,
	.post_recv = metaroce_post_recv,

	INIT_RDMA_OBJ_SIZE(ib_qp, metaroce_qp, ib_qp),
};
