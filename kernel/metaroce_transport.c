// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: glue between a QP and its sans-IO transport core connection.
 *
 * Every function here runs with qp->lock held (see "Data path" in
 * metaroce.h), except the timer handler, which takes it.  The core calls
 * back into this file (read_payload, place_send, place_write) from within
 * mrc_next_packet() and mrc_recv_packet(), still under qp->lock; those
 * callbacks only copy bytes between packets and pinned MR pages.
 *
 * One "run" of a QP: drain the core's completions into the CQs, hand it
 * the WRs waiting in the software queues (room frees as completions are
 * drained), pull the packets it has to send, and arm the QP's timer at its
 * next deadline.  The packets are queued on qp->txq and transmitted after
 * qp->lock is dropped (metaroce_qp_xmit()).
 */

#include <linux/interrupt.h>
#include <linux/ktime.h>
#include <linux/percpu.h>
#include <linux/skbuff.h>
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <net/ip.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* Packets built per run; a longer burst continues from the timer. */
#define METAROCE_RUN_BUDGET	64
/* Re-run delay when the core still has work at the end of a run. */
#define METAROCE_RERUN_NS	(2 * NSEC_PER_USEC)
/* Room in front of a packet for the UDP, IP and link headers. */
#define METAROCE_SKB_HEADROOM						\
	(LL_MAX_HEADER + sizeof(struct iphdr) + sizeof(struct udphdr))

/* The completion status values of the core are those of ib_wc_status. */
static_assert((int)MRC_WC_SUCCESS == (int)IB_WC_SUCCESS);
static_assert((int)MRC_WC_LOC_LEN_ERR == (int)IB_WC_LOC_LEN_ERR);
static_assert((int)MRC_WC_WR_FLUSH_ERR == (int)IB_WC_WR_FLUSH_ERR);
static_assert((int)MRC_WC_REM_INV_REQ_ERR == (int)IB_WC_REM_INV_REQ_ERR);
static_assert((int)MRC_WC_REM_ACCESS_ERR == (int)IB_WC_REM_ACCESS_ERR);
static_assert((int)MRC_WC_RETRY_EXC_ERR == (int)IB_WC_RETRY_EXC_ERR);
static_assert((int)MRC_WC_RNR_RETRY_EXC_ERR == (int)IB_WC_RNR_RETRY_EXC_ERR);
static_assert((int)MRC_WC_LOC_PROT_ERR == (int)IB_WC_LOC_PROT_ERR);
static_assert((int)MRC_WC_REM_OP_ERR == (int)IB_WC_REM_OP_ERR);
static_assert(METAROCE_MAX_QP_RD_ATOM <= MRC_MAX_RD_ATOMIC);
static_assert(METAROCE_MAX_QP_INIT_RD_ATOM <= MRC_MAX_RD_ATOMIC);
/* The ICRC of RoCEv2 mode takes the core's trailer slot. */
static_assert(MR_CRC_LEN == 4);

/*
 * Copy between @buf and the SGE list @sge of a WR, starting at byte
 * @offset of the message.  @to_mr: buf -> memory (needs local write).
 */
int metaroce_sge_copy(struct metaroce_qp *qp, const struct metaroce_sge *sge,
		      u32 num_sge, u32 offset, void *buf, u32 len, bool to_mr)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct metaroce_mr *mr;
		u32 n;
		int err;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		mr = metaroce_mr_get(qp->ib_qp.pd, sge[i].lkey, false,
				     to_mr ? IB_ACCESS_LOCAL_WRITE : 0,
				     sge[i].addr + offset, n);
		if (!mr)
			return -EFAULT;	/* deregistered since posting */
		err = metaroce_mr_copy(mr, sge[i].addr + offset, buf, n, to_mr);
		metaroce_mr_put(mr);
		if (err)
			return err;
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EFAULT : 0;
}

static int metaroce_read_payload(void *user, u64 wr_id, u32 offset,
				 void *dst, u32 len)
{
	struct metaroce_qp *qp = user;
	struct metaroce_swqe *wqe = metaroce_wq_entry(&qp->sq, wr_id);

	if (wqe->inline_data) {
		if (offset > wqe->length || len > wqe->length - offset)
			return -EFAULT;
		memcpy(dst, wqe->inline_buf + offset, len);
		return 0;
	}
	return metaroce_sge_copy(qp, wqe->sge, wqe->num_sge, offset, dst, len,
				 false);
}

static int metaroce_place_send(void *user, u64 recv_wr_id, u32 offset,
			       const void *src, u32 len)
{
	struct metaroce_qp *qp = user;
	struct metaroce_rwqe *wqe = metaroce_wq_entry(&qp->rq, recv_wr_id);

	return metaroce_sge_copy(qp, wqe->sge, wqe->num_sge, offset,
				 (void *)src, len, true);
}

/*
 * An incoming RDMA WRITE: the QP must allow remote writes and the rkey
 * must name an MR of the QP's PD with IB_ACCESS_REMOTE_WRITE covering the
 * whole range; otherwise nothing is written and the core answers with a
 * remote access NAK (IB_WC_REM_ACCESS_ERR at the requester).
 */
static int metaroce_place_write(void *user, u32 rkey, u64 raddr,
				const void *src, u32 len)
{
	struct metaroce_qp *qp = user;
	struct metaroce_mr *mr = NULL;
	int err;

	if (qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE)
		mr = metaroce_mr_get(qp->ib_qp.pd, rkey, true,
				     IB_ACCESS_REMOTE_WRITE, raddr, len);
	if (!mr) {
		metaroce_count(qp->mdev, METAROCE_CNT_REM_ACCESS_ERR);
		return -EACCES;
	}
	err = metaroce_mr_copy(mr, raddr, (void *)src, len, true);
	metaroce_mr_put(mr);
	return err;
}

/*
 * Responder of an RDMA READ: the QP must allow remote reads and the rkey
 * name an MR of its PD with IB_ACCESS_REMOTE_READ over the range.  @dst
 * NULL: the core only asks whether the whole request may proceed.
 */
static int metaroce_read_remote(void *user, u32 rkey, u64 raddr, void *dst,
				u32 len)
{
	struct metaroce_qp *qp = user;
	struct metaroce_mr *mr = NULL;
	int err = 0;

	if (qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ)
		mr = metaroce_mr_get(qp->ib_qp.pd, rkey, true,
				     IB_ACCESS_REMOTE_READ, raddr, len);
	if (!mr) {
		metaroce_count(qp->mdev, METAROCE_CNT_REM_ACCESS_ERR);
		return -EACCES;
	}
	if (dst)
		err = metaroce_mr_copy(mr, raddr, dst, len, false);
	metaroce_mr_put(mr);
	return err;
}

/* Requester: READ response bytes / an atomic's original value. */
static int metaroce_place_read(void *user, u64 wr_id, u32 offset,
			       const void *src, u32 len)
{
	struct metaroce_qp *qp = user;
	struct metaroce_swqe *wqe = metaroce_wq_entry(&qp->sq, wr_id);

	return metaroce_sge_copy(qp, wqe->sge, wqe->num_sge, offset,
				 (void *)src, len, true);
}

/* Responder of an atomic: IB_ACCESS_REMOTE_ATOMIC on the QP and the MR. */
static int metaroce_atomic(void *user, u32 opcode, u32 rkey, u64 raddr,
			   u64 compare_add, u64 swap, u64 *orig)
{
	struct metaroce_qp *qp = user;
	struct metaroce_mr *mr = NULL;
	int err;

	if (qp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC)
		mr = metaroce_mr_get(qp->ib_qp.pd, rkey, true,
				     IB_ACCESS_REMOTE_ATOMIC, raddr, 8);
	if (!mr) {
		metaroce_count(qp->mdev, METAROCE_CNT_REM_ACCESS_ERR);
		return -EACCES;
	}
	err = metaroce_mr_atomic(mr, raddr,
				 opcode == MRC_OP_ATOMIC_CMP_AND_SWP,
				 compare_add, swap, orig);
	metaroce_mr_put(mr);
	return err;
}

static const struct mrc_callbacks metaroce_mrc_callbacks = {
	.read_payload = metaroce_read_payload,
	.place_send = metaroce_place_send,
	.place_write = metaroce_place_write,
	.read_remote = metaroce_read_remote,
	.place_read = metaroce_place_read,
	.atomic = metaroce_atomic,
};

/* The core's opcode of a send WR (IB_WR_* validated at posting). */
static u32 metaroce_mrc_opcode(u8 ib_opcode)
{
	switch (ib_opcode) {
	case IB_WR_RDMA_WRITE:
		return MRC_OP_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return MRC_OP_RDMA_WRITE_WITH_IMM;
	case IB_WR_SEND_WITH_IMM:
		return MRC_OP_SEND_WITH_IMM;
	case IB_WR_RDMA_READ:
		return MRC_OP_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return MRC_OP_ATOMIC_CMP_AND_SWP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return MRC_OP_ATOMIC_FETCH_AND_ADD;
	default:
		return MRC_OP_SEND;
	}
}

static enum ib_wc_opcode metaroce_wc_opcode(u8 ib_opcode)
{
	switch (ib_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	default:
		return IB_WC_SEND;
	}
}

/*
 * Create the connection at RTR->RTS from the QP's attributes; qp->conn
 * holds mrc_conn_size() zeroed bytes.  Then hand it the receives posted
 * so far.
 */
/*
 * The core's configuration from the QP's attributes.  qp->lock held.
 * @rts: the RTS attributes (sq_psn, retry_cnt, rnr_retry, timeout) are
 * set; before that the core's defaults stand, so that a responder that
 * never reaches RTS (perftest's bandwidth servers) still has a retry
 * budget for its own stream of MetaRoCE READ/atomic responses.
 */
static void metaroce_conn_config(const struct metaroce_qp *qp,
				 struct mrc_config *cfg, bool rts)
{
	const struct ib_qp_attr *a = &qp->attr;

	mrc_config_default(cfg, qp->mode);
	cfg->local_qpn = qp->ib_qp.qp_num;
	cfg->remote_qpn = a->dest_qp_num;
	cfg->mtu = ib_mtu_enum_to_int(a->path_mtu);
	cfg->remote_psn = a->rq_psn;
	/*
	 * RoCEv2 mode has one path and no window of its own to steer, and
	 * its trailer is the ICRC, which metaroce_net.c owns (MR-COMPAT-012).
	 */
	if (qp->mode == MRC_MODE_ROCEV2)
		cfg->flags |= MRC_CFG_CALLER_ICRC;
	if (qp->mode == MRC_MODE_METAROCE) {
		cfg->num_paths = qp->cfg_paths ? qp->cfg_paths :
				 READ_ONCE(qp->mdev->paths);
		cfg->cc_flags = qp->cc_flags;
		if (READ_ONCE(qp->mdev->cc_loss_gate))
			cfg->cc_flags |= MRC_CC_LOSS_GATE;
		if (cfg->cc_flags & (MRC_CC_DELAY | MRC_CC_LOSS_GATE))
			cfg->target_delay_ns =
				READ_ONCE(qp->mdev->cc_delay_target_ns);
		cfg->window = READ_ONCE(qp->mdev->window);
		/* the peer's QPs, set alike, allow for it (MR-LOSS-014) */
		cfg->final_ack_hold_ns = READ_ONCE(qp->mdev->ack_hold_ns);
	}
	cfg->initial_rtt_ns = READ_ONCE(qp->mdev->initial_rtt_ns);
	if (!rts)
		return;
	cfg->local_psn = a->sq_psn;
	cfg->retry_cnt = a->retry_cnt;
	cfg->rnr_retry = a->rnr_retry;
	/* The peer's responder resources (clamped at modify_qp). */
	cfg->max_rd_atomic = a->max_rd_atomic;
	/*
	 * IBTA local ACK timeout 4.096 us * 2^timeout; 0 keeps the default.
	 * RoCEv2 mode retransmits after it; MetaRoCE mode gives up after
	 * retry_cnt + 1 of it without progress (MR-FAIL-007).
	 */
	if (a->timeout)
		cfg->rto_ns = 4096ull << min_t(u8, a->timeout, 31);
}

/* INIT->RTR: the connection starts, as a responder. */
int metaroce_conn_start(struct metaroce_qp *qp)
{
	struct mrc_config cfg;
	u64 now = ktime_get_ns();
	int err;

	lockdep_assert_held(&qp->lock);
	metaroce_conn_config(qp, &cfg, false);
	qp->num_paths = cfg.num_paths;
	err = mrc_conn_init(qp->conn, &cfg, &metaroce_mrc_callbacks, qp, now);
	if (!err)
		/* Paths of planes that are down start out of service. */
		metaroce_qp_apply_planes(qp, now);
	return err;
}

/* RTR->RTS: sq_psn, retry_cnt, rnr_retry and timeout are RTS attributes. */
int metaroce_conn_start_requester(struct metaroce_qp *qp)
{
	struct mrc_config cfg;

	lockdep_assert_held(&qp->lock);
	metaroce_conn_config(qp, &cfg, true);
	return mrc_conn_set_requester(qp->conn, &cfg);
}

/* Free the connection of a QP nobody can reach any more. */
void metaroce_conn_stop(struct metaroce_qp *qp)
{
	kvfree(qp->conn);
	qp->conn = NULL;
}

/* Deliver, in posting order, the completions the queue's tail reached. */
static void metaroce_sq_advance(struct metaroce_qp *qp)
{
	struct metaroce_cq *cq = to_mcq(qp->ib_qp.send_cq);

	while (qp->sq.tail != qp->sq.fed) {
		struct metaroce_swqe *wqe =
			metaroce_wq_entry(&qp->sq, qp->sq.tail);
		struct ib_wc wc = {};

		if (!wqe->done)
			break;
		qp->sq.tail++;
		if (wqe->status == IB_WC_SUCCESS && !wqe->signaled)
			continue;
		wc.wr_id = wqe->wr_id;
		wc.status = wqe->status;
		wc.opcode = metaroce_wc_opcode(wqe->opcode);
		wc.byte_len = wqe->length;
		wc.qp = &qp->ib_qp;
		metaroce_cq_push(cq, &wc, wqe->status != IB_WC_SUCCESS);
	}
}

static void metaroce_rq_advance(struct metaroce_qp *qp)
{
	struct metaroce_cq *cq = to_mcq(qp->ib_qp.recv_cq);

	while (qp->rq.tail != qp->rq.fed) {
		struct metaroce_rwqe *wqe =
			metaroce_wq_entry(&qp->rq, qp->rq.tail);
		struct ib_wc wc = {};

		if (!wqe->done)
			break;
		qp->rq.tail++;
		metaroce_rq_ring_retired(qp);
		if (wqe->status == METAROCE_RWQE_GIVEN_BACK)
			continue;
		if (qp->srq)
			metaroce_srq_completed(qp->srq);
		wc.wr_id = wqe->wr_id;
		wc.status = wqe->status;
		wc.opcode = wqe->opcode == MRC_OP_RECV_RDMA_WITH_IMM ?
			    IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		if (wqe->wc_flags & MRC_WC_F_IMM) {
			wc.wc_flags = IB_WC_WITH_IMM;
			wc.ex.imm_data = cpu_to_be32(wqe->imm_data);
		}
		wc.byte_len = wqe->byte_len;
		wc.qp = &qp->ib_qp;
		wc.port_num = METAROCE_PORT;
		/*
		 * The wire carries no solicited-event bit yet: every receive
		 * completion wakes a solicited-only waiter too, which is
		 * safe (an extra wakeup), where a missed one would not be.
		 */
		metaroce_cq_push(cq, &wc, true);
	}
}

/* Drain the core's completions; returns true if one reported an error. */
static bool metaroce_drain(struct metaroce_qp *qp)
{
	struct mrc_completion c;
	bool error = false;

	while (mrc_poll_completion(qp->conn, &c) == 1) {
		if (c.opcode == MRC_OP_RECV ||
		    c.opcode == MRC_OP_RECV_RDMA_WITH_IMM) {
			struct metaroce_rwqe *wqe =
				metaroce_wq_entry(&qp->rq, c.wr_id);

			wqe->byte_len = c.byte_len;
			wqe->opcode = c.opcode;
			wqe->wc_flags = c.wc_flags;
			wqe->imm_data = c.imm_data;
			wqe->status = c.status;
			wqe->done = true;
		} else {
			struct metaroce_swqe *wqe =
				metaroce_wq_entry(&qp->sq, c.wr_id);

			wqe->status = c.status;
			wqe->done = true;
		}
		if (c.status != MRC_WC_SUCCESS)
			error = true;
	}
	metaroce_sq_advance(qp);
	metaroce_rq_advance(qp);
	return error;
}

/*
 * Hand the core the receives it has room for, in order.  A receive queued
 * in error (metaroce_post_one_recv_locked()) stops them; with @fail, once
 * every receive before it has completed, it completes with its status and
 * true is returned: the QP must fail.
 */
static bool metaroce_feed_recvs(struct metaroce_qp *qp, bool fail)
{
	while (qp->rq.fed != qp->rq.head) {
		struct metaroce_rwqe *wqe =
			metaroce_wq_entry(&qp->rq, qp->rq.fed);

		if (wqe->status != IB_WC_SUCCESS) {
			if (!fail || qp->rq.tail != qp->rq.fed)
				break;
			wqe->done = true;
			qp->rq.fed++;
			metaroce_rq_advance(qp);
			return true;
		}
		if (mrc_post_recv(qp->conn, qp->rq.fed, wqe->length))
			break;
		qp->rq.fed++;
	}
	return false;
}

/*
 * Hand the core as many waiting WRs as it has room for.  Returns true when
 * a WR posted with a local protection error (metaroce_post_one_send, or a
 * receive the kernel took from its ring) was reached: it completed, in
 * order, with that status and the QP must fail.
 */
static bool metaroce_feed(struct metaroce_qp *qp, u64 now)
{
	if (qp->srq)
		metaroce_srq_take(qp);
	if (metaroce_feed_recvs(qp, true))
		return true;
	if (qp->state != IB_QPS_RTS)
		return false;
	while (qp->sq.fed != qp->sq.head) {
		struct metaroce_swqe *wqe =
			metaroce_wq_entry(&qp->sq, qp->sq.fed);
		struct mrc_send_wr swr = {
			.wr_id = qp->sq.fed,
			.opcode = metaroce_mrc_opcode(wqe->opcode),
			.length = wqe->length,
			.rkey = wqe->rkey,
			.remote_addr = wqe->remote_addr,
			.imm_data = wqe->imm_data,
			.compare_add = wqe->compare_add,
			.swap = wqe->swap,
		};

		if (wqe->status != IB_WC_SUCCESS) {
			/* Its turn comes once everything before it completed. */
			if (qp->sq.tail != qp->sq.fed)
				break;
			wqe->done = true;
			qp->sq.fed++;
			metaroce_sq_advance(qp);
			return true;
		}
		/*
		 * IBTA fence: the WR starts once the READs and atomics before
		 * it completed, so that it sees what they brought.  Like rxe,
		 * it waits for every WR before it.
		 */
		if (wqe->fence && qp->sq.tail != qp->sq.fed)
			break;
		if (mrc_post_send(qp->conn, &swr, now))
			break;
		qp->sq.fed++;
	}
	return false;
}

/*
 * Move the QP to ERR and complete everything still posted with
 * IB_WC_WR_FLUSH_ERR, after the completions the core already has.  The
 * WQEs an SRQ-attached QP holds go back to the SRQ instead, and on entry
 * to ERR such a QP gets IB_EVENT_QP_LAST_WQE_REACHED: it completes no
 * receive any more.
 */
void metaroce_qp_flush(struct metaroce_qp *qp)
{
	bool entering = qp->state != IB_QPS_ERR;
	int pass;

	lockdep_assert_held(&qp->lock);
	if (qp->conn)
		metaroce_drain(qp);
	qp->state = IB_QPS_ERR;
	qp->attr.qp_state = IB_QPS_ERR;
	/* From here the process rings for its receives (ERR flushes them). */
	metaroce_rq_ring_stop(qp);

	/* The core's own queues are abandoned with the connection. */
	qp->sq.fed = qp->sq.head;
	qp->rq.fed = qp->rq.head;
	if (qp->srq)
		metaroce_srq_give_back(qp, false);
	while (qp->sq.tail != qp->sq.fed) {
		struct metaroce_swqe *wqe =
			metaroce_wq_entry(&qp->sq, qp->sq.tail);

		if (!wqe->done) {
			wqe->status = IB_WC_WR_FLUSH_ERR;
			wqe->done = true;
		}
		metaroce_sq_advance(qp);
	}
	/*
	 * Twice at most: the second pass flushes what the process had posted
	 * to its ring and the kernel not taken yet.  The first leaves the
	 * queue empty, so it has room for a whole ring; what the process
	 * posts after metaroce_rq_ring_stop() comes with a doorbell.
	 */
	for (pass = 0; pass < 2; pass++) {
		while (qp->rq.tail != qp->rq.fed) {
			struct metaroce_rwqe *wqe =
				metaroce_wq_entry(&qp->rq, qp->rq.tail);

			if (!wqe->done) {
				wqe->status = IB_WC_WR_FLUSH_ERR;
				wqe->byte_len = 0;
				wqe->opcode = MRC_OP_RECV;
				wqe->wc_flags = 0;
				wqe->done = true;
			}
			metaroce_rq_advance(qp);
		}
		if (pass || !metaroce_rq_ring_take(qp))
			break;
		qp->rq.fed = qp->rq.head;
	}
	if (entering && qp->srq && qp->ib_qp.event_handler) {
		struct ib_event ev = {
			.device = qp->ib_qp.device,
			.element.qp = &qp->ib_qp,
			.event = IB_EVENT_QP_LAST_WQE_REACHED,
		};

		qp->ib_qp.event_handler(&ev, qp->ib_qp.qp_context);
	}
}

/* A core failure outside a completion (e.g. a payload read): fatal. */
static void metaroce_qp_fatal(struct metaroce_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ib_qp.device,
		.element.qp = &qp->ib_qp,
		.event = IB_EVENT_QP_FATAL,
	};

	metaroce_qp_flush(qp);
	if (qp->ib_qp.event_handler)
		qp->ib_qp.event_handler(&ev, qp->ib_qp.qp_context);
}

static bool metaroce_qp_active(const struct metaroce_qp *qp)
{
	return qp->conn && !qp->dead &&
	       (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS);
}

/*
 * Pull up to @budget packets the core has to send onto qp->txq.  Returns
 * the budget left (-1: the core had more), or -EIO after a core failure
 * that made the QP fatal.
 */
static int metaroce_pull(struct metaroce_qp *qp, u64 now, int budget)
{
	u32 cap = MRC_MAX_PKT_LEN(ib_mtu_enum_to_int(qp->attr.path_mtu));

	while (budget--) {
		struct sk_buff *skb = qp->spare_skb;
		unsigned int path = 0;
		int len;

		/* A spare from before a RESET may be for a smaller path MTU. */
		if (skb && skb_tailroom(skb) < cap) {
			kfree_skb(skb);
			skb = qp->spare_skb = NULL;
		}
		if (!skb) {
			skb = alloc_skb(METAROCE_SKB_HEADROOM + cap, GFP_ATOMIC);
			if (!skb) {
				metaroce_count(qp->mdev, METAROCE_CNT_TX_ERRORS);
				break;	/* the timer retries */
			}
			skb_reserve(skb, METAROCE_SKB_HEADROOM);
			qp->spare_skb = skb;
		}
		len = mrc_next_packet(qp->conn, skb->data, cap, &path, now);
		if (len == 0)
			break;
		if (len < 0) {
			metaroce_qp_fatal(qp);
			return -EIO;
		}
		qp->spare_skb = NULL;
		skb_put(skb, len);
		METAROCE_SKB_CB(skb)->path = path;
		__skb_queue_tail(&qp->txq, skb);
	}
	return budget;
}

/*
 * The owner destroys the QP, resets it or moves it to ERR: the core sends
 * its last word (MR-LOSS-012: the latest ACK once more, for a peer whose
 * last SEND this QP just received) and then nothing.  qp->lock held; the
 * caller transmits qp->txq (metaroce_qp_xmit()).
 */
void metaroce_conn_close(struct metaroce_qp *qp)
{
	struct mrc_completion c;

	lockdep_assert_held(&qp->lock);
	if (!metaroce_qp_active(qp))
		return;
	metaroce_drain(qp);	/* what completed before */
	mrc_conn_close(qp->conn);
	/*
	 * The core flushes every WR it holds; the QP's own flush does that
	 * for its queues (ERR) or discards them (RESET, destroy), and gives
	 * an SRQ's WQEs back to the SRQ instead: those must not complete.
	 */
	while (mrc_poll_completion(qp->conn, &c) == 1)
		;
	metaroce_pull(qp, ktime_get_ns(), METAROCE_RUN_BUDGET);
}

/*
 * See the top of the file.  qp->lock held.  @now is the time of the event
 * that runs the QP, the one the core was handed for it: a deadline at or
 * before the time of mrc_handle_timeout() means that only
 * mrc_next_packet() has work (core.h), and one clock read per event is
 * enough (in the testbed's guests each is an emulated HPET access).
 */
static void metaroce_qp_run_at(struct metaroce_qp *qp, u64 now)
{
	u64 deadline;
	int budget;

	lockdep_assert_held(&qp->lock);
	if (!metaroce_qp_active(qp))
		return;

	if (metaroce_drain(qp))
		goto failed;
	if (metaroce_feed(qp, now)) {
		metaroce_qp_flush(qp);
		return;
	}

	budget = metaroce_pull(qp, now, METAROCE_RUN_BUDGET);
	if (budget == -EIO)
		return;
	/*
	 * Building packets can fail the connection as well (a retransmission
	 * past retry_cnt, MR-LOSS-009): its completions are in the core now,
	 * and a core in error names no deadline, so nothing would come back
	 * for them.
	 */
	if (metaroce_drain(qp))
		goto failed;
	deadline = mrc_next_deadline(qp->conn);
	/*
	 * A run that used its whole budget may leave packets the window
	 * already allows; the core's deadline does not cover those (it names
	 * timers only), so come back for them after a short pause instead of
	 * waiting for the next received packet or a retransmission timer.
	 */
	if (budget < 0 && deadline > now + METAROCE_RERUN_NS)
		deadline = now + METAROCE_RERUN_NS;
	if (deadline == U64_MAX) {
		/*
		 * Nothing left for the timer: an expiry armed for what has
		 * since completed (a ping-pong's tail loss probe, once its ACK
		 * is in) would only run the QP for nothing, an interrupt and a
		 * softirq per message.  Not hrtimer_cancel(): its handler may
		 * be waiting for qp->lock, which is held here.
		 */
		hrtimer_try_to_cancel(&qp->timer);
		return;
	}
	if (deadline <= now)
		deadline = now + METAROCE_RERUN_NS;
	hrtimer_start(&qp->timer, ns_to_ktime(deadline), HRTIMER_MODE_ABS_SOFT);
	return;

failed:
	/*
	 * IBTA: a completion in error moves the QP to ERR.  The core's last
	 * packets leave first: a responder's failure comes with the NAK that
	 * tells the requester why (MR-FC-003 length error, remote access
	 * error).
	 */
	if (metaroce_pull(qp, now, METAROCE_RUN_BUDGET) != -EIO)
		metaroce_qp_flush(qp);
}

void metaroce_qp_run(struct metaroce_qp *qp)
{
	metaroce_qp_run_at(qp, ktime_get_ns());
}

/*
 * Hand the packets on qp->txq to the network, after a run; qp->lock not
 * held.  The core numbers and times its packets as it builds them, so
 * they must leave in that order: a context that sent what it built after
 * dropping qp->lock could be overtaken by one that ran the QP in between
 * (the receive softirq runs when process context re-enables BH, or on
 * another CPU), and the peer would take the overtaken packets for lost.
 * So one context at a time sends, and it sends what the others queued
 * meanwhile too; the others leave theirs to it.
 */
void metaroce_qp_xmit(struct metaroce_qp *qp)
{
	struct sk_buff_head out;

	/* Our own packets, if any, are visible to us without the lock. */
	if (skb_queue_empty_lockless(&qp->txq))
		return;
	__skb_queue_head_init(&out);
	spin_lock_bh(&qp->lock);
	if (qp->tx_busy) {
		spin_unlock_bh(&qp->lock);
		return;
	}
	qp->tx_busy = true;
	while (!skb_queue_empty(&qp->txq)) {
		skb_queue_splice_init(&qp->txq, &out);
		spin_unlock_bh(&qp->lock);
		metaroce_xmit(qp, &out);
		spin_lock_bh(&qp->lock);
	}
	qp->tx_busy = false;
	spin_unlock_bh(&qp->lock);
}

/*
 * Receive batches.  The receive softirq gives each packet to the core at
 * once, but a data packet in the middle of a message that asks for no
 * ACK leaves the run of its QP (drain, feed, pull, timer) to the end of
 * the batch: a tasklet of the same CPU, which runs after the NAPI poll
 * that delivered it.  A stream of data then costs the receiver one ACK
 * per batch and per message (the core's ACK covers everything that
 * arrived since the last one) instead of one per ack_every packets, and
 * the QP's timer is re-armed once.  Every packet to send or receive is a
 * guest exit in a virtual machine, so the ACKs saved count as much as the
 * data.  Everything else runs the QP at once (see metaroce_rx_can_wait()):
 * the tasklet may be left to ksoftirqd, which a process busy-polling its
 * CQ on the same CPU keeps waiting for up to a scheduler tick, and a
 * message's last packet, an ACK or a request is what someone waits for.
 */
struct metaroce_rx_batch {
	/* QPs to run, each holding a reference; this CPU's softirq only. */
	struct list_head qps;
	struct tasklet_struct tasklet;
};

static DEFINE_PER_CPU(struct metaroce_rx_batch, metaroce_rx_batch);

static void metaroce_rx_batch_run(struct tasklet_struct *t)
{
	struct metaroce_rx_batch *b = from_tasklet(b, t, tasklet);
	struct metaroce_qp *qp, *next;
	LIST_HEAD(qps);

	list_splice_init(&b->qps, &qps);
	list_for_each_entry_safe(qp, next, &qps, rx_batch_node) {
		spin_lock_bh(&qp->lock);
		/* Off our list before another CPU may queue it again. */
		list_del_init(&qp->rx_batch_node);
		qp->rx_batched = false;
		metaroce_qp_run(qp);
		spin_unlock_bh(&qp->lock);
		metaroce_qp_xmit(qp);
		metaroce_qp_put(qp);
	}
}

/* Queue @qp, on which the caller holds a reference, for its run.  qp->lock. */
static void metaroce_rx_batch_add(struct metaroce_qp *qp)
{
	struct metaroce_rx_batch *b = this_cpu_ptr(&metaroce_rx_batch);

	lockdep_assert_held(&qp->lock);
	if (qp->rx_batched)
		return;
	qp->rx_batched = true;
	refcount_inc(&qp->refs);
	list_add_tail(&qp->rx_batch_node, &b->qps);
	tasklet_schedule(&b->tasklet);
}

void metaroce_rx_batch_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct metaroce_rx_batch *b;

		b = per_cpu_ptr(&metaroce_rx_batch, cpu);
		INIT_LIST_HEAD(&b->qps);
		tasklet_setup(&b->tasklet, metaroce_rx_batch_run);
	}
}

/*
 * Module unload, after every QP is gone: a queued QP holds a reference,
 * so destroy_qp waited for its run, but the tasklet may still be on its
 * way out of this module's code.
 */
void metaroce_rx_batch_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		tasklet_kill(&per_cpu_ptr(&metaroce_rx_batch, cpu)->tasklet);
}

/*
 * Whether the run after packet @pkt of @qp can wait for the end of the
 * receive batch: data that neither ends a message nor asks for an ACK
 * (MetaRoCE ACK_REQ, IBTA AckReq).  A malformed packet runs at once; the
 * core has counted it and the run has nothing to do.
 */
static bool metaroce_rx_can_wait(const struct metaroce_qp *qp, const u8 *pkt,
				 size_t len)
{
	if (qp->mode == MRC_MODE_METAROCE) {
		if (len < sizeof(struct mr_hdr))
			return false;
		switch (pkt[1]) {
		case MR_OPC_SEND:
		case MR_OPC_WRITE:
		case MR_OPC_SEND_IMM:
		case MR_OPC_WRITE_IMM:
		case MR_OPC_READ_RESP:
			return !(pkt[2] & (MR_FLAG_LAST | MR_FLAG_ACK_REQ));
		default:
			return false;
		}
	}
	if (len < MR_BTH_LEN ||
	    get_unaligned_be32(pkt + offsetof(struct mr_bth, apsn)) &
	    MR_BTH_ACKREQ)
		return false;
	switch (pkt[0]) {
	case MR_IB_SEND_FIRST:
	case MR_IB_SEND_MIDDLE:
	case MR_IB_WRITE_FIRST:
	case MR_IB_WRITE_MIDDLE:
	case MR_IB_READ_RESP_FIRST:
	case MR_IB_READ_RESP_MIDDLE:
		return true;
	default:
		return false;
	}
}

/*
 * A datagram payload for @qp, from the UDP receive path (softirq, the
 * caller holds a reference); @rx_flags are MRC_RX_* (what the IP header
 * said).
 */
void metaroce_qp_rx(struct metaroce_qp *qp, const void *pkt, size_t len,
		    unsigned int rx_flags)
{
	enum metaroce_counter c;
	unsigned int path = 0;
	u64 now;
	int ret;

	spin_lock_bh(&qp->lock);
	if (!metaroce_qp_active(qp)) {
		spin_unlock_bh(&qp->lock);
		metaroce_count(qp->mdev, METAROCE_CNT_RX_NO_QP);
		return;
	}
	/* A SEND finds its receive posted, if the SRQ has one. */
	if (qp->srq)
		metaroce_srq_take(qp);
	/*
	 * ... or if the process posted one to its ring since (no doorbell);
	 * one in error waits for the run below.
	 */
	if (qp->rq_ring.takes && metaroce_rq_ring_take(qp))
		metaroce_feed_recvs(qp, false);
	/* MetaRoCE names the sender's path; answer on the same index. */
	if (qp->mode == MRC_MODE_METAROCE && len > 3)
		path = ((const u8 *)pkt)[3] % qp->num_paths;
	now = ktime_get_ns();
	ret = mrc_recv_packet_ex(qp->conn, pkt, len, path, rx_flags, now);
	if (metaroce_rx_can_wait(qp, pkt, len))
		metaroce_rx_batch_add(qp);
	else
		metaroce_qp_run_at(qp, now);
	spin_unlock_bh(&qp->lock);

	switch (ret) {
	case -EBADMSG:
		c = METAROCE_CNT_RX_BAD_CRC;
		break;
	case -EPROTO:
		c = METAROCE_CNT_RX_MALFORMED;
		break;
	case -ERANGE:
		c = METAROCE_CNT_RX_OUT_OF_WINDOW;
		break;
	case -ENXIO:
		c = METAROCE_CNT_RX_NO_QP;
		break;
	default:
		c = ret < 0 ? METAROCE_CNT_RX_DROPPED : METAROCE_CNT_RX_PACKETS;
		break;
	}
	metaroce_count(qp->mdev, c);
	metaroce_qp_xmit(qp);
}

/* The QP's soft hrtimer: softirq context. */
enum hrtimer_restart metaroce_qp_timer(struct hrtimer *timer)
{
	struct metaroce_qp *qp = container_of(timer, struct metaroce_qp, timer);

	spin_lock_bh(&qp->lock);
	if (metaroce_qp_active(qp)) {
		u64 now = ktime_get_ns();

		mrc_handle_timeout(qp->conn, now);
		metaroce_qp_run_at(qp, now);
	}
	spin_unlock_bh(&qp->lock);
	/* destroy_qp waits for this handler (hrtimer_cancel) before freeing. */
	metaroce_qp_xmit(qp);
	return HRTIMER_NORESTART;
}

/* The ABI's path states are the core's. */
static_assert((int)METAROCE_PATH_ACTIVE == (int)MRC_PATH_UP &&
	      (int)METAROCE_PATH_FAILED == (int)MRC_PATH_FAILED &&
	      (int)METAROCE_PATH_ADMIN_DOWN == (int)MRC_PATH_ADMIN_DOWN);
static_assert(METAROCE_MAX_QP_PATHS == MRC_MAX_PATHS);

/* The id of the plane path @path of @mdev's QPs goes out on now. */
static u32 metaroce_path_plane(struct metaroce_dev *mdev, unsigned int path)
{
	struct metaroce_plane *plane;
	u32 id = 0;

	rcu_read_lock();
	plane = metaroce_plane_for_path(mdev, path);
	if (plane)
		id = plane - mdev->planes;
	rcu_read_unlock();
	return id;
}

/*
 * One snapshot of an RC QP's statistics (metarocedv_query_qp_stats, the
 * uverbs method of metaroce_uapi.c) into @st, which the caller zeroed.
 * Without a connection (RESET, INIT) only the transport and the number
 * of paths the QP will have.
 */
void metaroce_qp_get_stats(struct metaroce_qp *qp, struct metaroce_qp_stats *st)
{
	struct mrc_conn_stats cs;
	struct mrc_path_stats ps;
	struct mrc_config cfg;
	unsigned int i;

	spin_lock_bh(&qp->lock);
	st->transport = qp->mode;
	if (!qp->conn) {
		metaroce_conn_config(qp, &cfg, false);
		st->num_paths = qp->mode == MRC_MODE_ROCEV2 ? 1 : cfg.num_paths;
		spin_unlock_bh(&qp->lock);
		return;
	}
	st->num_paths = qp->num_paths;
	mrc_get_stats(qp->conn, &cs);
	st->tx_packets = cs.tx_data;
	st->retransmits = cs.tx_retrans;
	st->rx_packets = cs.rx_data;
	st->rx_duplicates = cs.rx_dup;
	st->rx_out_of_order = cs.rx_out_of_order;
	st->sacks_sent = cs.sacks_sent;
	st->sacks_received = cs.sacks_received;
	st->path_failures = cs.path_failures;
	st->path_recoveries = cs.path_recoveries;
	for (i = 0; i < st->num_paths; i++) {
		struct metaroce_path_stats *p = &st->path[i];

		if (mrc_get_path_stats(qp->conn, i, &ps))
			break;
		p->tx_packets = ps.tx_data;
		p->retransmits = ps.tx_retrans;
		p->rx_packets = ps.rx_packets;
		p->lost = ps.lost;
		p->timeouts = ps.ptos;
		p->ecn_marks = ps.ecn_marks;
		p->srtt_ns = ps.srtt_ns;
		p->rttvar_ns = ps.rttvar_ns;
		p->min_rtt_ns = ps.min_rtt_ns;
		p->cwnd = ps.cwnd;
		p->in_flight = ps.in_flight;
		p->state = ps.state;
	}
	spin_unlock_bh(&qp->lock);
	for (i = 0; i < st->num_paths; i++)
		st->path[i].plane = metaroce_path_plane(qp->mdev, i);
}
