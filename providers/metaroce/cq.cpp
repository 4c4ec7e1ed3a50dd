// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: completion queues.
 *
 * First slice: the CQ lives in the kernel and every poll is a
 * POLL_CQ command (ibv_cmd_poll_cq); arming and completion events are the
 * generic uverbs ones.  Both CQ APIs are served by one CQ object: the
 * extended one (ibv_start_poll / ibv_next_poll / ibv_wc_read_*) polls one
 * completion at a time into cq::cur and reads it from there.
 */
#include <cerrno>
#include <cstdlib>

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

/* 0 and the completion in cq::cur, ENOENT if the CQ is empty, or an errno. */
int poll_one(cq *c) noexcept
{
	int n = ibv_cmd_poll_cq(&c->vcq.cq, 1, &c->cur);

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
 * The one constructor of both APIs.  libibverbs' wrappers initialise the
 * public fields (context, channel, cq_context, event counters) afterwards.
 */
cq *alloc_cq(struct ibv_context *ibctx,
	     const struct ibv_cq_init_attr_ex *attr) noexcept
{
	struct verbs_cmd_create_cq_ex cmd = {};
	struct ib_uverbs_ex_create_cq_resp resp = {};
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
	/* Checks comp_mask; the kernel checks cqe and comp_vector. */
	ret = ibv_cmd_create_cq_ex(ibctx, attr, &c->vcq, &cmd, sizeof(cmd),
				   &resp, sizeof(resp), 0);
	if (ret) {
		std::free(c);
		errno = ret;
		return nullptr;
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

int destroy_cq(struct ibv_cq *ibcq) noexcept
{
	int ret;

	/* On failure the kernel CQ still exists: keep ours too. */
	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	std::free(to_cq(ibcq));
	return 0;
}

} // namespace metaroce
