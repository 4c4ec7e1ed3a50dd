// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: posting through mapped work queues.
 *
 * An RC QP created where the kernel offers it (METAROCE_UCTX_CAP_QP_RING,
 * and METAROCE_NO_RINGS not set) has its send queue, and its receive
 * queue unless it uses an SRQ, mapped from the kernel
 * (include/uapi/rdma/metaroce-abi.h, "Work queue rings"): ibv_post_send()
 * and ibv_post_recv() write the WRs into the ring and enter the kernel
 * once, for the doorbell, a POST_SEND / POST_RECV command without WRs;
 * ibv_post_recv() not even that while the kernel takes the receive ring
 * by itself (kernel_takes).
 * The kernel checks each entry as it would a WR of the command and stops
 * at the first it refuses; the entries from there on are taken back here
 * and the first of them is the caller's bad_wr.  Other QPs post by
 * command (ibv_cmd_post_send/recv).
 */
#include <atomic>
#include <cerrno>
#include <cstring>

#include <sys/mman.h>

#include "metaroce.h"

namespace metaroce {

/* An entry's SGEs are the uverbs layout, which struct ibv_sge shares. */
static_assert(sizeof(struct ibv_sge) == sizeof(struct ib_uverbs_sge) &&
	      offsetof(struct ibv_sge, addr) ==
		      offsetof(struct ib_uverbs_sge, addr) &&
	      offsetof(struct ibv_sge, length) ==
		      offsetof(struct ib_uverbs_sge, length) &&
	      offsetof(struct ibv_sge, lkey) ==
		      offsetof(struct ib_uverbs_sge, lkey));

void *map_ring_memory(struct ibv_context *ibctx, uint64_t offset,
		      uint64_t length, uint64_t need, int *err) noexcept
{
	void *map;

	if (length < need) {
		*err = EPROTO;
		return nullptr;
	}
	map = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ibctx->cmd_fd, static_cast<off_t>(offset));
	if (map == MAP_FAILED) {
		*err = errno;
		return nullptr;
	}
	return map;
}

int wq_ring_map(wq_ring *r, struct ibv_context *ibctx,
		const struct metaroce_wq_ring_resp &resp, size_t header,
		uint32_t max_sge, uint32_t max_inline) noexcept
{
	uint64_t payload = std::max<uint64_t>(
		uint64_t(max_sge) * sizeof(struct ib_uverbs_sge), max_inline);
	int err = 0;
	void *map;

	/* A ring without room for what the QP was granted is not ours. */
	if (!resp.ring_entries || (resp.ring_entries & (resp.ring_entries - 1)) ||
	    resp.entry_size < header + payload || resp.entry_size % 8)
		return EPROTO;
	map = map_ring_memory(ibctx, resp.mmap_offset, resp.mmap_length,
			      sizeof(struct metaroce_ring_hdr) +
				      uint64_t(resp.ring_entries) *
					      resp.entry_size,
			      &err);
	if (!map)
		return err;
	pthread_mutex_init(&r->lock, nullptr);
	r->map = map;
	r->map_len = resp.mmap_length;
	r->hdr = static_cast<struct metaroce_ring_hdr *>(map);
	r->entries = reinterpret_cast<uint8_t *>(r->hdr + 1);
	r->num_entries = resp.ring_entries;
	r->entry_size = resp.entry_size;
	r->max_sge = max_sge;
	r->max_inline = max_inline;
	r->producer = std::atomic_ref<uint32_t>(r->hdr->producer)
			      .load(std::memory_order_relaxed);
	return 0;
}

void wq_ring_unmap(wq_ring *r) noexcept
{
	if (!r->hdr)
		return;
	munmap(r->map, r->map_len);
	pthread_mutex_destroy(&r->lock);
	*r = {};
}

namespace {

uint8_t *entry_at(const wq_ring &r, uint32_t idx) noexcept
{
	return r.entries + size_t(idx & (r.num_entries - 1)) * r.entry_size;
}

/*
 * Fill the send queue entry @slot from @wr.  EINVAL for what an entry
 * cannot carry: more SGEs than granted, or more inline bytes.  The rest
 * is the kernel's to check, as for the command.
 */
int fill_send(const wq_ring &r, uint8_t *slot, const struct ibv_send_wr *wr) noexcept
{
	struct metaroce_sq_wqe e = {};
	uint8_t *payload = slot + sizeof(e);

	/* As the command: more SGEs than granted is EINVAL, inline or not. */
	if (wr->num_sge < 0 || uint32_t(wr->num_sge) > r.max_sge)
		return EINVAL;
	e.wr_id = wr->wr_id;
	e.opcode = wr->opcode;
	e.send_flags = wr->send_flags;
	e.imm_data = wr->imm_data;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		e.remote_addr = wr->wr.rdma.remote_addr;
		e.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		e.remote_addr = wr->wr.atomic.remote_addr;
		e.rkey = wr->wr.atomic.rkey;
		e.compare_add = wr->wr.atomic.compare_add;
		e.swap = wr->wr.atomic.swap;
		break;
	default:
		break;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* The data is copied now: the caller may reuse its buffer. */
		for (int i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge &sg = wr->sg_list[i];

			if (sg.length > r.max_inline - e.inline_len)
				return EINVAL;
			std::memcpy(payload + e.inline_len,
				    reinterpret_cast<const void *>(uintptr_t(sg.addr)),
				    sg.length);
			e.inline_len += sg.length;
		}
	} else {
		e.num_sge = wr->num_sge;
		std::memcpy(payload, wr->sg_list,
			    size_t(wr->num_sge) * sizeof(struct ibv_sge));
	}
	std::memcpy(slot, &e, sizeof(e));
	return 0;
}

int fill_recv(const wq_ring &r, uint8_t *slot, const struct ibv_recv_wr *wr) noexcept
{
	struct metaroce_rq_wqe e = {};

	if (wr->num_sge < 0 || uint32_t(wr->num_sge) > r.max_sge)
		return EINVAL;
	e.wr_id = wr->wr_id;
	e.num_sge = wr->num_sge;
	std::memcpy(slot, &e, sizeof(e));
	std::memcpy(slot + sizeof(e), wr->sg_list,
		    size_t(wr->num_sge) * sizeof(struct ibv_sge));
	return 0;
}

int send_doorbell(struct ibv_qp *ibqp) noexcept
{
	struct ibv_send_wr *unused;

	return ibv_cmd_post_send(ibqp, nullptr, &unused);
}

int recv_doorbell(struct ibv_qp *ibqp) noexcept
{
	struct ibv_recv_wr *unused;

	return ibv_cmd_post_recv(ibqp, nullptr, &unused);
}

/*
 * Whether the kernel takes the ring's entries without a doorbell (a
 * receive ring of a QP between INIT and SQE, with a module that does).
 */
bool kernel_takes(const wq_ring &r) noexcept
{
	return std::atomic_ref<uint32_t>(r.hdr->kernel_takes)
		       .load(std::memory_order_acquire) != 0;
}

/*
 * Without doorbells nothing refuses a receive past the queue's depth:
 * the kernel publishes how many of the ring's entries no longer hold a
 * place (their receive completed), and a post that would exceed the
 * depth is refused here, with the command's ENOMEM.
 */
bool queue_full(const wq_ring &r) noexcept
{
	uint32_t retired = std::atomic_ref<uint32_t>(r.hdr->retired)
				   .load(std::memory_order_acquire);

	return kernel_takes(r) && r.producer - retired >= r.num_entries;
}

/*
 * Publish the entries [*base, r.producer), which hold the WRs from *head
 * on, and ring.  On a refusal, *bad is the WR of the first entry the
 * kernel did not take, and that entry and those after it are taken back.
 * On success *base and *head move past what was handed over.
 */
template <typename WR>
int submit(wq_ring &r, struct ibv_qp *ibqp, int (*doorbell)(struct ibv_qp *),
	   uint32_t *base, WR **head, WR *next, WR **bad) noexcept
{
	uint32_t consumer;
	WR *w;
	int err;

	if (r.producer == *base)
		return 0;
	/* Pairs with the kernel's load-acquire of producer. */
	std::atomic_ref<uint32_t>(r.hdr->producer)
		.store(r.producer, std::memory_order_release);
	/*
	 * A receive ring the kernel takes by itself needs no doorbell.  The
	 * fence orders producer before the flag, as the kernel orders the
	 * flag it clears before its read of producer: one side sees the
	 * other (metaroce-abi.h, "Work queue rings").
	 */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (kernel_takes(r)) {
		*base = r.producer;
		*head = next;
		return 0;
	}
	err = doorbell(ibqp);
	if (!err) {
		*base = r.producer;
		*head = next;
		return 0;
	}
	consumer = std::atomic_ref<uint32_t>(r.hdr->consumer)
			   .load(std::memory_order_acquire);
	/* The kernel took [*base, consumer): never more than we gave it. */
	if (consumer - *base > r.producer - *base)
		consumer = *base;
	w = *head;
	for (uint32_t i = *base; i != consumer && w; i++)
		w = w->next;
	*bad = w;
	r.producer = consumer;
	std::atomic_ref<uint32_t>(r.hdr->producer)
		.store(r.producer, std::memory_order_release);
	return err;
}

/* ibv_post_send() / ibv_post_recv() through the ring @r. */
template <typename WR>
int ring_post(wq_ring &r, struct ibv_qp *ibqp, WR *wr, WR **bad,
	      int (*fill)(const wq_ring &, uint8_t *, const WR *),
	      int (*doorbell)(struct ibv_qp *)) noexcept
{
	uint32_t base;
	WR *head = wr;
	int err = 0;

	pthread_mutex_lock(&r.lock);
	base = r.producer;
	for (; wr; wr = wr->next) {
		/* A full ring goes to the kernel before we go on. */
		if (r.producer - base == r.num_entries) {
			err = submit(r, ibqp, doorbell, &base, &head, wr, bad);
			if (err)
				goto out;
		}
		err = queue_full(r) ? ENOMEM :
				      fill(r, entry_at(r, r.producer), wr);
		if (err) {
			/* The WRs before it are posted, as the command does. */
			int ret = submit(r, ibqp, doorbell, &base, &head, wr,
					 bad);

			if (ret)
				err = ret;
			else
				*bad = wr;
			goto out;
		}
		r.producer++;
	}
	err = submit(r, ibqp, doorbell, &base, &head, wr, bad);
out:
	pthread_mutex_unlock(&r.lock);
	return err;
}

} // namespace

int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	      struct ibv_send_wr **bad) noexcept
{
	qp *q = to_qp(ibqp);

	if (!q->sq.hdr)
		return ibv_cmd_post_send(ibqp, wr, bad);
	return ring_post(q->sq, ibqp, wr, bad, fill_send, send_doorbell);
}

int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad) noexcept
{
	qp *q = to_qp(ibqp);

	if (!q->rq.hdr)
		return ibv_cmd_post_recv(ibqp, wr, bad);
	return ring_post(q->rq, ibqp, wr, bad, fill_recv, recv_doorbell);
}

} // namespace metaroce
