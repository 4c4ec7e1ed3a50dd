// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: the ib_device, its query verbs, user contexts and protection
 * domains; the other objects live in metaroce_{mr,cq,qp,srq,ud}.c.
 *
 * With get_dma_mr ib_core treats the device as a kernel verbs provider:
 * ib_mad creates the GSI QP (metaroce_ud.c) and ib_cm / rdma_cm run
 * their connection setup over it.
 */

#include <linux/mm.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "metaroce_param.h"

/*
 * The driver data of IB_USER_VERBS_EX_CMD_QUERY_DEVICE: what
 * metarocedv_query_device() reports.  Read live, as planes, the default
 * wire mode and UDP 4791 change while the device exists.
 */
static int metaroce_query_device_resp(struct metaroce_dev *mdev,
				      struct ib_udata *udata)
{
	struct metaroce_query_device_resp resp = {
		.caps = METAROCE_DEVICE_CAP_METAROCE |
			METAROCE_DEVICE_CAP_QP_STATS,
		.default_transport = READ_ONCE(mdev->default_mode),
		.max_planes = METAROCE_MAX_PLANES,
		.num_planes = metaroce_num_planes(mdev),
		.max_paths = MRC_MAX_PATHS,
	};

	static_assert(METAROCE_MAX_QP_PATHS == MRC_MAX_PATHS);
	resp.default_paths = READ_ONCE(mdev->paths);
	resp.max_window = READ_ONCE(mdev->window);
	if (metaroce_can_rocev2(mdev))
		resp.caps |= METAROCE_DEVICE_CAP_ROCEV2;
	return ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
}

static int metaroce_query_device(struct ib_device *ib_dev,
				 struct ib_device_attr *attr,
				 struct ib_udata *udata)
{
	int err;

	/* No request data is defined: a newer provider's must be zero. */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (udata->outlen) {
		err = metaroce_query_device_resp(to_mdev(ib_dev), udata);
		if (err)
			return err;
	}

	*attr = (struct ib_device_attr) {
		.sys_image_guid = ib_dev->node_guid,
		.max_mr_size = METAROCE_MAX_MR_SIZE,
		.page_size_cap = METAROCE_PAGE_SIZE_CAP,
		.vendor_id = METAROCE_VENDOR_ID,
		.vendor_part_id = METAROCE_VENDOR_PART_ID,
		.hw_ver = METAROCE_HW_VER,
		.max_qp = METAROCE_MAX_QP,
		.max_qp_wr = METAROCE_MAX_QP_WR,
		/* "rdma link delete" may remove the device. */
		.kernel_cap_flags = IBK_ALLOW_USER_UNREG,
		.max_send_sge = METAROCE_MAX_SGE,
		.max_recv_sge = METAROCE_MAX_SGE,
		.max_sge_rd = METAROCE_MAX_SGE_RD,
		.max_cq = METAROCE_MAX_CQ,
		.max_cqe = METAROCE_MAX_CQE,
		.max_mr = METAROCE_MAX_MR,
		.max_pd = METAROCE_MAX_PD,
		.max_qp_rd_atom = METAROCE_MAX_QP_RD_ATOM,
		.max_qp_init_rd_atom = METAROCE_MAX_QP_INIT_RD_ATOM,
		.atomic_cap = IB_ATOMIC_HCA,
		.max_srq = METAROCE_MAX_SRQ,
		.max_srq_wr = METAROCE_MAX_SRQ_WR,
		.max_srq_sge = METAROCE_MAX_SRQ_SGE,
		.max_ah = METAROCE_MAX_AH,
		.max_pkeys = METAROCE_MAX_PKEYS,
		.local_ca_ack_delay = METAROCE_LOCAL_CA_ACK_DELAY,
	};
	return 0;
}

/* ib_core has zeroed @attr. */
static int metaroce_query_port(struct ib_device *ib_dev, u32 port_num,
			       struct ib_port_attr *attr)
{
	struct net_device *ndev = to_mdev(ib_dev)->ndev;

	attr->state = metaroce_port_state(ndev);
	if (ib_get_eth_speed(ib_dev, port_num, &attr->active_speed,
			     &attr->active_width)) {
		/*
		 * ib_core no longer hands out a netdev that is unregistering:
		 * the device is about to go; report the port down rather than
		 * fail the query (ib_cache would log every failure).
		 */
		attr->state = IB_PORT_DOWN;
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
				   IB_PORT_PHYS_STATE_LINK_UP :
				   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = METAROCE_PORT_MAX_MTU;
	attr->active_mtu = metaroce_active_mtu(ndev);
	attr->gid_tbl_len = METAROCE_PORT_GID_TBL_LEN;
	attr->max_msg_sz = METAROCE_PORT_MAX_MSG_SZ;
	attr->pkey_tbl_len = METAROCE_PORT_PKEY_TBL_LEN;
	attr->max_vl_num = METAROCE_PORT_MAX_VL_NUM;
	return 0;
}

static int metaroce_get_port_immutable(struct ib_device *ib_dev, u32 port_num,
				       struct ib_port_immutable *immutable)
{
	immutable->pkey_tbl_len = METAROCE_PORT_PKEY_TBL_LEN;
	immutable->gid_tbl_len = METAROCE_PORT_GID_TBL_LEN;
	/* ib_core fills the RoCEv2 GID table from the netdev's addresses. */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer metaroce_get_link_layer(struct ib_device *ib_dev,
						    u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int metaroce_query_pkey(struct ib_device *ib_dev, u32 port_num,
			       u16 index, u16 *pkey)
{
	if (index >= METAROCE_PORT_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int metaroce_alloc_ucontext(struct ib_ucontext *ib_uc,
				   struct ib_udata *udata)
{
	struct metaroce_alloc_ucontext_resp resp = {
		.abi_version = METAROCE_UVERBS_ABI_VERSION,
		.caps = METAROCE_UCTX_CAP_CQ_RING | METAROCE_UCTX_CAP_QP_RING,
	};

	/* No request fields are defined: a newer provider's must be zero. */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	return ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
}

/*
 * Copy a driver request tail into @req (@size bytes, zeroed by the
 * caller): a request shorter than @req lacks the fields past its end (an
 * older provider), a longer one must be zero beyond it (a newer provider
 * that asks for nothing we do not know).
 */
int metaroce_udata_req(struct ib_udata *udata, void *req, size_t size)
{
	if (!udata || !udata->inlen)
		return 0;
	if (udata->inlen > size &&
	    !ib_is_udata_cleared(udata, size, udata->inlen - size))
		return -EINVAL;
	return ib_copy_from_udata(req, udata, min(udata->inlen, size));
}

/*
 * Rings mapped into a process (metaroce-abi.h, "Mapped rings"): zeroed
 * vmalloc_user() memory, found by its ucontext mmap offset.  The object
 * that owns the ring removes the entry when it is destroyed; the memory is
 * freed by metaroce_mmap_free() once no mmap() of it is in progress, and a
 * mapping that outlives the object keeps its pages (remap_vmalloc_range()
 * takes a reference on each) but no longer sees any writes.
 */
struct metaroce_mmap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
};

void *metaroce_mmap_create(struct ib_udata *udata, size_t size,
			   struct metaroce_mmap **out)
{
	struct metaroce_ucontext *uc = rdma_udata_to_drv_context(
		udata, struct metaroce_ucontext, ib_uc);
	struct metaroce_mmap *m;
	int err;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	size = PAGE_ALIGN(size);
	m->buf = vmalloc_user(size);
	if (!m->buf) {
		kfree(m);
		return ERR_PTR(-ENOMEM);
	}
	err = rdma_user_mmap_entry_insert(&uc->ib_uc, &m->rdma, size);
	if (err) {
		vfree(m->buf);
		kfree(m);
		return ERR_PTR(err);
	}
	*out = m;
	return m->buf;
}

u64 metaroce_mmap_offset(const struct metaroce_mmap *m)
{
	return rdma_user_mmap_get_offset(&m->rdma);
}

u64 metaroce_mmap_length(const struct metaroce_mmap *m)
{
	return m->rdma.npages << PAGE_SHIFT;
}

/* The owner is done with the ring: no more mmap() of it, free it later. */
void metaroce_mmap_remove(struct metaroce_mmap *m)
{
	if (m)
		rdma_user_mmap_entry_remove(&m->rdma);
}

static void metaroce_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct metaroce_mmap *m = container_of(entry, struct metaroce_mmap,
					       rdma);

	vfree(m->buf);
	kfree(m);
}

static int metaroce_mmap(struct ib_ucontext *ib_uc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	int err;

	/* A ring is data: never executable. */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* Looks the offset up and checks the length is the whole ring. */
	entry = rdma_user_mmap_entry_get(ib_uc, vma);
	if (!entry)
		return -EINVAL;
	err = remap_vmalloc_range(vma,
				  container_of(entry, struct metaroce_mmap,
					       rdma)->buf, 0);
	rdma_user_mmap_entry_put(entry);
	return err;
}

static void metaroce_dealloc_ucontext(struct ib_ucontext *ib_uc)
{
	/* Nothing of our own yet; ib_core frees the object. */
}

static void metaroce_disassociate_ucontext(struct ib_ucontext *ib_uc)
{
	/*
	 * Having this op lets ib_uverbs destroy a context's objects when the
	 * device is unregistered instead of waiting for the process to close
	 * it, so "rdma link delete" and netdev removal do not block on
	 * userspace.  The objects' destroy removes their mapped rings; a
	 * mapping the process still has keeps its pages, which nothing
	 * writes any more (see metaroce_mmap_create()).
	 */
}

static int metaroce_alloc_pd(struct ib_pd *ib_pd, struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ib_pd->device);
	struct metaroce_pd *pd = to_mpd(ib_pd);
	struct metaroce_alloc_pd_resp resp = {};
	int id, err;

	id = ida_alloc_max(&mdev->pd_ida, METAROCE_MAX_PD - 1, GFP_KERNEL);
	if (id < 0)
		return id;	/* -ENOSPC: max_pd reached */
	pd->pdn = id;

	if (udata) {
		resp.pdn = pd->pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err) {
			ida_free(&mdev->pd_ida, pd->pdn);
			return err;
		}
	}
	return 0;
}

static int metaroce_dealloc_pd(struct ib_pd *ib_pd, struct ib_udata *udata)
{
	struct metaroce_pd *pd = to_mpd(ib_pd);

	ida_free(&to_mdev(ib_pd->device)->pd_ida, pd->pdn);
	return 0;
}

/* The single place a device's own resources are released; see metaroce.h. */
static void metaroce_dealloc_driver(struct ib_device *ib_dev)
{
	struct metaroce_dev *mdev = to_mdev(ib_dev);

	metaroce_dev_list_del(mdev);
	ida_destroy(&mdev->pd_ida);
	metaroce_planes_release(mdev);
	metaroce_sock_put(mdev);
	netdev_put(mdev->ndev, &mdev->ndev_tracker);
}

/*
 * /sys/class/infiniband/<dev>/metaroce_abi_version: how the provider
 * recognises the device, whose driver id is RDMA_DRIVER_UNKNOWN.
 */
static ssize_t metaroce_abi_version_show(struct device *device,
					 struct device_attribute *attr,
					 char *buf)
{
	return sysfs_emit(buf, "%u\n", METAROCE_UVERBS_ABI_VERSION);
}
static DEVICE_ATTR_RO(metaroce_abi_version);

/* The device of a sysfs attribute of the ib_device. */
static struct metaroce_dev *sysfs_to_mdev(struct device *device)
{
	return rdma_device_to_drv_device(device, struct metaroce_dev, ib_dev);
}

/* A number written to a sysfs attribute, in [min, max]; else -EINVAL. */
static int sysfs_parse_bounded(const char *buf, u64 min, u64 max, u64 *v)
{
	if (kstrtou64(buf, 0, v) || *v < min || *v > max)
		return -EINVAL;
	return 0;
}

/*
 * A read-write number attribute of the device, field of struct
 * metaroce_dev (an unsigned integer that holds max), that accepts
 * [min, max] (else -EINVAL and no change).
 */
#define METAROCE_DEV_ATTR_NUM(field, min, max)				\
static ssize_t field##_show(struct device *device,			\
			    struct device_attribute *attr, char *buf)	\
{									\
	u64 v = READ_ONCE(sysfs_to_mdev(device)->field);		\
									\
	return sysfs_emit(buf, "%llu\n", v);				\
}									\
static ssize_t field##_store(struct device *device,			\
			     struct device_attribute *attr,		\
			     const char *buf, size_t count)		\
{									\
	u64 v;								\
									\
	if (sysfs_parse_bounded(buf, min, max, &v))			\
		return -EINVAL;						\
	WRITE_ONCE(sysfs_to_mdev(device)->field, v);			\
	return count;							\
}									\
static DEVICE_ATTR_RW(field)

/*
 * /sys/class/infiniband/<dev>/default_transport: the wire mode of the RC
 * QPs created from now on without a requested one (MR-COMPAT-011).  QPs
 * that exist keep theirs.
 */
static ssize_t default_transport_show(struct device *device,
				      struct device_attribute *attr, char *buf)
{
	struct metaroce_dev *mdev = sysfs_to_mdev(device);

	return sysfs_emit(buf, "%s\n",
			  metaroce_transport_name(READ_ONCE(mdev->default_mode)));
}

static ssize_t default_transport_store(struct device *device,
				       struct device_attribute *attr,
				       const char *buf, size_t count)
{
	struct metaroce_dev *mdev = sysfs_to_mdev(device);
	enum mrc_mode mode;

	if (metaroce_parse_transport(buf, &mode))
		return -EINVAL;
	if (mode == MRC_MODE_ROCEV2 && !metaroce_can_rocev2(mdev))
		return -EADDRINUSE;
	WRITE_ONCE(mdev->default_mode, mode);
	return count;
}
static DEVICE_ATTR_RW(default_transport);

/*
 * /sys/class/infiniband/<dev>/initial_rtt_ns: the RTT the MetaRoCE-mode
 * QPs connected from now on assume on every path before its first sample
 * (struct mrc_config.initial_rtt_ns: the PTO and tail-loss-probe timers
 * of an unsampled path, MR-LOSS-006/010, MR-FAIL-005).  A peer known to
 * answer slowly (a compliance suite in an emulated guest) sets it so that
 * those timers do not fire before its first answer can arrive.
 */
METAROCE_DEV_ATTR_NUM(initial_rtt_ns, METAROCE_INITIAL_RTT_MIN_NS,
		      METAROCE_INITIAL_RTT_MAX_NS);

/*
 * /sys/class/infiniband/<dev>/window: how many PSNs the MetaRoCE-mode QPs
 * connected from now on keep outstanding at most (struct
 * mrc_config.window, MR-FC-001), 1 .. MRC_MAX_WINDOW.  Every responder
 * accepts MRC_MAX_WINDOW whatever its own setting, so the two ends need
 * not agree.  Benchmarks lower it to measure what the window buys.
 */
METAROCE_DEV_ATTR_NUM(window, 1, MRC_MAX_WINDOW);

/*
 * /sys/class/infiniband/<dev>/paths: how many paths the MetaRoCE-mode QPs
 * connected from now on without a number of their own (every ibv_* program;
 * metarocedv_create_qp() without METAROCEDV_QP_INIT_ATTR_NUM_PATHS) spread
 * their packets over, 1 .. MRC_MAX_PATHS, the core's default at
 * creation.  Each path has its own congestion window (MR-CC-001/002), so
 * a random loss halves 1/paths of what a QP has in flight: more paths keep
 * more of it under loss, and push a congested queue harder.  A responder
 * answers on the path index the packet names modulo its own number (on
 * another plane, unless the number of planes divides both), so set both
 * ends alike.
 */
METAROCE_DEV_ATTR_NUM(paths, 1, MRC_MAX_PATHS);

/*
 * /sys/class/infiniband/<dev>/cc_loss_gate: 1 if in the MetaRoCE-mode QPs
 * connected from now on a loss shrinks a path's window only when the
 * path's RTT shows a queue of cc_delay_target_ns (MR-CC-007); 0 (the
 * default) if every loss does (MR-CC-002).  Where losses come from
 * corruption or failing links rather than overflowing queues.
 */
static ssize_t cc_loss_gate_show(struct device *device,
				 struct device_attribute *attr, char *buf)
{
	struct metaroce_dev *mdev = sysfs_to_mdev(device);

	return sysfs_emit(buf, "%d\n", READ_ONCE(mdev->cc_loss_gate));
}

static ssize_t cc_loss_gate_store(struct device *device,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct metaroce_dev *mdev = sysfs_to_mdev(device);
	bool v;

	if (kstrtobool(buf, &v))
		return -EINVAL;
	WRITE_ONCE(mdev->cc_loss_gate, v);
	return count;
}
static DEVICE_ATTR_RW(cc_loss_gate);

/*
 * /sys/class/infiniband/<dev>/cc_delay_target_ns: the queueing delay above
 * a path's smallest RTT at which the delay signal of the QPs connected
 * from now on (METAROCEDV_CC_DELAY) shrinks its window, and below which
 * a loss does not with cc_loss_gate (MR-CC-006/007).  100 us suits a
 * datacenter fabric; an emulated guest, whose round trips move by
 * milliseconds without a queue, needs more.
 */
METAROCE_DEV_ATTR_NUM(cc_delay_target_ns, METAROCE_CC_DELAY_TARGET_MIN_NS,
		      METAROCE_CC_DELAY_TARGET_MAX_NS);

/*
 * /sys/class/infiniband/<dev>/ack_hold_ns: how long the MetaRoCE-mode QPs
 * connected from now on, once they answer their peer's messages, let the
 * ACK of a message's last packet wait for a data packet of theirs to
 * carry it (MR-LOSS-014, MR-WIRE-010): a request answered within it costs
 * one packet each way instead of two.
 * 0 sends the ACK at once.  The QPs also wait that much longer for the
 * peer's ACKs before probing a tail, so set both ends alike.
 */
METAROCE_DEV_ATTR_NUM(ack_hold_ns, 0, METAROCE_ACK_HOLD_MAX_NS);

static struct attribute *metaroce_dev_attrs[] = {
	&dev_attr_metaroce_abi_version.attr,
	&dev_attr_default_transport.attr,
	&dev_attr_initial_rtt_ns.attr,
	&dev_attr_window.attr,
	&dev_attr_paths.attr,
	&dev_attr_cc_loss_gate.attr,
	&dev_attr_cc_delay_target_ns.attr,
	&dev_attr_ack_hold_ns.attr,
	NULL
};

static const struct attribute_group metaroce_dev_attr_group = {
	.attrs = metaroce_dev_attrs,
};

static const struct ib_device_ops metaroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,	/* out of tree: no id of our own */
	.uverbs_abi_ver = METAROCE_UVERBS_ABI_VERSION,
	.device_group = &metaroce_dev_attr_group,

	.alloc_pd = metaroce_alloc_pd,
	.dereg_mr = metaroce_dereg_mr,
	.get_dma_mr = metaroce_get_dma_mr,
	.alloc_ucontext = metaroce_alloc_ucontext,
	.dealloc_driver = metaroce_dealloc_driver,
	.dealloc_pd = metaroce_dealloc_pd,
	.dealloc_ucontext = metaroce_dealloc_ucontext,
	.disassociate_ucontext = metaroce_disassociate_ucontext,
	.get_link_layer = metaroce_get_link_layer,
	.get_port_immutable = metaroce_get_port_immutable,
	.mmap = metaroce_mmap,
	.mmap_free = metaroce_mmap_free,
	.query_device = metaroce_query_device,
	.query_pkey = metaroce_query_pkey,
	.query_port = metaroce_query_port,
	.reg_user_mr = metaroce_reg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_pd, metaroce_pd, ib_pd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, metaroce_ucontext, ib_uc),
};

/*
 * Create and register the device NAME on @ndev.  Called from newlink, so
 * from process context without RTNL.
 */
int metaroce_dev_add(const char *ibdev_name, struct net_device *ndev)
{
	struct metaroce_dev *mdev;
	struct mrc_config cfg;
	struct ib_device *ib_dev;
	int err = 0;

	mdev = ib_alloc_device(metaroce_dev, ib_dev);
	if (!mdev)
		return -ENOMEM;
	ib_dev = &mdev->ib_dev;

	INIT_LIST_HEAD(&mdev->list);
	ida_init(&mdev->pd_ida);
	mutex_init(&mdev->stats_mutex);
	netdev_hold(ndev, &mdev->ndev_tracker, GFP_KERNEL);
	mdev->ndev = ndev;
	mdev->port_event_state = metaroce_port_state(ndev);
	mdev->default_mode = metaroce_transport_mode;
	mrc_config_default(&cfg, MRC_MODE_METAROCE);
	mdev->initial_rtt_ns = cfg.initial_rtt_ns;
	mdev->window = METAROCE_WINDOW_DEFAULT;
	mdev->paths = cfg.num_paths;
	mdev->cc_delay_target_ns = METAROCE_CC_DELAY_TARGET_NS;
	mdev->ack_hold_ns = METAROCE_ACK_HOLD_NS;

	ib_dev->node_type = RDMA_NODE_IB_CA;
	ib_dev->phys_port_cnt = 1;
	ib_dev->num_comp_vectors = 1;
	/*
	 * The data path verbs go through the kernel in this ABI slice; ib_core
	 * leaves these write() commands off unless the driver opts in.
	 */
	ib_dev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				   BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				   BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				   BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				   BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	/* metarocedv_query_qp_stats: METAROCE_METHOD_QP_QUERY_STATS. */
	ib_dev->driver_def = metaroce_uapi_defs;
	addrconf_addr_eui48((unsigned char *)&ib_dev->node_guid,
			    ndev->dev_addr);
	strscpy(ib_dev->node_desc, "MetaRoCE", sizeof(ib_dev->node_desc));
	/* From here on, ib_dealloc_device() calls metaroce_dealloc_driver(). */
	ib_set_device_ops(ib_dev, &metaroce_dev_ops);
	ib_set_device_ops(ib_dev, &metaroce_ah_ops);
	ib_set_device_ops(ib_dev, &metaroce_cq_ops);
	ib_set_device_ops(ib_dev, &metaroce_qp_ops);
	ib_set_device_ops(ib_dev, &metaroce_srq_ops);
	ib_set_device_ops(ib_dev, &metaroce_stats_ops);

	err = metaroce_planes_init(mdev);
	if (err)
		goto err_dealloc;
	err = metaroce_sock_get(mdev);
	if (err)
		goto err_dealloc;
	/* A RoCEv2 default needs UDP 4791, which rdma_rxe may hold. */
	if (mdev->default_mode == MRC_MODE_ROCEV2 &&
	    !metaroce_can_rocev2(mdev)) {
		err = -EADDRINUSE;
		goto err_dealloc;
	}

	mutex_lock(&metaroce_devices_lock);
	if (metaroce_netdev_in_use_locked(ndev))
		err = -EEXIST;	/* one device per netdev, like rxe */
	else
		list_add_tail(&mdev->list, &metaroce_devices);
	mutex_unlock(&metaroce_devices_lock);
	if (err)
		goto err_dealloc;

	err = ib_device_set_netdev(ib_dev, ndev, METAROCE_PORT);
	if (err)
		goto err_dealloc;

	/* Keeps *mdev valid after registration, see below. */
	get_device(&ib_dev->dev);
	err = ib_register_device(ib_dev, ibdev_name, NULL);
	if (err) {
		put_device(&ib_dev->dev);
		goto err_dealloc;
	}
	/* From here a concurrent "rdma link delete" may free the device. */
	metaroce_dev_registered(mdev);
	put_device(&ib_dev->dev);
	return 0;

err_dealloc:
	ib_dealloc_device(ib_dev);
	return err;
}
