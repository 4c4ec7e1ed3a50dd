// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: completion queues.
 *
 * A CQ is filled by the transport (under the producing QP's lock, cq->lock
 * nested inside) and is, for kernel consumers and for processes that did
 * not ask for a mapped ring, a kernel ring of struct ib_wc drained by
 * poll_cq (the uverbs POLL_CQ command).  A process whose provider asked for
 * a mapped ring (metaroce-abi.h, "Mapped rings") polls in userspace: the
 * kernel writes struct ib_uverbs_wc entries into memory mapped into it,
 * keeping the producer index to itself and reading only the consumer
 * index, which it checks before trusting.
 *
 * Overflow: a completion that finds the ring full is dropped and the
 * consumer gets IB_EVENT_CQ_ERR once; the CQ is then unusable, as IBTA
 * specifies.
 */

#include <linux/log2.h>
#include <linux/version.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* Map the CQ's ring into the process and tell the provider where it is. */
static int metaroce_cq_map_ring(struct metaroce_cq *cq, u32 cqe,
				struct ib_udata *udata)
{
	struct metaroce_create_cq_resp resp = {};
	void *buf;
	int err;

	/* A ring whose place the process cannot learn is no CQ it can poll. */
	if (udata->outlen < offsetofend(struct metaroce_create_cq_resp,
					entry_size))
		return -EINVAL;
	cq->size = roundup_pow_of_two(cqe);
	buf = metaroce_mmap_create(udata, sizeof(*cq->uhdr) +
					  (size_t)cq->size * sizeof(*cq->uring),
				   &cq->umap);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	cq->uhdr = buf;
	cq->uring = buf + sizeof(*cq->uhdr);

	resp.comp_mask = METAROCE_CREATE_CQ_RESP_RING;
	resp.mmap_offset = metaroce_mmap_offset(cq->umap);
	resp.mmap_length = metaroce_mmap_length(cq->umap);
	resp.ring_entries = cq->size;
	resp.entry_size = sizeof(*cq->uring);
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err) {
		metaroce_mmap_remove(cq->umap);
		cq->umap = NULL;
	}
	return err;
}

static int metaroce_create_cq_common(struct ib_cq *ib_cq,
				     const struct ib_cq_init_attr *attr,
				     struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ib_cq->device);
	struct metaroce_cq *cq = to_mcq(ib_cq);
	struct metaroce_create_cq_req req = {};
	int err;

	err = metaroce_udata_req(udata, &req, sizeof(req));
	if (err)
		return err;
	if (req.comp_mask & ~(u64)METAROCE_CREATE_CQ_REQ_RING)
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
	spin_lock_init(&cq->lock);
	if (req.comp_mask & METAROCE_CREATE_CQ_REQ_RING) {
		err = metaroce_cq_map_ring(cq, attr->cqe, udata);
		if (err) {
			atomic_dec(&mdev->num_cq);
			return err;
		}
		ib_cq->cqe = cq->size;
		return 0;
	}
	cq->size = attr->cqe + 1;
	cq->ring = kvcalloc(cq->size, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring) {
		atomic_dec(&mdev->num_cq);
		return -ENOMEM;
	}
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
	metaroce_mmap_remove(cq->umap);
	atomic_dec(&to_mdev(ib_cq->device)->num_cq);
	return 0;
}

/* The entries the process has not consumed yet; cq->lock held. */
static u32 metaroce_cq_ring_used(const struct metaroce_cq *cq)
{
	/* Pairs with the provider's store-release after reading entries. */
	return cq->uprod - smp_load_acquire(&cq->uhdr->consumer);
}

/*
 * Write one completion into the mapped ring; false if it is full, or if
 * the consumer index the process wrote is impossible (it corrupted its
 * own ring: treated as an overflow).  cq->lock held.
 */
static bool metaroce_cq_ring_put(struct metaroce_cq *cq, const struct ib_wc *wc)
{
	struct ib_uverbs_wc uwc = {
		.wr_id = wc->wr_id,
		.status = wc->status,
		.opcode = wc->opcode,
		.vendor_err = wc->vendor_err,
		.byte_len = wc->byte_len,
		.ex.invalidate_rkey = wc->ex.invalidate_rkey,
		.qp_num = wc->qp->qp_num,
		.src_qp = wc->src_qp,
		.wc_flags = wc->wc_flags,
		.pkey_index = wc->pkey_index,
		.slid = ib_lid_cpu16(wc->slid),
		.sl = wc->sl,
		.dlid_path_bits = wc->dlid_path_bits,
		.port_num = wc->port_num,
	};

	if (metaroce_cq_ring_used(cq) >= cq->size)
		return false;
	memcpy(&cq->uring[cq->uprod & (cq->size - 1)], &uwc, sizeof(uwc));
	cq->uprod++;
	/* The entry is visible before the index that publishes it. */
	smp_store_release(&cq->uhdr->producer, cq->uprod);
	return true;
}

/* Append to the kernel ring; false if it is full.  cq->lock held. */
static bool metaroce_cq_kernel_put(struct metaroce_cq *cq,
				   const struct ib_wc *wc)
{
	if (cq->count == cq->size - 1)
		return false;
	cq->ring[(cq->head + cq->count) % cq->size] = *wc;
	cq->count++;
	return true;
}

/*
 * Queue one completion and run the completion handler if the consumer
 * asked for this kind of event.  Any context; caller may hold a QP lock.
 * The event decision is made under cq->lock, with the completion already
 * published: an arm (REQ_NOTIFY_CQ, same lock) either comes first and
 * gets the event, or comes after and its caller's next poll finds the
 * completion.
 */
void metaroce_cq_push(struct metaroce_cq *cq, const struct ib_wc *wc,
		      bool solicited)
{
	struct ib_cq *ib_cq = &cq->ib_cq;
	bool event = false, overflow = false, put;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	put = cq->uhdr ? metaroce_cq_ring_put(cq, wc) :
			 metaroce_cq_kernel_put(cq, wc);
	if (!put) {
		if (!cq->overflowed) {
			cq->overflowed = true;
			overflow = true;
		}
	} else if (cq->notify == IB_CQ_NEXT_COMP ||
		   (cq->notify == IB_CQ_SOLICITED && solicited)) {
		cq->notify = 0;
		event = true;
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

	/* A mapped ring is polled by the process, not through the kernel. */
	if (cq->uhdr)
		return -EINVAL;
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
	bool pending;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP covers solicited completions too: keep the wider one. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	pending = cq->uhdr ? metaroce_cq_ring_used(cq) != 0 : cq->count;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && pending)
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
