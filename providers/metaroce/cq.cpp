// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: completion queues.
 *
 * Where the kernel offers it (METAROCE_UCTX_CAP_CQ_RING) and
 * METAROCE_NO_RINGS is not set, a CQ is a ring mapped from the kernel
 * (include/uapi/rdma/metaroce-abi.h, "Mapped rings"): polling reads it
 * without entering the kernel.  Otherwise the CQ lives in the kernel and
 * every poll is a POLL_CQ command (ibv_cmd_poll_cq).  Arming and
 * completion events are the generic uverbs ones in both cases.  Both CQ
 * APIs are served by one CQ object: the extended one (ibv_start_poll /
 * ibv_next_poll / ibv_wc_read_*) polls one completion at a time into
 * cq::cur and reads it from there.
 */
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "metaroce.h"

namespace metaroce {
namespace {

/*
 * What the extended CQ can report: everything a struct ibv_wc carries.
 * Completion timestamps, VLAN, flow tag and tag matching are not produced.
 */
constexpr uint64_t supported_wc_flags =
	IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
	IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
	IBV_WC_EX_WITH_DLID_PATH_BITS;

/* A ring entry (the POLL_CQ response layout) as the verbs API has it. */
void to_ibv_wc(const struct ib_uverbs_wc &u, struct ibv_wc *wc) noexcept
{
	wc->wr_id = u.wr_id;
	wc->status = static_cast<enum ibv_wc_status>(u.status);
	wc->opcode = static_cast<enum ibv_wc_opcode>(u.opcode);
	wc->vendor_err = u.vendor_err;
	wc->byte_len = u.byte_len;
	wc->imm_data = u.ex.imm_data;
	wc->qp_num = u.qp_num;
	wc->src_qp = u.src_qp;
	wc->wc_flags = u.wc_flags;
	wc->pkey_index = u.pkey_index;
	wc->slid = u.slid;
	wc->sl = u.sl;
	wc->dlid_path_bits = u.dlid_path_bits;
}

/*
 * Take up to @ne completions from the mapped ring.  The load-acquire of the
 * kernel's producer index pairs with its store-release after writing the
 * entries; our store-release of the consumer index tells the kernel the
 * entries before it are read and may be overwritten.
 */
int ring_poll(cq *c, int ne, struct ibv_wc *wc) noexcept
{
	uint32_t prod, cons;
	int n = 0;

	pthread_spin_lock(&c->lock);
	prod = std::atomic_ref<uint32_t>(c->hdr->producer)
		       .load(std::memory_order_acquire);
	cons = c->consumer;
	/* The kernel never publishes more than the ring holds. */
	if (prod - cons > c->entries)
		prod = cons + c->entries;
	for (; n < ne && cons != prod; n++, cons++)
		to_ibv_wc(c->ring[cons & (c->entries - 1)], &wc[n]);
	if (n) {
		c->consumer = cons;
		std::atomic_ref<uint32_t>(c->hdr->consumer)
			.store(cons, std::memory_order_release);
	}
	pthread_spin_unlock(&c->lock);
	return n;
}

/* 0 and the completion in cq::cur, ENOENT if the CQ is empty, or an errno. */
int poll_one(cq *c) noexcept
{
	int n = c->hdr ? ring_poll(c, 1, &c->cur) :
			 ibv_cmd_poll_cq(&c->vcq.cq, 1, &c->cur);

	if (n < 0)
		return errno ? errno : EIO;
	if (n == 0)
		return ENOENT;
	c->vcq.cq_ex.status = c->cur.status;
	c->vcq.cq_ex.wr_id = c->cur.wr_id;
	return 0;
}

int start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr) noexcept
{
	/* No poll attributes are defined; reject what we cannot honour. */
	if (attr->comp_mask)
		return EINVAL;
	return poll_one(to_cq(ibcq));
}

int next_poll(struct ibv_cq_ex *ibcq) noexcept
{
	return poll_one(to_cq(ibcq));
}

void end_poll(struct ibv_cq_ex *) noexcept
{
	/* No lock is held between start_poll and end_poll. */
}

enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.opcode;
}

uint32_t read_vendor_err(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.vendor_err;
}

uint32_t read_byte_len(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.byte_len;
}

__be32 read_imm_data(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.imm_data;
}

uint32_t read_qp_num(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.qp_num;
}

uint32_t read_src_qp(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.src_qp;
}

unsigned int read_wc_flags(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.wc_flags;
}

uint32_t read_slid(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.slid;
}

uint8_t read_sl(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.sl;
}

uint8_t read_dlid_path_bits(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.dlid_path_bits;
}

/*
 * Map the ring the kernel made for @c.  A response that is not what this
 * provider understands is an error, never guessed at.
 */
int map_ring(cq *c, struct ibv_context *ibctx,
	     const struct metaroce_create_cq_resp &r) noexcept
{
	uint64_t need = sizeof(struct metaroce_ring_hdr) +
			uint64_t(r.ring_entries) * sizeof(struct ib_uverbs_wc);
	int err = 0;
	void *map;

	if (!r.ring_entries || (r.ring_entries & (r.ring_entries - 1)) ||
	    r.entry_size != sizeof(struct ib_uverbs_wc))
		return EPROTO;
	map = map_ring_memory(ibctx, r.mmap_offset, r.mmap_length, need, &err);
	if (!map)
		return err;
	c->map = map;
	c->map_len = r.mmap_length;
	c->hdr = static_cast<struct metaroce_ring_hdr *>(map);
	c->ring = reinterpret_cast<const struct ib_uverbs_wc *>(c->hdr + 1);
	c->entries = r.ring_entries;
	c->consumer = std::atomic_ref<uint32_t>(c->hdr->consumer)
			      .load(std::memory_order_relaxed);
	return 0;
}

/*
 * The one constructor of both APIs.  libibverbs' wrappers initialise the
 * public fields (context, channel, cq_context, event counters) afterwards.
 */
cq *alloc_cq(struct ibv_context *ibctx,
	     const struct ibv_cq_init_attr_ex *attr) noexcept
{
	create_cq_cmd cmd = {};
	create_cq_resp resp = {};
	struct ibv_cq_ex *ex;
	cq *c;
	int ret;

	if (attr->wc_flags & ~supported_wc_flags) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	c = alloc_obj<cq>();
	if (!c)
		return nullptr;
	pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);
	/* Only ask a kernel that offers it: an older one refuses the data. */
	if (to_context(ibctx)->use_caps & METAROCE_UCTX_CAP_CQ_RING)
		cmd.drv.comp_mask = METAROCE_CREATE_CQ_REQ_RING;
	/* Checks comp_mask; the kernel checks cqe and comp_vector. */
	ret = ibv_cmd_create_cq_ex(ibctx, attr, &c->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp), 0);
	if (ret) {
		std::free(c);
		errno = ret;
		return nullptr;
	}
	/* Without METAROCE_CREATE_CQ_RESP_RING the CQ is polled by command. */
	if (resp.drv.comp_mask & METAROCE_CREATE_CQ_RESP_RING) {
		ret = map_ring(c, ibctx, resp.drv);
		if (ret) {
			ibv_cmd_destroy_cq(&c->vcq.cq);
			std::free(c);
			errno = ret;
			return nullptr;
		}
	}

	ex = &c->vcq.cq_ex;
	ex->start_poll = start_poll;
	ex->next_poll = next_poll;
	ex->end_poll = end_poll;
	ex->read_opcode = read_opcode;
	ex->read_vendor_err = read_vendor_err;
	ex->read_wc_flags = read_wc_flags;
	/* All readers, so that reading an unrequested field is not a crash. */
	ex->read_byte_len = read_byte_len;
	ex->read_imm_data = read_imm_data;
	ex->read_qp_num = read_qp_num;
	ex->read_src_qp = read_src_qp;
	ex->read_slid = read_slid;
	ex->read_sl = read_sl;
	ex->read_dlid_path_bits = read_dlid_path_bits;
	return c;
}

} // namespace

struct ibv_cq *create_cq(struct ibv_context *ibctx, int cqe,
			 struct ibv_comp_channel *channel,
			 int comp_vector) noexcept
{
	struct ibv_cq_init_attr_ex attr = {};
	cq *c;

	if (cqe <= 0 || comp_vector < 0) {
		errno = EINVAL;
		return nullptr;
	}
	attr.cqe = static_cast<uint32_t>(cqe);
	attr.channel = channel;
	attr.comp_vector = static_cast<uint32_t>(comp_vector);
	c = alloc_cq(ibctx, &attr);
	return c ? &c->vcq.cq : nullptr;
}

struct ibv_cq_ex *create_cq_ex(struct ibv_context *ibctx,
			       struct ibv_cq_init_attr_ex *attr) noexcept
{
	cq *c = alloc_cq(ibctx, attr);

	return c ? &c->vcq.cq_ex : nullptr;
}

int poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc) noexcept
{
	cq *c = to_cq(ibcq);

	if (c->hdr)
		return ring_poll(c, num_entries, wc);
	return ibv_cmd_poll_cq(ibcq, num_entries, wc);
}

int destroy_cq(struct ibv_cq *ibcq) noexcept
{
	cq *c = to_cq(ibcq);
	int ret;

	/* On failure the kernel CQ still exists: keep ours too. */
	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	if (c->map)
		munmap(c->map, c->map_len);
	pthread_spin_destroy(&c->lock);
	std::free(c);
	return 0;
}

} // namespace metaroce
