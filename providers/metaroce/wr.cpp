// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: the work-request API (ibv_wr_*, struct
 * ibv_qp_ex) of QPs created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
 *
 * The send queue lives in the kernel and is fed by the POST_SEND command,
 * so the API is a batch in front of that command: ibv_wr_start() opens it
 * (and takes the QP's wr lock, which makes start..complete/abort the
 * critical section ibv_wr_post(3) promises), each builder appends an
 * ibv_send_wr to arrays allocated at create time for max_send_wr WRs of
 * max_send_sge SGEs and max_inline_data inline bytes (nothing is allocated
 * while posting), and ibv_wr_complete() hands the whole list to
 * post_send() (ring.cpp), the same path ibv_post_send() takes: the mapped
 * send queue, or the POST_SEND command.
 *
 * Builders return nothing, so the first error found while building
 * (an opcode or setter the QP was not created for, a full batch, too many
 * SGEs, inline data that does not fit, bad wr_flags, a UD WR without an
 * address, ...) is latched, later calls are ignored, and ibv_wr_complete()
 * posts nothing and returns it.  Errors only the kernel can find (QP state,
 * lkeys, a send queue still holding earlier WRs) come back from the command
 * as for ibv_post_send(): the WRs before the failing one are posted.
 */
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "metaroce.h"

namespace metaroce {
namespace {

/*
 * libibverbs sends POST_SEND through the ioctl form of the write()
 * commands, whose UVERBS_ATTR_CORE_IN attribute holds at most 64 KiB - 1
 * (a u16 length; longer fails with EINVAL before reaching the kernel), and
 * the write() form counts 4-byte words in a u16, 256 KiB.  A batch longer
 * than the smaller bound goes out as several commands.
 */
constexpr size_t post_send_max_bytes = UINT16_MAX;

constexpr uint64_t rc_send_ops =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
constexpr uint64_t ud_send_ops =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

/* The send flags the kernel takes (metaroce_post_one_send, _ud_post_send). */
constexpr unsigned int rc_send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				       IBV_SEND_INLINE | IBV_SEND_FENCE;
constexpr unsigned int ud_send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				       IBV_SEND_INLINE;

inline qp *to_qp(struct ibv_qp_ex *qpx) noexcept
{
	return reinterpret_cast<qp *>(qpx);
}

inline wr_batch &batch(struct ibv_qp_ex *qpx) noexcept
{
	return to_qp(qpx)->wr;
}

/* The WR the setters apply to, or nullptr (error latched or none built). */
struct ibv_send_wr *current(wr_batch &b) noexcept
{
	if (b.err)
		return nullptr;
	if (!b.count) {
		b.err = EINVAL; /* a setter before any builder */
		return nullptr;
	}
	return &b.wrs[b.count - 1];
}

bool reads_into_local(enum ibv_wr_opcode op) noexcept
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * The checks of the last WR built that need all its setters: run when the
 * next builder starts and by ibv_wr_complete().  A UD WR without
 * ibv_wr_set_ud_addr() would make ibv_cmd_post_send() read a NULL AH; the
 * other two are the kernel's checks, made here so that the batch fails as
 * a whole rather than after posting the WRs in front of it.
 */
void check_last(wr_batch &b) noexcept
{
	const struct ibv_send_wr *wr;
	uint64_t len = 0;

	if (b.err || !b.count)
		return;
	wr = &b.wrs[b.count - 1];
	if (b.ud && !wr->wr.ud.ah) {
		b.err = EINVAL;
		return;
	}
	if (!reads_into_local(wr->opcode))
		return;
	/* READ and atomics write their local buffers: no inline data. */
	if (wr->send_flags & IBV_SEND_INLINE) {
		b.err = EINVAL;
		return;
	}
	if (wr->opcode == IBV_WR_RDMA_READ)
		return;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len != sizeof(uint64_t)) /* an atomic's result */
		b.err = EINVAL;
}

/* Append a WR of @op (send_ops bit @with); nullptr if an error is latched. */
struct ibv_send_wr *append(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			   uint64_t with) noexcept
{
	wr_batch &b = batch(qpx);
	struct ibv_send_wr *wr;

	check_last(b);
	if (b.err)
		return nullptr;
	if (!(b.ops & with)) {
		b.err = EOPNOTSUPP; /* not asked for at create, or not for this type */
		return nullptr;
	}
	if (qpx->wr_flags & ~b.send_flags) {
		b.err = EINVAL;
		return nullptr;
	}
	if (b.count == b.max_wr) {
		b.err = ENOMEM; /* as ibv_post_send() on a full send queue */
		return nullptr;
	}
	wr = &b.wrs[b.count];
	*wr = {};
	wr->wr_id = qpx->wr_id;
	wr->opcode = op;
	wr->send_flags = qpx->wr_flags;
	wr->sg_list = &b.sges[size_t(b.count) * b.sge_stride];
	if (b.count)
		b.wrs[b.count - 1].next = wr;
	b.count++;
	return wr;
}

void wr_send(struct ibv_qp_ex *qpx) noexcept
{
	append(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data) noexcept
{
	struct ibv_send_wr *wr =
		append(qpx, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

void set_rdma(struct ibv_send_wr *wr, uint32_t rkey,
	      uint64_t remote_addr) noexcept
{
	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
	}
}

void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
		   uint64_t remote_addr) noexcept
{
	set_rdma(append(qpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE),
		 rkey, remote_addr);
}

void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
		       uint64_t remote_addr, __be32 imm_data) noexcept
{
	struct ibv_send_wr *wr = append(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
					IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);

	set_rdma(wr, rkey, remote_addr);
	if (wr)
		wr->imm_data = imm_data;
}

void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
		  uint64_t remote_addr) noexcept
{
	set_rdma(append(qpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ), rkey,
		 remote_addr);
}

void set_atomic(struct ibv_send_wr *wr, uint32_t rkey, uint64_t remote_addr,
		uint64_t compare_add, uint64_t swap) noexcept
{
	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.compare_add = compare_add;
		wr->wr.atomic.swap = swap;
	}
}

void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
		       uint64_t remote_addr, uint64_t compare,
		       uint64_t swap) noexcept
{
	set_atomic(append(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
			  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP),
		   rkey, remote_addr, compare, swap);
}

void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr, uint64_t add) noexcept
{
	set_atomic(append(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD),
		   rkey, remote_addr, add, 0);
}

/*
 * The operations the device does not implement: creating a QP that asks
 * for them fails, and their slots hold these rather than NULL, so that a
 * call fails the batch with EOPNOTSUPP instead of jumping to address 0.
 */
void latch_unsupported(struct ibv_qp_ex *qpx) noexcept
{
	wr_batch &b = batch(qpx);

	if (!b.err)
		b.err = EOPNOTSUPP;
}

void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *, uint32_t,
		const struct ibv_mw_bind_info *) noexcept
{
	latch_unsupported(qpx);
}

void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t) noexcept
{
	latch_unsupported(qpx);
}

void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t) noexcept
{
	latch_unsupported(qpx);
}

void wr_send_tso(struct ibv_qp_ex *qpx, void *, uint16_t, uint16_t) noexcept
{
	latch_unsupported(qpx);
}

void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t) noexcept
{
	latch_unsupported(qpx);
}

void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t, uint64_t,
		     const void *) noexcept
{
	latch_unsupported(qpx);
}

void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
		    uint32_t remote_qpn, uint32_t remote_qkey) noexcept
{
	wr_batch &b = batch(qpx);
	struct ibv_send_wr *wr = current(b);

	if (!wr)
		return;
	if (!b.ud || !ah) {
		b.err = EINVAL;
		return;
	}
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

/* The DATA setters replace what an earlier one of the same WR set. */
void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
		     const struct ibv_sge *sg_list) noexcept
{
	wr_batch &b = batch(qpx);
	struct ibv_send_wr *wr = current(b);

	if (!wr)
		return;
	if (num_sge > b.max_sge) {
		b.err = EINVAL;
		return;
	}
	if (num_sge)
		std::memcpy(wr->sg_list, sg_list, num_sge * sizeof(*sg_list));
	wr->num_sge = int(num_sge);
	wr->send_flags &= ~unsigned(IBV_SEND_INLINE);
	wr->send_flags |= qpx->wr_flags & IBV_SEND_INLINE;
}

void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		uint32_t length) noexcept
{
	/* A zero-length buffer is a zero-length message, as in mlx5 and rxe. */
	const struct ibv_sge sge = { .addr = addr, .length = length,
				     .lkey = lkey };

	wr_set_sge_list(qpx, length ? 1 : 0, &sge);
}

/*
 * Inline data is copied here, as ibv_wr_post(3) promises, into the WR's
 * slot of the batch; the kernel gathers it from there (IBV_SEND_INLINE:
 * copy_from_user() at POST_SEND) before ibv_wr_complete() returns.
 */
void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
			     const struct ibv_data_buf *buf_list) noexcept
{
	wr_batch &b = batch(qpx);
	struct ibv_send_wr *wr = current(b);
	uint8_t *slot;
	size_t total = 0;

	if (!wr)
		return;
	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length > b.max_inline - total) {
			b.err = EINVAL; /* as the kernel's inline check */
			return;
		}
		total += buf_list[i].length;
	}
	slot = &b.inline_buf[size_t(wr - b.wrs) * b.max_inline];
	total = 0;
	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length)
			std::memcpy(slot + total, buf_list[i].addr,
				    buf_list[i].length);
		total += buf_list[i].length;
	}
	wr->sg_list[0] = { .addr = uintptr_t(slot),
			   .length = uint32_t(total),
			   .lkey = 0 };
	wr->num_sge = total ? 1 : 0;
	wr->send_flags |= IBV_SEND_INLINE;
}

void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
			size_t length) noexcept
{
	const struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &buf);
}

void wr_start(struct ibv_qp_ex *qpx) noexcept
{
	wr_batch &b = batch(qpx);

	pthread_mutex_lock(&b.lock);
	b.count = 0;
	b.err = 0;
}

/*
 * Post b.wrs[0..count): in one call through a mapped send queue, else in
 * lists a POST_SEND command can carry.
 */
int post_batch(qp *q, wr_batch &b) noexcept
{
	uint32_t first = 0;

	if (q->sq.hdr && b.count) {
		struct ibv_send_wr *bad = nullptr;

		b.wrs[b.count - 1].next = nullptr;
		return post_send(&q->vqp.qp, b.wrs, &bad);
	}
	while (first < b.count) {
		size_t bytes = sizeof(struct ib_uverbs_post_send);
		struct ibv_send_wr *bad = nullptr;
		uint32_t end = first;
		int ret;

		while (end < b.count) {
			size_t add = sizeof(struct ib_uverbs_send_wr) +
				     size_t(b.wrs[end].num_sge) *
					     sizeof(struct ib_uverbs_sge);

			if (end > first && bytes + add > post_send_max_bytes)
				break;
			bytes += add;
			end++;
		}
		b.wrs[end - 1].next = nullptr;
		ret = post_send(&q->vqp.qp, &b.wrs[first], &bad);
		if (ret)
			return ret;
		first = end;
	}
	return 0;
}

int wr_complete(struct ibv_qp_ex *qpx) noexcept
{
	wr_batch &b = batch(qpx);
	int ret;

	check_last(b);
	ret = b.err;
	if (!ret)
		ret = post_batch(to_qp(qpx), b);
	b.count = 0;
	b.err = 0;
	pthread_mutex_unlock(&b.lock);
	return ret;
}

void wr_abort(struct ibv_qp_ex *qpx) noexcept
{
	wr_batch &b = batch(qpx);

	b.count = 0;
	b.err = 0;
	pthread_mutex_unlock(&b.lock);
}

} // namespace

int wr_check_create(const struct ibv_qp_init_attr_ex *attr) noexcept
{
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
		return attr->send_ops_flags & ~rc_send_ops ? EOPNOTSUPP : 0;
	case IBV_QPT_UD:
		return attr->send_ops_flags & ~ud_send_ops ? EOPNOTSUPP : 0;
	default:
		return EOPNOTSUPP;
	}
}

int wr_init(qp *q, const struct ibv_qp_init_attr_ex *attr) noexcept
{
	struct ibv_qp_ex *qpx = &q->vqp.qp_ex;
	wr_batch &b = q->wr;
	size_t wrs_len, sges_len;
	char *mem;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	/* attr->cap is what the kernel granted (ibv_cmd_create_qp_ex()). */
	b.max_wr = attr->cap.max_send_wr;
	b.max_sge = attr->cap.max_send_sge;
	b.sge_stride = b.max_sge ? b.max_sge : 1; /* room for inline's SGE */
	b.max_inline = attr->cap.max_inline_data;
	b.ud = attr->qp_type == IBV_QPT_UD;
	b.ops = attr->send_ops_flags;
	b.send_flags = b.ud ? ud_send_flags : rc_send_flags;
	wrs_len = size_t(b.max_wr) * sizeof(*b.wrs);
	sges_len = size_t(b.max_wr) * b.sge_stride * sizeof(*b.sges);
	mem = static_cast<char *>(
		std::calloc(1, wrs_len + sges_len + size_t(b.max_wr) * b.max_inline));
	if (!mem)
		return ENOMEM;
	b.wrs = reinterpret_cast<struct ibv_send_wr *>(mem);
	b.sges = reinterpret_cast<struct ibv_sge *>(mem + wrs_len);
	b.inline_buf = reinterpret_cast<uint8_t *>(mem + wrs_len + sges_len);
	pthread_mutex_init(&b.lock, nullptr);

	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_send_tso = wr_send_tso;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qpx->wr_atomic_write = wr_atomic_write;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	/* ibv_qp_to_qp_ex() returns qp_ex from now on. */
	q->vqp.comp_mask |= VERBS_QP_EX;
	return 0;
}

void wr_fini(qp *q) noexcept
{
	if (!q->wr.wrs)
		return;
	pthread_mutex_destroy(&q->wr.lock);
	std::free(q->wr.wrs);
	q->wr.wrs = nullptr;
}

} // namespace metaroce
