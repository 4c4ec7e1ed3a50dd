// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: completion queues.
 *
 * A CQ is a kernel ring of struct ib_wc, filled by the transport (under
 * the producing QP's lock, cq->lock nested inside) and drained by poll_cq
 * (the uverbs POLL_CQ command).  A mapped ring is the next ABI slice.
 *
 * Overflow: a completion that finds the ring full is dropped and the
 * consumer gets IB_EVENT_CQ_ERR once; the CQ is then unusable, as IBTA
 * specifies.
 */

#include <linux/version.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "metaroce.h"
#include "metaroce_param.h"

static int metaroce_create_cq_common(struct ib_cq *ib_cq,
				     const struct ib_cq_init_attr *attr,
				     struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ib_cq->device);
	struct metaroce_cq *cq = to_mcq(ib_cq);

	/* No driver data is defined for CREATE_CQ in this ABI version. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > METAROCE_MAX_CQE ||
	    attr->comp_vector >= ib_cq->device->num_comp_vectors)
		return -EINVAL;

	if (atomic_inc_return(&mdev->num_cq) > METAROCE_MAX_CQ) {
		atomic_dec(&mdev->num_cq);
		return -ENOMEM;
	}
	cq->size = attr->cqe + 1;
	cq->ring = kvcalloc(cq->size, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring) {
		atomic_dec(&mdev->num_cq);
		return -ENOMEM;
	}
	spin_lock_init(&cq->lock);
	ib_cq->cqe = attr->cqe;
	return 0;
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
static int metaroce_create_cq(struct ib_cq *ib_cq,
			      const struct ib_cq_init_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	return metaroce_create_cq_common(ib_cq, attr,
					 attrs ? &attrs->driver_udata : NULL);
}
#else
static int metaroce_create_cq(struct ib_cq *ib_cq,
			      const struct ib_cq_init_attr *attr,
			      struct ib_udata *udata)
{
	return metaroce_create_cq_common(ib_cq, attr, udata);
}
#endif

static int metaroce_destroy_cq(struct ib_cq *ib_cq, struct ib_udata *udata)
{
	struct metaroce_cq *cq = to_mcq(ib_cq);

	/* ib_core refuses while a QP uses the CQ: nobody pushes any more. */
	kvfree(cq->ring);
	atomic_dec(&to_mdev(ib_cq->device)->num_cq);
	return 0;
}

/*
 * Queue one completion and run the completion handler if the consumer
 * asked for this kind of event.  Any context; caller may hold a QP lock.
 */
void metaroce_cq_push(struct metaroce_cq *cq, const struct ib_wc *wc,
		      bool solicited)
{
	struct ib_cq *ib_cq = &cq->ib_cq;
	bool event = false, overflow = false;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size - 1) {
		if (!cq->overflowed) {
			cq->overflowed = true;
			overflow = true;
		}
	} else {
		cq->ring[(cq->head + cq->count) % cq->size] = *wc;
		cq->count++;
		if (cq->notify == IB_CQ_NEXT_COMP ||
		    (cq->notify == IB_CQ_SOLICITED && solicited)) {
			cq->notify = 0;
			event = true;
		}
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow && ib_cq->event_handler) {
		struct ib_event ev = {
			.device = ib_cq->device,
			.element.cq = ib_cq,
			.event = IB_EVENT_CQ_ERR,
		};

		ib_cq->event_handler(&ev, ib_cq->cq_context);
	}
	if (event && ib_cq->comp_handler)
		ib_cq->comp_handler(ib_cq, ib_cq->cq_context);
}

static int metaroce_poll_cq(struct ib_cq *ib_cq, int num_entries,
			    struct ib_wc *wc)
{
	struct metaroce_cq *cq = to_mcq(ib_cq);
	unsigned long flags;
	int n;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num_entries && cq->count; n++) {
		wc[n] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

static int metaroce_req_notify_cq(struct ib_cq *ib_cq,
				  enum ib_cq_notify_flags flags)
{
	struct metaroce_cq *cq = to_mcq(ib_cq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP covers solicited completions too: keep the wider one. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

const struct ib_device_ops metaroce_cq_ops = {
	.create_cq = metaroce_create_cq,
	.destroy_cq = metaroce_destroy_cq,
	.poll_cq = metaroce_poll_cq,
	.req_notify_cq = metaroce_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, metaroce_cq, ib_cq),
};
