// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: unreliable datagram QPs, the GSI QP (QP1) and address handles.
 *
 * MetaRoCE defines no datagram transport of its own (MR-COMPAT-010): UD
 * and GSI QPs speak IBTA RoCEv2 UD in both wire modes of the module, so
 * rdma_cm's connection management and UD applications meet any RoCEv2
 * peer.  A datagram is
 *
 *   IPv4/IPv6 | UDP (dport 4791) | BTH | DETH | [ImmDt] | payload | pad | ICRC
 *
 * with the IBTA ICRC (CRC-32 over the masked IP, UDP and BTH headers and
 * the rest of the packet, metaroce_net.c, as RoCEv2-mode RC).  No transport core is involved: post_send
 * turns each WR into one skb at once, completes it (UD gives no delivery
 * guarantee, and the payload has been copied), and leaves routing, the
 * IP/UDP headers and the ICRC to qp->ud_tx_work (metaroce_ud_xmit()),
 * because kernel consumers post with interrupts disabled.  The receive
 * path (UDP softirq) places the 40-byte GRH area and the payload into the
 * oldest posted receive.
 *
 * QP1: one per device, numbered 1 on every device, so received MADs are
 * matched to it by the receiving netdev: metaroce_gsi_qps lists the GSI
 * QPs under RCU, metaroce_gsi_lock serialises its writers.
 *
 * Locking: qp->lock (spin_lock_irqsave() on the posting side, see
 * metaroce.h) protects the state, the PSN and the receive queue; cq->lock
 * nests inside it.  The transmit queue has its own lock (sk_buff_head).
 */

#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* IBTA base transport opcodes of UD (transport 011). */
#define METAROCE_UD_SEND_ONLY		0x64
#define METAROCE_UD_SEND_ONLY_IMM	0x65
#define METAROCE_DETH_LEN		8
#define METAROCE_IMMDT_LEN		4
#define METAROCE_ICRC_LEN		4
#define METAROCE_BTH_SE			0x80
#define METAROCE_GRH_LEN		40
/* Room in front of a datagram for the IP, UDP and link headers. */
#define METAROCE_UD_HEADROOM						\
	(LL_MAX_HEADER + sizeof(struct ipv6hdr) + sizeof(struct udphdr))

static_assert(sizeof(struct metaroce_ud_cb) <=
	      sizeof_field(struct sk_buff, cb));

static LIST_HEAD(metaroce_gsi_qps);
static DEFINE_SPINLOCK(metaroce_gsi_lock);

bool metaroce_is_ud_opcode(u8 opcode)
{
	return opcode == METAROCE_UD_SEND_ONLY ||
	       opcode == METAROCE_UD_SEND_ONLY_IMM;
}

/* Address handles ------------------------------------------------------ */

static int metaroce_create_ah(struct ib_ah *ib_ah,
			      struct rdma_ah_init_attr *init,
			      struct ib_udata *udata)
{
	const struct rdma_ah_attr *attr = init->ah_attr;
	struct metaroce_ah *ah = to_mah(ib_ah);
	const struct ib_global_route *grh;
	bool v4s, v4d;

	/* No driver data is defined for CREATE_AH in this ABI version. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(attr) != METAROCE_PORT)
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	if (!grh->sgid_attr ||
	    grh->sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	memcpy(&ah->saddr, grh->sgid_attr->gid.raw, sizeof(ah->saddr));
	memcpy(&ah->daddr, grh->dgid.raw, sizeof(ah->daddr));
	v4s = ipv6_addr_v4mapped(&ah->saddr);
	v4d = ipv6_addr_v4mapped(&ah->daddr);
	if (v4s != v4d)
		return -EAFNOSUPPORT;	/* one family per datagram */
	ah->ipv6 = !v4s;
	ah->traffic_class = grh->traffic_class;
	ah->hop_limit = grh->hop_limit;
	ah->flow_label = grh->flow_label & 0xfffff;
	return 0;
}

static int metaroce_destroy_ah(struct ib_ah *ib_ah, u32 flags)
{
	/* Nothing refers to an AH after post_send returned. */
	return 0;
}

const struct ib_device_ops metaroce_ah_ops = {
	.create_ah = metaroce_create_ah,
	.create_user_ah = metaroce_create_ah,
	.destroy_ah = metaroce_destroy_ah,

	INIT_RDMA_OBJ_SIZE(ib_ah, metaroce_ah, ib_ah),
};

/* QP setup --------------------------------------------------------------- */

static void metaroce_ud_tx_work(struct work_struct *work)
{
	struct metaroce_qp *qp = container_of(work, struct metaroce_qp,
					      ud_tx_work);
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&qp->ud_txq)))
		metaroce_ud_xmit(qp->mdev, skb);
}

/* Every QP has these, so destroy_qp treats all types alike. */
void metaroce_ud_init(struct metaroce_qp *qp)
{
	skb_queue_head_init(&qp->ud_txq);
	INIT_WORK(&qp->ud_tx_work, metaroce_ud_tx_work);
	INIT_LIST_HEAD(&qp->gsi_node);
}

/* Publish a GSI QP; a device has one (ib_mad creates it per port). */
int metaroce_gsi_add(struct metaroce_qp *qp)
{
	struct metaroce_qp *other;
	int err = 0;

	spin_lock(&metaroce_gsi_lock);
	list_for_each_entry(other, &metaroce_gsi_qps, gsi_node)
		if (other->mdev == qp->mdev)
			err = -EBUSY;
	if (!err)
		list_add_rcu(&qp->gsi_node, &metaroce_gsi_qps);
	spin_unlock(&metaroce_gsi_lock);
	return err;
}

/* Unpublish; the caller then waits for the lookups in flight. */
void metaroce_gsi_del(struct metaroce_qp *qp)
{
	spin_lock(&metaroce_gsi_lock);
	list_del_rcu(&qp->gsi_node);
	spin_unlock(&metaroce_gsi_lock);
	synchronize_rcu();
}

/* The GSI QP of the device on @ndev, referenced, or NULL. */
static struct metaroce_qp *metaroce_gsi_get(const struct net_device *ndev)
{
	struct metaroce_qp *qp, *found = NULL;

	rcu_read_lock();
	list_for_each_entry_rcu(qp, &metaroce_gsi_qps, gsi_node) {
		if (qp->mdev->ndev == ndev) {
			if (refcount_inc_not_zero(&qp->refs))
				found = qp;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/* Sending ----------------------------------------------------------------- */

/* The payload of an UD message may be one path MTU (IBTA 9.8.3). */
static u32 metaroce_ud_max_msg(const struct metaroce_qp *qp)
{
	return ib_mtu_enum_to_int(metaroce_active_mtu(qp->mdev->ndev));
}

/* Gather the payload of @wr at @dst; SGEs were checked by the caller. */
static int metaroce_ud_gather(struct metaroce_qp *qp,
			      const struct ib_send_wr *wr, u8 *dst)
{
	int i, err;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sg = &wr->sg_list[i];
		struct metaroce_sge sge = {
			.addr = sg->addr,
			.length = sg->length,
			.lkey = sg->lkey,
		};

		if (!sg->length)
			continue;
		err = metaroce_sge_copy(qp, &sge, 1, 0, dst, sg->length,
					false);
		if (err)
			return err;
		dst += sg->length;
	}
	return 0;
}

/* Build the datagram of @wr (not its IP/UDP headers or ICRC). */
static struct sk_buff *metaroce_ud_build(struct metaroce_qp *qp,
					 const struct ib_send_wr *wr,
					 const u8 *inline_data, u32 length,
					 u32 qkey)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	const struct metaroce_ah *ah = to_mah(ud->ah);
	bool imm = wr->opcode == IB_WR_SEND_WITH_IMM;
	u32 hlen = MR_BTH_LEN + METAROCE_DETH_LEN +
		   (imm ? METAROCE_IMMDT_LEN : 0);
	u32 pad = (4 - (length & 3)) & 3;
	struct metaroce_ud_cb *cb;
	struct sk_buff *skb;
	u8 *b;

	skb = alloc_skb(METAROCE_UD_HEADROOM + hlen + length + pad +
			METAROCE_ICRC_LEN, GFP_ATOMIC);
	if (!skb)
		return ERR_PTR(-ENOMEM);
	skb_reserve(skb, METAROCE_UD_HEADROOM);
	b = skb_put(skb, hlen + length + pad + METAROCE_ICRC_LEN);

	b[0] = imm ? METAROCE_UD_SEND_ONLY_IMM : METAROCE_UD_SEND_ONLY;
	b[1] = (wr->send_flags & IB_SEND_SOLICITED ? METAROCE_BTH_SE : 0) |
	       pad << 4;
	put_unaligned_be16(IB_DEFAULT_PKEY_FULL, b + 2);
	put_unaligned_be32(ud->remote_qpn & MR_PSN_MASK, b + 4);
	put_unaligned_be32(qp->ud_psn & MR_PSN_MASK, b + 8);
	put_unaligned_be32(qkey, b + MR_BTH_LEN);
	put_unaligned_be32(qp->ib_qp.qp_num, b + MR_BTH_LEN + 4);
	if (imm)
		memcpy(b + MR_BTH_LEN + METAROCE_DETH_LEN, &wr->ex.imm_data,
		       METAROCE_IMMDT_LEN);
	if (inline_data) {
		memcpy(b + hlen, inline_data, length);
	} else {
		int err = metaroce_ud_gather(qp, wr, b + hlen);

		if (err) {
			kfree_skb(skb);
			return ERR_PTR(err);
		}
	}
	memset(b + hlen + length, 0, pad + METAROCE_ICRC_LEN);

	cb = METAROCE_UD_CB(skb);
	memset(cb, 0, sizeof(*cb));
	cb->ipv6 = ah->ipv6;
	cb->saddr = ah->saddr;
	cb->daddr = ah->daddr;
	cb->traffic_class = ah->traffic_class;
	cb->hop_limit = ah->hop_limit;
	cb->flow_label = ah->flow_label;
	/* RoCEv2 spreads flows by UDP source port: one per QP pair. */
	cb->sport = 0xc000 |
		    ((qp->ib_qp.qp_num ^ ud->remote_qpn) & 0x3fff);
	return skb;
}

/* The completion of a send WR, or its flush in ERR.  qp->lock held. */
static void metaroce_ud_send_done(struct metaroce_qp *qp,
				  const struct ib_send_wr *wr, u32 length,
				  enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = wr->wr_id,
		.status = status,
		.opcode = IB_WC_SEND,
		.byte_len = length,
		.qp = &qp->ib_qp,
	};

	if (status == IB_WC_SUCCESS && !qp->sq_sig_all &&
	    !(wr->send_flags & IB_SEND_SIGNALED))
		return;
	metaroce_cq_push(to_mcq(qp->ib_qp.send_cq), &wc,
			 status != IB_WC_SUCCESS);
}

/*
 * One send WR on a UD or GSI QP.  Any context, interrupts possibly off.
 * A message longer than the path MTU is refused with -EMSGSIZE.
 */
int metaroce_ud_post_send(struct metaroce_qp *qp, const struct ib_send_wr *wr)
{
	u8 inline_data[METAROCE_MAX_INLINE];
	bool is_inline = wr->send_flags & IB_SEND_INLINE;
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct sk_buff *skb;
	unsigned long flags;
	u32 length, qkey;
	int err = 0;

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	if (wr->send_flags & ~(IB_SEND_SIGNALED | IB_SEND_SOLICITED |
			       IB_SEND_INLINE))
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->sq.max_sge || !ud->ah ||
	    ud->ah->device != qp->ib_qp.device ||
	    ud->remote_qpn > MR_PSN_MASK)
		return -EINVAL;
	if (is_inline)
		err = metaroce_gather_inline(qp, wr, inline_data, &length);
	else
		err = metaroce_check_sges(qp->ib_qp.pd, wr->sg_list, wr->num_sge, 0,
					  &length);
	if (err)
		return -EINVAL;
	if (length > metaroce_ud_max_msg(qp))
		return -EMSGSIZE;

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state == IB_QPS_ERR) {
		metaroce_ud_send_done(qp, wr, 0, IB_WC_WR_FLUSH_ERR);
		goto unlock;
	}
	if (qp->state != IB_QPS_RTS) {
		err = -EINVAL;
		goto unlock;
	}
	/* IBTA 10.2.5: a Q_Key with the high bit set means the QP's own. */
	qkey = (ud->remote_qkey & 0x80000000) ? qp->attr.qkey :
						ud->remote_qkey;
	skb = metaroce_ud_build(qp, wr, is_inline ? inline_data : NULL,
				length, qkey);
	if (IS_ERR(skb)) {
		err = PTR_ERR(skb);
		goto unlock;
	}
	qp->ud_psn = (qp->ud_psn + 1) & MR_PSN_MASK;
	skb_queue_tail(&qp->ud_txq, skb);
	queue_work(system_unbound_wq, &qp->ud_tx_work);
	metaroce_ud_send_done(qp, wr, length, IB_WC_SUCCESS);
unlock:
	spin_unlock_irqrestore(&qp->lock, flags);
	return err;
}

/* Receiving --------------------------------------------------------------- */

/*
 * Place a datagram into the oldest posted receive and complete it.
 * qp->lock held; returns the counter the datagram goes to.
 */
static enum metaroce_counter metaroce_ud_deliver(struct metaroce_qp *qp,
						 struct sk_buff *skb,
						 const u8 *bth, u32 hlen,
						 u32 plen)
{
	struct metaroce_rwqe *wqe;
	u8 grh[METAROCE_GRH_LEN] = {};
	bool v4 = ip_hdr(skb)->version == 4;
	struct ib_wc wc = {
		.opcode = IB_WC_RECV,
		.qp = &qp->ib_qp,
		.src_qp = get_unaligned_be32(bth + MR_BTH_LEN + 4) &
			  MR_PSN_MASK,
		.wc_flags = IB_WC_GRH,
		.port_num = METAROCE_PORT,
		.pkey_index = 0,
	};

	if (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS)
		return METAROCE_CNT_RX_NO_QP;
	if (qp->srq)
		metaroce_srq_take(qp);
	if (qp->rq.tail == qp->rq.head)
		return METAROCE_CNT_RX_DROPPED;	/* UD: no RNR, just lost */
	wqe = metaroce_wq_entry(&qp->rq, qp->rq.tail);

	/* IBTA RoCEv2: the IPv4 header fills the last 20 bytes of the GRH. */
	if (v4)
		memcpy(grh + METAROCE_GRH_LEN - sizeof(struct iphdr),
		       ip_hdr(skb), sizeof(struct iphdr));
	else
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	if (bth[0] == METAROCE_UD_SEND_ONLY_IMM) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		memcpy(&wc.ex.imm_data, bth + MR_BTH_LEN + METAROCE_DETH_LEN,
		       METAROCE_IMMDT_LEN);
	}
	if (!qp->ib_qp.uobject) {
		/* ib_init_ah_attr_from_wc() reads the GRH area with it. */
		wc.wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		wc.network_hdr_type = v4 ? RDMA_NETWORK_IPV4 :
					   RDMA_NETWORK_IPV6;
	}

	wc.wr_id = wqe->wr_id;
	wc.byte_len = METAROCE_GRH_LEN + plen;
	if (wqe->length < METAROCE_GRH_LEN + plen)
		wc.status = IB_WC_LOC_LEN_ERR;
	else if (metaroce_sge_copy(qp, wqe->sge, wqe->num_sge, 0, grh,
				   METAROCE_GRH_LEN, true) ||
		 metaroce_sge_copy(qp, wqe->sge, wqe->num_sge,
				   METAROCE_GRH_LEN, (void *)(bth + hlen),
				   plen, true))
		wc.status = IB_WC_LOC_PROT_ERR;	/* MR gone since posting */
	if (wc.status != IB_WC_SUCCESS)
		wc.byte_len = 0;
	qp->rq.tail++;
	qp->rq.fed = qp->rq.tail;
	if (qp->srq)
		metaroce_srq_completed(qp->srq);
	metaroce_cq_push(to_mcq(qp->ib_qp.recv_cq), &wc,
			 bth[1] & METAROCE_BTH_SE);
	return METAROCE_CNT_RX_PACKETS;
}

/*
 * A RoCEv2 UD datagram from the 4791 socket (softirq, under RCU); skb data
 * starts at the UDP header and is linear.  Returns false if no QP of this
 * module is addressed (the caller accounts and frees the skb either way).
 */
bool metaroce_ud_rx(struct sk_buff *skb)
{
	const u8 *udp = skb->data, *bth = udp + sizeof(struct udphdr);
	size_t len = skb->len - sizeof(struct udphdr);
	enum metaroce_counter c;
	struct metaroce_qp *qp;
	u32 qpn, hlen, pad, plen, qkey;

	qpn = get_unaligned_be32(bth + 4) & MR_PSN_MASK;
	if (qpn == 1) {
		qp = metaroce_gsi_get(skb->dev);
	} else {
		qp = metaroce_qp_get(qpn);
		if (qp && (!metaroce_qp_is_ud(qp) ||
			   !net_eq(dev_net(qp->mdev->ndev),
				   dev_net(skb->dev)))) {
			metaroce_count(qp->mdev, METAROCE_CNT_RX_NO_QP);
			metaroce_qp_put(qp);
			return false;
		}
	}
	if (!qp)
		return false;

	hlen = MR_BTH_LEN + METAROCE_DETH_LEN +
	       (bth[0] == METAROCE_UD_SEND_ONLY_IMM ? METAROCE_IMMDT_LEN : 0);
	pad = (bth[1] >> 4) & 3;
	if (len < hlen + pad + METAROCE_ICRC_LEN ||
	    (ip_hdr(skb)->version == 4 &&
	     ip_hdr(skb)->ihl != sizeof(struct iphdr) / 4)) {
		c = METAROCE_CNT_RX_MALFORMED;
		goto out;
	}
	plen = len - hlen - pad - METAROCE_ICRC_LEN;
	if (!metaroce_icrc_ok(skb)) {
		c = METAROCE_CNT_RX_BAD_CRC;
		goto out;
	}
	if ((get_unaligned_be16(bth + 2) & 0x7fff) != 0x7fff) {
		c = METAROCE_CNT_RX_DROPPED;	/* not our (only) P_Key */
		goto out;
	}
	qkey = get_unaligned_be32(bth + MR_BTH_LEN);

	spin_lock_bh(&qp->lock);
	if (qkey != qp->attr.qkey)
		c = METAROCE_CNT_RX_BAD_QKEY;
	else
		c = metaroce_ud_deliver(qp, skb, bth, hlen, plen);
	spin_unlock_bh(&qp->lock);
out:
	metaroce_count(qp->mdev, c);
	metaroce_qp_put(qp);
	return true;
}
