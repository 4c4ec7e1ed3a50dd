/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * MetaRoCE kernel module: device and verbs objects shared by the files of
 * the module.
 *
 * Locking
 *   metaroce_devices_lock (a mutex, metaroce_main.c) protects the list of
 *   devices and each device's port_event_state.  It nests inside RTNL (the
 *   netdev notifier takes it with RTNL held) and is never held across
 *   ib_register_device(), which takes RTNL itself to fill the GID table.
 *
 * Lifetime
 *   A metaroce_dev is allocated by ib_alloc_device() and put on the device
 *   list before ib_register_device(); metaroce_dealloc_driver(), which
 *   ib_core calls exactly once from whichever path frees the device
 *   (failed registration, "rdma link delete", NETDEV_UNREGISTER, module
 *   unload), takes it off the list and drops the netdev reference.  Code
 *   that finds a device on the list must ib_device_try_get() it before
 *   acting on it: a device on the list may still be registering or already
 *   unregistering.
 *
 * Datagrams (metaroce_ud.c): UD and GSI QPs have no connection; a send
 * becomes one skb at post time, queued on qp->ud_txq and transmitted by
 * qp->ud_tx_work, because kernel consumers (ib_mad) post with interrupts
 * disabled, where neither spin_unlock_bh() nor a transmit may run.  For
 * the same reason the posting verbs take qp->lock with spin_lock_irqsave().
 *
 * Data path (metaroce_qp.c, metaroce_transport.c, metaroce_net.c)
 *   Each QP's struct mrc_conn, its software send and receive queues and its
 *   state are protected by qp->lock (a BH-safe spinlock): the core is not
 *   re-entrant, and it is driven from process context (post_send,
 *   post_recv, modify_qp), from the UDP receive softirq and from the QP's
 *   soft hrtimer.  Packets built under qp->lock are queued on qp->txq and
 *   transmitted after it is dropped, by one context at a time and in the
 *   order they were built (metaroce_qp_xmit()).  cq->lock nests inside
 *   qp->lock.  Receive and timer paths
 *   find a QP or MR by number and take a reference (refcount_inc_not_zero);
 *   destroy/dereg remove the number first and then wait for the references
 *   to drain, so no callback ever sees a freed object.  A QP is looked up
 *   under its xarray's lock (ib_core frees it right after destroy_qp), an
 *   MR under RCU (dereg_mr frees it after a grace period).
 */
#ifndef METAROCE_H
#define METAROCE_H

#include <linux/completion.h>
#include <linux/hrtimer.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <metaroce/core.h>
#include <uapi/rdma/ib_user_verbs.h>
#include <uapi/rdma/metaroce-abi.h>
#include <uapi/rdma/metaroce-netlink.h>

struct metaroce_sock;

/* Per-plane counters ("rdma statistic" planeN_*, the genl PLANE_GET). */
enum metaroce_plane_counter {
	METAROCE_PCNT_TX_PACKETS,
	METAROCE_PCNT_TX_ERRORS,
	METAROCE_PCNT_RX_PACKETS,
	METAROCE_PCNT_PATHS_DOWN,	/* QP paths taken out of service */
	METAROCE_PCNT_PATHS_UP,		/* QP paths put back */
	METAROCE_PCNT_TX_LINK_DOWN,	/* dropped: the plane's link was down */
	METAROCE_PLANE_NUM_COUNTERS
};

/*
 * A plane: one netdev of the device (metaroce_plane.c).  Slot 0 is the
 * device's own netdev (mdev->ndev, held by the device); the others hold
 * their netdev through @tracker.  @ndev is written under RTNL and
 * metaroce_devices_lock and read under RCU through the plane map.
 */
struct metaroce_plane {
	struct net_device *ndev;	/* NULL: slot free */
	netdevice_tracker tracker;
	bool admin_up;
	atomic64_t counters[METAROCE_PLANE_NUM_COUNTERS];
};

/*
 * The planes in service order: path i of a connection goes on
 * plane[i % num].  Replaced as a whole (RCU) when a plane is added or
 * removed; @usable (bit k: plane[k] is admin up and its netdev active)
 * is updated in place.
 */
struct metaroce_plane_map {
	struct rcu_head rcu;
	unsigned int num;
	unsigned long usable;
	struct metaroce_plane *plane[METAROCE_MAX_PLANES];
};

/* Device counters, "rdma statistic"; the order of metaroce_stat_descs. */
enum metaroce_counter {
	METAROCE_CNT_TX_PACKETS,
	METAROCE_CNT_TX_ERRORS,		/* no route, no memory, no socket */
	METAROCE_CNT_RX_PACKETS,	/* accepted by a QP's transport */
	METAROCE_CNT_RX_NO_QP,		/* unknown or not ready QP */
	METAROCE_CNT_RX_BAD_CRC,
	METAROCE_CNT_RX_MALFORMED,
	METAROCE_CNT_RX_OUT_OF_WINDOW,
	METAROCE_CNT_RX_DROPPED,	/* other transport refusals */
	METAROCE_CNT_REM_ACCESS_ERR,	/* remote writes refused */
	METAROCE_CNT_RX_ECN_CE,		/* arrived CE-marked (MR-CC-005) */
	METAROCE_CNT_RX_BAD_QKEY,	/* UD/GSI datagrams with a wrong Q_Key */
	METAROCE_CNT_RX_WRONG_TRANSPORT, /* RC packets of the other wire mode */
	METAROCE_CNT_TX_LINK_DOWN,	/* dropped: the plane's link was down */
	METAROCE_NUM_COUNTERS
};

/*
 * Transport counters ("rdma statistic", device totals and planeN_*): the
 * transport core's counts of the device's RC connections (struct
 * mrc_conn_stats for the device, the per-path shares in struct
 * mrc_path_stats for the plane of each path), of the live QPs and of those
 * reset or destroyed since the device (or the plane) appeared.  Computed
 * when asked, see metaroce_stats.c.
 */
enum metaroce_xport_counter {
	METAROCE_XCNT_RETRANSMITS,
	METAROCE_XCNT_SACKS_SENT,	/* ACKs carrying SACK ranges */
	METAROCE_XCNT_SACKS_RECEIVED,
	METAROCE_XCNT_RX_OUT_OF_ORDER,	/* data accepted past a hole */
	METAROCE_XCNT_RX_DUPLICATES,	/* data suppressed as duplicate */
	METAROCE_XCNT_PATH_FAILURES,	/* paths the core declared failed */
	METAROCE_XCNT_PATH_RECOVERIES,	/* failed paths re-admitted */
	METAROCE_XCNT_LOST,		/* data packets declared lost */
	METAROCE_XCNT_TIMEOUTS,		/* probe timeouts (PTO expiries) */
	METAROCE_XCNT_SPURIOUS_RETRANS,	/* losses the peer reported duplicate */
	METAROCE_XPORT_NUM_COUNTERS
};

/*
 * Transport counters of a connection as a whole (device totals only): the
 * loss recovery events that belong to no one path.
 */
enum metaroce_conn_counter {
	METAROCE_CCNT_TLP_PROBES,	/* tail loss probes */
	METAROCE_CCNT_RETRANS_UNCHARGED, /* losses not charged to retry_cnt */
	METAROCE_CCNT_GIVE_UPS,		/* RETRY_EXC by the give-up bound */
	METAROCE_CCNT_RETRY_EXHAUSTED,	/* RETRY_EXC by a packet's retry_cnt */
	METAROCE_CCNT_RSP_WAIT_GIVE_UPS, /* RETRY_EXC waiting for a response */
	METAROCE_CCNT_PATH_SILENCES,	/* paths found silent across paths */
	METAROCE_CONN_NUM_COUNTERS
};

/* Transport counts of one or more connections: device totals, per plane id. */
struct metaroce_xport_counts {
	u64 dev[METAROCE_XPORT_NUM_COUNTERS];
	u64 conn[METAROCE_CONN_NUM_COUNTERS];
	u64 plane[METAROCE_MAX_PLANES][METAROCE_XPORT_NUM_COUNTERS];
};

struct metaroce_dev {
	struct ib_device ib_dev;	/* first: ib_alloc_device() */
	struct net_device *ndev;	/* held through ndev_tracker */
	netdevice_tracker ndev_tracker;
	struct list_head list;		/* on metaroce_devices */
	/* Port state last announced by an IB event; metaroce_devices_lock. */
	enum ib_port_state port_event_state;
	struct ida pd_ida;		/* PD numbers */
	struct metaroce_sock *sock;	/* UDP socket of the netdev's netns */
	/* Wire mode of RC QPs created without one (sysfs default_transport). */
	enum mrc_mode default_mode;
	/*
	 * RTT a MetaRoCE-mode QP assumes on each path before its first sample
	 * (sysfs initial_rtt_ns; the core's default at creation).
	 */
	u64 initial_rtt_ns;
	/*
	 * PSNs a MetaRoCE-mode requester keeps outstanding at most (sysfs
	 * window; MR-FC-001), METAROCE_WINDOW_DEFAULT at creation.
	 */
	u32 window;
	/*
	 * Paths of a MetaRoCE-mode QP that asks for none (sysfs paths;
	 * mrc_config.num_paths), the core's default at creation.
	 */
	u32 paths;
	/*
	 * The queueing delay the delay signal aims at (sysfs
	 * cc_delay_target_ns, MR-CC-006) and whether only a loss that meets
	 * such a queue shrinks a window (sysfs cc_loss_gate, MR-CC-007), read
	 * when a MetaRoCE-mode QP connects.
	 */
	u64 cc_delay_target_ns;
	bool cc_loss_gate;
	/*
	 * How long a message's final ACK waits for a reply to carry it
	 * (sysfs ack_hold_ns, MR-LOSS-014), read when a QP connects.
	 */
	u64 ack_hold_ns;
	atomic_t num_mr;
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_srq;
	atomic64_t counters[METAROCE_NUM_COUNTERS];
	/*
	 * The transport counts of connections freed so far (QP reset or
	 * destroyed), and what keeps a statistics query from seeing a
	 * connection both live and retired, or neither (metaroce_stats.c).
	 * Nests outside qp->lock.
	 */
	struct mutex stats_mutex;
	struct metaroce_xport_counts retired;
	/* Slots by plane id; see metaroce_plane.c for the locking. */
	struct metaroce_plane planes[METAROCE_MAX_PLANES];
	struct metaroce_plane_map __rcu *plane_map;
};

static inline void metaroce_count(struct metaroce_dev *mdev,
				  enum metaroce_counter c)
{
	atomic64_inc(&mdev->counters[c]);
}

static inline void metaroce_plane_count(struct metaroce_plane *plane,
					enum metaroce_plane_counter c)
{
	atomic64_inc(&plane->counters[c]);
}

/*
 * A memory region.  User MRs pin their pages with ib_umem; keys index
 * metaroce_mrs (metaroce_mr.c).
 */
struct metaroce_mr {
	struct ib_mr ib_mr;
	struct ib_umem *umem;
	struct page **pages;		/* umem pages, in address order */
	unsigned long npages;
	u32 page_offset;		/* of iova within pages[0] */
	int access;			/* IB_ACCESS_* */
	refcount_t refs;		/* lookups in flight + 1 while keyed */
	struct completion released;
	struct rcu_head rcu;		/* freed after lookups under RCU */
};

/*
 * A completion queue (metaroce_cq.c): a kernel ring of struct ib_wc, or,
 * for a process that asked for it, a ring of struct ib_uverbs_wc mapped
 * into it (metaroce-abi.h, "Mapped rings").
 */
struct metaroce_cq {
	struct ib_cq ib_cq;
	spinlock_t lock;		/* ring, notify, overflow */
	struct ib_wc *ring;		/* kernel ring, or NULL */
	u32 size;			/* entries */
	u32 head;			/* next to poll */
	u32 count;			/* entries queued */
	/* Mapped ring: the shared header, its entries, and its mapping. */
	struct metaroce_ring_hdr *uhdr;
	struct ib_uverbs_wc *uring;
	struct metaroce_mmap *umap;
	u32 uprod;			/* ours; never read from uhdr */
	u8 notify;			/* IB_CQ_SOLICITED / IB_CQ_NEXT_COMP / 0 */
	bool overflowed;		/* IB_EVENT_CQ_ERR delivered */
};

struct metaroce_sge {
	u64 addr;
	u32 length;
	u32 lkey;
};

/* A send work request in the software send queue. */
struct metaroce_swqe {
	u64 wr_id;
	u32 length;			/* bytes of the message */
	u8 opcode;			/* enum ib_wr_opcode */
	u8 status;			/* completion, once done */
	bool signaled;
	bool done;			/* completed by the transport */
	bool inline_data;		/* payload in inline_buf */
	bool fence;			/* IB_SEND_FENCE */
	u32 num_sge;
	u64 remote_addr;
	u32 rkey;
	u32 imm_data;			/* *_WITH_IMM, host order */
	u64 compare_add;		/* atomics */
	u64 swap;
	u8 *inline_buf;			/* METAROCE_MAX_INLINE bytes */
	struct metaroce_sge sge[];	/* num_sge; the queue's max_sge room */
};

/* A receive work request in the software receive queue. */
struct metaroce_rwqe {
	u64 wr_id;
	u32 length;			/* sum of the SGEs */
	u32 byte_len;			/* received, once done */
	u8 status;
	bool done;
	u8 opcode;			/* MRC_OP_RECV or _RECV_RDMA_WITH_IMM */
	u8 wc_flags;			/* MRC_WC_F_IMM */
	u32 imm_data;			/* host order */
	u32 num_sge;
	struct metaroce_sge sge[];
};

/*
 * A work queue: a ring of entries of @stride bytes.  [tail, fed) have been
 * handed to the transport core, [fed, head) wait for room in it.
 */
struct metaroce_wq {
	void *buf;
	u32 size;			/* entries, a power of two */
	u32 max_sge;
	size_t stride;
	u32 head, fed, tail;		/* free-running indices */
};

/*
 * A work queue mapped into the process that owns the QP (metaroce_ring.c,
 * metaroce-abi.h "Work queue rings"): a mailbox of WRs the process posts
 * and the doorbell moves into the QP's own queue.  @mutex serialises the
 * doorbells; it is taken outside qp->lock.
 */
struct metaroce_wq_ring {
	struct metaroce_ring_hdr *hdr;	/* NULL: the QP has no such ring */
	void *entries;
	struct metaroce_mmap *umap;
	void *scratch;			/* one entry, copied out of reach */
	u32 size;			/* entries, a power of two */
	u32 stride;			/* bytes per entry */
	u32 consumer;			/* ours; published to hdr->consumer */
	bool takes;			/* ours; hdr->kernel_takes */
	struct mutex mutex;
};

/* A shared receive queue (metaroce_srq.c). */
struct metaroce_srq {
	struct ib_srq ib_srq;
	struct metaroce_dev *mdev;
	spinlock_t lock;		/* rq (head, tail) and limit */
	struct metaroce_wq rq;		/* [tail, head): not taken by a QP */
	u32 limit;			/* armed srq_limit, 0: disarmed */
	atomic_t outstanding;		/* posted and not completed */
	atomic_t num_qps;		/* attached */
};

/*
 * The status of a receive WQE an SRQ-attached QP gave back to its SRQ:
 * its slot is passed over without a completion.
 */
#define METAROCE_RWQE_GIVEN_BACK	0xff

struct metaroce_qp {
	struct ib_qp ib_qp;
	struct metaroce_dev *mdev;
	struct metaroce_srq *srq;	/* receives from it, or NULL */
	struct mutex state_mutex;	/* modify_qp / query_qp */
	spinlock_t lock;		/* everything below; see "Data path" */
	enum ib_qp_state state;
	struct ib_qp_attr attr;		/* as last modified (query_qp) */
	struct metaroce_wq sq, rq;
	/* Mapped work queues of a process's RC QP, or hdr NULL. */
	struct metaroce_wq_ring sq_ring, rq_ring;
	u8 *inline_bufs;		/* sq.size * METAROCE_MAX_INLINE */
	u32 max_inline;
	bool sq_sig_all;
	struct mrc_conn *conn;		/* from RTS until reset/destroy */
	enum mrc_mode mode;
	u32 cfg_paths;			/* asked at creation, 0: default */
	u32 cc_flags;			/* MRC_CC_*, fixed at creation */
	u32 num_paths;			/* of the connection */
	__be32 saddr, daddr;		/* IPv4, from the AV at RTR */
	u16 src_port_base;		/* UDP source port of path 0 */
	bool dead;			/* destroy started: no more work */
	struct hrtimer timer;		/* armed at mrc_next_deadline() */
	/* UD and GSI QPs (metaroce_ud.c). */
	u32 ud_psn;			/* BTH PSN of the next datagram */
	struct sk_buff_head ud_txq;	/* built, not sent yet; own lock */
	struct work_struct ud_tx_work;	/* sends ud_txq */
	struct list_head gsi_node;	/* on metaroce_gsi_qps (RCU) */
	struct sk_buff *spare_skb;	/* allocated, not filled yet */
	/* RC packets built, in order, not handed to the network yet. */
	struct sk_buff_head txq;
	bool tx_busy;			/* a context is sending txq */
	/* Queued for a run after the receive batch (metaroce_transport.c). */
	struct list_head rx_batch_node;
	bool rx_batched;
	refcount_t refs;		/* lookups in flight + 1 while numbered */
	struct completion released;
};

/*
 * An address handle: the RoCEv2 addressing of a datagram, taken from the
 * GRH of the rdma_ah_attr (IPv4-mapped GIDs give IPv4, others IPv6).
 */
struct metaroce_ah {
	struct ib_ah ib_ah;
	bool ipv6;
	struct in6_addr saddr, daddr;	/* IPv4: ::ffff:a.b.c.d */
	u8 traffic_class;
	u8 hop_limit;
	u32 flow_label;
};

struct metaroce_ucontext {
	struct ib_ucontext ib_uc;
};

struct metaroce_pd {
	struct ib_pd ib_pd;
	u32 pdn;
};

static inline struct metaroce_dev *to_mdev(struct ib_device *ib_dev)
{
	return container_of(ib_dev, struct metaroce_dev, ib_dev);
}

static inline struct metaroce_pd *to_mpd(struct ib_pd *ib_pd)
{
	return container_of(ib_pd, struct metaroce_pd, ib_pd);
}

static inline struct metaroce_mr *to_mmr(struct ib_mr *ib_mr)
{
	return container_of(ib_mr, struct metaroce_mr, ib_mr);
}

static inline struct metaroce_cq *to_mcq(struct ib_cq *ib_cq)
{
	return container_of(ib_cq, struct metaroce_cq, ib_cq);
}

static inline struct metaroce_ah *to_mah(struct ib_ah *ib_ah)
{
	return container_of(ib_ah, struct metaroce_ah, ib_ah);
}

static inline struct metaroce_srq *to_msrq(struct ib_srq *ib_srq)
{
	return container_of(ib_srq, struct metaroce_srq, ib_srq);
}

static inline bool metaroce_qp_is_ud(const struct metaroce_qp *qp)
{
	return qp->ib_qp.qp_type == IB_QPT_UD || qp->ib_qp.qp_type == IB_QPT_GSI;
}

static inline struct metaroce_qp *to_mqp(struct ib_qp *ib_qp)
{
	return container_of(ib_qp, struct metaroce_qp, ib_qp);
}

/* What a packet built by the transport carries to metaroce_xmit(). */
struct metaroce_skb_cb {
	u32 path;
};
#define METAROCE_SKB_CB(skb) ((struct metaroce_skb_cb *)(skb)->cb)

/*
 * The addressing of a RoCEv2 datagram: what one built by metaroce_ud.c
 * carries to metaroce_ud_xmit() in skb->cb, and what metaroce_xmit()
 * gives a RoCEv2-mode RC packet (metaroce_roce_out() in both cases).
 */
struct metaroce_ud_cb {
	struct in6_addr saddr, daddr;	/* IPv4-mapped unless ipv6 */
	u32 flow_label;
	u16 sport;			/* UDP source port */
	u8 traffic_class;
	u8 hop_limit;
	bool ipv6;
};
#define METAROCE_UD_CB(skb) ((struct metaroce_ud_cb *)(skb)->cb)

static inline void *metaroce_wq_entry(const struct metaroce_wq *wq, u32 idx)
{
	return wq->buf + (idx & (wq->size - 1)) * wq->stride;
}

/* metaroce_main.c */
extern struct mutex metaroce_devices_lock;
extern struct list_head metaroce_devices;
void metaroce_dev_list_del(struct metaroce_dev *mdev);

/* metaroce_verbs.c */
int metaroce_dev_add(const char *ibdev_name, struct net_device *ndev);
struct metaroce_mmap;
void *metaroce_mmap_create(struct ib_udata *udata, size_t size,
			   struct metaroce_mmap **out);
u64 metaroce_mmap_offset(const struct metaroce_mmap *m);
u64 metaroce_mmap_length(const struct metaroce_mmap *m);
void metaroce_mmap_remove(struct metaroce_mmap *m);
int metaroce_udata_req(struct ib_udata *udata, void *req, size_t size);

/* metaroce_plane.c */
int metaroce_planes_init(struct metaroce_dev *mdev);
void metaroce_planes_release(struct metaroce_dev *mdev);
bool metaroce_netdev_in_use_locked(const struct net_device *ndev);
int metaroce_plane_add(struct metaroce_dev *mdev, struct net_device *ndev);
int metaroce_plane_del(struct metaroce_dev *mdev, struct net_device *ndev);
int metaroce_plane_set_admin(struct metaroce_dev *mdev,
			     struct net_device *ndev, bool up);
void metaroce_planes_netdev_event(struct net_device *ndev,
				  unsigned long event);
struct metaroce_plane *metaroce_plane_for_path(struct metaroce_dev *mdev,
					       unsigned int path);
void metaroce_plane_count_rx(struct metaroce_dev *mdev, int ifindex);
unsigned int metaroce_num_planes(struct metaroce_dev *mdev);
void metaroce_qp_apply_planes(struct metaroce_qp *qp, u64 now);

/* metaroce_genl.c */
int metaroce_genl_init(void);
void metaroce_genl_exit(void);

/* metaroce_mr.c */
struct ib_mr *metaroce_reg_user_mr(struct ib_pd *ib_pd, u64 start, u64 length,
				   u64 iova, int access, struct ib_udata *udata);
int metaroce_dereg_mr(struct ib_mr *ib_mr, struct ib_udata *udata);
struct metaroce_mr *metaroce_mr_get(struct ib_pd *pd, u32 key, bool remote,
				    int access, u64 iova, u64 len);
void metaroce_mr_put(struct metaroce_mr *mr);
int metaroce_mr_atomic(struct metaroce_mr *mr, u64 iova, bool cmp_swap,
		       u64 compare_add, u64 swap, u64 *orig);
int metaroce_mr_copy(struct metaroce_mr *mr, u64 iova, void *buf, u32 len,
		     bool to_mr);
struct ib_mr *metaroce_get_dma_mr(struct ib_pd *ib_pd, int access);

/* metaroce_cq.c */
extern const struct ib_device_ops metaroce_cq_ops;
void metaroce_cq_push(struct metaroce_cq *cq, const struct ib_wc *wc,
		      bool solicited);

/* metaroce_qp.c */
extern const struct ib_device_ops metaroce_qp_ops;
struct metaroce_qp *metaroce_qp_get(u32 qpn);
struct metaroce_qp *metaroce_qp_get_next(unsigned long *qpn);
void metaroce_qp_put(struct metaroce_qp *qp);
int metaroce_wq_init(struct metaroce_wq *wq, u32 max_wr, u32 max_sge,
		     size_t entry, size_t sge);
int metaroce_check_sges(struct ib_pd *pd, const struct ib_sge *sg,
			int num_sge, int access, u32 *length);
void metaroce_rwqe_init(struct metaroce_rwqe *wqe, const struct ib_recv_wr *wr,
			u32 length);
int metaroce_gather_inline(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			   u8 *buf, u32 *length);
/* An inline payload already in kernel memory. */
struct metaroce_inline {
	const void *data;
	u32 len;
};
int metaroce_post_one_send(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			   const struct metaroce_inline *given);
int metaroce_post_one_recv(struct metaroce_qp *qp, const struct ib_recv_wr *wr);
int metaroce_post_one_recv_locked(struct metaroce_qp *qp,
				  const struct ib_recv_wr *wr, bool strict);
void metaroce_rq_posted(struct metaroce_qp *qp);

/* metaroce_ring.c */
struct metaroce_create_qp_resp;
int metaroce_qp_map_rings(struct metaroce_qp *qp, struct ib_udata *udata,
			  struct metaroce_create_qp_resp *resp);
void metaroce_qp_unmap_rings(struct metaroce_qp *qp);
int metaroce_sq_ring_doorbell(struct metaroce_qp *qp);
int metaroce_rq_ring_doorbell(struct metaroce_qp *qp);
u32 metaroce_rq_ring_take(struct metaroce_qp *qp);
void metaroce_rq_ring_start(struct metaroce_qp *qp);
void metaroce_rq_ring_stop(struct metaroce_qp *qp);
void metaroce_rq_ring_discard(struct metaroce_qp *qp);
void metaroce_rq_ring_retired(struct metaroce_qp *qp);

/* metaroce_srq.c */
extern const struct ib_device_ops metaroce_srq_ops;
void metaroce_srq_take(struct metaroce_qp *qp);
void metaroce_srq_give_back(struct metaroce_qp *qp, bool all);
void metaroce_srq_completed(struct metaroce_srq *srq);

/* metaroce_ud.c */
extern const struct ib_device_ops metaroce_ah_ops;
void metaroce_ud_init(struct metaroce_qp *qp);
int metaroce_gsi_add(struct metaroce_qp *qp);
void metaroce_gsi_del(struct metaroce_qp *qp);
int metaroce_ud_post_send(struct metaroce_qp *qp, const struct ib_send_wr *wr);
bool metaroce_ud_rx(struct sk_buff *skb);
bool metaroce_is_ud_opcode(u8 opcode);

/* metaroce_transport.c */
int metaroce_conn_start(struct metaroce_qp *qp);
int metaroce_conn_start_requester(struct metaroce_qp *qp);
void metaroce_conn_close(struct metaroce_qp *qp);
void metaroce_conn_stop(struct metaroce_qp *qp);
int metaroce_sge_copy(struct metaroce_qp *qp, const struct metaroce_sge *sge,
		      u32 num_sge, u32 offset, void *buf, u32 len, bool to_mr);
void metaroce_qp_run(struct metaroce_qp *qp);
void metaroce_qp_xmit(struct metaroce_qp *qp);
void metaroce_rx_batch_init(void);
void metaroce_rx_batch_exit(void);
void metaroce_qp_flush(struct metaroce_qp *qp);
void metaroce_qp_rx(struct metaroce_qp *qp, const void *pkt, size_t len,
		    unsigned int rx_flags);
enum hrtimer_restart metaroce_qp_timer(struct hrtimer *timer);
struct metaroce_qp_stats;
void metaroce_qp_get_stats(struct metaroce_qp *qp, struct metaroce_qp_stats *st);

/* metaroce_uapi.c */
extern const struct uapi_definition metaroce_uapi_defs[];

/* metaroce_stats.c */
extern const struct ib_device_ops metaroce_stats_ops;
void metaroce_stats_retire(struct metaroce_qp *qp);
void metaroce_stats_plane_reset(struct metaroce_dev *mdev, unsigned int id);

/* metaroce_main.c */
extern enum mrc_mode metaroce_transport_mode;
int metaroce_parse_transport(const char *name, enum mrc_mode *mode);
const char *metaroce_transport_name(enum mrc_mode mode);

/* metaroce_net.c */
int metaroce_sock_get(struct metaroce_dev *mdev);
void metaroce_sock_put(struct metaroce_dev *mdev);
void metaroce_xmit(struct metaroce_qp *qp, struct sk_buff_head *out);
void metaroce_ud_xmit(struct metaroce_dev *mdev, struct sk_buff *skb);
bool metaroce_icrc_ok(const struct sk_buff *skb);
bool metaroce_can_rocev2(const struct metaroce_dev *mdev);
enum ib_port_state metaroce_port_state(const struct net_device *ndev);
enum ib_mtu metaroce_active_mtu(const struct net_device *ndev);
void metaroce_port_update(struct metaroce_dev *mdev);
void metaroce_dev_registered(struct metaroce_dev *mdev);
struct metaroce_dev *metaroce_find_dev_locked(const struct net_device *ndev);
int metaroce_net_init(void);
void metaroce_net_exit(void);

#endif /* METAROCE_H */
