// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: the planes of a device.  A device spans up to
 * METAROCE_MAX_PLANES netdevs of one network namespace; the transport
 * core's path index of a packet picks the plane (path % number of planes)
 * and the path's UDP source port the entropy within it (metaroce_xmit()).
 * See include/uapi/rdma/metaroce-netlink.h for what userspace sees.
 *
 * Plane 0 is the device's own netdev: it carries the GIDs (ib_core's GID
 * table follows the one netdev of the port) and the connections' source
 * address.  On the other planes the source address is the plane's own, as
 * routing picks it for the plane's netdev; the destination stays the
 * peer's GID address and is reached on the plane's link directly (a route
 * lookup bound to the plane's ifindex that finds no route of that netdev
 * treats the destination as on-link, and the peer, a weak-host IPv4 stack,
 * answers ARP for any of its addresses on any of its links).  All planes
 * share the device's UDP socket of their namespace.
 *
 * Path state (MR-FAIL-*): the core fails and re-admits paths on its own
 * from timeouts and probes; a plane known to be down (admin down, netdev
 * down or without carrier) takes its paths out of service at once in
 * every connection of the device (mrc_path_set_state()), which moves
 * their packets in flight to the other paths, and readmits them when it
 * is usable again.  When no plane is usable every path stays admitted,
 * so that the core's retry budget, not the administrator, decides when a
 * connection fails (IBV_WC_RETRY_EXC_ERR).
 *
 * Locking: planes are added, removed and change state under RTNL and
 * metaroce_devices_lock (the netdev notifier holds RTNL and takes the
 * lock; the generic netlink commands take both).  The data path reads
 * mdev->plane_map under RCU (BH from metaroce_xmit(), plain from the UDP
 * receive softirq): a map is replaced as a whole when the set of planes
 * changes and freed after a grace period, and a removed plane's netdev
 * reference is dropped only after synchronize_rcu(), so a reader that
 * still has the old map never sees a released netdev.  map->usable is
 * written in place (WRITE_ONCE) by the writers; readers may act on a
 * state one event old, which costs at most a packet on a dead link.
 */

#include <linux/if_arp.h>
#include <linux/rtnetlink.h>

#include "metaroce.h"

static struct metaroce_plane_map *
metaroce_map_locked(const struct metaroce_dev *mdev)
{
	return rcu_dereference_protected(mdev->plane_map,
					 lockdep_rtnl_is_held() &&
					 lockdep_is_held(&metaroce_devices_lock));
}

static bool metaroce_plane_usable(const struct metaroce_plane *plane)
{
	return plane->admin_up &&
	       metaroce_port_state(plane->ndev) == IB_PORT_ACTIVE;
}

static unsigned long metaroce_map_usable(const struct metaroce_plane_map *map)
{
	unsigned long usable = 0;
	unsigned int i;

	for (i = 0; i < map->num; i++)
		if (metaroce_plane_usable(map->plane[i]))
			usable |= BIT(i);
	return usable;
}

/* Plane 0: the device's own netdev.  Before registration, no locks. */
int metaroce_planes_init(struct metaroce_dev *mdev)
{
	struct metaroce_plane *plane = &mdev->planes[0];
	struct metaroce_plane_map *map;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	plane->ndev = mdev->ndev;
	plane->admin_up = true;
	map->num = 1;
	map->plane[0] = plane;
	map->usable = metaroce_map_usable(map);
	RCU_INIT_POINTER(mdev->plane_map, map);
	return 0;
}

/*
 * From metaroce_dealloc_driver(): the device has no QPs any more and is
 * off the device list, so nothing reaches the map.
 */
void metaroce_planes_release(struct metaroce_dev *mdev)
{
	struct metaroce_plane_map *map;
	unsigned int i;

	map = rcu_dereference_protected(mdev->plane_map, 1);
	RCU_INIT_POINTER(mdev->plane_map, NULL);
	for (i = 1; i < METAROCE_MAX_PLANES; i++) {
		struct metaroce_plane *plane = &mdev->planes[i];

		if (plane->ndev)
			netdev_put(plane->ndev, &plane->tracker);
		plane->ndev = NULL;
	}
	mdev->planes[0].ndev = NULL;
	kfree_rcu(map, rcu);
}

static struct metaroce_plane *
metaroce_plane_find_locked(struct metaroce_dev *mdev,
			   const struct net_device *ndev)
{
	unsigned int i;

	for (i = 0; i < METAROCE_MAX_PLANES; i++)
		if (mdev->planes[i].ndev == ndev)
			return &mdev->planes[i];
	return NULL;
}

/* Is @ndev the netdev or a plane of any device?  metaroce_devices_lock. */
bool metaroce_netdev_in_use_locked(const struct net_device *ndev)
{
	struct metaroce_dev *mdev;

	lockdep_assert_held(&metaroce_devices_lock);
	list_for_each_entry(mdev, &metaroce_devices, list)
		if (mdev->ndev == ndev || metaroce_plane_find_locked(mdev, ndev))
			return true;
	return false;
}

/*
 * Bring every connection of @mdev in line with @map: each path in service
 * exactly when its plane is usable, or all of them when none is.
 */
static void metaroce_planes_apply_all(struct metaroce_dev *mdev)
{
	unsigned long qpn = 0;
	struct metaroce_qp *qp;
	u64 now = ktime_get_ns();

	while ((qp = metaroce_qp_get_next(&qpn))) {
		if (qp->mdev == mdev && !metaroce_qp_is_ud(qp)) {
			spin_lock_bh(&qp->lock);
			if (qp->conn && !qp->dead) {
				metaroce_qp_apply_planes(qp, now);
				metaroce_qp_run(qp);
			}
			spin_unlock_bh(&qp->lock);
			metaroce_qp_xmit(qp);
		}
		metaroce_qp_put(qp);
		qpn++;
	}
}

/* Recompute which planes are usable; on a change, tell the connections. */
static void metaroce_planes_update_locked(struct metaroce_dev *mdev)
{
	struct metaroce_plane_map *map = metaroce_map_locked(mdev);
	unsigned long usable = metaroce_map_usable(map);

	if (usable == map->usable)
		return;
	WRITE_ONCE(map->usable, usable);
	metaroce_planes_apply_all(mdev);
}

/* Publish a copy of the current map with @plane added or (!@add) removed. */
static int metaroce_map_replace_locked(struct metaroce_dev *mdev,
				       struct metaroce_plane *plane, bool add)
{
	struct metaroce_plane_map *old = metaroce_map_locked(mdev), *map;
	unsigned int i;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	/* Service order is plane id order. */
	for (i = 0; i < METAROCE_MAX_PLANES; i++) {
		struct metaroce_plane *p = &mdev->planes[i];

		if (!p->ndev || (!add && p == plane))
			continue;
		map->plane[map->num++] = p;
	}
	map->usable = old->usable;	/* stale bits: recomputed below */
	rcu_assign_pointer(mdev->plane_map, map);
	kfree_rcu(old, rcu);
	/*
	 * Path i now maps to another plane: every connection's path states
	 * are recomputed, whether or not the usable set changed.
	 */
	WRITE_ONCE(map->usable, metaroce_map_usable(map));
	metaroce_planes_apply_all(mdev);
	return 0;
}

/* RTNL and metaroce_devices_lock held; @ndev in the device's namespace. */
int metaroce_plane_add(struct metaroce_dev *mdev, struct net_device *ndev)
{
	struct metaroce_plane *plane = NULL;
	unsigned int i, c;
	int err;

	ASSERT_RTNL();
	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN)
		return -EOPNOTSUPP;
	if (!net_eq(dev_net(ndev), dev_net(mdev->ndev)))
		return -EXDEV;
	if (metaroce_plane_find_locked(mdev, ndev))
		return -EEXIST;
	if (metaroce_netdev_in_use_locked(ndev))
		return -EBUSY;
	for (i = 1; i < METAROCE_MAX_PLANES && !plane; i++)
		if (!mdev->planes[i].ndev)
			plane = &mdev->planes[i];
	if (!plane)
		return -ENOSPC;

	for (c = 0; c < METAROCE_PLANE_NUM_COUNTERS; c++)
		atomic64_set(&plane->counters[c], 0);
	metaroce_stats_plane_reset(mdev, plane - mdev->planes);
	plane->admin_up = true;
	netdev_hold(ndev, &plane->tracker, GFP_KERNEL);
	plane->ndev = ndev;
	err = metaroce_map_replace_locked(mdev, plane, true);
	if (err) {
		plane->ndev = NULL;
		netdev_put(ndev, &plane->tracker);
	}
	return err;
}

static int metaroce_plane_remove_locked(struct metaroce_dev *mdev,
					struct metaroce_plane *plane)
{
	struct net_device *ndev = plane->ndev;
	int err;

	err = metaroce_map_replace_locked(mdev, plane, false);
	if (err)
		return err;
	/* Readers of the old map may still use plane->ndev. */
	synchronize_rcu();
	plane->ndev = NULL;
	netdev_put(ndev, &plane->tracker);
	return 0;
}

/* RTNL and metaroce_devices_lock held. */
int metaroce_plane_del(struct metaroce_dev *mdev, struct net_device *ndev)
{
	struct metaroce_plane *plane = metaroce_plane_find_locked(mdev, ndev);

	ASSERT_RTNL();
	if (!plane)
		return -ENODEV;
	if (plane == &mdev->planes[0])
		return -EBUSY;
	return metaroce_plane_remove_locked(mdev, plane);
}

/* RTNL and metaroce_devices_lock held. */
int metaroce_plane_set_admin(struct metaroce_dev *mdev,
			     struct net_device *ndev, bool up)
{
	struct metaroce_plane *plane = metaroce_plane_find_locked(mdev, ndev);

	ASSERT_RTNL();
	if (!plane)
		return -ENODEV;
	plane->admin_up = up;
	metaroce_planes_update_locked(mdev);
	return 0;
}

/*
 * The netdev notifier (RTNL held, metaroce_devices_lock taken by the
 * caller): a plane's netdev changed state, or goes away, which takes it
 * out of its device (the netdev waits for our reference).  Plane 0's
 * netdev going away unregisters the whole device (metaroce_net.c).
 */
void metaroce_planes_netdev_event(struct net_device *ndev,
				  unsigned long event)
{
	struct metaroce_dev *mdev;

	lockdep_assert_held(&metaroce_devices_lock);
	list_for_each_entry(mdev, &metaroce_devices, list) {
		struct metaroce_plane *plane;

		if (!rcu_access_pointer(mdev->plane_map))
			continue;
		plane = metaroce_plane_find_locked(mdev, ndev);
		if (!plane)
			continue;
		if (event == NETDEV_UNREGISTER && plane != &mdev->planes[0]) {
			if (metaroce_plane_remove_locked(mdev, plane))
				/* No memory for a new map: keep it usable-less. */
				metaroce_planes_update_locked(mdev);
		} else {
			metaroce_planes_update_locked(mdev);
		}
	}
}

/*
 * The plane a packet of @path goes out on: its own if usable, else the
 * first usable one (ACKs answer on the path they acknowledge, which the
 * peer may still be sending on), else its own.  Under RCU or RCU-BH.
 */
struct metaroce_plane *metaroce_plane_for_path(struct metaroce_dev *mdev,
					       unsigned int path)
{
	struct metaroce_plane_map *map;
	unsigned long usable;
	unsigned int i;

	map = rcu_dereference_check(mdev->plane_map, rcu_read_lock_bh_held());
	if (!map)
		return NULL;
	i = path % map->num;
	usable = READ_ONCE(map->usable);
	if (!(usable & BIT(i)) && usable)
		i = __ffs(usable);
	return map->plane[i];
}

/* The number of planes the device spans now. */
unsigned int metaroce_num_planes(struct metaroce_dev *mdev)
{
	struct metaroce_plane_map *map;
	unsigned int num;

	rcu_read_lock();
	map = rcu_dereference(mdev->plane_map);
	num = map ? map->num : 0;
	rcu_read_unlock();
	return num;
}

/* A packet for a QP of @mdev arrived on @ifindex.  Under RCU. */
void metaroce_plane_count_rx(struct metaroce_dev *mdev, int ifindex)
{
	struct metaroce_plane_map *map = rcu_dereference(mdev->plane_map);
	unsigned int i;

	if (!map)
		return;
	for (i = 0; i < map->num; i++) {
		if (map->plane[i]->ndev->ifindex == ifindex) {
			metaroce_plane_count(map->plane[i],
					     METAROCE_PCNT_RX_PACKETS);
			return;
		}
	}
}

/*
 * Put each path of @qp's connection in or out of service by the state of
 * its plane.  qp->lock held; MetaRoCE mode only (RoCEv2 has one path,
 * which metaroce_plane_for_path() moves to a usable plane instead).
 */
void metaroce_qp_apply_planes(struct metaroce_qp *qp, u64 now)
{
	struct metaroce_plane_map *map;
	unsigned long usable;
	unsigned int path;

	lockdep_assert_held(&qp->lock);
	if (qp->mode != MRC_MODE_METAROCE || !qp->conn)
		return;
	rcu_read_lock();
	map = rcu_dereference(qp->mdev->plane_map);
	if (!map)
		goto out;
	usable = READ_ONCE(map->usable);
	for (path = 0; path < qp->num_paths; path++) {
		struct mrc_path_stats st;
		unsigned int i = path % map->num;
		bool up = !usable || (usable & BIT(i));
		bool was_down;

		if (mrc_get_path_stats(qp->conn, path, &st))
			break;
		was_down = st.state == MRC_PATH_ADMIN_DOWN;
		if (up == !was_down)
			continue;
		mrc_path_set_state(qp->conn, path, up, now);
		metaroce_plane_count(map->plane[i], up ? METAROCE_PCNT_PATHS_UP :
							 METAROCE_PCNT_PATHS_DOWN);
	}
out:
	rcu_read_unlock();
}
