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
 */
#ifndef METAROCE_H
#define METAROCE_H

#include <linux/idr.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>

struct metaroce_dev {
	struct ib_device ib_dev;	/* first: ib_alloc_device() */
	struct net_device *ndev;	/* held through ndev_tracker */
	netdevice_tracker ndev_tracker;
	struct list_head list;		/* on metaroce_devices */
	/* Port state last announced by an IB event; metaroce_devices_lock. */
	enum ib_port_state port_event_state;
	struct ida pd_ida;		/* PD numbers */
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

/* metaroce_main.c */
extern struct mutex metaroce_devices_lock;
extern struct list_head metaroce_devices;
void metaroce_dev_list_del(struct metaroce_dev *mdev);

/* metaroce_verbs.c */
int metaroce_dev_add(const char *ibdev_name, struct net_device *ndev);

/* metaroce_net.c */
enum ib_port_state metaroce_port_state(const struct net_device *ndev);
enum ib_mtu metaroce_active_mtu(const struct net_device *ndev);
void metaroce_port_update(struct metaroce_dev *mdev);
void metaroce_dev_registered(struct metaroce_dev *mdev);
struct metaroce_dev *metaroce_find_dev_locked(const struct net_device *ndev);
int metaroce_net_init(void);
void metaroce_net_exit(void);

#endif /* METAROCE_H */
