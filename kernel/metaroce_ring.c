// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: mapped work queues of user RC QPs (metaroce-abi.h, "Work
 * queue rings").
 *
 * The process writes its work requests into a ring mapped from the kernel
 * and rings the doorbell, a POST_SEND or POST_RECV command that carries no
 * work request; uverbs then calls post_send/post_recv with a NULL list and
 * we take the new entries here.  This spares every post the uverbs
 * marshalling of its WRs (their allocation and copy).  The ring is not
 * the queue: each entry is copied out of the process's reach (the
 * process may be rewriting it meanwhile), checked, and posted exactly as
 * a WR of the command would be (metaroce_post_one_send/_recv), so both
 * paths share one set of checks and one queue, and the first WR refused
 * stops the doorbell with the errno the command would have returned.
 *
 * A receive ring needs no doorbell while the QP can hold receives: the
 * kernel takes its entries itself (metaroce_rq_ring_take()) when a packet
 * arrives for the QP and when the QP leaves for ERR, and says so in
 * hdr->kernel_takes (the ABI header, "Work queue rings", has the
 * protocol).  A ping-pong's receiver reposts its receive between two
 * messages, and a system call there is on the way of every reply.
 *
 * Locking: ring->mutex serialises the doorbells of a send ring (a process
 * can ring from several threads); the posting functions take qp->lock per
 * WR.  A receive ring is taken under qp->lock alone, by its doorbell and
 * by the receive path, which holds it already; the lock guards that
 * ring's scratch and consumer.  The process only ever writes
 * hdr->producer and the entries, the kernel only hdr->consumer,
 * kernel_takes and retired, whose values it keeps (ring->consumer,
 * ring->takes) and never reads back.
 */

#include <linux/vmalloc.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* The SGEs of an entry are read as the ib_sge list of a kernel WR. */
static_assert(sizeof(struct ib_uverbs_sge) == sizeof(struct ib_sge) &&
	      offsetof(struct ib_uverbs_sge, addr) ==
		      offsetof(struct ib_sge, addr) &&
	      offsetof(struct ib_uverbs_sge, length) ==
		      offsetof(struct ib_sge, length) &&
	      offsetof(struct ib_uverbs_sge, lkey) ==
		      offsetof(struct ib_sge, lkey));

/*
 * Opcodes: <rdma/ib_verbs.h> defines IB_WR_* as the IB_UVERBS_WR_* the
 * entries carry; send flags: POST_SEND passes them through unchanged, so
 * the process's IBV_SEND_* are the kernel's IB_SEND_*.
 */

static int metaroce_ring_map(struct metaroce_wq_ring *ring,
			     struct ib_udata *udata, u32 entries, size_t stride,
			     struct metaroce_wq_ring_resp *resp)
{
	void *buf;

	ring->scratch = kmalloc(stride, GFP_KERNEL);
	if (!ring->scratch)
		return -ENOMEM;
	buf = metaroce_mmap_create(udata, sizeof(*ring->hdr) +
					  (size_t)entries * stride,
				   &ring->umap);
	if (IS_ERR(buf)) {
		kfree(ring->scratch);
		ring->scratch = NULL;
		return PTR_ERR(buf);
	}
	mutex_init(&ring->mutex);
	ring->hdr = buf;
	ring->entries = buf + sizeof(*ring->hdr);
	ring->size = entries;
	ring->stride = stride;
	ring->consumer = 0;
	resp->mmap_offset = metaroce_mmap_offset(ring->umap);
	resp->mmap_length = metaroce_mmap_length(ring->umap);
	resp->ring_entries = entries;
	resp->entry_size = stride;
	return 0;
}

static void metaroce_ring_unmap(struct metaroce_wq_ring *ring)
{
	if (!ring->hdr)
		return;
	metaroce_mmap_remove(ring->umap);
	kfree(ring->scratch);
	mutex_destroy(&ring->mutex);
	memset(ring, 0, sizeof(*ring));
}

/*
 * Map the send queue of an RC QP, and its receive queue unless it takes
 * its receives from an SRQ, with as many entries as the queues hold.
 * Called at creation, after the queues were sized.
 */
int metaroce_qp_map_rings(struct metaroce_qp *qp, struct ib_udata *udata,
			  struct metaroce_create_qp_resp *resp)
{
	size_t payload = max_t(size_t, qp->sq.max_sge *
				       sizeof(struct ib_uverbs_sge),
			       qp->max_inline);
	int err;

	if (qp->ib_qp.qp_type != IB_QPT_RC)
		return -EINVAL;
	err = metaroce_ring_map(&qp->sq_ring, udata, qp->sq.size,
				ALIGN(sizeof(struct metaroce_sq_wqe) + payload,
				      8),
				&resp->sq);
	if (err)
		return err;
	resp->comp_mask |= METAROCE_CREATE_QP_RESP_SQ_RING;
	if (qp->srq)
		return 0;
	err = metaroce_ring_map(&qp->rq_ring, udata, qp->rq.size,
				sizeof(struct metaroce_rq_wqe) +
					qp->rq.max_sge *
						sizeof(struct ib_uverbs_sge),
				&resp->rq);
	if (err) {
		metaroce_ring_unmap(&qp->sq_ring);
		resp->comp_mask &= ~(u64)METAROCE_CREATE_QP_RESP_SQ_RING;
		return err;
	}
	resp->comp_mask |= METAROCE_CREATE_QP_RESP_RQ_RING;
	return 0;
}

/* The QP is destroyed (or its creation failed): no more mmap() of rings. */
void metaroce_qp_unmap_rings(struct metaroce_qp *qp)
{
	metaroce_ring_unmap(&qp->sq_ring);
	metaroce_ring_unmap(&qp->rq_ring);
}

/*
 * The entry at the ring's consumer index, copied out of the process's
 * reach into ring->scratch (the caller serialises the ring's takers).
 */
static const void *metaroce_ring_copy_next(struct metaroce_wq_ring *ring)
{
	size_t slot = ring->consumer & (ring->size - 1);

	memcpy(ring->scratch, ring->entries + slot * ring->stride,
	       ring->stride);
	return ring->scratch;
}

/*
 * Take the new entries [consumer, producer) of @ring, copying each to
 * ring->scratch and posting it with @post; stop at the first one refused
 * and return its errno (-EINVAL, taking nothing, for an impossible
 * producer).  *taken: how many were taken.  The caller serialises the
 * ring's takers: ring->mutex (a send ring's doorbell, which may sleep
 * between entries: @may_sleep) or qp->lock (a receive ring).
 */
static int metaroce_ring_consume(struct metaroce_qp *qp,
				 struct metaroce_wq_ring *ring,
				 int (*post)(struct metaroce_qp *qp,
					     const void *entry),
				 bool may_sleep, u32 *taken)
{
	u32 producer;
	int err = 0;

	*taken = 0;
	/* Pairs with the process's store-release after its entries. */
	producer = smp_load_acquire(&ring->hdr->producer);
	if (producer - ring->consumer > ring->size)
		return -EINVAL;
	while (ring->consumer != producer) {
		err = post(qp, metaroce_ring_copy_next(ring));
		if (err)
			break;
		ring->consumer++;
		(*taken)++;
		/*
		 * A ring can hold METAROCE_MAX_QP_WR entries; the short
		 * lists of latency-bound callers never get here.
		 */
		if (may_sleep && !(ring->consumer % 64))
			cond_resched();
	}
	/* Only when it moved: the receive path looks on every packet. */
	if (*taken)
		smp_store_release(&ring->hdr->consumer, ring->consumer);
	return err;
}

/* One send queue entry (in scratch: ours alone), as metaroce_post_send. */
static int metaroce_sq_ring_post(struct metaroce_qp *qp, const void *entry)
{
	const struct metaroce_sq_wqe *e = entry;
	struct metaroce_inline payload = {
		.data = e + 1,
		.len = e->inline_len,
	};
	union {
		struct ib_send_wr send;
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} w = {};
	bool is_inline = e->send_flags & IB_SEND_INLINE;

	/* Only what the entry has room for; the rest is checked as posted. */
	if (is_inline ? e->num_sge || e->inline_len > qp->max_inline :
			e->num_sge > qp->sq.max_sge)
		return -EINVAL;
	w.send.wr_id = e->wr_id;
	w.send.opcode = e->opcode;
	w.send.send_flags = e->send_flags;
	w.send.num_sge = e->num_sge;
	w.send.sg_list = (struct ib_sge *)(e + 1);
	w.send.ex.imm_data = e->imm_data;
	switch (e->opcode) {
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
	case IB_UVERBS_WR_RDMA_READ:
		w.rdma.remote_addr = e->remote_addr;
		w.rdma.rkey = e->rkey;
		break;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		w.atomic.remote_addr = e->remote_addr;
		w.atomic.rkey = e->rkey;
		w.atomic.compare_add = e->compare_add;
		w.atomic.swap = e->swap;
		break;
	}
	return metaroce_post_one_send(qp, &w.send,
				      is_inline ? &payload : NULL);
}

/*
 * One receive queue entry (in scratch), as metaroce_post_recv; qp->lock
 * held.  @strict: see metaroce_post_one_recv_locked().
 */
static int metaroce_rq_ring_post(struct metaroce_qp *qp, const void *entry,
				 bool strict)
{
	const struct metaroce_rq_wqe *e = entry;
	struct ib_recv_wr wr = {
		.wr_id = e->wr_id,
		/* -1: refused, or queued in error */
		.num_sge = e->reserved || e->num_sge > qp->rq.max_sge ?
				   -1 : (int)e->num_sge,
		.sg_list = (struct ib_sge *)(e + 1),
	};

	return metaroce_post_one_recv_locked(qp, &wr, strict);
}

/* At the doorbell: refused entries are refused. */
static int metaroce_rq_ring_post_strict(struct metaroce_qp *qp,
					const void *entry)
{
	return metaroce_rq_ring_post(qp, entry, true);
}

/* Without one: refused entries are queued in error; stops when full. */
static int metaroce_rq_ring_post_taken(struct metaroce_qp *qp,
				       const void *entry)
{
	return metaroce_rq_ring_post(qp, entry, false);
}

/*
 * Receives posted to the ring while kernel_takes was set, taken without a
 * doorbell; qp->lock held.  An impossible producer is the process
 * corrupting its own ring: nothing is taken (its receives wait, and RNR
 * tells its peer).  Returns how many were taken.
 */
u32 metaroce_rq_ring_take(struct metaroce_qp *qp)
{
	u32 taken;

	lockdep_assert_held(&qp->lock);
	if (!qp->rq_ring.hdr)
		return 0;
	metaroce_ring_consume(qp, &qp->rq_ring, metaroce_rq_ring_post_taken,
			      false, &taken);
	return taken;
}

/*
 * Publish how many of the ring's entries no longer hold a place in the
 * queue: taken and completed (or discarded).  Before the completion that
 * frees the place is visible in the CQ, so that a process reposting as
 * soon as it sees it never finds the queue full (metaroce_rq_advance()).
 * qp->lock held.
 */
void metaroce_rq_ring_retired(struct metaroce_qp *qp)
{
	struct metaroce_wq_ring *ring = &qp->rq_ring;

	if (ring->takes)
		WRITE_ONCE(ring->hdr->retired,
			   ring->consumer - (qp->rq.head - qp->rq.tail));
}

/* The QP can hold receives (INIT to SQE): the kernel takes the ring. */
void metaroce_rq_ring_start(struct metaroce_qp *qp)
{
	struct metaroce_wq_ring *ring = &qp->rq_ring;

	lockdep_assert_held(&qp->lock);
	if (!ring->hdr || ring->takes)
		return;
	ring->takes = true;
	metaroce_rq_ring_retired(qp);
	/* After retired: the provider reads it once it sees the flag. */
	smp_store_release(&ring->hdr->kernel_takes, 1);
}

/*
 * The QP enters ERR or RESET: from here the process rings the doorbell
 * again.  The caller takes (ERR) or discards (RESET) what the ring holds
 * after this: the barrier orders the cleared flag before that read of
 * producer, as the provider orders producer before its read of the flag,
 * so one of the two sees the other's store.
 */
void metaroce_rq_ring_stop(struct metaroce_qp *qp)
{
	struct metaroce_wq_ring *ring = &qp->rq_ring;

	lockdep_assert_held(&qp->lock);
	if (!ring->hdr || !ring->takes)
		return;
	ring->takes = false;
	WRITE_ONCE(ring->hdr->kernel_takes, 0);
	smp_mb();
}

/* RESET discards what was posted, the ring's untaken entries too. */
void metaroce_rq_ring_discard(struct metaroce_qp *qp)
{
	struct metaroce_wq_ring *ring = &qp->rq_ring;
	u32 producer;

	if (!ring->hdr)
		return;
	metaroce_rq_ring_stop(qp);
	producer = READ_ONCE(ring->hdr->producer);
	if (producer - ring->consumer <= ring->size)
		ring->consumer = producer;
	smp_store_release(&ring->hdr->consumer, ring->consumer);
	WRITE_ONCE(ring->hdr->retired, ring->consumer);
}

int metaroce_sq_ring_doorbell(struct metaroce_qp *qp)
{
	struct metaroce_wq_ring *ring = &qp->sq_ring;
	u32 taken;
	int err;

	mutex_lock(&ring->mutex);
	err = metaroce_ring_consume(qp, ring, metaroce_sq_ring_post, true,
				    &taken);
	mutex_unlock(&ring->mutex);
	return err;
}

/*
 * The receive ring's doorbell: rung while kernel_takes is clear (RESET,
 * ERR), by an older provider, or by a process of its own accord.  The
 * entries are checked as POST_RECV checks its WRs.
 */
int metaroce_rq_ring_doorbell(struct metaroce_qp *qp)
{
	unsigned long flags;
	u32 taken;
	int err;

	spin_lock_irqsave(&qp->lock, flags);
	err = metaroce_ring_consume(qp, &qp->rq_ring,
				    metaroce_rq_ring_post_strict, false, &taken);
	if (taken)
		metaroce_rq_posted(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	return err;
}
