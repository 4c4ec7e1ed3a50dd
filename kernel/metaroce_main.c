// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: a loss-tolerant multipath RDMA transport over UDP/IP, exposed
 * as a software RoCE device in the style of rdma_rxe.
 *
 * This file holds the module entry points, the list of devices and the
 * "rdma link" operations that create them.
 */

#include <linux/if_arp.h>
#include <linux/module.h>
#include <rdma/rdma_netlink.h>

#include "metaroce.h"

MODULE_AUTHOR("The MetaRoCE authors");
MODULE_DESCRIPTION("MetaRoCE loss-tolerant multipath soft-RoCE transport");
MODULE_LICENSE("Dual BSD/GPL");

/*
 * default_transport: the initial default wire mode of the devices created
 * from now on, "metaroce" (multipath, selective retransmission, UDP port
 * 4793) or "rocev2" (IBTA RoCEv2 on the wire, UDP port 4791).  Each device
 * then has its own default (sysfs default_transport), and a QP may ask for
 * either mode at creation (struct metaroce_create_qp_req): every device
 * listens on both ports.
 */
static char *default_transport = "metaroce";
module_param(default_transport, charp, 0444);
MODULE_PARM_DESC(default_transport,
		 "Initial default wire mode of a new device's RC QPs: metaroce (default) or rocev2");
enum mrc_mode metaroce_transport_mode;

/* The names of the wire modes, in the module parameter and in sysfs. */
static const char *const metaroce_transport_names[] = {
	[MRC_MODE_METAROCE] = "metaroce",
	[MRC_MODE_ROCEV2] = "rocev2",
};

int metaroce_parse_transport(const char *name, enum mrc_mode *mode)
{
	int i = sysfs_match_string(metaroce_transport_names, name);

	if (i < 0)
		return -EINVAL;
	*mode = i;
	return 0;
}

const char *metaroce_transport_name(enum mrc_mode mode)
{
	return metaroce_transport_names[mode];
}

/* See "Locking" in metaroce.h. */
DEFINE_MUTEX(metaroce_devices_lock);
LIST_HEAD(metaroce_devices);

void metaroce_dev_list_del(struct metaroce_dev *mdev)
{
	mutex_lock(&metaroce_devices_lock);
	/* _init: module unload may have taken the device off already. */
	list_del_init(&mdev->list);
	mutex_unlock(&metaroce_devices_lock);
}

/*
 * "rdma link add NAME type metaroce netdev NDEV".  nldev holds a reference
 * on @ndev for the duration of the call.
 */
static int metaroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	/*
	 * The wire format is UDP/IP over an Ethernet-like device (Ethernet,
	 * VLAN, veth, dummy, ...); RoCE GIDs and the node GUID derive from a
	 * 6-byte MAC address.
	 */
	struct ib_device *existing;

	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN)
		return -EOPNOTSUPP;

	/*
	 * ib_register_device() refuses a taken name too, but with ENFILE
	 * ("Too many open files in system"); say what is wrong.
	 */
	existing = ib_device_get_by_name(ibdev_name, RDMA_DRIVER_UNKNOWN);
	if (existing) {
		ib_device_put(existing);
		return -EEXIST;
	}

	return metaroce_dev_add(ibdev_name, ndev);
}

static struct rdma_link_ops metaroce_link_ops = {
	.type = "metaroce",
	.newlink = metaroce_newlink,
};

/*
 * Unregister every device at module unload.  ib_unregister_driver() is not
 * used: with driver_id RDMA_DRIVER_UNKNOWN it would also unregister the
 * devices of any other driver that lacks a driver id.
 *
 * ib_unregister_device() fences against a concurrent unregistration of the
 * same device (a queued NETDEV_UNREGISTER or "rdma link delete"): once it
 * returns, the device is gone and ib_core will not call into this module
 * for it again.
 */
static void metaroce_dev_unregister_all(void)
{
	struct metaroce_dev *mdev;

	mutex_lock(&metaroce_devices_lock);
	while ((mdev = list_first_entry_or_null(&metaroce_devices,
						struct metaroce_dev, list))) {
		list_del_init(&mdev->list);
		get_device(&mdev->ib_dev.dev);
		mutex_unlock(&metaroce_devices_lock);

		ib_unregister_device(&mdev->ib_dev);
		put_device(&mdev->ib_dev.dev);

		mutex_lock(&metaroce_devices_lock);
	}
	mutex_unlock(&metaroce_devices_lock);
}

static int __init metaroce_module_init(void)
{
	int err;

	if (metaroce_parse_transport(default_transport,
				     &metaroce_transport_mode)) {
		pr_err("rdma_metaroce: default_transport=%s: not metaroce or rocev2\n",
		       default_transport);
		return -EINVAL;
	}

	err = metaroce_net_init();
	if (err)
		return err;
	err = metaroce_genl_init();
	if (err) {
		metaroce_net_exit();
		return err;
	}

	rdma_link_register(&metaroce_link_ops);
	return 0;
}

static void __exit metaroce_module_exit(void)
{
	/* No plane command runs once this returns. */
	metaroce_genl_exit();
	/* Waits for running newlink calls; no device is created after it. */
	rdma_link_unregister(&metaroce_link_ops);
	metaroce_dev_unregister_all();
	metaroce_net_exit();
}

module_init(metaroce_module_init);
module_exit(metaroce_module_exit);
MODULE_ALIAS_RDMA_LINK("metaroce");
