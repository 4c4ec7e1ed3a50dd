// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: shared receive queues.
 *
 * An SRQ is a ring of receive WQEs (struct metaroce_rwqe, the layout of a
 * QP's receive queue).  A QP attached to an SRQ has a small receive queue
 * of its own, METAROCE_SRQ_QP_DEPTH entries, which it refills from the SRQ
 * (metaroce_srq_take()) whenever it runs: the transport core matches
 * receive-consuming messages to receives posted to it in advance (by SSN,
 * and in MetaRoCE mode out of order), so a QP needs a few receives ahead
 * of the messages in flight.  How many a QP holds is bounded so that QPs
 * without traffic cannot drain the SRQ for the others: at most
 * srq->size / (2 * attached QPs), at least one.  A QP that finds the SRQ
 * empty answers RNR, and the requester retries (IBTA 10.2.9.4).
 *
 * The SRQ limit (IBTA 10.2.9.3) counts the WQEs still in the SRQ's ring;
 * those a QP holds are taken.  When a take leaves fewer than the armed
 * limit, IB_EVENT_SRQ_LIMIT_REACHED is delivered once and the limit is
 * disarmed (srq_limit reads 0) until modify_srq arms it again.
 *
 * A QP that leaves for ERR gives the WQEs it holds and no message has
 * completed back to the SRQ (metaroce_srq_give_back()): SRQ WQEs are not
 * flushed (IBTA 10.3.1).  RESET and destroy give back every WQE the QP
 * has not completed to the consumer, because they discard completions.
 * A WQE whose message was partially placed is given back too: its buffer
 * holds no completed data, and the next message overwrites it.  After an
 * SRQ-attached QP enters ERR it gets IB_EVENT_QP_LAST_WQE_REACHED.
 *
 * Capacity: at most srq->size WQEs are posted and not yet completed,
 * counting those the QPs hold, so a WQE given back always finds its slot
 * free at the ring's tail.
 *
 * Locking: srq->lock (taken with irqsave: kernel consumers may post with
 * interrupts off) protects the ring and the limit; it nests inside
 * qp->lock.  srq->outstanding is atomic because completions, under the
 * QP's lock only, decrement it.
 */

#include "metaroce.h"
#include "metaroce_param.h"

static int metaroce_create_srq(struct ib_srq *ib_srq,
			       struct ib_srq_init_attr *init,
			       struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ib_srq->device);
	struct metaroce_srq *srq = to_msrq(ib_srq);
	struct ib_srq_attr *attr = &init->attr;
	int err;

	/* No driver data is defined for CREATE_SRQ in this ABI version. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > METAROCE_MAX_SRQ_WR ||
	    attr->max_sge > METAROCE_MAX_SRQ_SGE ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;
	if (atomic_inc_return(&mdev->num_srq) > METAROCE_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}

	srq->mdev = mdev;
	spin_lock_init(&srq->lock);
	atomic_set(&srq->outstanding, 0);
	atomic_set(&srq->num_qps, 0);
	attr->max_sge = max_t(u32, attr->max_sge, 1);
	err = metaroce_wq_init(&srq->rq, attr->max_wr, attr->max_sge,
			       sizeof(struct metaroce_rwqe),
			       sizeof(struct metaroce_sge));
	if (err)
		goto err_count;
	srq->limit = attr->srq_limit;
	/* Report what was allocated. */
	attr->max_wr = srq->rq.size;
	return 0;

err_count:
	atomic_dec(&mdev->num_srq);
	return err;
}

static int metaroce_destroy_srq(struct ib_srq *ib_srq, struct ib_udata *udata)
{
	struct metaroce_srq *srq = to_msrq(ib_srq);

	/* ib_core refuses while a QP is attached (the SRQ's usecnt). */
	kvfree(srq->rq.buf);
	atomic_dec(&srq->mdev->num_srq);
	return 0;
}

static int metaroce_modify_srq(struct ib_srq *ib_srq, struct ib_srq_attr *attr,
			       enum ib_srq_attr_mask mask,
			       struct ib_udata *udata)
{
	struct metaroce_srq *srq = to_msrq(ib_srq);
	unsigned long flags;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	/* No IB_DEVICE_SRQ_RESIZE: the ring keeps its size. */
	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->rq.size)
		return -EINVAL;
	spin_lock_irqsave(&srq->lock, flags);
	srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

static int metaroce_query_srq(struct ib_srq *ib_srq, struct ib_srq_attr *attr)
{
	struct metaroce_srq *srq = to_msrq(ib_srq);
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

static int metaroce_post_one_srq_recv(struct metaroce_srq *srq,
				      const struct ib_recv_wr *wr)
{
	struct metaroce_rwqe *wqe;
	unsigned long flags;
	u32 length;
	int err;

	if (wr->num_sge < 0 || wr->num_sge > srq->rq.max_sge)
		return -EINVAL;
	err = metaroce_check_sges(srq->ib_srq.pd, wr->sg_list, wr->num_sge,
				  IB_ACCESS_LOCAL_WRITE, &length);
	if (err)
		return -EINVAL;

	spin_lock_irqsave(&srq->lock, flags);
	if (atomic_read(&srq->outstanding) == srq->rq.size) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return -ENOMEM;
	}
	atomic_inc(&srq->outstanding);
	wqe = metaroce_wq_entry(&srq->rq, srq->rq.head);
	metaroce_rwqe_init(wqe, wr, length);
	srq->rq.head++;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

static int metaroce_post_srq_recv(struct ib_srq *ib_srq,
				  const struct ib_recv_wr *wr,
				  const struct ib_recv_wr **bad_wr)
{
	struct metaroce_srq *srq = to_msrq(ib_srq);
	int err = 0;

	/*
	 * Attached QPs take the new WQEs when they next run: at the latest
	 * when a requester's RNR retry arrives (metaroce_qp_rx()).
	 */
	for (; wr; wr = wr->next) {
		err = metaroce_post_one_srq_recv(srq, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	return err;
}

/* How many SRQ WQEs one attached QP may hold; see the top of the file. */
static u32 metaroce_srq_qp_share(const struct metaroce_srq *srq)
{
	u32 qps = max(atomic_read(&srq->num_qps), 1);

	return clamp_t(u32, srq->rq.size / (2 * qps), 1, METAROCE_SRQ_QP_DEPTH);
}

/*
 * Refill @qp's receive queue from its SRQ.  qp->lock held.  Delivers
 * IB_EVENT_SRQ_LIMIT_REACHED if a take crossed the armed limit.
 */
void metaroce_srq_take(struct metaroce_qp *qp)
{
	struct metaroce_srq *srq = qp->srq;
	u32 share = min(metaroce_srq_qp_share(srq), qp->rq.size);
	bool limit_reached = false;
	unsigned long flags;

	lockdep_assert_held(&qp->lock);
	if (qp->rq.head - qp->rq.tail >= share)
		return;
	spin_lock_irqsave(&srq->lock, flags);
	while (qp->rq.head - qp->rq.tail < share &&
	       srq->rq.head != srq->rq.tail) {
		memcpy(metaroce_wq_entry(&qp->rq, qp->rq.head),
		       metaroce_wq_entry(&srq->rq, srq->rq.tail),
		       srq->rq.stride);
		srq->rq.tail++;
		qp->rq.head++;
		if (srq->limit && srq->rq.head - srq->rq.tail < srq->limit) {
			srq->limit = 0;
			limit_reached = true;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit_reached && srq->ib_srq.event_handler) {
		struct ib_event ev = {
			.device = srq->ib_srq.device,
			.element.srq = &srq->ib_srq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ib_srq.event_handler(&ev, srq->ib_srq.srq_context);
	}
}

/*
 * The WQEs of [qp->rq.tail, qp->rq.head) go back to the front of the SRQ,
 * in their order: those no message completed, or with @all (RESET and
 * destroy discard completions) every one.  The others are left for the QP
 * to complete.  qp->lock held; the core no longer owns any of them.
 */
void metaroce_srq_give_back(struct metaroce_qp *qp, bool all)
{
	struct metaroce_srq *srq = qp->srq;
	unsigned long flags;
	u32 i;

	lockdep_assert_held(&qp->lock);
	spin_lock_irqsave(&srq->lock, flags);
	for (i = qp->rq.head; i != qp->rq.tail; i--) {
		struct metaroce_rwqe *wqe = metaroce_wq_entry(&qp->rq, i - 1);

		if (wqe->done && !all)
			continue;
		if (wqe->done && wqe->status == METAROCE_RWQE_GIVEN_BACK)
			continue;
		srq->rq.tail--;
		memcpy(metaroce_wq_entry(&srq->rq, srq->rq.tail), wqe,
		       srq->rq.stride);
		wqe->done = true;
		wqe->status = METAROCE_RWQE_GIVEN_BACK;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
}

/* A receive completion of an SRQ WQE frees its place in the SRQ. */
void metaroce_srq_completed(struct metaroce_srq *srq)
{
	atomic_dec(&srq->outstanding);
}

const struct ib_device_ops metaroce_srq_ops = {
	.create_srq = metaroce_create_srq,
	.destroy_srq = metaroce_destroy_srq,
	.modify_srq = metaroce_modify_srq,
	.query_srq = metaroce_query_srq,
	.post_srq_recv = metaroce_post_srq_recv,

	INIT_RDMA_OBJ_SIZE(ib_srq, metaroce_srq, ib_srq),
};
