/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * The "metaroce" generic netlink family of rdma_metaroce.ko: the planes of
 * a MetaRoCE device.
 *
 * A device spans up to METAROCE_MAX_PLANES netdevs (planes) of one network
 * namespace.  Plane 0 is the netdev the device was created on ("rdma link
 * add NAME type metaroce netdev DEV"); it carries the device's GIDs and
 * can be neither removed nor replaced.  A connection's path i is sent on
 * the i % N-th of the device's N planes (in plane id order), with the
 * path's own UDP source port; a plane that is down (administratively, or
 * its netdev without carrier) takes its paths out of service in every
 * connection of the device until it comes back.
 *
 * Commands (every request names the device with METAROCE_ATTR_DEV_NAME):
 *   METAROCE_CMD_PLANE_GET  dump: one message per plane of every device
 *   METAROCE_CMD_PLANE_ADD  IFNAME: add that netdev (of the caller's
 *                           network namespace) as a plane
 *   METAROCE_CMD_PLANE_DEL  IFNAME: remove that plane
 *   METAROCE_CMD_PLANE_SET  IFNAME, ADMIN_UP: take a plane out of service
 *                           or put it back
 * ADD, DEL and SET need CAP_NET_ADMIN.  Errors: ENODEV (no such MetaRoCE
 * device or netdev), EEXIST (already a plane of the device), EBUSY (a plane
 * or the netdev of another device; removing plane 0), ENOSPC (all
 * METAROCE_MAX_PLANES in use), EXDEV (the netdev is in another network
 * namespace than the device's), EOPNOTSUPP (not an Ethernet netdev),
 * EINVAL (an attribute missing).
 */
#ifndef METAROCE_NETLINK_USER_H
#define METAROCE_NETLINK_USER_H

#define METAROCE_GENL_NAME	"metaroce"
#define METAROCE_GENL_VERSION	1

#define METAROCE_MAX_PLANES	4

enum metaroce_genl_cmd {
	METAROCE_CMD_UNSPEC,
	METAROCE_CMD_PLANE_GET,
	METAROCE_CMD_PLANE_ADD,
	METAROCE_CMD_PLANE_DEL,
	METAROCE_CMD_PLANE_SET,

	__METAROCE_CMD_MAX,
	METAROCE_CMD_MAX = __METAROCE_CMD_MAX - 1
};

enum metaroce_genl_attr {
	METAROCE_ATTR_UNSPEC,
	METAROCE_ATTR_PAD,
	METAROCE_ATTR_DEV_NAME,		/* string: the RDMA device, "mr0" */
	METAROCE_ATTR_IFNAME,		/* string: the plane's netdev */
	METAROCE_ATTR_IFINDEX,		/* u32 (replies) */
	METAROCE_ATTR_PLANE_ID,		/* u32: 0..METAROCE_MAX_PLANES-1 */
	METAROCE_ATTR_ADMIN_UP,		/* u8: 1 in service, 0 taken out */
	METAROCE_ATTR_OPER_UP,		/* u8 (replies): netdev up, carrier */
	METAROCE_ATTR_TX_PACKETS,	/* u64 (replies) */
	METAROCE_ATTR_TX_ERRORS,	/* u64: no route on an up link, no socket */
	METAROCE_ATTR_RX_PACKETS,	/* u64: arrived for a QP of the device */
	METAROCE_ATTR_PATHS_DOWN,	/* u64: paths this plane took down */
	METAROCE_ATTR_PATHS_UP,		/* u64: paths it brought back */
	METAROCE_ATTR_TX_LINK_DOWN,	/* u64: dropped, the link was down */

	__METAROCE_ATTR_MAX,
	METAROCE_ATTR_MAX = __METAROCE_ATTR_MAX - 1
};

#endif /* METAROCE_NETLINK_USER_H */
